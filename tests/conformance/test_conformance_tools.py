"""The conformance tools themselves: independent oracles, the command line, reports.

* a bug shared by ``ref`` and ``pjrt`` (both are refimpl) must fail a run
  without jax: the promotion cases are judged by ``conformance.lattice`` and
  the other ``AGREE`` cases by JAX's recorded results;
* the lattice equals ``jax.numpy.result_type`` on every canonical pair;
* recordings round-trip every kind of leaf, and a stale one is not used;
* an implementation asked for that cannot run is an error (exit 2, one
  line), one left out of a default run is named with why;
* the summary hides all-pass groups, ends with totals, differences and the
  verdict; ``--junit`` writes JUnit XML.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from dataclasses import replace
from xml.etree import ElementTree as ET

import ml_dtypes
import numpy as np
import pytest

import conformance
from conformance import RefImplementation, fn_case, lattice, recorded
from conformance import implementations as impls_mod
from conformance.case import AGREE
from conformance.cli import main as cli_main
from conformance.observe import ArrayObs, AvalObs, DeletedObs, ErrorObs, Observation
from conformance.runner import run_cases
from tests.helpers.fuzzing import Forward, drawn_examples


def _impls() -> str:
    """ref, plus pjrt when it can run here (the shared bug must fail either way)."""
    return "ref,pjrt" if impls_mod.get("pjrt").is_available() else "ref"


@pytest.fixture
def no_jax(monkeypatch):
    """`import jax` fails: the run must not need jax to see a shared bug."""
    monkeypatch.setitem(sys.modules, "jax", None)


def test_planted_promotion_bug_fails_a_run_without_jax(monkeypatch, no_jax, capsys):
    from refimpl import dtypes
    from refimpl.numpy import _promote

    true_result_type = dtypes._result_type

    def wrong(operands):  # int8 + uint8 -> int8 (JAX: int16)
        dtype, weak = true_result_type(operands)
        pairs = [dtypes._operand(op) for op in operands]
        if {d.name for d, _ in pairs} == {"int8", "uint8"}:
            return np.dtype(np.int8), weak
        return dtype, weak

    args = ["--impl", _impls(), "-k", "promotion.array-array/u8+i8", "--no-progress"]
    assert cli_main(args) == 0, capsys.readouterr().out  # the case passes without the bug

    def forget_promotions():  # the memo tables that hold promotion results
        dtypes._result_type_of_pairs.cache_clear()
        _promote._joined.clear()

    monkeypatch.setattr(dtypes, "_result_type", wrong)
    forget_promotions()
    try:
        assert cli_main(args) == 1
    finally:
        monkeypatch.undo()
        forget_promotions()
    out = capsys.readouterr().out
    assert "[differ] promotion.array-array/u8+i8 on ref" in out, out
    assert "dtype int8 != expected int16" in out, out


def test_planted_shared_bug_in_an_agree_case_fails_against_the_recording(monkeypatch, no_jax):
    import refimpl.lax as rlax

    case = "lax.sign/f32/special-values"
    if recorded.load().lookup(_corpus_case(case))[0] is None:
        pytest.skip(f"no current JAX recording of {case}")
    true_sign = rlax.sign
    monkeypatch.setattr(rlax, "sign", lambda x: true_sign(x) * 2)
    suite = conformance.run(impls=_impls().split(","), patterns=[case])
    result = suite.result(case, "ref")
    assert result.status == "differ", conformance.summary_text(suite)
    assert "differs from JAX 0.10.2 (recorded)" in result.detail
    assert suite.judges[case] == "recorded"


def _corpus_case(name: str) -> conformance.Case:
    (case,) = conformance.select_cases([name])
    return case


def test_agree_case_without_recording_is_reported_as_judged_by_ref_alone():
    case = fn_case("test/agree-unrecorded", lambda ns, x: x + 1, [np.ones(3, np.float32)])
    suite = run_cases([case], ["ref"])
    assert suite.result(case.name, "ref").status == "pass"
    assert suite.ref_only() == {case.name: "no recorded JAX result"}
    text = conformance.summary_text(suite)
    assert "0 by JAX" not in text and "1 by ref alone" in text and case.name in text


def test_recording_judges_ref_and_a_stale_one_is_not_used():
    case = fn_case("test/agree-recorded", lambda ns, x: x + 1, [np.ones(3, np.float32)])
    wrong = Observation("*", [("out", ArrayObs(np.full(3, 3.0, np.float32), False))])
    entry = {
        "fingerprint": recorded.case_fingerprint(case),
        "structure": wrong.structure,
        "leaves": [[p, recorded.encode_leaf(v)] for p, v in wrong.leaves],
    }
    recs = recorded.Recordings("9.9", {case.name: entry})
    suite = run_cases([case], ["ref"], recordings=recs)
    assert suite.result(case.name, "ref").status == "differ"
    assert "expected 3.0, got 2.0" in suite.result(case.name, "ref").detail
    stale = recorded.Recordings("9.9", {case.name: {**entry, "fingerprint": "0"}})
    suite = run_cases([case], ["ref"], recordings=stale)
    assert suite.result(case.name, "ref").status == "pass"
    assert "stale" in suite.ref_only()[case.name]


def test_recorded_leaves_round_trip():
    float0 = np.zeros((2,), recorded.FLOAT0)
    leaves = [
        ArrayObs(np.array(1.5, np.float32), True),
        ArrayObs(np.arange(6, dtype=np.int8).reshape(2, 3), False),
        ArrayObs(np.array([1.0, np.nan, -np.inf], ml_dtypes.bfloat16), False),
        ArrayObs(np.array([1 + 2j], np.complex64), None),
        ArrayObs(float0, False),
        AvalObs((2, 0), np.dtype(np.float16), True),
        DeletedObs(),
        ErrorObs("TypeError", "MyError", "bad\nthing", ("MyError", "TypeError")),
        3,
        2.5,
        float("nan"),
        True,
        "text",
        None,
    ]
    for leaf in leaves:
        back = recorded.decode_leaf(recorded.encode_leaf(leaf))
        if isinstance(leaf, ArrayObs):
            assert back.value.dtype == leaf.value.dtype and back.value.shape == leaf.value.shape
            assert back.weak_type == leaf.weak_type
            if leaf.value.dtype != recorded.FLOAT0:
                assert back.value.tobytes() == leaf.value.tobytes()
        elif isinstance(leaf, float) and np.isnan(leaf):
            assert np.isnan(back)
        else:
            assert back == leaf and type(back) is type(leaf)


def test_the_recording_file_names_jax_version_and_covers_agree_cases():
    recs = recorded.load()
    assert recs.jax_version
    agree = [c for c in conformance.select_cases() if c.expect is AGREE]
    recorded_cases = [c for c in agree if c.name in recs.entries]
    current = [c for c in recorded_cases if recs.lookup(c)[0] is not None]
    # Cases added since the last recording are judged by ref alone (named in the
    # summary). A recorded case's fingerprint must be stable run to run (no object
    # addresses in a case's source): all but the few edited since are current.
    assert len(recorded_cases) >= 300
    assert len(current) >= 0.9 * len(recorded_cases), (len(current), len(recorded_cases))


def test_lattice_matches_jax_result_type():
    jax = pytest.importorskip("jax")
    from jax._src import dtypes as jax_dtypes
    from jax._src.lax import lax as jax_lax

    checked = 0
    for x64 in (False, True):
        with jax.enable_x64(x64) if hasattr(jax, "enable_x64") else _x64(jax, x64):
            defaults = ("i64", "f64", "c128") if x64 else ("i32", "f32", "c64")
            names = [n for n in lattice._NAMES if x64 or n in ("c64",) or "64" not in n]
            names = [n for n in names if x64 or n != "c128"]
            for a, b in itertools.product(names, repeat=2):
                for wa, wb in itertools.product((False, True), repeat=2):
                    if (wa and a not in defaults) or (wb and b not in defaults):
                        continue
                    da, db = lattice._NAMES[a], lattice._NAMES[b]
                    xa = jax_lax._convert_element_type(np.zeros((), da), da, weak_type=wa)
                    xb = jax_lax._convert_element_type(np.zeros((), db), db, weak_type=wb)
                    want = jax_dtypes.result_type(xa, xb, return_weak_type_flag=True)
                    got = lattice.result_type((da, wa), (db, wb), x64=x64)
                    assert (np.dtype(want[0]), want[1]) == got, (x64, a, wa, b, wb)
                    checked += 1
    assert checked > 400


class _x64:  # noqa: N801 (a context manager named like the jax one)
    def __init__(self, jax, on):
        self.jax, self.on = jax, on

    def __enter__(self):
        self.saved = bool(self.jax.config.jax_enable_x64)
        self.jax.config.update("jax_enable_x64", self.on)

    def __exit__(self, *exc):
        self.jax.config.update("jax_enable_x64", self.saved)


# --- the command line -------------------------------------------------------------------


class _Broken(RefImplementation):
    name = "broken-native"

    def available(self) -> bool:
        self.unavailable_reason = "refimpl._pjrt is not built/installed\n(second line)"
        return False


@pytest.fixture
def broken_impl():
    impls_mod.register("broken-native", _Broken)
    yield "broken-native"
    impls_mod._REGISTRY.pop("broken-native", None)
    impls_mod._INSTANCES.pop("broken-native", None)


def test_an_implementation_asked_for_that_cannot_run_is_an_error(broken_impl, capsys):
    status = cli_main(["--impl", f"ref,{broken_impl}", "-k", "lax.add/f32", "--no-progress"])
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "conformance: error: implementation 'broken-native' cannot run here: "
        "refimpl._pjrt is not built/installed (second line)"
    ]


def test_left_out_implementation_is_named_and_require_native_is_honoured(monkeypatch, capsys):
    class BrokenPjrt(_Broken):
        name = "pjrt"

    # only ref, jax and a pjrt that cannot load are registered (other tests register fakes)
    registry = {"ref": impls_mod._REGISTRY["ref"], "pjrt": BrokenPjrt}
    monkeypatch.setattr(impls_mod, "_REGISTRY", registry)
    monkeypatch.setattr(impls_mod, "_INSTANCES", {"ref": impls_mod.get("ref")})
    monkeypatch.delenv("REFIMPL_REQUIRE_NATIVE", raising=False)
    assert cli_main(["-k", "lax.add/f32/(3,4)x", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("conformance: 3 cases x 1 implementations (ref)"), out
    assert "pjrt: not run (refimpl._pjrt is not built/installed (second line))" in out, out
    monkeypatch.setenv("REFIMPL_REQUIRE_NATIVE", "1")
    assert cli_main(["-k", "lax.add/f32/(3,4)x", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'pjrt' cannot run here (REFIMPL_REQUIRE_NATIVE=1)" in err


def test_summary_hides_all_pass_groups_and_ends_with_the_differences(capsys):
    import refimpl.numpy as rnp

    class Wrong(RefImplementation):
        name = "wrong-add"

        def make_namespace(self):
            ns = super().make_namespace()
            ns.np_ = type("np_", (), {"__getattr__": lambda s, n: getattr(rnp, n)})()
            ns.np_.add = lambda x, y: rnp.add(x, y) + 1
            return ns

    impls_mod.register("wrong-add", Wrong)
    try:
        args = ["--impl", "ref,wrong-add", "-k", "np.add/f32/(3,4)x", "-k", "lax.sub/f32",
                "--no-progress"]  # fmt: skip
        assert cli_main(args) == 1
        out = capsys.readouterr().out
        assert cli_main([*args, "-v"]) == 1
        verbose = capsys.readouterr().out
    finally:
        impls_mod._REGISTRY.pop("wrong-add", None)
        impls_mod._INSTANCES.pop("wrong-add", None)
    lines = out.strip().splitlines()
    assert lines[-1].startswith("FAILED: ")
    assert any(line.startswith("  [differ] np.add/f32/(3,4)x(3,4) on wrong-add") for line in lines)
    assert not any(line.startswith("lax.sub ") for line in lines), out
    assert any(line.startswith("np.add ") for line in lines), out
    assert "not shown; -v" in out
    assert any(line.startswith("lax.sub ") for line in verbose.splitlines()), verbose


def test_maxfail_stops_the_run_after_that_many_failing_cases(capsys):
    import refimpl.numpy as rnp

    class Wrong(RefImplementation):
        name = "wrong-add"

        def make_namespace(self):
            ns = super().make_namespace()
            ns.np_ = type("np_", (), {"__getattr__": lambda s, n: getattr(rnp, n)})()
            ns.np_.add = lambda x, y: rnp.add(x, y) + 1
            return ns

    impls_mod.register("wrong-add", Wrong)
    try:
        # lax.sub first: passing cases before the failing ones do not count
        args = ["--impl", "ref,wrong-add", "-k", "lax.sub/f32/(3,4)x", "-k", "np.add/f32",
                "--no-progress"]  # fmt: skip
        assert cli_main(args) == 1
        full = capsys.readouterr().out
        assert cli_main([*args, "--maxfail", "2"]) == 1
        stopped = capsys.readouterr().out
        assert cli_main([*args, "--maxfail", "-1"]) == 2
        assert "--maxfail must be >= 0" in capsys.readouterr().err
    finally:
        impls_mod._REGISTRY.pop("wrong-add", None)
        impls_mod._INSTANCES.pop("wrong-add", None)
    assert full.count("[differ] np.add/") > 2, full
    assert stopped.count("[differ] np.add/") == 2, stopped
    assert "stopped after 2 failing case(s) (--maxfail)" in stopped
    assert "stopped after" not in full


def test_junit_report(tmp_path, capsys):
    path = tmp_path / "report.xml"
    assert cli_main(["--impl", "ref", "-k", "lax.add/f32/(3,4)x", "--no-progress",
                     "--junit", str(path)]) == 0  # fmt: skip
    root = ET.parse(path).getroot()
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "conformance.ref" and suite.get("failures") == "0"
    cases = suite.findall("testcase")
    assert len(cases) == int(suite.get("tests")) > 0
    assert cases[0].get("classname") == "conformance.ref.lax.add"


# --- XLA's log lines ----------------------------------------------------------------------


def _run_python(code: str, env_changes: dict[str, str | None]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )


def test_plugin_logs_are_silenced_by_default_respecting_the_users_level():
    from refimpl.backends.pjrt import runtime

    if not runtime.plugin_available():
        pytest.skip("no PJRT plugin here")
    code = (
        "import os; from refimpl.backends.pjrt import runtime; runtime.get_plugin(); "
        "print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))"
    )
    quiet = {"TF_CPP_MIN_LOG_LEVEL": None, "REFIMPL_PJRT_LOG": None}
    assert _run_python(code, quiet).stdout.strip() == "3"
    assert _run_python(code, {**quiet, "TF_CPP_MIN_LOG_LEVEL": "1"}).stdout.strip() == "1"
    assert _run_python(code, {**quiet, "REFIMPL_PJRT_LOG": "1"}).stdout.strip() == "None"


def test_main_job_output_has_no_xla_log_lines():
    pytest.importorskip("jax")  # jaxlib logs the lines the plugin would
    code = (
        "import sys; from conformance.cli import main; "
        "sys.exit(main(['-k', 'donation/same-array-twice', '-k', 'device_put/deleted-input', "
        "'--no-progress'] + sys.argv[1:]))"
    )
    quiet = {"TF_CPP_MIN_LOG_LEVEL": None, "REFIMPL_PJRT_LOG": None}
    done = _run_python(code, quiet)
    assert done.returncode == 0, done.stdout + done.stderr
    log_line = re.compile(r"^[IWEF]\d{4} ", re.MULTILINE)
    assert not log_line.search(done.stdout + done.stderr), done.stderr
    assert done.stdout.strip().splitlines()[-1] == "OK"


# --- the corpus under pytest ------------------------------------------------------------------


def test_corpus_collected_by_pytest(tmp_path):
    junit = tmp_path / "junit.xml"
    # CONFORMANCE_IMPL, not --conformance-impl: the option needs the pytest11 entry
    # point, which only an install made with this pyproject.toml has
    command = [sys.executable, "-m", "pytest",
               "-p", "no:cacheprovider", "--pyargs", "conformance.test_corpus", "-q",
               "--rootdir", str(tmp_path), "-k", "lax.add and f32 and not special",
               "-x", "--junitxml", str(junit)]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "CONFORMANCE_IMPL": "ref"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    cases = ET.parse(junit).getroot().findall(".//testcase")
    names = [c.get("name") for c in cases]
    assert "test_case[ref:lax.add/f32/(3,4)x(3,4)]" in names and len(names) >= 5, names
    bad = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "CONFORMANCE_IMPL": "ref,nope"},
    )  # fmt: skip
    assert bad.returncode != 0 and "unknown implementation(s): nope" in bad.stdout + bad.stderr


def test_planted_reverse_cumulative_mask_bug_fails_the_mask_cases(monkeypatch):
    from refimpl.primitives import reductions

    def forgets_the_padding(ctx, operand, *, axis, reverse):  # the fill for reverse=True dropped
        return reductions.cumsum_p.bind(operand, axis=axis, reverse=reverse), ctx.logical_in[0]

    suite = conformance.run(impls=["ref"], patterns=["mask/cumsum-reverse*"])
    assert suite.ok() and suite.counts("ref")["pass"] >= 3, conformance.summary_text(suite)
    monkeypatch.setattr(reductions.cumsum_p, "mask_rule", forgets_the_padding)
    suite = conformance.run(impls=["ref"], patterns=["mask/cumsum-reverse*"])
    failed = {r.case for r in suite.unexpected()}
    assert "mask/cumsum-reverse/n=4" in failed and "mask/cumsum-reverse-axis1/n=3" in failed


def test_missing_native_extension_is_an_error_naming_it():
    code = (
        "import sys; sys.modules['refimpl._pjrt'] = None\n"  # as if it were not built
        "from conformance.cli import main\n"
        "sys.exit(main(['--impl', 'ref,pjrt', '-k', 'lax.add/f32/(3,4)x', '--no-progress']))"
    )
    done = _run_python(code, {})
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("conformance: error: implementation 'pjrt' cannot run here: ")
    assert "refimpl._pjrt" in line and "not built" in line


# --- the fuzzer's program kinds (random, gather/scatter, pmap, Ref, checkpoint) ------------


@pytest.mark.parametrize("kind", ["random", "pmap", "ref", "ref_arg", "checkpoint", "callback",
                                  "linear_solve", "random_more", "sharding_plain"])  # fmt: skip
def test_fuzz_kind_smoke_on_ref_and_pjrt(kind, tmp_path):
    """Programs of one kind: ref and pjrt agree on the first three drawn (of 20) that
    are of that kind and that both can run (not rejected), and one printed as a case
    file replays on its own (``--case-file``) and passes. (Not the first examples of a
    seed: which kinds those are depends on the order of the draws.)"""
    from hypothesis.errors import UnsatisfiedAssumption

    from conformance import fuzz

    impls = [impls_mod.get("ref")] + ([impls_mod.get("pjrt")] if "pjrt" in _impls() else [])
    if len(impls) < 2:
        pytest.skip("pjrt cannot run here")
    strategy = fuzz.programs(fuzz.OP_LIST, max_steps=4, kinds=[kind], kind_odds=1)
    drawn = drawn_examples(strategy, 20, 7)
    found = []
    for program in [p for p in drawn if fuzz.kind_of(p) == kind]:
        try:
            problems = fuzz.check_program(program, impls)
        except UnsatisfiedAssumption:  # an implementation cannot run it
            continue
        assert problems == [], program.source()
        found.append(program)
        if len(found) == 3:
            break
    assert len(found) == 3, [fuzz.kind_of(p) for p in drawn]
    case_file = tmp_path / "found.py"
    case_file.write_text(found[-1].case_source(f"fuzz/{kind}"))
    (case,) = conformance.load_case_file(str(case_file))
    suite = run_cases([case], [i.name for i in impls])
    assert [suite.result(case.name, i.name).status for i in impls] == ["pass"] * len(impls)


# --- the sharding_plain kind: sharded arguments through a plain jit and eagerly ---------------


def _sharding_plain_programs() -> dict:
    """Hand-built ``sharding_plain`` programs (issue 33): ``f32[8@x,4] * 0.5`` (a Python
    scalar as it is) under a plain jit and eagerly, on Explicit and Auto axes; and
    ``f32[4,4@x] @ f32[4@x,4]``, which contracts a split axis: on Explicit axes JAX 0.10.2's
    ShardingTypeError (the program's result is then "ShardingTypeError"), on Auto axes a
    value. Used here and, against JAX, in a subprocess."""
    from conformance import fuzz

    f32 = np.dtype(np.float32)
    x = fuzz.Input((8, 4), f32, tuple(np.arange(32) / 4 - 4))
    half = fuzz.Input(None, f32, (0.5,))
    scale = (fuzz.Step("sin", (0,)), fuzz.Step("multiply", (2, 1)))
    a = fuzz.Input((4, 4), f32, tuple(np.arange(16) / 4))
    matmul = (fuzz.Step("matmul", (0, 1)),)
    programs = {}
    for axis_type in ("Explicit", "Auto"):
        for jit in (True, False):
            programs[f"scale/{axis_type}/{jit}"] = fuzz.FuzzProgram(
                (x, half), scale, (3,), jit=False,
                sharded_args=((4,), ("x",), axis_type, (("x",), None), jit))  # fmt: skip
        programs[f"matmul/{axis_type}"] = fuzz.FuzzProgram(
            (a, a), matmul, (2,), jit=False,
            sharded_args=((4,), ("x",), axis_type, ((None, "x"), ("x",)), True))  # fmt: skip
    return programs


def _run_program(program, impl_name: str):
    impl = impls_mod.get(impl_name)
    with impl.session():
        return program.function()(impl.namespace(), *(i.value() for i in program.inputs))


@pytest.mark.parametrize("impl_name", ["ref", "pjrt"])
def test_sharding_plain_programs_return_each_outputs_spec_and_layout(impl_name):
    """A sharding_plain program's result is its outputs, then per output its spec (trailing
    Nones dropped) and its shards' (device, index bounds); under jit and eagerly, on both
    axis types; a program the rules refuse returns "ShardingTypeError" (Explicit), the
    same program on Auto axes a value."""
    if impl_name == "pjrt" and "pjrt" not in _impls():
        pytest.skip("pjrt cannot run here")
    programs = _sharding_plain_programs()
    rows = [[d, 2 * d, 2 * d + 2, 0, 4] for d in range(4)]
    for axis_type in ("Explicit", "Auto"):
        for jit in (True, False):
            value, (spec, layout) = _run_program(programs[f"scale/{axis_type}/{jit}"], impl_name)
            x = np.arange(32, dtype=np.float32).reshape(8, 4) / 4 - 4
            np.testing.assert_allclose(np.asarray(value), np.sin(x) * 0.5, rtol=1e-6)
            assert spec == "P('x',)"
            np.testing.assert_array_equal(layout, rows)
    assert _run_program(programs["matmul/Explicit"], impl_name) == "ShardingTypeError"
    value, (spec, layout) = _run_program(programs["matmul/Auto"], impl_name)
    a = np.arange(16, dtype=np.float32).reshape(4, 4) / 4
    np.testing.assert_allclose(np.asarray(value), a @ a, rtol=1e-6)


def test_sharding_plain_programs_compare_the_layout_and_run_eagerly(monkeypatch):
    """An implementation whose plain jit lays its outputs out otherwise (here replicated)
    differs in a jitted sharding_plain program, by the spec and shards, and not in the
    same program run eagerly (which calls no jit)."""
    import refimpl as ri
    from conformance import fuzz
    from refimpl import sharding as rs

    def replicating_jit(fun, **kwargs):
        inner = ri.jit(fun, **kwargs)

        def call(*args):
            return tuple(ri.device_put(o, rs.NamedSharding(o.sharding.mesh, rs.P()))
                         for o in inner(*args))  # fmt: skip

        return call

    class Replicating(RefImplementation):
        name = "fake-replicating"

        def make_namespace(self):
            ns = RefImplementation.make_namespace(self)
            ns.extras["api"] = Forward(ri, jit=replicating_jit)
            return ns

    monkeypatch.setitem(impls_mod._REGISTRY, "fake-replicating", Replicating)
    impls = [impls_mod.get("ref"), impls_mod.get("fake-replicating")]
    programs = _sharding_plain_programs()
    for axis_type in ("Explicit", "Auto"):
        (problem,) = fuzz.check_program(programs[f"scale/{axis_type}/True"], impls)
        assert "expected \"P('x',)\", got 'P()'" in problem, problem
        assert fuzz.check_program(programs[f"scale/{axis_type}/False"], impls) == []


_SHARDING_PLAIN_VS_JAX = """
from conformance.implementations import prepare_jax_flags
prepare_jax_flags()
from conformance import fuzz, implementations as impls_mod
from tests.conformance.test_conformance_tools import _run_program, _sharding_plain_programs
impls = [impls_mod.get(n) for n in ("ref", "pjrt", "jax") if impls_mod.get(n).is_available()]
assert [i.name for i in impls][-1] == "jax", impls
for name, program in _sharding_plain_programs().items():
    print(name, fuzz.check_program(program, impls))
