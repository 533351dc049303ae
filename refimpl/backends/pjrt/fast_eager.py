"""Eager work on PJRT arrays as cached fast-path jits (docs/semantics.md 16.1).

Imported right after ``backend`` by the backend registry (``register(...,
then=...)`` in ``refimpl/backends/__init__.py``); registers

* the PJRT array with ``refimpl.backends.fast_functions``: an eager call of a
  ``refimpl.numpy`` or ``refimpl.lax`` function on PJRT arrays is one
  ``jit(backend="pjrt")`` per function and static arguments;
  once registered, the exported functions are replaced by C++
  ``EagerFunction`` objects that serve the cache hits of the Python wrapper
  without a Python frame (``fast_functions.install_native_entry``);
* :func:`eager_bind` with ``Primitive.bind``: a primitive applied to PJRT
  arrays outside a trace runs the (primitive, params) fast jit of
  ``backend.eager_dispatch`` before any abstract evaluation.
"""

from __future__ import annotations

import types
from typing import Any

from refimpl import tracing
from refimpl.backends import fast_functions
from refimpl.backends.pjrt import backend
from refimpl.backends.pjrt.arrays import PjrtArray
from refimpl.backends.pjrt.runtime import native_module
from refimpl.backends.ref import eager

_BIND_OPERANDS = (PjrtArray, int, float, bool, complex, tracing.TypedScalar)


def eager_bind(primitive: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """``primitive.bind(*args, **params)`` outside a trace with a PJRT operand,
    by the (primitive, params) fast jit, a C++ hit once the operand signature
    is known. ``NotImplemented`` (the normal path: abstract evaluation, then
    ``backend.eager_dispatch``, which makes the jit) on the first use of a
    (primitive, params), for other operand types, or when the jit fails, so
    that errors are the normal path's, naming the primitive."""
    for arg in args:
        if type(arg) not in _BIND_OPERANDS:
            return NotImplemented
    jitted = backend._eager_jitted.get((primitive, backend._freeze(params)))
    if jitted is None:
        return NotImplemented
    try:
        outs = jitted(*[backend._fast_operand(arg) for arg in args])
    except Exception:
        return NotImplemented
    return list(outs) if primitive.multiple_results else outs


def _make_jit(fun: Any) -> Any:
    fast = backend.make_fast_jitted(fun, {"backend": "pjrt"})
    fast._jitted.honours_disable_jit = False  # an eager numpy function, not a user's jit
    return fast


def _native_entry(wrapper: Any) -> Any:
    """The C++ hit path in front of a ``fast_eager`` wrapper (bindings/fast_eager.h)."""
    return _pjrt.EagerFunction(
        wrapper,
        wrapper._fast_cache,
        PjrtArray,
        fast_functions._ARRAY,
        _make_jit,
        tracing._stack,
        tracing._builders,
    )


def _bind_method(function: Any, instance: Any, owner: type | None = None) -> Any:
    """As a class attribute, bind ``self`` like the plain function it replaces."""
    return function if instance is None else types.MethodType(function, instance)


_pjrt = native_module()
_pjrt.EagerFunction.__get__ = _bind_method
# Functions are atomic for copy/deepcopy (a config holding rnp.tanh is copied);
# so is the entry that replaces one.
_pjrt.EagerFunction.__copy__ = lambda self: self
_pjrt.EagerFunction.__deepcopy__ = lambda self, memo: self

eager.register_eager_binder(PjrtArray, eager_bind)
fast_functions.register(PjrtArray, _make_jit)
fast_functions.install_native_entry(_native_entry)
