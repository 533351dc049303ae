"""The state primitives behind ``Ref`` (``refimpl.ref``): ``get``, ``swap``, ``addupdate``.

Inside a trace a ref's current value is threaded through the program (see
``refimpl.ref``), so each primitive takes the ref's value ``x`` and returns a
value; ``indexer`` is a static basic index (ints, slices, ``...``, ``None``)
in the hashable form of :func:`encode_indexer`:

* ``get(x)[indexer] = x[idx]``;
* ``swap(x, v)[indexer] = x`` with ``x[idx]`` replaced by ``v`` (the new value
  of the ref); the old value is a ``get`` before it;
* ``addupdate(x, v)[indexer] = x`` with ``v`` added at ``x[idx]``.

``v`` must have exactly the shape of ``x[idx]`` and ``x``'s dtype, as JAX's
``swap``. Listings show them as ``c:f32[2] <- a[0:2]``, ``d:f32[3] = a[...] <- c``
and ``e:f32[3] = d[1] += b``. All three are linear in ``(x, v)``; their JVPs
apply them to the tangents, their transposes are each other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, batch_rules
from refimpl.primitives.base import Primitive
from refimpl.primitives.decompositions import composite_lowering
from refimpl.transforms.ad_util import is_undefined_primal

__all__ = ["addupdate_p", "decode_indexer", "encode_indexer", "get_p", "swap_p"]


# --- static indexers ---------------------------------------------------------------------------


def _is_int(item: Any) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _slice_part(part: Any) -> bool:
    return part is None or _is_int(part)


def encode_indexer(idx: Any) -> tuple | None:
    """``idx`` as a hashable tuple, or None when it is not a static basic index.

    An int stays an int, ``...`` is ``"..."``, ``None`` is ``None`` and a slice
    is ``("s", start, stop, step)``.
    """
    items = idx if isinstance(idx, tuple) else (idx,)
    out: list[Any] = []
    for item in items:
        if item is Ellipsis:
            out.append("...")
        elif item is None:
            out.append(None)
        elif _is_int(item):
            out.append(int(item))
        elif isinstance(item, slice) and all(
            _slice_part(p) for p in (item.start, item.stop, item.step)
        ):
            parts = (item.start, item.stop, item.step)
            out.append(("s", *(None if p is None else int(p) for p in parts)))
        else:
            return None
    return tuple(out)


def decode_indexer(indexer: tuple) -> tuple:
    """The NumPy index an encoded indexer stands for."""
    return tuple(
        Ellipsis if item == "..." else slice(*item[1:]) if isinstance(item, tuple) else item
        for item in indexer
    )


def format_indexer(indexer: tuple) -> str:
    def one(item: Any) -> str:
        if item == "...":
            return "..."
        if item is None:
            return "None"
        if isinstance(item, tuple):
            start, stop, step = item[1:]
            text = f"{'' if start is None else start}:{'' if stop is None else stop}"
            return text + (f":{step}" if step is not None else "")
        return str(item)

    return ", ".join(one(i) for i in indexer) or "()"


def indexed_shape(name: str, shape: tuple[int, ...], indexer: tuple) -> tuple[int, ...]:
    """The shape of ``x[idx]`` for ``x`` of ``shape`` (no data is touched)."""
    view = np.broadcast_to(np.zeros((), np.int8), shape)
    try:
        return tuple(view[decode_indexer(indexer)].shape)
    except IndexError as error:
        message = f"{name}: index [{format_indexer(indexer)}] of shape {shape}: {error}"
        raise IndexError(message) from None


# --- get -----------------------------------------------------------------------------------------

get_p = Primitive("get")


@get_p.def_abstract_eval
def _get_abstract_eval(x: ShapedArray, *, indexer: tuple) -> ShapedArray:
    return x.update(shape=indexed_shape("get", x.shape, indexer))


@get_p.def_impl
def _get_impl(x: np.ndarray, *, indexer: tuple) -> np.ndarray:
    return np.array(np.asarray(x)[decode_indexer(indexer)], copy=True)


@get_p.def_jvp
def _get_jvp(primals, tangents, *, indexer):
    ans = get_p.bind(primals[0], indexer=indexer)
    # unreachable from the public API: the jvp trace calls a rule only when some operand has a
    # nonzero tangent (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(tangents[0]):  # pragma: no cover
        return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
    return ans, get_p.bind(tangents[0], indexer=indexer)


@get_p.def_transpose
def _get_transpose(ct, x, *, indexer):
    """The cotangent added into zeros at the index."""
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [ad_helpers.Zero(x.aval)]
    return [addupdate_p.bind(ad_helpers.zeros(x.aval), ct, indexer=indexer)]


@get_p.def_batch
def _get_batch(args, dims, *, indexer):
    (x,), (bd,) = args, dims
    x = batch_rules.bdim_to(x, bd, batch_rules.axis_size_of(args, dims), 0)
    return get_p.bind(x, indexer=_batched(indexer)), 0


def _get_composite(x: Any, *, indexer: tuple) -> Any:
    return x if all(item == "..." for item in indexer) else x[decode_indexer(indexer)]


get_p.def_lowering(composite_lowering("get", _get_composite, complex_ok=True))


def _batched(indexer: tuple) -> tuple:
    return (("s", None, None, None), *indexer)


# --- swap and addupdate ------------------------------------------------------------------------


def _update_abstract_eval(name: str):
    def rule(x: ShapedArray, v: ShapedArray, *, indexer: tuple) -> ShapedArray:
        if v.dtype != x.dtype:
            raise ValueError(
                f"Invalid dtype for `{name}`. Ref dtype: {x.dtype.name}. Value dtype: "
                f"{v.dtype.name}."
            )
        expected = indexed_shape(name, x.shape, indexer)
        if tuple(v.shape) != expected:
            raise ValueError(
                f"Invalid shape for `{name}`. Ref shape: {x.shape}. Expected shape: "
                f"{expected}. Value shape: {tuple(v.shape)}."
            )
        return x

    return rule


swap_p = Primitive("swap")
addupdate_p = Primitive("addupdate")
swap_p.def_abstract_eval(_update_abstract_eval("swap"))
addupdate_p.def_abstract_eval(_update_abstract_eval("addupdate"))


@swap_p.def_impl
def _swap_impl(x: np.ndarray, v: np.ndarray, *, indexer: tuple) -> np.ndarray:
    out = np.array(x, copy=True)
    out[decode_indexer(indexer)] = v
    return out


@addupdate_p.def_impl
def _addupdate_impl(x: np.ndarray, v: np.ndarray, *, indexer: tuple) -> np.ndarray:
    out = np.array(x, copy=True)
    out[decode_indexer(indexer)] += v
    return out


def _update_jvp(primitive: Primitive):
    def rule(primals, tangents, *, indexer):
        x, v = primals
        ans = primitive.bind(x, v, indexer=indexer)
        tx, tv = tangents
        # unreachable from the public API: the jvp trace calls a rule only when some operand has a
        # nonzero tangent (ad.JVPTrace.process_primitive)
        if ad_helpers.is_zero(tx) and ad_helpers.is_zero(tv):  # pragma: no cover
            return ans, ad_helpers.zero_tangent(ad_helpers.aval_of(ans))
        tx = ad_helpers.instantiate(tx, ad_helpers.tangent_aval(ad_helpers.aval_of(x)))
        tv = ad_helpers.instantiate(tv, ad_helpers.tangent_aval(ad_helpers.aval_of(v)))
        return ans, primitive.bind(tx, tv, indexer=indexer)

    return rule


swap_p.def_jvp(_update_jvp(swap_p))
addupdate_p.def_jvp(_update_jvp(addupdate_p))


@swap_p.def_transpose
def _swap_transpose(ct, x, v, *, indexer):
    """``x`` gets the cotangent with the index zeroed (overwritten); ``v`` gets
    the cotangent at the index."""
    x_undef, v_undef = is_undefined_primal(x), is_undefined_primal(v)
    v_aval = ad_helpers.aval_of(v)
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [
            ad_helpers.Zero(x.aval) if x_undef else None,
            ad_helpers.Zero(v_aval) if v_undef else None,
        ]
    ct_x = swap_p.bind(ct, ad_helpers.zeros(v_aval), indexer=indexer) if x_undef else None
    ct_v = get_p.bind(ct, indexer=indexer) if v_undef else None
    return [ct_x, ct_v]


@addupdate_p.def_transpose
def _addupdate_transpose(ct, x, v, *, indexer):
    """``x`` gets the cotangent; ``v`` the cotangent at the index."""
    x_undef, v_undef = is_undefined_primal(x), is_undefined_primal(v)
    v_aval = ad_helpers.aval_of(v)
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [
            ad_helpers.Zero(x.aval) if x_undef else None,
            ad_helpers.Zero(v_aval) if v_undef else None,
        ]
    return [ct if x_undef else None, get_p.bind(ct, indexer=indexer) if v_undef else None]


def _update_batch(primitive: Primitive):
    def rule(args, dims, *, indexer):
        size = batch_rules.axis_size_of(args, dims)
        x = batch_rules.bdim_to(args[0], dims[0], size, 0)
        v = batch_rules.bdim_to(args[1], dims[1], size, 0)
        return primitive.bind(x, v, indexer=_batched(indexer)), 0

    return rule


swap_p.def_batch(_update_batch(swap_p))
addupdate_p.def_batch(_update_batch(addupdate_p))


def _is_whole(indexer: tuple) -> bool:
    return all(item == "..." for item in indexer)


def _swap_composite(x: Any, v: Any, *, indexer: tuple) -> Any:
    # The whole ref is the common case (a training step's state): no scatter.
    return v if _is_whole(indexer) else x.at[decode_indexer(indexer)].set(v)


def _addupdate_composite(x: Any, v: Any, *, indexer: tuple) -> Any:
    return x + v if _is_whole(indexer) else x.at[decode_indexer(indexer)].add(v)


swap_p.def_lowering(composite_lowering("swap", _swap_composite, complex_ok=True))
addupdate_p.def_lowering(composite_lowering("addupdate", _addupdate_composite, complex_ok=True))


# --- listings ------------------------------------------------------------------------------------


def _pp_get(outs: str, args: list[str], params: dict[str, Any]) -> str:
    return f"{outs} <- {args[0]}[{format_indexer(params['indexer'])}]"


def _pp_update(op: str):
    def rule(outs: str, args: list[str], params: dict[str, Any]) -> str:
        text = f"{args[0]}[{format_indexer(params['indexer'])}] {op} {args[1]}"
        return f"{outs} = {text}" if outs else text  # on a Ref, addupdate has no output

    return rule


get_p.pp_rule = _pp_get  # type: ignore[attr-defined]
swap_p.pp_rule = _pp_update("<-")  # type: ignore[attr-defined]
addupdate_p.pp_rule = _pp_update("+=")  # type: ignore[attr-defined]
