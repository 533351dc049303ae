"""Lowering: a Program -> a StableHLO module, built with jaxlib's MLIR bindings.

This is the PJRT backend's compiler front end. It walks a Program the way the
reference interpreter does, but instead of computing each equation with
NumPy it asks the equation's primitive for its *lowering rule* (registered
with ``@prim.def_lowering`` next to the primitive's other rules), which emits
StableHLO operations for it::

    @add_p.def_lowering
    def _add_lowering(ctx, x, y):
        return [ctx.hlo.add(*ctx.broadcast_operands(x, y))]

A rule gets a :class:`RuleContext` (the types of the equation's inputs and
outputs, ``ctx.avals_in`` / ``ctx.avals_out``, and small helpers), one
``ir.Value`` per input, and the equation's params; it returns one
``ir.Value`` per output. Rules must reproduce the reference semantics (the
primitive's ``impl``), not merely "what XLA does": where StableHLO leaves a
case open or XLA differs from the reference, the rule spells the reference's
answer out with explicit operations (see e.g. :meth:`RuleContext.convert`).

What this module decides for every rule:

* Types: a ``ShapedArray`` becomes ``tensor<shape x element>``; weak types
  are erased here (they only matter to tracing). bool is ``i1``, unsigned
  integers are ``ui8``..``ui64``, bfloat16 ``bf16``, complex ``complex<f32>``.
  With ``enable_x64`` off the Program holds no 64-bit type, and no rule adds
  one.
* Literals and program constants become ``stablehlo.constant`` operations.
* A sub-program is either inlined (:meth:`RuleContext.lower_program`, used by
  loops and branches, whose regions hold the body) or becomes a private
  function called with ``func.call`` (:meth:`RuleContext.call`, used by
  nested ``jit``).
* ``@main`` is public; a donated input aliased to output ``j`` (the donation
  plan of ``refimpl.transforms.donation``) carries ``tf.aliasing_output = j``,
  which makes XLA write output ``j`` into that input's buffer.

Serialization (:func:`to_portable_artifact`) produces a StableHLO portable
artifact for a target version; CHLO operations (``chlo.erf``, ``chlo.asin``,
...) are legalized to StableHLO on the way, exactly as JAX's export does.

Only jaxlib is used here, never ``jax``: ``jaxlib.mlir`` for the IR and
jaxlib's ``register_dialects`` helper (an internal of the pinned jaxlib) to
register the dialects.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, test_events
from refimpl.backends.pjrt import host_callbacks
from refimpl.backends.pjrt.runtime import local_platform
from refimpl.core import Literal, Program, ShapedArray, Var, subprograms
from refimpl.errors import LoweringError
from refimpl.primitives import debug

# fills rule_context.unroll_scans, which scan's lowering rule (control_flow) uses
from refimpl.transforms import scan as _scan  # noqa: F401
from refimpl.transforms.dce import live_program

try:  # jaxlib is only needed by the PJRT backend
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import chlo, func
    from jaxlib.mlir.dialects import stablehlo as hlo
except ImportError as _err:  # pragma: no cover - jaxlib is a dependency
    _IMPORT_ERROR: ImportError | None = _err
else:
    _IMPORT_ERROR = None
try:  # a jaxlib internal (pinned jaxlib); other jaxlibs may move it: see mlir_context
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
except ImportError:  # pragma: no cover - depends on the installed jaxlib
    _jax_mlir_ext = None  # type: ignore[assignment]  # the optional import's fallback

__all__ = [
    "LoweringError",
    "RuleContext",
    "ir_element_type",
    "ir_type",
    "lower_program",
    "mlir_context",
    "module_text",
    "to_portable_artifact",
]


# --- the MLIR context ---------------------------------------------------------------

_thread_state = threading.local()


def mlir_context() -> ir.Context:
    """This thread's MLIR context with the func, stablehlo and chlo dialects loaded.

    An MLIR context must not be used by two threads at once, so each thread
    builds its own once and keeps it.
    """
    context = getattr(_thread_state, "context", None)
    if context is None:
        if _IMPORT_ERROR is not None:
            raise ImportError(f"lowering needs jaxlib: {_IMPORT_ERROR}") from _IMPORT_ERROR
        context = ir.Context()
        register = getattr(_jax_mlir_ext, "register_dialects", None)
        if register is not None:
            registry = ir.DialectRegistry()
            register(registry)
            context.append_dialect_registry(registry)
        # else (a jaxlib other than the pinned one, without the helper): rely
        # on the dialects jaxlib's MLIR site initialization registers and on
        # the explicit registrations below; a missing one fails when the
        # first op is built, with MLIR's message naming the dialect.
        context.load_all_available_dialects()
        hlo.register_dialect(context)
        chlo.register_dialect(context)
        _thread_state.context = context
    return context


# --- types --------------------------------------------------------------------------


_FLOAT8_TYPES: dict[np.dtype, Any] = {
    dtypes.float8_e4m3fn: ir.Float8E4M3FNType,
    dtypes.float8_e5m2: ir.Float8E5M2Type,
    dtypes.float8_e4m3fnuz: ir.Float8E4M3FNUZType,
    dtypes.float8_e5m2fnuz: ir.Float8E5M2FNUZType,
    dtypes.float8_e4m3b11fnuz: ir.Float8E4M3B11FNUZType,
    dtypes.float8_e3m4: ir.Float8E3M4Type,
    dtypes.float8_e4m3: ir.Float8E4M3Type,
}


def _raw(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``array``'s bits as a NumPy type MLIR reads: ml_dtypes' float types as
    unsigned integers of their width."""
    if dtype == dtypes.bfloat16:
        return array.view(np.uint16)
    if dtype in _FLOAT8_TYPES:
        return array.view(np.uint8)
    return array


