"""Configuration contexts and scopes: ``enable_x64``, ``legacy_prng_key``, ``disable_jit``,
``ensure_compile_time_eval``, ``named_scope`` and ``named_call``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from refimpl import tracing
from refimpl.config import (
    check_matmul_precision,
    check_promotion_mode,
    config,
    promotion_block,
    set_local_matmul_precision,
)

# --- configuration contexts ------------------------------------------------------------


@contextlib.contextmanager
def _setting(name: str, value: Any) -> Iterator[None]:
    """``config.<name>`` is ``value`` within the block, restored after it."""
    saved = getattr(config, name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, saved)


@contextlib.contextmanager
def _flag(name: str, value: bool, caller: str) -> Iterator[None]:
    if not isinstance(value, bool):
        raise TypeError(f"{caller}: expected a bool, got {value!r}")
    with _setting(name, value):
        yield


def enable_x64(new_val: bool = True) -> contextlib.AbstractContextManager:
    """Context manager: ``config.enable_x64`` is ``new_val`` within the block.

    With 64-bit types enabled, ``float64``/``int64``/``complex128`` values
    keep their types and Python floats default to ``float64``; without,
    they are truncated to 32 bits (with JAX's warning where a dtype is
    asked for explicitly). The previous setting comes back when the block
    exits, also by an exception. The setting is read when a function is
    traced: a ``jit`` traced under one setting and called under the other
    traces again (the setting is part of its signature), as with
    ``jax.enable_x64``.

    Args:
        new_val: The value of ``config.enable_x64`` inside the block.

    Returns:
        A context manager (use it in a ``with`` statement).

    Raises:
        TypeError: ``new_val`` is not a bool (raised when the block is
            entered).

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> with ri.enable_x64():
        ...     rnp.ones(2, np.float64)
        Array([1., 1.], dtype=float64)
    """
    return _flag("enable_x64", new_val, "enable_x64")


@contextlib.contextmanager
def legacy_prng_key(new_val: str) -> Iterator[None]:
    """Context manager: ``config.legacy_prng_key`` is ``new_val`` within the
    block (``jax.legacy_prng_key``): what ``refimpl.random`` does with a raw
    ``uint32[..., 2]`` key, "allow" it, "warn" (a UserWarning) or "error" (a
    ValueError). The previous setting comes back when the block exits.

    Args:
        new_val: "allow", "warn" or "error".

    Returns:
        A context manager (use it in a ``with`` statement).

    Raises:
        ValueError: ``new_val`` is not one of the three (when the block is
            entered).

    Example:
        >>> import refimpl as ri
        >>> with ri.legacy_prng_key("allow"):
        ...     ri.random.normal(ri.random.PRNGKey(0)).shape
        ()
    """
    with _setting("legacy_prng_key", new_val):
        yield


@contextlib.contextmanager
def _accepted(
    caller: str, value: Any, supported: Callable[[Any], bool], why: str
) -> Iterator[None]:
    """A JAX configuration context refimpl accepts for the values it already
    behaves as (``why`` says what refimpl does); other values are an error,
    not silently ignored. Usable as a decorator too, as JAX's."""
    if not supported(value):
        raise NotImplementedError(f"{caller}({value!r}) is not supported: {why}")
    yield


class _PromotionMode:
    """A jnp promotion flag as JAX's ``jax.numpy_rank_promotion`` /
    ``jax.numpy_dtype_promotion`` objects: called with a mode it is a context
    manager (or decorator) setting the flag within the block; ``.value`` is the
    mode in effect, ``.get_global()`` the flag's (the same in refimpl, whose
    thread-local blocks are over the process-wide flag, as JAX's)."""

    def __init__(self, name: str, doc: str) -> None:
        self._name = name
        self.__name__ = name
        self.__qualname__ = name
        self.__doc__ = doc

    def __call__(self, value: str) -> contextlib.AbstractContextManager:
        check_promotion_mode(self._name, value)  # when called, as JAX's
        return promotion_block(self._name, value)

    @property
    def value(self) -> str:
        """The mode in effect in this thread: its innermost block's, else the flag."""
        return getattr(config, self._name)

    def get_global(self) -> str:
        """The flag's mode (``config.update``), whatever this thread's blocks say."""
        return config._values[self._name]

    def __repr__(self) -> str:
        return f"refimpl.{self._name}"


