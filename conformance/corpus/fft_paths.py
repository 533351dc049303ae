"""``lax.fft``'s operand conversions and checks, and its rules' remaining branches (issue 36).

``fft.paths/*``: as JAX 0.10.2, ``lax.fft`` makes a real, integer or bool
operand of ``FFT``/``IFFT``/``IRFFT`` complex (complex64; complex128 from
float64 and 64-bit integers under x64) and an integer or bool operand of
``RFFT`` float, before binding (so a transform over no axes returns the
converted operand); eagerly, under ``jit``, ``vmap`` and ``grad``. ``grad``
of ``IRFFT`` with an odd last length (the transpose doubles every frequency
but 0). Refused by every implementation with JAX's ``ValueError``: ``RFFT``
of a complex, float16 or bfloat16 operand, more ``fft_lengths`` than the
operand has dimensions. Left out (JAX 0.10.2 fails in MLIR with
``MLIRError``, refimpl raises ``TypeError``): more than three
``fft_lengths``, an ``IRFFT`` operand whose last dim does not match.

Every case is ``AGREE``: judged by JAX (live or recorded). Each case's
recorded source includes its row and the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import ml_dtypes
import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus._tables import on_lax
from conformance.namespace import Unsupported

_X = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], np.float32)
_I = np.array([3, -1, 4, 1], np.int32)
_Z = np.array([1 + 0j, 2 - 1j, 0.5 + 2j], np.complex64)
_Z2 = np.array([[1 + 1j, 2 - 1j, 0.5 + 2j], [-1j, 3 + 0j, 1 - 1j]], np.complex64)
_W = np.arange(1.0, 6.0, dtype=np.float32)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return module


ROWS: list[tuple[str, Any]] = [
    ("fft_of_float32_jit", lambda ns, L: ns.jit(lambda x: L.fft(x, "FFT", (3,)))(_X)),
    ("fft2_of_float32_eager", lambda ns, L: L.fft(ns.asarray(_X), "FFT", (2, 3))),
    ("ifft_of_int32_eager", lambda ns, L: L.fft(ns.asarray(_I), "IFFT", (4,))),
    ("fft_of_bool_jit", lambda ns, L: ns.jit(lambda b: L.fft(b, "FFT", (4,)))(_I > 0)),
    ("fft_of_float16_eager", lambda ns, L: L.fft(ns.asarray(_X.astype(np.float16)), "FFT", (3,))),
    ("irfft_of_float32_jit", lambda ns, L: ns.jit(lambda x: L.fft(x, "IRFFT", (4,)))(_X)),
    ("rfft_of_int32_jit", lambda ns, L: ns.jit(lambda i: L.fft(i, "RFFT", (4,)))(_I)),
    ("rfft_of_bool_eager", lambda ns, L: L.fft(ns.asarray(_I > 0), "RFFT", (4,))),
    ("fft_no_axes_of_float32", lambda ns, L: L.fft(ns.asarray(_X), "FFT", ())),
    ("fft_no_axes_of_float32_jit", lambda ns, L: ns.jit(lambda x: L.fft(x, "FFT", ()))(_X)),
    ("rfft_no_axes_of_int32", lambda ns, L: L.fft(ns.asarray(_I), "RFFT", ())),
    ("fft_of_float32_vmap_axis1",
     lambda ns, L: _api(ns).vmap(lambda x: L.fft(x, "FFT", (2,)), in_axes=1)(_X)),
    ("fft_of_float32_grad",
     lambda ns, L: _api(ns).grad(
         lambda x: (L.real(L.fft(x, "FFT", (2, 3))) * _X + L.imag(L.fft(x, "FFT", (2, 3)))).sum())(
         _X)),
    ("irfft_odd_length_grad",
     lambda ns, L: _api(ns).grad(lambda z: (L.fft(z, "IRFFT", (5,)) * _W).sum())(_Z)),
    ("irfft2_odd_length_grad",
     lambda ns, L: _api(ns).grad(
         lambda z: (L.fft(z, "IRFFT", (2, 5)) * _W).sum())(_Z2)),
    ("irfft_odd_length_vjp",
     lambda ns, L: _api(ns).vjp(lambda z: L.fft(z, "IRFFT", (3,)), _Z[:2])[1](_W[:3])),
]  # fmt: skip

X64_ROWS: list[tuple[str, Any]] = [
    ("fft_of_int64_x64", lambda ns, L: L.fft(ns.asarray(_I.astype(np.int64)), "FFT", (4,))),
    ("fft_of_float64_x64_jit",
     lambda ns, L: ns.jit(lambda x: L.fft(x, "IFFT", (3,)))(_X.astype(np.float64))),
    ("fft_of_int32_x64", lambda ns, L: L.fft(ns.asarray(_I), "FFT", (4,))),
    ("rfft_of_int64_x64", lambda ns, L: L.fft(ns.asarray(_I.astype(np.int64)), "RFFT", (4,))),
]  # fmt: skip

ERRORS: list[tuple[str, Any]] = [
    ("rfft_of_complex", lambda ns, L: L.fft(ns.asarray(_Z), "RFFT", (3,))),
    ("rfft_of_float16", lambda ns, L: L.fft(ns.asarray(_X.astype(np.float16)), "RFFT", (3,))),
    ("rfft_of_bfloat16",
     lambda ns, L: L.fft(ns.asarray(_X.astype(ml_dtypes.bfloat16)), "RFFT", (3,))),
    ("lengths_over_rank", lambda ns, L: L.fft(ns.asarray(_Z), "FFT", (1, 3))),
    ("lengths_over_rank_jit", lambda ns, L: ns.jit(lambda x: L.fft(x, "IFFT", (2, 2, 3)))(_X)),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = inspect.getsource(_api)
    for group, x64 in ((ROWS, False), (X64_ROWS, True), (ERRORS, False)):
        for name, fn in group:
            case = script_case(f"fft.paths/{name}", on_lax(fn), expect=AGREE, x64=x64)
            yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}")
