"""JAX 0.10.2's jaxpr text for refimpl's programs: what ``str`` of a
``make_jaxpr`` result (and of one of its equations) prints.

refimpl's own listing (``refimpl.core.pretty_print``) marks weak types and
shows every parameter of refimpl's primitives. JAX's text, which user
programs and JAX's tests read, differs in three ways, all handled here:

* types without the weak mark (``f32[]``); literals as ``str`` of the value;
  an output no later equation reads (of the top-level jaxpr) is ``_``;
* parameters space separated, values as ``str`` (``new_dtype=int32``,
  ``name=<lambda>``), under JAX's names (a jit's sub-program is ``jaxpr=``,
  a scan's ``jaxpr=``, a while's ``body_jaxpr=``/``cond_jaxpr=``), with
  the parameters JAX's printing rules hide left out (``broadcast_in_dim``'s
  ``shape``, a trivial ``broadcast_dimensions``, ``out_dtype=None`` ...);
* the layout of JAX's pretty printer (a Wadler/Lindig document laid out in
  80 columns): a group of text stays on one line when all of it fits in the
  rest of the line, else its breaks become newlines. So a small sub-jaxpr
  prints on one line, a long equation puts one parameter per line, and a
  jaxpr used by two equations is printed once, first, as ``let name = ...
  in``.

Only the text is JAX's: the equations are refimpl's primitives (which may
differ from the ones JAX's tracing emits, docs/semantics.md 15.5).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from refimpl import core, dtypes
from refimpl.core import Eqn, Literal, Program, Var, _letters, _print_precision
from refimpl.primitives.ref_ops import format_indexer

WIDTH = 80  # JAX's default format width

# --- documents -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Break:
    text: str  # printed when its group is flat; a newline otherwise


@dataclass(frozen=True)
class _Concat:
    children: tuple[Any, ...]


@dataclass(frozen=True)
class _Group:
    child: Any


@dataclass(frozen=True)
class _Nest:
    n: int
    child: Any


def _cat(*docs: Any) -> _Concat:
    return _Concat(tuple(docs))


def _join(sep: Any, docs: Sequence[Any]) -> _Concat:
    out: list[Any] = []
    for i, doc in enumerate(docs):
        if i:
            out.append(sep)
        out.append(doc)
    return _Concat(tuple(out))


def _flat_width(doc: Any, budget: int) -> int:
    """How much of ``budget`` columns ``doc`` leaves when printed on one line
    (negative: it does not fit). Stops early once it cannot fit."""
    stack = [doc]
    while stack and budget >= 0:
        d = stack.pop()
        if isinstance(d, (_Text, _Break)):
            budget -= len(d.text)
        elif isinstance(d, _Concat):
            stack.extend(reversed(d.children))
        else:  # group or nest: flat all the way down
            stack.append(d.child)
    return budget


def layout(doc: Any, width: int = WIDTH) -> str:
    """The text of ``doc``: each group flat when the whole group fits in
    what is left of the line (JAX's rule: only the group itself is measured,
    not what follows it), else its own breaks are newlines at its indent."""
    lines: list[str] = []
    line = ""
    agenda: list[tuple[int, bool, Any]] = [(0, False, doc)]  # (indent, flat, doc)
    while agenda:
        indent, flat, d = agenda.pop()
        if isinstance(d, _Text):
            line += d.text
        elif isinstance(d, _Concat):
            agenda.extend((indent, flat, c) for c in reversed(d.children))
        elif isinstance(d, _Break):
            if flat:
                line += d.text
            else:
                lines.append(line)
                line = " " * indent
        elif isinstance(d, _Nest):
            agenda.append((indent + d.n, flat, d.child))
        else:  # a group decides for itself
            fits = _flat_width(d, width - len(line)) >= 0
            agenda.append((indent, fits, d.child))
    lines.append(line)
    return "\n".join(lines)


# --- names -------------------------------------------------------------------------------


class _Names:
    """Variable names in first-use order (a, b, ..., z, ba, ...), skipping
    the names of shared jaxprs; some given up front (``_`` for dropped
    outputs, a jit body's variables named as the call's)."""

    def __init__(self, given: dict[int, str] | None = None) -> None:
        self.names: dict[int, str] = dict(given or {})
        self.reserved: set[str] = set()
        self.count = 0

    def __call__(self, var: Var) -> str:
        if var.id not in self.names:
            while (name := _letters(self.count)) in self.reserved:
                self.count += 1
            self.count += 1
            self.names[var.id] = name
        return self.names[var.id]

    def suggest(self, inner: Sequence[Any], outer: Sequence[Any]) -> None:
        """Name ``inner`` variables as the ``outer`` atoms they stand for (as
        JAX prints a jit's body): each outer variable lends its name once."""
        if len(inner) != len(outer):
            return
        used: set[int] = set()
        for v, like in zip(inner, outer, strict=True):
            if (
                isinstance(like, Var)
                and isinstance(v, Var)
                and like.id not in used
                and v.id not in self.names
            ):
                used.add(like.id)
                self.names[v.id] = self(like)


# --- parameters: JAX's names and what its printing rules hide ------------------------------


def _str_value(value: Any) -> str:
    if isinstance(value, np.dtype):
        return "float0" if value == dtypes.float0 else value.name
    if isinstance(value, frozenset):
        return "frozenset({" + ", ".join(repr(e) for e in sorted(value)) + "})"
    # as JAX's: an object's address is masked, so the text is reproducible
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)), str(value))


