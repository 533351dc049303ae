"""jnp.ldexp where subnormals are involved, as JAX 0.10.2.

JAX computes ldexp under XLA CPU's flushing of subnormals: its PJRT client
sets flush-to-zero and denormals-are-zero around every execution (whatever
the host CPU), so for float32, bfloat16 and float64 a subnormal ``x1`` comes
back unchanged (it compares equal to 0) and a subnormal result is a signed
zero; float16 is computed in float32 by XLA and keeps its subnormals. The
expected values are JAX's, on both backends, eagerly and under jit.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_DTYPES = [np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)]


def _inputs(dtype):
    info = ml_dtypes.finfo(dtype)
    tiny, smallest = float(info.tiny), float(info.smallest_subnormal)
    values = [1.0, 1.5, -1.75, 3.0, 0.75, tiny, -tiny, smallest, 3 * smallest, tiny / 2]
    values += [0.0, -0.0, np.inf, -np.inf]
    return np.array(values, dtype)


def _exponents(dtype):
    info = ml_dtypes.finfo(dtype)
    low = int(np.log2(float(info.tiny)))
    deepest = int(np.log2(float(info.smallest_subnormal)))
    return [low, low - 1, low - 3, deepest, deepest - 1, deepest + 1, -1, 0, 1, 5]


def _bits(x):
    x = np.asarray(x)
    return x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.name)
def test_ldexp_of_and_into_subnormals_is_jaxs(backend, dtype, jitted):
    x = _inputs(dtype)
    for e in _exponents(dtype):
        exponent = np.int32(e)
        want = (jax.jit(jjnp.ldexp) if jitted else jjnp.ldexp)(jjnp.asarray(x), exponent)
        got = (ri.jit(rnp.ldexp) if jitted else rnp.ldexp)(rnp.asarray(x), exponent)
        assert got.dtype == want.dtype
        # bit for bit: the sign of a flushed zero and a passed-through subnormal
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"exponent {e}")


def test_ldexp_flushes_float64_as_jax(backend):
    with ri.enable_x64(True), jax.enable_x64(True):
        info = np.finfo(np.float64)
        x = np.array([1.0, 3.0, -1.0, info.tiny, 5 * info.smallest_subnormal])
        for e in (-1023, -1022, -1, 3):
            want = np.asarray(jjnp.ldexp(jjnp.asarray(x), e))
            got = np.asarray(rnp.ldexp(rnp.asarray(x), e))
            np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
