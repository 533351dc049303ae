"""Branches of ``lax.reduce_window``'s rules no other case reaches (issue 36).

* ``window.paths/*``: the variadic (two-operand) ``reduce_window`` -- a
  running argmax over windows, its value and index operands reduced
  together -- eagerly, under ``jit``, ``vmap`` and ``jvp``; a window larger
  than the operand (an empty result, for the monoid primitives and the
  general one); bool ``max``/``min`` windows under ``jit`` (the lowering's
  ``or``/``and`` combiner); and three calls every implementation refuses:
  a batched init value under ``vmap`` (``NotImplementedError``), a tangent
  on the init value under ``jit`` of ``jvp`` (``TypeError``). Left out:
  operands of different shapes (refimpl's abstract evaluation raises
  ``TypeError``; JAX 0.10.2 has no check and fails in MLIR's verifier with
  ``ValueError``). The others are ``AGREE``: judged by JAX (live or
  recorded). Negative padding crops the (base-dilated) operand, as JAX
  0.10.2: sum/max/general windows eagerly, under ``jit`` (with base and
  window dilation), ``vmap``, ``jvp`` (max's chooser), reverse mode of the
  sum (its transpose), and a crop past the whole operand (an empty
  result). Left out: reverse mode of max with negative padding (JAX 0.10.2
  fails with a ``TypeError`` from a slice at a negative start; refimpl
  differentiates it).
* ``mask.paths/reduce_window-*``: ``reduce_window`` sum/max/min over masked
  dims (the mask rule fills the padding with the monoid's identity and
  computes the logical output size); NumPy oracles on the unpadded values,
  refimpl only (JAX has no ``mask``).

Each case's recorded source includes its row and the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from conformance.case import AGREE, Case, script_case
from conformance.corpus._tables import on_lax
from conformance.corpus.masking import Masked, _mask_case
from conformance.namespace import Unsupported
from conformance.observe import Raises

_X = np.array([3.0, -1.0, 4.0, 4.0, -5.0, 9.0, 2.0, 6.0], np.float32)
_IDX = np.arange(8, dtype=np.int32)
_FIDX = _IDX.astype(np.float32)
_BIG = np.int32(2**31 - 1)
_M = np.array([[1.0, 5.0, -2.0, 0.5], [3.0, 3.0, 7.0, -1.0], [0.0, 2.0, 2.0, 8.0]], np.float32)
_B = np.array([True, False, True, True, False, False, True])


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap"):
        raise Unsupported(f"{ns.name} has no vmap/jvp")
    return module


def _argmax_pair(L: Any) -> Any:
    """(value, index) pairs combined: the larger value wins, the lower index on ties."""

    def combine(acc: Any, elem: Any) -> Any:
        (va, ia), (vb, ib) = acc, elem
        take = L.bitwise_or(L.gt(vb, va), L.bitwise_and(L.eq(vb, va), L.lt(ib, ia)))
        return L.select(take, vb, va), L.select(take, ib, ia)

    return combine


def _window_argmax(L: Any, x: Any, idx: Any, *, last: Any = _BIG, **kw: Any) -> Any:
    """``last``: the index operand's init (a value above every index)."""
    kw.setdefault("window_dimensions", (3,))
    kw.setdefault("window_strides", (2,))
    kw.setdefault("padding", ((1, 1),))
    init = (np.float32(-np.inf), last)
    return L.reduce_window((x, idx), init, _argmax_pair(L), **kw)


def _exceeds(L: Any, x: Any, init: Any, op: Any) -> Any:
    """A window of 3 over 2 elements, no padding: fits nowhere (an empty result)."""
    return L.reduce_window(x, init, op, (3,), (1,), "VALID")


def _cropped(L: Any, x: Any, init: Any, op: Any, padding: Any = ((1, -1), (-2, 1)), **kw: Any):
    """A (2, 2) window over a 2-D operand whose padding crops it (negative entries)."""
    return L.reduce_window(x, init, op, (2, 2), (1, 1), padding, **kw)


def _rw(L: Any, x: Any, init: Any, op: Any) -> Any:
    return L.reduce_window(x, init, op, (2,), (1,), "VALID")


