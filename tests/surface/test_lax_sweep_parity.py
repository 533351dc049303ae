"""Behaviours of JAX 0.10.2's lax found by its own tests/lax_test.py (issue 29),
each compared with JAX itself on both backends."""

from __future__ import annotations

import operator

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, np.bool_])
@pytest.mark.parametrize("op_name", ["bitwise_xor", "operator.xor"])
def test_reduce_with_xor_is_the_reduce_xor_primitive(backend, dtype, op_name):
    """As JAX's monoid path: xor with the identity 0 becomes ``reduce_xor``."""
    x = np.random.RandomState(0).randint(0, 7, (3, 4, 5)).astype(dtype)
    init = np.zeros((), dtype)

    def op(module):
        return operator.xor if op_name == "operator.xor" else module.bitwise_xor

    def run(module, x):
        return module.reduce(x, init, op(module), (0, 2))

    want = run(jax.lax, x)
    for got in (run(lax, x), ri.jit(lambda x: run(lax, x))(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # refimpl reads the traced computation, so operator.xor counts too (JAX
    # recognises lax.bitwise_xor by identity only: docs/semantics.md)
    program = ri.make_jaxpr(lambda x: run(lax, x))(x)
    assert [e.primitive.name for e in program.eqns] == ["reduce_xor"]
    if op_name == "bitwise_xor":
        assert jax.make_jaxpr(lambda x: run(jax.lax, x))(x).eqns[0].primitive.name == "reduce_xor"
    # not the identity: the general reduce, as JAX
    other = ri.make_jaxpr(lambda x: lax.reduce(x, np.ones((), dtype), op(lax), (0,)))(x)
    assert [e.primitive.name for e in other.eqns] == ["reduce"]


@pytest.mark.parametrize("name", ["logistic", "tanh", "exp", "expm1"])
def test_accuracy_mode_and_tolerance_are_accepted(backend, name):
    x = np.arange(-4.0, 4.0, 0.5, dtype=np.float32)
    for accuracy in ("HIGHEST", "DEFAULT", "tolerance"):

        def fn(module, accuracy=accuracy):
            acc = (
                module.Tolerance(atol=1e-2)
                if accuracy == "tolerance"
                else getattr(module.AccuracyMode, accuracy)
            )
            return lambda x: getattr(module, name)(x, accuracy=acc)

        want = jax.vmap(jax.grad(fn(jax.lax)))(x)
        got = ri.jit(ri.vmap(ri.grad(fn(lax))))(x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    for bad in (dict(atol=-1.0), dict()):
        with pytest.raises(ValueError):
            jax.lax.Tolerance(**bad)
        with pytest.raises(ValueError, match="Tolerance"):
            lax.Tolerance(**bad)


def test_stop_gradient_of_traced_integers_is_the_primitive(backend):
    """As JAX 0.10.2 (its issue 33689): a traced integer leaf goes through
    ``stop_gradient`` too, so under a derivative it comes out a plain value
    like a float leaf, and under jit it is an equation."""
    x = np.arange(3, dtype=np.int32)
    names = [str(e.primitive) for e in jax.make_jaxpr(jax.lax.stop_gradient)(x).eqns]
    ours = [e.primitive.name for e in ri.make_jaxpr(lax.stop_gradient)(x).eqns]
    assert ours == names == ["stop_gradient"]

    def types(module, numpy):
        seen = []

        def loss(v):
            y, i = module.stop_gradient((v * 2.0, numpy.round(v).astype(numpy.int32)))
            seen.append((type(y), type(i)))
            return numpy.sum(v * y) + numpy.sum(i)

        return loss, seen

    loss, seen = types(lax, ri.numpy)
    jloss, jseen = types(jax.lax, jax.numpy)
    v = np.array([0.5, 1.5, 2.5], np.float32)
    np.testing.assert_array_equal(np.asarray(ri.grad(loss)(v)), np.asarray(jax.grad(jloss)(v)))
    assert jseen[0][0] is jseen[0][1] and seen[0][0] is seen[0][1]
    assert lax.stop_gradient(3) == 3 and isinstance(lax.stop_gradient(3), int)


def _ulps(got, want):
    """The larger part's distance in float32 ulps of the float64 reference."""
    got = np.asarray(got)
    spacing = lambda v: np.spacing(np.abs(v).astype(np.float32))  # noqa: E731
    return max(
        np.max(np.abs(got.real - want.real) / spacing(want.real)),
        np.max(np.abs(got.imag - want.imag) / spacing(want.imag)),
    )


@pytest.mark.parametrize("scale", [1e-5, 1e-3, 0.45, 3.0])
def test_complex64_log1p_is_accurate_near_zero_and_the_unit_circle(backend, scale):
    """JAX's testLog1pNearOne: complex64 ``log1p(1e-5)`` within an ulp (it was
    NumPy's ``log(1 + z)``, 1.0014e-05); likewise where ``|1 + z|`` is near 1."""
    z = np.complex64(1e-5)
    want = np.log1p(np.float32(1e-5)).astype(np.complex64)
    for got in (lax.log1p(z), ri.jit(lax.log1p)(z)):
        np.testing.assert_array_almost_equal_nulp(np.asarray(got), want)
    rng = np.random.RandomState(0)
    z = ((rng.randn(500) + 1j * rng.randn(500)) * scale).astype(np.complex64)
    exact = np.log1p(z.astype(np.complex128))
    assert _ulps(jax.jit(jax.lax.log1p)(z), exact) <= 8  # XLA: within a few ulps
    for got in (lax.log1p(z), ri.jit(lax.log1p)(z)):
        assert _ulps(got, exact) <= 8  # pjrt under jit is XLA itself


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64])
def test_convert_element_type_to_its_own_type_is_the_operand(backend, dtype):
    """As JAX 0.10.2 (its testConvertElementTypeAvoidsCopies): an array or
    tracer already of the type is returned itself, with no copy and no
    equation; a weak one made strong, another dtype or NumPy data convert."""
    x = ri.device_put(np.zeros(5, dtype))
    assert lax.convert_element_type(x, dtype) is x
    assert lax.convert_element_type(x, np.int8) is not x
    assert isinstance(lax.convert_element_type(np.zeros(5, dtype), dtype), ri.Array)
    cases = [(np.ones(3, dtype), dtype), (np.ones(3, dtype), np.int8), (1.0, np.float32)]
    for arg, target in cases:
        ours = ri.make_jaxpr(lambda v, t=target: lax.convert_element_type(v, t))(arg)
        theirs = jax.make_jaxpr(lambda v, t=target: jax.lax.convert_element_type(v, t))(arg)
        assert len(ours.eqns) == len(theirs.eqns)
    weak = lax.mul(2.0, 1.0)
    strong = lax.convert_element_type(weak, np.float32)
    assert weak.weak_type and strong is not weak and not strong.weak_type


@pytest.mark.parametrize("scale", [1e-4, 0.3, 3.0])
def test_complex64_acosh_matches_xla_near_zero(backend, scale):
    """Complex ``acosh`` through ``acos`` (``|Im w| + i sign(Im z) Re w``), as
    XLA's chlo.acosh: ``log(z + sqrt(z - 1) sqrt(z + 1))`` lost the real part
    near 0 (``acosh(1e-4 + 2e-4j)`` had real part 1.9990e-04; JAX 2.0000e-04)."""
    rng = np.random.RandomState(0)
    z = ((rng.randn(500) + 1j * rng.randn(500)) * scale).astype(np.complex64)
    z[:4] = [0.5, 0.5 - 0j, -0.0 - 0j, 1e-4 + 2e-4j]  # -0.0 counts as positive, as XLA's
    want = np.asarray(jax.jit(jax.lax.acosh)(z))
    for got in (lax.acosh(z), ri.jit(lax.acosh)(z)):
        got = np.asarray(got)
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))
        np.testing.assert_allclose(got.real, want.real, rtol=4e-6, atol=1e-37)
        np.testing.assert_allclose(got.imag, want.imag, rtol=4e-6, atol=1e-37)
    # the derivative is acosh's (finite differences in complex128)
    x, t = z[4:10].astype(np.complex128), np.ones(6, np.complex128)
    fd = (np.arccosh(x + 1e-7 * t) - np.arccosh(x - 1e-7 * t)) / 2e-7
    got = ri.jvp(lax.acosh, (z[4:10],), (t.astype(np.complex64),))[1]
    np.testing.assert_allclose(np.asarray(got), fd, rtol=2e-3, atol=2e-3 / scale)
