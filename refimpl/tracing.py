"""Tracing: turning a Python function into a Program.

While a function is traced, its array arguments are ``Tracer`` objects. Every
primitive applied to a tracer is recorded as an equation by the innermost
active ``Builder`` instead of being computed. Builders nest (a scan body is
traced inside the function that calls scan): a tracer of an outer builder
used inside an inner one is *captured* -- it becomes a constant input of the
inner program, and the outer value is passed in explicitly by whoever binds
the sub-program.

Outside any trace, primitives run eagerly on concrete arrays (see
``refimpl.backends.ref.eager``).
"""

from __future__ import annotations

import functools
import gc
import inspect
import operator
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np

from refimpl import backends, dtypes, leak_report
from refimpl import sharding as _sharding
from refimpl.array_ops import ArrayOps
from refimpl.config import config
from refimpl.core import AbstractRef, Atom, Eqn, Literal, Program, ShapedArray, Var

# re-exported: refimpl and its modules import these two from here
from refimpl.errors import ConcretizationTypeError as ConcretizationTypeError
from refimpl.errors import TracerArrayConversionError as TracerArrayConversionError
from refimpl.errors import TracerBoolConversionError as TracerBoolConversionError
from refimpl.errors import TracerIntegerConversionError as TracerIntegerConversionError
from refimpl.errors import UnexpectedTracerError as UnexpectedTracerError


class Trace:
    """One active transformation at one level of the trace stack.

    A transformation (jvp, linearize, vmap, the staging of a jit or a control
    flow body) pushes one ``Trace`` with :class:`new_main`; its ``level`` is
    its position in the per-thread stack (0 = the first pushed; eager
    evaluation is below every level). Its tracers point back to it
    (``tracer._trace``). ``Primitive.bind`` hands a primitive application to
    the highest-level trace among its tracer arguments and the current
    dynamic (staging) trace, by calling :meth:`process_primitive`.
    """

    level: int = -1
    active: bool = False
    name: str = "trace"
    #: the names of JAX's trace and tracer classes of the same role, which
    #: JAX's leak and escaped-tracer messages give
    jax_trace_name: str = "Trace"
    jax_tracer_name: str = "Tracer"
    #: weak references to the tracers this trace made, kept only by traces
    #: the leak checker will check (None otherwise, and then free): the check
    #: reads them instead of scanning the whole heap for referrers
    #: and where each was created (leak_report.creation_site), in step
    _tracer_refs: list[weakref.ref[Tracer]] | None = None
    _tracer_sites: list[str] | None = None

    def _watch_tracers(self) -> None:
        """Keep weak references to this trace's tracers if the leak checker is on."""
        watching = config._values["check_tracer_leaks"]
        self._tracer_refs = [] if watching else None
        self._tracer_sites = [] if watching else None

    def _watch(self, tracer: Tracer) -> None:
        """Record ``tracer`` and its creation site; its constructor calls this
        only while ``_tracer_refs`` is a list (the check costs nothing otherwise)."""
        refs, sites = self._tracer_refs, self._tracer_sites
        assert refs is not None and sites is not None
        refs.append(weakref.ref(tracer))
        sites.append(leak_report.creation_site())

    def _site_of(self, tracer: Tracer) -> str | None:
        """Where a watched tracer was created, or None."""
        for ref, site in zip(self._tracer_refs or (), self._tracer_sites or (), strict=False):
            if ref() is tracer:
                return site
        return None

    def process_primitive(
        self, primitive: Any, args: Sequence[Any], params: dict[str, Any]
    ) -> list[Any]:
        """Apply ``primitive`` to ``args``; return the list of outputs.

        ``args`` are passed as given: each is a tracer of this trace, or a
        value of a lower level (a concrete array, a Python scalar, a tracer of
        a lower-level trace), which this trace treats as a constant ("lifts").
        Outputs are this trace's tracers (or lower-level values, when the
        transformation has nothing to add to them).
        """
        raise NotImplementedError(f"{type(self).__name__}.process_primitive")