ROWS: list[tuple[str, Any]] = [
    ("variadic_argmax_eager", lambda ns, L: _window_argmax(L, ns.asarray(_X), ns.asarray(_IDX))),
    ("variadic_argmax_jit",
     lambda ns, L: ns.jit(lambda x, i: _window_argmax(L, x, i))(_X, _IDX)),
    ("variadic_argmax_dilated_jit",
     lambda ns, L: ns.jit(lambda x, i: _window_argmax(
         L, x, i, window_dimensions=(2,), window_strides=(1,), padding=((0, 2),),
         base_dilation=(2,), window_dilation=(2,)))(_X, _IDX)),
    ("variadic_argmax_vmap_rows",
     lambda ns, L: _api(ns).vmap(lambda x, i: _window_argmax(L, x, i))(
         _M, np.broadcast_to(np.arange(4, dtype=np.int32), (3, 4)))),
    ("variadic_argmax_vmap_axis1_unmapped_index",
     lambda ns, L: _api(ns).vmap(lambda x: _window_argmax(L, x, np.arange(3, dtype=np.int32)),
                                 in_axes=1)(_M)),
    # a float index operand: with an int one (a float0 tangent) JAX 0.10.2 fails with a
    # ValueError on the tangent's tree, refimpl with a TypeError on its dtype (left out);
    # grad: JAX 0.10.2 fails the same way, refimpl has no transpose of the general
    # reduce_window (NotImplementedError; left out)
    # both operands with tangents: a symbolic zero tangent of one fails in JAX 0.10.2's rule
    ("variadic_argmax_jvp",
     lambda ns, L: _api(ns).jvp(lambda x, i: _window_argmax(L, x, i, last=np.float32(99)),
                                (_X, _FIDX), (np.linspace(-1, 1, 8, dtype=np.float32), _X))),
    ("sum_window_exceeds_eager",
     lambda ns, L: _exceeds(L, ns.asarray(_X[:2]), np.float32(0), L.add)),
    ("sum_window_exceeds_jit",
     lambda ns, L: ns.jit(lambda x: _exceeds(L, x, np.float32(0), L.add))(_X[:2])),
    ("max_window_exceeds_eager",
     lambda ns, L: _exceeds(L, ns.asarray(_X[:2]), np.float32(-np.inf), L.max)),
    ("general_window_exceeds_eager",
     lambda ns, L: _exceeds(L, ns.asarray(_X[:2]), np.float32(1), L.mul)),
    ("general_window_exceeds_jit",
     lambda ns, L: ns.jit(lambda x: _exceeds(L, x, np.float32(1), L.mul))(_X[:2])),
    ("sum_negative_padding_eager",
     lambda ns, L: _cropped(L, ns.asarray(_M), np.float32(0), L.add)),
    ("max_negative_padding_dilated_jit",
     lambda ns, L: ns.jit(lambda x: _cropped(
         L, x, np.float32(-np.inf), L.max, ((2, -1), (-1, 3)), base_dilation=(2, 1),
         window_dilation=(1, 2)))(_M)),
    ("general_negative_padding_jit",
     lambda ns, L: ns.jit(lambda x: _cropped(L, x, np.float32(1), L.mul, ((-1, 0), (0, -1))))(
         _M)),
    ("general_negative_padding_vmap",
     lambda ns, L: _api(ns).vmap(lambda x: L.reduce_window(x, np.float32(1), L.mul, (2,), (1,),
                                                            ((-1, 1),)))(_M)),
    ("max_negative_padding_jvp",
     lambda ns, L: _api(ns).jvp(lambda x: _cropped(L, x, np.float32(-np.inf), L.max),
                                (_M,), (_M * 0.5 - 1,))),
    ("sum_negative_padding_grad_jit",
     lambda ns, L: ns.jit(_api(ns).grad(
         lambda x: (_cropped(L, x, np.float32(0), L.add, ((0, -1), (-1, -1))) ** 2).sum()))(_M)),
    ("sum_negative_padding_dilated_grad",
     lambda ns, L: _api(ns).grad(lambda x: _cropped(
         L, x, np.float32(0), L.add, ((-1, 2), (-3, 0)), base_dilation=(1, 2)).sum())(_M)),
    ("sum_crop_past_the_operand_jit",
     lambda ns, L: ns.jit(lambda x: _cropped(L, x, np.float32(0), L.add, ((0, 0), (-3, -3))))(
         _M)),
    ("max_crop_past_the_operand_jvp",
     lambda ns, L: _api(ns).jvp(
         lambda x: _cropped(L, x, np.float32(-np.inf), L.max, ((-5, 0), (0, 0))), (_M,), (_M,))),
    ("max_bool_jit", lambda ns, L: ns.jit(lambda b: _rw(L, b, False, L.max))(_B)),
    ("min_bool_jit", lambda ns, L: ns.jit(lambda b: _rw(L, b, True, L.min))(_B)),
    ("max_bool_2d_jit",
     lambda ns, L: ns.jit(lambda b: L.reduce_window(b, False, L.max, (2, 2), (1, 1), "SAME"))(
         _M > 2.0)),
]  # fmt: skip

