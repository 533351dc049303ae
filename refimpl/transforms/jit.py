"""``jit``: trace once per call signature, cache the Program, run it.

The signature of a call is exactly (SPEC "Tracing and the signature cache"):

* the pytree structure of the dynamic (non-static) arguments, kwargs included;
* per leaf: shape, dtype and weak_type;
* the static arguments' values (by hash and equality);
* which leaves are donated;
* the backend, the ``enable_x64`` flag and the default matmul precision
  (``default_matmul_precision``: the traced products record it).

Nothing else: not the values of array arguments, not their device, not the
Python identity of the function's globals.

Donation is decided per signature at trace time: ``refimpl.transforms.donation``
computes the alias plan (donated input leaf -> output leaf), the CacheEntry
keeps it, and each backend's executor carries it out (the reference backend's,
``refimpl.backends.ref.execute.execute_ref``, writes the aliased outputs into
the donated NumPy buffers).
"""

from __future__ import annotations

import enum
import functools
import inspect
import logging
import threading
import types
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from refimpl import (
    _wraps,
    backends,
    dtypes,
    monitoring,
    pytree,
    test_events,
    traceback_util,
    tracing,
)
from refimpl.config import config, matmul_precision, numpy_promotion
from refimpl.core import AbstractRef, Program, ShapedArray, ShapeError, shape_error_at
from refimpl.errors import NonHashableStaticArgumentError
from refimpl.primitives import base as primitive_base
from refimpl.primitives import ref_context, structural
from refimpl.primitives.call import jit_call_p
from refimpl.primitives.collectives import bound_axes
from refimpl.sharding import NamedSharding, PartitionSpec, Sharding, get_mesh
from refimpl.traceback_util import api_boundary
from refimpl.transforms import donation, sharded
from refimpl.transforms.donation import DonationPlan

_MeshArray = sharded.MeshArray
_SPLIT_TYPES = sharded.SPLIT_TYPES

logger = logging.getLogger("refimpl.jit")


class ShapeDtypeStruct:
    """An abstract array argument or result: shape, dtype and weak_type only."""

    __slots__ = ("shape", "dtype", "weak_type", "is_ref", "_sharding")

    def __init__(
        self,
        shape: Sequence[int],
        dtype: Any,
        weak_type: bool = False,
        *,
        is_ref: bool = False,
        sharding: Any = None,
    ) -> None:
        self.shape = tuple(int(d) for d in shape)
        if dtype is None:  # np.dtype(None) would be float64 (JAX's ValueError)
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        # an extended dtype (typed keys: ShapeDtypeStruct(key.shape, key.dtype)) as it is
        self.dtype: Any = dtype if isinstance(dtype, dtypes.ExtendedDtype) else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        # a Ref argument's type (jit(f).trace / lower of a function taking a Ref)
        self.is_ref = bool(is_ref)
        self._sharding = _struct_sharding(sharding)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def sharding(self) -> Any:
        """The ``sharding=`` it was made with (None without one), as JAX
        0.10.2's: a ``PartitionSpec`` given outside a mesh is resolved when
        read, a ``TypeError`` while no mesh is set (JAX's class)."""
        if isinstance(self._sharding, PartitionSpec):
            mesh = get_mesh()
            if mesh is None:
                raise TypeError(
                    "When specifying PartitionSpec to `ShapeDtypeStruct`, the context mesh "
                    "cannot be empty. Please use `jax.set_mesh` to set the mesh context."
                )
            return NamedSharding(mesh, self._sharding)
        return self._sharding

    def update(self, **changes: Any) -> ShapeDtypeStruct:
        """A copy with some of ``shape``, ``dtype``, ``weak_type``, ``is_ref``,
        ``sharding`` replaced (JAX 0.10.2's ``ShapeDtypeStruct.update``)."""
        fields = {"shape": self.shape, "dtype": self.dtype, "weak_type": self.weak_type}
        fields["is_ref"] = self.is_ref
        fields["sharding"] = self._sharding
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update: unknown fields {sorted(unknown)}")
        fields.update(changes)
        return ShapeDtypeStruct(
            fields["shape"],
            fields["dtype"],
            fields["weak_type"],
            is_ref=fields["is_ref"],
            sharding=fields["sharding"],
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (
            (self.shape, self.dtype, self.weak_type, self.is_ref, self._sharding)
            == (other.shape, other.dtype, other.weak_type, other.is_ref, other._sharding)
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type, self.is_ref, self._sharding))

    def __repr__(self) -> str:
        # JAX 0.10.2's order: shape, dtype, sharding, weak_type
        sharding = f", sharding={self._sharding!r}" if self._sharding is not None else ""
        weak = ", weak_type=True" if self.weak_type else ""
        ref = ", is_ref=True" if self.is_ref else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak}{ref})"


def _struct_sharding(sharding: Any) -> Any:
    """``ShapeDtypeStruct(sharding=...)``: None, a ``Sharding``, or a
    ``PartitionSpec`` (over the context mesh when one is set, as JAX 0.10.2's;
    kept as the spec otherwise); anything else is JAX's ``ValueError``."""
    if sharding is None or isinstance(sharding, Sharding):
        return sharding
    if isinstance(sharding, PartitionSpec):
        mesh = get_mesh()
        return sharding if mesh is None else NamedSharding(mesh, sharding)
    raise ValueError(
        "sharding should be an instance of `jax.sharding.Sharding`, "
        "`jax.sharding.PartitionSpec` or `jax.experimental.layout.Format`. "
        f"Got {sharding} of type {type(sharding)}."
    )


def _shape_dtype_aval(s: ShapeDtypeStruct) -> Any:
    aval = ShapedArray(s.shape, dtypes.canonicalize_dtype(s.dtype), s.weak_type)
    return AbstractRef(aval) if s.is_ref else aval


class _NoValueError(TypeError):
    """A ``ShapeDtypeStruct`` used as a value (eval_shape reads one its
    function returns as its own type instead)."""


def _no_value(s: ShapeDtypeStruct) -> np.ndarray:
    raise _NoValueError(f"{s!r} is abstract: it has a shape and dtype but no value to compute with")


tracing.register_array_type(ShapeDtypeStruct, _shape_dtype_aval, _no_value)


def _ref_argument(leaf: Any) -> Any:
    """A Ref argument of a trace: ``leaf`` itself, or for an abstract one
    (``ShapeDtypeStruct(..., is_ref=True)`` given to ``trace``/``lower``) a
    Ref of that type made for the trace, which holds the trace's input."""
    if type(leaf) is not ShapeDtypeStruct:
        return leaf
    return ref_context.Ref(np.zeros(leaf.shape, leaf.dtype), 0)


def aval_to_struct(aval: ShapedArray) -> ShapeDtypeStruct:
    return ShapeDtypeStruct(aval.shape, aval.dtype, aval.weak_type)


# --- argument conventions ---------------------------------------------------------


def _signature_of(fun: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class ArgSpec:
    """Which positions and names of a function are static or donated.

    ``static_argnums``/``donate_argnums`` are kept as given (negative allowed)
    and resolved against the number of positional arguments of each call;
    names and positions are mirrored through the function's signature, so
    ``f(x, n=3)`` with ``static_argnums=(1,)`` treats ``n`` as static.
    """

    static_nums: frozenset[int]
    static_names: frozenset[str]
    donate_nums: frozenset[int]
    donate_names: frozenset[str]
    param_names: tuple[str, ...]  # positional-or-keyword parameter names, in order
    fun_name: str

    @classmethod
    def build(
        cls,
        fun: Callable[..., Any],
        fun_name: str,
        static_argnums: Any,
        static_argnames: Any,
        donate_argnums: Any,
        donate_argnames: Any,
    ) -> ArgSpec:
        sig = _signature_of(fun)
        if sig is None and donate_argnames not in ((), None, []):
            # Without a signature no name can be matched: donating nothing
            # silently would lose the caller's intent (JAX raises too).
            raise ValueError(
                f"jit({fun_name}): getting the signature of {fun_name} failed, so "
                f"donate_argnames={donate_argnames!r} cannot be resolved; pass "
                "donate_argnums instead of donate_argnames"
            )
        positional: list[str] = []
        if sig is not None:
            kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            positional = [p.name for p in sig.parameters.values() if p.kind in kinds]
        s_nums = _int_set(static_argnums, "static_argnums", fun_name)
        s_names = _name_set(static_argnames, "static_argnames", fun_name)
        d_nums = _int_set(donate_argnums, "donate_argnums", fun_name)
        d_names = _name_set(donate_argnames, "donate_argnames", fun_name)
        n_params = len(positional) if sig is not None and not _has_var_positional(sig) else None
        _check_in_range(s_nums, "static_argnums", n_params, fun_name)
        _check_in_range(d_nums, "donate_argnums", n_params, fun_name)
        if sig is not None:
            _check_names(s_names, "static_argnames", sig, fun_name)
            _check_names(d_names, "donate_argnames", sig, fun_name)
        # As JAX: numbers and names complete each other only when one of the
        # two is not given (None); given both, each is taken as it is.
        if static_argnums is None or static_argnames is None:
            s_nums, s_names = _mirror(s_nums, s_names, sig)
        if donate_argnums is None or donate_argnames is None:
            d_nums, d_names = _mirror(d_nums, d_names, sig)
        both = _overlap(s_nums, d_nums, n_params) | (s_names & d_names)
        if both:
            # JAX 0.10.2's words first (it compares the names, numbers mirrored)
            raise ValueError(
                f"static_argnames and donate_argnames cannot intersect: jit({fun_name}): "
                f"argument(s) {sorted(both, key=str)} are both static and donated; an argument "
                "may be one or the other"
            )
        return cls(s_nums, s_names, d_nums, d_names, tuple(positional), fun_name)


def _has_var_positional(sig: inspect.Signature) -> bool:
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())


def _int_set(value: Any, what: str, fun_name: str) -> frozenset[int]:
    if value is None:  # as JAX: none given (the numbers follow from the names)
        return frozenset()
    if isinstance(value, bool):  # JAX 0.10.2 takes True as argument 1 (bool is an int)
        value = int(value)
    try:
        items = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    except TypeError:
        items = (value,)  # not iterable: reported as a wrong item below
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise TypeError(
                f"jit({fun_name}): {what} must be ints (an int or a sequence of them), "
                f"got {value!r}"
            )
    return frozenset(int(i) for i in items)


# No call can pass 2**31 positional arguments; larger numbers could never name
# one, and the native fast path keeps argument numbers in 32 bits.
_MAX_ARGNUM = 2**31 - 1


def _check_in_range(nums: frozenset[int], what: str, n_params: int | None, fun_name: str) -> None:
    """``ValueError`` for a number that can name no positional argument of any call."""
    limit = _MAX_ARGNUM if n_params is None else n_params
    bad = sorted(i for i in nums if not -limit <= i < limit)
    if bad:
        accepts = (
            f"{fun_name} only accepts {n_params} positional arguments"
            if n_params is not None
            else "argument numbers must be below 2**31 in absolute value"
        )
        raise ValueError(f"jit({fun_name}): {what}={tuple(bad)} is out of range: {accepts}")


def _name_set(value: Any, what: str, fun_name: str) -> frozenset[str]:
    if value is None:  # as JAX: none given (the names follow from the numbers)
        return frozenset()
    try:
        items = (value,) if isinstance(value, str) else tuple(value)
    except TypeError:
        items = (value,)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"jit({fun_name}): {what} must be strings, got {value!r}")
    return frozenset(items)