class Tracer(ArrayOps):
    """A value inside a transformation: it belongs to one ``Trace`` (``._trace``).

    Every tracer has an ``aval``; operators go through ``refimpl.numpy`` and
    so through ``Primitive.bind``, which routes them to the owning trace.
    Python needs a concrete value for ``bool()``, ``int()``, ``item()`` and
    indexing; a tracer gives one only if its transformation knows it
    (:meth:`_concrete`, e.g. a JVP tracer's primal outside ``jit``), otherwise
    it raises :class:`ConcretizationTypeError` (JAX 0.10.2's
    ``TracerBoolConversionError`` for ``bool()``, ``TracerIntegerConversionError``
    for ``__index__``; ``TracerArrayConversionError`` for ``__array__``).
    ``float()``, ``complex()`` and ``tolist()`` always raise it, as in JAX.
    """

    __slots__ = ()
    __array_priority__ = 100

    _trace: Trace
    aval: ShapedArray

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    @property
    def origin(self) -> str:
        """Where the value came from, for concretization errors."""
        return "a traced value"

    def _concrete(self, what: str) -> Any:
        """A value Python conversions may use instead of this tracer (it may
        itself be a tracer of a lower level), or raise the concretization error."""
        raise self._concretization_error(what)

    def _without_host_data(self, passes_through: bool = False) -> Tracer:
        """This value, made a new array where it holds the user's own host
        data untouched, as a ``jax.jit`` boundary computes new arrays
        (``BatchTracer``'s and ``JVPTracer``'s overrides); other tracers hold
        none. ``passes_through``: the function returning it is one ``vmap``
        hands its argument back through (``asarray`` without a copy)."""
        return self

    def _concretization_error(self, what: str) -> ConcretizationTypeError:
        return ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: {what} "
            f"of a traced array {self.aval.str_short()}.{_conversion_hint(what)}"
            f"{_method_hint(what, self.aval)} The value "
            f"depends on {self.origin}. Mark that argument static (static_argnums/"
            "static_argnames) or use lax.cond / lax.select / rnp.where instead of Python "
            "control flow."
        )

    # A conversion the value's type rules out fails as it would on a concrete
    # array, before concretization is tried (JAX 0.10.2's classes and words):
    # bool() of several or no elements, int()/float()/complex() of a
    # non-scalar, an index from a non-integer or non-scalar array.
    def _check_bool(self) -> None:
        if self.aval.size > 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. "
                "Use a.any() or a.all()"
            )
        if self.aval.size == 0:
            raise ValueError(
                "The truth value of an empty array is ambiguous. Use `array.size > 0` to "
                "check that an array is not empty."
            )

    def _check_scalar(self) -> None:
        if self.ndim != 0:
            raise TypeError(
                f"Only scalar arrays can be converted to Python scalars; got arr.ndim={self.ndim}"
            )

    def _check_index(self) -> None:
        if self.ndim != 0 or not dtypes.is_integer(self.dtype):
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")

    def _conversion_error(self, cls: type[Exception], lead: str, what: str) -> Exception:
        """JAX 0.10.2's class and first sentence for this conversion (``lead``
        ending in the value's shape as JAX words it, ``with shape bool[]``),
        then where the value came from (refimpl's concretization message)."""
        aval = self.aval
        shape = str(aval.strip_weak()) if isinstance(aval, ShapedArray) else str(aval)
        return cls(f"{lead} with shape {shape}. {self._concretization_error(what)}")

    def __bool__(self) -> bool:
        self._check_bool()
        try:
            value = self._concrete("bool()")
        except ConcretizationTypeError:
            lead = "Attempted boolean conversion of traced array"
            raise self._conversion_error(TracerBoolConversionError, lead, "bool()") from None
        return bool(value)

    def __int__(self) -> int:
        self._check_scalar()
        return int(self._concrete("int()"))

    # float(), complex() and tolist() raise even where the value is known (a
    # JVP tracer's primal outside jit), as JAX 0.10.2's Tracer: only bool(),
    # int(), indexing and item() use a known value.
    def __float__(self) -> float:
        self._check_scalar()
        raise self._concretization_error("float()")

    def __complex__(self) -> complex:
        self._check_scalar()
        raise self._concretization_error("complex()")

    def __index__(self) -> int:
        self._check_index()
        what = "use as an index (__index__)"
        try:
            value = self._concrete(what)
        except ConcretizationTypeError:
            lead = "The __index__() method was called on traced array"
            raise self._conversion_error(TracerIntegerConversionError, lead, what) from None
        return operator.index(value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # As in JAX: even a tracer with a known value is not silently turned
        # into NumPy data (the result would drop out of the transformation).
        lead = "The numpy.ndarray conversion method __array__() was called on traced array"
        what = "conversion to a NumPy array (np.asarray)"
        raise self._conversion_error(TracerArrayConversionError, lead, what)

    def tolist(self) -> Any:
        raise self._concretization_error("tolist()")

    def __reduce__(self) -> Any:
        # pickling needs the value (JAX 0.10.2's error too)
        raise self._concretization_error("pickling (__reduce__)")

    def tobytes(self, order: str = "C") -> bytes:
        raise self._concretization_error("tobytes()")

    def item(self, *args: Any) -> Any:
        value = self._concrete("item()")
        # a Python scalar (the primal of a jvp of 2.0) is its own item
        if isinstance(value, (bool, int, float, complex)):
            return np.asarray(value).item(*args)
        return value.item(*args)

    def __iter__(self) -> Iterator[Any]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        length: int = self.shape[0]  # shape is an untyped property
        return length

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.aval.str_short()}>"


