"""dot_general, conv_general_dilated, and np_ dot / matmul / einsum.

The conv oracle is a direct loop over output positions written from the
definition (dilate the input, pad, dilate the kernel, correlate per feature
group): slow, obvious, independent of both implementations.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, SMALL, Case, fn_case, rng_for, sample
from conformance.compare import Tolerance
from conformance.corpus._tables import BF16, F16, F32, I8, I32, U8, canonical, short
from conformance.observe import Raises


def product_tolerance(lhs: np.ndarray, rhs: np.ndarray, terms: int) -> Tolerance:
    """Slack for sums of ``terms`` products of values bounded as the inputs are."""
    if lhs.dtype.kind in "biu":
        return Tolerance()
    bound = float(np.max(np.abs(lhs.astype(np.float64)), initial=1.0)) * float(
        np.max(np.abs(rhs.astype(np.float64)), initial=1.0)
    )
    return Tolerance(ulps=8 * max(terms, 1), atol_eps=4.0 * max(terms, 1) * bound)


def dot_general_oracle(lhs, rhs, dimension_numbers, out_dtype=None) -> np.ndarray:
    """lax.dot_general from its definition, via einsum in wide precision."""
    (lc, rc), (lb, rb) = dimension_numbers
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lhs_sub = [next(letters) for _ in range(lhs.ndim)]
    rhs_sub = [next(letters) for _ in range(rhs.ndim)]
    for a, b in zip(lc, rc, strict=True):
        rhs_sub[b] = lhs_sub[a]
    for a, b in zip(lb, rb, strict=True):
        rhs_sub[b] = lhs_sub[a]
    batch = [lhs_sub[a] for a in lb]
    lhs_free = [s for i, s in enumerate(lhs_sub) if i not in lc and i not in lb]
    rhs_free = [s for i, s in enumerate(rhs_sub) if i not in rc and i not in rb]
    spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(batch + lhs_free + rhs_free)}"
    out_dtype = np.dtype(out_dtype or lhs.dtype)
    wide = np.float64 if out_dtype.kind == "f" or out_dtype == BF16 else np.int64
    out = np.einsum(spec, lhs.astype(wide), rhs.astype(wide))
    with np.errstate(all="ignore"):
        return out.astype(out_dtype)


DOT_SPECS: list[tuple[str, tuple[int, ...], tuple[int, ...], Any]] = [
    ("matmul", (3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ("matvec", (3, 4), (4,), (((1,), (0,)), ((), ()))),
    ("vecvec", (4,), (4,), (((0,), (0,)), ((), ()))),
    ("outer", (3,), (2,), (((), ()), ((), ()))),
    ("contract-lhs0", (4, 3), (4, 5), (((0,), (0,)), ((), ()))),
    ("batch", (2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ("batch-middle", (3, 2, 4), (4, 2, 5), (((2,), (0,)), ((1,), (1,)))),
    ("two-contracting", (2, 3, 4), (3, 4, 5), (((1, 2), (0, 1)), ((), ()))),
    ("zero-size-contraction", (3, 0), (0, 5), (((1,), (0,)), ((), ()))),
]


def _dot_cases() -> Iterator[Case]:
    for label, ls, rs, dims in DOT_SPECS:
        dtypes = (F32, I32, BF16, F16) if label == "matmul" else (F32,)
        for index, dtype in enumerate(dtypes):
            name = f"lax.dot_general/{short(dtype)}/{label}"
            rng = rng_for(name)
            lhs, rhs = sample(rng, ls, dtype, SMALL), sample(rng, rs, dtype, SMALL)
            terms = int(np.prod([ls[a] for a in dims[0][0]])) if dims[0][0] else 1
            yield fn_case(
                name,
                lambda ns, a, b, _d=dims: ns.lax_.dot_general(a, b, _d),
                [lhs, rhs],
                oracle=lambda a, b, _d=dims: dot_general_oracle(a, b, _d),
                tolerance=product_tolerance(lhs, rhs, terms),
                tags=["linalg", "lax"] + (["quick"] if index == 0 and label == "matmul" else []),
                source=f"lambda ns, a, b: ns.lax_.dot_general(a, b, {dims})",
            )
    for in_dtype, out_dtype in ((BF16, F32), (I8, I32), (F16, F32)):
        name = f"lax.dot_general/{short(in_dtype)}-preferred-{short(out_dtype)}"
        rng = rng_for(name)
        lhs, rhs = sample(rng, (3, 4), in_dtype, SMALL), sample(rng, (4, 2), in_dtype, SMALL)
        dims = (((1,), (0,)), ((), ()))
        yield fn_case(
            name,
            lambda ns, a, b, _o=out_dtype: ns.lax_.dot_general(
                a, b, (((1,), (0,)), ((), ())), preferred_element_type=_o
            ),
            [lhs, rhs],
            oracle=lambda a, b, _o=out_dtype, _d=dims: dot_general_oracle(a, b, _d, _o),
            tolerance=product_tolerance(lhs, rhs, 4),
            tags=["linalg", "lax"],
        )
    # operands of two dtypes: one product in the higher-precision type (JAX
    # 0.10.2 converts neither operand in the jaxpr; XLA's CPU backend forms
    # the product in the result type)
    for lhs_dtype, rhs_dtype in ((F16, F32), (I8, F32), (BF16, F32), (U8, I8), (I8, I32)):
        name = f"lax.dot_general/mixed-{short(lhs_dtype)}-{short(rhs_dtype)}"
        rng = rng_for(name)
        lhs, rhs = sample(rng, (3, 4), lhs_dtype, SMALL), sample(rng, (4, 2), rhs_dtype, SMALL)
        dims = (((1,), (0,)), ((), ()))
        out_dtype = I8 if (lhs_dtype, rhs_dtype) == (U8, I8) else rhs_dtype
        yield fn_case(
            name,
            lambda ns, a, b: ns.lax_.dot_general(a, b, (((1,), (0,)), ((), ()))),
            [lhs, rhs],
            oracle=lambda a, b, _o=out_dtype, _d=dims: dot_general_oracle(a, b, _d, _o),
            tolerance=product_tolerance(lhs.astype(F32), rhs.astype(F32), 4),
            tags=["linalg", "lax", "promotion"],
        )
    rng = rng_for("lax.dot_general/mixed-f16-f32/vjp")
    lhs, rhs = sample(rng, (3, 4), F16, SMALL), sample(rng, (4, 2), F32, SMALL)
    yield fn_case(
        "lax.dot_general/mixed-f16-f32/vjp",
        lambda ns, a, b: ns.api.vjp(
            lambda x, y: ns.lax_.dot_general(x, y, (((1,), (0,)), ((), ()))), a, b
        )[1](ns.np_.ones((3, 2), np.float32)),
        [lhs, rhs],
        expect=AGREE,
        tags=["linalg", "lax", "ad", "promotion"],
        notes="each cotangent in its operand's dtype (float16, float32)",
    )
    yield fn_case(
        "lax.dot_general/errors/contracting-size-mismatch",
        lambda ns, a, b: ns.lax_.dot_general(a, b, (((1,), (0,)), ((), ()))),
        [np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)],
        expect=Raises(TypeError, r"\(4,\).*\(3,\)|contracting"),
        mode="eager",
        tags=["linalg", "lax", "errors"],
    )
    yield fn_case(
        "lax.dot_general/errors/mixed-dtypes",
        lambda ns, a, b: ns.lax_.dot_general(a, b, (((1,), (0,)), ((), ()))),
        [np.ones((3, 4), np.float32), np.ones((4, 2), np.int32)],
        expect=AGREE,
        mode="eager",
        tags=["linalg", "lax", "errors"],
    )


# --- convolution --------------------------------------------------------------------------


def _dilate(x: np.ndarray, axes: list[int], factors: list[int]) -> np.ndarray:
    for axis, f in zip(axes, factors, strict=True):
        if f == 1 or x.shape[axis] == 0:
            continue
        shape = list(x.shape)
        shape[axis] = (x.shape[axis] - 1) * f + 1
        out = np.zeros(shape, x.dtype)
        index = [slice(None)] * x.ndim
        index[axis] = slice(None, None, f)
        out[tuple(index)] = x
        x = out
    return x


def same_padding(sizes, kernel, strides) -> list[tuple[int, int]]:
    """lax 'SAME' padding: output size ceil(in / stride), extra padding at the end."""
    pads = []
    for n, k, s in zip(sizes, kernel, strides, strict=True):
        out = -(-n // s)
        total = max((out - 1) * s + k - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def conv_oracle(lhs, rhs, strides, padding, lhs_dilation=None, rhs_dilation=None, groups=1):
    """conv_general_dilated in NCHW / OIHW / NCHW layout, from the definition."""
    nsp = lhs.ndim - 2
    lhs_dilation = lhs_dilation or (1,) * nsp
    rhs_dilation = rhs_dilation or (1,) * nsp
    wide = np.float64 if lhs.dtype.kind == "f" or lhs.dtype == BF16 else np.int64
    x = _dilate(lhs.astype(wide), list(range(2, lhs.ndim)), list(lhs_dilation))
    w = _dilate(rhs.astype(wide), list(range(2, rhs.ndim)), list(rhs_dilation))
    if isinstance(padding, str):
        padding = (
            same_padding(x.shape[2:], w.shape[2:], strides) if padding == "SAME" else [(0, 0)] * nsp
        )
    for i, (lo, hi) in enumerate(padding):
        axis = 2 + i
        x = _pad_axis(x, axis, lo, hi)
    n, c = x.shape[:2]
    o, i_per_group = w.shape[:2]
    out_sizes = [max((x.shape[2 + d] - w.shape[2 + d]) // strides[d] + 1, 0) for d in range(nsp)]
    out = np.zeros((n, o, *out_sizes), wide)
    per_group_out = o // groups
    for pos in itertools.product(*(range(s) for s in out_sizes)):
        window = tuple(
            slice(p * strides[d], p * strides[d] + w.shape[2 + d]) for d, p in enumerate(pos)
        )
        for g in range(groups):
            xs = x[(slice(None), slice(g * i_per_group, (g + 1) * i_per_group)) + window]
            ws = w[g * per_group_out : (g + 1) * per_group_out]
            summed_axes = list(range(1, xs.ndim))
            out[(slice(None), slice(g * per_group_out, (g + 1) * per_group_out)) + pos] = (
                np.tensordot(xs, ws, axes=(summed_axes, summed_axes))
            )
    with np.errstate(all="ignore"):
        return out.astype(lhs.dtype)


def _pad_axis(x: np.ndarray, axis: int, lo: int, hi: int) -> np.ndarray:
    if lo < 0:
        x = np.take(x, range(-lo, x.shape[axis]), axis=axis)
        lo = 0
    if hi < 0:
        x = np.take(x, range(0, x.shape[axis] + hi), axis=axis)
        hi = 0
    widths = [(0, 0)] * x.ndim
    widths[axis] = (lo, hi)
    return np.pad(x, widths)


CONV_SPECS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ("1d-valid", (2, 3, 8), (4, 3, 3), dict(window_strides=(1,), padding="VALID")),
    ("1d-same-stride2", (1, 2, 9), (3, 2, 4), dict(window_strides=(2,), padding="SAME")),
    ("2d-valid", (2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    ("2d-same", (1, 2, 5, 5), (3, 2, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    ("2d-explicit-padding", (1, 2, 5, 4), (2, 2, 2, 3),
     dict(window_strides=(2, 1), padding=[(1, 2), (0, 1)])),
    ("2d-negative-padding", (1, 1, 6, 6), (1, 1, 2, 2),
     dict(window_strides=(1, 1), padding=[(-1, 0), (1, -2)])),
    ("2d-rhs-dilation", (1, 2, 7, 7), (2, 2, 2, 2),
     dict(window_strides=(1, 1), padding="VALID", rhs_dilation=(2, 3))),
    ("2d-lhs-dilation", (1, 1, 4, 4), (1, 1, 3, 3),
     dict(window_strides=(1, 1), padding=[(2, 2), (2, 2)], lhs_dilation=(2, 2))),
    ("2d-feature-groups", (2, 4, 5, 5), (6, 2, 2, 2),
     dict(window_strides=(1, 1), padding="VALID", feature_group_count=2)),
    ("2d-depthwise", (1, 3, 4, 4), (3, 1, 3, 3),
     dict(window_strides=(1, 1), padding="SAME", feature_group_count=3)),
]  # fmt: skip


def _conv_cases() -> Iterator[Case]:
    for label, ls, rs, kw in CONV_SPECS:
        dtypes = (F32, BF16) if label == "2d-valid" else (F32,)
        for dtype in dtypes:
            name = f"lax.conv_general_dilated/{short(dtype)}/{label}"
            rng = rng_for(name)
            lhs, rhs = sample(rng, ls, dtype, SMALL), sample(rng, rs, dtype, SMALL)
            terms = int(np.prod(rs[1:]))

            def oracle(a, b, _kw=kw):
                return conv_oracle(
                    a,
                    b,
                    _kw["window_strides"],
                    _kw["padding"],
                    _kw.get("lhs_dilation"),
                    _kw.get("rhs_dilation"),
                    _kw.get("feature_group_count", 1),
                )

            yield fn_case(
                name,
                lambda ns, a, b, _kw=kw: ns.lax_.conv_general_dilated(a, b, **_kw),
                [lhs, rhs],
                oracle=oracle,
                tolerance=product_tolerance(lhs, rhs, terms),
                tags=["linalg", "lax", "conv"] + (["quick"] if label == "2d-same" else []),
                source=f"lambda ns, a, b: ns.lax_.conv_general_dilated(a, b, **{kw!r})",
            )
    # NHWC / HWIO layouts through dimension_numbers
    name = "lax.conv_general_dilated/f32/nhwc-hwio"
    rng = rng_for(name)
    lhs, rhs = sample(rng, (2, 5, 5, 3), F32, SMALL), sample(rng, (3, 3, 3, 4), F32, SMALL)
    yield fn_case(
        name,
        lambda ns, a, b: ns.lax_.conv_general_dilated(
            a, b, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        ),
        [lhs, rhs],
        oracle=lambda a, b: np.transpose(
            conv_oracle(
                np.transpose(a, (0, 3, 1, 2)), np.transpose(b, (3, 2, 0, 1)), (1, 1), "SAME"
            ),
            (0, 2, 3, 1),
        ),  # fmt: skip
        tolerance=product_tolerance(lhs, rhs, 27),
        tags=["linalg", "lax", "conv"],
    )


# --- np_ dot / matmul / einsum ------------------------------------------------------------


def _wide_matmul(fn):
    def oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out_dtype = canonical(np.result_type(a.dtype, b.dtype))
        wide = np.float64 if out_dtype.kind == "f" else np.int64
        return np.asarray(fn(a.astype(wide), b.astype(wide))).astype(out_dtype)

    return oracle


NP_LINALG = [
    ("matmul", np.matmul, [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)),
                           ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4,))]),
    ("dot", np.dot, [((3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (4,)), ((), (3,))]),
]  # fmt: skip


def _np_linalg_cases() -> Iterator[Case]:
    for name, fn, shape_pairs in NP_LINALG:
        for index, (ls, rs) in enumerate(shape_pairs):
            for dtype in (F32, I32) if index == 0 else (F32,):
                case_name = f"np.{name}/{short(dtype)}/{ls}x{rs}".replace(" ", "")
                rng = rng_for(case_name)
                a, b = sample(rng, ls, dtype, SMALL), sample(rng, rs, dtype, SMALL)
                yield fn_case(
                    case_name,
                    lambda ns, a, b, _n=name: getattr(ns.np_, _n)(a, b),
                    [a, b],
                    oracle=_wide_matmul(fn),
                    tolerance=product_tolerance(a, b, ls[-1] if ls else 1),
                    tags=["linalg", "numpy"] + (["quick"] if index == 0 else []),
                )
    yield fn_case(
        "operator.matmul/f32",
        lambda ns, a, b: a @ b,
        [sample(rng_for("matmul-op"), (3, 4), F32), sample(rng_for("matmul-op2"), (4, 2), F32)],
        oracle=_wide_matmul(np.matmul),
        tolerance=Tolerance(ulps=64, atol_eps=64),
        tags=["linalg", "operators"],
    )
    einsums = [
        ("ij,jk->ik", (3, 4), (4, 5)),
        ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
        ("i,i->", (5,), (5,)),
        ("i,j->ij", (3,), (4,)),
        ("ij,ij->i", (3, 4), (3, 4)),
        ("ijk,ikl->jl", (2, 3, 4), (2, 4, 3)),
        ("ij,kj->ki", (3, 4), (2, 4)),
    ]
    for spec, ls, rs in einsums:
        case_name = f"np.einsum/f32/{spec}"
        rng = rng_for(case_name)
        a, b = sample(rng, ls, F32, SMALL), sample(rng, rs, F32, SMALL)
        yield fn_case(
            case_name,
            lambda ns, a, b, _s=spec: ns.np_.einsum(_s, a, b),
            [a, b],
            oracle=lambda a, b, _s=spec: np.einsum(
                _s, a.astype(np.float64), b.astype(np.float64)
            ).astype(np.float32),
            tolerance=product_tolerance(a, b, 8),
            tags=["linalg", "numpy", "einsum"] + (["quick"] if spec == "ij,jk->ik" else []),
        )
    yield fn_case(
        "np.matmul/mixed-dtypes-i32-f32",
        lambda ns, a, b: ns.np_.matmul(a, b),
        [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((3, 2), np.float32)],
        oracle=lambda a, b: (a.astype(np.float64) @ b).astype(np.float32),
        tags=["linalg", "numpy", "promotion"],
    )
    yield from _mixed_product_cases()
    yield fn_case(
        "np.matmul/errors/shape-mismatch",
        lambda ns, a, b: ns.np_.matmul(a, b),
        [np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)],
        expect=Raises(Exception, r"\(3, 4\)|4.*3|shape"),
        mode="eager",
        tags=["linalg", "numpy", "errors"],
    )


# np_ products of an int8 and a float32 operand: one dot_general taking both
# (JAX 0.10.2), no convert of the int8 operand first
MIXED_PRODUCTS = {
    "np.dot/mixed-dtypes-i8-f32": lambda ns, a, b: ns.np_.dot(a, b),
    "np.tensordot/mixed-dtypes-i8-f32": lambda ns, a, b: ns.np_.tensordot(a, b, 1),
    "np.einsum/mixed-dtypes-i8-f32/ij,jk->k": lambda ns, a, b: ns.np_.einsum("ij,jk->k", a, b),
}


def _mixed_product_oracle(name: str):
    def oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        product = a.astype(np.float64) @ b.astype(np.float64)
        return (product.sum(0) if "einsum" in name else product).astype(F32)

    return oracle


def _mixed_product_cases() -> Iterator[Case]:
    for case_name, fn in MIXED_PRODUCTS.items():
        rng = rng_for(case_name)
        a, b = sample(rng, (2, 3), I8, SMALL), sample(rng, (3, 2), F32, SMALL)
        yield fn_case(
            case_name,
            fn,
            [a, b],
            oracle=_mixed_product_oracle(case_name),
            tolerance=product_tolerance(a.astype(F32), b, 3),
            tags=["linalg", "numpy", "promotion"],
        )


def cases() -> Iterator[Case]:
    yield from _dot_cases()
    yield from _conv_cases()
    yield from _np_linalg_cases()