def _check_names(names: frozenset[str], what: str, sig: inspect.Signature, fun_name: str) -> None:
    """``ValueError`` for a name no keyword argument of ``fun`` can have (JAX's check):
    a positional-only or ``*args`` parameter, or, without ``**kwargs``, no parameter."""
    params = sig.parameters.values()
    not_keywords = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)
    positional_only = sorted(p.name for p in params if p.kind in not_keywords and p.name in names)
    if positional_only:
        raise ValueError(
            f"jit({fun_name}): {what} names {positional_only}, which cannot be passed by "
            f"keyword (positional-only or *args parameters of {fun_name})"
        )
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return  # **kwargs takes any other name
    keywords = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    unknown = sorted(names - {p.name for p in params if p.kind in keywords})
    if unknown:
        raise ValueError(f"jit({fun_name}): {what} names {unknown}, which {fun_name} does not take")


def _mirror(
    nums: frozenset[int], names: frozenset[str], sig: inspect.Signature | None
) -> tuple[frozenset[int], frozenset[str]]:
    """Each number's parameter name and each name's position (parameters that
    can be passed either way, as JAX's inference)."""
    if sig is None:
        return nums, names
    either = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    n = len(either)
    kinds = [p.kind for p in sig.parameters.values()][:n]
    more_names = {  # a negative number names no parameter (as JAX)
        either[i]
        for i in nums
        if 0 <= i < n and kinds[i] is inspect.Parameter.POSITIONAL_OR_KEYWORD
    }
    more_nums = {either.index(name) for name in names if name in either}
    return nums | more_nums, names | more_names


def _overlap(a: frozenset[int], b: frozenset[int], n: int | None) -> set[int]:
    if n is None:
        return set(a & b)
    return {i % n for i in a if -n <= i < n} & {i % n for i in b if -n <= i < n}


def _resolve(nums: frozenset[int], n_args: int) -> frozenset[int]:
    return frozenset(i % n_args for i in nums if -n_args <= i < n_args)


class _Static:
    """A static argument value, hashed once; equality is the value's own."""

    __slots__ = ("value", "hash")

    def __init__(self, value: Any, label: str, fun_name: str) -> None:
        try:
            self.hash = hash(value)
        except TypeError as err:
            raise NonHashableStaticArgumentError(
                f"jit({fun_name}): Non-hashable static arguments are not supported: static "
                f"argument {label} has unhashable type {type(value).__name__}. An error occurred "
                f"while trying to hash an object of type {type(value)}, {value!r}. The error "
                f"was: TypeError: {err}"
            ) from None
        self.value = value

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Static):
            return NotImplemented
        if type(self.value) is not type(other.value):
            return False
        try:
            return bool(self.value == other.value)
        except Exception as error:  # JAX's class and words: a cache lookup cannot go on
            raise ValueError(
                "static arguments should be comparable using __eq__. The following error was "
                f"raised when comparing two objects of types {type(self.value)} and "
                f"{type(other.value)}. The error was: {type(error).__name__}: {error}"
            ) from None

    def __repr__(self) -> str:
        return repr(self.value)


class MappedAxes(NamedTuple):
    """pmap's part of a call signature: what maps the leaves over devices.

    ``in_axes`` is per dynamic leaf (None: replicated); ``out_axes`` is the
    hashable form of pmap's ``out_axes`` prefix (``hashable_axes``).
    """

    axis_name: Any
    size: int
    in_axes: tuple[int | None, ...]
    out_axes: Any
    devices: tuple[Any, ...]


class Signature(NamedTuple):
    """The call signature of jit and pmap (module docstring); a pmap call's
    has its ``mapped`` fields, a jit call's None there."""

    in_tree: pytree.PyTreeDef
    avals: tuple[ShapedArray, ...]
    statics: tuple[tuple[str, bool, _Static], ...]  # (name, passed by keyword?, value)
    donated: tuple[bool, ...]
    backend: str
    x64: bool
    mapped: MappedAxes | None = None
    axes: tuple[tuple[Any, int], ...] = ()  # the named axes bound at the call (bound_axes)
    # the default matmul precision in effect (config.matmul_precision): the
    # traced dot_general and convolution equations record it
    matmul_precision: Any = None
    # (numpy_rank_promotion, numpy_dtype_promotion) (config.numpy_promotion):
    # jnp functions traced under one may warn, raise or promote otherwise
    promotion: tuple[str, str] = ("allow", "standard")


@dataclass
class CallArgs:
    """One call's arguments split into static values and dynamic leaves.

    ``traced``: the call is made while a transformation traces it (an
    enclosing staging trace, or tracers among the leaves), so it becomes
    an equation of that trace rather than running.
    """

    signature: Signature
    leaves: list[Any]
    paths: list[str]
    static_args: dict[int, Any]
    static_kwargs: dict[str, Any]
    traced: bool = False

    @property
    def donated(self) -> tuple[bool, ...]:
        return self.signature.donated


class CallLike(Protocol):
    """What the checks of every call read of it: jit's ``CallArgs``, pmap's call."""

    @property
    def leaves(self) -> list[Any]: ...
    @property
    def paths(self) -> list[str]: ...
    @property
    def donated(self) -> Sequence[bool]: ...
    @property
    def traced(self) -> bool: ...


def leaf_avals(
    op_name: str, leaves: Sequence[Any], paths: Sequence[str] | Callable[[], Sequence[str]]
) -> tuple[Any, ...]:
    """The avals of a jit or pmap call's leaves, for its signature (``op_name``
    is ``jit(f)`` or ``pmap(f)``, ``paths`` name the leaves in errors; a
    function giving them is called only for an error). Reading them is also
    the check that no argument is deleted (donated to an earlier call, or
    deleted by hand): its aval raises ``RuntimeError``."""
    if callable(paths):
        try:
            return tuple(_leaf_aval(leaf, op_name, "") for leaf in leaves)
        except Exception:
            paths = paths()  # the same error again, naming the leaf
    try:
        return tuple(
            _leaf_aval(leaf, op_name, f"'{path}'") for leaf, path in zip(leaves, paths, strict=True)
        )
    except OverflowError as error:  # a Python int outside the default int type
        leaf, path = next(
            (leaf, path)
            for leaf, path in zip(leaves, paths, strict=True)
            if _overflows(leaf, op_name, path)
        )
        dtype = str(error).rsplit(" ", 1)[-1]
        raise OverflowError(
            f"{op_name}: An overflow was encountered while parsing an argument to a jitted "
            f"computation, whose argument path is {path}. Got {type(leaf)} with value "
            f"{leaf}, outside the range of {dtype}"
        ) from None
    except ShapeError as error:  # e.g. a ShapeDtypeStruct no array can have
        where = next(
            f"{op_name} argument {path}"
            for leaf, path in zip(leaves, paths, strict=True)
            if _shape_error_of(leaf) is not None
        )
        raise shape_error_at(error, where) from None


def hashable_axes(axes: Any) -> Any:
    """A pytree prefix of axes (ints and None, in tuples, lists, dicts) as a
    hashable value equal for equal prefixes: its structure and its leaves."""
    leaves, tree = pytree.tree_flatten(axes, is_leaf=lambda a: a is None)
    return tree, tuple(leaves)


def check_call(call: CallLike, name: str, transform: str = "jit") -> None:
    """The check of every jit and pmap call before its entry is looked up
    (before anything is traced, run or deleted): no array fills two leaves
    where one is donated. (A deleted argument raised when the signature was
    made, :func:`leaf_avals`.) A traced call donates nothing: the outer call
    owns the buffers."""
    if not call.traced and any(call.donated):
        donation.check_no_repeated_donation(
            call.leaves, call.donated, call.paths, name, transform=transform
        )


def check_args(call: CallLike, name: str, transform: str = "jit") -> None:
    """No abstract argument in a jit or pmap call about to run."""
    for i, leaf in enumerate(call.leaves):
        if isinstance(leaf, ShapeDtypeStruct):
            path = call.paths[i]
            if transform == "pmap":
                raise TypeError(
                    f"pmap({name}): argument {path} is a ShapeDtypeStruct, which has no value "
                    "to compute with; use eval_shape for abstract arguments"
                )
            raise TypeError(
                f"jit({name}): argument {path} is a ShapeDtypeStruct; use "
                ".trace(...) or eval_shape for abstract arguments"
            )


def check_run(entry: CacheEntry, call: CallArgs, name: str, stacklevel: int) -> None:
    """The checks of every call about to run (not traced) on a backend: no
    abstract argument, and the "donated buffers not usable" warning (once
    per entry; ``stacklevel`` counts the frames up to the user's call, this
    function's own first)."""
    check_args(call, name)
    if entry.donation.unusable and not entry.donation_warned:
        warn_unusable_once(entry, name, stacklevel + 1)


def warn_unusable_once(entry: CacheEntry, name: str, stacklevel: int) -> None:
    """The "not usable" warning of an entry's donation plan, at its first call
    (``stacklevel`` as :func:`check_run`'s)."""
    if entry.donation.unusable and not entry.donation_warned:
        entry.donation_warned = True
        donation.warn_unusable(entry.donation, name, stacklevel + 1)


@dataclass
class CacheEntry:
    """What a trace produced for one signature.

    ``donation`` is the alias plan, fixed at trace time from the signature's
    donated leaves and the program's types (see ``refimpl.transforms.donation``);
    every executor reads it from here.
    """

    program: Program
    out_tree: pytree.PyTreeDef
    captured: list[Any] = field(default_factory=list)  # outer tracers (nested jit only)
    donation: DonationPlan = field(default_factory=lambda: DonationPlan(()))
    executable: Any = None  # backend-specific compiled form, filled in lazily
    executable_all: Any = None  # pjrt: one taking every input (jit(keep_unused=True))
    donation_warned: bool = False  # the "not usable" warning is given once per entry
    custom_out_tree: bool | None = None  # out_tree has user-defined nodes? (ref backend)
    # Input leaves that are Refs: the program takes their values and returns
    # (outputs, [final values]), each final value aliased to its input.
    ref_leaves: tuple[int, ...] = ()
    ref_fast: Any = None  # pjrt: the fast-path jit running the program (_ref_fast_call)
    # Refs made outside that the function closes over (implicit Ref arguments):
    # their values are the program's last inputs, ``ref_leaves`` includes them.
    closed_refs: tuple[Any, ...] = ()
    # Which of the refs of ``ref_leaves`` the function writes (a nested call
    # writes back only those).
    ref_written: tuple[bool, ...] = ()
    # float0 leaves in or out (tangents of integer values): kept out of the program
    float0: Float0Plan | None = None
    # Whether the program calls back to Python (_RefClaims; found on first use)
    host_callbacks: bool | None = None
    # How this entry's calls run (CallPlan), decided here, once, from the
    # program's types and effects: Ref arguments, float0 leaves, captured tracers.
    plan: CallPlan = field(init=False, repr=False)

    def __post_init__(self) -> None:
        kind: CallPlan = (
            _REF_CALL if self.ref_leaves else _FLOAT0_CALL if self.float0 else _PLAIN_CALL
        )
        # a closure over outer tracers is valid inside that trace only: always bound
        self.plan = _Bound(kind) if self.captured else kind

    @property
    def aliases(self) -> dict[int, int]:
        """Donated input leaf -> the output leaf that reuses its buffer."""
        return self.donation.aliases


class Float0Plan(NamedTuple):
    """Where a cache entry's float0 leaves are (as JAX, they carry no data and
    stay out of the compiled program).

    ``inputs`` are input leaf positions not given to the program (the trace
    sees ``np.zeros(shape, float0)`` constants there); ``outputs`` are
    ``(position, shape)`` of output leaves materialized after the run as
    ``np.zeros(shape, float0)``; ``inner`` is the entry the executors run: the
    same program, a flat list of its outputs as output tree, donation planned
    over the other leaves (its executable cache lives there).
    """

    inputs: tuple[int, ...]
    outputs: tuple[tuple[int, tuple[int, ...]], ...]
    inner: CacheEntry


