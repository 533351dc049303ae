"""``refimpl.test_util.check_close`` without tolerances: the per-dtype defaults,
compared with what JAX 0.10.2's own value check (``jax._src.public_test_util``)
accepts and refuses on the same pairs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from refimpl import test_util

public_test_util = pytest.importorskip("jax._src.public_test_util")

# (x, y): equal, within an ulp-sized step, or clearly apart, per dtype
PAIRS = [
    (np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)),
    (np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32) + 1),
    (np.array([True, False]), np.array([True, True])),
    (np.float32(1.0), np.float32(1.0) + np.float32(1e-7)),
    (np.float32(1.0), np.float32(1.001)),
    (np.ones(4, np.float16), np.ones(4, np.float16) + np.float16(1e-3)),
    (np.ones(2, ml_dtypes.bfloat16), np.full(2, 1.5, ml_dtypes.bfloat16)),
    (np.complex64(1 + 1j), np.complex64(1 + 1.0000001j)),
    (np.complex64(1 + 1j), np.complex64(1 + 1.1j)),
    (np.float64(1.0), np.float64(1.0 + 1e-9)),  # judged as float32 without x64
    ({"a": np.zeros(2, np.float32)}, {"a": np.full(2, 1e-3, np.float32)}),
]


def _accepts(check, x, y) -> bool:
    try:
        check(x, y)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("index", range(len(PAIRS)))
def test_check_close_defaults_accept_and_refuse_as_jax(index):
    x, y = PAIRS[index]
    assert _accepts(test_util.check_close, x, y) == _accepts(public_test_util.check_close, x, y)


def test_check_close_refuses_what_is_apart():
    # guards against a check that accepts everything
    with pytest.raises(AssertionError):
        test_util.check_close(np.float32(1.0), np.float32(2.0))
