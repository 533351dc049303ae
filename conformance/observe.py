"""Observations: what a run produced, in an implementation-neutral form.

A case's run returns a pytree (tuples, lists, dicts, namedtuples) whose
leaves are arrays of the implementation, NumPy arrays, Python values, or
``ErrorObs`` (from ``ns.capture``). ``observe`` turns it into an
``Observation``: the tree structure as text plus one normalized leaf per
path, so that two implementations' results can be compared without either
implementation's types.

Expected results (from an oracle) use the same leaves, plus the markers
``Raises``, ``Weak``, ``ExpectArray`` and ``ANY``.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from conformance.implementations import Implementation


# --- observed leaves ------------------------------------------------------------------


@dataclass(frozen=True)
class ArrayObs:
    """A concrete array: its value, and its weak type when known (None for NumPy)."""

    value: np.ndarray
    weak_type: bool | None

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    def describe(self) -> str:
        weak = "~" if self.weak_type else ""
        return f"{weak}{self.dtype.name}{list(self.shape)}"


@dataclass(frozen=True)
class AvalObs:
    """An abstract array (``eval_shape`` output): shape, dtype, weak type."""

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool | None

    def describe(self) -> str:
        weak = "~" if self.weak_type else ""
        return f"abstract {weak}{self.dtype.name}{list(self.shape)}"


@dataclass(frozen=True)
class DeletedObs:
    """An array of the implementation that has been deleted."""

    def describe(self) -> str:
        return "a deleted array"


def _builtin_kind(cls: type) -> str:
    """The first built-in exception class in ``cls``'s MRO (TypeError, ...)."""
    for base in cls.__mro__:
        if getattr(builtins, base.__name__, None) is base:
            return base.__name__
    return "Exception"


@dataclass(frozen=True)
class ErrorObs:
    """An exception raised by the run (or captured with ``ns.capture``)."""

    kind: str  # the built-in class it derives from: implementations agree on this
    type_name: str
    message: str
    mro: tuple[str, ...] = ()

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorObs:
        mro = tuple(c.__name__ for c in type(exc).__mro__)
        return cls(_builtin_kind(type(exc)), type(exc).__name__, str(exc), mro)

    def describe(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        if len(first) > 160:
            first = first[:157] + "..."
        shown = self.type_name if self.type_name == self.kind else f"{self.type_name}({self.kind})"
        return f"{shown}: {first}"


# --- expectation markers -----------------------------------------------------------------


@dataclass(frozen=True)
class Raises:
    """Expect an exception of class ``exc_type`` whose message matches ``key``.

    ``key`` is a regular expression searched case-insensitively; a dict maps
    an implementation name to its own key (``"*"`` for the others) where
    implementations word the same error differently.
    """

    exc_type: type
    key: str | dict[str, str] | None = None

    def key_for(self, impl_name: str) -> str | None:
        if isinstance(self.key, dict):
            return self.key.get(impl_name, self.key.get("*"))
        return self.key

    def describe(self) -> str:
        key = f" matching {self.key!r}" if self.key else ""
        return f"{self.exc_type.__name__}{key}"


@dataclass(frozen=True)
class ExpectArray:
    """An expected array with an explicit expected weak type (None: not checked)."""

    value: Any
    weak_type: bool | None = False


def Weak(value: Any) -> ExpectArray:  # noqa: N802 (reads like a type in oracles)
    """An expected weakly typed array."""
    return ExpectArray(value, weak_type=True)


class _Any:
    def __repr__(self) -> str:
        return "ANY"

    def describe(self) -> str:
        return "anything"


ANY = _Any()


# --- trees -------------------------------------------------------------------------------


def flatten(tree: Any, path: str = "") -> tuple[str, list[tuple[str, Any]]]:
    """(structure text, [(path, leaf)]) for tuples, lists, dicts and namedtuples."""
    leaves: list[tuple[str, Any]] = []
    structure = _flatten(tree, path, leaves)
    return structure, leaves


def _flatten(tree: Any, path: str, leaves: list[tuple[str, Any]]) -> str:
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        parts = [
            _flatten(v, f"{path}.{k}", leaves) for k, v in zip(tree._fields, tree, strict=True)
        ]
        return f"{type(tree).__name__}({', '.join(parts)})"
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(v, f"{path}[{i}]", leaves) for i, v in enumerate(tree)]
        if isinstance(tree, tuple):
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        return f"[{', '.join(parts)}]"
    if isinstance(tree, dict):
        keys = sorted(tree, key=repr)
        parts = [f"{k!r}: {_flatten(tree[k], f'{path}[{k!r}]', leaves)}" for k in keys]
        return "{" + ", ".join(parts) + "}"
    leaves.append((path or "out", tree))
    return "*"


@dataclass
class Observation:
    """A normalized result: structure text and one normalized leaf per path."""

    structure: str
    leaves: list[tuple[str, Any]] = field(default_factory=list)

    def errors(self) -> list[ErrorObs]:
        return [leaf for _, leaf in self.leaves if isinstance(leaf, ErrorObs)]

    def describe(self) -> str:
        shown = [f"{p}={_describe_leaf(v)}" for p, v in self.leaves[:6]]
        more = f", ... ({len(self.leaves)} leaves)" if len(self.leaves) > 6 else ""
        return f"{self.structure} with " + ", ".join(shown) + more


def _describe_leaf(leaf: Any) -> str:
    if hasattr(leaf, "describe"):
        return leaf.describe()
    return repr(leaf)


def observe(impl: Implementation, tree: Any) -> Observation:
    """Normalize a run's result using ``impl`` to read its arrays."""
    structure, leaves = flatten(tree)
    return Observation(structure, [(p, observe_leaf(impl, leaf)) for p, leaf in leaves])


def observe_leaf(impl: Implementation, leaf: Any) -> Any:
    if isinstance(leaf, (ErrorObs, ArrayObs, AvalObs, DeletedObs)):
        return leaf
    if impl.is_array(leaf):
        if impl.is_deleted(leaf):
            return DeletedObs()
        return ArrayObs(impl.to_numpy(leaf), impl.weak_type(leaf))
    if isinstance(leaf, (np.ndarray, np.generic)):
        return ArrayObs(np.array(leaf, copy=True), None)
    if _is_abstract_array(leaf):
        weak = getattr(leaf, "weak_type", None)
        return AvalObs(tuple(leaf.shape), np.dtype(leaf.dtype), weak)
    return leaf  # a Python value, compared with ==


def _is_abstract_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__")


def expected_observation(tree: Any) -> Observation:
    """Normalize an oracle's result (NumPy arrays are expected strong)."""
    structure, leaves = flatten(tree)
    return Observation(structure, [(p, expected_leaf(leaf)) for p, leaf in leaves])


def expected_leaf(leaf: Any) -> Any:
    if isinstance(leaf, ExpectArray):
        return ArrayObs(np.asarray(leaf.value), leaf.weak_type)
    if isinstance(leaf, (np.ndarray, np.generic)):
        return ArrayObs(np.asarray(leaf), False)
    return leaf