numpy_rank_promotion = _PromotionMode(
    "numpy_rank_promotion",
    """``jax.numpy_rank_promotion``: within the block, what jnp's element-wise
    functions do with operands of different ranks, none of them a scalar
    (``ones(2) + ones((1, 2))``): "allow" broadcasts them (NumPy's rule, the
    default), "warn" broadcasts them with a UserWarning, "raise" raises
    ValueError, in JAX 0.10.2's words. Scalars and operands of one rank never
    warn. The mode is part of every jit signature: a function traced under
    one traces again under another.

    Args:
        value: "allow", "warn" or "raise".

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).
        ``numpy_rank_promotion.value`` reads the mode in effect.

    Raises:
        ValueError: another mode (JAX's words), when called.

    Example:
        >>> import refimpl as ri
        >>> with ri.numpy_rank_promotion("raise"):
        ...     ri.numpy.ones(2) + ri.numpy.ones((1, 2))
        Traceback (most recent call last):
        ...
        ValueError: Operands could not be broadcast together for add on shapes (2,) (1, 2) and with the config option jax_numpy_rank_promotion='raise'. For more information, see https://docs.jax.dev/en/latest/rank_promotion_warning.html.
    """,  # noqa: E501
)

numpy_dtype_promotion = _PromotionMode(
    "numpy_dtype_promotion",
    """``jax.numpy_dtype_promotion``: within the block, how jnp promotes
    operands of different dtypes: "standard" by JAX's lattice (the default),
    "strict" not at all, except that a weakly typed value (a Python scalar)
    takes the type of a strongly typed one of its kind or a higher kind
    (int to float to complex, never bool); other mixes raise
    ``TypePromotionError`` in JAX 0.10.2's words. Part of every jit
    signature, as the rank mode.

    Args:
        value: "standard" or "strict".

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).
        ``numpy_dtype_promotion.value`` reads the mode in effect.

    Raises:
        ValueError: another mode (JAX's words), when called.

    Example:
        >>> import refimpl as ri
        >>> with ri.numpy_dtype_promotion("strict"):
        ...     (ri.numpy.ones(2) + 1).dtype
        dtype('float32')
    """,
)


def default_matmul_precision(value: Any) -> contextlib.AbstractContextManager:
    """``jax.default_matmul_precision``: within the block, ``dot_general`` and
    the convolutions given no ``precision`` record this one (their equations'
    ``precision`` param: ``"float32"`` is ``(Precision.HIGHEST,
    Precision.HIGHEST)``, a ``DotAlgorithmPreset`` name the preset), as JAX's.
    Values are unchanged: refimpl's CPU matmuls are full precision, as JAX's
    on CPU, for every setting but the presets' own types. It is part of every
    jit signature, so a jit called under another setting traces again. It
    overrides the ``default_matmul_precision`` flag in this thread; a
    ``config.update`` of the flag inside the block is seen after it.

    Args:
        value: None, or one of JAX 0.10.2's names (``"bfloat16"``,
            ``"tensorfloat32"``, ``"float32"``, ``"default"``, ``"high"``,
            ``"highest"``, a ``lax.DotAlgorithmPreset`` name).

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        ValueError: another value (JAX's words), when the block is entered.

    Example:
        >>> import refimpl as ri
        >>> x = ri.numpy.ones((2, 2))
        >>> with ri.default_matmul_precision("float32"):
        ...     jaxpr = ri.make_jaxpr(ri.numpy.dot)(x, x)
        >>> jaxpr.eqns[0].params["precision"]
        (Precision.HIGHEST, Precision.HIGHEST)
    """
    return _matmul_precision_block(value)


