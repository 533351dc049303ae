"""Convolution ``jax.lax`` functions over ``conv_general_dilated``:
``conv``, ``conv_with_general_padding``, ``conv_transpose``,
``conv_general_dilated_patches``, ``conv_general_dilated_local``, and the
shape helpers (``conv_shape_tuple``, ``conv_general_shape_tuple``,
``conv_transpose_shape_tuple``, ``conv_general_permutations``,
``reduce_window_shape_tuple``).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl import tracing
from refimpl.lax._elementwise import _aval
from refimpl.primitives import linalg, structural
from refimpl.primitives.base import as_int_tuple

# --- convolutions ----------------------------------------------------------------------------


def conv(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``conv_general_dilated`` with NCHW/OIHW layouts and no dilation."""
    return linalg.conv_general_dilated(
        lhs, rhs, window_strides, padding, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


def conv_with_general_padding(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None,
    rhs_dilation: Sequence[int] | None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``conv_general_dilated`` with NCHW/OIHW layouts."""
    return linalg.conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(before, after) padding of one spatial dim of the gradient-style
    transposed convolution of a forward conv with ``padding``."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else math.ceil(pad_len / 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + builtins.max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"conv_transpose: invalid padding mode {padding!r}")
    return pad_a, pad_len - pad_a


_TRANSPOSE_LAYOUTS = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def conv_transpose(
    lhs: Any,
    rhs: Any,
    strides: Sequence[int],
    padding: Any,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    transpose_kernel: bool = False,
    precision: Any = None,
    preferred_element_type: Any = None,
    use_consistent_padding: bool = False,
) -> Any:
    """Transposed ("deconvolution") convolution: ``conv_general_dilated`` with
    lhs dilation ``strides``, default layouts NHWC/HWIO/NHWC, and "SAME"/"VALID"
    padding as in JAX (``transpose_kernel`` flips the spatial dims and swaps
    the kernel's feature dims: the gradient of a forward conv)."""
    la, ra = _aval(lhs, "conv_transpose", 0), _aval(rhs, "conv_transpose", 1)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise ValueError(
            "conv_transpose: lhs and rhs must have the same rank of at least 2, "
            f"got shapes {la.shape} and {ra.shape}"
        )
    if dimension_numbers is None:
        if la.ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError("conv_transpose: no default dimension_numbers for rank above 5")
        dimension_numbers = _TRANSPOSE_LAYOUTS[la.ndim]
    dn = linalg.conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nspatial = la.ndim - 2
    strides = tuple(strides)
    k_sdims = [ra.shape[d] for d in dn.rhs_spec[2:]]
    if rhs_dilation is None:
        rhs_dilation = (1,) * nspatial
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        effective = [0 if k == 0 else (k - 1) * r + 1 for k, r in zip(k_sdims, rhs_dilation)]
        per_dim = [padding] * len(strides) if isinstance(padding, str) else list(padding)
        pads: Any = tuple(
            _conv_transpose_padding(k, s, p)
            for k, s, p in zip(effective, strides, per_dim, strict=True)
        )
    else:
        pads = padding
    if transpose_kernel:
        rhs = structural.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ra.ndim))
        o, i = dn.rhs_spec[0], dn.rhs_spec[1]
        perm[o], perm[i] = perm[i], perm[o]
        rhs = structural.transpose(rhs, tuple(perm))
    return linalg.conv_general_dilated(
        lhs, rhs, (1,) * nspatial, pads, strides, rhs_dilation, dn, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


# --- conv_general_dilated_patches -------------------------------------------------------------


def conv_general_dilated_patches(
    lhs: Any,
    filter_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """The patches a ``conv_general_dilated`` with a kernel of spatial shape
    ``filter_shape`` would see: output feature ``c * prod(filter_shape) + s``
    is input feature ``c`` at flat (row-major) window position ``s``; batch
    and spatial dims as that convolution's output (``dimension_numbers``'s
    out spec).

    A convolution with a one-hot kernel (one output feature per window
    position and input feature, ``feature_group_count`` = the input
    features), as JAX builds it: exact, since each output is one product
    with 1 summed with zeros.
    """
    api = "conv_general_dilated_patches"
    aval = tracing.get_aval(lhs, api, "lhs")
    filter_shape = as_int_tuple(api, filter_shape, "filter_shape")
    if len(filter_shape) != aval.ndim - 2:
        raise ValueError(
            f"{api}: filter_shape must have one entry per spatial dim of lhs ({aval.ndim - 2}), "
            f"got {filter_shape}"
        )
    dnums = linalg.conv_dimension_numbers(aval.shape, (1, 1, *filter_shape), dimension_numbers)
    window = math.prod(filter_shape)
    channels = aval.shape[dnums.lhs_spec[1]]
    one_hot = np.eye(window, dtype=aval.dtype).reshape(window, 1, *filter_shape)
    kernel = np.concatenate([one_hot] * channels, axis=0) if channels else one_hot[:0]
    # kernel is (O, I, spatial...) in that order; place each dim where rhs_spec says
    kernel = np.transpose(kernel, np.argsort(dnums.rhs_spec))
    return linalg.conv_general_dilated(
        lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation, dnums,
        feature_group_count=channels, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


def conv_general_dilated_local(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    filter_shape: Sequence[int],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    precision: Any = None,
) -> Any:
    """An unshared convolution: every output position has its own kernel.
    ``rhs`` is laid out by ``dimension_numbers``'s rhs spec with ``O`` output
    features, ``I = C * prod(filter_shape)`` (the patch features, as
    :func:`conv_general_dilated_patches` orders them) and the *output*
    spatial sizes; ``out[n, o, p] = sum_i patches[n, i, p] * rhs[o, i, p]``,
    in the out spec's layout."""
    api = "conv_general_dilated_local"
    aval = tracing.get_aval(lhs, api, "lhs")
    filter_shape = as_int_tuple(api, filter_shape, "filter_shape")
    dn = linalg.conv_dimension_numbers(aval.shape, (1, 1, *filter_shape), dimension_numbers)
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers
    )
    logical_patches = structural.transpose(patches, dn.out_spec)  # (N, I, spatial...)
    rhs_aval = tracing.get_aval(rhs, api, "rhs")
    if rhs_aval.ndim != aval.ndim:
        raise ValueError(f"{api}: rhs must have rank {aval.ndim}, got shape {rhs_aval.shape}")
    logical_rhs = structural.transpose(rhs, dn.rhs_spec)  # (O, I, spatial...)
    k = aval.ndim - 2
    spatial = tuple(range(2, 2 + k))
    out = linalg.dot_general(
        logical_patches, logical_rhs, (((1,), (1,)), (spatial, spatial)), precision=precision
    )  # (spatial..., N, O)
    out = structural.transpose(out, (k, k + 1, *range(k)))
    return structural.transpose(out, np.argsort(dn.out_spec).tolist())


# --- shape helpers ------------------------------------------------------------------------------


def _window_out(size: int, window: int, stride: int, lo: int, hi: int) -> int:
    return max(0, (size + lo + hi - window) // stride + 1)


def _pairs(api: str, padding: Any, n: int) -> list[tuple[int, int]]:
    pads = [tuple(int(v) for v in p) for p in padding]
    if len(pads) != n or any(len(p) != 2 for p in pads):
        raise ValueError(f"{api}: padding must be {n} (lo, hi) pairs, got {padding!r}")
    return pads  # type: ignore[return-value]


def conv_shape_tuple(
    lhs_shape: Sequence[int], rhs_shape: Sequence[int], strides: Sequence[int], pads: Any,
    batch_group_count: int = 1,
) -> tuple[int, ...]:  # fmt: skip
    """The output shape of an NC(spatial) x OI(spatial) convolution with
    ``strides`` and explicit ``pads`` (``(lo, hi)`` pairs; a string is
    resolved as "SAME"/"VALID" against the kernel): ``(N // batch_group_count,
    O, spatial...)``, a window count of ``max(0, (size + lo + hi - k) // s + 1)``."""
    api = "conv_shape_tuple"
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    n = len(lhs_shape) - 2
    if isinstance(pads, str):
        pads = linalg.padtype_to_pads(lhs_shape[2:], rhs_shape[2:], tuple(strides), pads)
    pads = _pairs(api, pads, n)
    spatial = tuple(
        _window_out(size, k, s, lo, hi)
        for size, k, s, (lo, hi) in zip(lhs_shape[2:], rhs_shape[2:], strides, pads, strict=True)
    )
    return (lhs_shape[0] // batch_group_count, rhs_shape[0], *spatial)


def conv_general_permutations(dimension_numbers: Any) -> tuple[tuple[int, ...], ...]:
    """``(lhs_perm, rhs_perm, out_perm)`` of three layout strings: where N, C
    (O, I for the kernel) and the spatial dims (in the kernel's order) are."""
    if not (
        isinstance(dimension_numbers, (tuple, list))
        and len(dimension_numbers) == 3
        and all(isinstance(d, str) for d in dimension_numbers)
    ):
        raise TypeError(
            "conv_general_permutations: dimension_numbers must be three layout strings, "
            f"got {dimension_numbers!r}"
        )
    ndim = len(dimension_numbers[0])
    return tuple(linalg.conv_dimension_numbers((1,) * ndim, (1,) * ndim, tuple(dimension_numbers)))


def _general_conv_shape(
    api: str, lhs_shape: Any, rhs_shape: Any, dimension_numbers: Any, spatial_fn: Callable
) -> tuple[int, ...]:
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    dn = linalg.conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs = [lhs_shape[d] for d in dn.lhs_spec]
    rhs = [rhs_shape[d] for d in dn.rhs_spec]
    out_logical = (lhs[0], rhs[0], *spatial_fn(lhs[2:], rhs[2:]))
    out = [0] * len(out_logical)
    for logical, dim in enumerate(dn.out_spec):
        out[dim] = out_logical[logical]
    return tuple(out)


def conv_general_shape_tuple(
    lhs_shape: Sequence[int], rhs_shape: Sequence[int], window_strides: Sequence[int],
    padding: Any, dimension_numbers: Any,
) -> tuple[int, ...]:  # fmt: skip
    """:func:`conv_shape_tuple` for layouts given by ``dimension_numbers``;
    the result in the output layout."""
    api = "conv_general_shape_tuple"

    def spatial(sizes: list[int], kernel: list[int]) -> tuple[int, ...]:
        pads = padding
        if isinstance(pads, str):
            pads = linalg.padtype_to_pads(tuple(sizes), tuple(kernel), tuple(window_strides), pads)
        pads = _pairs(api, pads, len(sizes))
        return tuple(
            _window_out(n, k, s, lo, hi)
            for n, k, s, (lo, hi) in zip(sizes, kernel, window_strides, pads, strict=True)
        )

    return _general_conv_shape(api, lhs_shape, rhs_shape, dimension_numbers, spatial)


def conv_transpose_shape_tuple(
    lhs_shape: Sequence[int], rhs_shape: Sequence[int], window_strides: Sequence[int],
    padding: Any, dimension_numbers: Any,
) -> tuple[int, ...]:  # fmt: skip
    """The output shape of :func:`conv_transpose`: each spatial size is
    ``(n - 1) * s - k + 2`` plus the total padding (a string padding
    resolved as ``conv_transpose`` resolves it)."""
    api = "conv_transpose_shape_tuple"

    def spatial(sizes: list[int], kernel: list[int]) -> tuple[int, ...]:
        if isinstance(padding, str):
            pads = [_conv_transpose_padding(k, s, padding) for k, s in zip(kernel, window_strides)]
        else:
            pads = _pairs(api, padding, len(sizes))
        return tuple(
            (n - 1) * s - k + 2 + lo + hi
            for n, k, s, (lo, hi) in zip(sizes, kernel, window_strides, pads, strict=True)
        )

    return _general_conv_shape(api, lhs_shape, rhs_shape, dimension_numbers, spatial)


def reduce_window_shape_tuple(
    operand_shape: Sequence[int], window_dimensions: Sequence[int], window_strides: Sequence[int],
    padding: Any, base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> tuple[int, ...]:  # fmt: skip
    """The output shape of a ``reduce_window``: per dim, the window count over
    the base-dilated, padded operand with the window-dilated window."""
    api = "reduce_window_shape_tuple"
    n = len(operand_shape)
    base = tuple(base_dilation) if base_dilation is not None else (1,) * n
    wdil = tuple(window_dilation) if window_dilation is not None else (1,) * n
    pads = _pairs(api, padding, n)
    return tuple(
        _window_out((size - 1) * b + 1 if size else 0, (w - 1) * d + 1, s, lo, hi)
        for size, w, s, (lo, hi), b, d in zip(
            operand_shape, window_dimensions, window_strides, pads, base, wdil, strict=True
        )
    )


__all__ = [
    "conv",
    "conv_with_general_padding",
    "conv_transpose",
    "conv_general_dilated_local",
    "conv_general_dilated_patches",
    "conv_general_permutations",
    "conv_general_shape_tuple",
    "conv_shape_tuple",
    "conv_transpose_shape_tuple",
    "reduce_window_shape_tuple",
]
