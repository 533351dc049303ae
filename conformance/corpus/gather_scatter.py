"""``lax.gather`` / ``lax.scatter*`` with XLA dimension numbers (docs/semantics.md
"General gather and scatter"): point gathers, windows, batching dims, every
mode with out-of-bounds starts, every scatter kind, and their grad and vmap.
Values: ``AGREE`` (ref judged by live or recorded JAX); errors: ``Raises``
with JAX's message."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.namespace import Unsupported
from conformance.observe import Raises

TAGS = ("lax", "gather_scatter")


def _api(ns: Any) -> Any:
    """The implementation's top-level module (grad and vmap)."""
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap"):
        raise Unsupported(f"{ns.name} has no vmap")
    return module


def _gdn(ns: Any, dn: tuple) -> Any:
    return ns.lax_.GatherDimensionNumbers(*dn)


def _sdn(ns: Any, dn: tuple) -> Any:
    return ns.lax_.ScatterDimensionNumbers(*dn)


# name, operand shape, dimension numbers, slice sizes, indices (index vector last)
GATHERS: list[tuple[str, tuple, tuple, tuple, np.ndarray]] = [
    ("take-rows", (5, 3), ((1,), (0,), (0,)), (1, 3), np.array([[4], [0], [7], [-1]])),
    ("points-2d", (4, 5), ((), (0, 1), (0, 1)), (1, 1), np.array([[0, 0], [3, 4], [5, 1]])),
    ("windows", (6, 7), ((1, 2), (), (1, 0)), (2, 3), np.array([[[1, 2]], [[5, 5]], [[-1, 0]]])),
    (
        "batching",
        (3, 4, 2),
        ((2,), (1,), (1,), (0,), (0,)),
        (1, 1, 2),
        np.array([[[1], [3]], [[0], [9]], [[2], [2]]]),
    ),  # fmt: skip
    ("empty-vector", (3, 2), ((0, 2), (), ()), (2, 2), np.zeros((4, 0), np.int32)),
]


# kind, operand shape, dimension numbers, indices, updates shape
SCATTERS: list[tuple[str, tuple, tuple, np.ndarray, tuple]] = [
    ("rows", (5, 3), ((1,), (0,), (0,)), np.array([[4], [0], [7], [4]]), (4, 3)),
    ("points", (4, 5), ((), (0, 1), (0, 1)), np.array([[0, 0], [3, 4], [5, 1]]), (3,)),
    ("windows", (6, 7), ((1, 2), (), (1, 0)), np.array([[1, 2], [5, 5], [-1, 0]]), (3, 2, 3)),
    (
        "batching",
        (3, 4),
        ((), (1,), (1,), (0,), (0,)),
        np.array([[[1], [3]], [[0], [9]], [[2], [2]]]),
        (3, 2),
    ),  # fmt: skip
]
KINDS = ("scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max")


def _gather_cases() -> Iterator[Case]:
    for label, shape, dn, sizes, indices in GATHERS:
        for mode in ("clip", "fill", "promise_in_bounds"):
            name = f"lax.gather/{label}/{mode}"
            x = rng_for(name).normal(size=shape).astype(np.float32)

            def program(ns, x, i, _dn=dn, _sizes=sizes, _mode=mode):
                return ns.lax_.gather(x, i, _gdn(ns, _dn), _sizes, mode=_mode)

            tags = [*TAGS, *(["quick"] if mode == "fill" else [])]
            yield fn_case(name, program, [x, indices.astype(np.int32)], expect=AGREE, tags=tags)
    x = np.arange(10, dtype=np.int8).reshape(5, 2)
    for fill in (None, -3):
        name = f"lax.gather/fill-value/int8/{fill}"

        def program(ns, x, i, _fill=fill):
            dn = _gdn(ns, ((1,), (0,), (0,)))
            return ns.lax_.gather(x, i, dn, (1, 2), mode="fill", fill_value=_fill)

        yield fn_case(name, program, [x, np.array([[1], [5], [-2]], np.int32)], tags=TAGS)


