"""The dtypes of index results and of int-to-float promotion, with x64 off and
on, as JAX 0.10.2.

JAX counts indices (``nonzero``, ``argmax``, ``argsort``, ``unique``'s
index/inverse/counts, ``bincount``, ``indices``, ``tril_indices`` ...) in its
default int, read when the function runs: int64 under x64. A few stay int32
whatever x64 says: ``searchsorted``/``digitize`` (int32 unless the sorted
array is too long for it) and ``argpartition`` (``top_k``'s int32 indices).
Bool operands of the numeric functions (``floor_divide``, ``power``, shifts
...) compute in int32, and bool and integers of up to 32 bits promote to
float32 in the inexact functions (``sin``, ``var``, ``linspace``) also under
x64; ``angle`` and the window functions use the default float. The expected
dtypes, weak types and values are JAX's, on both backends, eagerly and
under jit.
"""

from __future__ import annotations

import jax
import jax.nn as jnn
import jax.numpy as jjnp
import jax.scipy.special as jss
import numpy as np
import pytest

import refimpl as ri
import refimpl.nn as rnn
import refimpl.numpy as rnp
import refimpl.scipy.special as rss

_X = np.array([[3.0, 0.0, 1.0], [2.0, 5.0, 0.0]], np.float32)
_XI = np.array([3, 0, 1, 2, 5, 0, 3], np.int32)
_S = np.array([1.0, 2.0, 3.0, 5.0], np.float32)
_B = np.array([True, False, True])

# name -> a program written against a numpy module (jax.numpy or refimpl.numpy)
_CASES = {
    "nonzero": lambda m: m.nonzero(_X, size=4)[1],
    "nonzero_size": lambda m: m.nonzero(_X, size=5, fill_value=-1)[0],
    "flatnonzero": lambda m: m.flatnonzero(_X, size=4),
    "where_one_arg": lambda m: m.where(_X > 1, size=3)[0],
    "argwhere": lambda m: m.argwhere(_X, size=4),
    "argmax": lambda m: m.argmax(_X),
    "argmin_axis": lambda m: m.argmin(_X, axis=0),
    "argmax_keepdims": lambda m: m.argmax(_X, axis=1, keepdims=True),
    "nanargmax": lambda m: m.nanargmax(_X),
    "nanargmin_axis": lambda m: m.nanargmin(_X, axis=1),
    "argsort": lambda m: m.argsort(_X),
    "argsort_descending": lambda m: m.argsort(_X, axis=0, descending=True),
    "lexsort": lambda m: m.lexsort((_XI, -_XI)),
    "unique_index": lambda m: m.unique(_XI, return_index=True, size=5)[1],
    "unique_inverse": lambda m: m.unique(_XI, return_inverse=True, size=5)[1],
    "unique_counts": lambda m: m.unique(_XI, return_counts=True, size=5)[1],
    "unique_all_index": lambda m: m.unique_all(_XI, size=5)[1],
    "intersect1d_index": lambda m: m.intersect1d(
        _XI, np.int32([3, 5]), return_indices=True, size=2
    )[1],
    "bincount": lambda m: m.bincount(_XI, length=7),
    "histogram2d": lambda m: m.histogram2d(_X[0], _X[1], bins=2)[0],
    "indices": lambda m: m.indices((2, 3)),
    "tril_indices": lambda m: m.tril_indices(3)[0],
    "triu_indices_from": lambda m: m.triu_indices_from(np.ones((3, 4)), 1)[1],
    "mask_indices": lambda m: m.mask_indices(3, m.triu, size=6)[1],
    "searchsorted": lambda m: m.searchsorted(_S, _X),
    "searchsorted_empty": lambda m: m.searchsorted(_S[:0], _X),
    "digitize": lambda m: m.digitize(_X, _S),
    "digitize_decreasing": lambda m: m.digitize(_X, _S[::-1], right=True),
    "argpartition": lambda m: m.argpartition(_XI, 2),
    "floor_divide_bool": lambda m: m.floor_divide(_B, True),
    "power_bool": lambda m: m.power(_B, _B),
    "left_shift_bool": lambda m: m.left_shift(_B, _B),
    "square_bool": lambda m: m.square(_B),
    "sin_int32": lambda m: m.sin(_XI),
    "sqrt_uint8": lambda m: m.sqrt(_XI.astype(np.uint8)),
    "true_divide_int16": lambda m: m.true_divide(_XI.astype(np.int16), 2),
    "sin_int64": lambda m: m.sin(np.arange(3)),
    "mean_int32": lambda m: m.mean(_XI),
    "var_int32": lambda m: m.var(_XI),
    "std_bool": lambda m: m.std(_B),
    "linspace_int8": lambda m: m.linspace(np.int8(1), 2, 3),
    "angle_int32": lambda m: m.angle(_XI),
    "angle_float32": lambda m: m.angle(_S),
    "angle_float32_scalar": lambda m: m.angle(np.float32(-1.0)),
    "angle_python_float": lambda m: m.angle(-1.0),
    "angle_complex": lambda m: m.angle(np.complex64(1 - 1j)),
    "rint_int32": lambda m: m.rint(_XI),
    "rint_python_int": lambda m: m.rint(3),
    "fabs_int32": lambda m: m.fabs(_XI),
    "polyval_bool": lambda m: m.polyval(_B, _B),
    "polyval_int8_weak_x": lambda m: m.polyval(np.int8([1, 2]), 3),
    "polyval_float_int_x": lambda m: m.polyval(_S, np.arange(3)),
    "kron_int8": lambda m: m.kron(np.int8([1, 2]), np.eye(2, dtype=np.int8)),
    "hanning": lambda m: m.hanning(4),
    "bartlett": lambda m: m.bartlett(4),
}