def ir_element_type(dtype: np.dtype) -> ir.Type:
    """The MLIR element type of a refimpl dtype."""
    dtype = np.dtype(dtype)
    if dtypes.is_bool(dtype):
        return ir.IntegerType.get_signless(1)
    if dtype == dtypes.int4:
        return ir.IntegerType.get_signless(4)
    if dtype == dtypes.uint4:
        return ir.IntegerType.get_unsigned(4)
    if dtypes.is_signed_int(dtype):
        return ir.IntegerType.get_signless(8 * dtype.itemsize)
    if dtypes.is_unsigned_int(dtype):
        return ir.IntegerType.get_unsigned(8 * dtype.itemsize)
    if dtype == dtypes.bfloat16:
        return ir.BF16Type.get()
    if dtype in _FLOAT8_TYPES:
        return _FLOAT8_TYPES[dtype].get()
    if dtype == np.float16:
        return ir.F16Type.get()
    if dtype == np.float32:
        return ir.F32Type.get()
    if dtype == np.float64:
        return ir.F64Type.get()
    if dtype == np.complex64:
        return ir.ComplexType.get(ir.F32Type.get())
    if dtype == np.complex128:
        return ir.ComplexType.get(ir.F64Type.get())
    raise TypeError(f"lowering: dtype {dtype} has no StableHLO element type")


def ir_type(aval: ShapedArray) -> ir.RankedTensorType:
    """``tensor<...>`` for an abstract value (its weak type is dropped)."""
    return ir.RankedTensorType.get(list(aval.shape), ir_element_type(aval.dtype))


def _tensor_type(shape: Sequence[int], dtype: np.dtype) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), ir_element_type(dtype))


def shape_of(value: ir.Value) -> tuple[int, ...]:
    return tuple(ir.RankedTensorType(value.type).shape)


# --- constants ----------------------------------------------------------------------


def constant(value: Any, dtype: np.dtype, shape: Sequence[int] = ()) -> ir.Value:
    """A ``stablehlo.constant`` holding ``value`` converted to ``dtype``.

    A scalar ``value`` with a non-empty ``shape`` is a splat (every element
    equal); an array ``value`` must already have ``shape``.
    """
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore"):  # an out-of-range float becomes inf, as XLA's convert
        array = np.asarray(value).astype(dtype)
    shape = tuple(shape) if array.ndim == 0 else array.shape
    if array.ndim == 0 or _is_uniform(array):
        # an empty array is a splat of any value (a zero: there is no element to take)
        return _splat(array.reshape(-1)[0] if array.size else np.zeros((), dtype), dtype, shape)
    if dtypes.is_bool(dtype):
        # MLIR packs i1 elements into bits; build the array as ui8 and convert
        as_bytes = constant(array.astype(np.uint8), np.dtype(np.uint8))
        return hlo.convert(_tensor_type(shape, dtype), as_bytes)
    raw = _raw(np.ascontiguousarray(array), dtype)
    # jaxlib's stubs want a Buffer: numpy's stubs give ndarray one only on Python 3.12+
    attr = ir.DenseElementsAttr.get(raw, type=ir_element_type(dtype), shape=list(shape))  # type: ignore[call-overload]
    return hlo.constant(attr)


def _is_uniform(array: np.ndarray) -> bool:
    if array.size == 0:
        return True
    flat = array.reshape(-1)
    return bool(np.all(flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)))


def _splat(scalar: Any, dtype: np.dtype, shape: tuple[int, ...]) -> ir.Value:
    """A constant whose elements all equal ``scalar`` (exact bits, NaN and -0.0 kept)."""
    tensor = _tensor_type(shape, dtype)
    scalar = np.asarray(scalar, dtype).reshape(1)
    if dtypes.is_bool(dtype):
        attr = ir.DenseElementsAttr.get_splat(tensor, ir.BoolAttr.get(bool(scalar[0])))
    else:
        # a one-element buffer with a larger shape is read as a splat
        raw = _raw(scalar, dtype)
        attr = ir.DenseElementsAttr.get(raw, type=ir_element_type(dtype), shape=list(shape))  # type: ignore[call-overload]
    return hlo.constant(attr)