def _scatter_cases() -> Iterator[Case]:
    for label, shape, dn, indices, u_shape in SCATTERS:
        for kind in KINDS:
            for mode in ("clip", "drop"):
                name = f"lax.{kind}/{label}/{mode}"
                rng = rng_for(name)
                # integers: every combine is exact, whatever the order of duplicates
                x = rng.integers(-4, 5, size=shape).astype(np.int32)
                u = rng.integers(-4, 5, size=u_shape).astype(np.int32)

                def program(ns, x, i, u, _dn=dn, _kind=kind, _mode=mode):
                    return getattr(ns.lax_, _kind)(x, i, u, _sdn(ns, _dn), mode=_mode)

                tags = [*TAGS, *(["quick"] if label == "windows" else [])]
                args = [x, indices.astype(np.int32), u]
                yield fn_case(name, program, args, expect=AGREE, tags=tags)


def _transform_cases() -> Iterator[Case]:
    x = rng_for("lax.gather/grad").normal(size=(4, 3)).astype(np.float32)
    i = np.array([[0, 1], [3, 2], [0, 1], [9, 0]], np.int32)

    def grad_gather(ns, x, i):
        dn = _gdn(ns, ((), (0, 1), (0, 1)))
        return _api(ns).grad(lambda x: (ns.lax_.gather(x, i, dn, (1, 1), mode="fill") ** 2).sum())(
            x
        )

    yield fn_case("lax.gather/grad/fill", grad_gather, [x, i], expect=AGREE, tags=[*TAGS, "ad"])

    u = rng_for("lax.scatter/grad").normal(size=(4,)).astype(np.float32)

    def grad_scatter(ns, x, i, u):
        dn = _sdn(ns, ((), (0, 1), (0, 1)))

        def f(x, u):
            return (ns.lax_.scatter(x, i, u, dn) * x).sum()  # repeated index: one winner

        return _api(ns).grad(f, argnums=(0, 1))(x, u)

    yield fn_case("lax.scatter/grad/repeated", grad_scatter, [x, i, u], tags=[*TAGS, "ad"])

    xs = rng_for("lax.gather/vmap").normal(size=(3, 4, 3)).astype(np.float32)
    idx = np.array([[[1], [2]], [[0], [5]], [[3], [3]]], np.int32)

    def vmap_gather(ns, xs, idx):
        dn = _gdn(ns, ((1,), (0,), (0,)))
        return _api(ns).vmap(lambda x, i: ns.lax_.gather(x, i, dn, (1, 3), mode="clip"))(xs, idx)

    yield fn_case("lax.gather/vmap/both", vmap_gather, [xs, idx], tags=[*TAGS, "vmap"])

    def vmap_scatter_add(ns, xs, idx):
        dn = _sdn(ns, ((1,), (0,), (0,)))
        ups = ns.np_.ones((3, 2, 3), np.float32)
        return _api(ns).vmap(lambda x, i, u: ns.lax_.scatter_add(x, i, u, dn))(xs, idx, ups)

    yield fn_case("lax.scatter_add/vmap/both", vmap_scatter_add, [xs, idx], tags=[*TAGS, "vmap"])


def _error_cases() -> Iterator[Case]:
    x = np.zeros((3, 4), np.float32)
    i = np.zeros((2, 1), np.int32)

    def unsorted_offsets(ns, x, i):
        return ns.lax_.gather(x, i, _gdn(ns, ((1, 0), (), (0,))), (1, 4))

    yield fn_case(
        "lax.gather/error/offset_dims-unsorted",
        unsorted_offsets,
        [x, i],
        expect=Raises(TypeError, r"offset_dims in gather op must be sorted"),
        tags=TAGS,
    )

    def collapse_wide(ns, x, i):
        return ns.lax_.gather(x, i, _gdn(ns, ((1,), (0,), (0,))), (2, 4))

    yield fn_case(
        "lax.gather/error/collapse-size-2",
        collapse_wide,
        [x, i],
        expect=Raises(TypeError, r"can only collapse slice dims with bound 1"),
        tags=TAGS,
    )

    def updates_rank(ns, x, i):
        u = ns.np_.zeros((2,), np.float32)
        return ns.lax_.scatter_add(x, i, u, _sdn(ns, ((1,), (0,), (0,))))

    yield fn_case(
        "lax.scatter_add/error/updates-rank",
        updates_rank,
        [x, i],
        expect=Raises(TypeError, r"Updates tensor must be of rank 2; got 1"),
        tags=TAGS,
    )


def cases() -> Iterator[Case]:
    yield from _gather_cases()
    yield from _scatter_cases()
    yield from _transform_cases()
    yield from _error_cases()