# A program holds one equation per operation and a reverse pass keeps its program
# (the invertible VJP keeps nothing else), so what equations share is stored once:
# equal output types, and parameters made of ints only (axes, shapes, dimension
# numbers). Only exact ints: 1 == 1.0 == True, and a shared float or bool would
# change a parameter's meaning.
_STORED: dict[Any, Any] = {}
_STORED_LIMIT = 1 << 16
_NO_PARAMS: dict[str, Any] = {}


def _ints_only(value: Any) -> bool:
    if type(value) is int:
        return True
    return type(value) is tuple and all(_ints_only(v) for v in value)


def _stored_once(value: Any) -> Any:
    if type(value) is not ShapedArray and not (type(value) is tuple and _ints_only(value)):
        return value
    if len(_STORED) >= _STORED_LIMIT:
        _STORED.clear()
    return _STORED.setdefault(value, value)


class DynamicTracer(Tracer):
    """A tracer of a staging trace (a ``Builder``): an abstract array that
    stands for a variable of the Program being built."""

    __slots__ = ("aval", "_trace", "_var", "_origin", "__weakref__")

    _trace: Builder

    def __init__(self, aval: ShapedArray, builder: Builder, var: Var, origin: str) -> None:
        self.aval = aval
        self._trace = builder
        self._var = var
        self._origin = origin
        if builder._tracer_refs is not None:
            builder._watch(self)

    @property
    def builder(self) -> Builder:
        return self._trace

    @property
    def origin(self) -> str:
        return self._origin

    def __repr__(self) -> str:
        return f"Tracer<{self.aval.str_short()}>"