print("jax matmul/Explicit:", _run_program(_sharding_plain_programs()["matmul/Explicit"], "jax"))
"""


def test_sharding_plain_programs_agree_with_jax_on_four_devices():
    """The hand-built programs on ref (and pjrt) against JAX 0.10.2 on 4 CPU devices (a
    subprocess: this process's jax may have one device): values, specs, shards, and
    JAX's ShardingTypeError for the Explicit contraction of a split axis."""
    pytest.importorskip("jax")
    done = _run_python(_SHARDING_PLAIN_VS_JAX, {"XLA_FLAGS": None, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "jax matmul/Explicit: ShardingTypeError", lines
    assert [line.split(" ", 1)[1] for line in lines[:-1]] == ["[]"] * 6, lines


def test_fuzz_callback_programs_count_the_host_calls():
    """A callback program returns its outputs and the number of host calls: a fori_loop of
    3 callback steps under vmap over 2 members is 6 calls in JAX, and the same on ref."""
    jax = pytest.importorskip("jax")
    from conformance import fuzz

    f32 = np.dtype(np.float32)
    step = fuzz.Step("callback_fori", (0,), (("fn", "halve"), ("n", 3)))
    x = fuzz.Input((2, 3), f32, (0.5, 1.0, -2.0, 0.0, 0.25, 4.0))
    program = fuzz.FuzzProgram((x,), (step,), (1,), jit=False, vmap_axes=(0,), callbacks="jit")
    want_out, want_calls = program.function()(impls_mod.get("jax").namespace(), x.value())
    assert want_calls == 6
    out, calls = program.function()(impls_mod.get("ref").namespace(), program.inputs[0].value())
    assert calls == want_calls
    np.testing.assert_array_equal(np.asarray(out[0]), np.asarray(want_out[0]))
    assert jax.numpy.asarray(want_out[0]).dtype == np.asarray(out[0]).dtype == f32


def test_random_programs_are_compared_bit_for_bit(monkeypatch):
    """A sampler one float32 ulp off is a difference in a random program (a plain
    program's tolerance would let it through)."""
    import refimpl as ri
    from conformance import fuzz

    def uniform(key, shape=(), dtype=np.float32, minval=0.0, maxval=1.0):
        u = ri.random.uniform(key, shape, dtype, minval, maxval)
        return ri.numpy.nextafter(u, ri.numpy.full_like(u, 9.0))

    class OffByOneUlp(RefImplementation):
        name = "fake-ulp"

        def make_namespace(self):
            ns = RefImplementation.make_namespace(self)
            ns.extras["api"] = Forward(ri, random=Forward(ri.random, uniform=uniform))
            return ns

    monkeypatch.setitem(impls_mod._REGISTRY, "fake-ulp", OffByOneUlp)
    key = fuzz.Step("random_key", (0,), (("typed", False),))
    sample = fuzz.Step("random_uniform", (1,), (("dtype", np.dtype(np.float32)), ("maxval", 1.0),
                                                ("minval", 0.0), ("shape", (3,))))  # fmt: skip
    program = fuzz.FuzzProgram((fuzz.Input((), np.dtype(np.int32), (42,)),), (key, sample), (2,),
                               exact=True)  # fmt: skip
    impls = [impls_mod.get("ref"), impls_mod.get("fake-ulp")]
    problems = fuzz.check_program(program, impls)
    assert problems and "fake-ulp" in problems[0], problems
    assert fuzz.check_program(replace(program, exact=False), impls) == []


def _first_finding(run, seeds=range(5)):
    """The result of ``run(seed, stream)`` for the first of ``seeds`` whose fuzz run
    finds a difference (or the last one's): a planted bug is to be found by a short run,
    not by the one seed whose draws happen to reach it."""
    for seed in seeds:
        with open(os.devnull, "w") as quiet:
            result = run(seed, quiet)
        if not result.ok:
            break
    return result


@pytest.mark.slow
def test_a_fuzz_run_finds_a_sampler_one_ulp_off(monkeypatch):
    import refimpl as ri
    from conformance import fuzz

    def uniform(key, shape=(), dtype=np.float32, minval=0.0, maxval=1.0):
        u = ri.random.uniform(key, shape, dtype, minval, maxval)
        return ri.numpy.nextafter(u, ri.numpy.full_like(u, 9.0))

    class OffByOneUlp(RefImplementation):
        name = "fake-ulp"

        def make_namespace(self):
            ns = RefImplementation.make_namespace(self)
            ns.extras["api"] = Forward(ri, random=Forward(ri.random, uniform=uniform))
            return ns

    monkeypatch.setitem(impls_mod._REGISTRY, "fake-ulp", OffByOneUlp)
    ops = ("random_uniform", "random_split", "negative")
    result = _first_finding(lambda seed, quiet: fuzz.run_fuzz(
        15, ["ref", "fake-ulp"], seed=seed, kinds=["random"], kind_odds=1, op_names=ops,
        stream=quiet))  # fmt: skip
    assert not result.ok and "ns.api.random.uniform" in result.case_source


def test_checkpoint_programs_check_the_plain_grad_on_each_implementation(monkeypatch):
    """A checkpoint that changes values is found on one implementation alone."""
    import refimpl as ri
    from conformance import fuzz

    real = ri.checkpoint

    def doubling_checkpoint(fun, **kwargs):
        inner = real(fun, **kwargs)
        return lambda *args: tuple(o * 2 for o in inner(*args))

    monkeypatch.setattr(ri, "checkpoint", doubling_checkpoint)
    result = _first_finding(lambda seed, quiet: fuzz.run_fuzz(
        10, ["ref", "ref"], seed=seed, kinds=["checkpoint"], kind_odds=1,
        stream=quiet))  # fmt: skip
    assert not result.ok
    assert "ref: checkpointed grad != plain grad" in result.failure


def test_fuzz_gather_dimension_numbers_are_valid_for_jax():
    """The generator's gather/scatter numbers are accepted by jax.lax with the output
    shape the generator predicts."""
    jax = pytest.importorskip("jax")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from conformance import fuzz

    shapes = st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=1, max_size=3).map(tuple)

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(shapes, st.data())
    def check(shape, data):
        val = fuzz.Val(shape, np.dtype(np.float32), True)
        p = fuzz.OPS["gather"].params(data.draw, val)
        indices = np.array(p["indices"], np.int32).reshape(p["index_shape"])
        dn = jax.lax.GatherDimensionNumbers(*p["dn"])
        x = jax.ShapeDtypeStruct(shape, np.float32)
        out = jax.eval_shape(lambda x, i: jax.lax.gather(x, i, dn, p["sizes"], mode=p["mode"]),
                             x, indices)  # fmt: skip
        assert out.shape == fuzz.OPS["gather"].out(p, val)[0].shape
        if p["mode"] == "promise_in_bounds" and indices.size:
            starts = indices.reshape(-1, indices.shape[-1])
            limits = [shape[d] - p["sizes"][d] for d in p["dn"][2]]
            assert ((starts >= 0) & (starts <= np.array(limits, np.int32))).all()

    check()


def test_pjrt_jit_closing_over_an_empty_constant():
    """Found by the fuzzer (a gather with empty literal indices): an empty constant array
    lowers (a splat of nothing) instead of failing in the lowering."""
    import refimpl as ri

    if "pjrt" not in _impls():
        pytest.skip("pjrt cannot run here")
    empty = np.zeros((0, 2), np.float32)
    out = ri.jit(lambda x: x + empty, backend="pjrt")(np.ones((0, 2), np.float32))
    assert out.shape == (0, 2) and np.asarray(out).dtype == np.float32


# --- the fuzzer's draws of batch axes, mask sizes and checkpoint residuals (issue 36) --------


def test_fuzz_vmap_programs_map_operands_on_negative_and_different_axes():
    """vmapped programs draw each operand's axis on its own, negative ones too, and
    ref and pjrt agree on them. (300 programs, about 75 vmapped: enough whatever the
    order of the draws.)"""
    from conformance import fuzz

    programs = drawn_examples(fuzz.programs(fuzz.OP_LIST, max_steps=3, vmap=True), 300, 3)
    axes = [p.vmap_axes for p in programs if p.vmap_axes is not None]
    assert any(a is not None and a < 0 for t in axes for a in t), axes
    mapped = [[a for a in t if a is not None] for t in axes]
    assert any(len(set(m)) > 1 for m in mapped), axes
    impls = [impls_mod.get(n) for n in _impls().split(",")]
    for program in [p for p in programs if p.vmap_axes is not None][:4]:
        assert fuzz.check_program(program, impls) == [], program.source()


def test_masked_programs_draw_empty_and_single_regions_and_padding_of_either_sign():
    """Mask sizes 0 and 1 are drawn, the padding is of either sign, min and argmax are
    among the steps, and each such program's masked result equals the unmasked one."""
    from conformance import fuzz

    drawn = drawn_examples(fuzz.masked_programs(), 60, 3)
    assert {0, 1} <= {mp.logical for mp in drawn}
    assert min(mp.garbage for mp in drawn) < 0 < max(mp.garbage for mp in drawn)
    ops = {s.op for mp in drawn for s in mp.program.steps}
    assert {"min", "argmax", "max"} <= ops, ops
    ref = impls_mod.get("ref")
    for mp in [mp for mp in drawn if mp.logical <= 1][:4]:
        assert fuzz.check_masked(mp, ref) is None, mp.program.source()


def _checkpoint_program(policy):
    from conformance import fuzz

    f32 = np.dtype(np.float32)
    x = fuzz.Input((3,), f32, (0.5, -1.0, 2.0))
    steps = (fuzz.Step("sin", (0,)), fuzz.Step("multiply", (1, 0)))
    return fuzz.FuzzProgram((x,), steps, (2,), jit=False, ad=("grad", (0,), (0,)),
                            checkpoint=(policy, False))  # fmt: skip


def test_checkpoint_programs_compare_what_is_saved(monkeypatch):
    """A checkpoint program's observation holds the number of computed values its
    forward pass saves: none under nothing_saveable, sin and cos under
    everything_saveable; a nothing_saveable that saves everything changes no gradient
    but is caught on ref alone (its own self-check) and against jax."""
    import refimpl as ri
    from conformance import fuzz

    ref = impls_mod.get("ref")
    counts = {}
    for policy in ("nothing_saveable", "everything_saveable"):
        obs = fuzz.observe_program(ref, _checkpoint_program(policy), [])
        counts[policy] = dict(obs.leaves)["['residuals']"]
    assert counts == {"nothing_saveable": 0, "everything_saveable": 2}
    program = _checkpoint_program("nothing_saveable")
    assert fuzz.check_program(program, [ref, ref]) == []
    monkeypatch.setattr(ri.checkpoint_policies, "nothing_saveable",
                        ri.checkpoint_policies.everything_saveable)  # fmt: skip
    problems = fuzz.check_program(program, [ref, ref])
    assert any("saves 2 computed value(s)" in p for p in problems), problems
    if impls_mod.get("jax").is_available():
        problems = fuzz.check_program(program, [ref, impls_mod.get("jax")])
        assert any("['residuals']: expected 2, got 0" in p for p in problems), problems


# --- the three planted bugs of issue 36, each caught without jax --------------------------


def _failing(patterns):
    suite = conformance.run(impls=_impls().split(","), patterns=patterns)
    return suite, {r.case for r in suite.unexpected()}


def test_planted_dot_general_batch_rule_on_different_axes_fails_without_jax(monkeypatch, no_jax):
    """Both operands batched: moving the rhs by the lhs's batch axis is right whenever
    the two axes are equal (every other vmap case); vmap_axes's cases see it."""
    from refimpl.primitives import linalg

    patterns = ["vmap.axes_rules/dot_general/*", "vmap.axes_rules/matmul_in_axes_1_0"]
    suite, failed = _failing(patterns)
    assert not failed, conformance.summary_text(suite)
    true_rule = linalg._dot_general_batch

    def wrong(args, dims, **params):
        lbd, rbd = dims
        if lbd is not None and rbd is not None:
            dims = (lbd, lbd)  # the rhs moved by the lhs's axis
            if np.ndim(args[1]) <= lbd:
                raise ValueError("axis out of range")
        return true_rule(args, dims, **params)

    monkeypatch.setattr(linalg.dot_general_p, "batch_rule", wrong)
    suite, failed = _failing(patterns)
    assert {"vmap.axes_rules/dot_general/diff", "vmap.axes_rules/matmul_in_axes_1_0"} <= failed


def test_planted_masked_max_filling_padding_with_zero_fails(monkeypatch):
    from refimpl import dtypes
    from refimpl.primitives import reductions

    patterns = ["mask.regions/max/*", "mask.regions/max-rows/*"]
    suite, failed = _failing(patterns)
    assert not failed, conformance.summary_text(suite)
    zero_fill = reductions._reduction_mask_rule(reductions.reduce_max_p, dtypes.zero)
    monkeypatch.setattr(reductions.reduce_max_p, "mask_rule", zero_fill)
    suite, failed = _failing(patterns)
    assert {"mask.regions/max/neg", "mask.regions/max/single", "mask.regions/max/empty"} <= failed
    assert "mask.regions/max/pos" not in failed  # a positive maximum beats the 0


def test_planted_checkpoint_policy_saving_everything_fails_without_jax(monkeypatch, no_jax):
    """The gradient is the same whatever a policy saves; what is saved is not."""
    import refimpl as ri

    patterns = ["residuals/checkpoint/nothing_saveable", "residuals.split/nothing_saveable",
                "memory_ad/checkpoint/nothing_saveable/*"]  # fmt: skip
    suite, failed = _failing(patterns)
    assert not failed, conformance.summary_text(suite)
    monkeypatch.setattr(ri.checkpoint_policies, "nothing_saveable",
                        ri.checkpoint_policies.everything_saveable)  # fmt: skip
    suite, failed = _failing(patterns)
    assert failed == {"residuals/checkpoint/nothing_saveable", "residuals.split/nothing_saveable"}
