"""ri.mask on the PJRT backend: the same masked programs, compiled once for all sizes.

The masked program is ordinary IR, so ``ri.jit(ri.mask(f, ...), backend="pjrt")``
lowers it like any other; the oracle is NumPy on the unpadded inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.backends.pjrt import runtime as pjrt_runtime
from refimpl.backends.pjrt.lowering import LoweringError

try:
    pjrt_runtime.native_module()
    _available = pjrt_runtime.plugin_available()
except ImportError:
    _available = False
pytestmark = [
    pytest.mark.pjrt,
    pytest.mark.skipif(not _available, reason="needs the native module and a PJRT plugin"),
]

F32 = np.float32


def _run_or_skip_missing_lowering(fn, *args):
    try:
        return fn(*args)
    except LoweringError as err:  # a primitive whose lowering is not written yet
        if "has no StableHLO lowering rule" in str(err):
            pytest.skip(str(err))
        raise


def _attention(q, k, v):
    scores = q @ k.T
    e = rnp.exp(scores - rnp.max(scores, axis=-1, keepdims=True))
    return (e / rnp.sum(e, axis=-1, keepdims=True)) @ v


def test_masked_attention_on_pjrt_one_compile_for_all_sizes():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((8, d)).astype(F32) for d in (4, 4, 3))
    jitted = ri.jit(ri.mask(_attention, ["(n, 4)", "(n, 4)", "(n, 3)"], "(n, 3)"), backend="pjrt")
    for n in range(1, 9):
        out = np.asarray(_run_or_skip_missing_lowering(jitted, [q, k, v], {"n": n}))[:n]
        z = q[:n] @ k[:n].T
        e = np.exp(z - z.max(-1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True) @ v[:n], rtol=1e-5, atol=1e-6)
    assert jitted.trace_count == 1


def test_masked_scan_on_pjrt():
    xs = np.random.default_rng(1).standard_normal((6, 3)).astype(F32)

    def fun(xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, c.sum()), np.zeros(3, F32), xs)[0]

    jitted = ri.jit(ri.mask(fun, ["(n, 3)"], "(3,)"), backend="pjrt")
    for n in (0, 2, 6):
        want = np.zeros(3, F32)
        for x in xs[:n]:
            want = want * F32(0.5) + x
        got = np.asarray(_run_or_skip_missing_lowering(jitted, [xs], {"n": n}))
        np.testing.assert_allclose(got, want, rtol=1e-6)
