"""pmap and collectives (SPEC section 3 "pmap and collectives") over 4
devices, against NumPy oracles: every collective with and without
``axis_index_groups``, ``in_axes=None``, ``out_axes=None``, and
``pmap(grad(psum(x**2)))`` = ``8 x``.

An implementation with fewer than 4 devices skips these cases (JAX needs
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` set before import;
refimpl's reference backend is given 4 virtual devices for the case).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, Oracle, script_case
from conformance.compare import Tolerance
from conformance.namespace import Unsupported

N = 4
TOL = Tolerance(ulps={"float32": 8}, atol_eps=8)
_R = np.random.default_rng(1818)
X = _R.standard_normal((N, 2, 3)).astype(np.float32)
SPREAD = [[0, 2], [1, 3]]
X_NAN = np.array(
    [[1, np.nan, 3, np.nan], [4, 2, np.nan, np.nan], [np.nan, 5, 0, np.nan], [0, -1, 5, np.nan]],
    np.float32,
)


def _skip_nan(reduce: Any, op: str, x: np.ndarray) -> np.ndarray:
    """``reduce`` over axis 0 ignoring NaN; the identity where all are NaN."""
    identity = -np.inf if op == "pmax" else np.inf
    return reduce(np.where(np.isnan(x), identity, x), axis=0)


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


@contextlib.contextmanager
def _four_devices(api: Any) -> Iterator[None]:
    if not hasattr(api, "pmap"):
        raise Unsupported("no pmap")
    config = getattr(api, "config", None)
    if api.__name__ == "refimpl":
        old = config.ref_num_devices
        config.update("ref_num_devices", max(old, N))
        try:
            yield
        finally:
            config.update("ref_num_devices", old)
        return
    if len(api.devices()) < N:
        raise Unsupported(f"{api.__name__} has {len(api.devices())} devices, the cases need {N}")
    yield


def _pmap_case(name: str, build: Any, args: tuple, oracle: Any) -> Case:
    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            out = build(api, ns.lax_)(*args)
            return [np.asarray(leaf) for leaf in api.tree_util.tree_leaves(out)]

    return script_case(
        f"pmap/{name}", script, expect=Oracle(lambda: [np.asarray(o) for o in oracle()]),
        tolerance=TOL, tags=("pmap",),
    )  # fmt: skip


def _groups_of(groups: list[list[int]]) -> list[list[int]]:
    return [next(g for g in groups if m in g) for m in range(N)]


def cases() -> Iterator[Case]:
    yield _pmap_case(
        "psum", lambda api, L: api.pmap(lambda x: L.psum(x, "i"), "i"), (X,),
        lambda: [np.broadcast_to(X.sum(0), X.shape)],
    )  # fmt: skip
    yield _pmap_case(
        "psum_groups",
        lambda api, L: api.pmap(lambda x: L.psum(x, "i", axis_index_groups=SPREAD), "i"),
        (X,),
        lambda: [np.stack([X[g].sum(0) for g in _groups_of(SPREAD)])],
    )
    # a NaN is skipped by the all-reduce over devices (XLA CPU, JAX 0.10.2): the
    # max/min of the other members, -inf/+inf where every member holds NaN
    for op, skip_nan in (("pmax", np.nanmax), ("pmin", np.nanmin)):
        yield _pmap_case(
            f"{op}_nan",
            lambda api, L, op=op: api.pmap(lambda x: getattr(L, op)(x, "i"), "i"),
            (X_NAN,),
            lambda skip_nan=skip_nan, op=op: [
                np.broadcast_to(_skip_nan(skip_nan, op, X_NAN), X_NAN.shape)
            ],
        )
    yield _pmap_case(
        "pmax_groups",
        lambda api, L: api.pmap(lambda x: L.pmax(x, "i", axis_index_groups=SPREAD), "i"),
        (X,),
        lambda: [np.stack([X[g].max(0) for g in _groups_of(SPREAD)])],
    )
    yield _pmap_case(
        "pmean", lambda api, L: api.pmap(lambda x: L.pmean(x, "i"), "i"), (X,),
        lambda: [np.broadcast_to(X.mean(0), X.shape)],
    )  # fmt: skip
    yield _pmap_case(
        "all_gather_axis1",
        lambda api, L: api.pmap(lambda x: L.all_gather(x, "i", axis=1), "i"),
        (X,),
        lambda: [np.broadcast_to(np.moveaxis(X, 0, 1)[None], (N, 2, N, 3))],
    )
    yield _pmap_case(
        "ppermute",
        lambda api, L: api.pmap(lambda x: L.ppermute(x, "i", [(0, 1), (1, 2), (2, 3)]), "i"),
        (X,),
        lambda: [np.concatenate([np.zeros_like(X[:1]), X[:3]])],
    )
    yield _pmap_case(
        "psum_scatter_tiled",
        lambda api, L: api.pmap(lambda x: L.psum_scatter(x, "i", tiled=True), "i"),
        (X.reshape(N, 6)[:, :4].copy(),),
        lambda: [X.reshape(N, 6)[:, :4].sum(0).reshape(N, 1)],
    )
    yield _pmap_case(
        "axis_index_in_axes_none",
        lambda api, L: api.pmap(lambda x, w: x * w + L.axis_index("i"), "i", in_axes=(0, None)),
        (X, np.float32(2.0)),
        lambda: [X * 2 + np.arange(N, dtype=np.float32)[:, None, None]],
    )
    yield _pmap_case(
        "out_axes_none",
        lambda api, L: api.pmap(lambda x: L.psum(x, "i"), "i", out_axes=None),
        (X,),
        lambda: [X.sum(0)],
    )
    yield _pmap_case(
        "grad_psum_square_is_8x",
        lambda api, L: api.pmap(api.grad(lambda x: L.psum(x**2, "i")), "i"),
        (np.arange(N, dtype=np.float32),),
        lambda: [8 * np.arange(N, dtype=np.float32)],
    )
    # trees and several collectives in one body: on pjrt, small same-dtype
    # operands are all-reduced as one buffer and independent all-reduces merged
    INTS = np.array([[3, -1], [7, 2], [0, 5], [-4, 4]], np.int32)
    yield _pmap_case(
        "psum_mixed_tree",
        lambda api, L: api.pmap(lambda x, i: L.psum({"x": x, "x2": x * 2, "i": i}, "i"), "i"),
        (X, INTS),
        lambda: [
            np.broadcast_to(INTS.sum(0).astype(np.int32), INTS.shape),
            np.broadcast_to(X.sum(0), X.shape),
            np.broadcast_to((2 * X).sum(0), X.shape),
        ],
    )
    yield _pmap_case(
        "pmean_int_is_float",
        lambda api, L: api.pmap(lambda i: L.pmean(i, "i"), "i"),
        (INTS,),
        lambda: [np.broadcast_to(INTS.sum(0) / np.float32(N), INTS.shape).astype(np.float32)],
    )
    yield _pmap_case(
        "pmean_grads_and_loss",
        lambda api, L: api.pmap(
            lambda w, x: (
                L.pmean(api.grad(lambda w: (api.numpy.sin(w * x) ** 2).sum())(w), "i"),
                L.pmean((w * x).sum(), "i"),
                L.pmax(x, "i"),
            ),
            "i",
            in_axes=(None, 0),
        ),
        (np.float32(0.7), X),
        lambda: [
            np.full(N, np.mean([(2 * np.sin(0.7 * x) * np.cos(0.7 * x) * x).sum() for x in X]),
                    np.float32),
            np.full(N, np.mean([(0.7 * x).sum() for x in X]), np.float32),
            np.broadcast_to(X.max(0), X.shape),
        ],
    )  # fmt: skip
