"""lax behaviours of JAX 0.10.2 found by JAX's own lax tests (issue 29, class 4),
each compared with JAX itself on both backends."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

# --- binary operators broadcast size-1 dims (JAX's broadcasting_shape_rule) ---------------

_BROADCAST_SHAPES = [((3, 4), (3, 1)), ((3, 1), (3, 4)), ((1, 4), (3, 1)), ((2, 1, 4), (1, 3, 1))]


@pytest.mark.parametrize(
    "name",
    ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "nextafter", "eq", "lt", "rem"],
)
@pytest.mark.parametrize("shapes", _BROADCAST_SHAPES)
def test_binary_broadcasts_size_one_dims(backend, name, shapes, rng):
    x = rng.uniform(0.5, 2.0, shapes[0]).astype(np.float32)
    y = rng.uniform(0.5, 2.0, shapes[1]).astype(np.float32)
    want = getattr(jax.lax, name)(x, y)
    got = ri.jit(getattr(lax, name))(x, y)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(getattr(lax, name)(x, y)), np.asarray(want), rtol=1e-6)


def test_binary_broadcast_integer_and_shift(backend):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    y = np.array([[1], [2], [3]], np.int32)
    for name in ["shift_left", "shift_right_logical", "bitwise_and", "bitwise_xor"]:
        np.testing.assert_array_equal(
            np.asarray(ri.jit(getattr(lax, name))(x, y)), np.asarray(getattr(jax.lax, name)(x, y))
        )


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("shapes", _BROADCAST_SHAPES + [((), (3, 4)), ((2, 3), (2, 3))])
def test_mulhi_broadcasts_size_one_dims(backend, shapes, dtype, rng):
    # lax_vmap_test's mulhi records batch a (3, 4) against a (3, 1) operand.
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, shapes[0], dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, shapes[1], dtype=dtype, endpoint=True)
    want = jax.lax.mulhi(x, y)
    for got in (lax.mulhi(x, y), ri.jit(lax.mulhi)(x, y)):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    xs, ys = np.stack([x, ~x]), np.stack([y, ~y])
    np.testing.assert_array_equal(
        np.asarray(ri.vmap(lax.mulhi)(xs, ys)), np.asarray(jax.vmap(jax.lax.mulhi)(xs, ys))
    )


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "pow", "atan2"])
def test_binary_broadcast_gradients(backend, name, rng):
    x = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2.0, (3, 1)).astype(np.float32)

    def f_jax(a, b):
        return jnp.sum(getattr(jax.lax, name)(a, b))

    def f_ri(a, b):
        return ri.numpy.sum(getattr(lax, name)(a, b))

    want = jax.grad(f_jax, (0, 1))(x, y)
    got = ri.jit(ri.grad(f_ri, (0, 1)))(x, y)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)


def test_binary_broadcast_under_vmap(backend, rng):
    x = rng.normal(size=(2, 3, 1)).astype(np.float32)
    y = rng.normal(size=(3, 4)).astype(np.float32)
    for axes in [(0, None), (None, 0)]:
        a, b = (x, y) if axes == (0, None) else (y, x)
        want = jax.vmap(jax.lax.mul, axes)(a, b)
        got = ri.vmap(lax.mul, axes)(a, b)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_binary_broadcast_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="same number of dimensions"):
        lax.add(x, np.ones((4,), np.float32))
    with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
        lax.add(x, np.ones((3, 2), np.float32))
    # select_n and clamp do not broadcast (as JAX)
    with pytest.raises(TypeError):
        lax.select(np.ones((3, 1), bool), x, x)
    with pytest.raises(TypeError):
        lax.clamp(np.float32(0), x, np.ones((3, 1), np.float32))


# --- lax.reduce / lax.reduce_window with any computation ------------------------------------


def _close(got, want, rtol=1e-5):
    got_leaves, want_leaves = ri.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-6)


def _pair(a, b):
    return a[0] + b[0], a[1] * b[1]


def _reduce_cases(lx):
    return {
        "add_init1": lambda x: lx.reduce(x, np.float32(1), lx.add, (1,)),
        "operator_add": lambda x: lx.reduce(x, np.float32(0), operator.add, (0, 2)),
        "mul_dims02": lambda x: lx.reduce(x, np.float32(1), lx.mul, (0, 2)),
        "max_init0": lambda x: lx.reduce(x, np.float32(0), lx.max, (2,)),
        "non_commutative": lambda x: lx.reduce(x, np.float32(0), lambda a, b: a * 0.5 + b, (1,)),
        "variadic": lambda x: lx.reduce((x, x + 1), (np.float32(0), np.float32(1)), _pair, (1,)),
        "all_dims": lambda x: lx.reduce(x, np.float32(2), lx.min, (0, 1, 2)),
    }


@pytest.mark.parametrize("case", list(_reduce_cases(lax)))
def test_reduce_any_computation(backend, case):
    x = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1.1).astype(np.float32)
    want = _reduce_cases(jax.lax)[case](x)
    _close(_reduce_cases(lax)[case](x), want)
    _close(ri.jit(_reduce_cases(lax)[case])(x), want)


def test_reduce_traced_init_jvp_vmap(backend):
    x = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1.1).astype(np.float32)
    t = np.cos(x)

    def mk(lx):
        return lambda x, i: lx.reduce(x, i, lx.add, (0,))

    _close(ri.jit(mk(lax))(x, np.float32(0.5)), jax.jit(mk(jax.lax))(x, np.float32(0.5)))

    def prod(lx):
        return lambda x: lx.reduce(x, np.float32(1), lx.mul, (1,))

    _close(ri.jvp(prod(lax), (x,), (t,)), jax.jvp(prod(jax.lax), (x,), (t,)))
    _close(ri.grad(lambda x: prod(lax)(x).sum())(x), jax.grad(lambda x: prod(jax.lax)(x).sum())(x))

    def var(lx):
        return lambda a, b: lx.reduce((a, b), (np.float32(0), np.float32(1)), _pair, (0,))

    _close(ri.vmap(var(lax), (2, 1))(x, x.transpose(0, 2, 1)),
           jax.vmap(var(jax.lax), (2, 1))(x, x.transpose(0, 2, 1)))  # fmt: skip


def test_reduce_weak_types():
    # JAX's testReduceWeakType: weak only when both the operand and the init are
    for op in (operator.add, operator.mul, lax.add, lax.mul):
        for arr_weak in (False, True):
            for init_weak in (False, True):
                arr = lax.convert_element_type(np.arange(10), np.int32, weak_type=arr_weak)
                init = lax.convert_element_type(1, np.int32, weak_type=init_weak)
                out = lax.reduce(arr, init, op, (0,))
                assert out.weak_type == (arr_weak and init_weak)
                jitted = ri.jit(lambda a, i, op=op: lax.reduce(a, i, op, (0,)))
                assert jitted(arr, init).weak_type == (arr_weak and init_weak)


def test_reduce_recognises_monoids_by_primitive():
    # lax.add captured before the pjrt backend wrapped the public functions,
    # operator.add and a lambda: all one reduce_sum (JAX needs lax.add itself)
    from refimpl.primitives import elementwise

    ri.config.update("backend", "pjrt")
    for add in (elementwise.add, lax.add, operator.add, lambda a, b: b + a):
        program = ri.make_jaxpr(lambda x, add=add: lax.reduce(x, np.float32(0), add, (0,)))(
            np.ones((3, 2), np.float32)
        )
        assert "reduce_sum" in str(program), (add, str(program))
    # a non-identity init is the general reduce
    program = ri.make_jaxpr(lambda x: lax.reduce(x, np.float32(1), lax.add, (0,)))(np.ones(3))
    assert "reduce_sum" not in str(program)


def test_reduce_errors():
    x = np.ones((3,), np.float32)
    with pytest.raises(TypeError, match="dtypes should match"):
        lax.reduce(x, np.int32(0), lambda a, b: a + b, (0,))
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce((x, x), np.float32(0), lax.add, (0,))


_WINDOW_CASES = [
    ((2, 1), (1, 2), "VALID", (1, 1), (1, 1)),
    ((2, 1), (1, 1), "SAME", (2, 3), (1, 2)),
    ((1, 2), (2, 1), [(0, 3), (1, 2)], (2, 3), (1, 1)),
    ((2, 2), (1, 1), [(1, 0), (2, 3)], (1, 1), (1, 2)),
]


@pytest.mark.parametrize("window", _WINDOW_CASES)
@pytest.mark.parametrize(
    "op,init", [("add", 1.0), ("mul", 1.0), ("max", 0.5), ("min", 2.0), ("max", -np.inf)]
)
def test_reduce_window_any_computation(backend, window, op, init):
    # JAX's testReduceWindowGeneral: padding and dilation holes are skipped
    x = (np.arange(24, dtype=np.float32).reshape(4, 6) / 7 - 1.3).astype(np.float32)

    def mk(lx):
        return lambda x: lx.reduce_window(x, np.float32(init), getattr(lx, op), *window)

    want = mk(jax.lax)(x)
    _close(mk(lax)(x), want)
    _close(ri.jit(mk(lax))(x), want)


def test_reduce_window_variadic_jvp_vmap(backend):
    x = (np.arange(24, dtype=np.float32).reshape(4, 6) / 7 - 1.3).astype(np.float32)
    t = np.cos(x)

    def var(lx):
        return lambda a, b: lx.reduce_window(
            (a, b), (np.float32(0), np.float32(1)), _pair, (2, 2), (1, 1), "SAME"
        )

    _close(var(lax)(x, 2 * x), var(jax.lax)(x, 2 * x))

    def prod(lx):
        return lambda x: lx.reduce_window(x, np.float32(1), lx.mul, (2, 2), (1, 1), "SAME")

    _close(ri.jvp(prod(lax), (x,), (t,)), jax.jvp(prod(jax.lax), (x,), (t,)))
    _close(
        ri.jit(ri.vmap(prod(lax)))(np.stack([x, -x])), jax.vmap(prod(jax.lax))(np.stack([x, -x]))
    )
    # a scalar operand, empty window (JAX's testReduceWindowScalar)
    _close(
        lax.reduce_window(np.float32(3), np.float32(0), lax.add, (), (), ()),
        jax.lax.reduce_window(np.float32(3), np.float32(0), jax.lax.add, (), (), ()),
    )


# --- top_k(axis=), mul(out_dtype=), accuracy=, nextafter(x1, x2) -------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_top_k_axis(backend, axis):
    x = np.random.RandomState(0).rand(3, 5, 4).astype(np.float32)
    want = jax.lax.top_k(x, 2, axis=axis)
    _close(lax.top_k(x, 2, axis=axis), want)
    _close(ri.jit(lambda x: lax.top_k(x, 2, axis=axis))(x), want)
    _close(
        ri.grad(lambda x: lax.top_k(x, 2, axis=axis)[0].sum())(x),
        jax.grad(lambda x: jax.lax.top_k(x, 2, axis=axis)[0].sum())(x),
    )
    assert isinstance(lax.top_k(x, 2, axis=axis), list)  # as JAX's


def test_mul_out_dtype(backend):
    x = np.random.RandomState(1).rand(3, 4).astype(np.float32)
    x16 = x.astype(np.float16)
    i8 = np.arange(5, dtype=np.int8) * 40
    cases = [
        (lambda lx: lambda: lx.mul(x16, x16, out_dtype=np.float32)),
        (lambda lx: lambda: lx.mul(x16, x, out_dtype=np.float32)),
        (lambda lx: lambda: lx.mul(i8, i8, out_dtype=np.int32)),
        (lambda lx: lambda: lx.mul(x, x, out_dtype=np.float16)),
        (lambda lx: lambda: lx.mul(2.0, 3.0, out_dtype=np.float32)),
    ]
    for case in cases:
        want = case(jax.lax)()
        _close(case(lax)(), want)
        assert lax.mul(2.0, 3.0, out_dtype=np.float32).weak_type
    jf = jax.grad(lambda a, b: jax.lax.mul(a, b, out_dtype=np.float32).sum(), (0, 1))
    rf = ri.grad(lambda a, b: lax.mul(a, b, out_dtype=np.float32).sum(), (0, 1))
    _close(ri.jit(rf)(x16, x), jf(x16, x))
    program = str(ri.make_jaxpr(lambda a: lax.mul(a, a, out_dtype=np.float32))(x16))
    assert "out_dtype" in program and "convert" not in program


def test_lax_keyword_surface():
    np.testing.assert_equal(
        np.asarray(lax.nextafter(x1=np.float32(1), x2=np.float32(2))),
        np.asarray(jax.lax.nextafter(x1=np.float32(1), x2=np.float32(2))),
    )
    for name in ["exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "sqrt", "rsqrt",
                 "cbrt", "logistic"]:  # fmt: skip
        np.testing.assert_allclose(
            np.asarray(getattr(lax, name)(np.float32(0.5), accuracy=None)),
            np.asarray(getattr(jax.lax, name)(np.float32(0.5), accuracy=None)),
            rtol=1e-6,
        )
