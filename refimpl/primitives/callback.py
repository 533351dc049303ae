"""``pure_callback``: a host Python function as an operation with declared results.

``callback`` (static, compared by identity) takes the operands as NumPy
arrays and returns arrays of the declared ``result_avals`` (shapes must
match; a different dtype is cast, as JAX 0.10.2 does). Being pure, it may
be removed when its results are unused and may run any number of times.

* jvp, transpose: none, JAX's ValueErrors (wrap it in a ``custom_jvp``/``custom_vjp``).
* batch: by ``vmap_method``, as JAX: ``sequential``/``sequential_unrolled``
  call it per element and stack; ``expand_dims`` moves batch axes to the
  front and gives unbatched operands a size-1 axis; ``broadcast_all``
  broadcasts every operand to the batch size; None is JAX's
  NotImplementedError.
* PJRT: a host callback inside the compiled program
  (refimpl.backends.pjrt.host_callbacks): the ``refimpl_host_callback``
  custom call, without side effect; at run time the plugin calls
  :func:`call_host` on an XLA thread (with the GIL), in every context (scan,
  cond, while bodies, pmap replicas: each replica calls back). Eager calls
  run on the host directly (refimpl.callbacks.pure_callback).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl.core import ShapedArray
from refimpl.primitives import batch_rules, collectives, structural
from refimpl.primitives.base import Primitive

__all__ = ["call_host", "io_callback_p", "pure_callback_p"]

pure_callback_p = Primitive("pure_callback", multiple_results=True)

# ``io_callback``: the same host call with an effect, so never removed (DCE
# keeps an effectful equation; the pjrt lowering marks it side-effecting and
# chains it with debug callbacks in program order, ordered or not)
io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.effectful = True  # type: ignore[attr-defined]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


def call_host(
    callback: Any,
    values: list[Any],
    result_avals: tuple[ShapedArray, ...],
    name: str = "pure_callback",
) -> list:
    """Run ``callback`` on host values; its flat results checked against
    ``result_avals`` and cast to their dtypes (``name`` is the API messages name)."""
    outs = callback(*values)
    if len(outs) != len(result_avals):
        raise TypeError(
            f"{name}: the callback returned {len(outs)} arrays, "
            f"result_shape_dtypes declares {len(result_avals)}"
        )
    checked = []
    for i, (out, aval) in enumerate(zip(outs, result_avals, strict=True)):
        array = np.asarray(out)
        if array.shape != aval.shape:
            raise TypeError(
                f"{name}: result {i} of the callback has shape {array.shape}, "
                f"result_shape_dtypes declares {aval.shape}"
            )
        checked.append(array.astype(aval.dtype, copy=False))
    return checked


@pure_callback_p.def_abstract_eval
def _abstract_eval(*avals: ShapedArray, callback, result_avals, vmap_method):
    return list(result_avals)


@pure_callback_p.def_impl
def _impl(*values: Any, callback, result_avals, vmap_method):
    return call_host(callback, list(values), result_avals)


@pure_callback_p.def_jvp
def _jvp(primals, tangents, **params):
    raise ValueError(
        "Pure callbacks do not support JVP. Please use `custom_jvp` to use callbacks "
        "while taking gradients."
    )


@pure_callback_p.def_transpose
def _transpose(cts, *args, **params):
    # reached by linear_transpose of a function through one (JAX 0.10.2's words)
    raise ValueError(
        "Pure callbacks do not support transpose. Please use `jax.custom_vjp` to use "
        "callbacks while taking gradients."
    )


@pure_callback_p.def_batch
def _batch(args, dims, *, callback, result_avals, vmap_method):
    size = batch_rules.axis_size_of(args, dims)
    # a reference pmap: once per device, whatever the vmap_method, which the
    # per-device calls keep for a vmap around the pmap (run after it here)
    on_devices = collectives.on_device_axis()
    if not on_devices and vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            f"of {', '.join(repr(m) for m in VMAP_METHODS)}. Got vmap_method={vmap_method!r}."
        )
    front = [a if d is None else batch_rules.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    params = {"callback": callback, "vmap_method": vmap_method}
    if on_devices or vmap_method.startswith("sequential"):
        rows = []
        for i in range(size):
            row = [a if d is None else a[i] for a, d in zip(front, dims, strict=True)]
            rows.append(pure_callback_p.bind(*row, result_avals=result_avals, **params))
        outs = [
            structural.concatenate([structural.expand_dims(r[k], (0,)) for r in rows], 0)
            for k in range(len(result_avals))
        ]
        return outs, [0] * len(outs)
    if vmap_method == "expand_dims":
        ops = [structural.expand_dims(a, (0,)) if d is None else a for a, d in zip(front, dims)]
    else:
        ops = [
            batch_rules.broadcast_batch(a, size, 0) if d is None else a for a, d in zip(front, dims)
        ]
    batched = tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
    outs = pure_callback_p.bind(*ops, result_avals=batched, **params)
    return list(outs), [0] * len(outs)


@pure_callback_p.def_lowering
def _lowering(ctx: Any, *args: Any, callback, result_avals, vmap_method):
    def run(*values: np.ndarray) -> list:
        return call_host(callback, list(values), result_avals)

    # pure: no side effect, so XLA may drop it when its results are unused
    return ctx.host_callback(
        list(args), run, "pure_callback", tuple(result_avals), has_side_effect=False
    )


# --- io_callback -----------------------------------------------------------------------------
#
# * jvp/transpose: JAX's ValueErrors (jvp only reached with a nonzero tangent).
# * batch: unordered, one call per element in order and the results stacked
#   (JAX maps the call with lax.map); ordered, JAX's ValueError (except over
#   a reference pmap's devices: once per device).
# * impl: the host call at execution; pjrt: pure_callback's host callback
#   with a side effect, in the block's effect chain (as debug_callback).


@io_callback_p.def_abstract_eval
def _io_abstract_eval(*avals: ShapedArray, callback, result_avals, ordered):
    return list(result_avals)


@io_callback_p.def_impl
def _io_impl(*values: Any, callback, result_avals, ordered):
    return call_host(callback, list(values), result_avals, "io_callback")


@io_callback_p.def_jvp
def _io_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


@io_callback_p.def_transpose
def _io_transpose(cts, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


@io_callback_p.def_batch
def _io_batch(args, dims, *, callback, result_avals, ordered):
    # a reference pmap's device axis: once per device, in device order, as
    # JAX's pmap runs an ordered one (only a vmap refuses it)
    if ordered and not collectives.on_device_axis():
        raise ValueError("Cannot `vmap` ordered IO callback.")
    size = batch_rules.axis_size_of(args, dims)
    front = [a if d is None else batch_rules.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    rows = []
    for i in range(size):
        row = [a if d is None else a[i] for a, d in zip(front, dims, strict=True)]
        rows.append(
            io_callback_p.bind(*row, callback=callback, result_avals=result_avals, ordered=ordered)
        )
    outs = [
        structural.concatenate([structural.expand_dims(r[k], (0,)) for r in rows], 0)
        for k in range(len(result_avals))
    ]
    return outs, [0] * len(outs)


@io_callback_p.def_lowering
def _io_lowering(ctx: Any, *args: Any, callback, result_avals, ordered):
    def run(*values: np.ndarray) -> list:
        outs = call_host(callback, list(values[:-1]), result_avals, "io_callback")
        return [*outs, np.zeros((), np.uint8)]  # the last operand/result order the call

    # a side effect: XLA keeps it even when its results are unused, and the
    # extra u8 chains it after the block's previous effects (debug_callback's
    # chain: lowering.ModuleBuilder.effect_dependency), ordered or not
    u8 = ShapedArray((), np.dtype(np.uint8))
    dependency = ctx.module.effect_dependency()
    *outs, done = ctx.host_callback(
        [*args, dependency], run, "io_callback", (*result_avals, u8), has_side_effect=True,
        avals_in=[*ctx.avals_in, u8],
    )  # fmt: skip
    ctx.module.effect_done([done])
    return outs