def _run(module, fn, jitted):
    program = lambda: _CASES[fn](module)  # noqa: E731
    if jitted:
        program = (jax.jit if module is jjnp else ri.jit)(program)
    return program()


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("fn", sorted(_CASES))
def test_result_dtype_is_jaxs(backend, x64_mode, fn, jitted):
    want = _run(jjnp, fn, jitted)
    got = _run(rnp, fn, jitted)
    assert got.dtype == want.dtype, (fn, got.dtype, want.dtype)
    assert bool(getattr(got, "weak_type", False)) == bool(want.weak_type)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


def test_index_dtype_follows_x64_between_calls(backend):
    """One jitted function called with x64 off, on, then off again: each call
    gives that moment's default int (no trace reused across the flag)."""
    old = ri.config.enable_x64
    f = ri.jit(lambda x: (rnp.argmax(x), rnp.nonzero(x, size=2)[0], rnp.argsort(x)))
    try:
        for flag, want in ((False, np.int32), (True, np.int64), (False, np.int32)):
            ri.config.update("enable_x64", flag)
            for out in (*f(_S), rnp.argmax(_S), rnp.unique(_XI, return_inverse=True)[1]):
                assert out.dtype == want
    finally:
        ri.config.update("enable_x64", old)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_kron_of_bool_is_a_type_error_as_jax(backend, jitted):
    """JAX multiplies with lax.mul, which takes no bool."""
    for module in (jjnp, rnp):
        f = lambda m=module: m.kron(_B, _B)  # noqa: E731
        with pytest.raises(TypeError, match="mul"):
            (jax.jit(f) if module is jjnp else ri.jit(f))() if jitted else f()


# scipy.special and nn promote as jnp does: float32 for bool and narrow ints
_SPECIAL_CASES = {
    "erf_int32": lambda s, n: s.erf(_XI),
    "erf_bool": lambda s, n: s.erf(_B),
    "gammaln_int8": lambda s, n: s.gammaln(_XI.astype(np.int8) + 1),
    "logsumexp_int32": lambda s, n: s.logsumexp(_XI),
    "xlogy_int32": lambda s, n: s.xlogy(_XI, _XI),
    "expit_uint16": lambda s, n: s.expit(_XI.astype(np.uint16)),
    "erf_int64": lambda s, n: s.erf(np.arange(3)),
    "softmax_int32": lambda s, n: n.softmax(_XI),
    "gelu_int32": lambda s, n: n.gelu(_XI),
}


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("fn", sorted(_SPECIAL_CASES))
def test_special_and_nn_promotion_is_jaxs(backend, x64_mode, fn, jitted):
    def run(special, nn, jit):
        program = lambda: _SPECIAL_CASES[fn](special, nn)  # noqa: E731
        return jit(program)() if jitted else program()

    want = run(jss, jnn, jax.jit)
    got = run(rss, rnn, ri.jit)
    assert got.dtype == want.dtype, (fn, got.dtype, want.dtype)
    assert bool(getattr(got, "weak_type", False)) == bool(want.weak_type)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-6)


