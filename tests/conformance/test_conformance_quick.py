"""The conformance suite in the default test run.

* the quick subset of the corpus on ``ref`` (and a slice of it on ``jax``)
  must show no unexpected difference;
* the comparison logic must catch what it claims to catch: deliberately
  wrong fake implementations are reported as ``differ`` for a wrong value,
  dtype, weak type, deletion, aliasing, trace count and error class;
* the fuzzer's programs run on ``ref`` without raising and agree with JAX
  (a crash or a wrong value fails, checked by planting both), and a broken
  implementation is caught and printed as a runnable case file.
"""

from __future__ import annotations

import functools
import json
import types
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import conformance
from conformance import (
    AGREE,
    ANY,
    Raises,
    RefImplementation,
    Tolerance,
    Weak,
    fn_case,
    script_case,
)
from conformance import implementations as impls_mod
from conformance.cli import main as cli_main
from conformance.compare import compare, value_mismatch
from conformance.fuzz import (
    OP_LIST,
    FuzzProgram,
    Input,
    Step,
    check_program,
    observe_program,
    programs,
)
from conformance.known import KnownDifference
from conformance.observe import ErrorObs, Observation, expected_observation
from conformance.runner import run_cases
from tests.helpers.jax_oracle import clear_jax_jit_cache


def _summary(suite) -> str:
    return conformance.summary_text(suite, max_details=20)


# --- the corpus --------------------------------------------------------------------------


def test_quick_subset_passes_on_ref():
    suite = conformance.run(impls=["ref"], quick=True)
    assert suite.ok(), _summary(suite)
    assert suite.counts("ref")["pass"] >= 200, _summary(suite)


def test_quick_slice_agrees_with_jax():
    pytest.importorskip("jax")
    clear_jax_jit_cache()  # the jit.cache cases read JAX's C++ cache sizes
    cases = conformance.select_cases(quick=True)[::6]  # a slice: a jax compile costs ~0.2 s
    suite = run_cases(cases, ["ref", "jax"])
    assert suite.ok(), _summary(suite)
    assert suite.counts("jax")["pass"] >= 30, _summary(suite)


def test_quick_slice_agrees_on_pjrt():
    if not impls_mod.get("pjrt").is_available():
        pytest.skip(f"pjrt unavailable: {impls_mod.get('pjrt').unavailable_reason}")
    cases = conformance.select_cases(quick=True)[3::6]  # another slice than jax's
    suite = run_cases(cases, ["ref", "pjrt"])
    assert suite.ok(), _summary(suite)
    assert suite.counts("pjrt")["pass"] >= 30, _summary(suite)


@pytest.mark.slow
def test_full_corpus_on_ref_and_jax():
    pytest.importorskip("jax")
    suite = conformance.run(impls=["ref", "jax"])
    assert suite.ok(), _summary(suite)


def test_corpus_is_large_and_names_are_unique():
    from conformance.corpus import all_cases

    cases = all_cases()
    assert len(cases) >= 300
    assert len({c.name for c in cases}) == len(cases)
    groups = {c.name.split("/")[0].split(".")[0] for c in cases}
    for family in ("lax", "np", "promotion", "jit", "donation", "scan", "mask", "errors"):
        assert family in groups, family


# --- fake implementations: the comparison must catch each kind of difference -------------


class _Proxy(types.SimpleNamespace):
    """A module stand-in: ``overrides`` first, then the wrapped module; names in
    ``hidden`` are missing (AttributeError, as a module attribute would be)."""

    def __init__(self, module: Any, hidden: tuple[str, ...] = (), **overrides: Any) -> None:
        super().__init__(_module=module, _hidden=hidden, **overrides)

    def __getattr__(self, name: str) -> Any:
        if name in self._hidden:
            raise AttributeError(f"module {self._module.__name__!r} has no attribute {name!r}")
        return getattr(self._module, name)


def _fake(name: str, **methods: Any) -> str:
    """Register a RefImplementation subclass with some methods replaced."""

    cls = type(f"Fake_{name}", (RefImplementation,), {"name": name, **methods})
    impls_mod.register(name, cls)
    return name


@functools.cache
def _corpus() -> dict[str, conformance.Case]:
    from conformance.corpus import all_cases

    return {c.name: c for c in all_cases()}


def _run_one(case_name: str, impl: str) -> conformance.Result:
    cases = [_corpus()[case_name]]
    suite = run_cases(cases, ["ref", impl])
    assert suite.result(case_name, "ref").status == "pass", _summary(suite)
    return suite.result(case_name, impl)


