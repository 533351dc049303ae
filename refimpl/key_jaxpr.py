"""A traced program's typed keys as JAX's jaxpr shows them (``make_jaxpr``).

refimpl traces a typed key array (``refimpl.random.PRNGKeyArray``) as its
``uint32[*shape, w]`` key data: the program a ``jit`` compiles, and the one
the pjrt fast path runs, hold only the data, and the structural operations
on keys are the same operations on the data with the key-word axis kept last
(``transpose[permutation=(1, 0, 2)]`` for ``keys.T``). JAX 0.10.2's jaxpr
has variables of the key type itself (``a:key<fry>[3,4,5]``), structural
equations on them with the logical parameters (``permutation=(1, 0)``), and
``random_wrap``/``random_unwrap`` equations where key data becomes keys or
keys their data.

:func:`with_keys` builds that view of a program, for showing only (the
program that runs is unchanged): the variables known to hold keys are the
inputs and outputs that were key arrays in the function's signature, and
what a structural equation (:data:`_RULES`) makes from keys, inside nested
``jit``, ``scan``, ``while`` and ``cond`` programs too. Any other use of a
key variable reads its data through a ``random_unwrap``; an output that
must be a key but holds data gets a ``random_wrap``. A view keeps its
program (``physical``), which is what evaluating it runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from refimpl import pytree
from refimpl.core import Atom, Eqn, Literal, Program, ShapedArray, Var
from refimpl.random import KeyDtype, PRNGKeyArray

__all__ = ["KeyView", "leaf_key_types", "with_keys"]

Keys = list[KeyDtype | None]  # per variable: its key type, or None for an array


class _ShownPrimitive:
    """A primitive of the view only (``random_wrap``, ``random_unwrap``):
    the program that runs has no equation there (the data is the key)."""

    multiple_results = False

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


random_wrap_p = _ShownPrimitive("random_wrap")
random_unwrap_p = _ShownPrimitive("random_unwrap")


@dataclasses.dataclass
class KeyView(Program):
    """A program's view with typed keys (:func:`with_keys`); ``physical`` is
    the program itself, which ``eval_jaxpr`` runs."""

    physical: Program | None = None


def with_keys(program: Program, in_keys: Keys, out_keys: Keys) -> KeyView:
    """The view of ``program`` whose inputs ``in_keys`` and outputs
    ``out_keys`` (per position, a key type or None) are typed keys."""
    shown, _ = _show(program, in_keys, out_keys)
    view = KeyView(**{f.name: getattr(shown, f.name) for f in dataclasses.fields(Program)})
    # the program itself as a plain Program (not make_jaxpr's ClosedJaxpr,
    # which answers with this view)
    view.physical = Program(
        **{f.name: getattr(program, f.name) for f in dataclasses.fields(Program)}
    )
    return view


def _key_var(data: Var, dtype: KeyDtype) -> Var:
    # the key-word axis is the last of the data's
    return Var(ShapedArray(tuple(data.aval.shape[:-1]), dtype))  # type: ignore[arg-type]


def _is_data_of(aval: Any, dtype: KeyDtype) -> bool:
    shape: tuple[int, ...] = tuple(getattr(aval, "shape", ()))
    return bool(shape) and shape[-1] == dtype.width


class _Scope:
    """One program's rewriting: the key variable of each data variable that
    holds keys, and the view's equations so far."""

    def __init__(self) -> None:
        self.eqns: list[Eqn] = []
        self.keys: dict[int, tuple[Var, KeyDtype]] = {}  # data var id -> (key var, type)
        self.unwrapped: set[int] = set()

    def key_of(self, atom: Atom) -> KeyDtype | None:
        return self.keys[atom.id][1] if isinstance(atom, Var) and atom.id in self.keys else None

    def as_key(self, atom: Atom) -> Atom:
        return self.keys[atom.id][0] if isinstance(atom, Var) and atom.id in self.keys else atom

    def as_data(self, atom: Atom) -> Atom:
        """``atom``'s data: a key variable is read through a ``random_unwrap``
        (once; its output is the program's own data variable)."""
        if isinstance(atom, Var) and atom.id in self.keys and atom.id not in self.unwrapped:
            self.unwrapped.add(atom.id)
            self.eqns.append(Eqn(random_unwrap_p, [self.keys[atom.id][0]], [atom], {}))
        return atom

    def bind_key(self, data: Var, dtype: KeyDtype) -> Var:
        key = _key_var(data, dtype)
        self.keys[data.id] = (key, dtype)
        return key

    def as_type(self, atom: Atom, dtype: KeyDtype | None) -> Atom:
        """``atom`` as a key of ``dtype`` (a ``random_wrap`` of data), or as
        data when ``dtype`` is None."""
        if dtype is None or not _is_data_of(atom.aval, dtype):
            return self.as_data(atom)
        if self.key_of(atom) == dtype:
            return self.as_key(atom)
        data = self.as_data(atom)
        key = _key_var(data, dtype)  # type: ignore[arg-type]
        tag = dtype.name[4:-1]  # "key<fry>" -> "fry", as JAX prints the impl
        self.eqns.append(Eqn(random_wrap_p, [data], [key], {"impl": tag}))
        return key


