"""Automatic differentiation: jvp, vjp, grad against jax (the oracle)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def f_ri(x):
    return lax.sin(x) * x + 2.0 * x


def f_jax(x):
    return jnp.sin(x) * x + 2.0 * x


X = np.float32(1.5)


def test_jvp_matches_jax():
    out, tan = ri.jvp(f_ri, (X,), (np.float32(0.5),))
    jout, jtan = jax.jvp(f_jax, (X,), (np.float32(0.5),))
    _close(out, jout)
    _close(tan, jtan)


def test_grad_matches_jax():
    _close(ri.grad(f_ri)(X), jax.grad(f_jax)(X))


def test_grad_of_grad_matches_jax():
    _close(ri.grad(ri.grad(f_ri))(X), jax.grad(jax.grad(f_jax))(X))


def test_vjp_matches_jax():
    x = np.array([0.5, 1.0, -2.0], np.float32)
    ct = np.array([1.0, -1.0, 2.0], np.float32)
    out, pb = ri.vjp(f_ri, x)
    jout, jpb = jax.vjp(f_jax, x)
    _close(out, jout)
    _close(pb(ct)[0], jpb(ct)[0])


def test_grad_python_branch_on_concrete_value():
    def g(x):
        if x > 0:
            return x * x
        return -3.0 * x

    assert float(ri.grad(g)(3.0)) == 6.0
    assert float(ri.grad(g)(-3.0)) == -3.0


# Python conversions of a JVP tracer outside jit, with what JAX 0.10.2 gives
# (x = 2.0): bool(), int(), indexing and item() use the known primal;
# float(), complex() and tolist() raise even though it is known.
_CONVERSIONS = [
    ("bool", lambda x: x * 3 if x else x, 6.0),
    ("int", lambda x: x * int(x), 4.0),
    ("index", lambda x: x * [1.0, 2.0, 3.0][int(x) - 1 : int(x)][0], 4.0),
    ("item", lambda x: x * x.item(), 4.0),
    ("float", lambda x: x * float(x), None),
    ("complex", lambda x: x * complex(x).real, None),
    ("tolist", lambda x: x * x.tolist(), None),
]


@pytest.mark.parametrize("name,f,want", _CONVERSIONS, ids=[c[0] for c in _CONVERSIONS])
@pytest.mark.parametrize("primal", [2.0, np.float32(2.0)], ids=["python", "numpy"])
def test_python_conversions_of_jvp_tracer_as_jax(name, f, want, primal):
    if want is None:
        with pytest.raises(jax.errors.ConcretizationTypeError):
            jax.jvp(f, (primal,), (1.0,))
        with pytest.raises(ri.ConcretizationTypeError, match=name):
            ri.jvp(f, (primal,), (np.float32(1.0),))
        return
    out, _ = jax.jvp(f, (primal,), (np.float32(1.0),))
    got, _ = ri.jvp(f, (primal,), (np.float32(1.0),))
    assert float(out) == want and float(got) == want


def test_grad_python_branch_under_jit_is_concretization_error():
    def g(x):
        if x > 0:
            return x * x
        return -x

    with pytest.raises(ri.ConcretizationTypeError):
        ri.jit(ri.grad(g))(3.0)


def test_jit_of_grad_is_an_ordinary_program():
    program = ri.make_program(ri.grad(f_ri))(X)
    names = [e.primitive.name for e in program.eqns]
    assert "sin" in names and "cos" in names
    ri.check_program(program)
    _close(ri.jit(ri.grad(f_ri))(X), jax.grad(f_jax)(X))


def test_grad_of_jit_keeps_one_call_equation_and_matches_jax():
    inner = ri.jit(f_ri)

    def g(x):
        return inner(x) * 3.0

    _close(ri.grad(g)(X), jax.grad(lambda x: 3.0 * f_jax(x))(X))
    program = ri.make_program(ri.grad(g))(X)
    calls = [e for e in program.eqns if e.primitive.name == "jit"]
    assert len(calls) == 2  # the known (primal) call and the transposed linear call
    _close(ri.grad(ri.grad(g))(X), jax.grad(jax.grad(lambda x: 3.0 * f_jax(x)))(X))


def test_jvp_of_jit_matches_jax():
    inner = ri.jit(f_ri)
    out, tan = ri.jvp(inner, (X,), (np.float32(1.0),))
    jout, jtan = jax.jvp(jax.jit(f_jax), (X,), (np.float32(1.0),))
    _close(out, jout)
    _close(tan, jtan)


def test_grad_argnums_tuple_and_has_aux():
    def f(x, y):
        return rnp.sum(x * y), {"aux": x + 1.0}

    def fj(x, y):
        return jnp.sum(x * y), {"aux": x + 1.0}

    x = np.arange(3, dtype=np.float32)
    y = np.ones(3, np.float32) * 2
    (gx, gy), aux = ri.grad(f, argnums=(0, 1), has_aux=True)(x, y)
    (jgx, jgy), jaux = jax.grad(fj, argnums=(0, 1), has_aux=True)(x, y)
    _close(gx, jgx)
    _close(gy, jgy)
    _close(aux["aux"], jaux["aux"])


def test_grad_errors_as_jax():
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        ri.grad(lambda x: x * 2)(np.int32(1))
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        ri.grad(lambda x: x * 2.0)(np.ones(3, np.float32))


def test_escaped_jvp_tracer_is_an_error():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0

    ri.grad(f)(1.0)
    with pytest.raises(ri.UnexpectedTracerError):
        lax.sin(leaked[0])
