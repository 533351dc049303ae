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


def test_masked_top_k_and_reduce_window_on_pjrt_one_compile():
    """Padding is NaN (top_k would choose it first, sums would turn NaN)."""
    rng = np.random.default_rng(2)
    x = np.full((2, 7), np.nan, F32)
    x[:, :5] = rng.choice(np.asarray([-np.inf, -1.0, 0.0, 2.0, np.inf], F32), size=(2, 5))

    def fun(x):
        values, indices = lax.top_k(x, 2)
        sums = lax.reduce_window(x, 0.0, lax.add, (1, 2), (1, 2), ((0, 0), (0, 1)))
        return values, indices, sums

    jitted = ri.jit(
        ri.mask(fun, ["(2, n)"], ("(2, 2)", "(2, 2)", "(2, (n + 1) // 2)")), backend="pjrt"
    )
    for n in (2, 3, 4, 5):
        xp = x.copy()
        xp[:, n:] = np.nan
        values, indices, sums = _run_or_skip_missing_lowering(jitted, [xp], {"n": n})
        # top 2 per row: descending, ties to the lower index (no NaN in the valid region)
        order = np.array([sorted(range(n), key=lambda i: (-float(r[i]), i))[:2] for r in x[:, :n]])
        np.testing.assert_array_equal(np.asarray(indices), order)
        np.testing.assert_array_equal(np.asarray(values), np.take_along_axis(x, order, 1))
        padded = np.concatenate([x[:, :n], np.zeros((2, 1), F32)], axis=1)
        want = np.stack([padded[:, 2 * j : 2 * j + 2].sum(1) for j in range((n + 1) // 2)], 1)
        np.testing.assert_array_equal(np.asarray(sums)[:, : (n + 1) // 2], want)
    assert jitted.trace_count == 1


def test_masked_scatter_add_clip_on_pjrt():
    """Padded indices (9) and the padded update rows must not write; indices
    past n clamp to n - 1 as in the unpadded program."""
    x = np.arange(8, dtype=F32)
    idx = np.array([0, 6, 2, 7, 9, 9], np.int32)
    upd = np.array([10, 20, 30, 40, np.nan, np.inf], F32)
    fun = lambda x, i, u: lax.scatter_add_along_axis(x, i, u, 0, mode="clip")  # noqa: E731
    jitted = ri.jit(ri.mask(fun, ["(n,)", "(k,)", "(k,)"], "(n,)"), backend="pjrt")
    for n in (1, 3, 7):
        got = np.asarray(_run_or_skip_missing_lowering(jitted, [x, idx, upd], {"n": n, "k": 4}))
        want = x[:n].copy()
        np.add.at(want, np.clip(idx[:4], 0, n - 1), upd[:4])
        np.testing.assert_array_equal(got[:n], want)
    assert jitted.trace_count == 1
