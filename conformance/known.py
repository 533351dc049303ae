"""Known, intended differences between implementations.

Every entry names the cases it covers (an ``fnmatch`` pattern on the case
name), the implementation whose result differs, and why the difference is
intended or accepted. A case that would otherwise be reported ``differ`` or
``error`` is reported ``known`` instead, with the reason beside it -- never
hidden. An entry that no longer matches any failing case is listed as
*stale* in the report, so fixed differences get their entries removed.

This list is the one place where refimpl deliberately departs from JAX
0.10.2; docs/semantics.md explains the same decisions in prose.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownDifference:
    pattern: str  # fnmatch pattern on case names
    impl: str  # the implementation that differs ("*" for any)
    reason: str
    statuses: tuple[str, ...] = ("differ", "error")

    def matches(self, case_name: str, impl: str, status: str) -> bool:
        return (
            status in self.statuses
            and (self.impl == "*" or self.impl == impl)
            and fnmatch.fnmatchcase(case_name, self.pattern)
        )


KNOWN_DIFFERENCES: list[KnownDifference] = [
    KnownDifference(
        "errors.shapes/np-add-not-broadcastable",
        "jax",
        "SPEC: shape errors are TypeError naming both shapes; jax.numpy raises ValueError "
        "('Incompatible shapes for broadcasting').",
    ),
    KnownDifference(
        "errors.shapes/reshape-bad-size",
        "jax",
        "jax 0.10.2's lax.reshape does not check the element count when tracing; the bad "
        "program fails later in MLIR verification with a ValueError. refimpl checks in "
        "abstract_eval (TypeError naming reshape and both shapes).",
    ),
    KnownDifference(
        "jit.errors/unhashable-static",
        "jax",
        "SPEC: an unhashable static argument is a TypeError naming it; jax raises ValueError "
        "('Non-hashable static arguments are not supported').",
    ),
    KnownDifference(
        "jit.cache/same-signature-numpy-and-array",
        "jax",
        "One trace in both; but jax's _cache_size() counts C++ fast-path entries, which are "
        "keyed on the argument's Python type too (numpy.ndarray vs jax.Array), so it reports "
        "2. refimpl's cache is keyed by the SPEC signature only.",
    ),
    KnownDifference(
        "jit.cache/weak-output-fed-back",
        "jax",
        "One trace in both; jax's _cache_size() has separate C++ fast-path entries for a "
        "Python float and a weakly typed jax.Array of the same signature (see above).",
    ),
    KnownDifference(
        "donation/unusable-*",
        "jax",
        "SPEC: a donated input is deleted even when no output can reuse its buffer "
        "(jax 0.10.2 on CPU warns 'not usable' and leaves such an input alive).",
    ),
]


def find_known(
    case_name: str, impl: str, status: str, entries: list[KnownDifference] | None = None
) -> KnownDifference | None:
    for entry in KNOWN_DIFFERENCES if entries is None else entries:
        if entry.matches(case_name, impl, status):
            return entry
    return None
