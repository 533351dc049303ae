"""The IR: abstract values, variables, equations and programs.

A ``Program`` is a closed, typed, first-order listing in the style of a jaxpr::

    { lambda c:f32[3] ; a:f32[3] b:~f32[]. let
        d:f32[3] = mul a b
        e:f32[3] = add d c
      in (e,) }

Inputs (``in_vars``) are what the caller passes; constants (``const_vars`` with
their values in ``consts``) are arrays captured while tracing. Sub-programs
(a scan body, cond branches, a nested jit) are ordinary params holding a
``Program``. A ``~`` before a type marks it weakly typed.

No NumPy math happens here; this module only describes programs.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from refimpl import dtypes
from refimpl.errors import JaxprTypeError
from refimpl.sharding import abstract_sharding

_INT64_MAX = 2**63 - 1


class ShapeError(ValueError):
    """A shape no array can have: a negative or non-integer dimension, or more
    elements or bytes than fit in int64. ``where`` is the primitive or
    function that asked for it, once known (see :func:`shape_error_at`)."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        self.where = where


def check_shape(shape: tuple[Any, ...], dtype: np.dtype) -> None:
    """Every array shape passes here (``ShapedArray`` calls it on construction).

    Dimensions are non-negative integers; the element count
    ``prod(shape)`` and the byte size ``prod(shape) * dtype.itemsize`` are at
    most ``2**63 - 1``: what an int64 size can describe, and the bound every
    PJRT plugin assumes. Checking it here, once, means no primitive can hand
    such a shape to NumPy or to XLA (where it would crash the process).
    """
    if not isinstance(dtype, (np.dtype, dtypes.ExtendedDtype)):
        dtype = np.dtype(dtype)
    count = 1
    for dim in shape:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 0:
            raise ShapeError(
                f"invalid shape {shape}: dimensions must be non-negative integers, got {dim!r}"
            )
        count *= int(dim)
    if count > _INT64_MAX or count * max(dtype.itemsize, 1) > _INT64_MAX:
        raise ShapeError(
            f"shape {tuple(int(d) for d in shape)} with dtype {dtype.name} has {count} elements "
            f"({count * dtype.itemsize} bytes), more than fit in int64 (2**63 - 1)"
        )


def not_a_shape(shape: Any, traced: bool = False) -> str:
    """JAX 0.10.2's words for a shape whose dimensions are not all concrete
    integers (its ``canonicalize_shape``: each dimension read by
    ``operator.index``); ``traced``: a dimension is a traced value, and JAX
    adds how to make it static."""
    message = f"Shapes must be 1D sequences of concrete values of integer type, got {shape}."
    if traced:
        message += (
            "\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller "
            "subfunctions."
        )
    return message


def shape_error_at(error: ShapeError, where: str) -> ShapeError:
    """``error`` naming ``where`` (the innermost name wins if it already has one)."""
    if error.where is not None:
        return error
    return ShapeError(error.message, where)