def _is_float0_aval(aval: Any) -> bool:
    return getattr(aval, "dtype", None) == dtypes.float0


def _is_float0_value(value: Any) -> bool:
    if isinstance(value, tracing.Tracer):
        return _is_float0_aval(value.aval)
    return isinstance(value, np.ndarray) and value.dtype == dtypes.float0


def _overflows(leaf: Any, op_name: str, path: str) -> bool:
    try:
        _leaf_aval(leaf, op_name, path)
    except OverflowError:
        return True
    except Exception:  # noqa: BLE001  (only the overflowing leaf is sought)
        return False
    return False


def _leaf_aval(leaf: Any, op_name: str, position: str) -> Any:
    """A jit argument's aval; a float0 array (a tangent of an integer) too."""
    if isinstance(leaf, np.ndarray) and leaf.dtype == dtypes.float0:
        return ShapedArray(leaf.shape, dtypes.float0)
    if type(leaf).__name__ == "Ref":
        try:
            return tracing.get_aval(leaf, op_name, position)
        except RuntimeError:
            # Its value is donated to a call updating the ref in another thread
            # right now, which writes the ref back before this call reads it
            # (_RefClaims): the type is the held array's.
            held = getattr(leaf._value, "aval", None)
            if not isinstance(held, ShapedArray):
                raise
            return AbstractRef(held, leaf._memory_space, leaf._kind)
    try:
        return tracing.get_aval(leaf, op_name, position)
    except TypeError as error:
        if tracing.is_array_like(leaf) or "not a valid array value" not in str(error):
            raise
        # the usual cause is a configuration value (a string, a callable, ...)
        # passed to a jitted function as if it were an array; JAX 0.10.2's
        # words first (its tests match them), then refimpl's advice
        path = position.strip("'") if isinstance(position, str) else position
        words = str(error).rstrip(".")
        lead = (
            f"Error interpreting argument to {op_name} as an abstract array. The problematic "
            f"value is of type {type(leaf)} and was passed to the function at path {path}. "
        )
        if op_name.startswith("pmap"):
            raise TypeError(
                f"{lead}{words}. A pmapped function's non-array arguments must be marked static "
                "with pmap's static_broadcasted_argnums (hashable values; each new value "
                "traces again)"
            ) from None
        raise TypeError(
            f"{lead}{words}. A jitted function's non-array arguments must be marked static with "
            "jit's static_argnums or static_argnames (hashable values; each new value "
            "traces again)"
        ) from None


def float0_inner_call(entry: CacheEntry, call: CallArgs) -> CallArgs:
    """``call`` without its float0 leaves: the arguments of ``entry.float0.inner``."""
    assert entry.float0 is not None
    kept = [i for i in range(len(call.leaves)) if i not in entry.float0.inputs]
    sig = call.signature
    return CallArgs(
        sig._replace(
            in_tree=pytree.tree_structure([0] * len(kept)),
            avals=tuple(sig.avals[i] for i in kept),
            donated=tuple(sig.donated[i] for i in kept),
        ),
        [call.leaves[i] for i in kept],
        [call.paths[i] for i in kept],
        call.static_args,
        call.static_kwargs,
    )


def with_float0_outputs(entry: CacheEntry, outs: Sequence[Any]) -> Any:
    """The output pytree: the program's outputs with the float0 leaves put back."""
    assert entry.float0 is not None
    leaves = list(outs)
    for position, shape in entry.float0.outputs:
        leaves.insert(position, np.zeros(shape, dtypes.float0))
    return pytree.tree_unflatten(entry.out_tree, leaves)


# --- how an entry's calls run -------------------------------------------------------


# (jitted, entry, call) -> the output pytree of a plain entry's run
Execute = Callable[["Jitted", "CacheEntry", CallArgs], Any]


def _execute_on_backend(jitted: Jitted, entry: CacheEntry, call: CallArgs) -> Any:
    """Run an entry on the call's backend: the output pytree."""
    return backends.get(call.signature.backend).execute(jitted, entry, call)


class CallPlan:
    """How the calls of one cache entry run, decided when the entry is made
    (``CacheEntry.plan``) from the program's types and effects.

    A call made while a transformation traces it binds one ``jit`` equation
    into that trace (``bind``); any other call passes the checks of every
    run (:func:`check_run`) and runs (``run``). ``execute(jitted, entry,
    call)`` runs a plain entry and returns its output pytree (the backend's
    executor by default; ``Compiled`` passes its own executables).
    """

    __slots__ = ()

    def runs_natively(self, entry: CacheEntry) -> bool:
        """Whether the C++ fast path can run the entry's calls as they are."""
        return True

    def out_info(self, entry: CacheEntry) -> Any:
        """What a call returns: its pytree of ``ShapeDtypeStruct``."""
        structs = [aval_to_struct(a) for a in entry.program.out_avals]
        return pytree.tree_unflatten(entry.out_tree, structs)

    def __call__(
        self, jitted: Jitted, entry: CacheEntry, call: CallArgs, args: tuple, kwargs: dict
    ) -> Any:
        if call.traced:
            return self.bind(jitted, entry, call)
        check_run(entry, call, jitted.__name__, 5)  # (5: the user's call, see check_run)
        return self.run(jitted, entry, call, args, kwargs)

    def bind(self, jitted: Jitted, entry: CacheEntry, call: CallArgs) -> Any:
        raise NotImplementedError

    def run(
        self,
        jitted: Jitted,
        entry: CacheEntry,
        call: CallArgs,
        args: tuple,
        kwargs: dict,
        execute: Execute = _execute_on_backend,
    ) -> Any:
        raise NotImplementedError

    def quick(self, jitted: Jitted, entry: CacheEntry, args: tuple) -> Any:
        """A call found by the jitted function's quick signature (``_Memo``):
        only plans that keep one are asked."""
        raise NotImplementedError


class _PlainCall(CallPlan):
    """The program takes the leaves and returns the outputs."""

    __slots__ = ()

    def __call__(
        self, jitted: Jitted, entry: CacheEntry, call: CallArgs, args: tuple, kwargs: dict
    ) -> Any:  # (the base class's, with run inlined: the most frequent call)
        if call.traced:
            return self.bind(jitted, entry, call)
        check_run(entry, call, jitted.__name__, 5)
        return backends.get(call.signature.backend).execute(jitted, entry, call)

    def bind(self, jitted: Jitted, entry: CacheEntry, call: CallArgs) -> Any:
        # Donation is ignored here: the buffers belong to the outer call,
        # which decides about them (as in JAX).
        outs = jit_call_p.bind(
            *entry.captured, *call.leaves, program=entry.program, name=jitted.__name__
        )
        return pytree.tree_unflatten(entry.out_tree, outs)

    def run(
        self,
        jitted: Jitted,
        entry: CacheEntry,
        call: CallArgs,
        args: tuple,
        kwargs: dict,
        execute: Execute = _execute_on_backend,
    ) -> Any:
        return execute(jitted, entry, call)


class _Float0Call(CallPlan):
    """float0 leaves (tangents of integers) in or out: they carry no data and
    stay out of the program; the other leaves run (or are bound) through the
    inner entry and the float0 outputs are made here."""

    __slots__ = ()

    def runs_natively(self, entry: CacheEntry) -> bool:
        return False  # it would pass the float0 leaves to the program

    def out_info(self, entry: CacheEntry) -> Any:
        assert entry.float0 is not None
        structs = [aval_to_struct(a) for a in entry.program.out_avals]
        for position, shape in entry.float0.outputs:
            structs.insert(position, ShapeDtypeStruct(shape, dtypes.float0))
        return pytree.tree_unflatten(entry.out_tree, structs)

    def bind(self, jitted: Jitted, entry: CacheEntry, call: CallArgs) -> Any:
        assert entry.float0 is not None
        leaves = [leaf for i, leaf in enumerate(call.leaves) if i not in entry.float0.inputs]
        outs = jit_call_p.bind(
            *entry.captured, *leaves, program=entry.program, name=jitted.__name__
        )
        return with_float0_outputs(entry, outs)

    def run(
        self,
        jitted: Jitted,
        entry: CacheEntry,
        call: CallArgs,
        args: tuple,
        kwargs: dict,
        execute: Execute = _execute_on_backend,
    ) -> Any:
        assert entry.float0 is not None
        outs = execute(jitted, entry.float0.inner, float0_inner_call(entry, call))
        return with_float0_outputs(entry, outs)


