"""The Primitive: one object holding all of an operation's rules side by side.

* ``abstract_eval(*avals, **params)`` -- checks operands, returns output
  ShapedArray(s). Errors name the primitive and the offending shapes/dtypes.
* ``impl(*arrays, **params)`` -- the reference semantics on NumPy arrays. It
  must return arrays with exactly the dtype/shape ``abstract_eval`` promised;
  the interpreter checks this.
* ``mask_rule`` and ``lowering`` -- added by the masking and PJRT layers,
  written next to the other rules in the primitive's module.

``bind`` applies the primitive: inside a trace it records an equation,
otherwise it runs eagerly on concrete arrays.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import backends, dtypes, tracing
from refimpl.config import config
from refimpl.core import Program, ShapedArray, ShapeError, shape_error_at

# How many impls were (re)defined so far: the interpreter resolves each
# equation's impl once per Program (``interpreter._Plan``) and re-resolves when
# this changes.
_impls_defined = 0


def impl_generation() -> int:
    return _impls_defined


def impl_function(primitive: Primitive) -> Callable[..., Any]:
    """The function :attr:`Primitive.impl` is (no wrapper frame, for the
    eager loops); one that raises when there is none, or a subclass's own
    ``impl``."""
    if type(primitive).impl is Primitive.impl and primitive._eval_rule is not None:
        return primitive._eval_rule
    return primitive.impl


# Primitives JAX's eager ``bind`` evaluates by binding their body's equations
# (each then dispatched eagerly) rather than compiling the call, mapped to the
# parameter that holds that body: checkpoint (remat's impl), the custom_jvp and
# custom_vjp calls (the eval trace's custom rules), composite (its impl). Their
# modules register them. A backend that compiles eager primitives evaluates
# these so too: the user's impls and callbacks inside run as in JAX, and no
# compiled call is kept per call's params (rules, functions, tracers).
EAGER_BODIES: dict[Primitive, str] = {}


def library_impl(primitive: Primitive) -> bool:
    """Whether ``primitive``'s impl is refimpl's own rule, not a user's: not a
    user-defined primitive, not one of refimpl's given another impl
    (``sin_p.def_impl(counting)``), not a subclass's ``impl``. JAX's eager
    ``bind`` calls ``Primitive.impl``, so a user's impl runs eagerly on the
    host, where a compiled program never calls it; only refimpl's own impls
    may be replaced by the backend's compiled primitive."""
    raw = primitive._raw_eval_rule
    return (
        raw is not None and raw is primitive._library_raw and type(primitive).impl is Primitive.impl
    )


def program_function(primitive: Primitive) -> Callable[..., Any]:
    """The function the interpreter runs an equation of ``primitive`` with
    (the reference backend's compiled program, jit's included): refimpl's own
    rule for its primitives (:func:`seal_library_rules`), as JAX's compiled
    programs run its lowering rules and never ``Primitive.impl``, which a
    user may replace (``sin_p.def_impl(counting)`` counts eager calls only);
    the ``impl`` of a primitive defined later (a user's: its only rule)."""
    rule = primitive._library_rule
    if rule is not None and type(primitive).impl is Primitive.impl:
        return rule
    if primitive._eval_rule is None and type(primitive).impl is Primitive.impl:
        return primitive._no_program_rule
    return impl_function(primitive)


def seal_library_rules() -> None:
    """Record every primitive's impl now (refimpl's own, when its package has
    been imported) as the rule its programs run with (:func:`program_function`)."""
    for primitive in _all_primitives:
        primitive._library_raw = primitive._raw_eval_rule
        primitive._library_rule = primitive._eval_rule


# Primitives whose impls take int4/uint4 arrays as they are (they reinterpret
# bits or convert between dtypes, where widening would change the answer)
_NATIVE_INT4 = frozenset(["convert_element_type", "bitcast_convert_type"])
# Primitives that read an int4 value's 4 bits as unsigned: widened to its nibble
_NIBBLE_INT4 = frozenset(["shift_right_logical", "clz"])
# and the one that reads a uint4's as signed (XLA's arithmetic shift of 1111 fills 1s)
_SIGNED_INT4 = frozenset(["shift_right_arithmetic"])