class Builder(Trace):
    """The staging trace: records equations and turns them into a Program.

    Every primitive applied to one of its tracers becomes an equation. A
    builder pushed by ``jit`` or a control-flow function is also the
    *dynamic* trace: an application with no tracer argument at all (a
    constant computation inside ``jit``) is staged too, as in JAX.
    """

    jax_trace_name = "DynamicJaxprTrace"
    jax_tracer_name = "DynamicJaxprTracer"

    def __init__(self, name: str) -> None:
        self.name = name
        self.in_vars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.const_vars: list[Var] = []
        self.consts: list[np.ndarray] = []
        self.const_shardings: list[Any] = []  # per const: its source's (CONST_SHARDINGS)
        self.captured: list[Tracer] = []  # lower-level tracers, in capture order
        self._capture_vars: dict[int, Var] = {}  # id(outer tracer) -> inner var
        self._const_vars_by_id: dict[int, Var] = {}
        self._keepalive: list[Any] = []  # keeps ids in the maps above unique
        self._watch_tracers()

    # -- inputs and atoms --

    def new_input(self, aval: ShapedArray, origin: str) -> DynamicTracer:
        var = Var(aval)
        self.in_vars.append(var)
        return DynamicTracer(aval, self, var, origin)

    def to_atom(self, value: Any, aval: ShapedArray) -> Atom:
        """The atom standing for ``value`` (whose aval is ``aval``) in this trace."""
        if isinstance(value, Tracer):
            if value._trace is self:
                # a tracer whose trace is this Builder is one of its DynamicTracers
                return cast(DynamicTracer, value)._var
            return self._capture(value)
        if isinstance(value, TypedScalar):
            return Literal(value.value, aval)
        # a Python, NumPy or 0-d NumPy array scalar is inlined, as JAX 0.10.2's
        # literals (a refimpl Array stays a constant, as JAX's Array)
        if aval.shape == () and (
            dtypes.is_python_scalar(value) or isinstance(value, (np.generic, np.ndarray))
        ):
            return Literal(value, aval)
        return self._add_const(value, aval)

    def _capture(self, outer: Tracer) -> Var:
        if not outer._trace.active:
            raise escaped_tracer_error(outer, f"was used in {self.name!r}")
        key = id(outer)
        if key not in self._capture_vars:
            self._capture_vars[key] = Var(outer.aval)
            self.captured.append(outer)
        return self._capture_vars[key]

    def _add_const(self, value: Any, aval: ShapedArray) -> Var:
        key = id(value)
        if key not in self._const_vars_by_id:
            var = Var(aval)
            self._const_vars_by_id[key] = var
            self._keepalive.append(value)
            self.const_vars.append(var)
            self.consts.append(concrete_value(value, aval))
            sharding_of = CONST_SHARDINGS.get(type(value))
            self.const_shardings.append(sharding_of(value) if sharding_of else None)
        return self._const_vars_by_id[key]

    # -- equations --

    def process_primitive(
        self, primitive: Any, args: Sequence[Any], params: dict[str, Any]
    ) -> list[Any]:
        in_avals = [get_aval(a, primitive.name, i) for i, a in enumerate(args)]
        out_avals = primitive.out_avals(in_avals, params)
        return self.add_eqn(primitive, args, in_avals, out_avals, params)

    def add_eqn(
        self,
        primitive: Any,
        args: Sequence[Any],
        in_avals: Sequence[ShapedArray],
        out_avals: Sequence[ShapedArray],
        params: dict[str, Any],
    ) -> list[DynamicTracer]:
        inputs = [self.to_atom(a, av) for a, av in zip(args, in_avals, strict=True)]
        outputs = [Var(_stored_once(av)) for av in out_avals]
        params = {k: _stored_once(v) for k, v in params.items()} if params else _NO_PARAMS
        self.eqns.append(Eqn(primitive, inputs, outputs, params))
        origin = _first_origin(args)
        return [DynamicTracer(v.aval, self, v, origin) for v in outputs]

    def build(self, outs: Sequence[Any]) -> Program:
        """The Program of this trace; captured outer tracers become leading inputs.

        The inputs of the result are ``captured vars + explicit inputs``; the
        caller passes ``builder.captured`` (outer tracers) for the first ones.
        """
        out_atoms = [self.to_atom(x, get_aval(x, self.name, i)) for i, x in enumerate(outs)]
        captured_vars = [self._capture_vars[id(t)] for t in self.captured]
        return Program(
            in_vars=captured_vars + self.in_vars,
            eqns=self.eqns,
            out_vars=out_atoms,
            const_vars=self.const_vars,
            consts=self.consts,
            const_shardings=(
                self.const_shardings if any(s is not None for s in self.const_shardings) else []
            ),
        )


def _first_origin(args: Sequence[Any]) -> str:
    for a in args:
        if isinstance(a, Tracer):
            return a.origin
    return "a traced value"


# --- the stack of active traces -----------------------------------------------


#: array type -> the sharding a closed-over array of that type keeps in the
#: program's ``const_shardings`` (refimpl.transforms.sharded registers its
#: sharded arrays': JAX 0.10.2 types such a constant by its sharding)
CONST_SHARDINGS: dict[type, Callable[[Any], Any]] = {}


class _TraceStack(threading.local):
    """The active traces of this thread (index = level) and the innermost
    dynamic (staging) trace: tracing in one thread never sees another's."""

    def __init__(self) -> None:
        self.traces: list[Trace] = []
        self.dynamic: Builder | None = None


_stack = _TraceStack()
# Every active trace of every thread. Only a cheap "is anything tracing?"
# signal for the native fast path (empty: no trace anywhere, so a call can run
# without consulting the per-thread stack); never used to find a trace. The
# C++ side holds this very list object: mutate it, never rebind it.
_builders: list[Trace] = []


def current_builder() -> Builder | None:
    """The innermost dynamic (staging) trace of this thread, or None."""
    return _stack.dynamic


def is_tracing() -> bool:
    """Whether any transformation is active in this thread."""
    return bool(_stack.traces)


