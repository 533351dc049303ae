"""Indexing with narrow integer index arrays (int8, int16, uint8), as JAX 0.10.2.

JAX counts a negative index from the end in the index's own dtype: the axis
size converted to it wraps when it does not fit (int8(300) is 44), so
``x[int8(-1)]`` of 300 elements reads element 43 when the read is a dynamic
slice of a 1-d array (``x[i]``, ``x.at[i].get()``, ``jnp.take``). A dynamic
slice of several dims converts its starts to int32 first (exact), and the
gather/scatter paths (``x.at[i].set``, ``get(mode="fill")``, ``x[i, idx]``)
are NumPy's OverflowError for such a size. Each program runs eagerly and
under jit on both backends and is compared with JAX.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax

_READS = {
    "x[i]": lambda np_, lax_, x, i: x[i],
    "x[i] of 2-d": lambda np_, lax_, x, i: x.reshape(150, 2)[i],
    "x[i, i] of 2-d": lambda np_, lax_, x, i: x.reshape(2, 150)[i + 1, i],
    "at[i].get()": lambda np_, lax_, x, i: x.at[i].get(),
    "at[i].get(clip)": lambda np_, lax_, x, i: x.at[i].get(mode="clip"),
    "take": lambda np_, lax_, x, i: np_.take(x, i),
    "take clip": lambda np_, lax_, x, i: np_.take(x, i, mode="clip"),
    "take of an array": lambda np_, lax_, x, i: np_.take(x, np_.stack([i, i + 3])),
    "take 2-d axis 0": lambda np_, lax_, x, i: np_.take(x.reshape(300, 1), i, axis=0),
    "x[i] of 100": lambda np_, lax_, x, i: x[:100][i],
    "at[i].set of 100": lambda np_, lax_, x, i: x[:100].at[i].set(-1.0),
    "dynamic_index_in_dim": lambda np_, lax_, x, i: lax_.dynamic_index_in_dim(x, i, 0, False),
}

_OVERFLOWS = {
    "at[i].set": lambda np_, lax_, x, i: x.at[i].set(-1.0),
    "at[i].add": lambda np_, lax_, x, i: x.at[i].add(1.0),
    "at[i].get(fill)": lambda np_, lax_, x, i: x.at[i].get(mode="fill"),
    "x[i, idx] of 2-d": lambda np_, lax_, x, i: x.reshape(300, 1)[i, np_.zeros(2, np_.int32)],
    "take wrap": lambda np_, lax_, x, i: np_.take(x, i, mode="wrap"),
}


def _run(fn, np_, lax_, jit, dtype, value):
    def program(x, i):
        return fn(np_, lax_, x, i)

    x = np_.arange(300.0, dtype=np_.float32)
    i = np_.asarray(np.asarray(value, dtype))
    return (jit(program) if jit else program)(x, i)


@pytest.mark.parametrize("value", [-1, -2, -128, 5, 127])
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(_READS))
def test_a_narrow_index_reads_as_jax(backend, name, jitted, value):
    fn = _READS[name]
    want = _run(fn, jjnp, jlax, jax.jit if jitted else None, np.int8, value)
    got = _run(fn, rnp, lax, ri.jit if jitted else None, np.int8, value)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.shape == want.shape and got.dtype == want.dtype


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(_OVERFLOWS))
def test_a_scatter_or_gather_index_too_narrow_for_the_axis_overflows_as_jax(backend, name, jitted):
    fn = _OVERFLOWS[name]
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        _run(fn, jjnp, jlax, jax.jit if jitted else None, np.int8, 5)
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        _run(fn, rnp, lax, ri.jit if jitted else None, np.int8, 5)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("value", [-1, 5, 127, 200, 255])
def test_dynamic_update_slice_clamps_a_narrow_start_exactly_on_both_backends(backend, dtype, value):
    # XLA's CPU backend clamps a start in its own type (the bound 298 is
    # int8 42), in some compiled programs only (JAX 0.10.2 writes an int8
    # 127 at 42 eagerly, at 127 under jit): refimpl clamps exactly on both
    # backends, eagerly and under jit, as NumPy's slice assignment would
    if not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
        pytest.skip("not representable")
    start = value + 300 if value < 0 and dtype != np.uint8 else value
    if dtype == np.int8 and value < 0:
        start = int(np.int8(value) + np.int8(44))  # JAX's wrapped normalization
    want = np.arange(300.0, dtype=np.float32)
    clamped = min(max(start, 0), 298)
    want[clamped : clamped + 2] = [-7.0, -8.0]

    def program(x, i):
        return lax.dynamic_update_slice(x, rnp.array([-7.0, -8.0], rnp.float32), (i,))

    x, i = rnp.arange(300.0, dtype=rnp.float32), rnp.asarray(np.asarray(value, dtype))
    np.testing.assert_array_equal(np.asarray(program(x, i)), want)
    np.testing.assert_array_equal(np.asarray(ri.jit(program)(x, i)), want)