def _int4_widening(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` run on ``int4``/``uint4`` operands through ``int8``/``uint8``.

    NumPy has few loops for ml_dtypes' 4-bit integers (``-x`` of an int4 array
    is int8, ``np.iinfo`` refuses them), so an impl sees them widened,
    exactly (sign-extended; the unsigned nibble for the primitives that read
    the bits as unsigned), and each result of the widened dtype is narrowed
    back by wrapping modulo 16, which is XLA's 4-bit two's complement
    arithmetic. Primitives with sub-programs or callbacks (any param that is
    a program or callable) are left alone: their inputs flow on unchanged."""

    def impl(*values: Any, **params: Any) -> Any:
        for value in values:
            if isinstance(value, np.ndarray) and value.dtype in dtypes.INT4_DTYPES:
                break
        else:
            return fn(*values, **params)
        if any(_holds_code(p) for p in params.values()):
            return fn(*values, **params)
        widened: dict[np.dtype, np.dtype] = {}
        args = []
        for value in values:
            if isinstance(value, np.ndarray) and value.dtype in dtypes.INT4_DTYPES:
                if name in _NIBBLE_INT4:
                    wide = value.view(np.uint8) & np.uint8(0x0F)
                elif name in _SIGNED_INT4:
                    wide = value.view(dtypes.int4).astype(np.int8)
                else:
                    wide = value.astype(np.int8 if value.dtype == dtypes.int4 else np.uint8)
                widened[wide.dtype] = value.dtype
                value = wide
            args.append(value)
        out = fn(*args, **params)
        if name == "clz":  # the nibble's leading zeros counted in 8 bits
            out = out - np.uint8(4)
        keep = {p for p in params.values() if isinstance(p, np.dtype)}  # preferred_element_type
        narrow = {w: n for w, n in widened.items() if w not in keep}

        def back(x: Any) -> Any:
            x = np.asarray(x)
            if x.dtype not in narrow:
                return x
            low = -8 if narrow[x.dtype] == dtypes.int4 else 0  # wrap modulo 16
            return ((x.astype(np.int64) - low) % 16 + low).astype(narrow[x.dtype])

        if isinstance(out, (list, tuple)):
            return type(out)(back(x) for x in out)
        return back(out)

    impl.__name__ = getattr(fn, "__name__", name)
    impl.__doc__ = fn.__doc__
    impl.__wrapped__ = fn  # type: ignore[attr-defined]
    return impl


# Every primitive with an impl; their impls widen 4-bit operands only once an
# int4/uint4 dtype has appeared (dtypes.on_first_int4), so no other program
# pays for the check.
_all_primitives: list[Primitive] = []
_int4_active = False


def all_primitives() -> list[Primitive]:
    """Every primitive with an evaluation rule, each once (the rule tables of
    ``jax.interpreters`` iterate over them)."""
    return list({id(p): p for p in _all_primitives}.values())


def _int4_impl(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn if name in _NATIVE_INT4 else _int4_widening(fn, name)


def _activate_int4() -> None:
    global _int4_active, _impls_defined
    _int4_active = True
    for primitive in _all_primitives:
        if primitive._raw_eval_rule is not None:
            primitive._eval_rule = _int4_impl(primitive.name, primitive._raw_eval_rule)
        if primitive._library_raw is not None:
            primitive._library_rule = _int4_impl(primitive.name, primitive._library_raw)
    _impls_defined += 1  # the interpreter's plans hold impls: they are out of date


def _holds_code(param: Any) -> bool:
    if isinstance(param, tuple):
        return any(_holds_code(p) for p in param)
    # a dtype given as its scalar type (np.int32) is callable, yet no code
    return (callable(param) and not isinstance(param, type)) or isinstance(param, Program)


class Primitive:
    def __init__(self, name: str, *, multiple_results: bool = False) -> None:
        self.name = name
        self.multiple_results = multiple_results
        self._abstract_rule: Callable[..., Any] | None = None
        self._eval_rule: Callable[..., Any] | None = None
        self._raw_eval_rule: Callable[..., Any] | None = None  # _eval_rule before 4-bit widening
        # refimpl's own rule, which programs run with (seal_library_rules), and raw
        self._library_rule: Callable[..., Any] | None = None
        self._library_raw: Callable[..., Any] | None = None
        self.mask_rule: Callable[..., Any] | None = None
        self.lowering: Callable[..., Any] | None = None
        # (x64, params, input avals) -> output avals of eager applications
        self._out_avals_cache: dict[tuple, tuple[ShapedArray, ...]] = {}
        # Transformation rules (refimpl.transforms.ad / batching); None means
        # the primitive has no such rule and the transformation raises
        # NotImplementedError naming it.
        self.jvp_rule: Callable[..., Any] | None = None
        self.transpose_rule: Callable[..., Any] | None = None
        self.batch_rule: Callable[..., Any] | None = None
        # Primitives holding sub-programs (jit, scan, cond, custom rules):
        # under linearize, split the application into a known (primal) part
        # and a linear (tangent) part; same signature as jvp_rule.
        self.linearize_rule: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        # its name, as JAX 0.10.2's (``print(eqn.primitive)`` shows ``add``)
        return self.name

    # -- rule registration (used as decorators) --

    def def_abstract_eval(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self._abstract_rule = fn
        return fn

    def def_impl(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        global _impls_defined
        self._raw_eval_rule = fn
        self._eval_rule = _int4_impl(self.name, fn) if _int4_active else fn
        _all_primitives.append(self)
        _impls_defined += 1  # the interpreter's plans hold impls: they are out of date
        return fn

    def def_mask(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.mask_rule = fn
        return fn

    def def_lowering(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.lowering = fn
        return fn

    def def_jvp(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.jvp_rule = fn
        return fn

    def def_transpose(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.transpose_rule = fn
        return fn

    def def_batch(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.batch_rule = fn
        return fn

    # -- rules --

    def abstract_eval(self, *avals: ShapedArray, **params: Any) -> Any:
        if self._abstract_rule is None:  # JAX's error for a primitive without the rule
            raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented")
        return self._abstract_rule(*avals, **params)

    @property
    def impl(self) -> Callable[..., Any]:
        """The evaluation rule (``impl(*values, **params)``), an attribute as
        JAX's ``Primitive.impl``: a saved ``p.impl`` stays the function it
        was when a later ``def_impl`` replaces it, so the monkeypatching idiom
        ``old = p.impl; p.def_impl(counting(old)); ...; p.def_impl(old)``
        works (api_test's RematTest counts sin calls so)."""
        return self._eval_rule if self._eval_rule is not None else self._no_impl

    def _no_impl(self, *values: np.ndarray, **params: Any) -> Any:
        raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")

    def _no_program_rule(self, *values: np.ndarray, **params: Any) -> Any:
        # a program's equation (jit's): JAX's words for its compiled form's
        # missing rule, then why the reference backend has none
        raise NotImplementedError(
            f"MLIR translation rule for primitive '{self.name}' not found for platform cpu: "
            "the reference backend runs a program's equations by their primitives' impls, "
            f"and '{self.name}' has none (Evaluation rule for '{self.name}' not implemented)"
        )

    # -- application --

    def out_avals(self, in_avals: list[ShapedArray], params: dict[str, Any]) -> list[ShapedArray]:
        try:
            out = self.abstract_eval(*in_avals, **params)
        except ShapeError as error:  # an impossible output shape: say which primitive
            raise shape_error_at(error, self.name) from None
        if isinstance(out, (tuple, list)) != self.multiple_results:
            # a user primitive's rule of the other arity: JAX 0.10.2's ValueError and words
            raise ValueError(
                f"{self.name}.abstract_eval() method should return a tuple or a list iff "
                f"{self.name}.multiple_results."
            )
        return list(out) if self.multiple_results else [out]

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive: the top trace among the tracer arguments and
        the dynamic (staging) trace processes it (``tracing.find_top_trace``);
        with no trace, it runs eagerly."""
        trace = tracing.find_top_trace(args)
        if _axis_owner is not None:  # a named axis is bound somewhere (collectives)
            trace = _axis_owner(self, trace, params)
        if trace is not None:
            outs = trace.process_primitive(self, args, params)
        else:
            if (
                self._eval_rule is None
                and self.lowering is None
                and type(self).impl is Primitive.impl
            ):
                self._no_impl()  # JAX evaluates eagerly by the impl: its error comes first
            eager = _eager or _import_eager()
            for arg in args if eager.binders else ():
                binder = eager.binders.get(type(arg))  # a device array's cached dispatch,
                if binder is not None:  # before abstract evaluation
                    out = binder(self, args, params)
                    if out is not NotImplemented:
                        return out
                    break
            in_avals = [tracing.get_aval(a, self.name, i) for i, a in enumerate(args)]
            out_avals = self.eager_out_avals(in_avals, params)
            outs = eager.apply(self, args, in_avals, out_avals, params)
        return outs if self.multiple_results else outs[0]

    def eager_out_avals(
        self, in_avals: list[ShapedArray], params: dict[str, Any]
    ) -> list[ShapedArray]:
        """:meth:`out_avals`, memoized per (params, input avals, x64 flag).

        Eager code applies the same primitive to the same types over and
        over; abstract evaluation (checks, promotion, dtype canonicalization)
        depends on nothing else, so it runs once per signature. Params that
        are not plain values (:func:`_params_key`) and the collectives take
        the uncached path; errors are never cached, so they are raised on
        every call.
        """
        # (a collective's types can depend on the sizes of the bound axes too)
        key = None if getattr(self, "axis_dependent", False) else _signature_key(params, in_avals)
        if key is None:
            return self.out_avals(in_avals, params)
        cache = self._out_avals_cache
        try:
            avals = cache.get(key)
        except TypeError:  # an aval type that cannot be hashed
            return self.out_avals(in_avals, params)
        if avals is None:
            avals = tuple(self.out_avals(in_avals, params))
            if len(cache) >= _MAX_SIGNATURES:  # shapes can vary without bound
                cache.clear()
            cache[key] = avals
        return list(avals)


# --- the memo of eager abstract evaluation -----------------------------------------

_MAX_SIGNATURES = 1024  # per primitive
# While a vmap(axis_name=) or a reference pmap binds an axis (in any thread):
# (primitive, top trace, params) -> the trace to apply it in. A primitive whose
# sub-programs (a scan body, cond branches, ...) hold a collective over a
# bound axis goes to the axis's trace even when no operand is one of its
# tracers (refimpl.primitives.collectives.sub_program_owner).
_axis_owner: Callable[[Primitive, Any, dict[str, Any]], Any] | None = None
_eager: Any = None  # the reference backend's eager runner, loaded on first use (it
# imports the array types, which import this module)


def _import_eager() -> Any:
    global _eager
    _eager = backends.get("ref").eager
    return _eager


def _signature_key(params: dict[str, Any], in_avals: list[ShapedArray]) -> tuple | None:
    """A key telling apart every two calls that abstract evaluation could
    treat differently, or None when the params have no such key."""
    if not params:
        return (config._values["enable_x64"], *in_avals)
    try:
        return (config._values["enable_x64"], _params_key(params), *in_avals)
    except _NoKey:
        return None


class _NoKey(Exception):
    pass


# Values of these types are interchangeable when equal (1 == 1.0 == True are
# not: the type is part of the key; so is a float's repr, for -0.0 and nan).
_PLAIN_TYPES = (type(None), bool, int, str)


def _params_key(params: dict[str, Any]) -> tuple:
    return tuple((name, _value_key(value)) for name, value in params.items())


def _value_key(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN_TYPES or isinstance(value, (np.dtype, type, enum.Enum)):
        return kind, value
    if kind is float or kind is complex or isinstance(value, np.generic):
        return kind, repr(value)
    if kind is tuple:
        return kind, tuple(_value_key(v) for v in value)
    raise _NoKey


def check_impl_outputs(
    primitive: Primitive, outs: Any, out_avals: list[ShapedArray]
) -> list[np.ndarray]:
    """Normalize impl results to arrays and check them against the avals."""
    if type(outs) is np.ndarray and not primitive.multiple_results and len(out_avals) == 1:
        aval = out_avals[0]  # the common case: one plain array, nothing to normalize
        if outs.shape == aval.shape and outs.dtype == aval.dtype:
            return [outs]
    outs = list(outs) if primitive.multiple_results else [outs]
    arrays = []
    for index, (out, aval) in enumerate(zip(outs, out_avals, strict=True)):
        array = np.asarray(out)
        if array.shape != aval.shape or array.dtype != aval.dtype:
            raise AssertionError(
                f"internal error: {primitive.name} impl output {index} is "
                f"{array.dtype}{list(array.shape)}, abstract_eval said {aval.str_short()}"
            )
        arrays.append(array)
    return arrays


# --- operand checking helpers shared by the primitive families ---------------


# lax functions whose refimpl.numpy counterpart promotes mixed dtypes (JAX's
# _JNP_FUNCTION_EQUIVALENTS): a dtype mismatch error points the user there
_RNP_EQUIVALENTS = {
    **{n: n for n in ("add", "bitwise_and", "bitwise_or", "bitwise_xor", "nextafter")},
    **{n: n for n in ("greater", "greater_equal", "less", "less_equal", "logical_and")},
    **{n: n for n in ("logical_or", "logical_xor", "concatenate")},
    "div": "divide", "eq": "equal", "max": "maximum", "min": "minimum", "mul": "multiply",
    "ne": "not_equal", "pow": "float_power", "select": "where", "select_n": "where",
    "shift_left": "left_shift", "shift_right_logical": "right_shift",
    "shift_right_arithmetic": "right_shift", "sub": "subtract", "atan2": "arctan2",
}  # fmt: skip


def check_same_dtypes(name: str, avals: list[ShapedArray]) -> None:
    first = avals[0].dtype
    for aval in avals[1:]:
        if aval.dtype != first:
            listed = ", ".join(a.dtype.name for a in avals)
            message = f"lax.{name} requires arguments to have the same dtypes, got {listed}."
            if name in _RNP_EQUIVALENTS:
                equiv = _RNP_EQUIVALENTS[name]
                message += (
                    f" (Tip: rnp.{equiv} (refimpl.numpy.{equiv}) is a similar function "
                    "that does automatic type promotion on inputs)."
                )
            raise TypeError(message)


def check_same_shapes(name: str, avals: list[ShapedArray]) -> None:
    first = avals[0].shape
    for aval in avals[1:]:
        if aval.shape != first:
            listed = ", ".join(str(a.shape) for a in avals)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {listed}")


def elementwise_shape(name: str, avals: list[ShapedArray]) -> tuple[int, ...]:
    """The common shape of elementwise operands: equal shapes, except that
    rank-0 operands broadcast (as in JAX's lax, where ``mul a 2.0:f32[]``)."""
    shaped = [a for a in avals if a.shape != ()]
    if shaped:
        check_same_shapes(name, shaped)
        return shaped[0].shape
    return ()


def check_dtype_in(name: str, aval: ShapedArray, allowed: Callable[[np.dtype], bool], what: str):
    if not allowed(aval.dtype):
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}; it takes {what}")


def all_weak(avals: list[ShapedArray]) -> bool:
    return all(a.weak_type for a in avals)


def normalize_axis(name: str, axis: int, ndim: int, arg: str = "axis") -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{name}: {arg} must be an int, got {axis!r}")
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        # JAX's words (its canonicalize_axis), the argument named when not "axis"
        named = "" if arg == "axis" else f"{arg}: "
        raise ValueError(
            f"{name}: {named}axis {axis} is out of bounds for array of dimension {ndim}"
        )
    return int(axis) % max(ndim, 1)


def as_int_tuple(name: str, value: Any, arg: str) -> tuple[int, ...]:
    """A tuple of Python ints from a sequence, with an error naming ``arg``."""
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name}: {arg} must be a sequence of ints, got {value!r}") from None
    for item in items:
        plain_int = isinstance(item, (int, np.integer)) and not isinstance(item, bool)
        if not plain_int and not _is_int_scalar_array(item):
            # Python's words for a non-integer too (JAX reads these with operator.index)
            why = (
                "" if isinstance(item, bool)
                else f": '{type(item).__name__}' object cannot be interpreted as an integer"
            )  # fmt: skip
            raise TypeError(f"{name}: {arg} must be a sequence of ints, got {value!r}{why}")
    # a concrete integer array counts as its ints (JAX accepts jnp.array([1, 0]) as a
    # permutation or slice sizes); a traced one fails to convert, a TypeError as in JAX
    return tuple(operator.index(i) for i in items)


def _is_int_scalar_array(item: Any) -> bool:
    dtype = getattr(item, "dtype", None)
    return dtype is not None and getattr(item, "shape", None) == () and np.dtype(dtype).kind in "iu"


dtypes.on_first_int4(_activate_int4)