def _with_numpy(**overrides: Any):
    def make_namespace(self):
        ns = RefImplementation.make_namespace(self)
        ns.np_ = _Proxy(ns.np_, **overrides)
        return ns

    return make_namespace


def _with_lax(hidden: tuple[str, ...] = (), **overrides: Any):
    def make_namespace(self):
        ns = RefImplementation.make_namespace(self)
        ns.lax_ = _Proxy(ns.lax_, hidden, **overrides)
        return ns

    return make_namespace


def test_wrong_value_is_a_difference():
    import refimpl.numpy as rnp

    impl = _fake("fake-value", make_namespace=_with_numpy(add=lambda x, y: rnp.add(x, y) * 1.5))
    result = _run_one("np.add/f32/(3,4)x(3,4)", impl)
    assert result.status == "differ" and "ulps" in result.detail, result.detail


def test_wrong_dtype_is_a_difference():
    import refimpl.lax as rlax

    def add(x, y):
        return rlax.convert_element_type(rlax.add(x, y), np.float16)

    impl = _fake("fake-dtype", make_namespace=_with_lax(add=add))
    result = _run_one("lax.add/f32/(3,4)x(3,4)", impl)
    assert result.status == "differ" and "dtype float16" in result.detail, result.detail


def test_wrong_weak_type_is_a_difference():
    impl = _fake("fake-weak", weak_type=lambda self, x: not x.weak_type)
    oracle_case = _run_one("lax.add/f32/(3,4)x(3,4)", impl)
    assert oracle_case.status == "differ" and "weak_type" in oracle_case.detail
    agree_case = _run_one("promotion.scalar-scalar/float+float", impl)
    assert agree_case.status == "differ" and "weak_type" in agree_case.detail


def test_wrong_deletion_and_aliasing_are_differences():
    impl = _fake(
        "fake-donation",
        is_deleted=lambda self, x: False,
        buffer_pointer=lambda self, x: id(x),
        probe_donation=lambda self: None,
    )
    result = _run_one("donation/single", impl)
    assert result.status == "differ"
    assert "x_deleted" in result.detail and "aliased" in result.detail, result.detail


def test_wrong_trace_count_is_a_difference():
    def retracing_jit(self_ns_impl):
        import refimpl as ri

        def jit(fun, **kw):
            def call(*args, **kwargs):  # a fresh function per call: every call retraces
                fresh = functools.wraps(fun)(lambda *a, **k: fun(*a, **k))
                return ri.jit(fresh, **kw)(*args, **kwargs)

            call._cache_size = lambda: 0
            return call

        return jit

    def make_namespace(self):
        ns = RefImplementation.make_namespace(self)
        ns.jit = retracing_jit(self)
        return ns

    impl = _fake("fake-retrace", make_namespace=make_namespace)
    count = _run_one("jit.cache/same-signature/count", impl)
    assert count.status == "differ" and "expected 1, got 2" in count.detail, count.detail
    agree = _run_one("jit.cache/same-signature", impl)
    assert agree.status == "differ" and "traces" in agree.detail and "cache_size" in agree.detail


def test_wrong_error_class_is_a_difference():
    def add(x, y):
        if isinstance(y, str):
            raise ValueError("add: bad operand at position 1")
        return x + y

    impl = _fake("fake-error", make_namespace=_with_lax(add=add))
    result = _run_one("errors.lax-bad-operand/add/str", impl)
    assert result.status == "differ" and "expected TypeError" in result.detail, result.detail


def test_unexpected_exception_is_an_error():
    def sin(x):
        raise AssertionError("internal error")

    impl = _fake("fake-crash", make_namespace=_with_lax(sin=sin))
    result = _run_one("lax.sin/f32/(3,4)", impl)
    assert result.status == "error" and "AssertionError" in result.detail


def test_missing_feature_is_a_skip_not_a_pass():
    impl = _fake("fake-no-scan", make_namespace=_with_lax(hidden=("scan", "sin")))
    assert _run_one("scan/len5/unroll=2", impl).status == "skip"  # requires=("lax_.scan",)
    result = _run_one("lax.sin/f32/(3,4)", impl)  # no requires: the AttributeError says it
    assert result.status == "skip" and "no attribute 'sin'" in result.detail


def test_unavailable_implementation_skips_everything():
    impl = _fake("fake-unavailable", available=lambda self: False)
    suite = run_cases(conformance.select_cases(["lax.add/f32"]), [impl])
    assert suite.counts(impl)["skip"] == len(suite.cases) > 0