# --- the per-equation context handed to lowering rules ------------------------------


class RuleContext:
    """What a lowering rule sees: its equation's types and helpers to emit StableHLO.

    ``hlo`` and ``chlo`` are jaxlib's dialect modules, so primitive modules
    need not import jaxlib themselves (refimpl imports without it).
    """

    def __init__(
        self,
        module: ModuleBuilder,
        name: str,
        avals_in: Sequence[ShapedArray],
        avals_out: Sequence[ShapedArray],
    ) -> None:
        self.module = module
        self.name = name
        self.avals_in = list(avals_in)
        self.avals_out = list(avals_out)
        self.hlo = hlo
        self.chlo = chlo
        self.ir = ir

    # -- types and constants --

    def ir_type(self, aval: ShapedArray) -> ir.RankedTensorType:
        return ir_type(aval)

    def tensor_type(self, shape: Sequence[int], dtype: np.dtype) -> ir.RankedTensorType:
        return _tensor_type(shape, dtype)

    def constant(self, value: Any, dtype: np.dtype, shape: Sequence[int] = ()) -> ir.Value:
        return constant(value, dtype, shape)

    def shape_of(self, value: ir.Value) -> tuple[int, ...]:
        return shape_of(value)

    # -- shapes --

    def broadcast_to(self, value: ir.Value, dtype: np.dtype, shape: Sequence[int]) -> ir.Value:
        """A rank-0 ``value``, or one of the same rank with size-1 dims,
        broadcast to ``shape`` (a value of that shape unchanged)."""
        have = shape_of(value)
        if have == tuple(shape):
            return value
        if have == ():
            return hlo.broadcast_in_dim(_tensor_type(shape, dtype), value, [])
        assert len(have) == len(shape), "broadcast_to keeps the rank"
        return hlo.broadcast_in_dim(_tensor_type(shape, dtype), value, list(range(len(shape))))

    def broadcast_operands(self, *values: ir.Value) -> list[ir.Value]:
        """The operands of an elementwise op broadcast to the output shape
        (from rank 0, or along size-1 dims)."""
        shape = self.avals_out[0].shape
        return [
            self.broadcast_to(v, a.dtype, shape) for v, a in zip(values, self.avals_in, strict=True)
        ]

    # -- elementwise helpers --

    def compare(self, x: ir.Value, y: ir.Value, direction: str, dtype: np.dtype) -> ir.Value:
        """``x <direction> y`` (EQ, NE, LT, LE, GT, GE) as a bool tensor.

        Floats and complex numbers compare as IEEE values (NaN unordered,
        -0.0 == 0.0); bool compares as unsigned.
        """
        if dtypes.is_inexact(dtype):
            kind = "FLOAT"
        elif dtypes.is_signed_int(dtype):
            kind = "SIGNED"
        else:
            kind = "UNSIGNED"
        return hlo.compare(
            x,
            y,
            hlo.ComparisonDirectionAttr.get(direction),
            compare_type=hlo.ComparisonTypeAttr.get(kind),
        )

    def select(self, pred: ir.Value, on_true: ir.Value, on_false: ir.Value) -> ir.Value:
        return hlo.select(pred, on_true, on_false)

    def is_nan(self, x: ir.Value, dtype: np.dtype) -> ir.Value:
        return self.compare(x, x, "NE", dtype)

    def convert(self, x: ir.Value, from_dtype: np.dtype, to_dtype: np.dtype) -> ir.Value:
        """Convert like the reference's ``convert_element_type`` (``convert_values``).

        complex -> real drops the imaginary part; anything -> bool is ``!= 0``;
        float -> integer truncates toward zero, saturates at the integer range
        and maps NaN to 0 (spelled out here, since StableHLO leaves
        out-of-range conversions undefined); everything else is a plain
        ``stablehlo.convert`` (rounding to nearest even, integers wrapping).
        """
        from_dtype, to_dtype = np.dtype(from_dtype), np.dtype(to_dtype)
        if from_dtype == to_dtype:
            return x
        shape = shape_of(x)
        if dtypes.is_complex(from_dtype) and not dtypes.is_complex(to_dtype):
            real = np.dtype(np.float32 if from_dtype == np.complex64 else np.float64)
            x = hlo.real(x)
            return self.convert(x, real, to_dtype)
        if dtypes.is_bool(to_dtype):
            return self.compare(x, constant(0, from_dtype, shape), "NE", from_dtype)
        if dtypes.is_complex(to_dtype) and not dtypes.is_complex(from_dtype):
            part = np.dtype(np.float32 if to_dtype == np.complex64 else np.float64)
            real_part = self.convert(x, from_dtype, part)
            return hlo.complex(real_part, constant(0, part, shape))
        if dtypes.is_integer(to_dtype) and dtypes.is_floating(from_dtype):
            return self._float_to_int(x, from_dtype, to_dtype, shape)
        return hlo.convert(_tensor_type(shape, to_dtype), x)

    def _float_to_int(
        self, x: ir.Value, from_dtype: np.dtype, to_dtype: np.dtype, shape: tuple[int, ...]
    ) -> ir.Value:
        info = dtypes.iinfo(to_dtype)
        # float(max) rounds up to a power of two when inexact, so ``x >= it``
        # is exactly "x is at least the integer maximum"; the minimum is exact.
        high = constant(float(info.max), from_dtype, shape)
        low = constant(float(info.min), from_dtype, shape)
        result: ir.Value = hlo.convert(_tensor_type(shape, to_dtype), x)
        result = self.select(
            self.compare(x, high, "GE", from_dtype), constant(info.max, to_dtype, shape), result
        )
        result = self.select(
            self.compare(x, low, "LE", from_dtype), constant(info.min, to_dtype, shape), result
        )
        return self.select(self.is_nan(x, from_dtype), constant(0, to_dtype, shape), result)

    def in_float32(
        self, emit: Callable[..., ir.Value], *values: ir.Value, dtype: np.dtype
    ) -> ir.Value:
        """``emit(*values)``, computed in float32 when ``dtype`` is float16/bfloat16.

        The reference computes transcendental functions of the narrow float
        types in float32 and rounds once; so do we, whatever XLA would do.
        """
        if dtype not in (np.dtype(np.float16), dtypes.bfloat16):
            return emit(*values)
        f32 = np.dtype(np.float32)
        wide = [hlo.convert(_tensor_type(shape_of(v), f32), v) for v in values]
        out = emit(*wide)
        return hlo.convert(_tensor_type(shape_of(out), dtype), out)

    # -- regions and sub-programs --

    @contextlib.contextmanager
    def block(self, region: ir.Region, arg_types: Sequence[ir.Type]) -> Iterator[list[ir.Value]]:
        """Append a block with ``arg_types`` to ``region``; emit into it inside the ``with``."""
        block = region.blocks.append(*arg_types)
        with ir.InsertionPoint(block):
            yield list(block.arguments)

    def scalar_block(
        self, region: ir.Region, dtypes_: Sequence[np.dtype], body: Callable[..., list[ir.Value]]
    ) -> None:
        """A region of one block taking rank-0 tensors of ``dtypes_`` and returning
        ``body(*args)`` (the shape of reduce, sort and reduce_window bodies)."""
        with self.block(region, [_tensor_type((), d) for d in dtypes_]) as args:
            hlo.return_(list(body(*args)))

    def reduce(
        self,
        operands: Sequence[ir.Value],
        dtypes_: Sequence[np.dtype],
        inits: Sequence[ir.Value],
        axes: Sequence[int],
        combine: Callable[..., list[ir.Value]],
    ) -> list[ir.Value]:
        """``stablehlo.reduce`` of ``operands`` (one shape) over ``axes``.

        ``combine(*accumulators, *elements)`` gets rank-0 values and returns
        the new accumulators; ``inits`` are rank-0 identities.
        """
        shape = shape_of(operands[0])
        kept = [size for dim, size in enumerate(shape) if dim not in axes]
        result_types = [_tensor_type(kept, d) for d in dtypes_]
        op = hlo.ReduceOp(result_types, list(operands), list(inits), list(axes))
        self.scalar_block(op.regions[0], [*dtypes_, *dtypes_], combine)
        return list(op.results)

    def lower_program(self, program: Program, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit ``program``'s equations here, on ``args``; its output values."""
        return self.module.emit(program, args)

    def call(self, program: Program, name: str, args: Sequence[ir.Value]) -> list[ir.Value]:
        """``func.call`` of ``program`` as a private function (made once per Program)."""
        callee = self.module.function_for(program, name)
        if self.module.multi_platform:
            args = [self.module.platform_index_value(), *args]
        # jaxlib's register_operation decorator hides func.py's CallOp(callee,
        # args) constructor from mypy, which sees the generated class only
        call = func.CallOp(callee, list(args))  # type: ignore[call-arg, arg-type]
        return list(call.results)

    def composite(
        self,
        program: Program,
        name: str,
        args: Sequence[ir.Value],
        attributes: dict[str, ir.Attribute],
        version: int,
    ) -> list[ir.Value]:
        """``stablehlo.composite "name"`` of ``args``, as JAX lowers ``lax.composite``:
        its decomposition is the private function ``@name`` (the name kept as
        given, dots and all; a later one of the same name is ``@name_0``, ...),
        its non-empty ``attributes`` are ``composite_attributes`` and a
        non-zero ``version`` an ``i32``. A compiler that does not know the name
        (XLA's CPU plugin) inlines the decomposition."""
        callee = self.module.function_for(program, name, verbatim=True)
        if self.module.multi_platform:
            args = [self.module.platform_index_value(), *args]
        op_attributes: dict[str, ir.Attribute] = {
            "name": ir.StringAttr.get(name),
            "decomposition": ir.FlatSymbolRefAttr.get(
                ir.StringAttr(callee.attributes["sym_name"]).value
            ),
        }
        if attributes:
            op_attributes["composite_attributes"] = ir.DictAttr.get(attributes)
        if version:
            i32 = ir.IntegerType.get_signless(32)
            op_attributes["version"] = ir.IntegerAttr.get(i32, version)
        op = hlo.CompositeOp.build_generic(
            results=[ir_type(a) for a in program.out_avals],
            operands=list(args),
            attributes=op_attributes,
        )
        return list(op.results)

    def host_callback(
        self,
        operands: list[Any],
        callable_: Any,
        name: str,
        result_avals: tuple[Any, ...],
        *,
        has_side_effect: bool,
        avals_in: list[Any] | None = None,
    ) -> list[Any]:
        """The ``refimpl_host_callback`` custom call calling ``callable_`` on the
        host (emit_host_callback): the callback primitives reach the backend
        through their context instead of importing it."""
        return emit_host_callback(
            self, operands, callable_, name, result_avals,
            has_side_effect=has_side_effect, avals_in=avals_in,
        )  # fmt: skip


def emit_host_callback(
    ctx: Any,
    operands: list[Any],
    callable_: Any,
    name: str,
    result_avals: tuple[Any, ...],
    *,
    has_side_effect: bool,
    avals_in: list[Any] | None = None,
) -> list[Any]:
    """Emit the ``refimpl_host_callback`` custom call of a lowering rule: it
    calls ``callable_(*operand arrays)``, which must return a sequence of
    ``len(result_avals)`` arrays of exactly those shapes and dtypes (None
    for none); the call's results are those arrays. ``avals_in``: the
    operands' types when they are not the rule's (``ctx.avals_in``)."""
    callback_id = host_callbacks.register(callable_, name)
    operand_avals = ctx.avals_in if avals_in is None else avals_in

    def row_major(aval: Any) -> Any:
        minor_to_major = np.arange(len(aval.shape) - 1, -1, -1, dtype=np.int64)
        # jaxlib's stubs want a Buffer: numpy's stubs give ndarray one only on Python 3.12+
        return ir.DenseIntElementsAttr.get(minor_to_major, type=ir.IndexType.get())  # type: ignore[call-overload]

    attributes = {
        "call_target_name": ir.StringAttr.get(host_callbacks.TARGET_NAME),
        "has_side_effect": ir.BoolAttr.get(has_side_effect),
        "backend_config": ir.StringAttr.get(""),
        # with a dictionary in mhlo.backend_config this is XLA's typed FFI call
        "api_version": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1),
        "called_computations": ir.ArrayAttr.get([]),
        "operand_layouts": ir.ArrayAttr.get([row_major(a) for a in operand_avals]),
        "result_layouts": ir.ArrayAttr.get([row_major(a) for a in result_avals]),
    }
    op = hlo.CustomCallOp.build_generic(
        results=[ir_type(a) for a in result_avals], operands=list(operands), attributes=attributes
    )
    i64 = ir.IntegerType.get_signless(64)
    op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(
        {"callback_id": ir.IntegerAttr.get(i64, callback_id)}
    )
    return list(op.results)


