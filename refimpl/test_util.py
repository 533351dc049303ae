"""``refimpl.test_util``: derivatives checked against finite differences, as
``jax.test_util``.

``check_grads(f, args, order)`` compares, in one random direction per check,

* forward mode: ``refimpl.jvp(f, args, t)`` against the central difference
  ``(f(x + eps t) - f(x - eps t)) / (2 eps)``;
* reverse mode: for a random cotangent ``c`` the inner product
  ``<t, vjp(c)>`` against ``<numerical jvp(t), c>`` (a transpose is right
  iff these agree for every ``t`` and ``c``);

* ``"lin"`` mode: as forward mode, with the JVP taken through
  ``linearize`` (the linear function applied to the tangent);

and recursively, for ``order > 1``, the derivatives of those derivatives:
``jvp(f)`` as a function of ``(primals, tangents)`` and
``x -> vjp(f, x)[1](f(x))``. Random directions come from a fixed seed, so a
check is reproducible. Tolerances are per dtype (``default_gradient_tolerance``,
JAX's), scaled by the number of elements compared, as JAX does; ``atol`` /
``rtol`` replace them (a number, or a ``{dtype: tol}`` dict merged over them).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from refimpl import backends, dtypes, test_events
from refimpl.transforms import ad
from refimpl.tree_util import tree_leaves, tree_map, tree_structure

EPS = 1e-4

# How close two values must be when no tolerance is given (``check_close``):
# exact for bool and integers, about an ulp's worth for floats.
default_tolerance: dict[np.dtype, float] = {
    np.dtype(ml_dtypes.bfloat16): 1e-2,
    np.dtype(np.float16): 1e-3,
    np.dtype(np.float32): 1e-6,
    np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6,
    np.dtype(np.complex128): 1e-15,
}

default_gradient_tolerance: dict[np.dtype, float] = {
    np.dtype(ml_dtypes.bfloat16): 1e-1,
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3,
    np.dtype(np.complex128): 1e-5,
}

__all__ = [
    "check_grads",
    "check_jvp",
    "check_vjp",
    "count_device_put",
    "count_jit_and_pmap_lowerings",
    "count_jit_tracing_cache_miss",
    "count_pjit_cpp_cache_miss",
    "count_primitive_compiles",
    "numerical_jvp",
]

# What refimpl did inside a ``with`` block, by JAX's harness names
# (``jax._src.test_util``'s counters): ``with count_x() as count: ...``, then
# ``count()``. Each reads an event recorded where the work happens
# (refimpl.test_events), in this thread.

#: Traces of jitted functions (``jit``, ``eval_shape``, ``make_jaxpr``) for a
#: signature their cache did not hold: JAX's ``trace_to_jaxpr`` misses.
count_jit_tracing_cache_miss = functools.partial(test_events.count, test_events.JIT_TRACE)
#: Programs lowered to StableHLO on the pjrt backend (the reference backend
#: interprets programs and lowers none).
count_jit_and_pmap_lowerings = functools.partial(test_events.count, test_events.PJRT_LOWERING)
#: Calls of pjrt jitted functions whose signature the C++ fast path did not hold.
count_pjit_cpp_cache_miss = functools.partial(test_events.count, test_events.PJRT_FAST_PATH_MISS)


@contextlib.contextmanager
def count_primitive_compiles() -> Iterator[Callable[[], int]]:
    """Eager primitives on the pjrt backend that needed a new (primitive,
    params) jit (JAX's misses of its cache of primitive callables). As JAX's,
    the cache is emptied first, so each (primitive, params) used in the block
    counts once. Loads the PJRT runtime. The reference backend compiles no
    eager primitive."""
    backends.get("pjrt").clear_eager_primitives()
    with test_events.count(test_events.PJRT_EAGER_PRIMITIVE) as count:
        yield count


@contextlib.contextmanager
def count_device_put() -> Iterator[Callable[[], int]]:
    """Host-to-device copies on the pjrt backend: one per device buffer made
    from host data (JAX counts one per array, whatever its devices), counted
    in C++ where PJRT is asked for the copy, in every thread. Loads the PJRT
    runtime. The reference backend's devices are host memory: it copies
    nothing to a device, and this does not count its work."""
    native = backends.get("pjrt").pmap_support.native_module()
    before = native.to_device_count()
    yield lambda: native.to_device_count() - before


def _api() -> Any:
    return ad


def _dtype(x: Any) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, int):
        return dtypes.canonicalize_dtype(np.int64)
    if isinstance(x, float):
        return dtypes.canonicalize_dtype(np.float64)
    if isinstance(x, complex):
        return dtypes.canonicalize_dtype(np.complex128)
    return np.asarray(x).dtype


def _is_python_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex))


def _tolerance(dtype: np.dtype, tol: Any) -> float:
    if tol is None:  # a value comparison's own default (JAX's default_tolerance)
        tol = default_tolerance
    if not isinstance(tol, dict):
        return float(tol)
    if dtype == dtypes.float0 or not dtypes.is_inexact(dtype):
        return 0.0
    # a NumPy float64 is computed as float32 without x64: judged as one
    return tol.get(dtypes.canonicalize_dtype(dtype), 1e-5)


def _merge_tolerance(tol: Any, default: dict[np.dtype, float]) -> Any:
    if tol is None:
        return default
    if not isinstance(tol, dict):
        return tol
    merged = dict(default)
    merged.update({np.dtype(k): v for k, v in tol.items()})
    return merged


def _as_numpy(x: Any) -> np.ndarray:
    if _is_python_scalar(x):
        return np.asarray(x, _dtype(x))
    return np.asarray(x)


def _assert_close(actual: Any, expected: Any, atol: Any, rtol: Any, err_msg: str) -> None:
    a, b = _as_numpy(actual), _as_numpy(expected)
    if a.shape != b.shape:
        raise AssertionError(f"{err_msg}: shapes differ, {a.shape} vs {b.shape}")
    if a.dtype == dtypes.float0 or b.dtype == dtypes.float0:
        if a.dtype != b.dtype:
            raise AssertionError(f"{err_msg}: dtypes differ, {a.dtype} vs {b.dtype}")
        return
    a_tol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol))
    r_tol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol))
    wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64
    np.testing.assert_allclose(
        a.astype(wide),
        b.astype(wide),
        atol=a_tol * max(a.size, 1),
        rtol=r_tol * max(b.size, 1),
        err_msg=err_msg,
    )


def check_close(xs: Any, ys: Any, atol: Any = None, rtol: Any = None, err_msg: str = "") -> None:
    """Every leaf of ``xs`` close to the matching leaf of ``ys`` (same tree)."""
    if tree_structure(xs) != tree_structure(ys):
        raise AssertionError(
            f"{err_msg}: tree structures differ: {tree_structure(xs)} vs {tree_structure(ys)}"
        )
    for x, y in zip(tree_leaves(xs), tree_leaves(ys), strict=True):
        _assert_close(x, y, atol, rtol, err_msg)


def _check_dtypes_match(xs: Any, ys: Any, err_msg: str) -> None:
    for x, y in zip(tree_leaves(xs), tree_leaves(ys), strict=True):
        dx = dtypes.canonicalize_dtype(_dtype(x)) if _dtype(x) != dtypes.float0 else _dtype(x)
        dy = dtypes.canonicalize_dtype(_dtype(y)) if _dtype(y) != dtypes.float0 else _dtype(y)
        if dx != dy:
            raise AssertionError(f"{err_msg}: dtypes differ, {dx} vs {dy}")


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
    dtype, shape = _dtype(x), np.shape(x)
    if dtype == dtypes.float0 or not dtypes.is_inexact(dtype):
        return np.zeros(shape, dtypes.float0)
    if dtypes.is_complex(dtype):
        value = np.asarray(rng.randn(*shape) + 1j * rng.randn(*shape)).astype(dtype)
    else:
        value = np.asarray(rng.randn(*shape)).astype(dtype)
    return value.item() if _is_python_scalar(x) else value


def _elementwise(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` on NumPy values in the dtype of the first argument (Python
    scalars stay Python scalars)."""

    def apply(*args: Any) -> Any:
        dtype = _dtype(args[0])
        if dtype == dtypes.float0 or not dtypes.is_inexact(dtype):
            return args[0]  # integer inputs are not perturbed
        with np.errstate(invalid="ignore", over="ignore"):
            result = np.asarray(fn(*[_as_numpy(a) for a in args])).astype(dtype)
        return result.item() if all(_is_python_scalar(a) for a in args) else result

    return apply


def _scale(tree: Any, factor: float) -> Any:
    return tree_map(_elementwise(lambda x: x * np.asarray(factor, x.dtype)), tree)


def _safe_sub(x: Any, y: Any) -> Any:
    """``x - y`` with ``inf - inf = 0`` (a function value that is infinite at
    both sample points has a zero difference)."""
    x, y = _as_numpy(x), _as_numpy(y)
    if not dtypes.is_inexact(x.dtype):
        return np.zeros(x.shape, dtypes.float0)
    with np.errstate(invalid="ignore"):
        return np.where(x == y, np.zeros((), x.dtype), (x - y).astype(x.dtype))


def numerical_jvp(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], eps: float = EPS
) -> Any:
    """The central difference ``(f(x + eps t) - f(x - eps t)) / (2 eps)``."""
    delta = _scale(tuple(tangents), eps)
    plus = tree_map(_elementwise(lambda x, d: x + d), tuple(primals), delta)
    minus = tree_map(_elementwise(lambda x, d: x - d), tuple(primals), delta)
    f_pos, f_neg = f(*plus), f(*minus)
    difference = tree_map(_safe_sub, f_pos, f_neg)
    return _scale(difference, 0.5 / eps)