def _fun_name(fun: Any) -> str:
    return str(getattr(fun, "__name__", fun))


def _jit_params(eqn: Eqn, names: _Names, shared: dict[int, str]) -> list[tuple[str, Any]]:
    program = eqn.params["program"]
    if id(program) not in shared:
        names.suggest(program.in_vars, eqn.inputs)
        names.suggest(program.out_vars, eqn.outputs)
    rest = {
        k: v
        for k, v in eqn.params.items()
        if k not in ("name", "program") and v not in (None, (), False, {})
    }
    return [("name", eqn.params.get("name")), *sorted({**rest, "jaxpr": program}.items())]


_PRIMITIVE_NAMES = {"checkpoint": "remat2"}
# parameters JAX's primitives have and print, refimpl's have not (placement
# is not refimpl's business): printed with the value JAX's tracing gives them
_SHOWN_DEFAULTS: dict[str, dict[str, Any]] = {
    "reduce_sum": {"out_sharding": None},
    "iota": {"sharding": None},
    "reshape": {"dimensions": None, "sharding": None},
    "conv_general_dilated": {"out_sharding": None},
}


def _custom_params(prim: str, params: dict[str, Any]) -> list[tuple[str, Any]]:
    """A custom_jvp/custom_vjp call as JAX prints it: ``name=`` the
    function's name first, then the rules by their functions' names."""
    rule = params.pop("jvp" if prim == "custom_jvp_call" else "rules", None)
    owner = getattr(rule, "owner", None)
    params["call_jaxpr"] = params.pop("call", None)
    if not params.get("num_consts"):
        params.pop("num_consts", None)
    if prim == "custom_jvp_call":
        params["jvp"] = _fun_name(getattr(owner, "jvp", None))
    else:
        params["fwd"] = _fun_name(getattr(owner, "fwd", None))
        params["bwd"] = _fun_name(getattr(owner, "bwd", None))
    return [("name", _fun_name(getattr(owner, "fun", None))), *sorted(params.items())]


def _custom_lin_params(params: dict[str, Any]) -> list[tuple[str, Any]]:
    """A custom_vjp's tangent equation as JAX prints it: its bwd by name,
    which inputs have zero tangents, the residual count."""
    owner = getattr(params["rules"], "owner", None)
    return [
        ("bwd", _fun_name(getattr(owner, "bwd", None))),
        ("in_zeros", [not nz for nz in params["in_nonzero"]]),
        ("num_res", params["num_res"]),
        ("symbolic_zeros", bool(getattr(owner, "symbolic_zeros", False))),
    ]


