"""More of ``jax.lax``: custom_root and custom_linear_solve (values and
implicit derivatives), all_to_all (vmap with an axis name, pmap on 4
devices), reduce_xor, approx_max_k/approx_min_k, conv_general_dilated_patches,
index_take, pshuffle/pswapaxes.

Every case has a NumPy oracle: the solves by ``np.linalg.solve`` and the
implicit function theorem written out, the exchanges by index arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, Oracle, fn_case, rng_for, script_case
from conformance.compare import Tolerance
from conformance.corpus.pmap import _api, _four_devices

_SOLVE = Tolerance(ulps={"float32": 64}, atol_eps=64)


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return (m @ m.T + n * np.eye(n)).astype(np.float32)


def _exchange(x: np.ndarray, split: int, concat: int, tiled: bool) -> np.ndarray:
    """all_to_all over the leading (members) axis of ``x``, by definition:
    member m gets block m of every member k's value, concatenated (tiled) or
    stacked (untiled) along ``concat`` in member order."""
    n = x.shape[0]
    outs = []
    for m in range(n):
        if tiled:
            blocks = [np.split(x[k], n, axis=split)[m] for k in range(n)]
            outs.append(np.concatenate(blocks, axis=concat))
        else:
            pieces = [np.take(x[k], m, axis=split) for k in range(n)]
            outs.append(np.stack(pieces, axis=concat))
    return np.stack(outs)


def _patches(x: np.ndarray, filt: tuple[int, int], stride: tuple[int, int]) -> np.ndarray:
    """NCHW patches with VALID padding: feature c * prod(filt) + s is input
    feature c at flat window position s."""
    n, c, h, w = x.shape
    oh, ow = (h - filt[0]) // stride[0] + 1, (w - filt[1]) // stride[1] + 1
    out = np.zeros((n, c * filt[0] * filt[1], oh, ow), x.dtype)
    for ch in range(c):
        for dy in range(filt[0]):
            for dx in range(filt[1]):
                f = ch * filt[0] * filt[1] + dy * filt[1] + dx
                out[:, f] = x[:, ch, dy : dy + stride[0] * oh : stride[0],
                              dx : dx + stride[1] * ow : stride[1]]  # fmt: skip
    return out


def _newton_sqrt(ns: Any, y: Any) -> Any:
    L, N_ = ns.lax_, ns.np_

    def solve(g: Any, x0: Any) -> Any:
        return L.while_loop(lambda x: N_.abs(g(x)) > 1e-6, lambda x: x - g(x) / (2 * x), x0)

    return L.custom_root(lambda x: x**2 - y, 1.0, solve, lambda g, t: t / g(1.0))


def _chol_solve(ns: Any, a: Any, b: Any) -> Any:
    L = ns.lax_

    def solve(matvec: Any, x: Any) -> Any:
        c = L.linalg.cholesky(a)
        y = L.linalg.triangular_solve(c, x[:, None], left_side=True, lower=True)
        return L.linalg.triangular_solve(c, y, left_side=True, lower=True, transpose_a=True)[:, 0]

    return L.custom_linear_solve(lambda x: ns.np_.dot(a, x), b, solve, symmetric=True)


def _pmap_case(name: str, fn: Any, x: np.ndarray, oracle: Any) -> Case:
    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            out = api.pmap(lambda v: fn(ns.lax_, v), "i")(x)
            return [np.asarray(leaf) for leaf in api.tree_util.tree_leaves(out)]

    return script_case(
        f"lax.all_to_all/pmap/{name}", script, expect=Oracle(lambda: [oracle(x)]),
        tags=("pmap",), requires=("lax_.all_to_all",),
    )  # fmt: skip


def cases() -> Iterator[Case]:
    rng = rng_for("lax_surface2")

    # custom_root: sqrt by Newton's method, d sqrt(y) / dy = 1 / (2 sqrt(y))
    y = np.array([2.0, 9.0, 0.5], np.float32)
    yield fn_case(
        "lax.custom_root/newton_sqrt",
        lambda ns, v: ns.api.vmap(lambda w: _newton_sqrt(ns, w))(v),
        [y],
        oracle=lambda v: np.sqrt(v),
        tolerance=_SOLVE,
        requires=("lax_.custom_root", "api.vmap"),
        tags=("quick",),
    )
    yield fn_case(
        "lax.custom_root/grad",
        lambda ns, v: ns.api.vmap(ns.api.grad(lambda w: _newton_sqrt(ns, w)))(v),
        [y],
        oracle=lambda v: (0.5 / np.sqrt(v)).astype(np.float32),
        tolerance=_SOLVE,
        requires=("lax_.custom_root", "api.grad", "api.vmap"),
    )

    # custom_linear_solve: x = A^-1 b; d sum(x^2) / db = 2 A^-T x,
    # d sum(x^2) / dA = -(2 A^-T x) x^T
    a, b = _spd(rng, 3), rng.standard_normal(3).astype(np.float32)

    def solve64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.linalg.solve(a.astype(np.float64), b.astype(np.float64))

    yield fn_case(
        "lax.custom_linear_solve/cholesky",
        lambda ns, m, v: _chol_solve(ns, m, v),
        [a, b],
        oracle=lambda m, v: solve64(m, v).astype(np.float32),
        tolerance=_SOLVE,
        requires=("lax_.custom_linear_solve",),
    )

    def grads(m: np.ndarray, v: np.ndarray) -> tuple:
        x = solve64(m, v)
        gb = 2 * np.linalg.solve(m.astype(np.float64).T, x)
        return (-np.outer(gb, x)).astype(np.float32), gb.astype(np.float32)

    yield fn_case(
        "lax.custom_linear_solve/grad",
        lambda ns, m, v: ns.api.grad(lambda p, q: (_chol_solve(ns, p, q) ** 2).sum(), (0, 1))(m, v),
        [a, b],
        oracle=grads,
        tolerance=_SOLVE,
        requires=("lax_.custom_linear_solve", "api.grad"),
    )

    # all_to_all under vmap with an axis name
    x = np.arange(4 * 4 * 3 * 2, dtype=np.float32).reshape(4, 4, 3, 2)
    for split, concat, tiled in [(0, 0, False), (0, 2, False), (0, 1, True), (1, 1, True)]:
        arg = x if split == 0 else x.reshape(4, 3, 8, 1)
        yield fn_case(
            f"lax.all_to_all/vmap/split={split}/concat={concat}/tiled={tiled}",
            lambda ns, v, s=split, c=concat, t=tiled: ns.api.vmap(
                lambda w: ns.lax_.all_to_all(w, "i", s, c, tiled=t), axis_name="i"
            )(v),
            [arg],
            oracle=lambda v, s=split, c=concat, t=tiled: _exchange(v, s, c, t),
            requires=("lax_.all_to_all", "api.vmap"),
        )
    yield _pmap_case(
        "untiled", lambda L, v: L.all_to_all(v, "i", 0, 1), x, lambda v: _exchange(v, 0, 1, False)
    )
    yield _pmap_case(
        "tiled",
        lambda L, v: L.all_to_all(v, "i", 1, 0, tiled=True),
        x.reshape(4, 3, 8),
        lambda v: _exchange(v, 1, 0, True),
    )
    yield _pmap_case(
        "pswapaxes", lambda L, v: L.pswapaxes(v, "i", 1), x[..., 0].reshape(4, 3, 4),
        lambda v: _exchange(v, 1, 1, False),
    )  # fmt: skip

    # reduce_xor
    xi = rng.integers(-(2**31), 2**31 - 1, size=(3, 5), dtype=np.int32)
    for axes in [(0,), (0, 1)]:
        yield fn_case(
            f"lax.reduce_xor/i32/axes={axes}",
            lambda ns, v, ax=axes: ns.lax_.reduce_xor(v, ax),
            [xi],
            oracle=lambda v, ax=axes: np.bitwise_xor.reduce(v, axis=ax),
        )
    yield fn_case(
        "lax.reduce_xor/bool",
        lambda ns, v: ns.lax_.reduce_xor(v > 0, (1,)),
        [xi],
        oracle=lambda v: np.logical_xor.reduce(v > 0, axis=1),
    )

    # approx_max_k / approx_min_k: exact on CPU (ties: lower index first)
    f = rng.standard_normal((3, 20)).astype(np.float32)
    f[1, 3] = f[1, 7]

    def top(v: np.ndarray, k: int, largest: bool) -> list:
        order = np.argsort(-v if largest else v, axis=-1, kind="stable")[:, :k].astype(np.int32)
        return [np.take_along_axis(v, order, -1), order]  # a list, as JAX's

    yield fn_case(
        "lax.approx_max_k/f32",
        lambda ns, v: ns.lax_.approx_max_k(v, 4),
        [f],
        oracle=lambda v: top(v, 4, True),
    )
    yield fn_case(
        "lax.approx_min_k/f32",
        lambda ns, v: ns.lax_.approx_min_k(v, 4, recall_target=0.9),
        [f],
        oracle=lambda v: top(v, 4, False),
    )

    # conv_general_dilated_patches
    xc = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    yield fn_case(
        "lax.conv_general_dilated_patches/VALID",
        lambda ns, v: ns.lax_.conv_general_dilated_patches(v, (2, 3), (2, 1), "VALID"),
        [xc],
        oracle=lambda v: _patches(v, (2, 3), (2, 1)),
    )

    # index_take: points of (axis 0, axis 2), indices modulo the sizes
    src = rng.standard_normal((4, 3, 5)).astype(np.float32)
    i0, i2 = np.array([0, -1, 5], np.int32), np.array([4, 2, -6], np.int32)
    yield fn_case(
        "lax.index_take/wrap",
        lambda ns, s, p, q: ns.lax_.index_take(s, (p, q), (0, 2)),
        [src, i0, i2],
        oracle=lambda s, p, q: s[p % 4, :, q % 5],
    )
    yield fn_case(
        "lax.pshuffle/vmap",
        lambda ns, v: ns.api.vmap(lambda w: ns.lax_.pshuffle(w, "i", [3, 0, 2, 1]), axis_name="i")(
            v
        ),
        [f[:, :4].T.copy()],
        oracle=lambda v: v[[3, 0, 2, 1]],
        requires=("lax_.pshuffle", "api.vmap"),
    )