class _RefCall(CallPlan):
    """Ref arguments or closed-over refs: the program takes the refs' values
    and returns ``(outputs, [final values])``, written back into the refs.

    A call binds when traced, or when a ref holds a tracer of an enclosing
    transformation (``vmap(jit(f))(ref)``): the ref accesses thread through
    that trace, which owns the refs.
    """

    __slots__ = ()

    def __call__(
        self, jitted: Jitted, entry: CacheEntry, call: CallArgs, args: tuple, kwargs: dict
    ) -> Any:
        held = _held_refs(entry, call)
        if call.traced or any(isinstance(r._value, tracing.Tracer) for r in held):
            return self.bind(jitted, entry, call)
        check_run(entry, call, jitted.__name__, 5)  # (5: the user's call, see check_run)
        return self._run_held(jitted, entry, call, args, kwargs, _execute_on_backend, held)

    def bind(self, jitted: Jitted, entry: CacheEntry, call: CallArgs) -> Any:
        """One ``jit`` equation taking the refs' values (read in the enclosing
        trace) and returning their final values, written back into the refs
        it writes (the enclosing trace threads them in turn)."""
        n_leaves = len(call.leaves)
        refs = [call.leaves[i] for i in entry.ref_leaves if i < n_leaves]
        ref_paths = [call.paths[i] for i in entry.ref_leaves if i < n_leaves]
        ref_context.check_not_closed_over(refs, ref_paths, entry.closed_refs, jitted.__name__)
        refs += entry.closed_refs
        values = ref_context.outer_values(refs, entry.ref_written)
        leaves = list(call.leaves)
        for i, value in zip(entry.ref_leaves, values, strict=False):
            if i < n_leaves:
                leaves[i] = value
        leaves += values[len(values) - len(entry.closed_refs) :]
        outs = jit_call_p.bind(
            *entry.captured, *leaves, program=entry.program, name=jitted.__name__
        )
        out, finals = pytree.tree_unflatten(entry.out_tree, outs)
        pairs = [(r, v) for r, v, w in zip(refs, finals, entry.ref_written, strict=True) if w]
        ref_context.write_back([r for r, _ in pairs], [v for _, v in pairs])
        return out

    def run(
        self,
        jitted: Jitted,
        entry: CacheEntry,
        call: CallArgs,
        args: tuple,
        kwargs: dict,
        execute: Execute = _execute_on_backend,
    ) -> Any:
        """The refs' values in, final values written back; one call at a time
        reads, runs and writes back a ref (_RefClaims)."""
        held = _held_refs(entry, call)
        if any(isinstance(r._value, tracing.Tracer) for r in held):  # (Compiled runs directly)
            return self.bind(jitted, entry, call)
        return self._run_held(jitted, entry, call, args, kwargs, execute, held)

    def _run_held(
        self,
        jitted: Jitted,
        entry: CacheEntry,
        call: CallArgs,
        args: tuple,
        kwargs: dict,
        execute: Execute,
        held: list[Any],
    ) -> Any:
        claim = _ref_claims.claim(held, _has_host_callbacks(entry), jitted.__name__)
        try:
            return self._run_claimed(jitted, entry, call, args, kwargs, execute)
        finally:
            _ref_claims.release(claim)

    def _run_claimed(
        self,
        jitted: Jitted,
        entry: CacheEntry,
        call: CallArgs,
        args: tuple,
        kwargs: dict,
        execute: Execute,
    ) -> Any:
        name = jitted.__name__
        n_leaves = len(call.leaves)
        refs = [call.leaves[i] for i in entry.ref_leaves if i < n_leaves]
        refs_at = frozenset(entry.ref_leaves)
        leaves = list(call.leaves)
        for i in entry.ref_leaves:
            if i < n_leaves:
                leaves[i] = leaves[i]._value
        avals = tuple(a.inner if type(a) is AbstractRef else a for a in call.signature.avals)
        signature = call.signature._replace(avals=avals)
        paths = call.paths
        if entry.closed_refs:  # implicit Ref arguments: their values follow the leaves
            ref_paths = [call.paths[i] for i in entry.ref_leaves if i < n_leaves]
            ref_context.check_not_closed_over(refs, ref_paths, entry.closed_refs, name)
            refs += entry.closed_refs
            leaves += [r._value for r in entry.closed_refs]
            signature = signature._replace(
                avals=avals + tuple(r.aval.inner for r in entry.closed_refs),
                donated=tuple(signature.donated) + (True,) * len(entry.closed_refs),
            )
            paths = paths + [f"<closed-over Ref {k}>" for k in range(len(entry.closed_refs))]
        plain = CallArgs(signature, leaves, paths, call.static_args, call.static_kwargs)
        del leaves
        if (
            not entry.closed_refs
            and call.signature.backend == "pjrt"
            and not kwargs
            and not call.static_args
            and len(call.leaves) == len(args)
            and not any(call.signature.donated[i] for i in range(len(args)) if i not in refs_at)
        ):
            key = _quick_key(args)
            if key is not None:  # the next call with the same key skips _split_args
                env = (
                    "pjrt",
                    call.signature.x64,
                    call.signature.matmul_precision,
                    call.signature.promotion,
                )
                jitted._memo = _Memo(key, env, entry, _cache_generation)
        if call.signature.backend == "pjrt":
            out, finals = pytree.tree_unflatten(
                entry.out_tree, _ref_fast_call(entry, name)(*plain.leaves)
            )
        else:
            out, finals = execute(jitted, entry, plain)
        for r, value in zip(refs, finals, strict=True):
            r._value = value
        return out

    def quick(self, jitted: Jitted, entry: CacheEntry, args: tuple) -> Any:
        """A repeated pjrt call with Ref arguments, all arguments flat leaves of
        the same types as the memoized call: its entry without a new signature."""
        refs = [args[i] for i in entry.ref_leaves]
        ids = {id(r) for r in refs}
        if len(ids) != len(refs) or ref_context.closes_over_any(jitted.fun, ids):
            jitted._memo = None  # the full path checks (and raises)
            return jitted(*args)
        claim = _ref_claims.claim(refs, _has_host_callbacks(entry), jitted.__name__)
        try:
            leaves = [a._value if type(a) is ref_context.Ref else a for a in args]
            outs = _ref_fast_call(entry, jitted.__name__)(*leaves)
            n_user = len(outs) - len(refs)
            for r, value in zip(refs, outs[n_user:], strict=True):
                r._value = value
        finally:
            _ref_claims.release(claim)
        user_tree = entry.out_tree.children()[0]
        if user_tree == _NONE_TREE:  # a step returning nothing: no unflatten
            return None
        return pytree.tree_unflatten(user_tree, outs[:n_user])

    def runs_natively(self, entry: CacheEntry) -> bool:
        return not entry.closed_refs  # the Python path passes their values

    def out_info(self, entry: CacheEntry) -> Any:
        out_tree = entry.out_tree.children()[0]  # (outputs, [final ref values]): the outputs
        structs = [aval_to_struct(a) for a in entry.program.out_avals[: out_tree.num_leaves]]
        return pytree.tree_unflatten(out_tree, structs)


class _Bound(CallPlan):
    """An entry whose program closes over tracers of an enclosing trace: valid
    inside that trace only, so every call binds (never cached)."""

    __slots__ = ("kind",)

    def runs_natively(self, entry: CacheEntry) -> bool:
        return False

    def out_info(self, entry: CacheEntry) -> Any:
        return self.kind.out_info(entry)

    def __init__(self, kind: CallPlan) -> None:
        self.kind = kind

    def __call__(
        self, jitted: Jitted, entry: CacheEntry, call: CallArgs, args: tuple, kwargs: dict
    ) -> Any:
        return self.kind.bind(jitted, entry, call)

    def run(
        self,
        jitted: Jitted,
        entry: CacheEntry,
        call: CallArgs,
        args: tuple,
        kwargs: dict,
        execute: Execute = _execute_on_backend,
    ) -> Any:
        return self.kind.bind(jitted, entry, call)


_PLAIN_CALL = _PlainCall()
_FLOAT0_CALL = _Float0Call()
_REF_CALL = _RefCall()


def _held_refs(entry: CacheEntry, call: CallArgs) -> list[Any]:
    """The refs a call of a ``_RefCall`` entry reads and writes back: its Ref
    arguments, then the refs the function closes over."""
    n_leaves = len(call.leaves)
    return [call.leaves[i] for i in entry.ref_leaves if i < n_leaves] + [*entry.closed_refs]


class _Memo(NamedTuple):
    """A jitted function's quick signature: the last call's arguments as flat
    leaves (each argument's type and aval, ``_quick_key``), its backend and
    ``enable_x64``, and its entry. A plan keeps one where the full signature
    is the dominant cost of a repeated call (Ref arguments on pjrt)."""

    key: tuple
    # backend, enable_x64, default matmul precision, numpy promotion modes
    env: tuple[str, bool, Any, tuple[str, str]]
    entry: CacheEntry
    generation: int  # _cache_generation when made: clear_caches makes it stale

    def entry_for(self, jitted: Jitted, args: tuple, kwargs: dict) -> CacheEntry | None:
        if kwargs or tracing._builders or self.generation != _cache_generation:
            return None
        if bound_axes():  # part of the signature, which the quick key leaves out
            return None
        env = (
            jitted.backend or config.backend,
            config.enable_x64,
            matmul_precision(),
            numpy_promotion(),
        )
        if _quick_key(args) != self.key or env != self.env:
            return None
        return self.entry


# Counts clear_caches calls: a memo or private cache from before one holds
# entries the caches forgot, which must not run again without a new trace
# (each Jitted's own are not reachable from clear_caches, so they compare
# this number instead).
_cache_generation = 0


def forget_private_caches() -> None:
    """Make every jitted function's quick-signature memo and private
    signature cache stale (clear_caches)."""
    global _cache_generation
    _cache_generation += 1


# Static values of these exact types hold nothing that could reach a function
# (the modules' classes, such as np.float32, live as long as the process).
_PLAIN_STATIC_TYPES = frozenset(
    {int, float, complex, bool, str, bytes, type(None), type(Ellipsis), np.dtype}
)
_PLAIN_TYPE_MODULES = ("builtins", "numpy", "ml_dtypes", "refimpl")


def _plain_static(value: Any) -> bool:
    """Whether a static argument cannot reach back to the jitted function.

    The shared cache is keyed weakly on the function but holds its entries,
    and with them their static values, strongly: a static value reaching the
    function (an object holding ``jit(f)``, or ``jit(f)`` itself) would keep
    the key alive through its own value, never collected. Other values are
    cached on the ``Jitted`` object instead, where such a cycle is plain
    garbage."""
    kind = type(value)
    if kind in _PLAIN_STATIC_TYPES or isinstance(value, (np.generic, enum.Enum)):
        return True
    if kind is tuple or kind is frozenset:
        return all(_plain_static(v) for v in value)
    if kind is type:
        return value.__module__.partition(".")[0] in _PLAIN_TYPE_MODULES
    return False


# --- the jitted function ------------------------------------------------------------

# fun (weakly) -> ArgSpec -> the signature cache. ``jit(f)`` twice with the same
# options shares one cache, as in JAX: the second traces nothing the first has.
_shared_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_shared_caches_lock = threading.Lock()


def _shared_cache(fun: Callable[..., Any], options: tuple) -> dict[Signature, CacheEntry]:
    """The cache for ``jit(fun)`` with these options (ArgSpec, backend); a
    private one if ``fun`` cannot be weakly referenced or hashed."""
    try:
        with _shared_caches_lock:
            return _shared_caches.setdefault(fun, {}).setdefault(options, {})
    except TypeError:
        return {}


def copy_wrapped_attributes(wrapper: Any, fun: Any) -> None:
    """What ``functools.wraps`` copies (JAX's jit wraps ``fun`` so): the
    module, names, doc and annotations, and a plain function's own attributes
    (``f.some_value``) where they do not hide the wrapper's."""
    for attribute in functools.WRAPPER_ASSIGNMENTS:
        try:
            value = getattr(fun, attribute)
        except AttributeError:
            continue
        try:
            setattr(wrapper, attribute, value)
        except (AttributeError, TypeError):
            pass
    if isinstance(fun, types.FunctionType):
        for key, value in vars(fun).items():
            if not hasattr(wrapper, key):
                setattr(wrapper, key, value)
    # JAX's util.wraps where it differs from functools.wraps: a partial is
    # named after its function, a nameless callable "<unnamed function>", no
    # docstring reads ""
    name = _wraps.fun_name(fun)
    for attribute, value in (
        ("__name__", name),
        ("__qualname__", getattr(fun, "__qualname__", name)),
        ("__doc__", getattr(fun, "__doc__", None) or ""),
        ("__annotations__", getattr(fun, "__annotations__", {})),
    ):
        try:
            setattr(wrapper, attribute, value)
        except (AttributeError, TypeError):
            pass


def jit_state(jitted: Jitted) -> dict[str, Any]:
    """``__getstate__`` of a jitted function (a Jitted, or the pjrt fast
    path's in front of one): its name (JAX's ``function_name``: a partial's
    is its function's), the function, its static and donated positions and
    names, its backend and ``keep_unused``."""
    spec = jitted.spec
    return {
        "version": 1,
        "function_name": spec.fun_name,
        "fun": jitted.fun,
        "static_argnums": sorted(spec.static_nums),
        "static_argnames": sorted(spec.static_names),
        "donate_argnums": sorted(spec.donate_nums),
        "donate_argnames": sorted(spec.donate_names),
        "backend": jitted.backend,
        "keep_unused": jitted.keep_unused,
    }


