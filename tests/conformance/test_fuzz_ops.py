"""The fuzzer's steps for issue 29's classes (roll by a traced or a static shift, diff with
prepend/append, pad in its seven modes, lax.top_k along any axis): each finds a planted
bug in its op within a short run of drawn programs, so a step whose check broke (not
drawn, not compared, or too narrow to reach the bug) fails here."""

from __future__ import annotations

import numpy as np
import pytest

from conformance import RefImplementation, fuzz
from conformance import implementations as impls_mod
from tests.helpers.fuzzing import Forward, drawn_examples


def _negated(shift):
    return tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift


def _roll_traced_wrong(a, shift, axis=None):
    """roll the other way when the shift is a value of the program (an array, traced
    under jit), not a Python int or tuple."""
    import refimpl.numpy as rnp

    static = isinstance(shift, (int, tuple, list))
    return rnp.roll(a, shift if static else _negated(shift), axis=axis)


def _roll_static_wrong(a, shift, axis=None):
    """roll the other way when the shift is a Python int, a tuple or a NumPy array."""
    import refimpl.numpy as rnp

    static = isinstance(shift, (int, tuple, list, np.ndarray))
    return rnp.roll(a, _negated(shift) if static else shift, axis=axis)


def _pad_reflect_as_wrap(a, widths, mode="constant", **kwargs):
    import refimpl.numpy as rnp

    return rnp.pad(a, widths, mode="wrap" if mode == "reflect" else mode, **kwargs)


def _diff_ends_swapped(a, n=1, axis=-1, prepend=None, append=None):
    import refimpl.numpy as rnp

    return rnp.diff(a, n, axis, prepend=append, append=prepend)


def _top_k_of_negated(x, k, axis=-1):
    import refimpl.lax as rlax

    values, indices = rlax.top_k(-x, k, axis=axis)
    return -values, indices


# name: (the fuzz ops the programs are drawn from, the namespace part, its overrides)
PLANTED = {
    "roll": (["roll", "astype"], "np_",
             {"roll": _roll_traced_wrong}),
    "roll_static": (["roll_static", "negative"], "np_", {"roll": _roll_static_wrong}),
    "pad": (["pad", "negative"], "np_", {"pad": _pad_reflect_as_wrap}),
    "diff": (["diff", "negative"], "np_", {"diff": _diff_ends_swapped}),
    "top_k": (["top_k", "astype"], "lax_", {"top_k": _top_k_of_negated}),
}  # fmt: skip


def _planted(monkeypatch, name):
    _, part, overrides = PLANTED[name]

    class Planted(RefImplementation):
        def make_namespace(self):
            ns = RefImplementation.make_namespace(self)
            setattr(ns, part, Forward(getattr(ns, part), **overrides))
            return ns

    Planted.name = f"planted-{name}"
    monkeypatch.setitem(impls_mod._REGISTRY, Planted.name, Planted)
    return [impls_mod.get("ref"), impls_mod.get(Planted.name)]


def _first_difference(programs, impls, op=None):
    """The first program (with a step of ``op``, when given) on which ``impls`` differ,
    with its problems and its position; None when none differs. Rejected programs and
    repeats are skipped (hypothesis draws many a program twice)."""
    from hypothesis.errors import UnsatisfiedAssumption

    seen = set()
    for n, program in enumerate(programs):
        if program in seen or (op and not any(step.op == op for step in program.steps)):
            continue
        seen.add(program)
        try:
            problems = fuzz.check_program(program, impls)
        except UnsatisfiedAssumption:
            continue
        if problems:
            return n, program, problems
    return None


@pytest.mark.parametrize("name", list(PLANTED))
def test_a_planted_bug_in_a_new_step_is_found_in_150_programs(name, monkeypatch):
    """At each of seeds 0-2, one of the first 150 drawn programs with a step of the op
    shows the bug (the first at 2 to 103 at seeds 0-4). Before: the FUZZ lane's steps
    missed a negated roll shift (the shift only from an int32 0-d value) and reflect
    padded as wrap (widths of at most 2, where the two coincide on short axes), and a
    step whose result was not among the one or two values drawn as outputs checked
    nothing: at seed 0, no planted bug in roll or pad showed in 30 programs with a dozen
    such steps."""
    ops, _, _ = PLANTED[name]
    impls = _planted(monkeypatch, name)
    strategy = fuzz.programs([op for op in fuzz.OP_LIST if op.name in ops], max_steps=4)
    for seed in range(3):
        found = _first_difference(drawn_examples(strategy, 150, seed), impls, name)
        assert found is not None, (name, seed)
        _, program, problems = found
        assert any(step.op == name for step in program.steps), program.source()


def test_the_unplanted_steps_agree_with_themselves():
    """The programs those tests draw run and agree on ref twice (a difference there
    would be the step's own, not the planted bug's)."""
    impls = [impls_mod.get("ref"), impls_mod.get("ref")]
    for name, (ops, _, _) in PLANTED.items():
        strategy = fuzz.programs([op for op in fuzz.OP_LIST if op.name in ops], max_steps=4)
        assert _first_difference(drawn_examples(strategy, 10, 0), impls) is None, name


def _pargmax_last_on_ties(x, axis_name):
    """pargmax that picks the last member holding the largest value (a wrong tie rule)."""
    from refimpl.primitives import collectives, elementwise, structural

    n = collectives.axis_size(axis_name)
    here = collectives.axis_index(axis_name)
    holds = elementwise.eq(x, collectives.pmax(x, axis_name))
    shape = tuple(getattr(holds, "shape", ()))
    mine = structural.broadcast_in_dim(np.int32(n - 1) - here, shape, ())
    none = structural.broadcast_in_dim(np.int32(np.iinfo(np.int32).max), shape, ())
    best = collectives.pmin(elementwise.select(holds, mine, none), axis_name)
    return np.int32(n - 1) - best


def test_a_planted_tie_rule_in_pargmax_is_found_in_pmap_programs(monkeypatch):
    """pmap programs with a pargmax step (issue 29's JAX-internal collectives) show a
    pargmax that takes the last member on ties: the step is drawn, compared, and its
    int32 inputs tie often enough."""
    import types

    class Planted(RefImplementation):
        def make_namespace(self):
            ns = RefImplementation.make_namespace(self)
            inner = ns.internal
            fake = types.SimpleNamespace(**vars(inner))
            fake.pargmax = _pargmax_last_on_ties
            ns.__class__ = type("Planted", (type(ns),), {"internal": property(lambda _: fake)})
            return ns

    Planted.name = "planted-pargmax"
    monkeypatch.setitem(impls_mod._REGISTRY, Planted.name, Planted)
    impls = [impls_mod.get("ref"), impls_mod.get(Planted.name)]
    ops = [op for op in fuzz.OP_LIST if op.name in ("pargmax", "psum", "negative", "astype")]
    strategy = fuzz.programs(ops, max_steps=4, kinds=["pmap"], kind_odds=1)
    found = _first_difference(drawn_examples(strategy, 200, 0), impls, "pargmax")
    assert found is not None