@dataclass(frozen=True)
class ShapedArray:
    """The abstract value of an array: what tracing knows about it.

    Construction validates the shape (:func:`check_shape`), so an impossible
    shape is a :class:`ShapeError` wherever an abstract value is built.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False

    def __post_init__(self) -> None:
        # a user's ShapedArray((4, 4), np.float32) (jax.core.ShapedArray, e.g.
        # to lower a function) holds an np.dtype and a tuple, as JAX's
        if not isinstance(self.dtype, (np.dtype, dtypes.ExtendedDtype)):
            object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if type(self.shape) is not tuple:
            object.__setattr__(self, "shape", tuple(self.shape))
        check_shape(self.shape, self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, **changes: Any) -> ShapedArray:
        fields: dict[str, Any] = {
            "shape": self.shape,
            "dtype": self.dtype,
            "weak_type": self.weak_type,
        }
        fields.update(changes)
        dtype = fields["dtype"]
        if not isinstance(dtype, dtypes.ExtendedDtype):
            dtype = np.dtype(dtype)
        return ShapedArray(tuple(fields["shape"]), dtype, fields["weak_type"])

    def strip_weak(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def to_tangent_aval(self) -> ShapedArray:
        """The type of a tangent of this type (JAX's method, which transpose
        rules call on an ``UndefinedPrimal``'s aval): itself for inexact
        dtypes, ``float0`` for the others; the weak type kept, as JAX's."""
        if not isinstance(self.dtype, dtypes.ExtendedDtype) and dtypes.is_inexact(self.dtype):
            return self
        return self.update(dtype=dtypes.float0)

    to_ct_aval = to_tangent_aval  # (a cotangent's type is a tangent's)

    @property
    def sharding(self) -> Any:
        """The type's sharding (``jax.typeof(x).sharding``): unsplit over the
        empty mesh, since refimpl places every array whole on one device."""
        return abstract_sharding(self.ndim)

    def str_short(self) -> str:
        mark = "~" if self.weak_type else ""
        dims = ",".join(str(d) for d in self.shape)
        # an extended dtype (a typed key's) has no short name: ``key<fry>[]``
        name = self.dtype.name if isinstance(self.dtype, dtypes.ExtendedDtype) else None
        return f"{mark}{name or dtypes.short_name(self.dtype)}[{dims}]"

    def _long_text(self) -> str:
        """``float32[2,3]``: the type with the dtype's full name, as JAX 0.10.2
        prints a ShapedArray (``str_short`` is the IR's ``f32[2,3]``)."""
        name = "float0" if self.dtype == dtypes.float0 else self.dtype.name
        return f"{name}[{','.join(str(d) for d in self.shape)}]"

    def __str__(self) -> str:
        # JAX 0.10.2: '~float32[]' (``jax.typeof(1.0)``), the weak mark kept
        return f"{'~' if self.weak_type else ''}{self._long_text()}"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self._long_text()}{weak})"


@dataclass(frozen=True)
class AbstractRef:
    """The abstract value of a mutable array reference (``refimpl.ref.Ref``)
    holding an array of type ``inner``; listings show it as ``Ref{f32[3]}``.

    It appears in jit signatures (a ``Ref`` argument is a different signature
    from an array of the same type); shape, dtype and weak_type are the held
    array's.
    """

    inner: ShapedArray
    memory_space: Any = None  # JAX's memory space attribute (kept, not used)
    kind: Any = None  # JAX's mutation semantics under rematerialization (kept, not used)

    shape = property(lambda self: self.inner.shape)
    dtype = property(lambda self: self.inner.dtype)
    weak_type = property(lambda self: self.inner.weak_type)
    ndim = property(lambda self: self.inner.ndim)
    size = property(lambda self: self.inner.size)

    inner_aval = property(lambda self: self.inner)  # JAX's name
    sharding = property(lambda self: self.inner.sharding)  # the held array type's

    def update(
        self, inner_aval: Any = None, memory_space: Any = None, kind: Any = None
    ) -> AbstractRef:
        """A copy with the given fields replaced (JAX's ``AbstractRef.update``)."""
        return AbstractRef(
            self.inner if inner_aval is None else inner_aval,
            self.memory_space if memory_space is None else memory_space,
            self.kind if kind is None else kind,
        )

    def str_short(self) -> str:
        return f"Ref{{{self.inner.str_short()}}}"

    def __str__(self) -> str:
        # JAX 0.10.2's str and repr of a Ref type (jax.typeof(ref)) spell the
        # dtype out, Ref{float32[3]}; listings keep the short form (str_short)
        return f"Ref{{{self.inner}}}"

    __repr__ = __str__


_var_ids = itertools.count()


class Var:
    """A typed variable; identity is the object itself."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval
        self.id = next(_var_ids)

    def __repr__(self) -> str:
        return f"Var({self.id}:{self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in an equation (``2.0:f32[]``)."""

    __slots__ = ("value", "aval")

    def __init__(self, value: Any, aval: ShapedArray) -> None:
        assert aval.shape == (), "only scalars are literals"
        self.value = np.asarray(value, dtype=aval.dtype)
        self.aval = aval

    @property
    def val(self) -> np.ndarray:  # JAX's Literal spelling
        return self.value

    def __repr__(self) -> str:
        return f"Literal({self.value!r})"


Atom = Var | Literal