# --- building a module --------------------------------------------------------------


class ModuleBuilder:
    """Emits the functions of one module; shared by every rule lowering into it."""

    def __init__(self, module: ir.Module, platforms: Sequence[str] | None = None) -> None:
        self.module = module
        self._functions: dict[int, tuple[Program, func.FuncOp]] = {}
        self._names: set[str] = set()
        # Lowering platforms (None: this process's plugin's). With several, every
        # function takes a leading int32 _platform_index argument (the position of
        # the running platform in `platforms`), read by platform_index_p's rule.
        self.platforms = tuple(platforms) if platforms is not None else None
        self.multi_platform = self.platforms is not None and len(self.platforms) > 1
        self._platform_values: list[ir.Value] = []
        # platform_index values known at lowering (one platform), with their
        # branch: a cond on one lowers that branch alone (known_branch)
        self._known_branches: list[tuple[ir.Value, int]] = []
        # per block: values available only after the block's latest debug callback
        self._effect_chains: list[tuple[ir.Block, _EffectChain]] = []

    def lowering_platforms(self) -> tuple[str, ...]:
        """The platforms this module is lowered for."""
        if self.platforms is not None:
            return self.platforms
        return (local_platform(),)

    def know_branch(self, value: ir.Value, branch: int) -> None:
        """Record that ``value`` (a ``platform_index`` lowered for one
        platform) is the constant ``branch``."""
        self._known_branches.append((value, branch))

    def known_branch(self, value: ir.Value) -> int | None:
        """The branch ``value`` is known to be (see ``know_branch``), else None."""
        for known, branch in self._known_branches:
            if known == value:
                return branch
        return None

    def platform_index_value(self) -> ir.Value:
        """The ``_platform_index`` argument of the function being emitted."""
        assert self.multi_platform and self._platform_values, "no _platform_index here"
        return self._platform_values[-1]

    def unique_name(self, base: str) -> str:
        return self._claim(_symbol_name(base), first_suffix=1)

    def _claim(self, name: str, *, first_suffix: int) -> str:
        """``name``, or the first of ``name_<first_suffix>``, ... no function
        has yet, recorded as taken."""
        candidate, n = name, first_suffix
        while candidate in self._names:
            candidate = f"{name}_{n}"
            n += 1
        self._names.add(candidate)
        return candidate

    def build_function(
        self,
        name: str,
        program: Program,
        *,
        public: bool,
        arg_attrs: Sequence[dict[str, ir.Attribute]] | None = None,
    ) -> func.FuncOp:
        in_types = [ir_type(a) for a in program.in_avals]
        out_types = [ir_type(a) for a in program.out_avals]
        if self.multi_platform:
            in_types.insert(0, _tensor_type((), np.dtype(np.int32)))
            if arg_attrs is not None:
                index_attrs: dict[str, ir.Attribute] = {
                    "jax.global_constant": ir.StringAttr.get("_platform_index")
                }
                arg_attrs = [index_attrs, *arg_attrs]
        with ir.InsertionPoint(self.module.body):
            function = func.FuncOp(name, ir.FunctionType.get(in_types, out_types))
        function.attributes["sym_visibility"] = ir.StringAttr.get("public" if public else "private")
        if arg_attrs is not None:
            function.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in arg_attrs])
        # func.py's FuncOp adds add_entry_block; jaxlib's register_operation
        # decorator hides it from mypy, which sees the generated class only
        block = function.add_entry_block()  # type: ignore[attr-defined]
        arguments = list(block.arguments)
        if self.multi_platform:
            self._platform_values.append(arguments.pop(0))
        try:
            with ir.InsertionPoint(block):
                outs = self.emit(program, arguments)
                func.ReturnOp(outs)
        finally:
            if self.multi_platform:
                self._platform_values.pop()
        return function

    def verbatim_name(self, name: str) -> str:
        """``name`` as given if no function has it yet, else ``name_0``,
        ``name_1``, ... (MLIR's symbol-table renaming, which JAX's modules
        show: a composite's decomposition keeps its dotted name)."""
        return self._claim(name, first_suffix=0)

    def function_for(self, program: Program, name: str, *, verbatim: bool = False) -> func.FuncOp:
        """The private function computing ``program`` (built on first use),
        named after ``name`` (cleaned to letters, digits and ``_`` unless
        ``verbatim``)."""
        found = self._functions.get(id(program))
        if found is None:
            symbol = self.verbatim_name(name) if verbatim else self.unique_name(name)
            function = self.build_function(symbol, program, public=False)
            found = (program, function)  # keeps the program alive, so its id stays unique
            self._functions[id(program)] = found
        return found[1]

    # -- program order of debug callbacks --
    #
    # XLA may reorder side-effecting custom calls that no data orders. So the
    # debug callbacks of one block form a chain: each takes an operand that an
    # optimization_barrier makes available only after the previous effect's
    # result, and an equation whose sub-programs hold callbacks (a while, a
    # cond) gets its operands through such a barrier and ends the chain with
    # its outputs. Sub-programs emitted into the same block (an unrolled scan)
    # share its chain; a region (a while body, a branch) starts its own.
    # Calls (jit, checkpoint, custom_jvp/vjp) holding callbacks are inlined
    # first (refimpl.primitives.debug.inline_calls_with_callbacks).

    def _effect_chain(self) -> _EffectChain:
        block = ir.InsertionPoint.current.block
        for known, chain in self._effect_chains:
            if known == block:
                return chain
        chain = _EffectChain()
        self._effect_chains.append((block, chain))
        return chain

    def effect_dependency(self) -> ir.Value:
        """A ``tensor<ui8>`` zero available only after the previous debug
        callback (or callback-holding equation) of the current block."""
        done = self._effect_chain().done
        if len(done) == 1 and str(done[0].type) == "tensor<ui8>":
            # the previous callback's own result, passed on: a data dependency.
            # A zero passed through an optimization barrier with it was seen
            # reordered by the CPU plugin (a later callback ran before an
            # earlier one whose operand came from a nested call's result).
            return done[0]
        zero = constant(0, np.dtype(np.uint8))
        if not done:
            return zero
        return list(hlo.OptimizationBarrierOp([*done, zero]).results)[-1]

    def effect_done(self, values: Sequence[ir.Value]) -> None:
        """``values`` are available only after the latest effect of the current block."""
        chain = self._effect_chain()
        chain.done = list(values)
        chain.version += 1

    def _apply_after_effects(
        self,
        eqn: Any,
        operands: list[ir.Value],
        avals_in: list[ShapedArray],
        avals_out: list[ShapedArray],
    ) -> list[ir.Value]:
        """Lower an equation whose sub-programs hold debug callbacks, after the
        block's previous effects and before its next ones."""
        chain = self._effect_chain()
        if chain.done and operands:
            barrier = hlo.OptimizationBarrierOp([*chain.done, *operands])
            results: list[ir.Value] = list(barrier.results)
            operands = results[len(chain.done) :]
        version = chain.version
        outs = self._apply_rule(eqn.primitive, operands, avals_in, avals_out, eqn.params)
        if chain.version == version and outs:  # (inlined sub-programs chained themselves)
            self.effect_done(outs)
        return outs

    def emit(self, program: Program, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit ``program`` at the current insertion point; return its outputs."""
        if len(args) != len(program.in_vars):
            raise TypeError(
                f"lowering: program takes {len(program.in_vars)} inputs, got {len(args)}"
            )
        ordered = debug.has_callbacks(program)
        if ordered:
            program = debug.inline_calls_with_callbacks(program)
        env: dict[int, ir.Value] = {}
        for var, value in zip(program.const_vars, program.consts, strict=True):
            env[var.id] = constant(np.asarray(value), var.aval.dtype)
        for var, arg in zip(program.in_vars, args, strict=True):
            env[var.id] = arg
        for eqn in program.eqns:
            avals_in = [atom.aval for atom in eqn.inputs]
            avals_out = [var.aval for var in eqn.outputs]
            operands = [self._read(env, atom) for atom in eqn.inputs]
            if (
                ordered
                and not getattr(eqn.primitive, "effectful", False)  # (chains itself)
                and any(debug.has_callbacks(sub) for sub in subprograms(eqn))
            ):
                outs = self._apply_after_effects(eqn, operands, avals_in, avals_out)
            else:
                outs = self._apply_rule(eqn.primitive, operands, avals_in, avals_out, eqn.params)
            for var, out in zip(eqn.outputs, outs, strict=True):
                env[var.id] = out
        return [self._read(env, atom) for atom in program.out_vars]

    def _read(self, env: dict[int, ir.Value], atom: Var | Literal) -> ir.Value:
        if isinstance(atom, Literal):
            return constant(atom.value, atom.aval.dtype)
        return env[atom.id]

    def _apply_rule(
        self,
        primitive: Any,
        operands: list[ir.Value],
        avals_in: list[ShapedArray],
        avals_out: list[ShapedArray],
        params: dict[str, Any],
    ) -> list[ir.Value]:
        rule = primitive.lowering
        if rule is None:
            raise LoweringError(  # JAX 0.10.2's words first
                f"MLIR translation rule for primitive '{primitive.name}' not found for platform "
                f"cpu: the primitive {primitive.name!r} has no StableHLO lowering rule, "
                "so a program using it cannot run on the PJRT backend (use backend='ref')"
            )
        ctx = RuleContext(self, primitive.name, avals_in, avals_out)
        outs = rule(ctx, *operands, **params)
        outs = [outs] if isinstance(outs, ir.Value) else list(outs)
        if len(outs) != len(avals_out):
            raise AssertionError(
                f"internal error: the lowering of {primitive.name} gave {len(outs)} results, "
                f"expected {len(avals_out)}"
            )
        for index, (out, aval) in enumerate(zip(outs, avals_out, strict=True)):
            if out.type != ir_type(aval):
                raise AssertionError(
                    f"internal error: the lowering of {primitive.name} gave result {index} of "
                    f"type {out.type}, expected {ir_type(aval)} ({aval.str_short()})"
                )
        return outs


class _EffectChain:
    """The latest effect of one block: values that exist only after it."""

    def __init__(self) -> None:
        self.done: list[ir.Value] = []
        self.version = 0


def _symbol_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"f_{cleaned}"


def lower_program(
    program: Program,
    *,
    name: str = "main",
    aliases: dict[int, int] | None = None,
    donated: Sequence[bool] | None = None,
    platforms: Sequence[str] | None = None,
    kept: Sequence[bool] | None = None,
) -> ir.Module:
    """The StableHLO module ``@name`` whose public ``@main`` computes ``program``.

    ``aliases`` maps input index -> output index (the donation plan): those
    inputs get ``tf.aliasing_output``. The other donated inputs (``donated``:
    one flag per input) get ``jax.buffer_donor``, which lets XLA reuse their
    memory for temporaries (PJRT then deletes them, as the caller would).

    ``platforms`` are the lowering platforms (None: the local plugin's). The
    lowering rules are the same for every platform; only
    ``lax.platform_dependent`` differs. With several platforms ``@main`` takes
    a leading ``tensor<i32>`` argument ``_platform_index``: the position of
    the platform the executable runs on in ``platforms``.

    ``kept`` (one flag per input; None: all) are the inputs ``@main`` takes
    (``refimpl.transforms.dce.kept_inputs``): the others are unread, and
    ``aliases``/``donated`` are given by input and renumbered here.
    """
    test_events.record(test_events.PJRT_LOWERING)  # jit's, pmap's and sharded jit's alike
    program = live_program(program)  # dead code removed, as JAX's lowering
    if kept is not None:
        program, aliases, donated = _without_unread_inputs(program, kept, aliases, donated)
    # the callables of host callbacks the rules registered: kept with the module
    # until the owner of its executables adopts them (host_callbacks)
    with host_callbacks.collecting() as callbacks:
        module = _lower_program(program, name, aliases or {}, donated, platforms)
    host_callbacks.attach(module, callbacks)
    return module


def _without_unread_inputs(
    program: Program,
    kept: Sequence[bool],
    aliases: dict[int, int] | None,
    donated: Sequence[bool] | None,
) -> tuple[Program, dict[int, int], Sequence[bool] | None]:
    """``program`` taking only its ``kept`` inputs, with the donation plan by
    its new input positions (a donated input is always kept)."""
    position = {i: k for k, i in enumerate(i for i, keep in enumerate(kept) if keep)}
    new_aliases = {position[i]: j for i, j in (aliases or {}).items()}
    new_donated = None if donated is None else [d for d, keep in zip(donated, kept) if keep]
    in_vars = [v for v, keep in zip(program.in_vars, kept, strict=True) if keep]
    return dataclasses.replace(program, in_vars=in_vars), new_aliases, new_donated


def _lower_program(
    program: Program,
    name: str,
    aliases: dict[int, int],
    donated: Sequence[bool] | None,
    platforms: Sequence[str] | None,
) -> ir.Module:
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["sym_name"] = ir.StringAttr.get(_symbol_name(f"jit_{name}"))
        # one replica, one partition, as JAX's lowering states them (pmap and
        # sharded jit set their own counts over these)
        i32 = ir.IntegerType.get_signless(32)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, 1)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, 1)
        builder = ModuleBuilder(module, platforms)
        builder.unique_name("main")
        arg_attrs: list[dict[str, ir.Attribute]] = []
        for i in range(len(program.in_vars)):
            attrs: dict[str, ir.Attribute] = {}
            if i in aliases:
                attrs["tf.aliasing_output"] = ir.IntegerAttr.get(i32, aliases[i])
            elif donated is not None and donated[i]:
                attrs["jax.buffer_donor"] = ir.BoolAttr.get(True)
            arg_attrs.append(attrs)
        builder.build_function("main", program, public=True, arg_attrs=arg_attrs)
        try:
            module.operation.verify()
        except ir.MLIRError as err:  # a lowering rule emitted something StableHLO rejects
            raise AssertionError(
                f"internal error: the StableHLO of jit({name}) does not verify: {err}"
            ) from err
    return module


def module_text(module: ir.Module) -> str:
    """The module as StableHLO text (what ``Lowered.as_text()`` shows)."""
    return str(module)


def module_hlo(module: ir.Module) -> Any:
    """The module converted to an XLA HLO computation (``as_hlo_text()``,
    what ``Lowered.compiler_ir("hlo")`` gives), by jaxlib's converter."""
    from jaxlib import _jax  # type: ignore[attr-defined]  # compiled, no stub

    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return _jax.mlir.mlir_module_to_xla_computation(buffer.getvalue(), use_tuple_args=False)


def to_portable_artifact(module: ir.Module, target_version: str) -> bytes:
    """The module as a StableHLO portable artifact for ``target_version``.

    jaxlib's serializer legalizes CHLO operations to StableHLO first (the
    plain ``stablehlo.serialize_portable_artifact`` would refuse them).
    """
    from jaxlib import _jax  # type: ignore[attr-defined]  # compiled, no stub

    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return _jax.mlir.serialize_portable_artifact(buffer.getvalue(), target_version)