class Jitted:
    """A function compiled per call signature: what ``jit(fun)`` returns.

    Calling it flattens the arguments, looks their *signature* up in a cache
    (the pytree structure, each array leaf's shape, dtype and weak type, the
    static arguments by hash and equality), traces ``fun`` on abstract values
    the first time a signature is seen, and runs the cached program on the
    backend (``ref``: the NumPy interpreter; ``pjrt``: compiled by XLA).
    Python side effects in ``fun`` therefore happen once per signature.

    ``jit(f)`` twice with the same options shares one cache, as in JAX
    (except signatures with static values that could reach ``f``, which each
    object caches itself: ``_plain_static``).

    Attributes:
        fun: The wrapped function.
        backend: ``"ref"``, ``"pjrt"`` or None (``ri.config.backend`` at call time).
        trace_count: Traces this object has made (a hit in the shared cache makes none).

    Example:
        >>> import numpy as np, refimpl as ri
        >>> f = ri.jit(lambda x, n: x * n, static_argnums=1)
        >>> f(np.ones(3, np.float32), 2)
        Array([2., 2., 2.], dtype=float32)
        >>> f.trace_count, f._cache_size()
        (1, 1)
    """

    def __init__(
        self,
        fun: Callable[..., Any],
        *,
        static_argnums: Any = None,
        static_argnames: Any = None,
        donate_argnums: Any = None,
        donate_argnames: Any = None,
        backend: str | None = None,
    ) -> None:
        if not callable(fun):
            # JAX 0.10.2's words
            raise TypeError(f"Expected a callable value, got {fun!r} (jit)")
        if backend not in (None, "ref", "pjrt"):
            raise ValueError(f"jit: backend must be None, 'ref' or 'pjrt', got {backend!r}")
        self.fun = fun
        self.__name__ = _wraps.fun_name(fun)  # also the label of listings and messages
        self.__wrapped__ = fun
        self.backend = backend
        self.spec = ArgSpec.build(
            fun, self.__name__, static_argnums, static_argnames, donate_argnums, donate_argnames
        )
        self._cache: dict[Signature, CacheEntry] = _shared_cache(fun, (self.spec, backend))
        self.trace_count = 0  # traces made by this object (a shared-cache hit makes none)
        # signatures with static values the shared cache must not hold
        # (_plain_static), and the _cache_generation they were made in
        self._own_cache: dict[Signature, CacheEntry] = {}
        self._own_generation = _cache_generation
        self._memo: _Memo | None = None  # the last call's quick signature, if its plan keeps one
        self._sharded: Any = None  # _over_mesh's jit, made on the first sharded call
        # False for the backends' own jits of single operations (eager dispatch),
        # which ri.disable_jit must not turn into calls of themselves.
        self.honours_disable_jit = True
        # a user's jax.jit (jit()): its function must be weakly referenceable,
        # as JAX's (make_jaxpr, eval_shape and the library's own jits need not)
        self.weakly_keyed = False
        # jit(keep_unused=True): the arguments the program does not read count
        # for placement too (refimpl.transforms.dce.placed_leaves)
        self.keep_unused = False
        copy_wrapped_attributes(self, fun)

    def __repr__(self) -> str:
        return _wraps.pjit_repr(self)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """As a class attribute, bind ``self`` like a plain function would.

        ``@partial(jit, static_argnums=0)`` on a method then sees the instance
        as its static first argument (JAX's jitted functions do the same).
        """
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def _cache_size(self) -> int:
        return len(self._cache) + len(self._own_cache)

    def __getstate__(self) -> dict[str, Any]:
        """What makes this jitted function (JAX's jitted functions' state
        names ``function_name``, ``fun`` and the static arguments too); the
        caches are not part of it: an unpickled copy traces afresh."""
        return jit_state(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        Jitted.__init__(
            self,
            state["fun"],
            static_argnums=tuple(state["static_argnums"]),
            static_argnames=tuple(state["static_argnames"]),
            donate_argnums=tuple(state["donate_argnums"]),
            donate_argnames=tuple(state["donate_argnames"]),
            backend=state["backend"],
        )
        self.weakly_keyed = True
        self.keep_unused = state["keep_unused"]

    def clear_cache(self) -> None:
        """Forget every traced signature (the next call of each traces again)."""
        self._cache.clear()
        self._own_cache.clear()
        self._memo = None
        self._sharded = None

    def _cache_for(self, signature: Signature) -> dict[Signature, CacheEntry]:
        """The cache that holds ``signature``'s entry: the shared one unless a
        static value could reach the function (:func:`_plain_static`)."""
        if all(_plain_static(static.value) for _, _, static in signature.statics):
            return self._cache
        if self._own_generation != _cache_generation:  # clear_caches since
            self._own_cache.clear()
            self._own_generation = _cache_generation
        return self._own_cache

    # -- signatures --

    def _split_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CallArgs:
        spec = self.spec
        static_nums = _resolve(spec.static_nums, len(args))
        donate_nums = _resolve(spec.donate_nums, len(args))
        static_args = {i: a for i, a in enumerate(args) if i in static_nums}
        static_kwargs = {k: v for k, v in kwargs.items() if k in spec.static_names}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in spec.static_names}
        try:
            path_leaves, in_tree = pytree.flatten_with_path_strings((dyn_args, dyn_kwargs))
        except RecursionError:  # the words of the pjrt fast path, which has the same limit
            raise RecursionError(
                f"maximum recursion depth exceeded while flattening the arguments of a jitted "
                f"function (jit({self.__name__})): a pytree nested too deeply"
            ) from None
        leaves = [leaf for _, leaf in path_leaves]
        paths = [self._readable_path(p, args, static_nums) for p, _ in path_leaves]
        avals = leaf_avals(f"jit({self.__name__})", leaves, paths)
        # A static passed by position and the same one passed by keyword are
        # different signatures, as in JAX.
        statics = tuple(
            [(self._arg_label(i), False, _Static(v, self._arg_label(i), self.__name__))
             for i, v in static_args.items()]
            + [(k, True, _Static(v, k, self.__name__)) for k, v in sorted(static_kwargs.items())]
        )  # fmt: skip
        donated = self._donated_leaves(args, kwargs, static_nums, donate_nums, in_tree)
        if any(type(a) is AbstractRef for a in avals):  # refs are updated in place: donated
            ref_context.check_jit_refs(leaves, paths, self.fun, self.__name__)
            is_ref = [type(a) is AbstractRef for a in avals]
            donated = tuple(d or r for d, r in zip(donated, is_ref, strict=True))
        backend = self.backend or config.backend
        # An eager operation's jit (pjrt's one-primitive dispatch, honours_disable_jit
        # False) applies its primitive to concrete values: the axes bound around it are
        # none of its business, and binding it as an equation there would dispatch it
        # to itself again.
        axes = bound_axes() if self.honours_disable_jit else ()
        signature = Signature(
            in_tree,
            avals,
            statics,
            donated,
            backend,
            config.enable_x64,
            None,
            axes,
            matmul_precision(),
            numpy_promotion(),
        )
        # Inside a staging trace, or applied to tracers of any transformation
        # (grad(jit(f))): one jit equation, handed to the top trace by bind.
        # Under a bound axis name too (vmap(axis_name=...), pmap's lock step):
        # a program using the axis with no batched operand (axis_index('i'))
        # is handed to that axis's trace by bind, not run as if none were bound.
        traced = (
            tracing.current_builder() is not None
            or any(isinstance(leaf, tracing.Tracer) for leaf in leaves)
            or bool(signature.axes)
        )
        return CallArgs(signature, leaves, paths, static_args, static_kwargs, traced)

    def _arg_label(self, position: int) -> str:
        names = self.spec.param_names
        return names[position] if position < len(names) else f"args[{position}]"

    def _readable_path(self, path: str, args: tuple[Any, ...], static_nums: frozenset[int]) -> str:
        """'[0][1]['w']' (dyn args, position 1, key w) -> "x['w']" (the parameter's name)."""
        part, _, tail = path[1:].partition("]")
        rest = tail.lstrip("[").partition("]")
        if part == "0":
            dyn_positions = [i for i in range(len(args)) if i not in static_nums]
            position = dyn_positions[int(rest[0])]
            return self._arg_label(position) + rest[2]
        return rest[0].strip("'") + rest[2]

    def _donated_leaves(self, args, kwargs, static_nums, donate_nums, in_tree) -> tuple[bool, ...]:
        if not donate_nums and not self.spec.donate_names:
            return (False,) * in_tree.num_leaves
        flags: list[bool] = []
        for i, arg in enumerate(args):
            if i not in static_nums:
                flags += [i in donate_nums] * len(pytree.tree_leaves(arg))
        for key in sorted(k for k in kwargs if k not in self.spec.static_names):
            flags += [key in self.spec.donate_names] * len(pytree.tree_leaves(kwargs[key]))
        return tuple(flags)

    # -- tracing --

    def _trace(self, call: CallArgs) -> CacheEntry:
        sig = call.signature
        out_trees: list[pytree.PyTreeDef] = []
        ref_leaves = tuple(i for i, a in enumerate(sig.avals) if type(a) is AbstractRef)
        trace_avals = [a.inner if type(a) is AbstractRef else a for a in sig.avals]

        # Refs made outside that the function reads or writes: implicit Ref
        # arguments after the explicit leaves, found as the trace touches them
        # (each gets a late input of the trace, see ref_context.late_inputs).
        closed: list[Any] = []
        written: list[bool] = []  # per Ref argument, then per closed-over ref
        n_leaves = len(sig.avals)

        def flat_fun(*tracers: Any) -> list[Any]:
            def origin(k: int) -> str:
                return f"the closed-over Ref {k} of {self.__name__}"

            with ref_context.late_inputs(origin) as scope:
                if ref_leaves:
                    out, finals = _with_refs(list(tracers))
                else:
                    dyn_args, dyn_kwargs = pytree.tree_unflatten(sig.in_tree, tracers)
                    args = _merge_static(dyn_args, call.static_args)
                    out, finals = self.fun(*args, **dyn_kwargs, **call.static_kwargs), []
                finals += scope.finish()
                closed.extend(scope.refs)
                written.extend(scope.written_flags)
            if ref_leaves or closed:
                ref_context.check_no_refs(out, "jit", self.__name__)
                return _flat_out((out, finals))
            return _flat_out(out)

        def _with_refs(tracers: list[Any]) -> tuple[Any, list[Any]]:
            refs = [_ref_argument(call.leaves[i]) for i in ref_leaves]
            ref_tracers = [tracers[i] for i in ref_leaves]
            with ref_context.jit_arguments(refs, ref_tracers, self.__name__):
                for i, ref in zip(ref_leaves, refs, strict=True):
                    tracers[i] = ref
                dyn_args, dyn_kwargs = pytree.tree_unflatten(sig.in_tree, tracers)
                args = _merge_static(dyn_args, call.static_args)
                out = self.fun(*args, **dyn_kwargs, **call.static_kwargs)
                arg_paths = {id(r): call.paths[i] for i, r in zip(ref_leaves, refs, strict=True)}
                ref_context.check_no_refs(out, "jit", self.__name__, arg_paths)
                written.extend(r._value is not t for r, t in zip(refs, ref_tracers))
                return out, [r._value for r in refs]

        def _flat_out(out: Any) -> list[Any]:
            out_leaves, out_tree = pytree.tree_flatten(out)
            if any(type(leaf).__name__ == "Ref" for leaf in out_leaves):
                ref_context.check_no_refs(out, "jit", self.__name__)
            for i, leaf in enumerate(out_leaves):
                if not tracing.is_array_like(leaf):
                    raise TypeError(
                        f"jit({self.__name__}): output leaf {i} is a {type(leaf).__name__}, "
                        "not an array; a jitted function must return arrays (or pytrees of them)"
                    )
            out_trees.append(out_tree)
            return out_leaves

        origins = [f"argument {path} of {self.__name__}" for path in call.paths]
        if not ref_leaves and any(_is_float0_aval(a) for a in sig.avals):
            entry = self._trace_float0(call, flat_fun, out_trees, origins)
            if closed:  # its outputs would be the refs' final values too
                raise NotImplementedError(_float0_with_refs(self.__name__, "arguments"))
            return entry
        float0_out: list[tuple[int, tuple[int, ...]]] = []
        if ref_leaves and any(_is_float0_aval(a) for a in sig.avals):
            raise NotImplementedError(_float0_with_refs(self.__name__, "arguments"))

        def traced_fun(*tracers: Any) -> list[Any]:
            outs = flat_fun(*tracers)
            if ref_leaves or closed:
                if any(_is_float0_value(out) for out in outs):
                    raise NotImplementedError(_float0_with_refs(self.__name__, "outputs"))
                return outs
            return _drop_float0_outputs(outs, float0_out)

        program, captured, _ = tracing.trace_to_program(
            traced_fun, trace_avals, self.__name__, origins
        )
        self.trace_count += 1
        if float0_out:
            return _float0_entry(program, out_trees[0], captured, sig, call.paths, (), float0_out)
        if not ref_leaves and not closed:
            plan = donation.plan_donation(sig.donated, sig.avals, program.out_avals, call.paths)
            return CacheEntry(program, out_trees[0], captured, plan)
        # Each ref's final value is aliased to its input (updated in place);
        # the other donated leaves match the function's own outputs. The
        # closed-over refs' values are inputs after the explicit leaves.
        all_refs = ref_leaves + tuple(range(n_leaves, n_leaves + len(closed)))
        n_user = len(program.out_avals) - len(all_refs)
        user_donated = [d and i not in ref_leaves for i, d in enumerate(sig.donated)]
        plan = donation.plan_donation(
            user_donated, trace_avals, program.out_avals[:n_user], call.paths
        )
        aliases = dict(plan.aliases)
        aliases.update({i: n_user + k for k, i in enumerate(all_refs)})
        donated = tuple(sig.donated) + (True,) * len(closed)
        plan = DonationPlan(donated, aliases, plan.unusable, plan.unusable_paths)
        return CacheEntry(
            program,
            out_trees[0],
            captured,
            plan,
            ref_leaves=all_refs,
            closed_refs=tuple(closed),
            ref_written=tuple(written),
        )

    def _trace_float0(
        self, call: CallArgs, flat_fun: Callable[..., list[Any]], out_trees: list, origins: list
    ) -> CacheEntry:
        """Trace with float0 input leaves held out of the program: the function
        sees data-less ``np.zeros(shape, float0)`` constants there."""
        sig = call.signature
        float0_in = tuple(i for i, a in enumerate(sig.avals) if _is_float0_aval(a))
        kept = [i for i in range(len(sig.avals)) if i not in float0_in]
        float0_out: list[tuple[int, tuple[int, ...]]] = []

        def fun(*tracers: Any) -> list[Any]:
            leaves: list[Any] = [np.zeros(a.shape, dtypes.float0) for a in sig.avals]
            for i, tracer in zip(kept, tracers, strict=True):
                leaves[i] = tracer
            return _drop_float0_outputs(flat_fun(*leaves), float0_out)

        program, captured, _ = tracing.trace_to_program(
            fun, [sig.avals[i] for i in kept], self.__name__, [origins[i] for i in kept]
        )
        self.trace_count += 1
        return _float0_entry(
            program, out_trees[0], captured, sig, call.paths, float0_in, float0_out
        )

    def _lookup(self, call: CallArgs) -> CacheEntry:
        cache = self._cache_for(call.signature)
        entry = cache.get(call.signature)
        if entry is not None:
            return entry
        if config.explain_cache_misses:
            why: str | None
            if self._cache or self._own_cache:
                why = explain_miss(call, [*self._cache, *self._own_cache], self.spec)
            else:
                why = explain_new_function(self.fun, self.__name__)
            if why is not None:
                logger.warning("TRACING CACHE MISS for jit(%s): %s", self.__name__, why)
        try:  # JAX 0.10.2 keys its cache on the function: an unhashable one is a TypeError
            hash(self.fun)
        except TypeError as err:
            raise TypeError(
                f"jit({self.__name__}): the jitted function must be hashable, got a "
                f"{type(self.fun).__name__}: {err}"
            ) from None
        if self.weakly_keyed:
            # JAX 0.10.2's jit keys its trace cache on the function weakly: a
            # callable without weak references (__slots__ without
            # __weakref__) is Python's TypeError when called (it can be made)
            weakref.ref(self.fun)
        if config._values["no_tracing"] and self.honours_disable_jit:  # ri.no_tracing()
            raise RuntimeError(  # JAX 0.10.2's words (less its source location)
                f"re-tracing function {self.__name__} for `jit`, but 'no_tracing' is set"
            )
        bound_refs = ref_context.bound_refs[0]
        test_events.record(test_events.JIT_TRACE)  # the one place a jit traces
        if tracing.is_tracing():
            entry = self._trace(call)
        else:  # JAX's monitoring event for a trace at the top level only
            with monitoring.timed(monitoring.JAXPR_TRACE_EVENT, self.__name__):
                entry = self._trace(call)
        # a closure over outer tracers is valid for one trace only, and so is a
        # trace holding Ref objects (a custom_vjp taking a Ref argument)
        if not entry.captured and ref_context.bound_refs[0] == bound_refs:
            cache[call.signature] = entry
        return entry

    # -- calling --

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config._values["disable_jit"] and self.honours_disable_jit:  # ri.disable_jit()
            return self.fun(*args, **kwargs)
        memo = self._memo
        if memo is not None:  # the last call's quick signature (_Memo), if its plan keeps one
            entry = memo.entry_for(self, args, kwargs)
            if entry is not None:
                return entry.plan.quick(self, entry, args)
        over_mesh = self._sharded
        if (
            over_mesh is not None  # a call before had sharded arguments
            and args
            and not kwargs
            and all(type(a) is _MeshArray for a in args)
            and tracing.current_builder() is None
            and not (self.honours_disable_jit and bound_axes())
        ):  # (each argument a MeshArray, nothing traced: the test below, sooner)
            return over_mesh(*args)
        call = self._split_args(args, kwargs)  # a deleted argument raises here
        if (
            not call.traced
            and not _SPLIT_TYPES.keys().isdisjoint(map(type, call.leaves))
            and any(map(sharded.is_split, call.leaves))
        ):
            # sharded arguments: the call runs over their mesh, as jit with
            # their shardings (sharded.ShardedJit; docs/semantics.md "Sharding")
            return self._over_mesh()(*args, **kwargs)
        check_call(call, self.__name__)
        entry = self._lookup(call)
        if (
            entry.program.const_shardings
            and not call.traced
            and sharded.const_shardings(entry.program)
        ):
            # a closed-over sharded array over Explicit axes types the program
            # over its mesh (JAX 0.10.2): the call is one over that mesh
            return self._over_mesh()(*args, **kwargs)
        return entry.plan(self, entry, call, args, kwargs)

    def _call_on_one_device(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call as the plain jit runs it, whatever the program closes
        over (the global-value route of a call over a mesh, ShardedJit's)."""
        call = self._split_args(args, kwargs)
        check_call(call, self.__name__)
        entry = self._lookup(call)
        return entry.plan(self, entry, call, args, kwargs)

    def _over_mesh(self) -> Any:
        """This function as ``jit`` with each argument's own sharding as its
        ``in_shardings`` and the outputs laid out by the sharding rule
        (made once; on pjrt behind the C++ fast path for sharded calls)."""
        over_mesh = self._sharded
        if over_mesh is None:
            jitted = sharded.ShardedJit(
                self,
                self.fun,
                None,
                None,
                tuple(self.spec.static_nums),
                tuple(self.spec.donate_nums),
                self.backend,
            )
            over_mesh = self._sharded = sharded.with_fast_path(jitted)
        return over_mesh

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """What ``self(*args, **kwargs)`` would return, as ``ShapeDtypeStruct``s
        (``jax.jit(f).eval_shape``): traced, not run."""
        return self.trace(*args, **kwargs).out_info

    def trace_abstract(self, *args: Any, **kwargs: Any) -> Traced:
        """``trace`` (which takes duck-typed abstract arrays too)."""
        return self.trace(*args, **kwargs)

    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        """Trace (or fetch from the cache) for these arguments without running.

        Abstract arrays among the dynamic arguments (``ShapedArray``s, any
        object with ``shape`` and ``dtype``) are taken as ``ShapeDtypeStruct``s,
        as JAX 0.10.2's ``trace``/``lower`` take them (a call does not)."""
        static = _resolve(self.spec.static_nums, len(args))
        args = tuple(
            a if i in static else pytree.tree_map(as_abstract, a) for i, a in enumerate(args)
        )
        kwargs = {
            k: v if k in self.spec.static_names else pytree.tree_map(as_abstract, v)
            for k, v in kwargs.items()
        }
        call = self._split_args(args, kwargs)
        entry = self._lookup(call)
        return Traced(self, entry, call)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return self.trace(*args, **kwargs).lower()


def _float0_with_refs(name: str, what: str) -> str:
    return (
        f"jit({name}): float0 {what} (tangents of integers) in a function with Ref "
        "arguments are not supported; differentiate inside the jitted function"
    )


def _drop_float0_outputs(outs: list[Any], float0_out: list) -> list[Any]:
    """The program's outputs: ``outs`` without its float0 leaves, whose
    positions and shapes are appended to ``float0_out``."""
    float0_out.clear()  # a retrace starts over
    kept = []
    for i, out in enumerate(outs):
        if _is_float0_value(out):
            float0_out.append((i, tuple(np.shape(out))))
        else:
            kept.append(out)
    return kept


def _float0_entry(
    program: Program,
    out_tree: pytree.PyTreeDef,
    captured: list[Any],
    sig: Signature,
    paths: list[str],
    float0_in: tuple[int, ...],
    float0_out: list[tuple[int, tuple[int, ...]]],
) -> CacheEntry:
    kept = [i for i in range(len(sig.avals)) if i not in float0_in]
    plan = donation.plan_donation(
        [sig.donated[i] for i in kept],
        [sig.avals[i] for i in kept],
        program.out_avals,
        [paths[i] for i in kept],
    )
    flat_tree = pytree.tree_structure([0] * len(program.out_avals))
    inner = CacheEntry(program, flat_tree, captured, plan)
    return CacheEntry(
        program, out_tree, captured, plan, float0=Float0Plan(float0_in, tuple(float0_out), inner)
    )


def _shape_error_of(leaf: Any) -> ShapeError | None:
    try:
        tracing.get_aval(leaf, "", "")
    except ShapeError as error:
        return error
    except Exception:
        pass
    return None


_NONE_TREE = pytree.tree_structure(None)


def _quick_key(args: tuple[Any, ...]) -> tuple | None:
    """(type, aval) of each argument when every one is a Ref or a registered
    array type (so each is one leaf and the tree is fixed by their number);
    None otherwise."""
    Ref = ref_context.Ref

    key = []
    for a in args:
        kind = type(a)
        if kind is Ref:
            key.append((kind, tracing.get_aval(a._value, "jit", 0)))
        elif kind in tracing._aval_handlers or kind is np.ndarray:
            key.append((kind, tracing.get_aval(a, "jit", 0)))
        else:
            return None
    return tuple(key)


def _has_host_callbacks(entry: CacheEntry) -> bool:
    """Whether the entry's program (or a sub-program) calls back to Python."""
    if entry.host_callbacks is None:
        entry.host_callbacks = any(
            eqn.primitive.name in ("pure_callback", "debug_callback")
            for eqn in entry.program.walk_eqns()
        )
    return entry.host_callbacks


class _RefClaims:
    """Which refs a jit call (either backend) is reading, running and
    writing back: one call at a time per ``Ref`` (as the pjrt launch's claim of
    a donated buffer), so updates from several threads are never lost and a
    ref's value is never donated under another call.

    A claim is a mark, not a held lock: the mutex guards only the table, and
    is never held while Python code of the user can run. A call waits for a
    ref claimed by a call whose program cannot call back to Python (it will
    finish without running user code, so the wait cannot deadlock); a ref
    claimed by a call running host callbacks (which could wait for this very
    thread) is a clear ``RuntimeError`` instead of a possible deadlock.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._owners: dict[int, tuple[int, bool]] = {}  # id(ref) -> (thread, host callbacks)

    def claim(self, refs: Sequence[Any], callbacks: bool, name: str) -> list[int]:
        keys = list({id(r): None for r in refs})
        me = threading.get_ident()
        with self._changed:
            while True:
                owners = [self._owners[k] for k in keys if k in self._owners]
                if not owners:
                    break
                for thread, running_callbacks in owners:
                    if thread == me or running_callbacks:
                        where = "this thread" if thread == me else "another thread"
                        raise RuntimeError(
                            f"jit({name}): a Ref argument is being updated by a jit call "
                            f"running host callbacks in {where}; a Ref cannot be updated "
                            "by a call while a host callback of another call updating it "
                            "runs (pass the value, or update the Ref after that call)"
                        )
                self._changed.wait()
            for k in keys:
                self._owners[k] = (me, callbacks)
        return keys

    def release(self, keys: list[int]) -> None:
        with self._changed:
            for k in keys:
                del self._owners[k]
            self._changed.notify_all()


_ref_claims = _RefClaims()


def _ref_fast_call(entry: CacheEntry, name: str) -> Callable[..., Any]:
    """The program of an entry with Ref arguments as a pjrt fast-path jit of
    its flat leaves, the refs' leaves donated (made once per entry): a repeated
    call is a C++ hit that aliases each ref's buffer to its final value."""
    fast = entry.ref_fast
    if fast is None:
        program = entry.program
        n_refs = len(entry.ref_leaves)

        # The refs' final values come first: donation pairs each donated leaf
        # with the first free output of its type, so ref k gets final value k
        # (not a user output of the same type that happens to precede it).
        def flat(*leaves: Any) -> list[Any]:
            outs = tracing.eval_program_bind(program, list(leaves))
            return outs[len(outs) - n_refs :] + outs[: len(outs) - n_refs]

        flat.__name__ = name
        jitted = _make_jitted(
            flat,
            {
                "backend": "pjrt",
                "donate_argnums": entry.ref_leaves,
                "static_argnums": (),
                "static_argnames": (),
                "donate_argnames": (),
            },
            True,  # (every leaf places the call, as before keep_unused counted)
        )

        def call(*leaves: Any) -> list[Any]:
            outs = jitted(*leaves)
            return outs[n_refs:] + outs[:n_refs]

        fast = _RefFast(call)
        entry.ref_fast = fast
    return fast.call


class _RefFast(NamedTuple):
    call: Callable[..., Any]


def _merge_static(dyn_args: tuple[Any, ...], static_args: dict[int, Any]) -> list[Any]:
    merged: list[Any] = []
    dyn = iter(dyn_args)
    for i in range(len(dyn_args) + len(static_args)):
        merged.append(static_args[i] if i in static_args else next(dyn))
    return merged


class Traced:
    """The result of ``Jitted.trace``: the program and what it returns."""

    def __init__(self, jitted: Jitted, entry: CacheEntry, call: CallArgs) -> None:
        self.jitted = jitted
        self.entry = entry
        self.call = call
        self.program = entry.program
        self.out_tree = entry.out_tree
        self.in_tree = call.signature.in_tree

    @property
    def out_info(self) -> Any:
        return self.entry.plan.out_info(self.entry)

    # JAX's Traced spellings
    @property
    def jaxpr(self) -> Program:
        """The traced program (what ``make_jaxpr`` returns)."""
        return self.program

    @property
    def fun_name(self) -> str:
        return self.jitted.__name__

    @property
    def out_avals(self) -> Any:
        """The output types as ``ShapedArray``s, in the output pytree."""
        return pytree.tree_map(
            lambda s: (
                s
                if isinstance(s.dtype, dtypes.ExtendedDtype)
                else ShapedArray(tuple(s.shape), np.dtype(s.dtype), bool(s.weak_type))
            ),
            self.out_info,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function on arguments of the traced types, weak types aside:
        JAX's Traced evaluates its jaxpr on them, so the results' weak types
        follow the arguments, as a jit call's."""
        args, kwargs, call = self.call_with_statics(args, kwargs)
        if _weak_stripped(call.signature) != _weak_stripped(self.call.signature):
            raise TypeError(
                f"Traced({self.jitted.__name__}): called with arguments of other types than "
                f"it was traced for: {explain_miss(call, [self.call.signature], self.jitted.spec)}"
            )
        return self.jitted(*args, **kwargs)

    def call_with_statics(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any], CallArgs]:
        """A call of this trace (or of its Compiled) as a call of the jitted
        function: JAX's takes the dynamic arguments alone (the static ones
        were fixed when it was traced), merged back here; refimpl also takes
        the whole call."""
        static_args, static_kwargs = self.call.static_args, self.call.static_kwargs

        def types(call: CallArgs) -> Signature:  # the backend aside too (Compiled)
            return _weak_stripped(call.signature)._replace(backend="")

        want = types(self.call)
        try:
            call: CallArgs | None = self.jitted._split_args(args, kwargs)
        except TypeError:  # a dynamic argument where a static one goes (unhashable)
            call = None
        if call is not None and (not (static_args or static_kwargs) or types(call) == want):
            return args, kwargs, call
        merged = list(args)
        for i in sorted(static_args):
            merged.insert(min(i, len(merged)), static_args[i])
        merged_kwargs = {**static_kwargs, **kwargs}
        merged_call = self.jitted._split_args(tuple(merged), merged_kwargs)
        if call is None or types(merged_call) == want:
            return tuple(merged), merged_kwargs, merged_call
        return args, kwargs, call

    @property
    def aliases(self) -> dict[int, int]:
        """Donated input leaf -> output leaf reusing its buffer (flatten order)."""
        return dict(self.entry.donation.aliases)

    @property
    def donation(self) -> DonationPlan:
        return self.entry.donation

    def lower(self, *, lowering_platforms: Any = None) -> Any:
        """The StableHLO of this trace (``Lowered``); ``lowering_platforms`` as in
        JAX: None for this process's PJRT platform, or a tuple of ``cpu``,
        ``cuda``, ``rocm``, ``tpu`` (devices of those platforms are not needed)."""
        return backends.get("pjrt").lower(self, lowering_platforms=lowering_platforms)

    def __repr__(self) -> str:
        return f"Traced({self.jitted.__name__}):\n{self.program}"


def _weak_stripped(signature: Signature) -> Signature:
    avals = tuple(a.strip_weak() if isinstance(a, ShapedArray) else a for a in signature.avals)
    return signature._replace(avals=avals)


# --- explaining cache misses -----------------------------------------------------------


# the call sites (file:line of the user's frame) where a function was traced for
# the first time with explain_cache_misses on
_new_function_sites: set[str] = set()


def explain_new_function(fun: Callable, name: str) -> str | None:
    """The first trace of a user's function, as JAX 0.10.2 explains it: "never
    seen function", and a hint when a function was first traced at the same
    call site before (a function defined anew on each call is never cached).
    None for refimpl's own functions (JAX explains only a user's)."""
    code = getattr(inspect.unwrap(fun), "__code__", None)
    if code is not None and traceback_util.is_refimpl_file(code.co_filename):
        return None
    where = f" defined at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    line = f"never seen function: {name} id={id(fun)}{where}"
    site = traceback_util.user_site()
    if site is None:
        return line
    if site in _new_function_sites:
        return (
            f"{line}; but seen another function defined on the same line; maybe the "
            "function is being re-defined repeatedly, preventing caching?"
        )
    _new_function_sites.add(site)
    return line


def explain_miss(call: CallArgs, previous: list[Signature], spec: ArgSpec) -> str:
    """One line: what changed, against the closest old entry.

    The closest entry has the same tree structure if any does, and then the
    fewest differences (the most recent one on a tie); the line names its
    first difference.
    """
    new = call.signature
    candidates = [
        (new.in_tree != old.in_tree, _differences(new, old, call.paths))
        for old in reversed(previous)
    ]
    _, closest = min(candidates, key=lambda c: (c[0], len(c[1])))
    return closest[0] if closest else "unknown difference"


def _differences(new: Signature, old: Signature, paths: list[str]) -> list[str]:
    """Every way ``new`` differs from ``old``, most important first."""
    if new.in_tree != old.in_tree:  # nothing else is comparable leaf by leaf
        detail = pytree.treedef_difference(old.in_tree, new.in_tree)
        return [f"tree structure of the arguments changed: {detail}"]
    found = []
    if new.x64 != old.x64:
        found.append(f"enable_x64 changed from {old.x64} to {new.x64}")
    if new.backend != old.backend:
        found.append(f"backend changed from {old.backend!r} to {new.backend!r}")
    if new.matmul_precision != old.matmul_precision:
        found.append(
            f"default_matmul_precision changed from {old.matmul_precision!r} "
            f"to {new.matmul_precision!r}"
        )
    for flag, new_mode, old_mode in zip(
        ("numpy_rank_promotion", "numpy_dtype_promotion"), new.promotion, old.promotion, strict=True
    ):
        if new_mode != old_mode:
            found.append(f"{flag} changed from {old_mode!r} to {new_mode!r}")
    if new.axes != old.axes:
        found.append(f"the bound named axes changed from {old.axes} to {new.axes}")
    found += _static_differences(new.statics, old.statics)
    for path, a, b in zip(paths, new.avals, old.avals, strict=True):
        for what in ("shape", "dtype", "weak_type"):
            if getattr(a, what) != getattr(b, what):
                old_v, new_v = getattr(b, what), getattr(a, what)
                found.append(f"argument {path}: {what} changed from {old_v} to {new_v}")
    if new.donated != old.donated:
        found.append("the donated arguments changed")
    return found


def _static_differences(new: tuple, old: tuple) -> list[str]:
    if [(label, kw) for label, kw, _ in new] != [(label, kw) for label, kw, _ in old]:
        return ["the static arguments changed (which ones, or positional vs keyword)"]
    return [
        f"static argument {label} changed from {old_value!r} to {value!r}"
        for (label, _, value), (_, _, old_value) in zip(new, old, strict=True)
        if value != old_value
    ]


# --- the public entry points --------------------------------------------------------------


def _check_compiler_options(where: str, options: Any) -> None:
    if options is not None and not (
        isinstance(options, dict) and all(isinstance(k, str) for k in options)
    ):
        raise TypeError(
            f"{where}: compiler_options must be a dict from option names (str) to values, "
            f"or None, got {options!r}"
        )


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    backend: str | None = None,
    inline: bool = False,
    keep_unused: bool = False,
    in_shardings: Any = None,
    out_shardings: Any = None,
    compiler_options: dict[str, Any] | None = None,
) -> Any:
    """Compile ``fun`` per call signature, like ``jax.jit``.

    Usable as ``jit(f)``, ``@jit`` or ``@jit(static_argnums=...)``. The result
    (a ``Jitted``) traces ``fun`` once per call signature -- pytree structure,
    each array leaf's shape, dtype and weak type, and the static arguments --
    and runs the traced program; see ``Jitted`` and docs/semantics.md.

    Args:
        fun: The function to compile. Its array arguments may be arrays,
            NumPy arrays or Python scalars (weakly typed), in any pytree;
            it must return a pytree of arrays. None returns a decorator.
        static_argnums: Positions of arguments that are not traced but passed
            as Python values; they must be hashable, and each new value is a
            new signature. Negative positions count from the end.
        static_argnames: Names of keyword arguments treated the same way.
        donate_argnums: Positions of array arguments whose buffers the call
            may reuse for its outputs. Every donated array is deleted after
            the call (using it raises ``RuntimeError``), whether or not an
            output reused its buffer; a 'not usable' warning names the ones
            no output could reuse.
        donate_argnames: Names of keyword arguments donated the same way.
        backend: ``"ref"``, ``"pjrt"``, or None for ``ri.config.backend``
            at call time.
        inline: Accepted for JAX's signature. A jitted function called while
            tracing becomes one call equation either way, and its results
            are the same inlined or not.
        keep_unused: Whether the arguments the traced program does not read
            count where the call runs. False (default, JAX's): they are
            dropped before placing it, so an unused committed array leaves
            the call on the default device (JAX drops them from the
            program); True: a committed one fixes the device, as a used one
            does. refimpl passes every argument to the program either way.
        in_shardings: None, one ``Sharding`` (or ``PartitionSpec`` over the
            current mesh) for every argument, or a tuple with an entry (a
            tree prefix, None: unspecified) per dynamic positional argument.
            Arguments are checked against them (rank, divisibility, a
            committed array's own sharding) and laid out so. An unspecified
            argument keeps its own sharding (a sharded array's) or is
            replicated over the mesh; so does every argument of a call with
            sharded arrays among its arguments and no ``in_shardings``.
        out_shardings: None or a tree prefix of the outputs: each output is
            returned laid out as it says (``refimpl.transforms.sharded``);
            an unspecified output of a call over a mesh is laid out as the
            sharding rule types it (docs/sharding_rules.md). Either way the
            values are the function's on the global values
            (docs/semantics.md, "Sharding").
        compiler_options: Accepted for JAX's signature (a dict of XLA option
            names to values, or None): neither backend takes XLA options,
            so it changes nothing (an unknown option is not detected).

    Returns:
        A ``Jitted`` callable with ``fun``'s signature (on ``backend="pjrt"``
        possibly a native fast-path object with the same interface).

    Raises:
        TypeError: ``fun`` is not callable; an argnum/argname is not an int
            or str; at call time, a static argument is unhashable or an
            argument is not array-like.
        ValueError: an argnum is out of range, an argument is both static and
            donated, or ``backend`` is unknown; at call time, an array is
            passed twice where one of the positions is donated.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> @ri.jit(donate_argnums=0)
        ... def step(x, y):
        ...     return x * 2 + y
        >>> x = ri.device_put(np.ones(3, np.float32))
        >>> step(x, 1.0)
        Array([3., 3., 3.], dtype=float32)
        >>> x.is_deleted()
        True
    """
    del inline  # no observable effect (see above)
    _check_compiler_options("jit", compiler_options)
    if in_shardings is not None or out_shardings is not None:
        plain = jit(
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            backend=backend,
        )

        def with_shardings(f: Callable[..., Any]) -> Any:
            statics = () if static_argnums is None else static_argnums
            donated = () if donate_argnums is None else donate_argnums
            jitted = sharded.ShardedJit(
                plain(f),
                f,
                in_shardings,
                out_shardings,
                (statics,) if isinstance(statics, int) else tuple(statics),
                (donated,) if isinstance(donated, int) else tuple(donated),
                backend,
            )
            return sharded.with_fast_path(jitted)  # pjrt: cached calls in C++

        return with_shardings if fun is None else with_shardings(fun)
    # None (not given) is kept: ArgSpec completes numbers from names and
    # names from numbers only where one of the two is None (as JAX).
    kwargs = dict(
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
        donate_argnames=donate_argnames,
        backend=backend,
    )
    if fun is None:
        return lambda f: _make_jitted(f, kwargs, keep_unused)
    return _make_jitted(fun, kwargs, keep_unused)


def _make_jitted(fun: Callable[..., Any], kwargs: dict[str, Any], keep_unused: bool) -> Any:
    if callable(fun):  # (Jitted's own check words a non-callable)
        tracing.check_transform_fun(fun, "jit")
    fast = backends.get(kwargs["backend"] or config.backend).make_fast_jitted(fun, kwargs)
    jitted = fast._jitted if fast is not None else Jitted(fun, **kwargs)
    jitted.weakly_keyed = True
    jitted.keep_unused = bool(keep_unused)
    return fast if fast is not None else jitted


# --- eager operations on sharded arrays ---------------------------------------------------

# (primitive, its params' key) -> the jit over the operands' mesh of that one
# application (Jitted._over_mesh), made on first use
_EAGER_OVER_MESH: dict[Any, Any] = {}


def eager_over_mesh(primitive: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """``primitive.bind(*args, **params)`` outside a trace with a ``MeshArray``
    operand (the reference backend registers it as that type's eager binder):
    the application as a jit over the operands' mesh, so that its result is
    laid out by the sharding rule as JAX 0.10.2 lays out an eager operation's
    (``x * 2`` keeps ``x``'s sharding, ``x.sum()`` is replicated) and, on
    pjrt, computed partitioned on the blocks where they are. Under
    ``disable_jit`` too (JAX's eager operations are jits that the flag does not
    reach: ``sin(x)`` keeps ``x``'s sharding)."""
    try:
        key: Any = (primitive, primitive_base._params_key(params))
    except primitive_base._NoKey:  # params of no stable key (a program): not kept
        key = None
    over_mesh = _EAGER_OVER_MESH.get(key) if key is not None else None
    if over_mesh is None:

        def apply(*operands: Any) -> Any:
            return primitive.bind(*operands, **params)

        apply.__name__ = primitive.name
        plain = Jitted(apply)
        plain.honours_disable_jit = False  # an eager operation, not a user's jit
        over_mesh = plain._over_mesh()
        if key is not None:
            _EAGER_OVER_MESH[key] = over_mesh
    return over_mesh(*_scalars_on_mesh(args))


# (mesh, scalar's repr, dtype, weak type) -> that scalar replicated over the mesh
_SCALARS_ON_MESH: dict[Any, Any] = {}


def _scalars_on_mesh(args: tuple[Any, ...]) -> Sequence[Any]:
    """``args`` with each promoted Python scalar (the ``2`` of ``x * 2``)
    replicated over the mesh of the first MeshArray among them, kept for
    the next operation with that scalar: the arguments are then all
    MeshArrays, whose cached calls pjrt's C++ path serves with no transfer
    (a scalar moved to the devices on every call would be one per device)."""
    if all(type(a) is not tracing.TypedScalar for a in args):
        return args
    mesh = next(
        (a.sharding.mesh for a in args if type(a) is _MeshArray and hasattr(a.sharding, "mesh")),
        None,
    )
    if mesh is None:
        return args
    out = []
    for a in args:
        if type(a) is tracing.TypedScalar:
            key = (mesh, repr(a.value.item()), a.value.dtype, a.aval.weak_type)
            held = _SCALARS_ON_MESH.get(key)
            if held is None or held.is_deleted():
                if len(_SCALARS_ON_MESH) >= 256:  # (a loop over many values: start over)
                    _SCALARS_ON_MESH.clear()
                    sharded.SCALARS_ON_MESH.clear()
                replicated = sharded.NamedSharding(mesh, sharded.PartitionSpec())
                held = _SCALARS_ON_MESH[key] = sharded.put_sharded(a, replicated)
                # typed with no mesh, as the scalar it stands for (a cond's
                # branch broadcasting it agrees with a split one, as in jit)
                sharded.SCALARS_ON_MESH[id(held)] = held
            a = held
        out.append(a)
    return out


def make_program(fun: Callable[..., Any], **jit_kwargs: Any) -> Callable[..., Program]:
    """The traced ``Program`` ``jit(fun)`` would run, like ``jax.make_jaxpr``.

    Args:
        fun: The function to trace (a ``Jitted`` is used as it is).
        **jit_kwargs: ``jit`` options (``static_argnums``, ``donate_argnums``, ...).

    Returns:
        A function taking ``fun``'s arguments (arrays, Python scalars,
        ``ShapeDtypeStruct``s) and returning the ``Program``: its inputs,
        equations and outputs, printable as a listing. Nothing is run.

    Raises:
        TypeError: Tracing ``fun`` met mismatched shapes or dtypes (any other
            error ``fun`` raises while traced propagates unchanged).
        ConcretizationTypeError: ``fun`` used a traced value in Python
            control flow.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> print(ri.make_program(lambda x: rnp.sin(x) * 2)(1.0))
        { lambda ; a:~f32[]. let
            b:~f32[] = sin a
            c:~f32[] = mul b 2.0:~f32[]
          in (c,) }
    """

    @api_boundary
    def traced(*args: Any, **kwargs: Any) -> Program:
        jitted = fun if isinstance(fun, Jitted) and not jit_kwargs else Jitted(fun, **jit_kwargs)
        return jitted.trace(*args, **kwargs).program

    return traced


@api_boundary
def eval_shape(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The output shapes, dtypes and weak types of ``fun(*args)``, without computing.

    Like ``jax.eval_shape``: ``fun`` is traced on abstract values and nothing
    is run or allocated.

    Args:
        fun: The function to evaluate abstractly.
        *args: Its positional arguments: arrays, Python scalars,
            ``ShapeDtypeStruct``s, or any object with ``.shape`` and
            ``.dtype`` attributes (read as a ``ShapeDtypeStruct``, as JAX
            does; ``.weak_type`` too if it has one), in any pytree.
        **kwargs: Its keyword arguments, the same way.

    Returns:
        A pytree matching ``fun``'s output whose leaves are
        ``ShapeDtypeStruct``s (``shape``, ``dtype``, ``weak_type``).

    Raises:
        TypeError: Operands of incompatible shapes, naming the operation and
            both shapes (any other error ``fun`` raises while traced
            propagates unchanged).

    Example:
        >>> import refimpl as ri
        >>> ri.eval_shape(lambda x: x.sum(0), ri.ShapeDtypeStruct((2, 3), "float32"))
        ShapeDtypeStruct(shape=(3,), dtype=float32)
    """
    tracing.check_transform_fun(fun, "eval_shape")
    args, kwargs = pytree.tree_map(as_abstract, (args, kwargs))
    try:
        # jit(fun)'s own cache, as JAX's eval_shape (jit(fun).trace): a later
        # jit(fun) call of these types traces nothing, nor another eval_shape;
        # so fun must be weakly referenceable, as there
        jitted = Jitted(fun)
        jitted.weakly_keyed = True
        out = jitted.trace(*args, **kwargs).out_info
    except _NoValueError:
        out = Jitted(_structs_as_values(fun)).trace(*args, **kwargs).out_info
    # arrays of an extended dtype (typed keys over abstract key data) as one struct each
    return pytree.tree_map(
        lambda x: ShapeDtypeStruct(x.shape, x.dtype) if _is_extended(x) else x,
        out,
        is_leaf=_is_extended,
    )


def _is_extended(value: Any) -> bool:
    return isinstance(getattr(value, "dtype", None), dtypes.ExtendedDtype)


def _structs_as_values(fun: Callable[..., Any]) -> Callable[..., Any]:
    """``fun`` with each ``ShapeDtypeStruct`` it returns standing for a value of
    that type: JAX's ``eval_shape`` reports it as its own shape (it has no value
    to compute with, but eval_shape computes nothing)."""

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return pytree.tree_map(_struct_stand_in, fun(*args, **kwargs))

    return wrapped


def _struct_stand_in(leaf: Any) -> Any:
    if not isinstance(leaf, ShapeDtypeStruct):
        return leaf
    aval = _shape_dtype_aval(leaf)
    zero = tracing.TypedScalar(0, aval.dtype, aval.weak_type)
    return structural.broadcast_in_dim(zero, aval.shape, ())


def as_abstract(leaf: Any) -> Any:
    """A duck-typed abstract array (an object with ``shape`` and ``dtype``,
    not array data) as a ``ShapeDtypeStruct``; anything else as it is. A struct
    of an extended dtype (typed keys) becomes that dtype's array over a struct
    of its physical data."""
    if isinstance(leaf, ShapeDtypeStruct) and isinstance(leaf.dtype, dtypes.ExtendedDtype):
        return leaf.dtype.wrap(ShapeDtypeStruct(*leaf.dtype.physical(leaf.shape)))
    if tracing.is_array_like(leaf) or isinstance(leaf, (bool, int, float, complex, type)):
        return leaf  # (a class, e.g. np.int32, is no abstract array: tracing reports it)
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        return leaf  # not array-like at all: tracing reports it, naming the argument
    return ShapeDtypeStruct(shape, dtype, getattr(leaf, "weak_type", False))
