"""The unroll pass (``refimpl.transforms.scan.unroll_scans``): structure and exactness.

A scan of ``length`` steps with ``unroll=k`` must become a ``while`` over
``length // k`` blocks holding k inlined copies of the body, followed by
``length % k`` inlined copies; with ``k >= length`` (or ``unroll=True``/0)
every step is inlined, with no loop and no dynamic_slice /
dynamic_update_slice. The scan bodies here contain exactly one ``sin``, so
counting ``sin`` equations counts body copies. Every rewritten program must
pass ``check_program`` and evaluate bit for bit like the original.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
from refimpl import lax
from refimpl.core import Literal
from refimpl.interpreter import eval_program
from refimpl.transforms.scan import unroll_scans

PROPERTY = settings(max_examples=30, deadline=None)


# --- helpers ------------------------------------------------------------------------


def count(eqns, name: str) -> int:
    return sum(1 for eqn in eqns if eqn.primitive.name == name)


def deep_count(program, name: str) -> int:
    return count(program.walk_eqns(), name)


def the_while(program):
    (eqn,) = [eqn for eqn in program.eqns if eqn.primitive.name == "while"]
    return eqn


def as_bits(x) -> np.ndarray:
    x = np.ascontiguousarray(np.atleast_1d(np.asarray(x)))
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def assert_bitwise_equal(actual: list, expected: list) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert (a.dtype, a.shape) == (e.dtype, e.shape)
        np.testing.assert_array_equal(as_bits(a), as_bits(e))


def unrolled_and_checked(program, args):
    """Apply the pass, check it, and check it computes exactly what ``program`` does."""
    unrolled = unroll_scans(program)
    ri.check_program(unrolled)
    assert unrolled.in_avals == program.in_avals
    assert unrolled.out_avals == program.out_avals
    assert deep_count(unrolled, "scan") == 0
    assert_bitwise_equal(eval_program(unrolled, args), eval_program(program, args))
    return unrolled


def sin_scan_program(length: int, unroll, reverse: bool = False):
    """A scan whose body has one ``sin``: carry = sin(carry) * w + x; ys = (2 * carry, -x)
    (not x itself: a y that is an x is no output of the scan, as JAX's forwarding)."""
    rng = np.random.default_rng(length)
    w = rng.uniform(-1, 1, 3).astype(np.float32)
    xs = rng.uniform(-1, 1, (length, 3)).astype(np.float32)
    init = rng.uniform(-1, 1, 3).astype(np.float32)

    def fn(init, w, xs):
        def body(c, x):
            return lax.sin(c) * w + x, (c * 2, -x)

        return lax.scan(body, init, xs, unroll=unroll, reverse=reverse)

    args = [init, w, xs]
    return ri.make_program(fn)(*args), args


# --- the structure ---------------------------------------------------------------------


@PROPERTY
@given(
    length=st.integers(0, 40),
    unroll=st.one_of(st.integers(1, 45), st.just(True), st.just(0)),
    reverse=st.booleans(),
)
def test_structure_counts_body_copies_and_loops(length, unroll, reverse):
    program, args = sin_scan_program(length, unroll, reverse)
    unrolled = unrolled_and_checked(program, args)
    k = max(length, 1) if unroll is True or unroll == 0 else unroll
    if k >= length:
        assert deep_count(unrolled, "while") == 0
        assert count(unrolled.eqns, "sin") == length
        assert deep_count(unrolled, "dynamic_slice") == 0
        assert deep_count(unrolled, "dynamic_update_slice") == 0
        assert count(unrolled.eqns, "slice") == length  # one static slice of xs per step
    else:
        assert deep_count(unrolled, "while") == 1
        loop = the_while(unrolled)
        assert count(loop.params["body"].eqns, "sin") == k
        assert count(unrolled.eqns, "sin") == length % k
        assert deep_count(unrolled, "sin") == k + length % k
        (compare,) = loop.params["cond"].eqns
        (bound,) = [a for a in compare.inputs if isinstance(a, Literal)]
        assert int(bound.value) == length // k
        assert count(loop.params["body"].eqns, "dynamic_slice") == k
        assert count(loop.params["body"].eqns, "dynamic_update_slice") == 2 * k  # two ys


@pytest.mark.parametrize("unroll", [True, 0, 5, 8])
def test_full_unroll_has_no_loop_and_static_indices(unroll):
    program, args = sin_scan_program(5, unroll)
    unrolled = unrolled_and_checked(program, args)
    names = {eqn.primitive.name for eqn in unrolled.walk_eqns()}
    assert "while" not in names
    assert not names & {"dynamic_slice", "dynamic_update_slice"}
    assert count(unrolled.eqns, "sin") == 5
    assert count(unrolled.eqns, "concatenate") == 2  # one per ys leaf


def test_unroll_two_of_seven_reads_like_the_spec():
    """length 7, unroll 2: a loop of 3 blocks of 2 copies, then 1 copy after it."""
    program, args = sin_scan_program(7, 2)
    unrolled = unrolled_and_checked(program, args)
    listing = str(unrolled)
    assert listing.count("= while[") == 1
    assert listing.count(" = sin ") == 3
    body = the_while(unrolled).params["body"]
    assert str(body).count(" = sin ") == 2


def test_unroll_one_is_a_plain_loop():
    program, args = sin_scan_program(6, 1)
    unrolled = unrolled_and_checked(program, args)
    assert count(the_while(unrolled).params["body"].eqns, "sin") == 1
    assert count(unrolled.eqns, "sin") == 0


def test_empty_scan():
    program, args = sin_scan_program(0, 1)
    unrolled = unrolled_and_checked(program, args)
    assert deep_count(unrolled, "sin") == 0
    assert [a.shape for a in unrolled.out_avals] == [(3,), (0, 3), (0, 3)]


def test_no_scan_leaves_the_program_alone():
    program = ri.make_program(lambda x: lax.sin(x) * 2.0)(np.float32(1))
    unrolled = unrolled_and_checked(program, [np.float32(1)])
    assert [e.primitive.name for e in unrolled.eqns] == [e.primitive.name for e in program.eqns]


# --- what the rewritten scans still have to get right -----------------------------------


@pytest.mark.parametrize("unroll", [1, 2, 3, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_weak_ys_and_carry_keep_their_types(unroll, reverse):
    def fn(xs):
        return lax.scan(lambda c, x: (c + 1, (2.0, c)), 0, xs, unroll=unroll, reverse=reverse)

    xs = np.zeros(7, np.float32)
    program = ri.make_program(fn)(xs)
    assert [a.weak_type for a in program.out_avals] == [True, True, True]
    unrolled_and_checked(program, [xs])


@pytest.mark.parametrize("unroll", [1, 3, True])
def test_pytrees_ints_and_consts(unroll):
    table = np.arange(4, dtype=np.int32)

    def fn(scale, init, xs):
        def body(c, x):
            new = {
                "n": c["n"] * scale + lax.index_in_dim(x["a"], 0, keepdims=False),
                "v": lax.sin(c["v"]) + x["b"],
            }
            return new, {"table": c["n"] + table, "b": x["b"]}

        return lax.scan(body, init, xs, unroll=unroll)

    rng = np.random.default_rng(0)
    args = [
        np.int32(3),
        {"n": np.int32(1), "v": np.float32(0.25)},
        {"a": rng.integers(-9, 9, (10, 2)).astype(np.int32), "b": np.float32(0.5) * np.ones(10)},
    ]
    program = ri.make_program(fn)(*args)
    leaves = [
        np.asarray(a, dtype=av.dtype) for a, av in zip(ri.tree_leaves(args), program.in_avals)
    ]
    unrolled = unrolled_and_checked(program, leaves)
    # each program using the table holds it once, without copying it
    for holder in [unrolled, *_subprograms(unrolled)]:
        assert len(holder.consts) <= 1
        assert all(const is table for const in holder.consts)


def _subprograms(program):
    for eqn in program.walk_eqns():
        for value in eqn.params.values():
            if isinstance(value, ri.Program):
                yield value


def test_consts_are_shared_by_the_inlined_copies():
    table = np.arange(3, dtype=np.float32)
    program = ri.make_program(
        lambda xs: lax.scan(lambda c, x: (lax.sin(c) + table * x, c), table, xs, unroll=True)
    )(np.ones(6, np.float32))
    unrolled = unrolled_and_checked(program, [np.ones(6, np.float32)])
    assert len(unrolled.consts) == 1


def test_nested_scans_unroll_inside_out():
    def fn(xs):
        def outer(c, row):
            return lax.scan(lambda d, v: (lax.sin(d) + v, d), c, row, unroll=3)

        return lax.scan(outer, np.float32(0), xs, unroll=2)

    xs = np.random.default_rng(1).uniform(-1, 1, (5, 4)).astype(np.float32)
    program = ri.make_program(fn)(xs)
    unrolled = unrolled_and_checked(program, [xs])
    # outer: a loop of 2 blocks x 2 copies + 1 remainder copy = 3 inner scans, each of
    # which is a loop of 1 block x 3 copies + 1 remainder copy = 4 sins.
    assert deep_count(unrolled, "while") == 1 + 3
    assert deep_count(unrolled, "sin") == 3 * 4


def test_scans_inside_while_cond_and_jit_are_rewritten():
    inner_jit = ri.jit(
        lambda v: lax.scan(
            lambda c, x: (lax.sin(c) + x, c), lax.index_in_dim(v, 0, keepdims=False), v, unroll=2
        )
    )

    def fn(p, xs):
        def body(state):
            i, acc = state
            total, _ = lax.scan(lambda c, x: (lax.sin(c) + x, None), acc, xs, unroll=True)
            return i + 1, total

        _, looped = lax.while_loop(lambda s: s[0] < 2, body, (0, np.float32(0)))
        branched = lax.cond(p, lambda: lax.scan(lambda c, x: (c + x, c), 0.0, xs)[0], lambda: 0.0)
        jitted, _ = inner_jit(xs)
        return looped, branched, jitted

    xs = np.linspace(-1, 1, 5, dtype=np.float32)
    program = ri.make_program(fn)(True, xs)
    assert deep_count(program, "scan") == 3
    unrolled_and_checked(program, [np.asarray(True), xs])


def test_scan_in_a_jitted_function_then_unrolled_via_make_program():
    """SPEC: make_program + unroll_scans shows the unrolled structure."""
    jitted = ri.jit(lambda xs: lax.scan(lambda c, x: (lax.sin(c) + x, c), 0.0, xs, unroll=4))
    xs = np.ones(10, np.float32)
    unrolled = unrolled_and_checked(ri.make_program(jitted)(xs), [xs])
    assert str(the_while(unrolled).params["body"]).count(" = sin ") == 4
    assert str(unrolled).count(" = sin ") == 4 + 2
