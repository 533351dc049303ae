"""Tangent weak types under eager jvp/linearize against JAX 0.10.2: JAX's
jnp functions are jits, whose jvp types the tangents of their arguments as
the primals (a float32 tangent of a Python-float primal is weak inside
``x * 2.0``); lax functions and the jnp functions that are no jits
(reshape, transpose, expand_dims) keep the tangents' own weak types."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax


def _unary(np_, lax):
    return {
        "mul_scalar": lambda x: x * 2.0,
        "rmul_scalar": lambda x: 2.0 * x,
        "add_scalar": lambda x: x + 1.0,
        "div_scalar": lambda x: x / 2.0,
        "neg": lambda x: -x,
        "pow_int": lambda x: x**2,
        "sin": np_.sin,
        "exp": np_.exp,
        "tanh": np_.tanh,
        "abs": np_.abs,
        "sum": np_.sum,
        "cumsum": lambda x: np_.cumsum(np_.atleast_1d(x)),
        "where": lambda x: np_.where(x > 0, x, 0.0),
        "clip": lambda x: np_.clip(x, 0.0, 3.0),
        "maximum": lambda x: np_.maximum(x, 0.0),
        "stack": lambda x: np_.stack([x, x]),
        "concatenate": lambda x: np_.concatenate([np_.atleast_1d(x), np_.atleast_1d(x)]),
        "asarray": np_.asarray,
        "astype_method": lambda x: x.astype(np.float32),
        "real": np_.real,
        "dot": lambda x: np_.dot(x, x),
        "sin_then_lax_add": lambda x: lax.add(np_.sin(x), 1.0),
        # no jits in JAX: the tangent keeps its own weak type
        "lax_add": lambda x: lax.add(x, 1.0),
        "lax_mul": lambda x: lax.mul(x, 2.0),
        "lax_sin": lax.sin,
        "reshape": lambda x: np_.reshape(x, (1,)),
        "expand_dims": lambda x: np_.expand_dims(x, 0),
        "transpose": np_.transpose,
    }


def _binary(np_):
    return {
        "add": lambda x, y: x + y,
        "mul": lambda x, y: x * y,
        "np_add": np_.add,
        "np_multiply": np_.multiply,
    }


def _value(kind, v):
    return v if kind == "weak" else np.float32(v)


def _check(ours, theirs):
    leaves, jleaves = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(leaves) == len(jleaves)
    for a, b in zip(leaves, jleaves, strict=True):
        if not isinstance(b, jax.Array):
            # JAX handed back the user's own host value (the function returned
            # its input untouched, e.g. a 0-d transpose): so must refimpl
            assert type(a) is type(b) and a == b, (a, b)
            continue
        b = jnp.asarray(b)
        assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type), (a, b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


@pytest.mark.parametrize("kinds", [("weak", "strong"), ("strong", "weak")])
@pytest.mark.parametrize("name", list(_unary(jnp, jlax)))
def test_jvp_unary(backend, name, kinds):
    p, t = _value(kinds[0], 2.0), _value(kinds[1], 0.5)
    ours = ri.jvp(_unary(rnp, rlax)[name], (p,), (t,))
    theirs = jax.jvp(_unary(jnp, jlax)[name], (p,), (t,))
    _check(ours, theirs)


@pytest.mark.parametrize(
    "kinds",
    [
        ("weak", "weak", "weak", "strong"),
        ("weak", "weak", "strong", "weak"),
        ("weak", "weak", "strong", "strong"),
        ("strong", "strong", "weak", "weak"),
        ("weak", "strong", "strong", "weak"),
    ],
)
@pytest.mark.parametrize("name", list(_binary(jnp)))
def test_jvp_binary(backend, name, kinds):
    px, py, tx, ty = (_value(k, v) for k, v in zip(kinds, (2.0, 3.0, 0.5, 0.25), strict=True))
    ours = ri.jvp(_binary(rnp)[name], (px, py), (tx, ty))
    theirs = jax.jvp(_binary(jnp)[name], (px, py), (tx, ty))
    _check(ours, theirs)


def _programs(api, np_):
    f32 = np.float32
    return {
        # inside a jit the jnp function's jit boundary retypes as well
        "jit_of_jvp": lambda: api.jit(lambda x, t: api.jvp(np_.sin, (x,), (t,)))(2.0, f32(0.5)),
        # each level of a nested jvp
        "jvp_of_jvp": lambda: api.jvp(
            lambda x: api.jvp(lambda y: y * 2.0, (x,), (f32(1.0),))[1], (2.0,), (f32(0.5),)
        ),
        # through a vmap or grad inside the jvp (JAX binds the jit again below them)
        "jvp_of_vmap": lambda: api.jvp(
            api.vmap(np_.sin), (api.numpy.full(3, 2.0) * 1.0,), (np.full(3, 0.5, f32),)
        ),
        "jvp_of_grad": lambda: api.jvp(api.grad(lambda x: np_.sin(x) * 2.0), (2.0,), (f32(0.5),)),
        # linearize: the output tangent has the linear program's type (JAX's
        # pow derivative is strong), not the primal's weak type
        "linearize_pow": lambda: api.linearize(lambda x: x**2.5, 2.0)[1](0.5),
        "linearize_pow_strong_t": lambda: api.linearize(lambda x: x**2.5, 2.0)[1](f32(0.5)),
    }


@pytest.mark.parametrize("case", list(_programs(jax, jnp)))
def test_programs(backend, case):
    _check(_programs(ri, rnp)[case](), _programs(jax, jnp)[case]())


# JAX's rules multiply by lax._const(x, c): a Python scalar (weak) for a
# weakly typed rank-0 x, a strong array constant otherwise, so the tangent of
# sqrt of a weakly typed array is strong
_CONST_RULES = {
    "sqrt": lambda np_, lax: np_.sqrt,
    "tan": lambda np_, lax: np_.tan,
    "arcsin": lambda np_, lax: np_.arcsin,
    "arccos": lambda np_, lax: np_.arccos,
    "arctan": lambda np_, lax: np_.arctan,
    "cbrt": lambda np_, lax: np_.cbrt,
    "square": lambda np_, lax: np_.square,
    "reciprocal": lambda np_, lax: np_.reciprocal,
    "rsqrt": lambda np_, lax: lax.rsqrt,
    "erf": lambda np_, lax: lax.erf,
    "integer_pow": lambda np_, lax: lambda x: lax.integer_pow(x, 3),
    # weak-preserving ones (JAX's _one): stay weak
    "log1p": lambda np_, lax: np_.log1p,
    "tanh": lambda np_, lax: np_.tanh,
}


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("tangent_kind", ["weak", "strong"])
@pytest.mark.parametrize("name", list(_CONST_RULES))
def test_rule_constants_of_weak_arrays(backend, name, tangent_kind, shape):
    def run(api, np_, lax):
        x = lax.broadcast_in_dim(0.5, shape, ())
        t = np.full(shape, 0.25, np.float32)
        if tangent_kind == "weak":
            t = lax.broadcast_in_dim(0.25, shape, ())
        return api.jvp(_CONST_RULES[name](np_, lax), (x,), (t,))

    _check(run(ri, rnp, rlax), run(jax, jnp, jlax))


def _host_data_programs(api, np_):
    a = np.arange(3.0)  # float64: the user's own NumPy data
    return {
        # a jnp jit under vmap and jvp nested either way: every level's
        # untouched host data comes back a new (float32) array
        "squeeze_vmap_of_jvp": lambda: api.vmap(lambda x: api.jvp(np_.squeeze, (x,), (x,)))(a),
        "squeeze_jvp_of_vmap": lambda: api.jvp(api.vmap(np_.squeeze), (a,), (a,)),
        "ravel_vmap_of_jvp": lambda: api.vmap(lambda x: api.jvp(np_.ravel, (x,), (x,)))(a),
        # asarray is no jit: under vmap it hands the user's array back, at
        # every level below too; under jvp alone it makes arrays
        "asarray_vmap_of_jvp": lambda: api.vmap(lambda x: api.jvp(np_.asarray, (x,), (x,)))(a),
        "asarray_jvp_of_vmap": lambda: api.jvp(api.vmap(np_.asarray), (a,), (a,)),
        "asarray_jvp": lambda: api.jvp(np_.asarray, (a,), (a,)),
        # linearize forwards host data through the jits it inlines
        "ravel_linearize": lambda: api.linearize(np_.ravel, a)[0],
    }


@pytest.mark.parametrize("case", list(_host_data_programs(jax, jnp)))
def test_nested_levels_return_host_data_as_jax(backend, case):
    ours = _host_data_programs(ri, rnp)[case]()
    theirs = _host_data_programs(jax, jnp)[case]()
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        if isinstance(b, np.ndarray):
            assert type(a) is np.ndarray and a.dtype == b.dtype, (type(a), a, b)
            np.testing.assert_array_equal(a, b)
        else:
            assert isinstance(a, ri.Array), (type(a), a)
            assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type)
            np.testing.assert_allclose(np.asarray(a), np.asarray(b))