def _jax_params(eqn: Eqn, names: _Names, shared: dict[int, str]) -> list[tuple[str, Any]]:
    """``eqn``'s parameters as JAX's printing rule lists them, in order."""
    prim = eqn.primitive.name
    params = dict(eqn.params)
    if prim == "jit":
        return _jit_params(eqn, names, shared)
    if prim in ("custom_jvp_call", "custom_vjp_call"):
        return _custom_params(prim, params)
    if prim == "custom_lin":
        return _custom_lin_params(params)
    # a parameter refimpl names otherwise is printed under JAX's name: the
    # primitive's own table (jax_param_names, JAX's name -> refimpl's), the
    # one the equation's params answer to (core.JaxNamedParams)
    for jax_name, ours in getattr(eqn.primitive, "jax_param_names", {}).items():
        if ours in params:
            params[jax_name] = params.pop(ours)
    for key, default in _SHOWN_DEFAULTS.get(prim, {}).items():
        params.setdefault(key, default)
    if prim == "top_k":  # JAX's axis: the last, which refimpl's top_k always takes
        params.setdefault("axis", eqn.inputs[0].aval.ndim - 1)
    if prim == "slice" and all(s == 1 for s in params.get("strides") or ()):
        params["strides"] = None
    if prim == "broadcast_in_dim":
        params.pop("shape", None)  # the binder's type says it
        if not params.get("broadcast_dimensions"):
            params.pop("broadcast_dimensions", None)
    if prim == "debug_print":
        params.pop("callback", None)  # refimpl's printing function: JAX's rule is the primitive's
    if prim == "mul" and params.get("out_dtype") is None:
        params.pop("out_dtype", None)
    if params.get("accuracy", 0) is None:
        params.pop("accuracy")
    if prim == "dot_general":
        params = {k: v for k, v in params.items() if v is not None}
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        params["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return sorted(params.items())


# --- jaxprs ------------------------------------------------------------------------------


def _binder(var: Var, names: _Names) -> Any:
    return _Text(f"{names(var)}:{_type(var.aval)}")


def _type(aval: Any) -> str:
    inner = getattr(aval, "inner", None)  # a Ref's type
    if inner is not None:
        return f"Ref{{{_type(inner)}}}"
    return aval.update(weak_type=False).str_short()


def _atom(atom: Any, names: _Names) -> str:
    if isinstance(atom, Literal):
        return f"{atom.value.item()}:{_type(atom.aval)}"
    return names(atom)


def _vars(docs: Sequence[Any], separator: str = "") -> Any:
    # each break in a group of its own, as JAX's: a list of variables wraps
    # only at the right margin
    return _Nest(2, _Group(_join(_cat(_Text(separator), _Group(_Break(" "))), docs)))


def _param_doc(key: str, value: Any, names: _Names, shared: dict[int, str]) -> Any:
    if isinstance(value, Program):
        doc = _jaxpr(value, names, shared)
    elif isinstance(value, tuple) and value and all(isinstance(v, Program) for v in value):
        jaxprs = [_jaxpr(v, names, shared) for v in value]
        doc = _Group(
            _cat(
                _Nest(2, _cat(_Text("("), _Break(""), _join(_Break(" "), jaxprs))),
                _Break(""),
                _Text(")"),
            )
        )
    elif key == "precision":  # JAX's enum members: (Precision.HIGHEST, ...)
        doc = _Text(_print_precision(value))
    else:
        doc = _Text(_str_value(value))
    return _cat(_Text(f"{key}="), doc)


def _eqn(eqn: Eqn, names: _Names, shared: dict[int, str]) -> Any:
    lhs = _vars([_binder(v, names) for v in eqn.outputs])
    pp_rule = getattr(eqn.primitive, "pp_rule", None)  # refimpl's own (ref ops, callbacks)
    if eqn.primitive.name == "swap" and type(eqn.inputs[0].aval) is core.AbstractRef:
        return _Text(_swap_on_ref(eqn, names))
    if pp_rule is not None:
        outs = " ".join(f"{names(v)}:{_type(v.aval)}" for v in eqn.outputs)
        return _Text(str(pp_rule(outs, [_atom(a, names) for a in eqn.inputs], eqn.params)))
    params = _jax_params(eqn, names, shared)
    rhs: list[Any] = [_Text(_PRIMITIVE_NAMES.get(eqn.primitive.name, eqn.primitive.name))]
    if params:
        kvs = [_param_doc(k, v, names, shared) for k, v in params]
        rhs.append(
            _Group(
                _cat(
                    _Nest(2, _cat(_Text("["), _Break(""), _join(_Break(" "), kvs))),
                    _Break(""),
                    _Text("]"),
                )
            )
        )
    rhs.append(_cat(_Text(" "), _vars([_Text(_atom(a, names)) for a in eqn.inputs])))
    if eqn.outputs:
        return _cat(lhs, _Text(" = "), *rhs)
    return _cat(*rhs)


def _swap_on_ref(eqn: Eqn, names: _Names) -> str:
    """A swap on a Ref as JAX prints it: ``a[...] <- c`` when its result (the
    old value) is dropped, else ``d:f32[3], a[...] <- a[...], c``."""
    ref, value = (_atom(a, names) for a in eqn.inputs)
    where = f"{ref}[{format_indexer(eqn.params['indexer'])}]"
    (old,) = eqn.outputs
    name = names(old)
    if name == "_":
        return f"{where} <- {value}"
    return f"{name}:{_type(old.aval)}, {where} <- {where}, {value}"


def _jaxpr(program: Program, names: _Names, shared: dict[int, str]) -> Any:
    if id(program) in shared:
        return _Text(shared[id(program)])
    consts = _vars([_binder(v, names) for v in program.const_vars])
    ins = _vars([_binder(v, names) for v in program.in_vars])
    eqns = _join(_Break("; "), [_eqn(e, names, shared) for e in program.eqns])
    outs = _cat(
        _Text("("),
        _vars([_Text(_atom(a, names)) for a in program.out_vars], ","),
        _Text(",)" if len(program.out_vars) == 1 else ")"),
    )
    body = _cat(
        _Text("{ lambda "),
        consts,
        _Text("; "),
        ins,
        _Text(". let"),
        _Nest(2, _cat(_Break(" "), eqns)),
        _Break(" "),
        _Text("in "),
        outs,
    )
    return _Group(_cat(_Nest(2, body), _Text(" }")))  # the " }" must fit too


def _subprograms(eqn: Eqn) -> Iterator[Program]:
    for value in eqn.params.values():
        if isinstance(value, Program):
            yield value
        elif isinstance(value, tuple):
            yield from (v for v in value if isinstance(v, Program))


def _dropped(program: Program) -> dict[int, str]:
    """The outputs of top-level equations nothing reads: JAX prints ``_``."""
    used = {a.id for a in program.out_vars if isinstance(a, Var)}
    dropped: dict[int, str] = {}
    for eqn in reversed(program.eqns):
        for v in eqn.outputs:
            if v.id not in used:
                dropped[v.id] = "_"
        used.update(a.id for a in eqn.inputs if isinstance(a, Var))
    return dropped


def _shared_jaxprs(top: Program) -> list[tuple[str, Program]]:
    """Sub-jaxprs met more than once (or with more than 10 equations and met
    at all... as JAX: a big one counts twice), named after the ``name`` param
    of the equation that holds them (``jaxpr`` otherwise), made unique."""
    counts: collections.Counter[int] = collections.Counter()
    by_id: dict[int, Program] = {}
    labels: dict[int, str] = {}
    queue = collections.deque([top])
    while queue:
        program = queue.popleft()
        counts[id(program)] += 1 + (program is not top and len(program.eqns) > 10)
        by_id[id(program)] = program
        for eqn in program.eqns:
            name = eqn.params.get("name")
            for sub in _subprograms(eqn):
                queue.append(sub)
                if isinstance(name, str):
                    labels.setdefault(id(sub), name.strip("<>"))
    seen: collections.Counter[str] = collections.Counter()
    shared = []
    for key, count in counts.items():
        if count == 1:
            continue
        label = labels.get(key, "jaxpr")
        if (n := seen[label]) > 0:
            seen[label] += 1
            label += str(n)
        seen[label] += 1
        shared.append((label, by_id[key]))
    return shared


def jaxpr_text(program: Program, width: int = WIDTH) -> str:
    """``program`` as JAX 0.10.2 prints a ClosedJaxpr (``str(make_jaxpr(f)(x))``)."""
    names = _Names(_dropped(program))
    shared_list = _shared_jaxprs(program)
    shared = {id(p): label for label, p in shared_list}
    names.reserved.update(shared.values())
    docs: list[Any] = []
    for label, sub in shared_list:
        del shared[id(sub)]  # its own text in full
        docs.append(_cat(_Text(f"let {label} = "), _jaxpr(sub, names, shared), _Text(" in")))
        docs.append(_Break(" "))
        shared[id(sub)] = label
    docs.append(_jaxpr(program, names, shared))
    return layout(_cat(*docs), width)


def eqn_text(eqn: Eqn, width: int = WIDTH) -> str:
    """One equation as JAX 0.10.2's ``str(eqn)``, its variables named afresh
    (outputs first: ``a:f32[] = sin b``)."""
    return layout(_eqn(eqn, _Names(), {}), width)


core.EQN_TEXT.append(eqn_text)