_sharding.TRACING_TESTS.append(is_tracing)  # (set_mesh refuses to run under a trace)


def find_top_trace(args: Sequence[Any]) -> Trace | None:
    """The trace that must process a primitive applied to ``args``.

    It is the highest-level trace among the tracer arguments and the dynamic
    trace; None means eager evaluation. A tracer of a finished trace is an
    :class:`UnexpectedTracerError`.
    """
    top: Trace | None = _stack.dynamic
    level = top.level if top is not None else -1
    for arg in args:
        if isinstance(arg, Tracer):
            trace = arg._trace
            if not trace.active:
                raise escaped_tracer_error(arg, "was used after that trace ended")
            if trace.level > level:
                top, level = trace, trace.level
    return top


def escaped_tracer_error(tracer: Tracer, used: str) -> UnexpectedTracerError:
    """JAX 0.10.2's error for a tracer used after its trace ended: its words
    (the type as JAX prints it, ``int32[4,3]``; the tracer's kind under JAX's
    name), then refimpl's (which trace, how it was used). JAX also gives the
    line that created the tracer, which refimpl does not record (it would
    cost every traced operation a walk of the stack); the leak checker
    (``jax.checking_leaks``) records it."""
    trace = tracer._trace
    return UnexpectedTracerError(
        "Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
        f"allowing for a reference to an intermediate value with type {jax_type(tracer.aval)} "
        f"wrapped in a {trace.jax_tracer_name} to escape the scope of the transformation.\n"
        "JAX transformations require that functions explicitly return their outputs, and "
        "disallow saving intermediate values to global state.\n"
        f"A tracer from the finished trace of {trace.name!r} {used}: a traced value escaped "
        "(e.g. stored in a global or a closure that outlived its jit/scan/grad). Pass it as an "
        "argument instead."
    )


def jax_type(aval: Any) -> str:
    """A type as JAX's messages write it: ``float32[2,4]`` (no weak mark)."""
    dtype = getattr(aval, "dtype", None)
    name = np.dtype(dtype).name if dtype is not None else str(aval)
    return f"{name}[{','.join(str(d) for d in getattr(aval, 'shape', ()))}]"


class new_main:
    """Context manager: push ``trace`` on this thread's stack at the next level.

    ``dynamic=True`` also makes it the dynamic trace (staging traces of jit
    and control flow), so that applications without tracer arguments are
    staged into it. On exit the trace is popped and marked inactive: its
    tracers can no longer be used.
    """

    def __init__(self, trace: Trace, dynamic: bool = False) -> None:
        self._trace = trace
        self.dynamic = dynamic
        self._saved_dynamic: Builder | None = None

    def __enter__(self) -> Any:
        trace = self._trace
        traces = _stack.traces
        trace.level = len(traces)
        trace.active = True
        traces.append(trace)
        _builders.append(trace)
        if self.dynamic:
            self._saved_dynamic = _stack.dynamic
            _stack.dynamic = trace  # type: ignore[assignment]
        return trace

    def __exit__(self, *exc: Any) -> None:
        popped = _stack.traces.pop()
        _builders.remove(self._trace)
        self._trace.active = False
        if self.dynamic:
            _stack.dynamic = self._saved_dynamic
        assert popped is self._trace, "trace stack corrupted"


class new_trace(new_main):
    """Context manager: ``with new_trace(name) as builder: ...`` (a dynamic Builder)."""

    def __init__(self, name: str) -> None:
        super().__init__(Builder(name), dynamic=True)

    @property
    def builder(self) -> Builder:
        return self._trace  # type: ignore[return-value]


def trace_to_program(
    fun: Callable[..., Any], in_avals: Sequence[ShapedArray], name: str, origins: Sequence[str]
) -> tuple[Program, list[Tracer], Any]:
    """Trace ``fun(*tracers)`` -> (program, captured outer tracers, raw output).

    ``fun`` takes one tracer per aval and returns a flat list of outputs.
    """
    with new_trace(name) as builder:
        tracers = [builder.new_input(av, o) for av, o in zip(in_avals, origins, strict=True)]
        outs = fun(*tracers)
        program = builder.build(outs)
    if config._values["check_tracer_leaks"]:
        # this frame's own references are not leaks: drop them first (the raw
        # output is then not returned; no caller needs it)
        del tracers, outs
        check_no_leaks(builder)
        return program, builder.captured, None
    return program, builder.captured, outs


