"""The ``jnp`` functions JAX 0.10.2 runs as a ``jax.jit`` (directly, or
through a jitted helper that is the first thing to touch their array
arguments), and the tangent retyping such a jit boundary does under ``jvp``.

JAX's ``jvp`` of a jit differentiates the jitted program with input
tangents typed as the primals (weak type included), whatever the weak
type of the tangents it is given; the tangents out are typed by that
program. So inside an eager ``jvp``, ``x * 2.0`` of a Python-float ``x``
with a float32 tangent has a weakly typed tangent in JAX, where applying the
primitives one by one gives a strong one (docs/semantics.md, "Tangent
types and zeros"). refimpl's ``numpy`` functions are not jits: the
functions named here retype their arguments' tangents on entry instead,
which gives the jitted program's types. ``lax`` functions bind their
primitive directly in JAX too, and ``reshape``, ``transpose``,
``expand_dims``, ``broadcast_to``, ... are no jits there: they keep the
tangents' own weak types, here as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from refimpl import tracing
from refimpl.transforms.ad import JVPTrace, jit_outputs_made_arrays, tangents_typed_as_primals

_stack = tracing._stack

# Found against JAX 0.10.2: the functions whose jnp version is a jit (a
# PjitFunction, or a ufunc object calling one), or whose first operation on
# an argument under jvp is a jit or a conversion to the argument's own type
# (asarray, astype, concatenate's promotion), less those whose jvp keeps a weakly
# typed tangent of a strong primal weak (trim_zeros).
JIT_BOUNDARY = frozenset(
    """
abs absolute acos acosh add all allclose amax amin angle any append arccos arccosh arcsin
arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort argwhere around array
asarray astype asin asinh atan atan2 atanh atleast_1d atleast_2d atleast_3d average bitwise_and
bitwise_count bitwise_invert bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift
bitwise_xor block broadcast_arrays cbrt ceil clip column_stack concat concatenate conj
conjugate convolve copy copysign corrcoef correlate cos cosh count_nonzero cov cross cumprod
cumsum cumulative_sum deg2rad degrees delete diag diagflat diagonal diff digitize divide
divmod dot dstack ediff1d einsum empty_like equal exp exp2 expm1 fabs flatnonzero flip
fliplr flipud float_power floor floor_divide fmax fmin fmod frexp gcd geomspace gradient
greater greater_equal heaviside hstack hypot i0 imag inner insert invert isclose iscomplex
isfinite isin isinf isnan isreal kron lcm ldexp left_shift less less_equal lexsort linspace
log log10 log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor
logspace matmul matvec max maximum mean median min minimum mod modf moveaxis multiply
nan_to_num nanargmax nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin
nanpercentile nanprod nanquantile nanstd nansum nanvar negative nextafter nonzero not_equal
ones_like outer packbits pad partition percentile poly polyadd polyder polyfit polyint
polysub polyval positive pow power prod ptp put_along_axis quantile rad2deg radians ravel
real reciprocal remainder resize right_shift rint roll rollaxis rot90 round searchsorted
setdiff1d setxor1d sign signbit sin sinc sinh sort sort_complex spacing sqrt square squeeze
stack std subtract sum swapaxes take take_along_axis tan tanh trace trapezoid tril triu
true_divide trunc unique unique_all unique_counts unique_inverse unique_values unpackbits
unravel_index unstack unwrap vander var vdot vecmat vstack where zeros_like
""".split()
)


# Of those, the ones that are no jit in JAX 0.10.2 (their promotion of
# several arrays is): ``concatenate([x])`` returns ``x`` itself, so under jvp
# the user's own NumPy primal and tangent come back (docs/semantics.md).
NOT_JITS = frozenset({"concatenate", "concat"})

# Under vmap, the ones that hand the user's own NumPy argument back when they
# compute nothing (no jit in JAX 0.10.2: ``vmap(jnp.asarray)`` of a float64
# NumPy array is that array), with the arguments that still make them copy
# (name -> (the argument, its position, the value that copies, its default));
# every other name here gives a new array.
VMAP_PASS_THROUGH: dict[str, tuple[str, int, Any, Any]] = {
    "asarray": ("copy", -1, True, None),  # (copy is keyword-only)
    "array": ("copy", 2, True, True),
    "astype": ("copy", -1, True, False),
    # axis=None ravels each operand, and jnp.ravel is a jit
    "concatenate": ("axis", 1, None, 0),
    "concat": ("axis", -1, None, 0),
}


def _passes_through(name: str | None, args: tuple, kwargs: dict[str, Any]) -> bool:
    """Whether the ``name`` call hands an argument's host data back as it is."""
    if name not in VMAP_PASS_THROUGH:
        return False
    arg, position, copies, default = VMAP_PASS_THROUGH[name]
    given = args[position] if 0 <= position < len(args) else kwargs.get(arg, default)
    return given is not copies


