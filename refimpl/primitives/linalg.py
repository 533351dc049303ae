"""Contractions: dot_general and conv_general_dilated.

Result dtype (JAX 0.10.2, which follows XLA's shape inference):

* ``dot_general`` accepts mixed dtypes: the operands' common type is the one
  of higher precision (complex over real, then larger float exponent range,
  then more mantissa bits, then more bits, then signed over unsigned).
  ``preferred_element_type`` replaces it; for a non-float common type it must
  not have fewer bits.
* ``conv_general_dilated`` requires equal dtypes, and a
  ``preferred_element_type`` of the same kind (or float for integer inputs),
  the same signedness for signed integers, and not narrower.
* The result is weakly typed iff both operands are.

How it is computed (the reference; a ``precision`` naming ``Precision``
values is recorded but ignored -- every product is computed at the full
precision of the compute type; a dot algorithm converts the operands and the
result as refimpl/primitives/dot_algorithms.py says):

* the *compute type* is the result type when the operands' dtypes differ or
  the result type has higher precision than them (``int8 x int8 -> int16``
  multiplies in int16), and otherwise the operands' type, whose result is then
  converted (``f32 x f32 -> int32`` sums in float32 and truncates);
* in the compute type, float16/bfloat16 accumulate in float32 and round once;
  integers wrap around (computed in 64 bits and truncated); bool is the
  or-of-ands; float32 sums follow NumPy/BLAS order, so results agree with XLA
  within a few ulps per term.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from refimpl import dtypes, tracing
from refimpl import sharding as sharding_types
from refimpl.config import matmul_precision
from refimpl.core import ShapedArray
from refimpl.errors import ShapeIndexError
from refimpl.primitives import ad_helpers, batch_rules, dot_algorithms, structural
from refimpl.primitives.base import Primitive, all_weak, as_int_tuple
from refimpl.primitives.elementwise import convert_values
from refimpl.primitives.reductions import accumulation_dtype
from refimpl.transforms.masking.shape_spec import Dim

# --- result and compute dtypes ----------------------------------------------------


def _precision_rank(dtype: np.dtype) -> tuple:
    """XLA's HigherPrecisionType order: a larger tuple is the higher precision."""
    real = np.real(np.zeros((), dtype)).dtype
    is_float = dtypes.is_floating(real)
    return (
        dtypes.is_complex(dtype),
        int(dtypes.finfo(real).maxexp) if is_float else -1,
        int(dtypes.finfo(real).nmant) if is_float else -1,
        _bit_width(real),
        not dtypes.is_unsigned_int(real),
    )


def _bit_width(dtype: np.dtype) -> int:
    """Bits per value; a complex type counts its real part (as JAX's finfo does)."""
    if dtypes.is_bool(dtype):
        return 1
    return dtype.itemsize * 4 if dtypes.is_complex(dtype) else dtype.itemsize * 8


def conv_result_dtype(lhs: np.dtype, rhs: np.dtype, preferred: np.dtype | None) -> np.dtype:
    """conv_general_dilated's output dtype: operands of one dtype, and a
    ``preferred_element_type`` of the same kind (integer inputs may also ask
    for a float), the same signedness for signed integers, and not narrower."""
    if lhs != rhs:
        raise TypeError(
            f"{_NAME} requires arguments to have the same dtypes, got {lhs.name}, {rhs.name}"
        )
    if preferred is None or preferred == lhs:
        return lhs
    if not isinstance(preferred, np.dtype) or preferred not in dtypes.ALL_DTYPES:
        raise TypeError(f"{_NAME}: unsupported preferred_element_type {preferred!r}")
    int_to_float = dtypes.is_integer(lhs) and dtypes.is_floating(preferred)
    kinds = (dtypes.is_integer, dtypes.is_floating, dtypes.is_complex)
    if not int_to_float and any(kind(lhs) and not kind(preferred) for kind in kinds):
        raise TypeError(
            f"{_NAME}: preferred_element_type {preferred.name} is incompatible with input "
            f"type {lhs.name}; allowed are (integer, integer), (integer, floating), "
            "(floating, floating) and (complex, complex)"
        )
    if not int_to_float and dtypes.is_signed_int(lhs) and not dtypes.is_signed_int(preferred):
        raise TypeError(
            f"{_NAME}: preferred_element_type {preferred.name} must be signed like {lhs.name}"
        )
    if preferred.itemsize < lhs.itemsize:
        raise TypeError(
            f"{_NAME}: preferred_element_type {preferred.name} must not be narrower than "
            f"the input type {lhs.name}"
        )
    return preferred


def compute_dtype(lhs: np.dtype, rhs: np.dtype, out: np.dtype) -> np.dtype:
    """The dtype products are formed in (see the module docstring)."""
    if lhs != rhs or _precision_rank(out) > _precision_rank(lhs):
        return out
    return lhs


def _to_accumulator(x: np.ndarray, compute: np.dtype) -> np.ndarray:
    """``x`` converted to the compute dtype, held in that dtype's accumulator."""
    return convert_values(x, compute).astype(accumulation_dtype(compute))


def _from_accumulator(x: np.ndarray, compute: np.dtype, out: np.dtype) -> np.ndarray:
    """Round/wrap an accumulated result to the compute dtype, then convert to ``out``."""
    if dtypes.is_bool(compute):
        rounded = x != 0
    else:
        rounded = x.astype(compute)
    return convert_values(rounded, out)


# JAX 0.10.2's precision strings (lowercase only) and the Precision each names
_PRECISION_STRINGS = {
    "highest": "HIGHEST", "float32": "HIGHEST", "high": "HIGH", "bfloat16_3x": "HIGH",
    "tensorfloat32": "HIGH", "default": "DEFAULT", "bfloat16": "DEFAULT", "fastest": "DEFAULT",
}  # fmt: skip
_PRECISION_NAMES = ("DEFAULT", "HIGH", "HIGHEST")