class JaxNamedParams(dict[str, Any]):
    """An equation's parameters that also answer to JAX 0.10.2's names for
    the ones refimpl names otherwise (``eqn.params['jaxpr']`` of a scan is
    its ``body``, a while's ``cond_jaxpr`` its ``cond``), as JAX's tests and
    users read a jaxpr's equations. Iteration, ``str`` and copies show
    refimpl's names (the text printer renames them, refimpl.jaxpr_text)."""

    __slots__ = ("jax_names",)

    def __init__(self, params: dict[str, Any], jax_names: dict[str, str]) -> None:
        super().__init__(params)
        self.jax_names = jax_names  # JAX's name -> refimpl's

    def __missing__(self, key: str) -> Any:
        if key in self.jax_names:
            return self[self.jax_names[key]]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if super().__contains__(key):
            return True
        name = self.jax_names.get(key) if isinstance(key, str) else None
        return name is not None and super().__contains__(name)

    def get(self, key: str, default: Any = None) -> Any:
        if super().__contains__(key):
            return super().__getitem__(key)
        return super().get(self.jax_names.get(key, key), default)


@dataclass(slots=True)
class Eqn:
    """``outputs = primitive[params](inputs)``. (Slots: a program holds one
    per operation, and a reverse pass keeps its program.)"""

    primitive: Any  # refimpl.primitives.base.Primitive; Any avoids an import cycle
    inputs: list[Atom]
    outputs: list[Var]
    params: dict[str, Any]

    @property
    def invars(self) -> list[Atom]:  # JAX's JaxprEqn spelling
        return self.inputs

    @property
    def outvars(self) -> list[Var]:
        return self.outputs

    def __post_init__(self) -> None:
        # the params answer to JAX's names too where the primitive has others
        names = getattr(self.primitive, "jax_param_names", None)
        if names and type(self.params) is not JaxNamedParams:
            self.params = JaxNamedParams(self.params, names)

    def __str__(self) -> str:
        # JAX's str(eqn) (make_jaxpr's equations are JAX's API); refimpl's
        # listing line is print_eqn's
        return EQN_TEXT[0](self) if EQN_TEXT else print_eqn(self)


# str(eqn)'s printer: JAX's equation text, from refimpl.jaxpr_text, which
# builds on this module and fills the slot when imported (the package imports
# it); a process that never imports it gets refimpl's listing line.
EQN_TEXT: list[Callable[[Eqn], str]] = []

# Program.effects: refimpl.effects reads them off the equations and fills the
# slot when imported (the package imports it), as EQN_TEXT
PROGRAM_EFFECTS: list[Callable[[Program], set[Any]]] = []


@dataclass
class Program:
    """A closed program: ``out_vars = eqns(const_vars := consts, in_vars)``."""

    in_vars: list[Var]
    eqns: list[Eqn]
    out_vars: list[Atom]
    const_vars: list[Var] = field(default_factory=list)
    consts: list[np.ndarray] = field(default_factory=list)
    # per const var, the sharding of the sharded array it was captured from
    # (None for others), as the trace that captured it saw it; empty when
    # none was (what the sharding rule types a closed-over sharded array by)
    const_shardings: list[Any] = field(default_factory=list)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.in_vars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.out_vars]

    # JAX's spellings: make_jaxpr gives a ClosedJaxpr, whose ``.jaxpr`` holds
    # ``eqns``, ``invars``, ``outvars`` and ``constvars``; a Program is both
    @property
    def jaxpr(self) -> Program:
        return self

    @property
    def invars(self) -> list[Var]:
        return self.in_vars

    @property
    def outvars(self) -> list[Atom]:
        return self.out_vars

    @property
    def constvars(self) -> list[Var]:
        return self.const_vars

    @property
    def effects(self) -> set[Any]:
        """JAX's ``ClosedJaxpr.effects``/``Jaxpr.effects``: the program's
        reads and writes of the refs it takes or closes over and its
        callbacks (:mod:`refimpl.effects`); empty for a pure program."""
        return PROGRAM_EFFECTS[0](self) if PROGRAM_EFFECTS else set()

    @property
    def literals(self) -> list[np.ndarray]:
        # JAX's ClosedJaxpr.literals: its constants (the same list as consts)
        return self.consts

    def __str__(self) -> str:
        return pretty_print(self)

    def pretty_print(self, **options: Any) -> str:
        """JAX's ``ClosedJaxpr.pretty_print(use_color=False, ...)``: the listing
        ``str`` gives (as JAX's). Its options (``use_color``, ``source_info``,
        ``print_shapes``, ...) are keywords only, as JAX's; refimpl's listing
        has no colours, source lines or name stacks to switch, so they change
        nothing."""
        del options
        return pretty_print(self)

    def walk_eqns(self) -> Iterator[Eqn]:
        """Every equation, including those of sub-programs, depth first."""
        for eqn in self.eqns:
            yield eqn
            for sub in subprograms(eqn):
                yield from sub.walk_eqns()