# --- the leak checker (jax.checking_leaks) ---------------------------------------


def check_no_leaks(trace: Trace) -> None:
    """Raise JAX's ``Exception("Leaked trace ...")`` if a tracer of ``trace``
    (which has ended) is still reachable.

    Called with ``config.check_tracer_leaks`` on, by the transformations JAX
    checks (staging traces: jit, make_jaxpr, eval_shape, control-flow bodies,
    checkpoint, custom rules staged under jit; vmap), after the frame that
    ran the traced function has returned and dropped its own references, so
    that a live tracer is one the function stored somewhere (a global, a
    closure, an object). Tracers that only a reference cycle keeps alive are
    collected first: they can never be used again. A trace that ended by an
    exception is not checked (the traceback holds its tracers), as in JAX.
    """
    leaked = _live_tracers(trace)
    if leaked:
        # a live tracer may be garbage in a reference cycle: collect (a full
        # collection, slow in a large heap) only when there is one
        del leaked
        gc.collect()
        leaked = _live_tracers(trace)
    if leaked:
        raise _leaked_trace_error(trace, leaked)


def _live_tracers(trace: Trace) -> list[Tracer]:
    refs = trace._tracer_refs
    if refs is None:  # the check was turned on while the trace ran: scan the heap
        return [r for r in gc.get_referrers(trace) if isinstance(r, Tracer) and r._trace is trace]
    return [t for t in (ref() for ref in refs) if t is not None]


def _leaked_trace_error(trace: Trace, leaked: list[Tracer]) -> Exception:
    # JAX raises a plain Exception with these words: its trace class's name,
    # then per tracer where it was created and what keeps it alive
    blocks: list[str] = []
    for tracer in leaked:
        chain = leak_report.describe(
            tracer, trace.jax_tracer_name, trace._site_of(tracer), [leaked, blocks]
        )
        blocks.append(f"{tracer!r} from {tracer.origin}\n{chain}")
    details = "\n\n".join(blocks)
    return Exception(
        f"Leaked trace {trace.jax_trace_name}. Leaked tracer(s):\n\n{details}\n\nA function "
        f"transformed by {trace.name} stored a traced value where it outlives the "
        "transformation (a global, a closure, an object attribute); return it instead."
    )


# --- abstract values of Python objects -----------------------------------------


_scalar_avals: dict[tuple[Any, bool], ShapedArray] = {}


def scalar_aval(dtype: Any, weak_type: bool) -> ShapedArray:
    """``ShapedArray((), dtype, weak_type)``, shared: avals are immutable, and a
    traced ``x + 1.0`` makes two of them (building one costs ~3 us)."""
    key = (dtype, weak_type)
    aval = _scalar_avals.get(key)
    if aval is None:
        aval = _scalar_avals[key] = ShapedArray((), dtype, weak_type)
    return aval


class TypedScalar:
    """A Python scalar given an explicit dtype and weak type by promotion.

    ``x + 2`` with ``x: ~f32[]`` must see ``2`` as a *weak* float32; a NumPy
    scalar would be strong. Inside a trace it becomes a Literal.
    """

    __slots__ = ("value", "aval")

    def __init__(self, value: Any, dtype: np.dtype, weak_type: bool) -> None:
        self.value = np.asarray(value).astype(dtype)
        self.aval = scalar_aval(dtype, weak_type)

    def __repr__(self) -> str:
        return f"TypedScalar({self.value!r}, weak_type={self.aval.weak_type})"


# type -> function(value) -> ShapedArray, for array types defined elsewhere
# (the reference Array, the PJRT array).
_aval_handlers: dict[type, Callable[[Any], ShapedArray]] = {}
# type -> function(value) -> np.ndarray
_concrete_handlers: dict[type, Callable[[Any], np.ndarray]] = {}


def register_array_type(
    cls: type, aval_of: Callable[[Any], ShapedArray], to_numpy: Callable[[Any], np.ndarray]
) -> None:
    _aval_handlers[cls] = aval_of
    _concrete_handlers[cls] = to_numpy


register_array_type(TypedScalar, lambda s: s.aval, lambda s: s.value)


def is_array_like(value: Any) -> bool:
    return (
        isinstance(value, (Tracer, np.ndarray, np.generic))
        or type(value) in _aval_handlers
        or dtypes.is_python_scalar(value)
    )


