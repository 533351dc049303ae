"""Batch rules with operands mapped on different and negative axes, and with
one operand unmapped (issue 36).

``vmap``'s per-primitive cases draw two random ``in_axes`` per row; a rule
whose "both operands batched" branch only works when the axes are equal (a
``dot_general`` rule moving the wrong operand's axis, say) can pass them all.
Here every row of ``vmap`` (every differentiable primitive, the integer,
bitwise and indexing rows) plus the rows below gets fixed ``in_axes``
variants chosen to reach each branch of its batch rule:

* ``diff``: every operand mapped, on axes as different as their ranks allow
  (operand ``k`` on axis ``k``, wrapped to its rank);
* ``neg``: every operand mapped on a negative axis (operand ``k`` on
  ``-1 - k``, wrapped), so each rule sees the axis after normalisation;
* ``unmapped<k>``: operand ``k`` unmapped (``None``), the others on ``-1``;
* one-operand rows: ``neg`` only (the last axis).

``AGREE`` cases: judged by JAX (live or recorded), never by ``ref`` alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.corpus.ad_primitives import _bound, _sample
from conformance.corpus.vmap import ROWS as VMAP_ROWS
from conformance.corpus.vmap import VMAP_TOLERANCE, B, _api, _ints


def _f(shape: tuple, domain: str = "any") -> Any:
    return lambda r: _sample(r, shape, np.float32, domain)


def _i(shape: tuple, lo: int, hi: int) -> Any:
    return lambda r: _ints(r, shape, lo, hi)


_GATHER_DN = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_SCATTER_DN = dict(update_window_dims=(1,), inserted_window_dims=(0,),
                   scatter_dims_to_operand_dims=(0,))  # fmt: skip


def _gather(L: Any, x: Any, i: Any) -> Any:
    dn = L.GatherDimensionNumbers(**_GATHER_DN)
    return L.gather(x, i, dn, (1, 3), mode="clip")


def _scatter(op: str) -> Any:
    def fn(L: Any, x: Any, i: Any, u: Any) -> Any:
        dn = L.ScatterDimensionNumbers(**_SCATTER_DN)
        return getattr(L, op)(x, i, u, dn, mode="drop")

    return fn


# rows reaching batch rules the vmap rows do not: name, fn(lax or ns, *args), arg makers
EXTRA_ROWS: list[tuple[str, Any, list[Any]]] = [
    ("np:matmul", lambda ns, u, v: u @ v, [_f((3, 4)), _f((4, 5))]),
    ("np:matvec", lambda ns, u, v: u @ v, [_f((3, 4)), _f((4,))]),
    ("np:einsum_batch", lambda ns, u, v: ns.np_.einsum("bij,bjk->bik", u, v),
     [_f((2, 3, 4)), _f((2, 4, 2))]),
    ("gather", _gather, [_f((5, 3)), _i((2, 1), -1, 6)]),
    ("scatter", _scatter("scatter"), [_f((5, 3)), _i((2, 1), 0, 5), _f((2, 3))]),
    ("scatter_add", _scatter("scatter_add"), [_f((5, 3)), _i((2, 1), -1, 6), _f((2, 3))]),
    ("scatter_mul", _scatter("scatter_mul"), [_f((5, 3)), _i((2, 1), 0, 5), _f((2, 3))]),
    ("scatter_min", _scatter("scatter_min"), [_f((5, 3)), _i((2, 1), 0, 5), _f((2, 3))]),
    ("scatter_max", _scatter("scatter_max"), [_f((5, 3)), _i((2, 1), 0, 5), _f((2, 3))]),
    ("np:index_2d", lambda ns, x, i, j: x[i, j], [_f((4, 5)), _i((3,), 0, 4), _i((3,), 0, 5)]),
    ("np:take_along_axis", lambda ns, x, i: ns.np_.take_along_axis(x, i, axis=1),
     [_f((3, 4)), _i((3, 2), 0, 4)]),
    ("dynamic_slice_two_starts", lambda L, x, i, j: L.dynamic_slice(x, (i, j), (2, 2)),
     [_f((4, 5)), _i((), -1, 5), _i((), 0, 4)]),
    ("dynamic_update_slice_start",
     lambda L, x, u, i: L.dynamic_update_slice(x, u, (i, np.int32(0))),
     [_f((5, 3)), _f((2, 3)), _i((), 0, 5)]),
    ("concatenate_three", lambda L, x, y, z: L.concatenate([x, y, z], 0),
     [_f((2, 3)), _f((1, 3)), _f((3, 3))]),
    ("select_n_three", lambda L, p, x, y, z: L.select_n(p, x, y, z),
     [_i((2, 3), 0, 3), _f((2, 3)), _f((2, 3)), _f((2, 3))]),
    ("select_n_scalar_pred", lambda L, p, x, y: L.select_n(p, x, y),
     [lambda r: np.bool_(r.random() > 0.5), _f((2, 3)), _f((2, 3))]),
    ("clamp_scalar_bounds", lambda L, a, x, b: L.clamp(a, x, b),
     [lambda r: np.float32(-0.5), _f((2, 3)), lambda r: np.float32(0.5)]),
    ("nextafter", lambda L, x, y: L.nextafter(x, y), [_f((2, 3)), _f((2, 3))]),
    ("complex", lambda L, x, y: L.complex(x, y), [_f((2, 3)), _f((2, 3))]),
    ("argmin", lambda L, x: L.argmin(x, 0, np.int32), [_f((4, 3))]),
    ("cumlogsumexp", lambda L, x: L.cumlogsumexp(x, 1), [_f((3, 4))]),
    # tuple(): jax.lax.top_k returns a list, refimpl a tuple (a difference of its own)
    ("top_k", lambda L, x: tuple(L.top_k(x, 2)), [_f((3, 5))]),
    ("reduce_and", lambda L, x: L.reduce_and(L.gt(x, 0.0), (1,)), [_f((3, 4))]),
    ("reduce_or", lambda L, x: L.reduce_or(L.gt(x, 1.0), (0,)), [_f((3, 4))]),
    ("reduce_precision", lambda L, x: L.reduce_precision(x, 5, 10), [_f((3, 4))]),
    ("iota_2d", lambda L, x: x + L.broadcasted_iota(np.float32, (3, 4), 1), [_f((3, 4))]),
    ("np:triangular_solve",
     lambda ns, a, b: ns.lax_.linalg.triangular_solve(
         ns.np_.tril(a) + 3.0 * ns.np_.eye(3, dtype=np.float32), b, left_side=True, lower=True),
     [_f((3, 3)), _f((3, 2))]),
    ("np:fft", lambda ns, x: ns.np_.abs(ns.np_.fft.fft(x)), [_f((3, 4))]),
    ("np:sort_two_operands", lambda ns, k, v: ns.lax_.sort((k, v), dimension=0, num_keys=1),
     [_f((4, 3)), _f((4, 3))]),
    ("np:reduce_window_max",
     lambda ns, x: ns.lax_.reduce_window(x, -np.inf, ns.lax_.max, (2, 2), (1, 1), "VALID"),
     [_f((4, 5))]),
    ("np:logsumexp", lambda ns, x: _logsumexp(ns, x), [_f((3, 4))]),
    ("np:where", lambda ns, c, x, y: ns.np_.where(c > 0, x, y), [_f((3, 4)), _f((3, 4)), _f((4,))]),
    ("np:outer_broadcast", lambda ns, x, y: x[:, None] * y[None, :], [_f((3,)), _f((4,))]),
    ("np:stack", lambda ns, x, y: ns.np_.stack([x, y], axis=-1), [_f((2, 3)), _f((2, 3))]),
    ("np:expand_squeeze", lambda ns, x: ns.np_.squeeze(ns.np_.expand_dims(x, -1), 0),
     [_f((1, 3))]),
]  # fmt: skip


def _logsumexp(ns: Any, x: Any) -> Any:
    special = getattr(ns.api, "scipy", None)
    return special.special.logsumexp(x, axis=1)


ROWS = list(VMAP_ROWS) + EXTRA_ROWS


def _wrap(axis: int, rank: int) -> int:
    """``axis`` brought into ``[-(rank + 1), rank]`` (the batched value's rank is rank + 1)."""
    if axis >= 0:
        return axis % (rank + 1)
    return -1 - ((-1 - axis) % (rank + 1))


def variants(ranks: list[int]) -> list[tuple[str, tuple]]:
    """The fixed in_axes variants for operands of ``ranks``."""
    if len(ranks) == 1:
        return [("neg", (-1,))]
    out = [
        ("diff", tuple(_wrap(k, r) for k, r in enumerate(ranks))),
        ("neg", tuple(_wrap(-1 - k, r) for k, r in enumerate(ranks))),
    ]
    for k in range(len(ranks)):
        out.append((f"unmapped{k}", tuple(None if j == k else -1 for j in range(len(ranks)))))
    return out


def _stacked(rng: np.random.Generator, makers: list[Any], in_axes: tuple) -> list[Any]:
    examples = [[make(rng) for make in makers] for _ in range(B)]
    return [
        examples[0][k] if a is None else np.stack([np.asarray(e[k]) for e in examples], axis=a)
        for k, a in enumerate(in_axes)
    ]


def _case(name: str, fn: Any, makers: list[Any], label: str, in_axes: tuple) -> Case:
    rng = rng_for(f"vmap.axes_rules/{name}/{label}")
    args = _stacked(rng, makers, in_axes)

    def run(ns: Any, *values: Any, name: str = name, fn: Any = fn, in_axes: tuple = in_axes):
        return _api(ns).vmap(_bound(ns, name, fn), in_axes=in_axes)(*values)

    short = name.removeprefix("np:")
    return fn_case(
        f"vmap.axes_rules/{short}/{label}",
        run,
        args,
        expect=AGREE,
        tolerance=VMAP_TOLERANCE,
        tags=("quick",) if (short, label) == ("dot_general", "diff") else (),
        notes=f"in_axes={in_axes}",
    )


def _matmul_1_0(ns: Any, u: Any, v: Any) -> Any:
    return _api(ns).vmap(lambda a, b: a @ b, in_axes=(1, 0))(u, v)


def _nested_different_axes(ns: Any, u: Any, v: Any) -> Any:
    api = _api(ns)
    inner = api.vmap(lambda a, b: ns.lax_.dot_general(a, b, (((1,), (0,)), ((), ()))),
                     in_axes=(-1, 0))  # fmt: skip
    return api.vmap(inner, in_axes=(0, -1))(u, v)


def cases() -> Iterator[Case]:
    for name, fn, makers in ROWS:
        ranks = [np.ndim(make(rng_for(f"rank/{name}"))) for make in makers]
        for label, in_axes in variants(ranks):
            yield _case(name, fn, makers, label, in_axes)
    rng = rng_for("vmap.axes_rules/explicit")
    u = rng.normal(size=(3, B, 4)).astype(np.float32)
    v = rng.normal(size=(B, 4, 5)).astype(np.float32)
    yield fn_case("vmap.axes_rules/matmul_in_axes_1_0", _matmul_1_0, [u, v], expect=AGREE,
                  tolerance=VMAP_TOLERANCE, tags=("quick",))  # fmt: skip
    a = rng.normal(size=(2, 3, 4, B)).astype(np.float32)
    b = rng.normal(size=(B, 4, 5, 2)).astype(np.float32)
    yield fn_case(
        "vmap.axes_rules/nested_dot_general_axes_-1_0_then_0_-1",
        _nested_different_axes,
        [a, b],
        expect=AGREE,
        tolerance=VMAP_TOLERANCE,
    )
