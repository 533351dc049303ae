"""Held-back run of JAX's tests/batching_test.py and tests/lax_vmap_test.py
(issue 29): the programs that differed, and a representative slice of those
that agree, each compared with JAX 0.10.2 live on both backends (values,
dtypes, weak types, shapes, and whether the result is the user's NumPy)."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from tests.helpers.parity import assert_modes_same_as_jax, assert_same_as_jax

# --- jax.numpy functions that compute nothing, under vmap of NumPy data
#
# JAX's jnp functions are jits (a new array even where nothing is computed)
# except a few (asarray, reshape, transpose, broadcast_to, astype,
# concatenate), which hand vmap's NumPy argument back: a float64 or int64
# array then comes back as it is, where a jit's result is float32/int32.

_INT64 = np.arange(6).reshape(2, 3)  # one member: (3,)
_FLOAT64 = np.ones((2, 3, 3))  # one member: (3, 3)

_NO_OP_PROGRAMS = {
    # JAX: a new array (a jit)
    "ravel": (lambda ns: ns.numpy.ravel, _INT64),
    "squeeze": (lambda ns: ns.numpy.squeeze, _INT64),
    "flip_no_axes": (lambda ns: lambda v: ns.numpy.flip(v, ()), _INT64),
    "roll_0": (lambda ns: lambda v: ns.numpy.roll(v, 0), _INT64),
    "positive": (lambda ns: ns.numpy.positive, _INT64),
    "unary_plus": (lambda ns: lambda v: +v, _INT64),
    "real": (lambda ns: ns.numpy.real, _INT64),
    "conj": (lambda ns: ns.numpy.conj, _INT64),
    "trunc_int": (lambda ns: ns.numpy.trunc, _INT64),
    "round_int": (lambda ns: ns.numpy.round, _INT64),
    "clip_no_bounds": (lambda ns: lambda v: ns.numpy.clip(v), _INT64),
    "abs_unsigned": (lambda ns: ns.numpy.abs, _INT64.astype(np.uint64)),
    "nan_to_num_int": (lambda ns: ns.numpy.nan_to_num, _INT64),
    "diff_0": (lambda ns: lambda v: ns.numpy.diff(v, n=0), _INT64),
    "pad_0": (lambda ns: lambda v: ns.numpy.pad(v, 0), _INT64),
    "moveaxis_same": (lambda ns: lambda v: ns.numpy.moveaxis(v, 0, 0), _INT64),
    "swapaxes_same": (lambda ns: lambda v: ns.numpy.swapaxes(v, 0, 0), _FLOAT64),
    "rot90_0": (lambda ns: lambda v: ns.numpy.rot90(v, 0), _FLOAT64),
    "atleast_2d": (lambda ns: ns.numpy.atleast_2d, _FLOAT64),
    "broadcast_arrays": (lambda ns: lambda v: ns.numpy.broadcast_arrays(v)[0], _INT64),
    "hstack_one": (lambda ns: lambda v: ns.numpy.hstack([v]), _INT64),
    "einsum_identity": (lambda ns: lambda v: ns.numpy.einsum("i->i", v), _INT64),
    "array_copy": (lambda ns: ns.numpy.array, _INT64),
    "asarray_copy": (lambda ns: lambda v: ns.numpy.asarray(v, copy=True), _INT64),
    "astype_copy": (lambda ns: lambda v: ns.numpy.astype(v, np.int32, copy=True), _INT64),
    "concatenate_axis_none": (lambda ns: lambda v: ns.numpy.concatenate([v], None), _INT64),
    "concat_axis_none": (lambda ns: lambda v: ns.numpy.concat([v], axis=None), _INT64),
    "method_ravel": (lambda ns: lambda v: v.ravel(), _INT64),
    "method_flatten": (lambda ns: lambda v: v.flatten(), _INT64),
    "method_squeeze": (lambda ns: lambda v: v.squeeze(), _INT64),
    "method_real": (lambda ns: lambda v: v.real, _INT64),
    "method_conj": (lambda ns: lambda v: v.conj(), _INT64),
    "nested_vmap_ravel": (lambda ns: lambda v: ns.vmap(ns.numpy.ravel)(v[None]), _INT64),
    # JAX: the NumPy argument itself (no jit)
    "asarray": (lambda ns: ns.numpy.asarray, _INT64),
    "array_no_copy": (lambda ns: lambda v: ns.numpy.array(v, copy=False), _INT64),
    "array_copy_none": (lambda ns: lambda v: ns.numpy.array(v, None, None), _INT64),
    "astype_same": (lambda ns: lambda v: v.astype(v.dtype), _INT64),
    "reshape_same": (lambda ns: lambda v: ns.numpy.reshape(v, (3,)), _INT64),
    "transpose": (lambda ns: ns.numpy.transpose, _INT64),
    "broadcast_to_same": (lambda ns: lambda v: ns.numpy.broadcast_to(v, (3,)), _INT64),
    "concatenate_one": (lambda ns: lambda v: ns.numpy.concatenate([v]), _INT64),
}


def _kind(x):
    return (type(x) is np.ndarray, np.dtype(x.dtype), tuple(x.shape))


@pytest.mark.parametrize("name", sorted(_NO_OP_PROGRAMS))
def test_vmap_of_a_jnp_function_that_computes_nothing_as_jax(backend, name):
    make, x = _NO_OP_PROGRAMS[name]
    want = jax.vmap(make(jax))(x)
    got = ri.vmap(make(ri))(x)
    # a NumPy result (the argument handed back) in JAX is one here, and so
    # keeps NumPy's dtype; an array result has the canonical dtype
    assert _kind(got) == _kind(want)
    if type(want) is not np.ndarray:
        assert got.aval.weak_type == want.aval.weak_type
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --- programs of batching_test.py that agree (kept so)


def _batching_programs(ns):
    lax_, jnp_ = ns.lax, ns.numpy
    x = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    out = {}
    for collective in ("psum", "pmax", "pmin"):
        f = lambda v, c=collective: v - getattr(lax_, c)(v, ("j", "i"))  # noqa: E731
        for i, name in enumerate(("i", "j")):
            f = ns.vmap(f, axis_name=name, in_axes=i, out_axes=i)
        out[f"comm_assoc_{collective}"] = f(x)
        if collective == "psum":
            out["comm_assoc_psum_vjp"] = ns.vjp(f, x)[1](x)
    a2a = np.arange(64, dtype=np.float32).reshape(4, 4, 4)
    out["all_to_all"] = ns.vmap(lambda v: lax_.all_to_all(v, "i", 0, 1), in_axes=1, axis_name="i")(
        a2a
    )
    out["select_unbatched_pred"] = ns.vmap(lax_.select, (None, 0, None))(
        True, np.array([0, 1], np.float32), np.array(3, np.float32)
    )
    k = np.arange(12)[::-1].reshape(3, 4).astype(np.int32)
    v = np.random.RandomState(0).permutation(12).reshape(3, 4).astype(np.float32)
    out["sort_key_val"] = ns.vmap(lambda a, b: lax_.sort_key_val(a, b, 0), (1, None))(k.T, v[0])
    out["weak_type_kept"] = ns.vmap(lambda u: (u, u * 2, u + 1.0))(jnp_.ravel(1))
    out["empty_tuples"] = ns.vmap(lambda u, _: u + 1)(np.array([0, 1], np.int32), ())
    out["dynamic_slice_scalar"] = ns.vmap(lambda u: lax_.dynamic_slice(u, [], []))(
        jnp_.array([1, 2, 3, 4])
    )
    return out


def test_batching_test_programs_as_jax(backend):
    assert_modes_same_as_jax(_batching_programs(ri), _batching_programs(jax), rtol=1e-6)


# --- lax_vmap_test.py ops the earlier sweep did not reach


def _lax_ops(ns):
    lax_ = ns.lax
    r = np.random.RandomState(0)
    x = r.randn(5, 2, 4).astype(np.float32)
    sizes = np.array([1, 0, 3], np.int64)
    dnums = lax_.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    operand = r.randn(4, 10, 5).astype(np.float32)
    idx = np.array([[0], [2], [1]])
    return {
        "reduce_precision": ns.vmap(lambda v: lax_.reduce_precision(v, 3, 2), 1)(x),
        "bitcast": ns.vmap(lambda v: lax_.bitcast_convert_type(v, np.int32), 2)(x),
        "split": ns.vmap(lambda v: lax_.split(v, sizes, 1), 1)(x),
        "optimization_barrier": ns.vmap(lax_.optimization_barrier, 2)(x),
        "scatter_apply": ns.vmap(
            lambda o: lax_.scatter_apply(
                o, idx, ns.numpy.sin, dimension_numbers=dnums, update_shape=(3, 3)
            )
        )(operand),
        "variadic_reduce": ns.vmap(
            lambda a, b: lax_.reduce(
                (a, b),
                (np.float32(0), np.float32(1)),
                lambda p, q: (p[0] + q[0], p[1] * q[1]),
                (0, 1),
            ),
            (2, 0),
        )(x, x.transpose(2, 0, 1)),
    }


def test_lax_vmap_test_ops_as_jax(backend):
    got, want = _lax_ops(ri), _lax_ops(jax)
    for name in want:
        assert_same_as_jax(got[name], want[name], rtol=1e-5)


def test_vmap_of_jnp_ravel_of_float64_numpy_is_float32_as_jax(backend):
    # the held-back program in words: per-example flattening of float64 data
    x = np.random.RandomState(1).randn(4, 2, 3)
    want = jax.vmap(jnp.ravel)(x)
    got = ri.vmap(ri.numpy.ravel)(x)
    assert_same_as_jax(got, want)


# --- lax functions that change nothing: no equation, the operand as it is
#
# JAX 0.10.2's lax.reshape to the operand's shape, squeeze of no dims, the
# identity transpose, concatenate of one operand and broadcast with no sizes
# return an array or tracer itself (refimpl bound a primitive): no equation
# in the jaxpr, and under vmap the NumPy argument itself (float64 kept).

_LAX_NO_OPS = {
    "reshape_same": lambda lax_: lambda v: lax_.reshape(v, v.shape),
    "reshape_same_dims": lambda lax_: lambda v: lax_.reshape(v, v.shape, (0, 1)),
    "squeeze_none": lambda lax_: lambda v: lax_.squeeze(v, ()),
    "transpose_identity": lambda lax_: lambda v: lax_.transpose(v, (0, 1)),
    "concatenate_one": lambda lax_: lambda v: lax_.concatenate([v], 0),
    "broadcast_none": lambda lax_: lambda v: lax_.broadcast(v, ()),
    "collapse_one_dim": lambda lax_: lambda v: lax_.collapse(v, 0, 1),
}


@pytest.mark.parametrize("name", sorted(_LAX_NO_OPS))
def test_lax_function_that_changes_nothing_as_jax(backend, name):
    want_f, got_f = _LAX_NO_OPS[name](jax.lax), _LAX_NO_OPS[name](ri.lax)
    x = np.ones((2, 3), np.float32)
    want_eqns = [str(e.primitive) for e in jax.make_jaxpr(want_f)(x).eqns]
    got_eqns = [str(e.primitive) for e in ri.make_jaxpr(got_f)(x).eqns]
    assert got_eqns == want_eqns == []
    batch = np.ones((4, 2, 3))  # float64
    assert _kind(ri.vmap(got_f)(batch)) == _kind(jax.vmap(want_f)(batch))
    a = ri.numpy.ones((2, 3))
    assert got_f(a) is a  # an array comes back as it is, as JAX's
    got, want = got_f(x), want_f(x)  # NumPy data goes through: an array
    assert type(got) is not np.ndarray and type(want) is not np.ndarray
    assert_same_as_jax(got, want)


# --- a dot contracting one element keeps the product's sign of zero
#
# batching_test's testNpMaximumPerExampleGrad: the per-example gradient is an
# outer product (a dot contracting one element); XLA rewrites such a dot as a
# multiply, so -x * 0 is -0.0 in JAX, eager and under jit. refimpl's matmul
# summed from +0.0 and gave 0.0.

_NEG = np.array([[-1.0], [2.0]], np.float32)
_ZERO = np.array([[0.0, 1.0]], np.float32)

_ONE_TERM_DOTS = {
    "matmul": lambda ns: ns.numpy.matmul(_NEG, _ZERO),
    "batched": lambda ns: ns.numpy.matmul(_NEG[None], _ZERO[None]),
    "vector_dot": lambda ns: ns.numpy.dot(np.float32([-1.0]), np.float32([0.0])),
    "two_unit_dims": lambda ns: ns.lax.dot_general(
        _NEG.reshape(2, 1, 1), _ZERO.reshape(1, 1, 2), (((1, 2), (0, 1)), ((), ()))
    ),
    "bfloat16_preferred_f32": lambda ns: ns.lax.dot_general(
        _NEG.astype(jnp.bfloat16),
        _ZERO.astype(jnp.bfloat16),
        (((1,), (0,)), ((), ())),
        preferred_element_type=np.float32,
    ),
    "complex64": lambda ns: ns.numpy.matmul(_NEG.astype(np.complex64), _ZERO.astype(np.complex64)),
    "tensordot_no_axes": lambda ns: ns.numpy.tensordot(np.float32(-1.0), np.float32(0.0), 0),
    "per_example_grad": lambda ns: ns.vmap(
        ns.grad(lambda w, x: ns.numpy.sum(ns.numpy.maximum(ns.numpy.dot(x, w), 0.0) ** 2)),
        (None, 0),
    )(np.eye(2, dtype=np.float32), np.float32([[-1.0, 2.0], [3.0, -4.0]])),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(_ONE_TERM_DOTS))
def test_dot_of_one_term_keeps_the_sign_of_zero_as_jax(backend, name, jit):
    program = _ONE_TERM_DOTS[name]
    if jit:
        want, got = jax.jit(lambda: program(jax))(), ri.jit(lambda: program(ri))()
    else:
        want, got = program(jax), program(ri)
    assert_same_as_jax(got, want)
    w, g = np.asarray(want), np.asarray(got)
    np.testing.assert_array_equal(np.signbit(g.real), np.signbit(w.real))


# --- custom vmappable types (batching_test.py's VmappableTest) ------------------------


class _Named:
    """An array with a name per axis, a pytree node and (registered below) a
    vmappable type whose spec names the axis to map."""

    def __init__(self, names, data):
        assert len(names) == data.ndim
        self.names, self.data = list(names), data


class _NamedSpec:
    def __init__(self, name, axis):
        self.name, self.axis = name, axis


def _named_to_elt(cont, _, val, spec):
    if spec.name is None:
        return val
    names = list(val.names)
    assert names.pop(spec.axis) == spec.name
    return _Named(names, cont(val.data, spec.axis))


def _named_from_elt(cont, size, elt, spec):
    data = cont(size, elt.data, spec.axis)
    if spec.axis is None:
        return _Named(elt.names, data)
    names = list(elt.names)
    names.insert(spec.axis, spec.name)
    return _Named(names, data)


def _named_programs(lib, np_):
    batching = importlib.import_module(f"{lib.__name__}.interpreters.batching")
    batching.register_vmappable(_Named, _NamedSpec, int, _named_to_elt, _named_from_elt, None)
    try:
        x = _Named(["i", "j"], np_.arange(12.0).reshape(3, 4))
        sq = lambda v: _Named(v.names, lib.lax.mul(v.data, v.data))  # noqa: E731
        a = lib.vmap(sq, in_axes=_NamedSpec("i", 0), out_axes=_NamedSpec("i", 1), axis_size=3)(x)
        b = lib.jit(sq)(x)
        c, d = lib.vmap(
            lambda v, y: (sq(v), y * 2),
            in_axes=(_NamedSpec("j", 1), 0),
            out_axes=(_NamedSpec("k", 0), 1),
            axis_size=4,
        )(x, np_.ones((4, 2)))
        return [(r.names, np.asarray(r.data)) for r in (a, b, c)] + [np.asarray(d)]
    finally:
        batching.unregister_vmappable(_Named)


for _lib in (jax, ri):
    _lib.tree_util.register_pytree_node(
        _Named, lambda x: ((x.data,), tuple(x.names)), lambda n, xs: _Named(n, xs[0])
    )


def test_custom_vmappable_type_as_jax(backend):
    """``jax.interpreters.batching.register_vmappable``: vmap takes a value of
    the type whole, through its ``to_elt``/``from_elt`` with a spec object as
    its axis (VmappableTest's NamedArray), mapped with other arguments."""
    want = _named_programs(jax, jnp)
    got = _named_programs(ri, ri.numpy)
    for (gn, gd), (wn, wd) in zip(got[:3], want[:3], strict=True):
        assert gn == wn
        np.testing.assert_array_equal(gd, wd)
    np.testing.assert_array_equal(got[3], want[3])