@contextlib.contextmanager
def _matmul_precision_block(value: Any) -> Iterator[None]:
    check_matmul_precision(value)
    previous = set_local_matmul_precision(value)
    try:
        yield
    finally:
        set_local_matmul_precision(previous)


def no_tracing(new_val: bool = True) -> contextlib.AbstractContextManager:
    """``jax.no_tracing``: within the block a jitted function that would trace
    (a cache miss: a new function, or new argument types) raises
    ``RuntimeError`` instead, as JAX 0.10.2's; calls that hit the cache run.
    It sets ``config.no_tracing``. (JAX's eager operations are jits too, so an
    eager operation new to JAX's cache raises there; refimpl's eager
    operations never do.)

    Args:
        new_val: True to refuse tracing in the block, False to allow it.

    Returns:
        A context manager (use it in a ``with`` statement).

    Raises:
        TypeError: ``new_val`` is not a bool (when the block is entered).

    Example:
        >>> import refimpl as ri
        >>> f = ri.jit(lambda x: x + 1)
        >>> _ = f(1.0)
        >>> with ri.no_tracing():
        ...     float(f(2.0))
        3.0
    """
    return _flag("no_tracing", new_val, "no_tracing")


def enable_checks(value: bool = True) -> contextlib.AbstractContextManager:
    """``jax.enable_checks``: refimpl checks its programs always (no effect).

    Args:
        value: a bool.

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        NotImplementedError: ``value`` is not a bool (when the block is entered).

    Example:
        >>> import refimpl as ri
        >>> with ri.enable_checks(True):
        ...     int(ri.numpy.add(1, 2))
        3
    """
    return _accepted("enable_checks", value, lambda v: isinstance(v, bool), "expected a bool")


def check_tracer_leaks(value: Any = True) -> contextlib.AbstractContextManager:
    """``jax.check_tracer_leaks``: ``config.check_tracer_leaks`` is ``bool(value)``
    within the block (JAX takes any value by its truth).

    With the check on, a transformation JAX checks raises
    ``Exception("Leaked trace ...")`` when it ends while one of its tracers
    is still reachable: the traced function stored it in a global, a
    closure or an object. The transformations checked are JAX's: the
    staging ones (``jit``, ``make_jaxpr``, ``eval_shape``, the bodies of
    ``scan``/``cond``/``while_loop``, ``checkpoint``, custom rules traced
    under them) and ``vmap``/``jacfwd``; ``grad``, ``vjp``, ``jvp`` and
    ``linearize`` outside ``jit`` are not, as in JAX 0.10.2. A cached
    ``jit`` that does not trace again is not checked either. Without the
    check a leaked tracer raises ``UnexpectedTracerError`` where it is used.

    Args:
        value: whether to check (its truth).

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        Exception: inside the context, when a checked trace ends with one of
            its tracers still reachable (JAX's "Leaked trace ..."); entering
            raises nothing.

    Example:
        >>> import refimpl as ri
        >>> with ri.check_tracer_leaks(True):
        ...     int(ri.jit(lambda x: x + 1)(2))
        3
    """
    return _setting("check_tracer_leaks", bool(value))


def checking_leaks() -> contextlib.AbstractContextManager:
    """``jax.checking_leaks()``: ``check_tracer_leaks(True)``.

    Args: none, as JAX's.

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        Exception: inside the context, the leak error of
            :func:`check_tracer_leaks`; entering raises nothing.

    Example:
        >>> import refimpl as ri
        >>> with ri.checking_leaks():
        ...     int(ri.jit(lambda x: x + 1)(2))
        3
    """
    return check_tracer_leaks(True)


