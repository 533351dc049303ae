"""Scaffolding the fuzzer's tests share: drawing examples from a strategy
without running a property, and a module stand-in that plants a bug."""

from __future__ import annotations

from typing import Any


def drawn_examples(strategy: Any, n: int, seed: int) -> list:
    """``n`` examples of a hypothesis strategy under a fixed seed (generation
    only: nothing is shrunk or replayed, so the same seed gives the same list)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    out: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(strategy)
    def collect(example: Any) -> None:
        out.append(example)

    collect()
    return out


class Forward:
    """A module stand-in: ``overrides`` first, then the wrapped module (how a
    test plants a wrong op in one implementation's namespace)."""

    def __init__(self, inner: Any, **overrides: Any) -> None:
        self._inner, self._overrides = inner, overrides
        self.__name__ = inner.__name__

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._inner, name)
