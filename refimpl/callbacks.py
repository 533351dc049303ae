"""Host callbacks: ``pure_callback``, ``io_callback`` and ``effects_barrier``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import backends, dtypes, pytree, tracing
from refimpl.core import ShapedArray
from refimpl.primitives.callback import VMAP_METHODS, call_host, io_callback_p, pure_callback_p
from refimpl.primitives.elementwise import convert_element_type
from refimpl.sharding import SingleDeviceSharding

# --- host callbacks --------------------------------------------------------------------------


def effects_barrier() -> None:
    """Wait until every pending effect (``debug.print``/``debug.callback``) has
    run, as ``jax.effects_barrier``.

    refimpl runs callbacks before a call returns (on pjrt the call waits for
    its program's outputs), so there is nothing to wait for and this is a
    no-op; JAX may run them asynchronously, after the call has returned, and
    needs it. Calling it keeps code portable between the two.

    Args: none.

    Returns:
        None.

    Raises: nothing.

    Example:
        >>> import refimpl as ri
        >>> ri.jit(lambda x: ri.debug.print("x = {}", x))(1.0)
        x = 1.0
        >>> ri.effects_barrier()
    """


def pure_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    vmap_method: str | None = None,
    **kwargs: Any,
) -> Any:
    """``jax.pure_callback``: ``callback(*args, **kwargs)`` run on the host
    with NumPy arrays, its results of the declared shapes and dtypes.

    ``result_shape_dtypes`` is a pytree of objects with ``.shape`` and
    ``.dtype`` (``ShapeDtypeStruct``); the callback must return that
    structure (a different dtype is cast, a different shape is a
    ``TypeError``). Under ``jit(backend="ref")`` it runs at each execution;
    under ``jit``/``pmap`` with ``backend="pjrt"`` it is a host callback
    inside the compiled program (refimpl.backends.pjrt.host_callbacks; a
    wrong result or an exception in the callback is a ``RuntimeError``
    naming ``pure_callback``); eager calls run at once. Not
    differentiable (JAX's ValueError); ``vmap`` per ``vmap_method``
    (refimpl.primitives.callback). ``sharding``: None or a
    ``SingleDeviceSharding``.

    "Pure" is a promise: the callback's results depend only on its
    arguments and it has no side effects that matter, so a call whose
    results are unused may be removed, and a call may run once per
    execution of its site (per loop iteration, per vmap member with
    ``"sequential"``). Use ``debug.callback`` for side effects.

    Args:
        callback: A Python function of NumPy arrays returning the structure
            of ``result_shape_dtypes``.
        result_shape_dtypes: A pytree of ``ShapeDtypeStruct`` (anything with
            ``.shape`` and ``.dtype``) declaring the results.
        *args: Positional arguments for ``callback`` (pytrees of arrays).
        sharding: None or a ``SingleDeviceSharding`` (the device it runs from).
        vmap_method: How ``vmap`` calls it: ``"sequential"``,
            ``"sequential_unrolled"``, ``"expand_dims"``, ``"broadcast_all"``,
            or None (vmap is then an error).
        **kwargs: Keyword arguments for ``callback`` (pytrees of arrays).

    Returns:
        The pytree of arrays ``callback`` returned, with the declared
        shapes and dtypes.

    Raises:
        TypeError: ``callback`` is not callable; ``result_shape_dtypes`` has
            leaves without ``.shape``/``.dtype``; the callback returned
            another structure or shape; a declared result dtype refimpl does
            not support (object).
        ValueError: An unknown ``vmap_method``; differentiating through it
            (``Pure callbacks do not support JVP``); a 64-bit result dtype
            with x64 disabled (as JAX).
        NotImplementedError: A ``sharding`` other than a
            ``SingleDeviceSharding``, ``vmap_method=
            "legacy_vectorized"``, or ``vmap`` with ``vmap_method=None``.
        RuntimeError: On pjrt, the callback raised or returned a wrong result
            inside a compiled program (the message names ``pure_callback``).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> def host_sin(x):
        ...     return np.sin(x)
        >>> @ri.jit
        ... def f(x):
        ...     return ri.pure_callback(host_sin, ri.ShapeDtypeStruct(x.shape, x.dtype), x)
        >>> f(np.array([0.0, 1.0], np.float32))
        Array([0.      , 0.841471], dtype=float32)
    """

    _check_sharding(sharding)
    if vmap_method is not None and vmap_method not in (*VMAP_METHODS, "legacy_vectorized"):
        raise ValueError(f"pure_callback: unknown vmap_method {vmap_method!r}")
    if vmap_method == "legacy_vectorized":
        raise NotImplementedError(
            "pure_callback: vmap_method='legacy_vectorized' is deprecated "
            "in JAX and not supported by refimpl; use 'expand_dims'"
        )
    flat_callback, leaves, result_avals, result_tree = _flat_call(
        "pure_callback", callback, result_shape_dtypes, args, kwargs
    )
    if not any(isinstance(x, tracing.Tracer) for x in leaves) and not tracing.current_builder():
        outs = call_host(flat_callback, [np.asarray(x) for x in leaves], result_avals)
        return pytree.tree_unflatten(result_tree, [backends.device_put(o) for o in outs])
    outs = pure_callback_p.bind(
        *leaves, callback=flat_callback, result_avals=result_avals, vmap_method=vmap_method
    )
    return pytree.tree_unflatten(result_tree, list(outs))


def io_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    ordered: bool = False,
    **kwargs: Any,
) -> Any:
    """``jax.experimental.io_callback``: ``callback(*args, **kwargs)`` run on
    the host for its side effects, its results of the declared shapes and
    dtypes.

    ``pure_callback``'s call (the same checks on ``result_shape_dtypes`` and
    the results) with an effect: a call is never removed, even when its
    results are unused (a ``jit`` whose outputs ignore it still runs it), and
    runs once per execution of its site (per loop iteration). Under
    ``jit(backend="pjrt")`` the host calls of one program (io_callback,
    ``debug.callback``) run in program order whatever ``ordered`` says, which
    JAX keeps only for ordered ones. Not differentiable (JAX's ValueError);
    ``vmap`` calls an unordered one per batch element in order and stacks
    the results, and refuses an ordered one (JAX's ValueError); as JAX,
    ``vmap`` refuses one inside a ``cond`` branch or a ``while`` (ordered, or
    with a batched predicate), and ``grad`` one inside a ``checkpoint``.

    Args:
        callback: A Python function of NumPy arrays returning the structure
            of ``result_shape_dtypes``.
        result_shape_dtypes: A pytree of ``ShapeDtypeStruct`` declaring the results.
        *args: Positional arguments for ``callback`` (pytrees of arrays).
        sharding: None or a ``SingleDeviceSharding`` (the device it runs from).
        ordered: Whether calls must keep program order (they always do here).
        **kwargs: Keyword arguments for ``callback`` (pytrees of arrays).

    Returns:
        The pytree of arrays ``callback`` returned, with the declared shapes
        and dtypes.

    Raises:
        TypeError: As ``pure_callback`` (a non-callable callback, a wrong
            result structure or shape, an unsupported result dtype).
        ValueError: Differentiating through it (``IO callbacks do not support
            JVP.``); ``vmap`` of an ordered one; a 64-bit result dtype with
            x64 disabled.
        NotImplementedError: A ``sharding`` other than a
            ``SingleDeviceSharding``; ``vmap`` of a ``cond`` holding
            one; ``grad``/``linearize`` of a ``checkpoint`` holding one.
        Exception: ``vmap`` of a ``while`` holding an ordered one, or an
            unordered one with a batched predicate (JAX's class).
        RuntimeError: On pjrt, the callback raised or returned a wrong result
            inside a compiled program (the message names ``io_callback``).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> from refimpl.experimental import io_callback
        >>> log = []
        >>> def record(x):
        ...     log.append(float(x))
        ...     return np.float32(2 * x)
        >>> @ri.jit
        ... def f(x):
        ...     io_callback(record, ri.ShapeDtypeStruct((), np.float32), x, ordered=True)
        ...     return x + 1
        >>> f(np.float32(3.0))
        Array(4., dtype=float32)
        >>> log
        [3.0]
    """

    _check_sharding(sharding)
    flat_callback, leaves, result_avals, result_tree = _flat_call(
        "io_callback", callback, result_shape_dtypes, args, kwargs
    )
    if not any(isinstance(x, tracing.Tracer) for x in leaves) and not tracing.current_builder():
        values = [np.asarray(x) for x in leaves]
        outs = call_host(flat_callback, values, result_avals, "io_callback")
        return pytree.tree_unflatten(result_tree, [backends.device_put(o) for o in outs])
    outs = io_callback_p.bind(
        *leaves, callback=flat_callback, result_avals=result_avals, ordered=bool(ordered)
    )
    return pytree.tree_unflatten(result_tree, list(outs))


def _check_sharding(sharding: Any) -> None:
    """A callback's ``sharding`` names the device it runs from: one device is
    what every refimpl program runs on, so a ``SingleDeviceSharding`` is
    accepted (the callback runs on the host either way); any other is JAX
    0.10.2's NotImplementedError."""
    if sharding is not None and not isinstance(sharding, SingleDeviceSharding):
        raise NotImplementedError(
            f"pure_callback only supports SingleDeviceSharding, but got {type(sharding)}"
        )


def _flat_call(
    name: str, callback: Any, result_shape_dtypes: Any, args: tuple, kwargs: dict
) -> tuple[Callable[..., list], list, tuple[ShapedArray, ...], Any]:
    """The checks pure_callback and io_callback share -> (the callback on flat
    NumPy values returning flat results, the flat operands, the declared
    result avals, the results' tree)."""
    if not callable(callback):
        raise TypeError(f"{name}: callback must be callable, got {type(callback).__name__}")
    result_leaves, result_tree = pytree.tree_flatten(result_shape_dtypes)
    try:
        result_avals = tuple(ShapedArray(tuple(r.shape), np.dtype(r.dtype)) for r in result_leaves)
    except (AttributeError, TypeError):
        raise TypeError(
            f"{name}: result_shape_dtypes must be a pytree of objects with .shape and "
            f".dtype (ShapeDtypeStruct), got {result_shape_dtypes!r:.100}"
        ) from None
    for k, aval in enumerate(result_avals):
        _check_result_dtype(name, aval.dtype, k, len(result_avals))
    leaves, in_tree = pytree.tree_flatten((args, kwargs))

    def flat_callback(*values: Any) -> list:
        call_args, call_kwargs = pytree.tree_unflatten(in_tree, list(values))
        outs = callback(*call_args, **call_kwargs)
        out_leaves, out_tree = pytree.tree_flatten(outs)
        if out_tree != result_tree:
            raise TypeError(
                f"{name}: the callback returned structure {out_tree}, "
                f"result_shape_dtypes has {result_tree}"
            )
        return out_leaves

    return flat_callback, leaves, result_avals, result_tree


def _check_result_dtype(name: str, dtype: np.dtype, k: int, n: int) -> None:
    """A declared result dtype must be one a program can hold, as in JAX: an
    unsupported one (object, strings) is a TypeError, a 64-bit one without x64
    JAX's ValueError (the result would otherwise be 64-bit under jit only)."""
    where = "" if n == 1 else f" (leaf {k})"
    try:
        canonical = dtypes.canonicalize_dtype(dtype)
    except TypeError as error:
        raise TypeError(f"{name}: result_shape_dtypes{where}: {error}") from None
    if canonical != dtype:
        raise ValueError(
            f"{name}: result_shape_dtypes{where} declares {dtype}: result_shape_dtypes "
            "cannot specify 64-bit types when `jax_enable_x64` is disabled"
        )


def _match_weak(x: Any, aval: ShapedArray) -> Any:
    """``x`` with ``aval``'s weak type when it differs only in that (a weakly
    typed cotangent for a strongly typed example, or the reverse)."""

    got = tracing.get_aval(x, "closure_convert", 0)
    if got.shape == aval.shape and got.dtype == aval.dtype and got.weak_type != aval.weak_type:
        return convert_element_type(x, aval.dtype, weak_type=aval.weak_type)
    return x


__all__ = [
    "effects_barrier",
    "io_callback",
    "pure_callback",
]