def debug_key_reuse(value: bool) -> contextlib.AbstractContextManager:
    """``jax.debug_key_reuse``: only False (refimpl has no key reuse checker).

    Args:
        value: False.

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        NotImplementedError: ``value`` is not False (when the block is entered).

    Example:
        >>> import refimpl as ri
        >>> with ri.debug_key_reuse(False):
        ...     int(ri.numpy.add(1, 2))
        3
    """
    return _accepted(
        "debug_key_reuse", value, lambda v: v is False, "refimpl has no key reuse checker"
    )


def transfer_guard(value: str) -> contextlib.AbstractContextManager:
    """``jax.transfer_guard``: accepted, no effect (refimpl does not guard
    host-device transfers; a program that JAX lets run runs the same).

    Args:
        value: one of "allow", "log", "disallow", "log_explicit",
            "disallow_explicit".

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        NotImplementedError: another level (when the block is entered).

    Example:
        >>> import refimpl as ri
        >>> with ri.transfer_guard("allow"):
        ...     int(ri.numpy.add(1, 2))
        3
    """
    levels = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
    return _accepted("transfer_guard", value, lambda v: v in levels, f"one of {levels}")


@contextlib.contextmanager
def default_prng_impl(value: str) -> Iterator[None]:
    """``jax.default_prng_impl``: the PRNG implementation of keys made without
    ``impl=`` and of raw keys within the block (``config.default_prng_impl``):
    ``"threefry2x32"`` (the default), ``"rbg"``, ``"unsafe_rbg"``,
    ``"threefry4x32"``, ``"philox2x32"`` or ``"philox4x32"``.

    Args:
        value: the implementation's name.

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        ValueError: a name JAX does not know either (as JAX), when the block
            is entered.

    Example:
        >>> import refimpl as ri
        >>> with ri.default_prng_impl("rbg"):
        ...     str(ri.random.key(0).dtype)
        'key<rbg>'
    """
    with _setting("default_prng_impl", value):
        yield


def threefry_partitionable(value: bool) -> contextlib.AbstractContextManager:
    """``jax.threefry_partitionable``: only True, JAX 0.10.2's default and
    refimpl's counters.

    Args:
        value: True.

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        NotImplementedError: ``value`` is not True (when the block is entered).

    Example:
        >>> import refimpl as ri
        >>> with ri.threefry_partitionable(True):
        ...     int(ri.numpy.add(1, 2))
        3
    """
    return _accepted(
        "threefry_partitionable", value, lambda v: v is True, "refimpl's bits are JAX's default"
    )


def enable_custom_prng(value: bool = True) -> contextlib.AbstractContextManager:
    """``jax.enable_custom_prng``: only False (``PRNGKey`` returns raw keys).

    Args:
        value: False.

    Returns:
        A context manager (use it in a ``with`` statement or as a decorator).

    Raises:
        NotImplementedError: ``value`` is not False (when the block is entered).

    Example:
        >>> import refimpl as ri
        >>> with ri.enable_custom_prng(False):
        ...     int(ri.numpy.add(1, 2))
        3
    """
    return _accepted(
        "enable_custom_prng", value, lambda v: v is False, "PRNGKey returns raw uint32 keys"
    )


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Context manager: within the block ``jit``-ed functions run their
    Python function directly, op by op (each operation eager, or recorded by
    the enclosing transformation), as ``jax.disable_jit``.

    It sets ``config.disable_jit`` (also settable with ``config.update``),
    which clears the C++ fast path's caches each time it changes, so calls
    within the block cannot hit a compiled entry and calls after it compile
    again. ``pmap`` is not affected. Use it to debug a jitted function with
    ``print`` and concrete values: inside the block its arguments are
    arrays, not tracers.

    Args:
        disable: True to run ``jit``-ed functions op by op in the block;
            False to re-enable ``jit`` inside an enclosing
            ``disable_jit()`` block.

    Returns:
        A context manager (use it in a ``with`` statement).

    Raises:
        TypeError: ``disable`` is not a bool (raised when the block is
            entered).

    Example:
        >>> import refimpl as ri
        >>> @ri.jit
        ... def f(x):
        ...     print(type(x).__name__)
        ...     return x + 1
        >>> with ri.disable_jit():
        ...     f(1.0)
        float
        2.0
    """
    if not isinstance(disable, bool):
        raise TypeError(f"disable_jit: expected a bool, got {disable!r}")
    with _flag("disable_jit", disable, "disable_jit"):  # config.update clears the caches
        yield


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Context manager: operations on concrete values run at once, even inside
    a ``jit`` trace (the staging trace is hidden for the block), as JAX.

    Operations with a traced operand are still recorded by its trace. A
    value computed in the block is a concrete array, so Python may branch on
    it, and it enters the traced program as a constant. Outside any trace
    the block changes nothing.

    Args: none.

    Returns:
        A context manager (use it in a ``with`` statement).

    Raises: nothing of its own. A traced value used in Python control flow
    in the block is still a ``ConcretizationTypeError``, as outside it.

    Example:
        >>> import numpy as np, refimpl as ri, refimpl.numpy as rnp
        >>> @ri.jit
        ... def f(x):
        ...     with ri.ensure_compile_time_eval():
        ...         c = rnp.sin(np.float32(0.5))
        ...         print(c > 0)
        ...     return x * c
        >>> f(np.float32(1.0))
        True
        Array(0.47942555, dtype=float32)
    """
    stack = tracing._stack
    saved = stack.dynamic
    stack.dynamic = None
    try:
        yield
    finally:
        stack.dynamic = saved


