"""The implementation-neutral namespace a case is written against.

A case never imports ``refimpl`` or ``jax``. It receives a ``Namespace`` and
uses only what is on it::

    def program(ns, x, y):
        return ns.np_.add(ns.lax_.sin(x), y)

``ns.np_`` is numpy-like (``refimpl.numpy`` / ``jax.numpy``), ``ns.lax_`` is
lax-like (``refimpl.lax`` / ``jax.lax``), ``ns.jit`` and ``ns.device_put``
follow ``jax.jit`` and ``jax.device_put``. Features an implementation lacks
(``ns.mask`` on jax) raise ``Unsupported``, which the runner reports as a
skip, never as a pass.

The namespace also carries the *observation* helpers a case needs to look at
implementation-specific state (``ns.is_deleted(x)``, ``ns.buffer_pointer(x)``,
``ns.trace_count(f)``, ``ns.weak_type(x)``); they forward to the
``Implementation``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from conformance.implementations import Implementation


class Unsupported(Exception):
    """The implementation lacks a feature the case needs (reported as skip)."""


class Namespace:
    """What a case sees of one implementation."""

    def __init__(
        self,
        impl: Implementation,
        *,
        np_: Any,
        lax_: Any,
        jit: Callable[..., Any],
        device_put: Callable[..., Any],
        mask: Callable[..., Any] | None = None,
        eval_shape: Callable[..., Any] | None = None,
        extras: dict[str, Any] | None = None,
    ) -> None:
        self.impl = impl
        self.name = impl.name
        self.np_ = np_
        self.lax_ = lax_
        self.jit = jit
        self.device_put = device_put
        self._mask = mask
        self._eval_shape = eval_shape
        self.extras = dict(extras or {})

    def __repr__(self) -> str:
        return f"<Namespace of {self.name}>"

    # -- features that may be missing --

    @property
    def mask(self) -> Callable[..., Any]:
        """``mask(fun, in_shapes, out_shape)`` (the old ``jax.mask``)."""
        if self._mask is None:
            raise Unsupported(f"{self.name} has no mask")
        return self._mask

    @property
    def eval_shape(self) -> Callable[..., Any]:
        if self._eval_shape is None:
            raise Unsupported(f"{self.name} has no eval_shape")
        return self._eval_shape

    @property
    def api(self) -> Any:
        """The implementation's top-level module (``refimpl`` / ``jax``), the home of
        ``random``, ``pmap``, ``new_ref``/``freeze``/``ref``, ``checkpoint``, ``grad``
        (``extras["api"]`` when the implementation gives one)."""
        import importlib

        if "api" in self.extras:
            return self.extras["api"]
        return importlib.import_module(self.lax_.__name__.split(".")[0])

    @property
    def internal(self) -> Any:
        """The functions JAX 0.10.2 keeps out of its public modules that its own
        tests call (``pargmax``, ``pargmin``, ``select_and_gather_add``,
        ``select_and_scatter_add``, ``delta``, ``asarray``, ``random_unwrap``,
        ``random_bits``): JAX's, or refimpl's equivalents (not in refimpl's
        ``__all__`` either)."""
        import types

        if self.name == "jax":
            from jax._src.lax import lax as jax_lax
            from jax._src.lax import parallel, windowed_reductions
            from jax._src.random import prng

            found = {
                "pargmax": parallel.pargmax,
                "pargmin": parallel.pargmin,
                "select_and_gather_add": windowed_reductions._select_and_gather_add,
                "select_and_scatter_add": windowed_reductions._select_and_scatter_add,
                "delta": jax_lax._delta,
                "asarray": jax_lax.asarray,
                "random_unwrap": prng.random_unwrap,
                "random_bits": prng.random_bits,
            }
        else:
            from refimpl.lax import _parallel, _shapes, _windowed
            from refimpl.random import _basic, _keys

            found = {
                "pargmax": _parallel.pargmax,
                "pargmin": _parallel.pargmin,
                "select_and_gather_add": _windowed.select_and_gather_add,
                "select_and_scatter_add": _windowed.select_and_scatter_add,
                "delta": _shapes.delta,
                "asarray": _shapes.asarray,
                "random_unwrap": _keys.random_unwrap,
                "random_bits": _basic.random_bits,
            }
        return types.SimpleNamespace(**found)

    # control flow lives in lax_; these are shortcuts so cases read naturally
    scan = property(lambda self: self.lax_.scan)
    while_loop = property(lambda self: self.lax_.while_loop)
    fori_loop = property(lambda self: self.lax_.fori_loop)
    cond = property(lambda self: self.lax_.cond)
    switch = property(lambda self: self.lax_.switch)

    def has(self, feature: str) -> bool:
        """Whether a dotted feature path (``"lax_.scan"``, ``"mask"``) resolves."""
        try:
            resolve(self, feature)
        except (AttributeError, Unsupported):
            return False
        return True

    # -- arrays and observations --

    def asarray(self, x: Any) -> Any:
        """An array of this implementation holding the NumPy value ``x``."""
        return self.impl.from_numpy(np.asarray(x))

    def to_numpy(self, x: Any) -> np.ndarray:
        return self.impl.to_numpy(x)

    def weak_type(self, x: Any) -> bool:
        return self.impl.weak_type(x)

    def is_deleted(self, x: Any) -> bool:
        return self.impl.is_deleted(x)

    def buffer_pointer(self, x: Any) -> int:
        return self.impl.buffer_pointer(x)

    def trace_count(self, jitted: Any) -> int:
        return self.impl.trace_count(jitted)

    def saved_residuals(
        self, fun: Callable[..., Any], *args: Any, computed_only: bool = False
    ) -> list[Any]:
        """What reverse mode of ``fun(*args)`` saves for the backward pass
        (``jax.ad_checkpoint.saved_residuals``), as an observation: one abstract
        array (shape, dtype, weak type) per residual, in a canonical order
        (by rank, shape, dtype; implementations need not list them in the same
        order), so that a case compares their number, shapes and dtypes. With
        ``computed_only``, only the values computed in the forward pass: not
        those ``from`` an argument, a literal or a constant (JAX keeps an
        argument the backward pass does not need, refimpl drops it; JAX counts
        a Python scalar multiplied in outside a checkpoint, refimpl does not)."""
        from conformance.observe import AvalObs

        found = [
            AvalObs(tuple(map(int, r.shape)), np.dtype(r.dtype), getattr(r, "weak_type", None))
            for r, source in self.impl.saved_residuals(fun, *args)
            if not (computed_only and source.startswith("from "))
        ]
        return sorted(found, key=lambda a: (len(a.shape), a.shape, a.dtype.name, bool(a.weak_type)))

    def capture(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args)``, or the exception it raised as an observation.

        Use it inside a script to observe an error *and* go on (e.g. "the call
        failed, and afterwards the input is not deleted").
        """
        from conformance.observe import ErrorObs

        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # an observation, not a failure of the harness
            # a missing feature stays a skip; NotImplementedError is observed
            # (the runner turns an unexpected one into a skip after comparing)
            if is_unsupported_error(exc, include_not_implemented=False):
                raise
            return ErrorObs.from_exception(exc)

    def recording_warnings(
        self, fn: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, list[str]]:
        """``(fn(*args), [messages of the warnings it emitted])``."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(*args, **kwargs)
        return out, [f"{w.category.__name__}: {w.message}" for w in caught]


def resolve(ns: Namespace, feature: str) -> Any:
    """Follow a dotted path (``"np_.linalg.norm"``) from the namespace."""
    value: Any = ns
    for part in feature.split("."):
        value = getattr(value, part)
        if value is None:
            raise AttributeError(f"{feature} is None")
    return value


def is_unsupported_error(exc: BaseException, include_not_implemented: bool = True) -> bool:
    """Whether an exception means "this implementation lacks the feature".

    That is: ``Unsupported``; ``NotImplementedError``; an ``AttributeError``
    for a missing *module* attribute (``module 'refimpl.lax' has no attribute
    'scan'``), not one raised by a bug inside the implementation; an
    ``ImportError`` of a module that does not exist yet.
    """
    import types

    if isinstance(exc, Unsupported):
        return True
    if isinstance(exc, NotImplementedError):
        return include_not_implemented
    if isinstance(exc, AttributeError):
        obj = getattr(exc, "obj", None)
        if isinstance(obj, (types.ModuleType, Namespace)):
            return True
        return str(exc).startswith("module ")
    return isinstance(exc, ImportError)