def _method_hint(what: str, aval: Any) -> str:
    """JAX 0.10.2's sentence for ``tolist()``/``tobytes()`` of a traced array."""
    if what not in ("tolist()", "tobytes()"):
        return ""
    shape = f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"
    return f" The {what} method was called on traced array with shape {shape}."


def _conversion_hint(what: str) -> str:
    """JAX 0.10.2's sentence for ``float()``/``int()``/``complex()`` of a
    traced value (its concretization_function_error): convert the dtype instead."""
    name = what[:-2] if what.endswith("()") else ""
    if name not in ("float", "int", "complex"):
        return ""
    return (
        f" The problem arose with the `{name}` function. If trying to convert the data type "
        f"of a value, try using `x.astype({name})` or `jnp.array(x, {name})` instead."
    )


def get_aval(value: Any, op_name: str, position: int | str) -> ShapedArray:
    """The abstract value of an operand; a clear TypeError for non-arrays."""
    if isinstance(value, Tracer):
        return value.aval
    handler = _aval_handlers.get(type(value))
    if handler is not None:
        return handler(value)
    if dtypes.is_python_scalar(value):
        return _python_scalar_aval(value, op_name, position)
    if isinstance(value, (np.ndarray, np.generic)):
        if isinstance(value, np.ma.MaskedArray):
            raise masked_array_error(op_name, position)
        return ShapedArray(value.shape, _canonical_operand_dtype(value.dtype, op_name, position))
    if hasattr(value, "__jax_array__"):
        # JAX 0.10.2 converts these in the jnp functions (refimpl/jax_array_protocol.py),
        # the creation functions and the operators, never when abstracting one
        raise jax_array_error(op_name, position)
    # refimpl's words, then JAX 0.10.2's sentence (its get_aval's)
    raise TypeError(
        f"{op_name}: argument at position {position} is not a valid array value: got "
        f"{type(value).__name__} {_short_repr(value)}. Argument '{_short_str(value)}' of type "
        f"{type(value)} is not a valid JAX type."
    )


def jax_array_error(op_name: str, position: int | str) -> ValueError:
    """The error for abstracting an object that defines ``__jax_array__`` (a
    jit's argument, a primitive's operand), in JAX 0.10.2's words."""
    return ValueError(
        f"{op_name}: argument at position {position} defines __jax_array__. Triggering "
        "__jax_array__() during abstractification is no longer supported. To avoid this "
        "error, either explicitly convert your object using jax.numpy.array(), or register "
        "your object as a pytree."
    )


def check_transform_fun(fun: Any, api: str) -> None:
    """``TypeError`` unless ``fun`` is a function a transformation can trace
    (JAX's check_callable): not callable; a ``staticmethod`` object (callable
    since Python 3.10, but JAX refuses it); a generator function, whose call
    returns a generator instead of running the body."""
    if isinstance(fun, staticmethod):
        raise TypeError(
            f"{api}: staticmethod arguments are not supported, got {_short_repr(fun)} "
            "(apply the transformation under @staticmethod instead)"
        )
    if not callable(fun):
        raise TypeError(f"{api}: Expected a callable value, got {_short_repr(fun)}")
    if inspect.isgeneratorfunction(fun):
        raise TypeError(f"{api}: Expected a function, got a generator function: {fun!r}")


def masked_array_error(op_name: str, position: int | str) -> ValueError:
    """The error for a ``np.ma.MaskedArray`` input (JAX's ValueError): its mask
    would be ignored silently."""
    return ValueError(
        f"{op_name}: argument at position {position} is a numpy masked array; numpy "
        "masked arrays are not supported as direct inputs to JAX functions. Use "
        "arr.filled() to convert the value to a standard numpy array."
    )


