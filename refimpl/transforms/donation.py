"""Donation: which input buffers a jitted call may reuse, decided at trace time.

Donating an argument (``jit(f, donate_argnums=...)``) tells the call that the
caller will never use that array again, so its buffer may hold an output.
The rules (SPEC "Donation", docs/semantics.md):

* Matching is by leaf, at trace time, from the types alone. Each donated input
  leaf, in flatten order, takes the first output leaf not yet taken whose
  shape and dtype equal its own (weak_type is ignored: it does not change the
  bytes). This is the same matching JAX does (outputs in order take the
  lowest-numbered donated input of their type), written from the inputs' side.
* A donated leaf with no match is "not usable": one ``UserWarning`` per cache
  entry lists the paths. It is deleted after the call all the same.
* After a successful call every donated input that is a device array is
  deleted, whether or not its buffer was reused. NumPy arrays and Python
  scalars in a donated position are never changed.
* The same array object in two argument positions, at least one of them
  donated, is a ``ValueError`` before anything runs.
* Donation applies only to a top-level call. A jitted function called while
  another function is being traced becomes an equation of that trace, and
  its donation is ignored (the outer caller owns those buffers).

The :class:`DonationPlan` is computed once per signature and kept in the
cache entry. Both executors use it: the reference interpreter writes each
aliased output into its donated input's NumPy buffer; the PJRT path turns
``aliases`` into ``tf.aliasing_output`` argument attributes and deletes the
donated arrays after ``Execute``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from refimpl.core import ShapedArray


@dataclass(frozen=True)
class DonationPlan:
    """Donation decisions for one call signature.

    Indices count the *dynamic* input leaves of the call (``CallArgs.leaves``,
    the program's explicit ``in_vars``) and the output leaves (the program's
    ``out_vars``), both in pytree flatten order.
    """

    donated: tuple[bool, ...]  # per input leaf: is it in a donated argument?
    aliases: dict[int, int] = field(default_factory=dict)  # input leaf -> output leaf
    unusable: tuple[int, ...] = ()  # donated input leaves that match no output
    unusable_paths: tuple[str, ...] = ()  # their readable paths, e.g. "x['w']"

    @property
    def any_donated(self) -> bool:
        return any(self.donated)

    def output_sources(self) -> dict[int, int]:
        """The inverse of ``aliases``: output leaf -> donated input leaf."""
        return {out: inp for inp, out in self.aliases.items()}


def plan_donation(
    donated: Sequence[bool],
    in_avals: Sequence[ShapedArray],
    out_avals: Sequence[ShapedArray],
    in_paths: Sequence[str],
) -> DonationPlan:
    """Match donated inputs to outputs: first unaliased output of equal shape and dtype."""
    aliases: dict[int, int] = {}
    taken: set[int] = set()
    unusable: list[int] = []
    for i, (is_donated, aval) in enumerate(zip(donated, in_avals, strict=True)):
        if not is_donated:
            continue
        match = _first_free_match(aval, out_avals, taken)
        if match is None:
            unusable.append(i)
        else:
            aliases[i] = match
            taken.add(match)
    return DonationPlan(
        donated=tuple(donated),
        aliases=aliases,
        unusable=tuple(unusable),
        unusable_paths=tuple(f"{in_paths[i]} ({in_avals[i].str_short()})" for i in unusable),
    )


def _first_free_match(
    aval: ShapedArray, out_avals: Sequence[ShapedArray], taken: set[int]
) -> int | None:
    for j, out in enumerate(out_avals):
        if j not in taken and out.shape == aval.shape and out.dtype == aval.dtype:
            return j
    return None


def warn_unusable(plan: DonationPlan, fun_name: str, stacklevel: int = 4) -> None:
    """The "not usable" warning for donated leaves that no output can reuse.

    ``stacklevel``: as ``warnings.warn``'s, counted from this function, so
    the warning points at the user's call (4: from the caller's caller's caller).
    """
    if plan.unusable_paths:
        listed = ", ".join(plan.unusable_paths)
        warnings.warn(
            f"jit({fun_name}): Some donated buffers were not usable: {listed}. No output of "
            "the same shape and dtype is left for them; they are deleted after the call all "
            "the same.",
            UserWarning,
            stacklevel=stacklevel,
        )


def is_device_array(value: Any) -> bool:
    """An array that a call can delete: owns a buffer and a deletion state.

    True for the reference ``Array`` and the PJRT array; False for NumPy
    arrays, Python scalars and tracers, which donation never touches.
    """
    return callable(getattr(value, "is_deleted", None)) and callable(getattr(value, "delete", None))


def storage_keys(value: Any) -> tuple[int, ...]:
    """Identities of the storage an array reads: its device buffers for a PJRT
    array (``_storage_keys``: a sharded array's shards and the arrays of its
    ``addressable_shards`` share them), its shards for a reference-backend
    sharded array, else the object itself."""
    keys = getattr(value, "_storage_keys", None)
    return tuple(keys()) if callable(keys) else (id(value),)


def check_no_repeated_donation(
    leaves: Sequence[Any],
    donated: Sequence[bool],
    paths: Sequence[str],
    fun_name: str,
    is_array: Callable[[Any], bool] = is_device_array,
    transform: str = "jit",
) -> None:
    """``ValueError`` if one array fills two leaves and one is donated.

    The call would both read the buffer and hand it over as an output's
    storage; JAX reports this at execution time, we report it before
    anything runs (so nothing is deleted). Two array objects over the same
    storage (a sharded array and one of its ``addressable_shards``) count as
    the same array (:func:`storage_keys`). ``transform`` names the caller
    in the message (``jit``, ``pmap``, ``device_put``).
    """
    first_seen: dict[int, int] = {}
    for i, leaf in enumerate(leaves):
        if not is_array(leaf):
            continue
        for key in storage_keys(leaf) or (id(leaf),):
            j = first_seen.setdefault(key, i)
            if j != i:
                break
        if j != i and (donated[i] or donated[j]):
            which = paths[j] if donated[j] else paths[i]
            raise ValueError(
                f"{transform}({fun_name}): the same array is passed as argument {paths[j]} and as "
                f"argument {paths[i]}, and {which} is donated. A donated buffer may not also "
                "be read by the same call; pass a copy (e.g. device_put(x, may_alias=False))."
            )
