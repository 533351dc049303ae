"""The last jax.numpy functions (polynomials, histograms, windows, vectorize...), against NumPy
oracles with jax.numpy's dtype rules (x64 off: int32 counts and indices,
float32 results): bit packing and counting, ``mask_indices``, histogram
counts, ``spacing``, ``i0``/``kaiser`` and the FFTs (within a few ulps of
NumPy's float64 values rounded), ``gradient`` with coordinate arrays,
``trim_zeros`` (eager)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from conformance.case import Case, fn_case, rng_for
from conformance.compare import Tolerance

SERIES = Tolerance(ulps=64, atol_eps=64)


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float32)


def cases() -> Iterator[Case]:
    rng = rng_for("np.surface2")
    bits = rng.integers(0, 2, (3, 13)).astype(np.int32)
    bytes_ = rng.integers(0, 256, (2, 3)).astype(np.uint8)
    ints = rng.integers(-(2**31), 2**31 - 1, (4, 5), endpoint=True).astype(np.int32)
    points = rng.uniform(-3, 3, (30, 2)).astype(np.float32)
    floats = np.array([0.0, 1.0, -2.5, 1e-30, 3e38, 7.0], np.float32)
    coords = np.cumsum(rng.uniform(0.2, 1.5, 6)).astype(np.float32)
    values = rng.uniform(-2, 2, (3, 6)).astype(np.float32)
    table = [
        (
            "packbits",
            lambda ns, x: ns.np_.packbits(x, axis=1),
            lambda x: np.packbits(x.astype(bool), axis=1),
            [bits],
            None,
        ),
        (
            "packbits-little",
            lambda ns, x: ns.np_.packbits(x, bitorder="little"),
            lambda x: np.packbits(x.astype(bool), bitorder="little"),
            [bits],
            None,
        ),
        (
            "unpackbits",
            lambda ns, x: ns.np_.unpackbits(x, axis=0, count=11),
            lambda x: np.unpackbits(x, axis=0, count=11),
            [bytes_],
            None,
        ),
        (
            "bitwise_count",
            lambda ns, x: ns.np_.bitwise_count(x),
            lambda x: np.bitwise_count(x).astype(np.uint8),
            [ints],
            None,
        ),
        (
            "mask_indices",
            lambda ns: ns.np_.mask_indices(4, ns.np_.triu, 1, size=6),
            lambda: tuple(i.astype(np.int32) for i in np.mask_indices(4, np.triu, 1)),
            [],
            None,
        ),
        (
            "histogram2d-counts",
            lambda ns, p: ns.np_.histogram2d(p[:, 0], p[:, 1], bins=4)[0],
            lambda p: np.histogram2d(p[:, 0], p[:, 1], bins=4)[0].astype(np.int32),
            [points],
            None,
        ),
        (
            "histogramdd-range",
            lambda ns, p: ns.np_.histogramdd(p, bins=3, range=[(-2, 2), (-1, 1)])[0],
            lambda p: np.histogramdd(p, bins=3, range=[(-2, 2), (-1, 1)])[0].astype(np.int32),
            [points],
            None,
        ),
        ("spacing", lambda ns, x: ns.np_.spacing(x), np.spacing, [floats], None),
        (
            "i0",
            lambda ns, x: ns.np_.i0(x),
            lambda x: _f32(np.i0(x.astype(np.float64))),
            [floats[:4]],
            SERIES,
        ),
        ("kaiser", lambda ns: ns.np_.kaiser(9, 5.0), lambda: _f32(np.kaiser(9, 5.0)), [], SERIES),
        (
            "gradient-coords",
            lambda ns, f, x: ns.np_.gradient(f, x, axis=1),
            lambda f, x: _f32(np.gradient(f.astype(np.float64), x.astype(np.float64), axis=1)),
            [values, coords],
            SERIES,
        ),
        (
            "fft-rfft",
            lambda ns, x: (ns.np_.fft.fft(x), ns.np_.fft.rfft(x.real, norm="ortho")),
            lambda x: (
                np.fft.fft(x.astype(np.complex128)).astype(np.complex64),
                np.fft.rfft(x.real.astype(np.float64), norm="ortho").astype(np.complex64),
            ),
            [(values[0] + 1j * values[1]).astype(np.complex64)],
            SERIES,
        ),
        (
            "irfft2",
            lambda ns, x: ns.np_.fft.irfft2(x, s=(3, 6)),
            lambda x: _f32(np.fft.irfft2(x.astype(np.complex128), s=(3, 6))),
            [(values[:, :4] - 1j * values[:, 2:]).astype(np.complex64)],
            SERIES,
        ),
    ]
    for label, fn, oracle, args, tolerance in table:
        yield fn_case(
            f"np.surface2/{label}",
            fn,
            args,
            oracle=oracle,
            tolerance=tolerance,
            tags=["numpy", "surface"],
        )
    trim = np.array([0, 0, 4, 0, 2, 0], np.int32)
    yield fn_case(
        "np.surface2/trim_zeros/eager",
        lambda ns, x: ns.np_.trim_zeros(x),
        [trim],
        oracle=np.trim_zeros,
        mode="eager",
        tags=["numpy", "surface"],
    )