def _show(program: Program, in_keys: Keys, out_keys: Keys | None) -> tuple[Program, Keys]:
    """``program``'s view with inputs ``in_keys``; outputs as ``out_keys``
    when given, else keys where the equations make them. Returns the view
    and its outputs' key types."""
    scope = _Scope()
    in_vars = [
        v if k is None or not _is_data_of(v.aval, k) else scope.bind_key(v, k)
        for v, k in zip(program.in_vars, in_keys, strict=True)
    ]
    for eqn in program.eqns:
        _eqn(eqn, scope)
    if out_keys is None:
        out_keys = [scope.key_of(a) for a in program.out_vars]
    outs = [scope.as_type(a, k) for a, k in zip(program.out_vars, out_keys, strict=True)]
    shown: Keys = [o.aval.dtype if isinstance(o.aval.dtype, KeyDtype) else None for o in outs]
    view = dataclasses.replace(program, in_vars=in_vars, eqns=scope.eqns, out_vars=outs)
    return view, shown


def _eqn(eqn: Eqn, scope: _Scope) -> None:
    keys = [scope.key_of(a) for a in eqn.inputs]
    nested = _NESTED.get(eqn.primitive.name)
    if nested is not None and any(k is not None for k in keys):
        nested(eqn, keys, scope)
        return
    rule = _RULES.get(eqn.primitive.name)
    dtype = next((k for k in keys if k is not None), None)
    shown = None
    single = len(eqn.outputs) == 1
    if (
        rule is not None
        and dtype is not None
        and single
        and _is_data_of(eqn.outputs[0].aval, dtype)
    ):
        shown = rule(eqn, keys, dtype)
    if shown is None:
        scope.eqns.append(dataclasses.replace(eqn, inputs=[scope.as_data(a) for a in eqn.inputs]))
        return
    inputs, params = shown
    out = scope.bind_key(eqn.outputs[0], dtype)  # type: ignore[arg-type]
    scope.eqns.append(Eqn(eqn.primitive, [scope.as_key(a) for a in inputs], [out], params))


# --- structural equations on keys ------------------------------------------------------
# rule(eqn, operand key types, the key type) -> (the view's operands, its
# logical parameters), or None when the equation is not one on whole keys


def _all_keys(eqn: Eqn, keys: Keys, dtype: KeyDtype, n: int | None = None) -> bool:
    n = len(eqn.inputs) if n is None else n
    return all(k == dtype for k in keys[:n]) and all(k is None for k in keys[n:])


def _last(eqn: Eqn) -> int:
    return len(eqn.inputs[0].aval.shape) - 1