ERRORS: list[tuple[str, Any, Any]] = [
    # JAX: NotImplementedError("reduce_window batching is not implemented for initial values")
    ("vmap_batched_init",
     lambda ns, L: _api(ns).vmap(lambda x, i: L.reduce_window(x, i, L.mul, (2,), (1,), "VALID"))(
         _M, np.arange(1.0, 4.0, dtype=np.float32)),
     Raises(NotImplementedError, "initial value")),
    # under jit: eagerly JAX 0.10.2 reads the init's primal as a concrete 0, takes the
    # reduce_window_sum path and drops the init's tangent
    ("jvp_init_tangent_jit",
     lambda ns, L: ns.jit(lambda x, i: _api(ns).jvp(
         lambda x, i: L.reduce_window(x, i, L.add, (2,), (1,), "VALID"), (x, i), (x, i)))(
         _X, np.float32(0)),
     Raises(TypeError, "init_value_tangent")),
]  # fmt: skip


# --- the mask rule of reduce_window_sum/max/min ---------------------------------------------


def _np_window(x: np.ndarray, window: int, stride: int, pad: tuple, fill: float, fn: Any) -> Any:
    padded = np.concatenate([np.full(pad[0], fill, x.dtype), x, np.full(pad[1], fill, x.dtype)])
    return fn(sliding_window_view(padded, window)[::stride], axis=-1).astype(x.dtype)


def _sum2(ns: Any, x: Any) -> Any:
    return ns.lax_.reduce_window(x, np.float32(0), ns.lax_.add, (2,), (1,), "VALID")


def _max_padded(ns: Any, x: Any) -> Any:
    return ns.lax_.reduce_window(x, np.float32(-np.inf), ns.lax_.max, (2,), (2,), ((1, 1),))


def _min_rows(ns: Any, x: Any) -> Any:
    """x (n, 3): min over 2x2 windows, only dim 0 masked."""
    return ns.lax_.reduce_window(x, np.float32(np.inf), ns.lax_.min, (2, 2), (1, 1), "VALID")


def _min_rows_oracle(x: np.ndarray) -> np.ndarray:
    return sliding_window_view(x, (2, 2)).min(axis=(-2, -1))


def _sum_dilated(ns: Any, x: Any) -> Any:
    """base dilation 2 (n -> 2n - 1), window 3 with dilation 1, stride 1."""
    return ns.lax_.reduce_window(x, np.float32(0), ns.lax_.add, (3,), (1,), ((0, 0),), (2,), (1,))


def _sum_dilated_oracle(x: np.ndarray) -> np.ndarray:
    spread = np.zeros(2 * len(x) - 1, x.dtype)
    spread[::2] = x
    return sliding_window_view(spread, 3).sum(axis=-1).astype(x.dtype)


MASKED: list[Masked] = [
    Masked("reduce_window-sum-masked", _sum2,
           lambda x: _np_window(x, 2, 1, (0, 0), 0.0, np.sum), ["(n,)"], "(n-1,)",
           lambda s: [(s["n"],)], [(7,)], lambda s: np.s_[: s["n"] - 1],
           ({"n": 4}, {"n": 2})),
    # the padding of the masked region must read as -inf: positive padding values would win
    Masked("reduce_window-max-padded-strided", _max_padded,
           lambda x: _np_window(x, 2, 2, (1, 1), -np.inf, np.max), ["(n,)"], "(n//2 + 1,)",
           lambda s: [(s["n"],)], [(8,)], lambda s: np.s_[: s["n"] // 2 + 1],
           ({"n": 5}, {"n": 4})),
    Masked("reduce_window-min-masked-rows", _min_rows, _min_rows_oracle, ["(n, 3)"],
           "(n-1, 2)", lambda s: [(s["n"], 3)], [(6, 3)], lambda s: np.s_[: s["n"] - 1],
           ({"n": 4}, {"n": 2})),
    Masked("reduce_window-sum-base-dilated", _sum_dilated, _sum_dilated_oracle, ["(n,)"],
           "(2*n - 3,)", lambda s: [(s["n"],)], [(6,)], lambda s: np.s_[: 2 * s["n"] - 3],
           ({"n": 4}, {"n": 3})),
]  # fmt: skip

_HELPERS = "".join(
    inspect.getsource(h) for h in (_api, _argmax_pair, _window_argmax, _exceeds, _rw)
)


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        case = script_case(f"window.paths/{name}", on_lax(fn), expect=AGREE)
        source = f"{case.source}\n{inspect.getsource(fn).strip()}\n{_HELPERS}"
        if "_cropped(" in source:
            source += inspect.getsource(_cropped)
        yield replace(case, source=source)
    for name, fn, expect in ERRORS:
        case = script_case(f"window.paths/{name}", on_lax(fn), expect=expect)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(fn).strip()}\n{_HELPERS}")
    for m in MASKED:
        for sizes in m.sizes:
            case = _mask_case(m, sizes)
            extra = inspect.getsource(m.fun).strip() + "\n" + inspect.getsource(_np_window)
            yield replace(case, name=case.name.replace("mask/", "mask.paths/", 1),
                          source=f"{case.source}\n{extra}")  # fmt: skip
