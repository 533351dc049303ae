"""Operands defining ``__jax_array__``: JAX 0.10.2's rule for the ``jnp``
functions, applied to all of them in one place (the wrappers installed by
``refimpl.numpy``, ``refimpl.numpy.linalg``, ``refimpl.numpy.fft``, and on
``lax.convert_element_type`` and ``lax.full_like``).

JAX reads such an object in two ways, found by calling every ``jnp``,
``jnp.linalg``, ``jnp.fft`` and ``lax`` function with one:

* abstracting it (a jit's argument, a primitive's operand) is a
  ``ValueError``: "Triggering __jax_array__() during abstractification is
  no longer supported" (``tracing.jax_array_error``). So every ``lax``
  function refuses one, but ``convert_element_type`` (which converts it
  first) and ``full_like`` (which reads its shape and dtype);
* a ``jnp`` function converts every array argument (``ensure_arraylike``,
  ``promote_args``): it calls ``__jax_array__()`` and computes with the
  result, for an array argument given directly or in a list or tuple
  (``concatenate([a, b])``).

Many ``jnp`` functions are jits in JAX (``ABSTRACTED``): their arguments
are abstracted before the function converts them. A *registered pytree
node* defining ``__jax_array__`` passes that boundary (the jit flattens it
to its leaves and rebuilds it inside, where the function converts it); any
other such object is refused there. So ``jnp.matmul(a, a)`` and
``jax.jit(jnp.matmul)(a, a)`` compute for a pytree class ``a`` and raise
for a plain one, while ``jnp.reshape`` (no jit) takes either.

refimpl's ``jnp`` functions are Python functions, not jits: the wrapper
below converts the arguments on entry, refusing the non-pytree ones for the
``ABSTRACTED`` names. A parameter that is not an array in the function's
signature (an ``int`` axis, a shape, a dtype) is left alone, as JAX reads
it as a number (an object there is JAX's ``TypeError``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from refimpl import pytree, tracing

# Found against JAX 0.10.2 (every function called with a plain object
# defining __jax_array__, in each array argument): the jnp functions that
# refuse one, i.e. that abstract their arguments (a jit) before converting
# them. The others convert it (argmax, reshape, einsum, ...).
ABSTRACTED = frozenset(
    """