def _transpose(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    perm = tuple(eqn.params["permutation"])
    if not _all_keys(eqn, keys, dtype) or perm[-1] != _last(eqn):
        return None
    return [eqn.inputs[0]], {**eqn.params, "permutation": perm[:-1]}


def _reshape(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    # row-major: the last axis kept whole keeps each key's words together
    sizes = tuple(eqn.params["new_sizes"])
    if not _all_keys(eqn, keys, dtype) or eqn.params.get("dimensions") is not None:
        return None
    if not sizes or sizes[-1] != dtype.width:
        return None
    return [eqn.inputs[0]], {**eqn.params, "new_sizes": sizes[:-1]}


def _broadcast_in_dim(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    shape = tuple(eqn.params["shape"])
    dims = tuple(eqn.params["broadcast_dimensions"])
    if not _all_keys(eqn, keys, dtype) or not dims or dims[-1] != len(shape) - 1:
        return None
    return [eqn.inputs[0]], {
        **eqn.params,
        "shape": shape[:-1],
        "broadcast_dimensions": dims[:-1],
    }


def _squeeze_or_rev(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    dims = tuple(int(d) % (_last(eqn) + 1) for d in eqn.params["dimensions"])
    if not _all_keys(eqn, keys, dtype) or _last(eqn) in dims:
        return None
    return [eqn.inputs[0]], {**eqn.params, "dimensions": dims}


def _slice(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    p = eqn.params
    strides = p.get("strides")
    if not _all_keys(eqn, keys, dtype) or p["start_indices"][-1] != 0:
        return None
    if p["limit_indices"][-1] != dtype.width or (strides and strides[-1] != 1):
        return None
    return [eqn.inputs[0]], {
        **p,
        "start_indices": tuple(p["start_indices"][:-1]),
        "limit_indices": tuple(p["limit_indices"][:-1]),
        "strides": tuple(strides[:-1]) if strides else strides,
    }


def _at_word_zero(atom: Atom) -> bool:
    return isinstance(atom, Literal) and int(atom.value) == 0


def _dynamic_slice(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    sizes = tuple(eqn.params["slice_sizes"])
    if not _all_keys(eqn, keys, dtype, 1) or not _at_word_zero(eqn.inputs[-1]):
        return None
    if sizes[-1] != dtype.width:
        return None
    inputs = [eqn.inputs[0], *eqn.inputs[1:-1]]
    return inputs, {**eqn.params, "slice_sizes": sizes[:-1]}


def _dynamic_update_slice(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    if not _all_keys(eqn, keys, dtype, 2) or not _at_word_zero(eqn.inputs[-1]):
        return None
    return [eqn.inputs[0], eqn.inputs[1], *eqn.inputs[2:-1]], dict(eqn.params)


def _concatenate(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    if not _all_keys(eqn, keys, dtype) or eqn.params["dimension"] % (_last(eqn) + 1) == _last(eqn):
        return None
    return list(eqn.inputs), dict(eqn.params)


def _select_n(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    # a scalar predicate only: an array one is broadcast over the key words
    pred = eqn.inputs[0]
    if keys[0] is not None or pred.aval.shape or not all(k == dtype for k in keys[1:]):
        return None
    return [pred, *eqn.inputs[1:]], dict(eqn.params)


def _copy(eqn: Eqn, keys: Keys, dtype: KeyDtype) -> Any:
    return ([eqn.inputs[0]], dict(eqn.params)) if _all_keys(eqn, keys, dtype) else None


_RULES: dict[str, Callable[[Eqn, Keys, KeyDtype], Any]] = {
    "transpose": _transpose,
    "reshape": _reshape,
    "broadcast_in_dim": _broadcast_in_dim,
    "squeeze": _squeeze_or_rev,
    "rev": _squeeze_or_rev,
    "slice": _slice,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "concatenate": _concatenate,
    "select_n": _select_n,
    "copy": _copy,
    "copy_p": _copy,
}


# --- equations holding programs ----------------------------------------------------------


def _outputs(eqn: Eqn, out_keys: Keys, scope: _Scope) -> list[Var]:
    return [
        v if k is None else scope.bind_key(v, k) for v, k in zip(eqn.outputs, out_keys, strict=True)
    ]


def _jit(eqn: Eqn, keys: Keys, scope: _Scope) -> None:
    inner, out_keys = _show_in(eqn.params["program"], keys, None)
    inputs = [scope.as_key(a) for a in eqn.inputs]
    outs = _outputs(eqn, out_keys, scope)
    scope.eqns.append(Eqn(eqn.primitive, inputs, outs, {**eqn.params, "program": inner}))


def _scan(eqn: Eqn, keys: Keys, scope: _Scope) -> None:
    p = eqn.params
    n_consts, n_carry = p["num_consts"], p["num_carry"]
    carry = keys[n_consts : n_consts + n_carry]
    # the ys are stacked as the body makes them: keys where it makes keys
    ys = _show_in(p["body"], keys, None)[1][n_carry:]
    body, _ = _show_in(p["body"], keys, [*carry, *ys])
    inputs = [scope.as_key(a) for a in eqn.inputs]
    outs = _outputs(eqn, [*carry, *ys], scope)
    scope.eqns.append(Eqn(eqn.primitive, inputs, outs, {**p, "body": body}))


def _while(eqn: Eqn, keys: Keys, scope: _Scope) -> None:
    p = eqn.params
    nc, nb = p["cond_num_consts"], p["body_num_consts"]
    carry = keys[nc + nb :]
    cond, _ = _show_in(p["cond"], [*keys[:nc], *carry], [None])
    body, _ = _show_in(p["body"], keys[nc:], carry)
    inputs = [scope.as_key(a) for a in eqn.inputs]
    outs = _outputs(eqn, carry, scope)
    scope.eqns.append(Eqn(eqn.primitive, inputs, outs, {**p, "cond": cond, "body": body}))


def _cond(eqn: Eqn, keys: Keys, scope: _Scope) -> None:
    branches = eqn.params["branches"]
    operands = keys[1:]
    made = [_show_in(b, operands, None)[1] for b in branches]
    # an output is a key where every branch makes one of the same type
    out_keys = [ks[0] if all(k == ks[0] for k in ks) else None for ks in zip(*made, strict=True)]
    shown = tuple(_show_in(b, operands, out_keys)[0] for b in branches)
    inputs = [scope.as_data(eqn.inputs[0]), *(scope.as_key(a) for a in eqn.inputs[1:])]
    outs = _outputs(eqn, out_keys, scope)
    scope.eqns.append(Eqn(eqn.primitive, inputs, outs, {**eqn.params, "branches": shown}))


def _show_in(program: Program, in_keys: Keys, out_keys: Keys | None) -> tuple[Program, Keys]:
    return _show(program, in_keys, out_keys)


_NESTED: dict[str, Callable[[Eqn, Keys, _Scope], None]] = {
    "jit": _jit,
    "scan": _scan,
    "while": _while,
    "cond": _cond,
}


def leaf_key_types(treedef: Any, count: int) -> Keys:
    """Per flat leaf of ``treedef`` (a transformation's tree, whose key
    arrays are nodes over their data), the key type of the key array it is
    the data of, or None."""

    found: Keys = [None] * count
    # each key array's data leaf numbered by its position; keys are leaves to tree_leaves
    numbered = pytree.tree_unflatten(treedef, list(range(count)))
    for leaf in pytree.tree_leaves(numbered, is_leaf=pytree.is_extended_leaf):
        if isinstance(leaf, PRNGKeyArray):
            found[leaf._data] = leaf.dtype
    return found


def eval_view(
    view: KeyView, consts: Sequence[Any], args: Sequence[Any], run: Callable[..., list[Any]]
) -> list[Any]:
    """``run`` (``eval_jaxpr``) of the program under ``view``: key array
    arguments given as their data, the outputs the view types as keys made
    key arrays of their data."""
    data = [a._data if isinstance(a, PRNGKeyArray) else a for a in args]
    outs = run(view.physical, consts, *data)
    return [
        v.aval.dtype.wrap(o) if isinstance(v.aval.dtype, KeyDtype) else o
        for v, o in zip(view.out_vars, outs, strict=True)
    ]