def subprograms(eqn: Eqn) -> list[Program]:
    """The Programs held in an equation's params (directly or in a tuple)."""
    found = []
    for value in eqn.params.values():
        if isinstance(value, Program):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(v for v in value if isinstance(v, Program))
    return found


# --- pretty printing ---------------------------------------------------------


class _Namer:
    """Gives variables short names (a, b, ..., z, ba, bb, ...) in listing order."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def __call__(self, var: Var) -> str:
        if var.id not in self.names:
            self.names[var.id] = _letters(len(self.names))
        return self.names[var.id]


def _letters(n: int) -> str:
    name = ""
    while True:
        name = chr(ord("a") + n % 26) + name
        n //= 26
        if n == 0:
            return name


def pretty_print(program: Program, indent: int = 0) -> str:
    return _print_program(program, _Namer(), indent)


def _print_atom(atom: Atom, name: _Namer) -> str:
    if isinstance(atom, Literal):
        return f"{_format_scalar(atom.value)}:{atom.aval.str_short()}"
    return name(atom)


def _format_scalar(value: np.ndarray) -> str:
    item = value.item()
    if isinstance(item, bool):
        return str(item)
    return repr(item)


def _print_binder(var: Var, name: _Namer) -> str:
    return f"{name(var)}:{var.aval.str_short()}"


def _print_param(value: Any, name: _Namer, indent: int) -> str:
    if isinstance(value, Program):
        return _print_program(value, name, indent + 4)
    if isinstance(value, tuple) and any(isinstance(v, Program) for v in value):
        inner = " " * (indent + 8)
        parts = [inner + _print_param(v, name, indent + 4) for v in value]
        return "(\n" + ",\n".join(parts) + "\n" + " " * (indent + 4) + ")"
    if isinstance(value, np.dtype):
        return dtypes.short_name(value)
    return repr(value)


def _print_precision(value: Any) -> str:
    # JAX prints dot/conv precision as its enum members (``Precision.HIGHEST``)
    # and an algorithm preset by its bare name; programs and tests read them so.
    if isinstance(value, tuple):
        parts = [f"Precision.{p}" if isinstance(p, str) else repr(p) for p in value]
        return "(" + ", ".join(parts) + ")"
    if isinstance(value, enum.Enum):
        return value.name
    return repr(value)


def print_eqn(eqn: Eqn) -> str:
    """One equation as a listing shows it (JAX's ``str(eqn)``): ``b:f32[] =
    sin a``, its variables named afresh; one without outputs (a
    ``debug_callback``) is its right-hand side alone, as JAX's."""
    return _print_eqn(eqn, _Namer(), 0)


def _print_eqn(eqn: Eqn, name: _Namer, indent: int) -> str:
    outs = " ".join(_print_binder(v, name) for v in eqn.outputs)
    pp_rule = getattr(eqn.primitive, "pp_rule", None)  # e.g. the ref ops' `a[...] <- v`
    if pp_rule is not None:
        return str(pp_rule(outs, [_print_atom(a, name) for a in eqn.inputs], eqn.params))
    params = ""
    if eqn.params:
        items = ", ".join(
            f"{k}={_print_precision(v) if k == 'precision' else _print_param(v, name, indent)}"
            for k, v in sorted(eqn.params.items())
        )
        params = f"[{items}]"
    args = " ".join(_print_atom(a, name) for a in eqn.inputs)
    lhs = f"{outs} = " if outs else ""
    return f"{lhs}{eqn.primitive.name}{params} {args}".rstrip()


def _print_program(program: Program, name: _Namer, indent: int) -> str:
    pad = " " * indent
    consts = " ".join(_print_binder(v, name) for v in program.const_vars)
    ins = " ".join(_print_binder(v, name) for v in program.in_vars)
    lines = [f"{{ lambda {consts} ; {ins}. let".replace("lambda  ;", "lambda ;")]
    for eqn in program.eqns:
        lines.append(f"{pad}    {_print_eqn(eqn, name, indent)}")
    outs = ", ".join(_print_atom(a, name) for a in program.out_vars)
    lines.append(
        f"{pad}  in ({outs},) }}" if len(program.out_vars) == 1 else f"{pad}  in ({outs}) }}"
    )
    return "\n".join(lines)


# --- type checking -----------------------------------------------------------


class ProgramTypeError(JaxprTypeError):
    """A Program is ill-formed: an unbound variable, a wrong output type or a
    parameter of the wrong kind (JAX's ``JaxprTypeError``, a ``TypeError``)."""


def check_program(program: Program) -> None:
    """Type-check ``program`` and every sub-program (refimpl's ``core.check_jaxpr``).

    Each input atom must be bound before use, every variable bound once, and
    each equation's outputs must equal what its primitive's ``abstract_eval``
    computes from its inputs' types (shape, dtype and weak_type). Constants
    must match their variables' shapes and dtypes. Programs made by tracing
    (``make_program``, ``make_jaxpr``, the transformations) always pass; the
    check is for Programs built or rewritten by hand and for tests of
    transformation rules. JAX has no top-level equivalent (its
    ``jax.core.check_jaxpr`` checks jaxprs, not refimpl Programs).

    Args:
        program: A closed :class:`Program` (``ri.make_program(f)(*args)``).

    Returns:
        None; the check has no other result.

    Raises:
        refimpl.core.ProgramTypeError: A ``TypeError`` subclass naming the
            first problem found: an unbound or rebound variable, a constant
            that does not match its variable, or an equation whose outputs
            differ from its rule's (``equation 0 (sin) outputs f32[3] but its
            rule gives f32[2]``).

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> program = ri.make_program(lambda x: rnp.sin(x) * 2)(1.0)
        >>> print(ri.check_program(program))
        None
    """
    bound: set[int] = set()

    def bind(var: Var, where: str) -> None:
        if var.id in bound:
            raise ProgramTypeError(f"check_program: {where} rebinds variable {var!r}")
        bound.add(var.id)

    for var in program.const_vars:
        bind(var, "const_vars")
    for var in program.in_vars:
        bind(var, "in_vars")
    if len(program.consts) != len(program.const_vars):
        raise ProgramTypeError("check_program: consts and const_vars differ in length")
    for value, var in zip(program.consts, program.const_vars, strict=True):
        if tuple(np.shape(value)) != var.aval.shape or np.asarray(value).dtype != var.aval.dtype:
            raise ProgramTypeError(f"check_program: const {var!r} does not match its value")
    for index, eqn in enumerate(program.eqns):
        _check_eqn(eqn, index, bound)
        for var in eqn.outputs:
            bind(var, f"equation {index} ({eqn.primitive.name})")
    for atom in program.out_vars:
        _check_atom_bound(atom, bound, "program outputs")


def _check_atom_bound(atom: Atom, bound: set[int], where: str) -> None:
    if isinstance(atom, Var) and atom.id not in bound:
        raise ProgramTypeError(f"check_program: {where} use unbound variable {atom!r}")


def _check_eqn(eqn: Eqn, index: int, bound: set[int]) -> None:
    where = f"equation {index} ({eqn.primitive.name})"
    for atom in eqn.inputs:
        _check_atom_bound(atom, bound, where)
    for sub in subprograms(eqn):
        check_program(sub)
    expected = eqn.primitive.abstract_eval(*[a.aval for a in eqn.inputs], **eqn.params)
    expected = list(expected) if eqn.primitive.multiple_results else [expected]
    actual = [v.aval for v in eqn.outputs]
    if expected != actual:
        shown_expected = ", ".join(a.str_short() for a in expected)
        shown_actual = ", ".join(a.str_short() for a in actual)
        raise ProgramTypeError(
            f"check_program: {where} outputs {shown_actual} but its rule gives {shown_expected}"
        )


def avals_str(avals: Sequence[ShapedArray]) -> str:
    return ", ".join(a.str_short() for a in avals)
