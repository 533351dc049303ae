"""lax structural primitives: broadcast_in_dim, reshape, squeeze, expand_dims,
transpose, rev, slice, dynamic_slice, dynamic_update_slice, pad, concatenate,
iota, sort -- NumPy oracles, several dtypes, edge shapes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import Case, fn_case, rng_for, sample, special_floats
from conformance.corpus._tables import BF16, BOOL, F16, F32, I8, I32, U8, short
from conformance.observe import Raises

DTYPES = (F32, I32, BOOL, BF16)


def _cases_over_dtypes(
    label: str,
    program: Callable[..., Any],
    shapes: list[tuple[int, ...]],
    oracle: Callable[..., Any],
    *,
    dtypes: tuple[np.dtype, ...] = DTYPES,
    extra_args: Callable[[np.random.Generator], list[Any]] | None = None,
    source: str = "",
    tags: tuple[str, ...] = (),
) -> Iterator[Case]:
    """One case per dtype (first shape set), then the other shapes on the first dtype."""
    plans = [(d, shapes[0]) for d in dtypes] + [(dtypes[0], s) for s in shapes[1:]]
    op, _, variant = label.partition("-")  # "dynamic_slice-(1,2)": the op, then its variant
    for index, (dtype, shape) in enumerate(plans):
        parts = [f"lax.{op}"] + ([variant] if variant else []) + [short(dtype), str(shape)]
        name = "/".join(parts).replace(" ", "")
        rng = rng_for(name)
        args = [sample(rng, shape, dtype)] + (extra_args(rng) if extra_args else [])
        yield fn_case(
            name,
            program,
            args,
            oracle=oracle,
            tags=["structural", "lax", *tags] + (["quick"] if index == 0 else []),
            source=source,
        )


def pad_oracle(x: np.ndarray, value: Any, config: list[tuple[int, int, int]]) -> np.ndarray:
    """lax.pad: interior padding between elements, then (possibly negative) edges."""
    out = x
    for axis, (lo, hi, interior) in enumerate(config):
        if interior and out.shape[axis] > 1:
            n = out.shape[axis]
            shape = list(out.shape)
            shape[axis] = n + (n - 1) * interior
            spread = np.full(shape, value, x.dtype)
            index = [slice(None)] * out.ndim
            index[axis] = slice(None, None, interior + 1)
            spread[tuple(index)] = out
            out = spread
        out = _edge_pad(out, axis, lo, value, front=True)
        out = _edge_pad(out, axis, hi, value, front=False)
    return out


def _edge_pad(x: np.ndarray, axis: int, amount: int, value: Any, front: bool) -> np.ndarray:
    if amount >= 0:
        shape = list(x.shape)
        shape[axis] = amount
        block = np.full(shape, value, x.dtype)
        return np.concatenate([block, x] if front else [x, block], axis=axis)
    index = [slice(None)] * x.ndim
    index[axis] = slice(-amount, None) if front else slice(None, x.shape[axis] + amount)
    return x[tuple(index)]


def _clamped_starts(shape, starts, sizes) -> list[int]:
    """Negative starts count from the end (as in NumPy); then clamp to fit the slice."""
    starts = [s + d if s < 0 else s for s, d in zip(starts, shape, strict=True)]
    return [int(min(max(s, 0), d - z)) for s, d, z in zip(starts, shape, sizes, strict=True)]


def dynamic_slice_oracle(x: np.ndarray, starts: list[Any], sizes: tuple[int, ...]) -> np.ndarray:
    begin = _clamped_starts(x.shape, [int(s) for s in starts], sizes)
    return x[tuple(slice(b, b + z) for b, z in zip(begin, sizes, strict=True))]


def dynamic_update_oracle(x: np.ndarray, update: np.ndarray, starts: list[Any]) -> np.ndarray:
    begin = _clamped_starts(x.shape, [int(s) for s in starts], update.shape)
    out = x.copy()
    out[tuple(slice(b, b + z) for b, z in zip(begin, update.shape, strict=True))] = update
    return out


def _basic_cases() -> Iterator[Case]:
    yield from _cases_over_dtypes(
        "broadcast_in_dim",
        lambda ns, x: ns.lax_.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
        [(3, 4), (3, 1), (1, 4)],
        lambda x: np.broadcast_to(x, (2, 3, 4)),
        source="lambda ns, x: ns.lax_.broadcast_in_dim(x, (2, 3, 4), (1, 2))",
    )
    yield from _cases_over_dtypes(
        "broadcast_in_dim-scalar",
        lambda ns, x: ns.lax_.broadcast_in_dim(x, (2, 3), ()),
        [()],
        lambda x: np.broadcast_to(x, (2, 3)),
    )
    yield from _cases_over_dtypes(
        "broadcast_in_dim-middle",
        lambda ns, x: ns.lax_.broadcast_in_dim(x, (2, 3, 4), (1,)),
        [(3,)],
        lambda x: np.broadcast_to(x[None, :, None], (2, 3, 4)),
        dtypes=(F32,),
    )
    for new in [(4, 3), (12,), (2, 2, 3), (1, 12, 1)]:
        yield from _cases_over_dtypes(
            f"reshape-to-{new}".replace(" ", ""),
            lambda ns, x, _n=new: ns.lax_.reshape(x, _n),
            [(3, 4)],
            lambda x, _n=new: x.reshape(_n),
            dtypes=(F32, BOOL) if new == (4, 3) else (F32,),
        )
    yield from _cases_over_dtypes(
        "reshape-zero-size",
        lambda ns, x: ns.lax_.reshape(x, (3, 0, 2)),
        [(0, 6)],
        lambda x: x.reshape(3, 0, 2),
        dtypes=(F32,),
    )
    yield from _cases_over_dtypes(
        "reshape-with-dimensions",
        lambda ns, x: ns.lax_.reshape(x, (4, 3), dimensions=(1, 0)),
        [(3, 4)],
        lambda x: x.T.reshape(4, 3),
        dtypes=(F32,),
    )
    yield from _cases_over_dtypes(
        "squeeze",
        lambda ns, x: ns.lax_.squeeze(x, (0, 2)),
        [(1, 3, 1, 4)],
        lambda x: x.reshape(3, 4),
    )
    yield from _cases_over_dtypes(
        "expand_dims",
        lambda ns, x: ns.lax_.expand_dims(x, (0, 3)),
        [(3, 4), (0, 2)],
        lambda x: np.expand_dims(x, (0, 3)),
        dtypes=(F32, I8),
    )
    yield from _cases_over_dtypes(
        "expand_dims-rank0",
        lambda ns, x: ns.lax_.expand_dims(x, (0, -1)),
        [()],
        lambda x: x.reshape(1, 1),
        dtypes=(F32,),
    )
    for perm in [(1, 0, 2), (2, 0, 1), (0, 1, 2)]:
        yield from _cases_over_dtypes(
            f"transpose-{perm}".replace(" ", ""),
            lambda ns, x, _p=perm: ns.lax_.transpose(x, _p),
            [(2, 3, 4), (0, 3, 2)],
            lambda x, _p=perm: np.transpose(x, _p),
            dtypes=(F32, BOOL, U8) if perm == (1, 0, 2) else (F32,),
        )
    for dims in [(0,), (1,), (0, 1), ()]:
        yield from _cases_over_dtypes(
            f"rev-{dims}".replace(" ", ""),
            lambda ns, x, _d=dims: ns.lax_.rev(x, _d),
            [(3, 4)],
            lambda x, _d=dims: np.flip(x, _d) if _d else x,
            dtypes=(F32, I32) if dims == (0,) else (F32,),
        )


def _slice_cases() -> Iterator[Case]:
    specs = [
        ((1, 0), (3, 4), None),
        ((0, 1), (5, 4), (2, 2)),
        ((2, 2), (2, 2), None),
        ((0, 0), (5, 4), (3, 5)),
    ]
    for starts, limits, strides in specs:
        label = f"slice-{starts}-{limits}-{strides}".replace(" ", "")
        index = tuple(
            slice(a, b, c) for a, b, c in zip(starts, limits, strides or (1, 1), strict=True)
        )
        yield from _cases_over_dtypes(
            label,
            lambda ns, x, _a=starts, _b=limits, _s=strides: ns.lax_.slice(x, _a, _b, _s),
            [(5, 4)],
            lambda x, _i=index: x[_i],
            dtypes=(F32, BOOL) if strides is None and starts == (1, 0) else (F32,),
        )
    # dynamic_slice: starts in range, out of range (clamped), negative (clamped), traced
    for starts in [(1, 2), (4, 3), (-2, -1), (0, 0)]:
        yield from _cases_over_dtypes(
            f"dynamic_slice-{starts}".replace(" ", ""),
            lambda ns, x, _s=starts: ns.lax_.dynamic_slice(x, _s, (2, 3)),
            [(5, 4)],
            lambda x, _s=starts: dynamic_slice_oracle(x, list(_s), (2, 3)),
            dtypes=(F32, I32) if starts == (1, 2) else (F32,),
        )
    for starts in [(1, 2), (7, -3)]:
        yield fn_case(
            f"lax.dynamic_slice/traced-starts/{starts}".replace(" ", ""),
            lambda ns, x, i, j: ns.lax_.dynamic_slice(x, (i, j), (2, 3)),
            [sample(rng_for(str(starts)), (5, 4), F32), np.int32(starts[0]), np.int32(starts[1])],
            oracle=lambda x, i, j: dynamic_slice_oracle(x, [i, j], (2, 3)),
            tags=["structural", "lax"],
        )
    for starts in [(1, 1), (4, 4), (-1, 0)]:
        name = f"lax.dynamic_update_slice/f32/{starts}".replace(" ", "")
        rng = rng_for(name)
        yield fn_case(
            name,
            lambda ns, x, u, _s=starts: ns.lax_.dynamic_update_slice(x, u, _s),
            [sample(rng, (5, 4), F32), sample(rng, (2, 3), F32)],
            oracle=lambda x, u, _s=starts: dynamic_update_oracle(x, u, list(_s)),
            tags=["structural", "lax"] + (["quick"] if starts == (1, 1) else []),
        )
    name = "lax.dynamic_update_slice/i32/traced-starts"
    rng = rng_for(name)
    yield fn_case(
        name,
        lambda ns, x, u, i: ns.lax_.dynamic_update_slice(x, u, (i, 0)),
        [sample(rng, (5, 4), I32), sample(rng, (2, 4), I32), np.int32(3)],
        oracle=lambda x, u, i: dynamic_update_oracle(x, u, [i, 0]),
        tags=["structural", "lax"],
    )


def _pad_concat_iota_cases() -> Iterator[Case]:
    configs = [
        [(1, 2, 0), (0, 1, 0)],
        [(0, 0, 1), (2, 0, 2)],
        [(-1, 1, 0), (1, -2, 1)],
        [(0, 0, 0), (0, 0, 0)],
        [(-2, -1, 1), (0, 0, 3)],
    ]
    for config in configs:
        label = "pad-" + "_".join(f"{lo}.{hi}.{i}" for lo, hi, i in config)
        yield from _pad_cases(label, config)
    for dim in (0, 1):
        for dtype in (F32, I32, BOOL):
            name = f"lax.concatenate/{short(dtype)}/dim{dim}"
            rng = rng_for(name)
            shapes = [(2, 3), (1, 3), (4, 3)] if dim == 0 else [(2, 3), (2, 1), (2, 0)]
            yield fn_case(
                name,
                lambda ns, a, b, c, _d=dim: ns.lax_.concatenate([a, b, c], _d),
                [sample(rng, s, dtype) for s in shapes],
                oracle=lambda a, b, c, _d=dim: np.concatenate([a, b, c], _d),
                tags=["structural", "lax"] + (["quick"] if dtype == F32 else []),
            )
    for dtype in (I32, F32, U8, BF16):
        yield fn_case(
            f"lax.iota/{short(dtype)}",
            lambda ns, _d=dtype: ns.lax_.iota(_d, 6),
            [],
            oracle=lambda _d=dtype: np.arange(6).astype(_d),
            tags=["structural", "lax"] + (["quick"] if dtype == I32 else []),
        )
    for dim in (0, 1):
        yield fn_case(
            f"lax.broadcasted_iota/i32/dim{dim}",
            lambda ns, _d=dim: ns.lax_.broadcasted_iota(np.int32, (3, 4), _d),
            [],
            oracle=lambda _d=dim: np.indices((3, 4))[_d].astype(np.int32),
            tags=["structural", "lax"],
        )


def _pad_cases(label: str, config: list[tuple[int, int, int]]) -> Iterator[Case]:
    for dtype in (F32, I32) if config[0] == (1, 2, 0) else (F32,):
        name = f"lax.{label.replace('-', '/', 1)}/{short(dtype)}"
        x = sample(rng_for(name), (3, 4), dtype)
        value = np.array(-7, dtype)
        yield fn_case(
            name,
            lambda ns, x, v, _c=config: ns.lax_.pad(x, v, _c),
            [x, value],
            oracle=lambda x, v, _c=config: pad_oracle(x, v, _c),
            tags=["structural", "lax"],
        )


def _sort_cases() -> Iterator[Case]:
    for dtype in (F32, I32, U8, BF16, F16):
        for dim in (-1, 0):
            name = f"lax.sort/{short(dtype)}/dim{dim}"
            x = sample(rng_for(name), (4, 5), dtype)
            yield fn_case(
                name,
                lambda ns, x, _d=dim: ns.lax_.sort(x, dimension=_d),
                [x],
                oracle=lambda x, _d=dim: np.sort(x, axis=_d),
                tags=["structural", "lax", "sort"] + (["quick"] if dtype == F32 else []),
            )
    name = "lax.sort/f32/special-values"
    yield fn_case(
        name,
        lambda ns, x: ns.lax_.sort(x),
        [special_floats(F32)],
        oracle=lambda x: np.sort(x),
        tags=["structural", "lax", "sort", "edge"],
        notes="NaNs sort last, as in NumPy",
    )
    name = "lax.sort/multi-operand-num_keys1"
    rng = rng_for(name)
    keys = rng.integers(0, 4, (10,)).astype(np.int32)
    values = sample(rng, (10,), F32)

    def sort_pair(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(keys, kind="stable")
        return keys[order], values[order]

    yield fn_case(
        name,
        lambda ns, k, v: tuple(ns.lax_.sort((k, v), num_keys=1)),
        [keys, values],
        oracle=sort_pair,
        tags=["structural", "lax", "sort"],
    )


def _error_cases() -> Iterator[Case]:
    x = np.ones((3, 4), np.float32)
    table = [
        ("squeeze-non-unit", lambda ns, x: ns.lax_.squeeze(x, (0,)), ValueError),
        ("transpose-bad-perm", lambda ns, x: ns.lax_.transpose(x, (0, 0)), TypeError),
        ("slice-out-of-bounds", lambda ns, x: ns.lax_.slice(x, (0, 0), (4, 4)), TypeError),
        ("dynamic_slice-too-big",
         lambda ns, x: ns.lax_.dynamic_slice(x, (0, 0), (4, 4)), TypeError),
        ("concatenate-mismatch", lambda ns, x: ns.lax_.concatenate([x, x.T], 0), TypeError),
        ("pad-wrong-rank", lambda ns, x: ns.lax_.pad(x, 0.0, [(1, 1, 0)]), ValueError),
        ("iota-negative", lambda ns, x: ns.lax_.iota(np.int32, -1), TypeError),
    ]  # fmt: skip
    for label, program, exc in table:
        yield fn_case(
            f"lax.errors/{label}",
            program,
            [x],
            expect=Raises(exc),
            mode="eager",
            tags=["structural", "lax", "errors"],
        )


def cases() -> Iterator[Case]:
    yield from _basic_cases()
    yield from _slice_cases()
    yield from _pad_concat_iota_cases()
    yield from _sort_cases()
    yield from _error_cases()


__all__ = ["cases", "pad_oracle", "dynamic_slice_oracle", "dynamic_update_oracle"]