def _short_str(value: Any) -> str:
    try:
        text = str(value)
    except Exception:  # a str() that fails: its type's default
        text = object.__repr__(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _canonical_operand_dtype(dtype: np.dtype, op_name: str, position: int | str) -> np.dtype:
    try:
        return dtypes.canonicalize_dtype(dtype)
    except TypeError:
        if dtype == dtypes.float0:  # JAX 0.10.2's words (lax's check)
            raise TypeError(
                f"{op_name}: Called {op_name} with a float0 at position {position}. float0s do "
                "not support any operations by design, because they are not compatible with "
                "non-trivial vector spaces. No implicit dtype conversion is done. You can use "
                "np.zeros_like(arr, dtype=np.float) to cast a float0 array to a regular zeros "
                "array. \nIf you didn't expect to get a float0 you might have accidentally "
                "taken a gradient with respect to an integer argument."
            ) from None
        raise TypeError(
            f"{op_name}: argument at position {position} has unsupported dtype {dtype}"
        ) from None


def _python_scalar_aval(value: Any, op_name: str, position: int | str) -> ShapedArray:
    kind = dtypes.python_scalar_type(value) or type(value)  # an IntEnum member: int
    key = (kind, config._values["enable_x64"])
    aval = _python_scalar_avals.get(key)
    if aval is None:  # weak unless bool (dtypes.weak_type_of_value)
        aval = scalar_aval(dtypes.python_scalar_dtype(value), kind is not bool)
        _python_scalar_avals[key] = aval
    if kind is int:
        low, high = _int_bounds(aval.dtype)
        if not low <= value <= high:
            raise OverflowError(f"Python int {value} too large to convert to {aval.dtype.name}")
    return aval


# (Python scalar type, x64) -> its aval: every ``x + 1`` reads one
_python_scalar_avals: dict[tuple[type, bool], ShapedArray] = {}


@functools.cache
def _int_bounds(dtype: np.dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)  # a new iinfo per Python int operand cost more than the op
    return int(info.min), int(info.max)


def concrete_value(value: Any, aval: ShapedArray) -> np.ndarray:
    """A NumPy array holding ``value`` with exactly ``aval``'s dtype."""
    handler = _concrete_handlers.get(type(value))
    if handler is not None:
        array = handler(value)
    else:
        array = np.asarray(value)
    if array.dtype != aval.dtype:
        array = array.astype(aval.dtype)
    return array


# --- evaluating a Program by binding ------------------------------------------------


def eval_program_bind(
    program: Program,
    args: Sequence[Any],
    apply: Callable[[Eqn, list[Any]], list[Any] | None] | None = None,
) -> list[Any]:
    """Evaluate ``program`` on ``args`` by re-applying each equation's primitive
    with ``bind`` (JAX's ``eval_jaxpr``).

    Under a transformation this transforms the program: with JVP tracers as
    ``args`` it computes the program's JVP, inside a staging trace it copies
    the equations into the current trace (inlining), outside any trace it
    runs eagerly. Literals keep their weak type; weakly typed array constants
    too. ``apply(eqn, values)``, when given, evaluates an equation itself
    (returning its outputs) or returns None to have it bound (the equations
    on a ``Ref`` of ``refimpl.ref_jaxpr``).
    """
    if len(args) != len(program.in_vars):
        raise TypeError(
            f"eval_program_bind: program takes {len(program.in_vars)} inputs, got {len(args)}"
        )
    env: dict[int, Any] = {}
    for var, value in zip(program.const_vars, program.consts, strict=True):
        env[var.id] = _const_operand(value, var.aval)
    for var, value in zip(program.in_vars, args, strict=True):
        env[var.id] = value

    def read(atom: Atom) -> Any:
        if isinstance(atom, Literal):
            return TypedScalar(atom.value, atom.aval.dtype, atom.aval.weak_type)
        return env[atom.id]

    for eqn in program.eqns:
        values = [read(a) for a in eqn.inputs]
        outs = None if apply is None else apply(eqn, values)
        if outs is None:
            outs = eqn.primitive.bind(*values, **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
        for var, value in zip(eqn.outputs, outs, strict=True):
            env[var.id] = value
    return [read(atom) for atom in program.out_vars]


def _const_operand(value: np.ndarray, aval: ShapedArray) -> Any:
    if isinstance(value, Tracer) or isinstance(aval, AbstractRef):
        # an outer tracer make_jaxpr's program closed over (under vmap, jit,
        # grad): its constant, bound as it is
        return value
    if aval.shape == ():
        return TypedScalar(value, aval.dtype, aval.weak_type)
    if aval.weak_type:
        # a weakly typed constant is a reference-backend array (through the
        # registry: the backend's arrays import this module)
        (array_type,) = backends.get("ref").array_types
        return array_type(np.asarray(value), weak_type=True)
    return value