abs absolute acos acosh add all allclose amax amin angle any append arccos arccosh arcsin
arcsinh arctan arctan2 arctanh argpartition argsort around asin asinh atan atan2 atanh
atleast_1d atleast_2d atleast_3d average bitwise_and bitwise_count bitwise_invert
bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor block cbrt ceil clip
conj conjugate convolve copysign corrcoef correlate cos cosh count_nonzero cov cross cumprod
cumsum deg2rad degrees diagflat diagonal diff digitize divide divmod dot ediff1d equal exp exp2
expm1 extract fabs flatnonzero float_power floor floor_divide fmax fmin fmod frexp gcd geomspace
gradient greater greater_equal heaviside hypot i0 imag inner interp invert isclose iscomplex
isfinite isinf isnan isreal kron lcm ldexp left_shift less less_equal lexsort linspace log log10
log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logspace matmul
matvec max maximum mean median min minimum mod modf multiply nan_to_num nancumprod nancumsum
nanmax nanmean nanmedian nanmin nanpercentile nanprod nanquantile nanstd nansum nanvar negative
nextafter not_equal outer packbits partition percentile poly polyadd polyder polyfit polyint
polysub polyval positive prod put_along_axis quantile rad2deg radians ravel real reciprocal
remainder resize right_shift rint rollaxis rot90 round searchsorted sign signbit sin sinc sinh
sort sort_complex spacing sqrt square subtract sum swapaxes take take_along_axis tan tanh trace
trapezoid tril triu true_divide trunc unpackbits unstack unwrap vander vdot vecmat
hstack vstack apply_along_axis
linalg.cholesky linalg.cond linalg.det linalg.eigh linalg.eigvals linalg.eigvalsh linalg.inv
linalg.matrix_power linalg.matrix_rank linalg.norm linalg.pinv linalg.qr linalg.slogdet
linalg.solve linalg.svd fft.hfft
ufunc.reduce ufunc.accumulate ufunc.reduceat ufunc.at
""".split()
)

# The functions converting an argument themselves (the creation functions:
# the weak type is read from the object, not from its array), or reading
# none as an array (arange's bounds are numbers in JAX).
# getitem's index is abstracted, never converted (as JAX).
OWN_RULE = frozenset({"array", "asarray", "arange", "is_operand", "getitem"})

# The functions whose parameter (name -> positions) is a sequence of arrays:
# its elements are converted; an object given in its place is JAX's TypeError
# (JAX iterates it).
SEQUENCES: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(
        ["concatenate", "concat", "stack", "hstack", "vstack", "dstack", "column_stack"], (0,)
    ),
    "lexsort": (0,),
    "select": (0, 1),
    "choose": (1,),
    "linalg.multi_dot": (0,),
}


def _defines_protocol(value: Any) -> bool:
    # (refimpl's arrays and tracers define no __jax_array__)
    return hasattr(type(value), "__jax_array__")


def _holds_protocol(values: Any) -> bool:
    """Whether one of ``values``, or an element of one as a list or tuple,
    defines ``__jax_array__`` (run on every call: the common case, none, costs
    a type check per argument)."""
    for v in values:
        if isinstance(v, (list, tuple)):
            if _holds_protocol(v):
                return True
        elif hasattr(type(v), "__jax_array__"):
            return True
    return False


def _converted(value: Any, name: str, position: int | str, abstracted: bool) -> Any:
    """``value`` with each object defining ``__jax_array__`` (itself, or in a
    list or tuple) replaced by its array; for a jit in JAX, a ValueError for
    one that is no pytree node (the jit would abstract it)."""
    if isinstance(value, list):
        return [_converted(v, name, position, abstracted) for v in value]
    if isinstance(value, tuple):
        items = [_converted(v, name, position, abstracted) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if not _defines_protocol(value):
        return value
    if abstracted and not pytree.is_tree_node(value):
        raise tracing.jax_array_error(name, position)
    return value.__jax_array__()


def _array_parameters(function: Callable[..., Any]) -> tuple[set[int], set[str], int | None]:
    """(positions, names, first position of ``*args``) of ``function``'s
    array parameters: those annotated with ``ArrayLike`` (alone, optional or
    in a sequence), ``Any`` or nothing; not an ``int``, shape or dtype."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return set(), set(), 0
    positions, names, var_from = set(), set(), None
    for i, p in enumerate(parameters):
        annotation = p.annotation
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        if not (
            "ArrayLike" in text or text in ("Any", "") or annotation is inspect.Parameter.empty
        ):
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            var_from = i
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        else:
            if p.kind is not inspect.Parameter.KEYWORD_ONLY:
                positions.add(i)
            names.add(p.name)
    return positions, names, var_from


def accepting(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (the public ``name``, e.g. ``"sin"``, ``"linalg.solve"``)
    taking objects that define ``__jax_array__`` as JAX's does."""
    positions, names, var_from = _array_parameters(inspect.unwrap(function))
    abstracted = name in ABSTRACTED
    sequences = SEQUENCES.get(name, ())
    short = name.rpartition(".")[2]

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _holds_protocol(args) or (kwargs and _holds_protocol(kwargs.values())):
            for i in sequences:
                if i < len(args) and _defines_protocol(args[i]):
                    if name == "lexsort":  # (the whole function is a jit: it refuses first)
                        _converted(args[i], short, i, abstracted)
                    raise TypeError(
                        f"{short}: argument at position {i} must be a sequence of arrays, "
                        f"got {type(args[i]).__name__} (its __jax_array__ is not called here)"
                    )
            args = tuple(
                _converted(a, short, i, abstracted)
                if i in positions or (var_from is not None and i >= var_from)
                else a
                for i, a in enumerate(args)
            )
            kwargs = {
                k: _converted(v, short, k, abstracted) if k in names else v
                for k, v in kwargs.items()
            }
        return function(*args, **kwargs)

    return wrapper


def install(namespace: dict[str, Any], names: list[str], prefix: str = "") -> None:
    """Wrap each plain function among ``names`` in ``namespace`` (a module's
    globals) with :func:`accepting`."""
    for n in names:
        value = namespace.get(n)
        if type(value) is type(install) and n not in OWN_RULE:
            namespace[n] = accepting(prefix + n, value)