def jit_boundary(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` retyping the tangents of its arguments as a jit would,
    and (a jit computes new arrays) returning no host data its arguments'
    tracers held (a NumPy primal or tangent passed through, e.g. by
    ``asarray``; under vmap, a NumPy argument ``ravel`` or ``squeeze``
    left as it was: a float64 one comes back a float32 Array, as in JAX)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _stack.traces and any(type(t) is JVPTrace and not t.linearize for t in _stack.traces):
            args = tangents_typed_as_primals(args)
            if kwargs:
                kwargs = {k: tangents_typed_as_primals(v) for k, v in kwargs.items()}
            out = function(*args, **kwargs)
            if jitless:
                return out
            return jit_outputs_made_arrays(out, _passes_through(name, args, kwargs))
        out = function(*args, **kwargs)
        if not _stack.traces:
            return out
        return jit_outputs_made_arrays(out, _passes_through(name, args, kwargs))

    name = getattr(function, "__name__", None)
    jitless = name in NOT_JITS

    return wrapper


# Found against JAX 0.10.2 (``jnp.<name>._jit_info.static_argnames``, less
# out_sharding): the jnp functions that are a ``jax.jit`` with static
# arguments, which must be hashable (refimpl/_static_args.py).
STATIC_ARGNAMES: dict[str, tuple[str, ...]] = {
    "allclose": ("equal_nan",),
    "angle": ("deg",),
    "append": ("axis",),
    "argpartition": ("kth", "axis"),
    "argsort": ("axis", "kind", "order", "stable", "descending", "dtype"),
    "around": ("decimals",),
    "convolve": ("mode", "precision", "preferred_element_type"),
    "corrcoef": ("rowvar", "dtype"),
    "correlate": ("mode", "precision", "preferred_element_type"),
    "count_nonzero": ("axis", "keepdims"),
    "cov": ("rowvar", "bias", "ddof", "dtype"),
    "cross": ("axisa", "axisb", "axisc", "axis"),
    "cumprod": ("axis", "dtype"),
    "cumsum": ("axis", "dtype"),
    "diagonal": ("offset", "axis1", "axis2"),
    "diff": ("n", "axis"),
    "digitize": ("right", "method"),
    "dot": ("precision", "preferred_element_type"),
    "gradient": ("axis", "edge_order"),
    "inner": ("precision", "preferred_element_type"),
    "isclose": ("equal_nan",),
    "lexsort": ("axis",),
    "matmul": ("precision", "preferred_element_type"),
    "median": ("axis", "overwrite_input", "keepdims"),
    "nancumprod": ("axis", "dtype"),
    "nancumsum": ("axis", "dtype"),
    "nanmax": ("axis", "keepdims"),
    "nanmean": ("axis", "dtype", "keepdims"),
    "nanmedian": ("axis", "overwrite_input", "keepdims"),
    "nanmin": ("axis", "keepdims"),
    "nanpercentile": ("axis", "overwrite_input", "keepdims", "method"),
    "nanprod": ("axis", "dtype", "keepdims"),
    "nanquantile": ("axis", "overwrite_input", "keepdims", "method"),
    "nanstd": ("axis", "dtype", "keepdims"),
    "nansum": ("axis", "dtype", "keepdims"),
    "nanvar": ("axis", "dtype", "keepdims"),
    "packbits": ("axis", "bitorder"),
    "partition": ("kth", "axis"),
    "percentile": ("axis", "overwrite_input", "keepdims", "method"),
    "polyder": ("m",),
    "polyfit": ("deg", "rcond", "full", "cov"),
    "polyint": ("m",),
    "polyval": ("unroll",),
    "put_along_axis": ("axis", "inplace", "mode"),
    "quantile": ("axis", "overwrite_input", "keepdims", "method"),
    "ravel": ("order",),
    "resize": ("new_shape",),
    "rollaxis": ("axis", "start"),
    "rot90": ("k", "axes"),
    "round": ("decimals",),
    "searchsorted": ("side", "method"),
    "sort": ("axis", "kind", "order", "stable", "descending"),
    "swapaxes": ("axis1", "axis2"),
    "take_along_axis": ("axis", "mode", "fill_value", "wrap_negative_indices"),
    "trace": ("axis1", "axis2", "dtype"),
    "trapezoid": ("axis",),
    "tril": ("k",),
    "triu": ("k",),
    "unpackbits": ("axis", "count", "bitorder"),
    "unstack": ("axis",),
    "unwrap": ("axis",),
    "vander": ("N", "increasing"),
    "vdot": ("precision", "preferred_element_type"),
}
