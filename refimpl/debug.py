"""``jax.debug``: print and call back on runtime values (``debug.print``, ``debug.callback``).

Both bind the ``debug_callback`` primitive (refimpl.primitives.debug). When
the callback runs, per backend (docs/semantics.md "debug.print and
debug.callback"):

* eager: at once;
* ``jit(backend="ref")``: each time the program runs, in program order, on
  the concrete NumPy values (not at trace time);
* ``jit(backend="pjrt")`` and ``pmap(backend="pjrt")``: a host callback
  inside the compiled program (refimpl.backends.pjrt.host_callbacks), run
  by the plugin during the computation wherever it is (top level, nested
  calls, scan/while bodies, cond branches, every pmap replica), in program
  order, before the call returns; an exception in the callback is raised
  by the call as a ``RuntimeError`` naming ``debug.print``/``debug.callback``;
* ``vmap``: once per batch element, as JAX 0.10.2;
* ``jvp``/``grad``: on the primal values, once per forward pass.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import pytree, tracing
from refimpl.array import Array
from refimpl.primitives.debug import debug_callback_p, debug_print_p

__all__ = ["callback", "log", "print"]

_print = print


def _to_host(leaf: Any) -> Any:
    return leaf if dtypes_is_scalar(leaf) else np.asarray(leaf)


def dtypes_is_scalar(leaf: Any) -> bool:
    return isinstance(leaf, (bool, int, float, complex)) and not isinstance(leaf, np.generic)


def _bind(
    name: str, fn: Callable[..., Any], args: tuple, kwargs: dict, shown: dict | None = None
) -> None:
    """Call ``fn`` on the runtime values: at once eagerly, else through a
    callback equation (``debug_print`` with JAX's parameters ``shown``, or
    ``debug_callback``)."""
    leaves, tree = pytree.tree_flatten((args, kwargs))
    # debug_print's operands are JAX's: Python numbers too (literals), not only arrays
    arrays = [
        i
        for i, leaf in enumerate(leaves)
        if _is_array_leaf(leaf) or (shown is not None and dtypes_is_scalar(leaf))
    ]
    static = {i: leaf for i, leaf in enumerate(leaves) if i not in set(arrays)}

    def run(*values: Any) -> None:
        full = dict(static)
        full.update(zip(arrays, (_to_host(v) for v in values), strict=True))
        call_args, call_kwargs = pytree.tree_unflatten(tree, [full[i] for i in range(len(leaves))])
        fn(*call_args, **call_kwargs)

    operands = [leaves[i] for i in arrays]
    if (
        not any(isinstance(x, tracing.Tracer) for x in operands)
        and tracing.current_builder() is None
    ):
        run(*[np.asarray(x) for x in operands])  # eager: at once, no device round trip
        return
    if shown is not None:
        static_args = tuple(static.items())
        debug_print_p.bind(*operands, callback=run, in_tree=tree, static_args=static_args, **shown)
        return
    debug_callback_p.bind(*operands, callback=run, name=name)


def _is_array_leaf(leaf: Any) -> bool:
    if isinstance(leaf, (tracing.Tracer, np.ndarray, np.generic)):
        return True

    return isinstance(leaf, Array)


def callback(
    callback: Callable[..., Any], *args: Any, ordered: bool = False, **kwargs: Any
) -> None:
    """Call ``callback(*args, **kwargs)`` with the runtime values of the array
    leaves of ``args``/``kwargs`` (NumPy arrays), as ``jax.debug.callback``.

    Non-array leaves (Python scalars, strings) are passed as they are. The
    callback's return value is ignored. ``ordered`` is accepted: refimpl runs
    callbacks in program order on both backends.

    Raises:
        TypeError: ``callback`` is not callable or ``ordered`` is not a bool.
    """
    if not callable(callback):
        raise TypeError(f"debug.callback: callback must be callable, got {type(callback).__name__}")
    if not isinstance(ordered, bool):
        raise TypeError(f"debug.callback: ordered must be a bool, got {ordered!r}")
    _bind("debug.callback", callback, args, kwargs)


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the runtime values, as
    ``jax.debug.print`` (array leaves formatted as NumPy arrays).

    Raises:
        TypeError: ``fmt`` is not a str or ``ordered`` is not a bool.
        ValueError: ``fmt`` is not a valid format string (checked at once,
            not when the values arrive).
    """

    def show(text: str) -> None:
        # one write per line: pmap replicas print from several threads, and
        # print's separate write of the newline could let another line in between
        _print(text + "\n", end="")

    _formatted_call(fmt, args, kwargs, ordered, show, as_print=True)


def log(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Log ``fmt.format(*args, **kwargs)`` with the runtime values at INFO
    level, as JAX 0.10.2's ``jax.debug.log`` (``debug.print`` through Python
    logging; JAX's logger is ``jax._src.debugging``, refimpl's
    ``refimpl.debug``). Runs when and as often as ``debug.print`` would.

    Raises: as :func:`print`.
    """
    _formatted_call(fmt, args, kwargs, ordered, _LOGGER.info)


_LOGGER = logging.getLogger(__name__)


def _formatted_call(
    fmt: str,
    args: tuple,
    kwargs: dict,
    ordered: bool,
    emit: Callable[[str], None],
    as_print: bool = False,
) -> None:
    """``emit(fmt.format(...))`` with the runtime values (``print``, ``log``)."""
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: fmt must be a str, got {type(fmt).__name__}")
    if not isinstance(ordered, bool):
        raise TypeError(f"debug.print: ordered must be a bool, got {ordered!r}")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(fmt) if f is not None]
    except ValueError as error:
        raise ValueError(f"debug.print: invalid format string {fmt!r}: {error}") from None
    # as JAX: positional arguments the format never reaches are an error
    roots = [f.split(".")[0].split("[")[0] for f in fields]
    used = sum(1 for r in roots if r == "")
    used = max([used, *(int(r) + 1 for r in roots if r.isdigit())])
    if len(args) > used:
        raise ValueError(
            f"Unused positional arguments to `debug.print`: {list(args[used:])!r:.200}"
        )

    def show(*call_args: Any, **call_kwargs: Any) -> None:
        emit(fmt.format(*call_args, **call_kwargs))

    # debug.print's equation is JAX's debug_print, with its parameters
    shown = None
    if as_print:
        shown = {
            "fmt": fmt,
            "has_placeholders": bool(fields),
            "logging_record": None,
            "np_printoptions": tuple(np.get_printoptions().items()),
            "ordered": ordered,
            "partitioned": False,
        }
    _bind("debug.print", show, args, kwargs, shown)