class Precision(enum.Enum):
    """Dot/conv precision names (the reference computes every one exactly).

    As JAX 0.10.2's: built from a member's alias as well
    (``Precision("highest")``, ``"float32"``, ``"tensorfloat32"``, ...); its
    ``str`` is the name and its ``repr`` ``Precision.NAME``."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        if value is None or isinstance(value, str):
            return _PRECISION_ALIASES.get(value)
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name


_PRECISION_ALIASES: dict[str | None, Precision] = {
    "highest": Precision.HIGHEST,
    "float32": Precision.HIGHEST,
    "high": Precision.HIGH,
    "bfloat16_3x": Precision.HIGH,
    "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT,
    "bfloat16": Precision.DEFAULT,
    "fastest": Precision.DEFAULT,
    None: Precision.DEFAULT,
}


def _check_precision(name: str, precision: Any) -> Any:
    """JAX's canonical precision: ``None``, a pair of ``Precision`` members
    (``(Precision.HIGHEST, Precision.HIGHEST)``, as JAX's equations hold and
    its tests compare), or a dot algorithm (a ``DotAlgorithm``, a
    ``DotAlgorithmPreset`` or a preset's name); the reference ignores the
    members (refimpl/primitives/dot_algorithms.py says what an algorithm
    does)."""
    canonical = _precision_names(name, precision)
    if isinstance(canonical, tuple) and all(isinstance(n, str) for n in canonical):
        return tuple(Precision[n] for n in canonical)
    return canonical


def _precision_names(name: str, precision: Any) -> Any:
    """``_check_precision`` with the pair as names. None is the default matmul
    precision in effect (``jax.default_matmul_precision``, the flag), recorded
    in the equation as JAX's: None when none is set."""
    if precision is None:
        default = matmul_precision()
        return None if default is None else _precision_names(name, default)
    if dot_algorithms.is_algorithm(precision):
        return precision
    if isinstance(precision, str):
        if precision in _PRECISION_STRINGS:
            one = _PRECISION_STRINGS[precision]
            return (one, one)
        preset = dot_algorithms.from_name(precision)
        if preset is not None:
            return preset
    elif (enum_name := _precision_enum_name(precision)) is not None:
        return (enum_name, enum_name)
    elif isinstance(precision, (list, tuple)) and len(precision) == 2:
        # a pair of Precision values or a pair of strings, not one of each (as JAX)
        if all(_precision_enum_name(p) is not None for p in precision):
            return tuple(_precision_enum_name(p) for p in precision)
        if all(isinstance(p, str) for p in precision):
            # refimpl's own rules pass the canonical upper-case names back in
            names = [
                _PRECISION_STRINGS.get(p, p if p in _PRECISION_NAMES else None) for p in precision
            ]
            if all(n is not None for n in names):
                return tuple(names)
    raise ValueError(
        f"{name}: precision must be None, one of {sorted(_PRECISION_STRINGS)}, a "
        "lax.Precision, a pair of those (both values or both strings), a "
        f"lax.DotAlgorithmPreset or its name, or a lax.DotAlgorithm; got {precision!r}"
    )


def _precision_enum_name(value: Any) -> str | None:
    """The name of a ``Precision`` enum member (refimpl's or jax's), else None."""
    text = getattr(value, "name", None)
    if isinstance(value, enum.Enum) and text in _PRECISION_NAMES:
        return text
    return None


def _as_count(count: Any) -> Any:
    """A bool group count as the int it is (other values are checked by the rule)."""
    return int(count) if isinstance(count, (bool, np.bool_)) else count


def _preferred(name: str, preferred_element_type: Any) -> np.dtype | None:
    if preferred_element_type is None:
        return None
    try:
        return dtypes.canonicalize_dtype(preferred_element_type)
    except TypeError as e:
        raise TypeError(
            f"{name}: preferred_element_type {preferred_element_type!r} is not a valid dtype"
        ) from e


# --- shared by both contractions: the jvp and the lowering's accumulation -----------
#
# Both are bilinear: the jvp is ``f(t_lhs, rhs) + f(lhs, t_rhs)``. The lowering
# spells out the impls' arithmetic: operands are converted to the compute
# dtype; float16/bfloat16 accumulate in float32 (rounded once to the compute
# dtype), bool in int32 (then ``!= 0``, the or-of-ands), everything else in
# the compute dtype itself (integers wrap); the result is then converted to
# the output dtype like ``convert_element_type``. ``precision`` is ignored,
# as by the impls: every product is computed at the compute type's precision.


def _bilinear_jvp(prim: Primitive) -> None:
    def rule(primals, tangents, **params):
        lhs, rhs = primals
        t_lhs, t_rhs = tangents
        ans = prim.bind(lhs, rhs, **params)
        terms = []
        if not ad_helpers.is_zero(t_lhs):
            terms.append(prim.bind(t_lhs, rhs, **params))
        if not ad_helpers.is_zero(t_rhs):
            terms.append(prim.bind(lhs, t_rhs, **params))
        return ans, ad_helpers.sum_tangents(terms, ad_helpers.aval_of(ans))

    prim.def_jvp(rule)


def _accumulator_dtype(compute: np.dtype) -> np.dtype:
    if compute in (np.dtype(np.float16), dtypes.bfloat16):
        return np.dtype(np.float32)
    if dtypes.is_bool(compute):
        return np.dtype(np.int32)
    return compute


def _contraction_lowering(ctx, lhs, rhs, emit):
    """Convert operands, ``emit(lhs, rhs, result_type)`` in the accumulator, convert back."""
    lhs_dtype, rhs_dtype = ctx.avals_in[0].dtype, ctx.avals_in[1].dtype
    out_aval = ctx.avals_out[0]
    compute = compute_dtype(lhs_dtype, rhs_dtype, out_aval.dtype)
    accumulator = _accumulator_dtype(compute)
    lhs = ctx.convert(ctx.convert(lhs, lhs_dtype, compute), compute, accumulator)
    rhs = ctx.convert(ctx.convert(rhs, rhs_dtype, compute), compute, accumulator)
    product = emit(lhs, rhs, ctx.tensor_type(out_aval.shape, accumulator))
    return [ctx.convert(ctx.convert(product, accumulator, compute), compute, out_aval.dtype)]


# === dot_general: the whole primitive in one block ===================================
#
# dot_general(lhs, rhs, ((lc, rc), (lb, rb))) contracts lhs's dims lc with
# rhs's dims rc, pairing lhs's batch dims lb with rhs's rb. With lf, rf the
# remaining ("free") dims of each operand, in increasing order:
#
#     out[b, i, j] = sum over k of lhs[b, i, k] * rhs[b, j, k]
#     (b ranges over the batch dims, i over lf, j over rf, k over the contracted
#      pairs; each operand's indices are placed at its own dim positions)
#     out.shape = [lhs.shape[d] for d in lb] + [lhs.shape[d] for d in lf]
#                 + [rhs.shape[d] for d in rf]
#     out.dtype = result_dtype(...) (the module docstring: the operands'
#                 higher-precision type, or preferred_element_type); weak iff
#                 both operands are
#
# Constraints (TypeErrors that name their label):
#   (C1) dimension_numbers is ((lhs_contracting, rhs_contracting),
#        (lhs_batch, rhs_batch)), four sequences of ints;
#   (C2) every dim number of a side is in [0, that operand's rank);
#   (C3) on each side the contracting dims are distinct, the batch dims are
#        distinct, and no dim is both;
#   (C4) len(lc) == len(rc) and len(lb) == len(rb);
#   (C5) paired dims have equal sizes: lhs.shape[lc[n]] == rhs.shape[rc[n]],
#        lhs.shape[lb[n]] == rhs.shape[rb[n]];
#   (C6) the operand dtypes are equal or one has the higher precision, and a
#        preferred_element_type is a dtype, not narrower than an integer or
#        bool common type.
#
# Example: lhs = [[1, 2, 3], [4, 5, 6]], rhs = [1, 0, -1],
# dimension_numbers = (((1,), (0,)), ((), ())): out = [1 - 3, 4 - 6] = [-2, -2].
# With a batch dim: lhs of shape (B, M, K), rhs (B, K, N) and
# (((2,), (1,)), ((0,), (0,))) is the batched matmul, out of shape (B, M, N).
#
# Rules below, in the fixed order: abstract_eval, impl, jvp, transpose, batch,
# mask, lowering, then the public binder ``dot_general``. Helpers shared with
# conv_general_dilated (compute dtype, accumulation, _bilinear_jvp,
# _contraction_lowering, precision checks) stay above. dot_general stays in
# this module: a module of its own would import ad_helpers/structural and be
# imported by refimpl.lax, so it would join the import cycle that
# tests/project/test_layering.py still lists for primitives/ (a new violation).

dot_general_p = Primitive("dot_general")


class AsPrimal:
    """The ``out_sharding`` of a dot_general that a transpose rule emits for a
    cotangent: typed as its primal is typed. JAX 0.10.2's transpose rules pass
    the primal operand's sharding (``x.aval.sharding``); refimpl's avals carry
    no sharding, so this marker stands for it and the sharding rule
    (transforms/sharding_rules.py) types the product from its operands: batch
    and free axes keep their entries, and a contracted axis split on both
    sides is summed over that mesh axis (unsplit in the result). With the
    cotangent laid out as the forward product was, that is the primal's own
    layout (its free axes are the cotangent's, its contracted axes were
    unsplit for the forward product to type); docs/sharding_rules.md,
    "Gradients". No effect on values; every other rule ignores it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "AsPrimal"

    def __reduce__(self) -> str:
        return "AS_PRIMAL"


AS_PRIMAL = AsPrimal()


def _dot_params(precision: Any, preferred_element_type: Any, out_sharding: Any) -> dict:
    """A dot_general's params; ``out_sharding`` only when one is given, so
    the equations of programs without one read as before (and as JAX prints
    them)."""
    params = {"precision": precision, "preferred_element_type": preferred_element_type}
    if out_sharding is not None:
        params["out_sharding"] = out_sharding
    return params


DotDims = tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]]


def canonical_dot_dims(dimension_numbers: Any) -> DotDims:
    """``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` as int tuples."""
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(
            "dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
            f"(lhs_batch, rhs_batch)) (C1), got {dimension_numbers!r}"
        ) from None
    name = "dot_general"
    return (
        (as_int_tuple(name, lc, "lhs_contracting"), as_int_tuple(name, rc, "rhs_contracting")),
        (as_int_tuple(name, lb, "lhs_batch"), as_int_tuple(name, rb, "rhs_batch")),
    )


def _check_dot_dims(lhs: ShapedArray, rhs: ShapedArray, dims: DotDims) -> None:
    (lc, rc), (lb, rb) = dims
    for side, aval, contract, batch in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
        if any(not 0 <= d < aval.ndim for d in contract + batch):
            raise TypeError(
                f"dot_general: {side} dimension numbers must be in [0, {aval.ndim}) for "
                f"{side} of shape {aval.shape}, got {side}_contracting {contract} and "
                f"{side}_batch {batch} (C2)"
            )
        for what, dims_ in (("contracting", contract), ("batch", batch)):
            if len(set(dims_)) != len(dims_):
                raise TypeError(
                    f"dot_general: {side}_{what} dimensions {dims_} are not distinct (C3)"
                )
        if set(contract) & set(batch):
            raise TypeError(
                f"dot_general: {side}_batch {batch} and {side}_contracting {contract} overlap (C3)"
            )
    for what, left, right in (("contracting", lc, rc), ("batch", lb, rb)):
        if len(left) != len(right):
            raise TypeError(
                f"dot_general: lhs_{what} {left} and rhs_{what} {right} differ in length (C4)"
            )
        left_sizes = tuple(lhs.shape[d] for d in left)
        right_sizes = tuple(rhs.shape[d] for d in right)
        if left_sizes != right_sizes:  # JAX 0.10.2's words, then the operands' shapes
            named = {"contracting": "contracting dimensions"}.get(
                what, "lhs batch dimensions and rhs batch dimensions"
            )
            raise TypeError(
                f"dot_general requires {named} to have the same shape, got {left_sizes} and "
                f"{right_sizes}. (lhs shape {lhs.shape}, rhs shape {rhs.shape}) (C5)"
            )


def _free_dims(ndim: int, contract: tuple[int, ...], batch: tuple[int, ...]) -> list[int]:
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _size(shape: Any) -> int:
    return int(np.prod(tuple(shape), dtype=np.int64))


def result_dtype(
    name: str, lhs: np.dtype, rhs: np.dtype, preferred: np.dtype | None, check_width: bool = True
) -> np.dtype:
    """The output dtype of a dot/conv (see the module docstring). JAX skips the
    width check of ``preferred`` for a dot with an algorithm (``check_width``)."""
    if _precision_rank(lhs) > _precision_rank(rhs):
        common = lhs
    elif _precision_rank(rhs) > _precision_rank(lhs):
        common = rhs
    elif lhs != rhs:
        raise TypeError(f"{name}: argument type error (C6): {lhs.name}, {rhs.name}")
    else:
        common = lhs
    if preferred is None or preferred == common:
        return common
    if not isinstance(preferred, np.dtype) or preferred not in dtypes.ALL_DTYPES:
        raise TypeError(f"{name}: unsupported preferred_element_type (C6) {preferred!r}")
    narrower = _bit_width(preferred) < _bit_width(common)
    if check_width and not dtypes.is_floating(common) and narrower:
        raise TypeError(
            f"{name}: preferred_element_type {preferred.name} must not be narrower than "
            f"the operands' type {common.name} (C6)"
        )
    return preferred


# --- dot_general: abstract_eval


@dot_general_p.def_abstract_eval
def _dot_general_abstract_eval(
    lhs: ShapedArray,
    rhs: ShapedArray,
    *,
    dimension_numbers: DotDims,
    precision: Any,
    preferred_element_type: np.dtype | None,
    out_sharding: Any = None,
) -> ShapedArray:
    """Output dims: batch dims, then lhs free dims, then rhs free dims (XLA order)."""
    dims = canonical_dot_dims(dimension_numbers)
    _check_dot_dims(lhs, rhs, dims)
    (lc, rc), (lb, rb) = dims
    dtype = result_dtype(
        "dot_general",
        lhs.dtype,
        rhs.dtype,
        preferred_element_type,
        check_width=not dot_algorithms.is_algorithm(precision),
    )
    shape = (
        tuple(lhs.shape[d] for d in lb)
        + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
        + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb))
    )
    return ShapedArray(shape, dtype, all_weak([lhs, rhs]))


# --- dot_general: impl (NumPy)


@dot_general_p.def_impl
def _dot_general_impl(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    dimension_numbers: DotDims,
    precision: Any,
    preferred_element_type: np.dtype | None,
    out_sharding: Any = None,
) -> np.ndarray:
    """Lay both operands out as (batch, free, contracted) matrices, matmul, reshape."""
    if dot_algorithms.is_algorithm(precision):
        return _with_algorithm(lhs, rhs, dimension_numbers, precision, preferred_element_type)
    out_dtype = result_dtype("dot_general", lhs.dtype, rhs.dtype, preferred_element_type)
    return _contract(lhs, rhs, dimension_numbers, out_dtype)


def _contract(lhs: np.ndarray, rhs: np.ndarray, dimension_numbers: DotDims, out_dtype: np.dtype):
    (lc, rc), (lb, rb) = dimension_numbers
    compute = compute_dtype(lhs.dtype, rhs.dtype, out_dtype)
    lhs_free, rhs_free = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)
    batch_shape = tuple(lhs.shape[d] for d in lb)
    lhs_free_shape = tuple(lhs.shape[d] for d in lhs_free)
    rhs_free_shape = tuple(rhs.shape[d] for d in rhs_free)
    batch, contracted = _size(batch_shape), _size(lhs.shape[d] for d in lc)
    lhs_3d = lhs.transpose(list(lb) + lhs_free + list(lc)).reshape(
        batch, _size(lhs_free_shape), contracted
    )
    rhs_3d = rhs.transpose(list(rb) + list(rc) + rhs_free).reshape(
        batch, contracted, _size(rhs_free_shape)
    )
    lhs_acc, rhs_acc = _to_accumulator(lhs_3d, compute), _to_accumulator(rhs_3d, compute)
    if contracted == 1:
        # one term (or no contracting dims): XLA rewrites the dot as a
        # multiply, so the product's sign of zero survives (-1 * 0 is -0.0,
        # where a sum starting from +0.0 gives 0.0), as JAX 0.10.2 eager and jit
        product = lhs_acc * rhs_acc  # (batch, free, 1) * (batch, 1, free)
    else:
        product = np.matmul(lhs_acc, rhs_acc)
    result = _from_accumulator(product, compute, out_dtype)
    return result.reshape(batch_shape + lhs_free_shape + rhs_free_shape)


def _with_algorithm(lhs, rhs, dimension_numbers, algorithm, preferred_element_type):
    """A dot with a dot algorithm, as JAX 0.10.2 on CPU (dot_algorithms.py):
    operands converted to the algorithm's types, contracted in its accumulation
    type, the result converted to the dot's result type."""
    dot_algorithms.check_runs_on_cpu(algorithm)
    out = result_dtype("dot_general", lhs.dtype, rhs.dtype, preferred_element_type, False)
    lhs_type, rhs_type, acc = dot_algorithms.compute_types(algorithm, lhs.dtype, rhs.dtype, out)
    product = _contract(
        convert_values(lhs, lhs_type), convert_values(rhs, rhs_type), dimension_numbers, acc
    )
    return convert_values(product, out)


# --- dot_general: jvp (bilinear: dot(t_lhs, rhs) + dot(lhs, t_rhs))

_bilinear_jvp(dot_general_p)


# --- dot_general: transpose


def _ranges_like(*lists: Sequence[int]) -> list[list[int]]:
    """Consecutive index ranges with the lengths of ``lists``."""
    out, start = [], 0
    for items in lists:
        out.append(list(range(start, start + len(items))))
        start += len(items)
    return out


def _dot_transpose_lhs(ct, x_aval, y, dimension_numbers, precision, preferred, swap_ans=False):
    """The cotangent of ``x`` in ``out = dot_general(x, y)``: contract ``ct``
    with ``y`` over ``y``'s free dims (batch dims stay batch dims), then
    permute the result into ``x``'s layout and convert it to ``x``'s dtype.
    ``swap_ans``: ``x`` is the rhs, whose free dims come last in ``out``.
    The product keeps the primal's ``preferred`` type, as JAX 0.10.2's rule
    (with operands of two dtypes it is formed in that type: the cotangent of
    ``x`` in a float32 x float32 product with a bfloat16 result is
    ``ct @ bfloat16(y)``, converted to float32)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    y_aval = ad_helpers.aval_of(y)
    x_kept = _free_dims(x_aval.ndim, x_contract, x_batch)
    y_kept = _free_dims(y_aval.ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    # dot_general(ct, y) has x's batch dims, x's free dims, then x's contracted
    # dims in the order of y's matching (ascending) dims
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    layout = list(x_batch) + x_kept + x_contract_by_y
    swapped_layout = list(x_batch) + x_contract_by_y + x_kept
    # typed as x is (JAX passes x's sharding): the marker stands for it
    params = _dot_params(precision, preferred, AS_PRIMAL)
    if layout != sorted(layout) and swapped_layout == sorted(swapped_layout):
        # dot_general(y, ct) is already in x's layout: no transpose. JAX
        # always contracts (ct, y) and transposes; for ``x @ w`` that is
        # w's cotangent (H, F) -> (F, H), and under vmap a batched outer
        # product (B, H, F) -> (B, F, H), which XLA CPU computes in the
        # transposed layout and then copies (a strided pass over the whole
        # result). benchmarks/vmap.py's module alone on the plugin: B=32
        # F=64 H=64 140 -> 60 us, B=128 F=256 H=512 110 -> 50 ms under load
        # (docs/semantics.md 16.3). The same products are summed, so values
        # change only with the summation order (which XLA leaves open).
        swapped_dims = ((tuple(y_kept), tuple(ans_y)), (tuple(y_batch), tuple(ans_batch)))
        product = dot_general_p.bind(y, ct, dimension_numbers=swapped_dims, **params)
        return ad_helpers.convert(product, x_aval.dtype)
    product = dot_general_p.bind(ct, y, dimension_numbers=dims, **params)

    permutation = tuple(int(i) for i in np.argsort(layout))
    if permutation != tuple(range(len(permutation))):  # (no equation for the identity)
        product = structural.transpose(product, permutation)
    return ad_helpers.convert(product, x_aval.dtype)


@dot_general_p.def_transpose
def _dot_general_transpose(
    ct, lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    lhs_linear = isinstance(lhs, ad_helpers.UndefinedPrimal)
    rhs_linear = isinstance(rhs, ad_helpers.UndefinedPrimal)
    if lhs_linear == rhs_linear:
        raise NotImplementedError("dot_general: transpose needs exactly one linear operand")
    if lhs_linear:
        # unreachable from the public API: the backward pass skips an equation whose one output has
        # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
        if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
            return [ad_helpers.Zero(lhs.aval), None]
        cotangent = _dot_transpose_lhs(
            ct, lhs.aval, rhs, dimension_numbers, precision, preferred_element_type
        )
        return [cotangent, None]
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [None, ad_helpers.Zero(rhs.aval)]
    (lc, rc), (lb, rb) = dimension_numbers
    swapped = ((rc, lc), (rb, lb))
    cotangent = _dot_transpose_lhs(
        ct, rhs.aval, lhs, swapped, precision, preferred_element_type, swap_ans=True
    )
    return [None, cotangent]


# --- dot_general: batch


@dot_general_p.def_batch
def _dot_general_batch(
    args, dims, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    """Both batched: the batch axes become one more (leading) dot batch dim.
    One batched: its batch axis is a free dim, found in the result after the
    dot batch dims and the free dims that precede it. A given ``out_sharding``
    gains an unsplit entry for the batch axis (JAX: None there)."""
    (lhs, rhs), (lbd, rbd) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers

    def bind(new_dims, out_bd):
        sharding = _with_unsplit_axis(out_sharding, out_bd)
        params = _dot_params(precision, preferred_element_type, sharding)
        return dot_general_p.bind(lhs, rhs, dimension_numbers=new_dims, **params), out_bd

    if lbd is not None and rbd is not None:
        lhs, rhs = batch_rules.moveaxis(lhs, lbd, 0), batch_rules.moveaxis(rhs, rbd, 0)
        shift = lambda ds: tuple(d + 1 for d in ds)  # noqa: E731
        new_dims = ((shift(lc), shift(rc)), ((0, *shift(lb)), (0, *shift(rb))))
        return bind(new_dims, 0)
    if lbd is not None:
        lc2, lb2 = batch_rules.shift_dims(lc, lbd), batch_rules.shift_dims(lb, lbd)
        new_dims = ((lc2, rc), (lb2, rb))
        free = _free_dims(batch_rules.ndim_of(lhs), lc2, lb2)
        out_bd = len(lb) + free.index(lbd)
    else:
        rc2, rb2 = batch_rules.shift_dims(rc, rbd), batch_rules.shift_dims(rb, rbd)
        new_dims = ((lc, rc2), (lb, rb2))
        lhs_free = _free_dims(batch_rules.ndim_of(lhs), lc, lb)
        free = _free_dims(batch_rules.ndim_of(rhs), rc2, rb2)
        out_bd = len(lb) + len(lhs_free) + free.index(rbd)
    return bind(new_dims, out_bd)


def _with_unsplit_axis(out_sharding: Any, axis: int) -> Any:
    """``out_sharding`` (a NamedSharding) with an unsplit entry inserted at ``axis``."""
    if not isinstance(out_sharding, sharding_types.NamedSharding):
        return out_sharding  # None or AS_PRIMAL (no axis entries)
    spec = list(out_sharding.spec) + [None] * (axis - len(out_sharding.spec))
    spec.insert(axis, None)
    return sharding_types.NamedSharding(out_sharding.mesh, sharding_types.PartitionSpec(*spec))


# --- dot_general: mask


@dot_general_p.def_mask
def _dot_general_mask(
    ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    """Masked contracting dims contribute zero: both operands' padding along
    them is set to 0 first (with a select, so a NaN or inf in the padding
    cannot leak through ``0 * x``). Batch dims are unified; the result's
    dims (batch, lhs free, rhs free) keep their operands' logical sizes."""
    (lc, rc), (lb, rb) = canonical_dot_dims(dimension_numbers)
    lhs_logical, rhs_logical = list(ctx.logical_in[0]), list(ctx.logical_in[1])
    for a, b in zip(lc, rc, strict=True):
        common = ctx.unify([lhs_logical[a], rhs_logical[b]], f"contracting dims {a} and {b}")
        lhs_logical[a] = rhs_logical[b] = common
    lhs = ctx.fill_padding(lhs, tuple(lhs_logical), lc, 0)
    rhs = ctx.fill_padding(rhs, tuple(rhs_logical), rc, 0)
    batch = [
        ctx.unify([lhs_logical[a], rhs_logical[b]], f"batch dims {a} and {b}")
        for a, b in zip(lb, rb, strict=True)
    ]
    out_logical = (
        *batch,
        *(lhs_logical[d] for d in _free_dims(len(lhs_logical), lc, lb)),
        *(rhs_logical[d] for d in _free_dims(len(rhs_logical), rc, rb)),
    )
    out = dot_general_p.bind(
        lhs,
        rhs,
        dimension_numbers=dimension_numbers,
        **_dot_params(precision, preferred_element_type, out_sharding),
    )
    return out, out_logical


# --- dot_general: lowering


@dot_general_p.def_lowering
def _dot_general_lowering(
    ctx,
    lhs,
    rhs,
    *,
    dimension_numbers: DotDims,
    precision: Any,
    preferred_element_type: Any,
    out_sharding: Any = None,
):
    """``stablehlo.dot_general`` (same output dim order: batch, lhs free, rhs free),
    or, when every contracted dim has size 1 and each operand's dims keep
    their order in the result, a multiply of both operands broadcast to the
    result's shape (the same single product per element). ``out_sharding``
    types the result for the sharding rule only: XLA's partitioner lays out
    the intermediate values itself (the program's parameters and results
    carry the annotations)."""
    if dot_algorithms.is_algorithm(precision):
        return _algorithm_lowering(ctx, lhs, rhs, dimension_numbers, precision)
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_shape, rhs_shape = ctx.avals_in[0].shape, ctx.avals_in[1].shape
    lhs_free = _free_dims(len(lhs_shape), lc, lb)
    rhs_free = _free_dims(len(rhs_shape), rc, rb)
    lhs_at = _spread_positions(len(lhs_shape), lc, lb, lhs_free, len(lb))
    rhs_at = _spread_positions(len(rhs_shape), rc, rb, rhs_free, len(lb) + len(lhs_free))
    if all(lhs_shape[d] == 1 for d in lc) and lhs_at == sorted(lhs_at) and rhs_at == sorted(rhs_at):
        # Each result element is one product: ``lhs * rhs``, both broadcast to
        # the result's shape. XLA's simplifier rewrites such a dot_general as a
        # multiply itself, but a batched one (a per-example outer product:
        # vmap(grad) of ``x @ w``) of shape (B, H, 1) then comes out in
        # layout {1,0,2} and is copied to the result's {2,1,0}: one more
        # thunk (benchmarks/vmap.py, per-example MLP gradients, 8 thunks
        # instead of 9).
        def multiply(x, y, result_type):
            return ctx.hlo.multiply(
                _spread(ctx, x, lc, lhs_at, result_type), _spread(ctx, y, rc, rhs_at, result_type)
            )

        return _contraction_lowering(ctx, lhs, rhs, multiply)
    dims = ctx.hlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(lb),
        rhs_batching_dimensions=list(rb),
        lhs_contracting_dimensions=list(lc),
        rhs_contracting_dimensions=list(rc),
    )

    def dot(x, y, result_type):
        return ctx.hlo.dot_general(result_type, x, y, dims)

    (lhs_aval, rhs_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
    if lhs_aval.dtype == rhs_aval.dtype != out_aval.dtype and not dtypes.is_bool(lhs_aval.dtype):
        # operands of one dtype and another result type (a preferred_element_type):
        # one dot_general from the operands' type into the result's, as JAX
        # 0.10.2 lowers it. XLA's CPU backend widens the operands itself; with
        # explicit converts first, bfloat16 x bfloat16 -> float32 was summed in
        # another order (last-bit differences from JAX's jit)
        return [dot(lhs, rhs, ctx.tensor_type(out_aval.shape, out_aval.dtype))]
    return _contraction_lowering(ctx, lhs, rhs, dot)


def _algorithm_lowering(ctx, lhs, rhs, dimension_numbers: DotDims, algorithm: Any):
    """As JAX's: the operands converted to the preset's storage types, one
    ``stablehlo.dot_general`` into its accumulation type carrying the
    ``algorithm = <...>`` attribute (XLA's CPU backend runs the presets it
    accepts), the result converted to the dot's type. DEFAULT names no
    algorithm: the impl's conversions around the plain lowering."""
    dot_algorithms.check_runs_on_cpu(algorithm)
    (lhs_aval, rhs_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
    lhs_type, rhs_type, acc = dot_algorithms.compute_types(
        algorithm, lhs_aval.dtype, rhs_aval.dtype, out_aval.dtype
    )
    fields = dot_algorithms.hlo_fields(algorithm)
    if fields is not None:
        (lc, rc), (lb, rb) = dimension_numbers
        dims = ctx.hlo.DotDimensionNumbers.get(
            lhs_batching_dimensions=list(lb),
            rhs_batching_dimensions=list(rb),
            lhs_contracting_dimensions=list(lc),
            rhs_contracting_dimensions=list(rc),
        )
        element = [ctx.tensor_type((), t).element_type for t in fields[:3]]
        attribute = ctx.hlo.DotAlgorithm.get(*element, *fields[3:])
        product = ctx.hlo.dot_general(
            ctx.tensor_type(out_aval.shape, acc),
            ctx.convert(lhs, lhs_aval.dtype, lhs_type),
            ctx.convert(rhs, rhs_aval.dtype, rhs_type),
            dims,
            algorithm=attribute,
        )
        return [ctx.convert(product, acc, out_aval.dtype)]
    inner = copy.copy(ctx)
    inner.avals_in = [lhs_aval.update(dtype=lhs_type), rhs_aval.update(dtype=rhs_type)]
    inner.avals_out = [out_aval.update(dtype=acc)]
    (product,) = _dot_general_lowering(
        inner,
        ctx.convert(lhs, lhs_aval.dtype, lhs_type),
        ctx.convert(rhs, rhs_aval.dtype, rhs_type),
        dimension_numbers=dimension_numbers,
        precision=None,
        preferred_element_type=acc,
    )
    return [ctx.convert(product, acc, out_aval.dtype)]


def _spread_positions(ndim, contract, batch, free, free_start) -> list[int]:
    """Where an operand's dims other than ``contract`` land in the dot's
    result (its batch dims first, in ``batch`` order; its free dims from
    ``free_start`` on), in the operand's own dim order."""
    return [
        batch.index(d) if d in batch else free_start + free.index(d)
        for d in range(ndim)
        if d not in contract
    ]


def _spread(ctx, x, contract, positions, result_type):
    """``x`` without its (size-1) ``contract`` dims, broadcast to ``result_type``."""
    if contract:
        shape = [n for d, n in enumerate(ctx.shape_of(x)) if d not in contract]
        x = ctx.hlo.reshape(ctx.ir.RankedTensorType.get(shape, result_type.element_type), x)
    return ctx.hlo.broadcast_in_dim(result_type, x, positions)


# --- dot_general: the public binder


def dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """General tensor contraction.

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch,
    rhs_batch))``. The result has the batch dims, then lhs's free dims, then
    rhs's free dims. See the module docstring for dtypes and accumulation.
    ``out_sharding`` (a ``NamedSharding``, or a ``PartitionSpec`` over the
    current mesh, as JAX 0.10.2) is the result's sharding over a mesh: the
    sharding rule takes it as given (docs/sharding_rules.md), as where both
    operands split a contracted axis; values do not depend on it.
    """
    out_sharding = canonical_out_sharding(out_sharding)
    if not any(_over_a_mesh(x) for x in (lhs, rhs)):
        # an eager product on one device stays there: a split out_sharding
        # is refused as before (NotImplementedError), not silently dropped
        sharding_types.check_out_sharding("dot_general", out_sharding)
    return dot_general_p.bind(
        lhs,
        rhs,
        dimension_numbers=canonical_dot_dims(dimension_numbers),
        **_dot_params(
            _check_precision("dot_general", precision),
            _preferred("dot_general", preferred_element_type),
            out_sharding,
        ),
    )


def _check_explicit_axes(sharding: Any) -> None:
    """JAX 0.10.2 types a product only over Explicit axes: an out_sharding
    naming an Auto (or Manual) axis is its ValueError."""
    types = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types))
    for entry in sharding.spec:
        for name in entry if isinstance(entry, tuple) else (entry,):
            kind = types.get(name)
            if name is not None and kind is not None and kind != sharding_types.AxisType.Explicit:
                raise ValueError(
                    "PartitionSpec passed to dot_general cannot contain axis names that are of "
                    f"type Auto or Manual. Got PartitionSpec: {sharding.spec} with axis name: "
                    f"{name} of type: {kind}."
                )


def _over_a_mesh(x: Any) -> bool:
    """A traced value (its program may run over a mesh) or a sharded array."""
    if isinstance(x, tracing.Tracer):
        return True
    sharding = getattr(x, "sharding", None)
    return sharding is not None and len(getattr(sharding, "device_set", ())) > 1


def canonical_out_sharding(out_sharding: Any) -> Any:
    """A NamedSharding (kept), a PartitionSpec (over the current mesh, else
    JAX 0.10.2's ValueError) or None, as a NamedSharding or None."""
    if out_sharding is None:
        return None
    if isinstance(out_sharding, sharding_types.NamedSharding):
        _check_explicit_axes(out_sharding)
        return out_sharding
    if isinstance(out_sharding, sharding_types.PartitionSpec):
        mesh = sharding_types.get_mesh()
        if mesh is None:
            raise ValueError(
                "Using PartitionSpec when you are not under a mesh context is not allowed. "
                "Please pass a NamedSharding instance or enter into a mesh context via "
                f"`jax.set_mesh`. Got {out_sharding}"
            )
        return canonical_out_sharding(sharding_types.NamedSharding(mesh, out_sharding))
    raise TypeError(
        "out_sharding must be a NamedSharding, a PartitionSpec or None, got "
        f"{type(out_sharding).__name__}"
    )


# --- conv_general_dilated -----------------------------------------------------------


class ConvDimensionNumbers(NamedTuple):
    """Where each logical dim lives: ``lhs_spec = (batch, feature, spatial...)``,
    ``rhs_spec = (out feature, in feature, spatial...)``, ``out_spec = (batch,
    feature, spatial...)``; spatial dims in the same order in all three."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


conv_general_dilated_p = Primitive("conv_general_dilated")

_NAME = "conv_general_dilated"


def conv_dimension_numbers(
    lhs_shape: tuple[int, ...], rhs_shape: tuple[int, ...], dimension_numbers: Any
) -> ConvDimensionNumbers:
    """Resolve ``None``, three layout strings (``("NHWC", "HWIO", "NHWC")``) or
    three index tuples into a ``ConvDimensionNumbers``.

    In layout strings ``N``/``C`` (lhs, out) and ``O``/``I`` (rhs) name batch
    and feature dims; every other letter is a spatial dim, and the spatial
    dims are taken in the order they appear in the rhs string (as in JAX).
    """
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim and isinstance(dimension_numbers, ConvDimensionNumbers):
        # as JAX 0.10.2: given ConvDimensionNumbers, the shape rule's ValueError
        raise ValueError(
            f"{_NAME} lhs and rhs must have the same number of dimensions, but got "
            f"{lhs_shape} and {rhs_shape}."
        )
    if len(rhs_shape) != ndim or ndim < 2:
        # as JAX 0.10.2: ranks that differ a TypeError, equal ranks below 2 an IndexError
        raise (TypeError if len(lhs_shape) != len(rhs_shape) else ShapeIndexError)(
            f"{_NAME}: lhs and rhs must have the same rank >= 2, got shapes {lhs_shape} "
            f"and {rhs_shape}"
        )
    if dimension_numbers is None:
        default = tuple(range(ndim))
        return ConvDimensionNumbers(default, default, default)
    if isinstance(dimension_numbers, (list, tuple)) and len(dimension_numbers) == 3:
        if all(isinstance(s, str) for s in dimension_numbers):
            return _specs_from_strings(ndim, *dimension_numbers)
        specs = [as_int_tuple(_NAME, s, "dimension_numbers") for s in dimension_numbers]
        return ConvDimensionNumbers(*specs)
    raise TypeError(
        f"{_NAME}: dimension_numbers must be None, three layout strings or three index "
        f"tuples, got {dimension_numbers!r}"
    )


def _specs_from_strings(ndim: int, lhs: str, rhs: str, out: str) -> ConvDimensionNumbers:
    layouts = ((lhs, ("N", "C")), (rhs, ("O", "I")), (out, ("N", "C")))
    for layout, (major, minor) in layouts:
        if len(layout) != ndim:
            raise TypeError(f"{_NAME}: layout {layout!r} does not have one letter per dim ({ndim})")
        if layout.count(major) != 1 or layout.count(minor) != 1 or len(set(layout)) != ndim:
            raise TypeError(
                f"{_NAME}: layout {layout!r} must hold {major!r} and {minor!r} once and "
                "distinct spatial letters"
            )
    spatial = [c for c in rhs if c not in "OI"]
    for layout, (major, minor) in layouts:
        if sorted(c for c in layout if c not in major + minor) != sorted(spatial):
            raise TypeError(
                f"{_NAME}: layouts {lhs!r}, {rhs!r}, {out!r} do not name the same spatial dims"
            )
    return ConvDimensionNumbers(
        *[
            (layout.index(major), layout.index(minor)) + tuple(layout.index(c) for c in spatial)
            for layout, (major, minor) in layouts
        ]
    )


def _check_conv_dims(dims: Any, ndim: int) -> ConvDimensionNumbers:
    if not isinstance(dims, tuple) or len(dims) != 3:
        raise TypeError(f"{_NAME}: dimension_numbers must be a ConvDimensionNumbers, got {dims!r}")
    for label, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dims, strict=True):
        spec = as_int_tuple(_NAME, spec, label)
        if sorted(spec) != list(range(ndim)):
            raise TypeError(
                f"{_NAME}: dimension_numbers.{label} {spec} must be a permutation of range({ndim})"
            )
    return ConvDimensionNumbers(*(tuple(s) for s in dims))


def _positive_ints(value: Any, arg: str, count: int) -> tuple[int, ...]:
    ints = as_int_tuple(_NAME, value, arg)
    if len(ints) != count and arg == "window_strides":  # JAX's words
        raise ValueError(
            f"{_NAME} window and window_strides must have the same number of dimensions, but "
            f"got {count} and {len(ints)}"
        )
    if len(ints) != count:
        raise ValueError(f"{_NAME}: {arg} {ints} must have one entry per spatial dim ({count})")
    if any(i < 1 for i in ints):
        raise ValueError(f"{_NAME}: {arg} {ints} must be positive")
    return ints


def _dilated(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def _conv_out_spatial(
    lhs_spatial: Sequence[int],
    rhs_spatial: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int],
    rhs_dilation: Sequence[int],
) -> tuple[int, ...]:
    sizes = []
    for i, (n, k, s, (lo, hi), ld, rd) in enumerate(
        zip(
            lhs_spatial,
            rhs_spatial,
            window_strides,
            padding,
            lhs_dilation,
            rhs_dilation,
            strict=True,
        )
    ):
        padded = _dilated(n, ld) + lo + hi
        if padded < 0:
            raise ValueError(
                f"{_NAME}: padding ({lo}, {hi}) of spatial dim {i} removes more than its "
                f"dilated size {_dilated(n, ld)}"
            )
        if k == 0:
            raise ValueError(f"{_NAME}: the kernel's spatial dim {i} is empty (size 0)")
        window = _dilated(k, rd)
        sizes.append(max(0, (padded - window) // s + 1))
    return tuple(sizes)


@conv_general_dilated_p.def_abstract_eval
def _conv_abstract_eval(
    lhs: ShapedArray,
    rhs: ShapedArray,
    *,
    window_strides: tuple[int, ...],
    padding: tuple[tuple[int, int], ...],
    lhs_dilation: tuple[int, ...],
    rhs_dilation: tuple[int, ...],
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any,
    preferred_element_type: np.dtype | None,
) -> ShapedArray:
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        # as JAX 0.10.2: ranks that differ a TypeError, equal ranks below 2 an IndexError
        raise (TypeError if len(lhs.shape) != len(rhs.shape) else ShapeIndexError)(
            f"{_NAME}: lhs and rhs must have the same rank >= 2, got shapes {lhs.shape} "
            f"and {rhs.shape}"
        )
    dtype = conv_result_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    dims = _check_conv_dims(dimension_numbers, lhs.ndim)
    nspatial = lhs.ndim - 2
    _positive_ints(window_strides, "window_strides", nspatial)
    _positive_ints(lhs_dilation, "lhs_dilation", nspatial)
    _positive_ints(rhs_dilation, "rhs_dilation", nspatial)
    pads = _check_padding(padding, nspatial)
    groups = {"feature_group_count": feature_group_count, "batch_group_count": batch_group_count}
    _check_groups(lhs.shape, rhs.shape, dims, groups)
    batch, _, lhs_spatial = _logical(lhs.shape, dims.lhs_spec)
    out_features, _, rhs_spatial = _logical(rhs.shape, dims.rhs_spec)
    out_spatial = _conv_out_spatial(
        lhs_spatial, rhs_spatial, window_strides, pads, lhs_dilation, rhs_dilation
    )
    logical_out = (batch // batch_group_count, out_features) + out_spatial
    shape = [0] * lhs.ndim
    for logical_dim, dim in enumerate(dims.out_spec):
        shape[dim] = logical_out[logical_dim]
    return ShapedArray(tuple(shape), dtype, all_weak([lhs, rhs]))


def _logical(shape: tuple[int, ...], spec: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
    """(batch-or-out-feature size, feature size, spatial sizes) of ``shape`` under ``spec``."""
    return shape[spec[0]], shape[spec[1]], tuple(shape[d] for d in spec[2:])


def _check_padding(padding: Any, nspatial: int) -> tuple[tuple[int, int], ...]:
    # not a sequence of int pairs: a bad value (JAX's ValueError), not a bad type
    try:
        pairs: tuple[tuple[Any, ...], ...] = tuple((lo, hi) for lo, hi in padding)
        pairs = tuple(as_int_tuple(_NAME, pair, "padding") for pair in pairs)
    except (TypeError, ValueError):
        raise ValueError(
            f"padding argument to {_NAME} should be a string or a sequence of (low, high) "
            f"int pairs, got {padding!r}"
        ) from None
    if len(pairs) != nspatial:
        raise TypeError(f"{_NAME}: padding {pairs} must have one pair per spatial dim ({nspatial})")
    return pairs


def _check_groups(
    lhs_shape: tuple[int, ...],
    rhs_shape: tuple[int, ...],
    dims: ConvDimensionNumbers,
    groups: dict[str, int],
) -> None:
    """Feature groups split lhs features and rhs output features into blocks;
    batch groups split the lhs batch and rhs output features. At most one of
    the two counts may exceed 1."""
    for arg, count in groups.items():
        if not isinstance(count, int):  # a bool is an int (True is 1), as JAX 0.10.2
            raise TypeError(f"{_NAME}: {arg} must be an int, got {count!r}")
        if count < 1:
            raise ValueError(f"{_NAME}: {arg} must be >= 1, got {count}")
    feature_groups, batch_groups = groups["feature_group_count"], groups["batch_group_count"]
    if feature_groups > 1 and batch_groups > 1:
        raise ValueError(f"{_NAME}: feature_group_count and batch_group_count cannot both be > 1")
    batch, features, _ = _logical(lhs_shape, dims.lhs_spec)
    out_features, in_features, _ = _logical(rhs_shape, dims.rhs_spec)
    shapes = f"(lhs shape {lhs_shape}, rhs shape {rhs_shape})"
    if features != in_features * feature_groups:
        raise ValueError(
            f"{_NAME}: lhs feature dimension {features} must equal rhs input feature "
            f"dimension {in_features} times feature_group_count {feature_groups} {shapes}"
        )
    for arg, count in groups.items():
        if out_features % count:
            raise ValueError(
                f"{_NAME}: rhs output feature dimension {out_features} must be a multiple "
                f"of {arg} {count} {shapes}"
            )
    if batch % batch_groups:
        raise ValueError(
            f"{_NAME}: lhs batch dimension {batch} must be a multiple of batch_group_count "
            f"{batch_groups} {shapes}"
        )


@conv_general_dilated_p.def_impl
def _conv_impl(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    window_strides: tuple[int, ...],
    padding: tuple[tuple[int, int], ...],
    lhs_dilation: tuple[int, ...],
    rhs_dilation: tuple[int, ...],
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any,
    preferred_element_type: np.dtype | None,
) -> np.ndarray:
    """The plain definition: in the (batch, feature, spatial...) layout, dilate
    lhs (insert zeros), pad it (negative padding crops), dilate rhs, then sum
    ``lhs window * rhs`` over every strided window position."""
    out_dtype = conv_result_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    compute = compute_dtype(lhs.dtype, rhs.dtype, out_dtype)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x = _to_accumulator(np.transpose(lhs, lhs_spec), compute)  # N, C, spatial...
    w = _to_accumulator(np.transpose(rhs, rhs_spec), compute)  # O, I, spatial...
    x = _pad(_dilate(x, lhs_dilation), padding)
    w = _dilate(w, rhs_dilation)
    windows = _windows(x, w.shape[2:], window_strides)  # N, C, out spatial..., window...
    out = _grouped_window_sum(windows, w, feature_group_count, batch_group_count)
    result = _from_accumulator(out, compute, out_dtype)  # N', O, out spatial...
    return np.transpose(result, np.argsort(out_spec))


@conv_general_dilated_p.def_mask
def _conv_mask(ctx, lhs, rhs, **params):
    """Masked lhs spatial, lhs batch and feature dims; the kernel's spatial
    dims must be unmasked.

    * Spatial dim (logical L): the lhs padding is zeroed, so the padded
      input reads as the unpadded one followed by zeros -- what high padding
      adds anyway -- and the first outputs are the unpadded ones. Logical
      size ``((L - 1)*lhs_dilation + 1 + lo + hi - window) // stride + 1``
      with ``window = (K - 1)*rhs_dilation + 1`` (this assumes L >= 1 and a
      non-negative result). ``padding`` is used as given: "SAME" resolved
      from the padded size equals the unpadded pads when they do not depend
      on the size (stride 1); with a larger stride they may differ.
    * Feature dim (contracted): zeroed on both sides, as in dot_general.
    * lhs batch and kernel output features: carried to the result.
    A masked dim that a feature or batch group count > 1 splits is not
    supported.
    """
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    lhs_logical, rhs_logical = list(ctx.logical_in[0]), list(ctx.logical_in[1])
    grouped = params["feature_group_count"] > 1 or params["batch_group_count"] > 1
    for d in rhs_spec[2:]:
        if ctx.masked(rhs_logical[d]):
            raise ctx.unsupported(f"the kernel's spatial dim {d} is masked ({rhs_logical[d]})")
    features = ctx.unify(
        [lhs_logical[lhs_spec[1]], rhs_logical[rhs_spec[1]]], "the lhs and rhs feature dims"
    )
    lhs_logical[lhs_spec[1]] = rhs_logical[rhs_spec[1]] = features
    carried = [features, lhs_logical[lhs_spec[0]], rhs_logical[rhs_spec[0]]]
    if grouped and any(ctx.masked(d) for d in carried):
        raise ctx.unsupported("a masked feature or batch dim with a group count > 1")
    lhs = ctx.fill_padding(lhs, tuple(lhs_logical), (lhs_spec[1], *lhs_spec[2:]), 0)
    rhs = ctx.fill_padding(rhs, tuple(rhs_logical), (rhs_spec[1],), 0)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    out_logical = [Dim.constant(size) for size in out.shape]
    out_logical[out_spec[0]] = lhs_logical[lhs_spec[0]]
    out_logical[out_spec[1]] = rhs_logical[rhs_spec[0]]
    for i, d in enumerate(lhs_spec[2:]):
        if ctx.masked(lhs_logical[d]):
            lo, hi = params["padding"][i]
            window = _dilated(ctx.avals_in[1].shape[rhs_spec[2 + i]], params["rhs_dilation"][i])
            extent = (lhs_logical[d] - 1) * params["lhs_dilation"][i] + 1 + lo + hi
            out_logical[out_spec[2 + i]] = (extent - window) // params["window_strides"][i] + 1
    return out, tuple(out_logical)


def _dilate(x: np.ndarray, dilation: Sequence[int]) -> np.ndarray:
    """Insert ``d - 1`` zeros between neighbours along each spatial dim (dims 2...)."""
    shape = x.shape[:2] + tuple(_dilated(n, d) for n, d in zip(x.shape[2:], dilation, strict=True))
    out = np.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in dilation)] = x
    return out


def _pad(x: np.ndarray, padding: Sequence[tuple[int, int]]) -> np.ndarray:
    """Pad spatial dims with zeros; a negative amount removes elements instead."""
    grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    grown = np.pad(x, grow)
    crop = tuple(
        slice(max(-lo, 0), size - max(-hi, 0))
        for (lo, hi), size in zip(padding, grown.shape[2:], strict=True)
    )
    return grown[(slice(None), slice(None)) + crop]


def _windows(x: np.ndarray, window: tuple[int, ...], strides: Sequence[int]) -> np.ndarray:
    """Every strided window of ``x``'s spatial dims: (N, C, out spatial..., window...)."""
    spatial = tuple(range(2, x.ndim))
    out_spatial = tuple(
        max(0, (n - k) // s + 1) for n, k, s in zip(x.shape[2:], window, strides, strict=True)
    )
    if 0 in out_spatial:
        return np.zeros(x.shape[:2] + out_spatial + window, x.dtype)
    views = sliding_window_view(x, window, axis=spatial)
    return views[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]


def _grouped_window_sum(
    windows: np.ndarray, w: np.ndarray, feature_groups: int, batch_groups: int
) -> np.ndarray:
    """``out[n, o, p...] = sum over c, k... of windows[n, c, p..., k...] * w[o, c, k...]``,
    within groups.

    Feature groups: input features and output features are each split into
    ``feature_groups`` consecutive blocks; output block g sees input block g.
    Batch groups: the batch is split into ``batch_groups`` consecutive blocks
    and output-feature block g is computed from batch block g.
    """
    n, c = windows.shape[:2]
    o = w.shape[0]
    nspatial = w.ndim - 2
    out_spatial = windows.shape[2 : 2 + nspatial]
    # einsum subscripts as integers: group, batch, in feature, out feature, then
    # the output positions and the window offsets
    g, b, i, f = 0, 1, 2, 3
    pos = list(range(4, 4 + nspatial))
    off = list(range(4 + nspatial, 4 + 2 * nspatial))
    groups = feature_groups * batch_groups  # at most one of them is > 1
    kernel = w.reshape((groups, o // groups) + w.shape[1:])
    if batch_groups > 1:
        lhs = windows.reshape((batch_groups, n // batch_groups) + windows.shape[1:])
        out = np.einsum(lhs, [g, b, i, *pos, *off], kernel, [g, f, i, *off], [b, g, f, *pos])
        return out.reshape((n // batch_groups, o) + out_spatial)
    lhs = windows.reshape((n, feature_groups, c // feature_groups) + windows.shape[2:])
    out = np.einsum(lhs, [b, g, i, *pos, *off], kernel, [g, f, i, *off], [b, g, f, *pos])
    return out.reshape((n, o) + out_spatial)


# --- conv_general_dilated: batching rules (refimpl.transforms.batching) ----------------


@conv_general_dilated_p.def_batch
def _conv_batch(args, dims, **params):
    """The batch axis folds into a dim the convolution already keeps apart:
    lhs only -> the lhs batch dim N (members are more images); rhs batched ->
    feature groups (member b convolves its own images with its own kernel:
    lhs features ``B * C`` and rhs outputs ``B * O``, ``B`` times as many
    groups). With ``batch_group_count > 1`` a member loop instead."""
    (lhs, rhs), (lbd, rbd) = args, dims
    spec: ConvDimensionNumbers = params["dimension_numbers"]
    if params["batch_group_count"] != 1:
        return batch_rules.loop_batch_rule(conv_general_dilated_p)(args, dims, **params)
    size = batch_rules.axis_size_of(args, dims)
    out_dim = spec.out_spec[0] if rbd is None else spec.out_spec[1]
    if size == 0:  # no members (no feature groups to fold into): an empty result
        member = [
            ShapedArray(tuple(np.delete(batch_rules.shape_of(x), d)) if d is not None
                        else batch_rules.shape_of(x), ad_helpers.aval_of(x).dtype)
            for x, d in zip(args, dims, strict=True)
        ]  # fmt: skip
        (aval,) = conv_general_dilated_p.out_avals(member, params)
        return np.zeros((0, *aval.shape), aval.dtype), 0
    if rbd is None:
        folded_lhs, _ = _fold(lhs, lbd, spec.lhs_spec[0])
        out = conv_general_dilated_p.bind(folded_lhs, rhs, **params)
    else:
        folded_lhs, _ = _fold(batch_rules.bdim_to(lhs, lbd, size, 0), 0, spec.lhs_spec[1])
        folded_rhs, _ = _fold(rhs, rbd, spec.rhs_spec[0])
        groups = params["feature_group_count"] * size
        out = conv_general_dilated_p.bind(
            folded_lhs, folded_rhs, **{**params, "feature_group_count": groups}
        )
    shape = list(batch_rules.shape_of(out))
    shape[out_dim : out_dim + 1] = [size, shape[out_dim] // size]

    return structural.reshape(out, shape), out_dim


def _fold(x: Any, bd: int, into: int) -> tuple[Any, tuple[int, ...]]:
    """Merge batch axis ``bd`` into dim ``into`` (numbered without it), batch-major."""

    x = batch_rules.moveaxis(x, bd, into)
    shape = batch_rules.shape_of(x)
    merged = (*shape[:into], shape[into] * shape[into + 1], *shape[into + 2 :])
    return structural.reshape(x, merged), shape


# --- conv_general_dilated: differentiation rules (refimpl.transforms.ad) ----------------
#
# Bilinear (see _bilinear_jvp); the transpose (one operand linear, the other a
# constant) is again a convolution of the cotangent with the constant.


_bilinear_jvp(conv_general_dilated_p)


def _reshape_axis_out_of(src: int, size1: int, x: Any) -> Any:
    """Split axis ``src`` into ``(size1, size // size1)``."""

    shape = list(ad_helpers.aval_of(x).shape)
    shape[src : src + 1] = [size1, shape[src] // size1]
    return structural.reshape(x, tuple(shape))


def _reshape_axis_into(src: int, dst: int, x: Any) -> Any:
    """Merge axis ``src`` into axis ``dst`` (numbered without ``src``), as its
    major part."""

    shape = ad_helpers.aval_of(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    return structural.reshape(x, tuple(new_shape), tuple(perm))


def _spec_swap(spec: tuple[int, ...]) -> tuple[int, ...]:
    return (spec[1], spec[0]) + tuple(spec[2:])


def _conv_transpose_lhs(ct, lhs_aval, rhs, params):
    """The cotangent of the input: a convolution of the cotangent with the
    spatially reversed kernel, its in/out features swapped; strides become
    lhs dilation and vice versa, and the padding makes every input position
    see exactly the outputs it fed."""

    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    feature_groups = params["feature_group_count"]
    batch_groups = params["batch_group_count"]
    strides, padding = params["window_strides"], params["padding"]
    lhs_dilation, rhs_dilation = params["lhs_dilation"], params["rhs_dilation"]
    if feature_groups > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], feature_groups, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    elif batch_groups > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], batch_groups, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        feature_groups = batch_groups
    rhs_shape = ad_helpers.aval_of(rhs).shape
    ct_shape = ad_helpers.aval_of(ct).shape
    pads = []
    for i in range(len(strides)):
        in_size = _dilated(lhs_aval.shape[lhs_spec[2 + i]], lhs_dilation[i])
        window = _dilated(rhs_shape[rhs_spec[2 + i]], rhs_dilation[i])
        out_size = _dilated(ct_shape[out_spec[2 + i]], strides[i])
        before = window - padding[i][0] - 1
        pads.append((before, in_size + window - 1 - out_size - before))
    flipped = structural.rev(rhs, tuple(rhs_spec[2:]))
    out = conv_general_dilated_p.bind(
        ct,
        flipped,
        window_strides=tuple(lhs_dilation),
        padding=tuple(pads),
        lhs_dilation=tuple(strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(out_spec, _spec_swap(rhs_spec), lhs_spec),
        feature_group_count=feature_groups,
        batch_group_count=1,
        precision=params["precision"],
        preferred_element_type=None,
    )
    if batch_groups > 1:
        out = _reshape_axis_out_of(lhs_spec[1], batch_groups, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return ad_helpers.convert(out, lhs_aval.dtype)


def _conv_transpose_rhs(ct, lhs, rhs_aval, params):
    """The cotangent of the kernel: a convolution of the input with the
    cotangent, batch playing the role of features; strides become rhs
    dilation and rhs dilation strides; feature groups become batch groups."""
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    feature_groups = params["feature_group_count"]
    batch_groups = params["batch_group_count"]
    strides, padding = params["window_strides"], params["padding"]
    lhs_dilation, rhs_dilation = params["lhs_dilation"], params["rhs_dilation"]
    if batch_groups > 1:
        feature_groups, batch_groups = batch_groups, 1
    elif feature_groups > 1:
        feature_groups, batch_groups = 1, feature_groups
    lhs_shape = ad_helpers.aval_of(lhs).shape
    ct_shape = ad_helpers.aval_of(ct).shape
    pads = []
    for i in range(len(strides)):
        in_size = _dilated(lhs_shape[lhs_spec[2 + i]], lhs_dilation[i])
        window = _dilated(rhs_aval.shape[rhs_spec[2 + i]], rhs_dilation[i])
        out_size = _dilated(ct_shape[out_spec[2 + i]], strides[i])
        lo = padding[i][0]
        pads.append((lo, out_size - in_size + window - lo - 1))
    out = conv_general_dilated_p.bind(
        lhs,
        ct,
        window_strides=tuple(rhs_dilation),
        padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(strides),
        dimension_numbers=ConvDimensionNumbers(
            _spec_swap(lhs_spec), _spec_swap(out_spec), _spec_swap(rhs_spec)
        ),
        feature_group_count=feature_groups,
        batch_group_count=batch_groups,
        precision=params["precision"],
        preferred_element_type=None,
    )
    return ad_helpers.convert(out, rhs_aval.dtype)


@conv_general_dilated_p.def_transpose
def _conv_transpose(ct, lhs, rhs, **params):
    lhs_linear = isinstance(lhs, ad_helpers.UndefinedPrimal)
    rhs_linear = isinstance(rhs, ad_helpers.UndefinedPrimal)
    if lhs_linear == rhs_linear:
        raise NotImplementedError(f"{_NAME}: transpose needs exactly one linear operand")
    if lhs_linear:
        # unreachable from the public API: the backward pass skips an equation whose one output has
        # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
        if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
            return [ad_helpers.Zero(lhs.aval), None]
        return [_conv_transpose_lhs(ct, lhs.aval, rhs, params), None]
    if isinstance(ct, ad_helpers.Zero) or 0 in ad_helpers.aval_of(ct).shape:
        return [None, ad_helpers.Zero(rhs.aval)]
    return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, params)]


# --- conv_general_dilated: lowering to StableHLO (refimpl.backends.pjrt.lowering) ---------


@conv_general_dilated_p.def_lowering
def _conv_lowering(
    ctx,
    lhs,
    rhs,
    *,
    window_strides: tuple[int, ...],
    padding: tuple[tuple[int, int], ...],
    lhs_dilation: tuple[int, ...],
    rhs_dilation: tuple[int, ...],
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any,
    preferred_element_type: Any,
):
    """``stablehlo.convolution`` with the same layouts, strides, padding and groups.

    Negative padding is lowered as an explicit ``stablehlo.pad`` of the lhs
    (which crops, after the lhs dilation, as the spec defines) followed by a
    convolution with the non-negative rest: XLA CPU's convolution computes
    a negative low padding differently from the spec and from its own
    ``pad`` + convolution (measured: a 2x2 kernel, padding (-1, 1) on the
    last spatial dim), while refimpl's two backends must agree."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        ctx, lhs = _pad_lhs_explicitly(ctx, lhs, lhs_spec, padding, lhs_dilation)
        padding = ((0, 0),) * len(padding)
        lhs_dilation = (1,) * len(lhs_dilation)
    dims = ctx.hlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs_spec[0],
        input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=list(lhs_spec[2:]),
        kernel_output_feature_dimension=rhs_spec[0],
        kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=list(rhs_spec[2:]),
        output_batch_dimension=out_spec[0],
        output_feature_dimension=out_spec[1],
        output_spatial_dimensions=list(out_spec[2:]),
    )
    pads = np.array(padding, dtype=np.int64).reshape(len(padding), 2)

    def emit(x, y, result_type):
        return ctx.hlo.convolution(
            result_type,
            x,
            y,
            dims,
            feature_group_count,
            batch_group_count,
            window_strides=list(window_strides),
            padding=ctx.ir.DenseIntElementsAttr.get(pads, shape=[len(padding), 2]),
            lhs_dilation=list(lhs_dilation),
            rhs_dilation=list(rhs_dilation),
        )

    return _contraction_lowering(ctx, lhs, rhs, emit)


def _pad_lhs_explicitly(ctx, lhs, lhs_spec, padding, lhs_dilation):
    """The lhs dilated and padded (or cropped) by ``stablehlo.pad`` (interior
    padding = dilation - 1), for a convolution with no lhs dilation and no
    padding; with ``ctx`` seeing the padded lhs's type."""
    aval = ctx.avals_in[0]
    rank = len(aval.shape)
    lows, highs, interiors = [0] * rank, [0] * rank, [0] * rank
    for axis, (lo, hi), d in zip(lhs_spec[2:], padding, lhs_dilation, strict=True):
        lows[axis], highs[axis], interiors[axis] = lo, hi, d - 1
    padded = ctx.hlo.pad(lhs, ctx.constant(0, aval.dtype), lows, highs, interiors)
    shape = tuple(
        aval.shape[i] + lows[i] + highs[i] + max(aval.shape[i] - 1, 0) * interiors[i]
        for i in range(rank)
    )
    return _LoweringContextWithInput(ctx, 0, ShapedArray(shape, aval.dtype)), padded


class _LoweringContextWithInput:
    """``ctx`` with the aval of one input replaced (the lhs after an explicit pad)."""

    def __init__(self, ctx: Any, index: int, aval: ShapedArray) -> None:
        self._ctx = ctx
        self.avals_in = [aval if i == index else a for i, a in enumerate(ctx.avals_in)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


# --- the public lax functions ------------------------------------------------------


def padtype_to_pads(
    in_shape: Sequence[int],
    window_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: str,
) -> tuple[tuple[int, int], ...]:
    """Explicit (lo, hi) pads for "VALID", "SAME" or "SAME_LOWER" (any case).

    SAME makes the output size ``ceil(in / stride)``, splitting the padding
    evenly with the extra element at the end; SAME_LOWER puts it at the start.
    """
    kind = padding.upper()
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        # JAX 0.10.2's class for an unknown padding name
        raise RuntimeError(
            f"{_NAME}: unknown padding {padding!r}; use 'SAME', 'SAME_LOWER' or 'VALID'"
        )
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides, strict=True):
        n, k, s = int(n), int(k), int(s)  # Python ints out, as JAX, also from NumPy shapes
        out = -(-n // s)
        total = max(0, (out - 1) * s + k - n)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return tuple(pads)


def conv_general_dilated(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """N-d convolution (cross-correlation: the kernel is not flipped) with
    strides, padding, lhs ("transposed conv") and rhs ("atrous") dilation,
    layouts and feature/batch groups, as ``jax.lax.conv_general_dilated``.

    ``padding`` is a sequence of ``(lo, hi)`` pairs (negative crops) or one of
    "SAME", "SAME_LOWER", "VALID", resolved here to pairs from the lhs spatial
    sizes and the dilated kernel size (not allowed with lhs dilation).
    ``dimension_numbers`` is None (NCHW, OIHW, NCHW), three layout strings
    such as ("NHWC", "HWIO", "NHWC"), or a ``ConvDimensionNumbers``.
    """
    lhs_aval = tracing.get_aval(lhs, _NAME, 0)
    rhs_aval = tracing.get_aval(rhs, _NAME, 1)
    dims = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    nspatial = lhs_aval.ndim - 2
    window_strides = as_int_tuple(_NAME, window_strides, "window_strides")
    lhs_dilation = (
        (1,) * nspatial
        if lhs_dilation is None
        else as_int_tuple(_NAME, lhs_dilation, "lhs_dilation")
    )
    rhs_dilation = (
        (1,) * nspatial
        if rhs_dilation is None
        else as_int_tuple(_NAME, rhs_dilation, "rhs_dilation")
    )
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError(
                f"{_NAME}: string padding {padding!r} is not supported with lhs_dilation "
                f"{lhs_dilation}; give explicit (lo, hi) pairs"
            )
        _positive_ints(window_strides, "window_strides", nspatial)
        _positive_ints(rhs_dilation, "rhs_dilation", nspatial)
        _, _, lhs_spatial = _logical(lhs_aval.shape, dims.lhs_spec)
        _, _, rhs_spatial = _logical(rhs_aval.shape, dims.rhs_spec)
        window = [_dilated(k, d) for k, d in zip(rhs_spatial, rhs_dilation, strict=True)]
        padding = padtype_to_pads(lhs_spatial, window, window_strides, padding)
    else:
        padding = _check_padding(padding, nspatial)
    return conv_general_dilated_p.bind(
        lhs,
        rhs,
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dims,
        # a bool count is an int (JAX 0.10.2); the rules compute with a plain int
        feature_group_count=_as_count(feature_group_count),
        batch_group_count=_as_count(batch_group_count),
        precision=_check_precision(_NAME, precision),
        preferred_element_type=_preferred(_NAME, preferred_element_type),
    )


__all__ = [
    "ConvDimensionNumbers",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "dot_general",
    "padtype_to_pads",
]