def test_known_difference_is_reported_as_known_and_stale_entries_are_found():
    import refimpl.numpy as rnp

    impl = _fake("fake-known", make_namespace=_with_numpy(add=lambda x, y: rnp.add(x, y) * 2))
    cases = [_corpus()[n] for n in ("np.add/f32/(3,4)x(3,4)", "np.subtract/f32/(3,4)x(3,4)")]
    known = [
        KnownDifference("np.add/*", impl, "deliberate: doubles its result"),
        KnownDifference("np.subtract/*", impl, "fixed long ago"),
    ]
    suite = run_cases(cases, ["ref", impl], known=known)
    added = suite.result("np.add/f32/(3,4)x(3,4)", impl)
    assert added.status == "known" and added.known_reason == "deliberate: doubles its result"
    assert suite.ok()
    assert [k.pattern for k in suite.stale_known()] == ["np.subtract/*"]


def test_agree_case_where_the_reference_raises():
    case = fn_case(
        "test/lax-add-int-scalar-to-f32",
        lambda ns, x: ns.lax_.add(x, 2),
        [np.ones(3, np.float32)],
        expect=AGREE,
    )
    suite = run_cases([case], ["ref"])
    assert suite.result(case.name, "ref").status == "pass"  # its TypeError is the reference


# --- the comparison itself ---------------------------------------------------------------


def _obs(tree: Any) -> Observation:
    return expected_observation(tree)


def test_float_tolerance_counts_ulps():
    x = np.array([1.0, 1000.0, -3.0], np.float32)
    near = np.nextafter(x, np.float32(np.inf))
    assert value_mismatch(x, near, Tolerance()) is None
    far = x * np.float32(1 + 1e-4)
    assert "ulps" in value_mismatch(x, far, Tolerance())
    assert value_mismatch(x, near, Tolerance(ulps=0)) is not None


def test_nan_inf_and_subnormals():
    nan = np.array([np.nan, 1.0], np.float32)
    assert value_mismatch(nan, nan.copy(), Tolerance()) is None
    assert "NaN" in value_mismatch(nan, np.array([0.0, 1.0], np.float32), Tolerance())
    inf = np.array([np.inf], np.float32)
    assert "infinities" in value_mismatch(inf, -inf, Tolerance())
    sub = np.array([1e-40], np.float32)  # XLA flushes subnormals
    assert value_mismatch(sub, np.zeros(1, np.float32), Tolerance()) is None
    strict = Tolerance(flush_denormals=False)
    assert value_mismatch(sub, np.zeros(1, np.float32), strict) is not None


def test_integers_bool_bf16_and_complex():
    assert value_mismatch(np.array([1, 2], np.int8), np.array([1, 3], np.int8), Tolerance())
    assert value_mismatch(np.array([True]), np.array([False]), Tolerance())
    bf = np.array([1.0, 2.0], ml_dtypes.bfloat16)
    assert value_mismatch(bf, bf.copy(), Tolerance()) is None
    assert value_mismatch(bf, (bf.astype(np.float32) * 1.1).astype(bf.dtype), Tolerance())
    # complex: the ulp is taken at the magnitude, so a small part may lose digits
    c = np.array([100 + 1e-3j], np.complex64)
    assert value_mismatch(c, np.array([100 + 1.0001e-3j], np.complex64), Tolerance()) is None
    assert value_mismatch(c, np.array([100 + 2e-3j], np.complex64), Tolerance()) is not None


def test_structure_dtype_weak_type_and_shape():
    a = np.ones(3, np.float32)
    assert "structure" in " ".join(compare(_obs((a,)), _obs([a]), "x").differences)
    assert "dtype" in " ".join(compare(_obs(a), _obs(a.astype(np.float16)), "x").differences)
    assert "shape" in " ".join(compare(_obs(a), _obs(a[:2]), "x").differences)
    assert "weak_type" in " ".join(compare(_obs(Weak(a)), _obs(a), "x").differences)
    assert not compare(_obs({"a": ANY, "b": 1}), _obs({"a": a, "b": 1}), "x").differences
    assert compare(_obs({"b": 1}), _obs({"b": True}), "x").differences  # 1 is not True