def named_scope(name: str) -> contextlib.AbstractContextManager[None]:
    """Context manager naming the operations of its block, as ``jax.named_scope``.

    refimpl's programs carry no name stacks, so this is a documented no-op
    apart from checking ``name``: listings and lowered modules do not show it
    (JAX puts the name into its equations' source info and the HLO's
    metadata, for profilers).

    Args:
        name: The scope's name.

    Returns:
        A context manager (use it in a ``with`` statement); the block's
        values are what they would be without it.

    Raises:
        TypeError: ``name`` is not a str (when called, as JAX's).

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> with ri.named_scope("layer1"):
        ...     rnp.cos(0.0)
        Array(1., dtype=float32, weak_type=True)
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope: name must be a str, got {type(name).__name__}")
    return contextlib.nullcontext()


def named_call(fun: Callable[..., Any], *, name: str | None = None) -> Callable[..., Any]:
    """``fun`` under a name (``jax.named_call``).

    As :func:`named_scope`, refimpl records no names, so the result calls
    ``fun`` unchanged (JAX stages it as a named sub-computation; refimpl's
    traced program is the same as ``fun``'s).

    Args:
        fun: The function to name.
        name: The name (default: ``fun.__name__``).

    Returns:
        A function with ``fun``'s signature and results (and, by
        ``functools.wraps``, its ``__name__``).

    Raises:
        TypeError: ``fun`` is not callable, or ``name`` is neither a str nor
            None.
        AttributeError: ``name`` is None and ``fun`` has no ``__name__`` (a
            ``functools.partial``), as JAX 0.10.2.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> f = ri.named_call(rnp.sin, name="my_sin")
        >>> f(0.0)
        Array(0., dtype=float32, weak_type=True)
    """
    if not callable(fun):
        raise TypeError(f"named_call: expected a callable, got {type(fun).__name__}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"named_call: name must be a str or None, got {type(name).__name__}")

    if name is None:
        # as JAX 0.10.2: a callable without a __name__ (a functools.partial)
        # needs name= (AttributeError here, when named_call is made)
        name = fun.__name__
    scope = name

    @functools.wraps(fun)
    def named(*args: Any, **kwargs: Any) -> Any:
        with named_scope(scope):
            return fun(*args, **kwargs)

    return named


__all__ = [
    "disable_jit",
    "enable_x64",
    "ensure_compile_time_eval",
    "named_call",
    "named_scope",
]
