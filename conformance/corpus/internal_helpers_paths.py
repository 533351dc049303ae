"""The functions JAX 0.10.2 keeps out of its public modules that its own test
files call, and refimpl's equivalents (not in refimpl's ``__all__`` either):

* ``pargmax``/``pargmin`` (``jax._src.lax.parallel``): the position along a
  named axis of the member with the largest/smallest value, the first on ties;
* ``_select_and_gather_add``/``_select_and_scatter_add``
  (``jax._src.lax.windowed_reductions``): a max/min pool's derivative halves;
* ``_delta`` and ``asarray`` (``jax._src.lax.lax``);
* ``random_unwrap``/``random_bits`` (``jax._src.random.prng``).

``internal.paths/*``: values, dtypes and weak types, eagerly and under
``jit``/``vmap``. Every case is ``AGREE``: judged by JAX (live or recorded).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, script_case
from conformance.corpus._tables import seen_leaves

_RNG = np.random.RandomState(20)
X = (_RNG.randn(5, 8) * 4).round().astype(np.float32)  # rounded: ties happen
POOL = _RNG.randn(3, 4, 6).astype(np.float32)
TAN = _RNG.randn(3, 4, 6).astype(np.float32)


def _parg(which: str, axis: int, dtype: str):
    def script(ns: Any) -> Any:
        f = getattr(ns.internal, which)
        x = X.astype(dtype)
        return ns.api.vmap(lambda v: f(v, "i"), in_axes=axis, out_axes=None, axis_name="i")(x)

    return script


def _window(which: str, select: str, padding: str, strides: tuple):
    def script(ns: Any) -> Any:
        h = ns.internal
        prim = getattr(ns.api.lax, f"{select}_p")
        dims = (1, 2, 2)
        pads = ns.api.lax.padtype_to_pads(POOL.shape, dims, strides, padding)
        ones = (1, 1, 1)
        gathered = h.select_and_gather_add(TAN, POOL, prim, dims, strides, pads, ones, ones)
        if which == "gather":
            return gathered
        source = np.arange(np.prod(np.shape(gathered)), dtype=np.float32).reshape(
            np.shape(gathered)
        )
        return ns.jit(lambda s, x: h.select_and_scatter_add(s, x, prim, dims, strides, pads))(
            source, POOL
        )

    return script


def _delta(dtype: str, shape: tuple, axes: tuple):
    def script(ns: Any) -> Any:
        return ns.internal.delta(np.dtype(dtype), shape, axes)

    return script


def _asarray(ns: Any) -> Any:
    f = ns.internal.asarray
    made = [f(1.0), f(np.float32(2.0)), f(np.array([1, 2], np.int32)), f(True)]
    eqns = len(ns.api.make_jaxpr(lambda: f(np.float32(2.0)))().eqns)
    return [*seen_leaves(ns, made, lambda v: v), eqns]


def _unwrap_and_bits(ns: Any) -> Any:
    h = ns.internal
    keys = ns.api.random.split(ns.api.random.key(3), 2)
    return [
        h.random_unwrap(keys),
        ns.api.vmap(h.random_unwrap)(keys),
        h.random_bits(keys[0], bit_width=16, shape=(4,)),
        ns.jit(lambda k: h.random_bits(k, bit_width=8, shape=(3,)))(keys[1]),
    ]


def cases() -> Iterator[Case]:
    for which in ("pargmax", "pargmin"):
        for dtype in ("float32", "int32"):
            for axis in (0, 1):
                name = f"internal.paths/{which}/{dtype}/axis{axis}"
                yield script_case(name, _parg(which, axis, dtype))
    for which in ("gather", "scatter"):
        for select in ("ge", "le"):
            for padding, strides in (("VALID", (1, 2, 2)), ("SAME", (1, 1, 1))):
                name = f"internal.paths/select_and_{which}_add/{select}/{padding}"
                yield script_case(name, _window(which, select, padding, strides))
    for dtype, shape, axes in (("float32", (2, 3, 4), (0, 2)), ("bool", (3, 3), (0, 1))):
        yield script_case(f"internal.paths/delta/{dtype}", _delta(dtype, shape, axes))
    yield script_case("internal.paths/asarray", _asarray)
    yield script_case("internal.paths/random_unwrap_and_bits", _unwrap_and_bits)