# Index arrays of dtypes int32 cannot hold (int64, uint32, uint64), with values
# beyond int32: JAX converts them to int32 (wrapping modulo 2**32) where its
# indexing converts, which depends on the path: a gather or scatter (x[idx],
# x.at[idx].set, take's "fill") counts negatives from the end first, a
# dynamic slice of several dims converts first, a dynamic slice of a 1-d
# array, take's "clip" and "wrap" work in the index's own dtype
_WIDE_INDICES = [
    ("int64", 2**32 - 1),
    ("int64", 2**32 + 1),
    ("int64", -(2**32) + 1),
    ("uint32", 2**31),
    ("uint32", 2**32 - 1),
    ("uint64", 2**63),
]
_X1 = np.arange(10, dtype=np.int32) * 10
_X2 = _X1[:12].reshape(2, 5)
_WIDE_OPS = {
    "getitem": lambda m, i: m.asarray(_X1)[i],
    "getitem_2d": lambda m, i: m.asarray(_X2)[i],
    "getitem_2d_second": lambda m, i: m.asarray(_X2)[1, i],
    "getitem_with_array": lambda m, i: m.asarray(_X2)[i, np.array([0, 3])],
    "get_clip": lambda m, i: m.asarray(_X1).at[i].get(mode="clip"),
    "get_fill": lambda m, i: m.asarray(_X1).at[i].get(mode="fill", fill_value=-7),
    "set": lambda m, i: m.asarray(_X1).at[i].set(99),
    "add_clip": lambda m, i: m.asarray(_X1).at[i].add(5, mode="clip"),
    "set_2d": lambda m, i: m.asarray(_X2).at[i, 1].set(99),
    "take": lambda m, i: m.take(_X1, i),
    "take_clip": lambda m, i: m.take(_X1, i, mode="clip"),
    "take_wrap": lambda m, i: m.take(_X1, i, mode="wrap"),
    "take_along_axis": lambda m, i: m.take_along_axis(_X1, m.reshape(i, (-1,)), axis=0),
    "take_along_axis_clip": lambda m, i: m.take_along_axis(
        _X1, m.reshape(i, (-1,)), axis=0, mode="promise_in_bounds"
    ),
    "put_along_axis": lambda m, i: m.put_along_axis(
        _X1, m.reshape(i, (-1,)), 99, axis=0, inplace=False
    ),
}


@pytest.mark.parametrize("form", ["eager_0d", "eager_1d", "jit_0d"])
@pytest.mark.parametrize("op", sorted(_WIDE_OPS))
@pytest.mark.parametrize("index", _WIDE_INDICES, ids=lambda v: f"{v[0]}({v[1]})")
def test_wide_index_converts_as_jax(backend, x64_mode, index, op, form):
    dtype, value = index
    i = np.array(value if form.endswith("0d") else [value], dtype)

    def run(module, jit):
        program = lambda j: _WIDE_OPS[op](module, j)  # noqa: E731
        return jit(program)(i) if form.startswith("jit") else program(i)

    want, got = run(jjnp, jax.jit), run(rnp, ri.jit)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize(
    "value", [2**31, 2**32 + 1, -(2**31) - 1, -(2**32) + 1, np.int64(2**32 - 1)]
)
def test_static_int_beyond_int32_under_x64_as_jax(backend, x64, value, jitted):
    """A Python or NumPy int beyond int32 is read as an array of its dtype
    (int64 for a Python int), then converted where JAX converts. (Not an
    unsigned one into a 1-d array: JAX reads np.uint32(2**31) as the first
    element eagerly and the last under jit.)"""
    programs = [
        lambda m: m.asarray(_X1)[value],
        lambda m: m.asarray(_X2)[value],
        lambda m: m.asarray(_X2)[1, value],
        lambda m: m.asarray(_X2)[value, 1:3],
        lambda m: m.asarray(_X1).at[value].set(99),
        lambda m: m.asarray(_X1).at[value].get(mode="fill", fill_value=-7),
    ]
    for program in programs:
        want = (jax.jit if jitted else lambda f: f)(lambda p=program: p(jjnp))()
        got = (ri.jit if jitted else lambda f: f)(lambda p=program: p(rnp))()
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize(
    "value", [2**31, -(2**31) - 1, 2**32 + 1, np.int64(2**32 - 1), np.uint32(2**31)]
)
def test_get_clip_of_a_static_int_beyond_int32_as_jax(backend, x64_mode, value):
    """get(mode="clip") clamps a static int exactly (JAX's static slice),
    unless an index array makes it a gather."""
    programs = [
        lambda m: m.asarray(_X2).at[value].get(mode="clip"),
        lambda m: m.asarray(_X2).at[1, value].get(mode="clip"),
        lambda m: m.asarray(_X1).at[value].get(mode="clip"),
        lambda m: m.asarray(_X2).at[value, 1:3].get(mode="clip"),
    ]
    if x64_mode or not isinstance(value, int):
        programs.append(lambda m: m.asarray(_X2).at[value, np.array([0, 1])].get(mode="clip"))
    for program in programs:
        np.testing.assert_array_equal(np.asarray(program(rnp)), np.asarray(program(jjnp)))


@pytest.mark.parametrize("index", _WIDE_INDICES[:5], ids=lambda v: f"{v[0]}({v[1]})")
def test_wide_index_under_vmap_as_jax(backend, x64_mode, index):
    """vmap of a dynamic slice at batched starts clamps each start in its own
    dtype, as JAX's batched gather (uint32 2**31 is the last element)."""
    dtype, value = index
    i = np.array([value, 3], dtype)
    programs = [
        lambda j, m, L: j.vmap(lambda k: m.asarray(_X1)[k])(i),
        lambda j, m, L: j.vmap(lambda k: m.asarray(_X2)[k])(i),
        lambda j, m, L: j.vmap(lambda k: L.dynamic_slice(_X1, (k,), (3,)))(i),
    ]
    for program in programs:
        want = program(jax, jjnp, jax.lax)
        got = program(ri, rnp, ri.lax)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