def _inner_product(xs: Any, ys: Any) -> float:
    total = 0.0
    for x, y in zip(tree_leaves(xs), tree_leaves(ys), strict=True):
        x, y = _as_numpy(x), _as_numpy(y)
        if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
            continue
        total += float(np.real(np.dot(np.conj(x.astype(np.complex128)).ravel(), y.ravel())))
    return total


def check_jvp(
    f: Callable[..., Any],
    f_jvp: Callable[..., Any],
    args: Sequence[Any],
    atol: Any = None,
    rtol: Any = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """``f_jvp(args, tangents)`` (typically ``partial(refimpl.jvp, f)``)
    against ``f`` and its central difference, in one random direction."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rng = np.random.RandomState(0)
    tangent = tree_map(functools.partial(_rand_like, rng), tuple(args))
    v_out, t_out = f_jvp(tuple(args), tangent)
    _check_dtypes_match(v_out, t_out, f"{err_msg or 'JVP'} tangent output")  # as JAX's
    v_expected = f(*args)
    _check_dtypes_match(v_out, v_expected, f"{err_msg or 'JVP'} primal output")
    t_expected = numerical_jvp(f, args, tangent, eps=eps)
    check_close(v_out, v_expected, atol, rtol, f"{err_msg or 'JVP'} primal output")
    check_close(t_out, t_expected, atol, rtol, f"{err_msg or 'JVP'} tangent output")


def check_vjp(
    f: Callable[..., Any],
    f_vjp: Callable[..., Any],
    args: Sequence[Any],
    atol: Any = None,
    rtol: Any = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """``f_vjp(*args) -> (out, vjp_fun)`` (typically ``partial(refimpl.vjp,
    f)``): ``<t, vjp_fun(c)> == <numerical jvp(t), c>`` for random ``t``, ``c``."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rng = np.random.RandomState(0)
    v_out, vjp_fun = f_vjp(*args)
    v_expected = f(*args)
    check_close(v_out, v_expected, atol, rtol, f"{err_msg or 'VJP'} primal output")
    tangent = tree_map(functools.partial(_rand_like, rng), tuple(args))
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree_map(functools.partial(_rand_like, rng), v_out)
    conj = _elementwise(np.conj)
    cotangent_out = tree_map(conj, vjp_fun(tree_map(conj, cotangent)))
    ip = _inner_product(tangent, cotangent_out)
    ip_expected = _inner_product(tangent_out, cotangent)
    inexact = [_dtype(x) for x in tree_leaves(args) if dtypes.is_inexact(_dtype(x))]
    dtype = inexact[0] if inexact else np.dtype(np.float64)
    what = f"{err_msg or 'VJP'} inner products of cotangent and tangent"
    check_close(np.asarray(ip, dtype), np.asarray(ip_expected, dtype), atol, rtol, what)


def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int,
    modes: Sequence[str] = ("fwd", "rev"),
    atol: Any = None,
    rtol: Any = None,
    eps: float | None = None,
) -> None:
    """Check ``f``'s derivatives at ``args`` up to ``order`` by finite
    differences, in forward (``"fwd"``), reverse (``"rev"``) and/or
    linearized (``"lin"``: ``linearize``'s linear function as the JVP) mode,
    as JAX 0.10.2's; an ``AssertionError`` says which derivative differs.
    ``modes`` may be one mode's name. (JAX ignores a name it does not know,
    checking nothing for it: here that is a ``ValueError``.)"""
    if isinstance(modes, str):
        modes = (modes,)
    if not set(modes) <= {"fwd", "rev", "lin"}:
        raise ValueError(
            f"check_grads: modes must be a subset of ('fwd', 'rev', 'lin'), got {modes!r}"
        )
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be a positive int, got {order!r}")
    api = _api()
    eps = eps or EPS
    args = tuple(args)

    def check(fun: Callable[..., Any], fun_args: tuple, level: int, what: str) -> None:
        if "fwd" in modes:
            msg = f"JVP of {what}" if what else "JVP"
            check_jvp(fun, functools.partial(api.jvp, fun), fun_args, atol, rtol, eps, msg)
            if level > 1:
                check(functools.partial(api.jvp, fun), (fun_args, fun_args), level - 1, msg)
        if "rev" in modes:
            msg = f"VJP of {what}" if what else "VJP"
            check_vjp(fun, functools.partial(api.vjp, fun), fun_args, atol, rtol, eps, msg)
            if level > 1:

                def pullback_of_output(*xs: Any) -> Any:
                    out, vjp_fun = api.vjp(fun, *xs)
                    return vjp_fun(out)

                check(pullback_of_output, fun_args, level - 1, msg)
        if "lin" in modes:
            msg = f"LIN of {what}" if what else "LIN"
            check_jvp(
                fun, functools.partial(_jvp_from_linearize, fun), fun_args, atol, rtol, eps, msg
            )
            if level > 1:
                check(
                    functools.partial(_jvp_from_linearize, fun),
                    (fun_args, fun_args),
                    level - 1,
                    msg,
                )

    check(f, args, order, "")


def _jvp_from_linearize(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> Any:
    """``jvp`` through ``linearize``: the output and the linear function applied."""
    out, f_lin = _api().linearize(f, *primals)
    return out, f_lin(*tangents)
