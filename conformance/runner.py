"""Running cases on implementations and judging the results.

Each (case, implementation) cell gets one status:

* ``pass``   -- the observation matches the expectation;
* ``differ`` -- it ran and something differs (value, dtype, weak type, shape,
  tree, deletion, aliasing, trace count, error class or message);
* ``error``  -- it raised where a result was expected;
* ``skip``   -- the implementation is unavailable or lacks a feature the case
  needs (``Unsupported``, ``NotImplementedError``, a missing module
  attribute), or the reference result the case compares with is missing;
* ``known``  -- a ``differ``/``error`` listed in ``conformance.known``.

Only ``differ`` and ``error`` are unexpected.

For an ``AGREE`` case the reference's observation *is* the expectation, even
when it is an exception (then the others must raise the same built-in
class); only an internal error (AssertionError, KeyError, ...) is reported
as the reference's ``error``, and the others are then skipped. The reference
itself is judged by an oracle independent of refimpl: live ``jax`` when it is
part of the run (its column shows any difference), otherwise JAX's result
recorded in ``conformance/jax_recorded.json`` (``conformance.recorded``);
``SuiteResult.judges`` says which, and names the cases ``ref`` alone judged.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance import implementations as impls_mod
from conformance.case import AGREE, Case, Oracle
from conformance.compare import compare, platform_rules, widen
from conformance.implementations import Implementation
from conformance.known import KNOWN_DIFFERENCES, KnownDifference, find_known
from conformance.namespace import is_unsupported_error
from conformance.observe import (
    ErrorObs,
    Observation,
    Raises,
    expected_observation,
    flatten,
    observe,
)
from conformance.recorded import Recordings
from conformance.recorded import load as load_recordings

STATUSES = ("pass", "differ", "error", "skip", "known")
# Exceptions that mean "the implementation has a bug", never "it rejected bad input"
INTERNAL_ERRORS = frozenset(
    {"AssertionError", "KeyError", "AttributeError", "NameError", "ZeroDivisionError",
     "RecursionError", "UnboundLocalError", "TimeoutError", "SystemError"}
)  # fmt: skip
UNEXPECTED = ("differ", "error")
REFERENCE = "ref"


@dataclass
class Result:
    """The judged outcome of one case on one implementation."""

    case: str
    impl: str
    status: str
    detail: str = ""
    seconds: float = 0.0
    known_reason: str = ""


@dataclass
class Outcome:
    """What one run produced, before judging."""

    observation: Observation | None = None
    skip_reason: str = ""
    raised: bool = False  # the run itself raised (the observation is that error)
    traceback: str = ""
    seconds: float = 0.0


class CaseTimeout(TimeoutError):
    """A case ran longer than the per-case time limit."""


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    usable = (
        seconds
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"case took longer than {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _expects_not_implemented(case: Case) -> bool:
    expect = case.expect
    if isinstance(expect, Raises):
        return issubclass(NotImplementedError, expect.exc_type)
    if isinstance(expect, (Oracle, type(AGREE))):
        return False
    _, leaves = flatten(expect)
    return any(
        isinstance(leaf, Raises) and issubclass(NotImplementedError, leaf.exc_type)
        for _, leaf in leaves
    )


def execute(case: Case, impl: Implementation, timeout: float | None = 120.0) -> Outcome:
    """Run ``case`` on ``impl`` and observe what happened."""
    if not impl.is_available():
        return Outcome(skip_reason=f"{impl.name} unavailable: {impl.unavailable_reason}")
    for feature in case.requires:
        missing = impl.missing_feature(feature)
        if missing:
            return Outcome(skip_reason=f"unsupported: {missing}")
    start = time.perf_counter()
    try:
        with _time_limit(timeout), impl.session(x64=case.x64), warnings.catch_warnings():
            # NumPy's overflow/invalid warnings are expected on edge values
            warnings.simplefilter("ignore")
            result = case.run(impl.namespace())
            observation = observe(impl, result)
    except Exception as exc:
        seconds = time.perf_counter() - start
        if is_unsupported_error(exc) and not (
            isinstance(exc, NotImplementedError) and _expects_not_implemented(case)
        ):
            return Outcome(
                skip_reason=f"unsupported by {impl.name}: {_brief(exc)}", seconds=seconds
            )
        error = ErrorObs.from_exception(exc)
        return Outcome(
            Observation("*", [("out", error)]),
            raised=True,
            traceback=_short_traceback(exc),
            seconds=seconds,
        )
    seconds = time.perf_counter() - start
    unsupported = [e for e in observation.errors() if e.kind == "NotImplementedError"]
    if unsupported and not _expects_not_implemented(case):
        return Outcome(
            skip_reason=f"unsupported by {impl.name}: {unsupported[0].describe()}", seconds=seconds
        )
    return Outcome(observation, seconds=seconds)


def _brief(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    return f"{type(exc).__name__}: {text[:200]}"


def _short_traceback(exc: BaseException, frames: int = 4) -> str:
    """The innermost frames, where the exception was raised."""
    innermost = traceback.extract_tb(exc.__traceback__)[-frames:]
    return "".join(traceback.format_list(innermost))


def expected_for(case: Case, reference: Outcome | None) -> tuple[Observation | None, str]:
    """The expected observation, or (None, why there is none)."""
    expect = case.expect
    if expect is AGREE:
        if reference is None:
            return None, f"no reference result ({REFERENCE} not run)"
        if reference.skip_reason:
            return None, f"no reference result ({REFERENCE}: {reference.skip_reason})"
        if reference.raised and _internal_error(reference):
            return None, f"no reference result ({REFERENCE} failed)"
        return reference.observation, ""
    if isinstance(expect, Oracle):
        return expected_observation(expect.compute()), ""
    if isinstance(expect, Raises):
        return Observation("*", [("out", expect)]), ""
    return expected_observation(expect), ""


def judge(
    case: Case,
    impl_name: str,
    outcome: Outcome,
    reference: Outcome | None,
    known: list[KnownDifference] | None = None,
    recorded: Observation | None = None,
    recorded_label: str = "JAX (recorded)",
) -> Result:
    """The status of ``outcome`` (observed on ``impl_name``) for ``case``.

    ``recorded`` is JAX's recorded observation for an ``AGREE`` case, which
    then judges the reference; a difference from it is excused by a
    ``known.py`` entry for ``jax``.
    """
    result = Result(case.name, impl_name, "pass", seconds=outcome.seconds)
    if outcome.skip_reason:
        result.status, result.detail = "skip", outcome.skip_reason
        return result
    assert outcome.observation is not None
    if case.expect is AGREE and impl_name == REFERENCE:
        # the reference defines the expectation; only an internal error is its failure
        if outcome.raised and _internal_error(outcome):
            result.status = "error"
            result.detail = _error_detail(outcome)
            return _apply_known(result, known)
        if recorded is None:
            return result
        comparison = compare(recorded, outcome.observation, impl_name, case.tolerance)
        if not comparison:
            result.status = "differ"
            if outcome.raised and not _expected_error(recorded):
                result.status = "error"
            lines = "\n".join(comparison.differences)
            result.detail = f"differs from {recorded_label}:\n{lines}"
            if result.status == "error":
                result.detail += "\n" + _error_detail(outcome)
        return _apply_known(result, known, as_impl="jax")
    try:
        expected, why_none = expected_for(case, reference)
    except Exception as exc:  # a broken oracle is a bug in the case, shown as such
        result.status, result.detail = "error", f"the case's oracle failed: {_brief(exc)}"
        return result
    if expected is None:
        result.status, result.detail = "skip", why_none
        return result
    comparison = compare(expected, outcome.observation, impl_name, case.tolerance)
    if not comparison and not outcome.raised and impl_name != REFERENCE:
        platform = impl_platform(impl_name)
        rules = platform_rules(platform, case.name)
        if rules and compare(
            expected, outcome.observation, impl_name, widen(case.tolerance, rules)
        ):
            names = ", ".join(rule.name for rule in rules)
            for rule in rules:
                PLATFORM_RULE_USES[(platform, rule.name)] += 1
            result.detail = (
                f"passes within the {platform} tolerance ({names}); with the case's own: "
                + "; ".join(comparison.differences)
            )
            return result
    if not comparison:
        if outcome.raised and not _expected_error(expected):
            result.status, result.detail = "error", _error_detail(outcome)
        else:
            result.status = "differ"
            result.detail = "\n".join(comparison.differences)
    return _apply_known(result, known)


# (platform, rule name) -> how many results passed only thanks to that
# per-platform tolerance (conformance.compare.PLATFORM_RULES); the CLI prints it.
PLATFORM_RULE_USES: Counter[tuple[str, str]] = Counter()
PLATFORM_ENV_VAR = "REFIMPL_CONFORMANCE_PLATFORM"
_platforms: dict[str, str] = {}


def impl_platform(impl_name: str) -> str:
    """The platform an implementation computes on (``cpu``, ``cuda``, ...), which
    selects its per-platform tolerances; ``$REFIMPL_CONFORMANCE_PLATFORM``
    overrides it (tests)."""
    forced = os.environ.get(PLATFORM_ENV_VAR)
    if forced:
        return forced
    if impl_name not in _platforms:
        platform = "cpu"
        try:
            if impl_name == "pjrt":
                from refimpl.backends.pjrt.executables import local_platform

                platform = local_platform()
            elif impl_name == "jax":
                import jax

                platform = {"gpu": "cuda"}.get(jax.default_backend(), jax.default_backend())
        except Exception:  # not available: judged as on the CPU
            platform = "cpu"
        _platforms[impl_name] = platform
    return _platforms[impl_name]


def _internal_error(outcome: Outcome) -> bool:
    errors = outcome.observation.errors() if outcome.observation else []
    return any(e.kind in INTERNAL_ERRORS for e in errors)


def _expected_error(expected: Observation) -> bool:
    return any(isinstance(leaf, (Raises, ErrorObs)) for _, leaf in expected.leaves)


def _error_detail(outcome: Outcome) -> str:
    errors = outcome.observation.errors() if outcome.observation else []
    head = errors[0].describe() if errors else "raised"
    return f"raised {head}\n{outcome.traceback}".rstrip()


def _apply_known(
    result: Result, known: list[KnownDifference] | None, as_impl: str | None = None
) -> Result:
    if result.status in UNEXPECTED:
        entry = find_known(result.case, as_impl or result.impl, result.status, known, result.detail)
        if entry is not None:
            result.known_reason = entry.reason
            result.detail = f"[was {result.status}] {result.detail}"
            result.status = "known"
    return result


# --- the suite -----------------------------------------------------------------------------


@dataclass
class SuiteResult:
    """Every (case, implementation) result of one run."""

    impls: list[str]
    cases: list[Case]
    results: dict[tuple[str, str], Result] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    known: list[KnownDifference] = field(default_factory=lambda: list(KNOWN_DIFFERENCES))
    seconds: float = 0.0
    # AGREE cases: what judged the reference ("jax", "recorded", or "ref-only: why")
    judges: dict[str, str] = field(default_factory=dict)
    recorded_label: str = ""
    # implementations registered but left out of a default run, with why
    left_out: dict[str, str] = field(default_factory=dict)
    # a --maxfail run that stopped before its last case
    stopped_early: bool = False

    def ref_only(self) -> dict[str, str]:
        """AGREE cases whose only judge was ``ref`` itself, with why."""
        return {c: j[len("ref-only: ") :] for c, j in self.judges.items() if j.startswith("ref-")}

    def result(self, case: str, impl: str) -> Result:
        return self.results[(case, impl)]

    def counts(self, impl: str) -> Counter:
        return Counter(r.status for (_, i), r in self.results.items() if i == impl)

    def unexpected(self) -> list[Result]:
        return [r for r in self.results.values() if r.status in UNEXPECTED]

    def ok(self) -> bool:
        return not self.unexpected()

    def stale_known(self) -> list[KnownDifference]:
        """Known entries that covered no difference in this run (perhaps fixed)."""
        used = {r.known_reason for r in self.results.values() if r.status == "known"}
        stale = []
        for entry in self.known:
            matched = [
                r for r in self.results.values()
                if (entry.impl in ("*", r.impl)) and _fnmatch(r.case, entry.pattern)
            ]  # fmt: skip
            if matched and entry.reason not in used:
                stale.append(entry)
        return stale


def _fnmatch(name: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern)


ProgressFn = Callable[[int, int, str], None]


def run_cases(
    cases: Sequence[Case],
    impl_names: Sequence[str] | None = None,
    *,
    progress: ProgressFn | None = None,
    timeout: float | None = 120.0,
    known: list[KnownDifference] | None = None,
    recordings: Recordings | None | str = "default",
    maxfail: int = 0,
) -> SuiteResult:
    """Run ``cases`` on the named implementations (default: all available).

    ``recordings`` holds JAX's recorded results for the ``AGREE`` cases
    (default: ``conformance/jax_recorded.json``; None: do not use any); they
    judge the reference where live jax does not. ``maxfail`` > 0 stops after
    that many cases with an unexpected result; the suite then holds only the
    cases run, and ``stopped_early`` says so.
    """
    started = time.perf_counter()
    names = list(impl_names) if impl_names else available_names()
    impls = [impls_mod.get(n) for n in names]
    suite = SuiteResult(names, list(cases))
    if recordings == "default":
        recordings = load_recordings()
    assert recordings is None or isinstance(recordings, Recordings)
    if recordings is not None:
        suite.recorded_label = recordings.label
    if known is not None:
        suite.known = list(known)
    for impl in impls:
        if not impl.is_available():
            suite.unavailable[impl.name] = impl.unavailable_reason
    reference_impl = impls_mod.get(REFERENCE) if REFERENCE in impls_mod.registered_names() else None
    failed_cases = 0
    for index, case in enumerate(cases):
        if progress:
            progress(index, len(cases), case.name)
        outcomes = {impl.name: execute(case, impl, timeout) for impl in impls}
        reference = outcomes.get(REFERENCE)
        if reference is None and case.expect is AGREE and reference_impl is not None:
            reference = execute(case, reference_impl, timeout)
        recorded = None
        if case.expect is AGREE:
            live = outcomes.get("jax")
            if live is not None and not live.skip_reason:
                suite.judges[case.name] = "jax"
            elif recordings is None:
                suite.judges[case.name] = "ref-only: no JAX recordings loaded"
            else:
                recorded, why = recordings.lookup(case)
                suite.judges[case.name] = "recorded" if recorded else f"ref-only: {why}"
        for impl in impls:
            suite.results[(case.name, impl.name)] = judge(
                case,
                impl.name,
                outcomes[impl.name],
                reference,
                suite.known,
                recorded=recorded,
                recorded_label=suite.recorded_label,
            )
        if maxfail > 0 and any(
            suite.results[(case.name, impl.name)].status in UNEXPECTED for impl in impls
        ):
            failed_cases += 1
            if failed_cases >= maxfail:
                suite.cases = list(cases[: index + 1])
                suite.stopped_early = True
                break
    if progress:
        progress(len(cases), len(cases), "")
    suite.seconds = time.perf_counter() - started
    return suite


def available_names() -> list[str]:
    """Every registered implementation that is available here."""
    return [n for n in impls_mod.registered_names() if impls_mod.get(n).is_available()]