def test_error_expectations():
    err = ErrorObs.from_exception(TypeError("add: argument at position 1 is a str"))
    assert err.kind == "TypeError"
    want = Observation("*", [("out", Raises(TypeError, r"position 1"))])
    assert not compare(want, Observation("*", [("out", err)]), "ref").differences
    keyed = Observation("*", [("out", Raises(TypeError, {"*": "nope", "ref": "str"}))])
    assert not compare(keyed, Observation("*", [("out", err)]), "ref").differences
    assert compare(keyed, Observation("*", [("out", err)]), "other").differences
    value_err = ErrorObs.from_exception(ValueError("position 1"))
    assert compare(want, Observation("*", [("out", value_err)]), "ref").differences


# --- fuzzing ------------------------------------------------------------------------------


def _check_fuzz_program(program: FuzzProgram, impl_name: str = "ref") -> None:
    """``impl_name`` must run ``program`` without raising and agree with JAX (an
    oracle independent of refimpl): a crash or a wrong value fails."""
    from hypothesis import reject

    impl = impls_mod.get(impl_name)
    observed = observe_program(impl, program)
    if isinstance(observed, str):  # an op this implementation lacks: not a program for it
        reject()
    crashed = observed.errors()
    assert not crashed, (
        f"{impl_name} raised on a well-typed program: {crashed[0].describe()}\n{program.source()}"
    )
    problems = check_program(program, [impls_mod.get("jax"), impl])
    assert problems == [], "\n".join(problems) + "\n" + program.source()


@settings(max_examples=20, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip
@given(programs([op for op in OP_LIST if op.name != "scan"], max_steps=4))
def test_fuzz_programs_run_on_ref_and_agree_with_jax(program: FuzzProgram):
    pytest.importorskip("jax")
    _check_fuzz_program(program)


def test_the_fuzz_program_check_fails_on_a_crash_and_on_a_wrong_value():
    pytest.importorskip("jax")
    import refimpl.numpy as rnp

    def add_raises(x, y):
        raise TypeError("add: planted crash")

    f32 = np.dtype(np.float32)
    program = FuzzProgram(
        inputs=(Input((2,), f32, (1.5, -2.0)), Input((2,), f32, (0.25, 4.0))),
        steps=(Step("add", (0, 1)),),
        outputs=(2,),
    )
    _check_fuzz_program(program)  # the real one passes
    crash = _fake("fuzz-crash", make_namespace=_with_numpy(add=add_raises))
    with pytest.raises(AssertionError, match="raised on a well-typed program"):
        _check_fuzz_program(program, crash)
    wrong = _fake("fuzz-wrong", make_namespace=_with_numpy(add=lambda x, y: rnp.subtract(x, y)))
    with pytest.raises(AssertionError, match="jax vs fuzz-wrong"):
        _check_fuzz_program(program, wrong)


def test_fuzz_catches_a_broken_implementation_and_prints_a_runnable_case(tmp_path):
    import refimpl.numpy as rnp

    broken = _fake("fake-fuzz", make_namespace=_with_numpy(add=lambda x, y: rnp.subtract(x, y)))
    from conformance.fuzz import run_fuzz

    out = tmp_path / "log.txt"
    with out.open("w") as stream:
        result = run_fuzz(
            40,
            ["ref", broken],
            seed=5,
            stream=stream,
            max_steps=2,
            op_names=("add", "multiply", "sin", "negative"),
        )
    assert not result.ok, out.read_text()
    assert "ns.np_.add" in result.case_source
    case_file = tmp_path / "found.py"
    case_file.write_text(result.case_source)
    (case,) = conformance.load_case_file(str(case_file))
    suite = run_cases([case], ["ref", broken])
    assert suite.result(case.name, "ref").status == "pass"
    assert suite.result(case.name, broken).status == "differ", _summary(suite)


# --- the command line ---------------------------------------------------------------------


def test_cli_exit_status_and_json_report(tmp_path, capsys):
    report = tmp_path / "report.json"
    status = cli_main(["--impl", "ref", "-k", "lax.add/f32", "--no-progress",
                       "--report", str(report)])  # fmt: skip
    assert status == 0, capsys.readouterr().out
    data = json.loads(report.read_text())
    assert data["ok"] and data["totals"]["ref"]["pass"] == len(data["cases"]) > 0
    import refimpl.numpy as rnp

    broken = _fake("fake-cli", make_namespace=_with_numpy(add=lambda x, y: rnp.add(x, x)))
    assert cli_main(["--impl", f"ref,{broken}", "-k", "np.add/f32", "--no-progress"]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_script_case_with_constant_expectation():
    case = script_case("test/constant", lambda ns: {"n": 3, "x": np.float32(2)},
                       expect={"n": 3, "x": np.float32(2)})  # fmt: skip
    assert run_cases([case], ["ref"]).ok()
