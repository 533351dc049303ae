"""lax.scan against jax.lax.scan (the oracle), across unroll values, and its errors.

The property test draws random carry and xs pytrees, a length in 0..40,
``reverse`` and an ``unroll`` in {1, 2, 3, k >= length, True}. For each draw:

* the reference result (eager, which runs the scan primitive's impl) equals
  ``jax.lax.scan`` within float32 tolerance (ints exactly), and so do the
  final carry's weak types (JAX runs with unroll=1 there: XLA takes long to
  compile 40 unrolled steps; a separate test matches unroll values on a
  short scan);
* the traced program, after ``unroll_scans``, passes ``check_program`` and
  evaluates *bit for bit* to the same result, for the drawn unroll and for
  unroll=1.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.interpreter import eval_program
from refimpl.primitives.control_flow import scan_p
from refimpl.tracing import ConcretizationTypeError
from refimpl.transforms.scan import unroll_scans

jax.config.update("jax_platforms", "cpu")

PROPERTY = settings(max_examples=30, deadline=None)


# --- helpers ------------------------------------------------------------------------


def as_bits(x) -> np.ndarray:
    """Unsigned ints with the same bits (NaN payloads and -0.0 compare exactly)."""
    x = np.ascontiguousarray(np.atleast_1d(np.asarray(x)))
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def assert_trees_bitwise_equal(actual, expected) -> None:
    a_leaves, a_tree = ri.tree_flatten(actual)
    e_leaves, e_tree = ri.tree_flatten(expected)
    assert a_tree == e_tree
    for a, e in zip(a_leaves, e_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert (a.dtype, a.shape) == (e.dtype, e.shape)
        np.testing.assert_array_equal(as_bits(a), as_bits(e))


def assert_trees_close(actual, expected) -> None:
    """Same structure, dtypes and shapes; floats within float32 tolerance, ints exact."""
    a_leaves, a_tree = ri.tree_flatten(actual)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    assert len(a_leaves) == len(e_leaves)
    placeholders = list(range(len(a_leaves)))
    assert ri.tree_unflatten(a_tree, placeholders) == e_tree.unflatten(placeholders)
    for a, e in zip(a_leaves, e_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert (a.dtype, a.shape) == (e.dtype, e.shape)
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-5)
        else:
            np.testing.assert_array_equal(a, e)


def make_body(xnp):
    """A scan body over dict carries and list xs, written once for rnp and jnp.

    Float carry leaves follow a contraction (errors do not grow with length);
    int leaves wrap around exactly. ys hold the old carry, doubled xs and the
    step's sums.
    """

    def body(carry, xs):
        fsum = sum((xnp.sum(x) for x in xs if x.dtype == np.float32), 0.0)
        isum = sum((xnp.sum(x) for x in xs if x.dtype == np.int32), 0)
        new = {}
        for key, c in carry.items():
            if np.issubdtype(c.dtype, np.floating):
                new[key] = xnp.sin(c) * 0.5 + fsum * 0.25
            else:
                new[key] = c * 3 + isum
        ys = {"old": carry, "doubled": [x * 2 for x in xs], "sums": (fsum, isum)}
        return new, ys

    return body


SHAPES = [(), (2,), (2, 3)]


@st.composite
def scan_cases(draw):
    length = draw(st.integers(0, 40))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    carry = {}
    for n in range(draw(st.integers(1, 3))):
        shape = draw(st.sampled_from(SHAPES))
        if draw(st.booleans()):
            carry[f"f{n}"] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            carry[f"i{n}"] = rng.integers(-100, 100, shape).astype(np.int32)
    if draw(st.booleans()):
        carry["weak"] = 0.5  # a Python float: a weakly typed carry leaf
    xs = []
    for _ in range(draw(st.integers(0, 2))):
        shape = (length, *draw(st.sampled_from(SHAPES)))
        if draw(st.booleans()):
            xs.append(rng.uniform(-1, 1, shape).astype(np.float32))
        else:
            xs.append(rng.integers(-100, 100, shape).astype(np.int32))
    unroll = draw(
        st.sampled_from([1, 2, 3, "ge", True])
    )  # "ge": some k >= length, so fully unrolled
    if unroll == "ge":
        unroll = max(length, 1) + draw(st.integers(0, 3))
    return carry, xs, length, draw(st.booleans()), unroll


def run_ref(carry, xs, length, reverse, unroll):
    return lax.scan(make_body(rnp), carry, xs, length=length, reverse=reverse, unroll=unroll)


def run_jax(carry, xs, length, reverse, unroll):
    jax_carry = {k: v if isinstance(v, float) else jnp.asarray(v) for k, v in carry.items()}
    return jax.lax.scan(
        make_body(jnp), jax_carry, [jnp.asarray(x) for x in xs], length=length,
        reverse=reverse, unroll=unroll,
    )  # fmt: skip


def run_unrolled_program(carry, xs, length, reverse, unroll):
    """Trace, apply the unroll pass, check the program and evaluate it."""

    def fn(carry, xs):
        return run_ref(carry, xs, length, reverse, unroll)

    jitted = ri.jit(fn)
    traced = jitted.trace(carry, xs)
    program = unroll_scans(traced.program)
    ri.check_program(program)
    assert not any(e.primitive is scan_p for e in program.walk_eqns())
    leaves = [np.asarray(leaf, dtype=av.dtype) for leaf, av in
              zip(ri.tree_leaves((carry, xs)), program.in_avals)]  # fmt: skip
    outs = eval_program(program, leaves)
    return ri.tree_unflatten(ri.tree_structure(traced.out_info), outs)


# --- properties -------------------------------------------------------------------------


@PROPERTY
@given(scan_cases())
def test_scan_matches_jax_and_is_identical_across_unroll(case):
    carry, xs, length, reverse, unroll = case
    expected = run_ref(carry, xs, length, reverse, unroll)
    oracle = run_jax(carry, xs, length, reverse, 1)  # XLA compiles unroll=True slowly
    assert_trees_close(expected, oracle)
    for key in carry:  # the final carry's weak types follow JAX's too
        assert expected[0][key].weak_type == oracle[0][key].weak_type, key
    assert_trees_bitwise_equal(run_unrolled_program(carry, xs, length, reverse, unroll), expected)
    assert_trees_bitwise_equal(run_unrolled_program(carry, xs, length, reverse, 1), expected)
    assert_trees_bitwise_equal(run_ref(carry, xs, length, reverse, True), expected)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, 7, 9, True, 0])
def test_matches_jax_with_the_same_unroll(unroll, reverse):
    rng = np.random.default_rng(7)
    carry = {"f": rng.uniform(-1, 1, (2,)).astype(np.float32), "i": np.int32(5), "weak": 0.5}
    xs = [rng.uniform(-1, 1, (7, 3)).astype(np.float32), np.arange(7, dtype=np.int32)]
    expected = run_ref(carry, xs, 7, reverse, unroll)
    assert_trees_close(expected, run_jax(carry, xs, 7, reverse, unroll))
    assert_trees_bitwise_equal(run_unrolled_program(carry, xs, 7, reverse, unroll), expected)


def test_jit_matches_eager():
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)

    def fn(init, xs):
        return lax.scan(lambda c, x: (c + x, c * x), init, xs, unroll=3)

    init = np.ones(3, np.float32)
    assert_trees_bitwise_equal(ri.jit(fn)(init, xs), fn(init, xs))


# --- the primitive and its params ---------------------------------------------------------


def scan_eqn(program):
    (eqn,) = [e for e in program.eqns if e.primitive is scan_p]
    return eqn


def test_params_record_the_loop():
    program = ri.make_program(
        lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs, reverse=True, unroll=2)
    )(np.zeros(5, np.float32))
    params = scan_eqn(program).params
    assert params["length"] == 5
    assert params["reverse"] is True
    assert params["unroll"] == 2
    assert params["num_consts"] == 0
    assert params["num_carry"] == 1
    assert isinstance(params["body"], ri.Program)
    ri.check_program(program)
    assert "unroll=2" in str(program)


@pytest.mark.parametrize(
    ("unroll", "expected"),
    [(1, 1), (2, 2), (7, 7), (False, 1), (True, 5), (0, 5), (np.int64(3), 3)],
)
def test_unroll_is_normalized(unroll, expected):
    program = ri.make_program(lambda xs: lax.scan(lambda c, x: (c, x), 0.0, xs, unroll=unroll))(
        np.zeros(5, np.float32)
    )
    assert scan_eqn(program).params["unroll"] == expected


def test_full_unroll_of_an_empty_scan_is_one():
    program = ri.make_program(
        lambda: lax.scan(lambda c, x: (c, c), 1.0, None, length=0, unroll=True)
    )()
    assert scan_eqn(program).params["unroll"] == 1


def test_closed_over_tracers_become_consts():
    def fn(a, b, xs):
        return lax.scan(lambda c, x: (c * a + x, c + b), 0.0, xs)

    args = (np.float32(2), np.float32(3), np.arange(4, dtype=np.float32))
    program = ri.make_program(fn)(*args)
    eqn = scan_eqn(program)
    assert eqn.params["num_consts"] == 2
    assert eqn.inputs[:2] == program.in_vars[:2]
    carry, ys = fn(*args)
    c, expected_ys = 0.0, []
    for x in args[2]:
        expected_ys.append(c + 3)
        c = c * 2 + x
    np.testing.assert_array_equal(np.asarray(carry), np.float32(c))
    np.testing.assert_array_equal(np.asarray(ys), np.asarray(expected_ys, np.float32))


def test_closed_over_arrays_become_body_consts():
    table = np.arange(3, dtype=np.float32)
    program = ri.make_program(lambda xs: lax.scan(lambda c, x: (c + table, x), table, xs))(
        np.zeros(2, np.float32)
    )
    body = scan_eqn(program).params["body"]
    assert scan_eqn(program).params["num_consts"] == 0
    assert len(body.consts) == 1
    np.testing.assert_array_equal(body.consts[0], table)


def test_eager_scan_closing_over_a_reference_array():
    offset = ri.device_put(np.float32(1.5))
    carry, ys = lax.scan(lambda c, x: (c + offset, c), np.float32(0), None, length=3)
    assert isinstance(carry, ri.Array)
    np.testing.assert_array_equal(np.asarray(carry), np.float32(4.5))
    np.testing.assert_array_equal(np.asarray(ys), np.asarray([0, 1.5, 3], np.float32))


def test_nested_scans_match_jax():
    def make(lax_mod):
        def outer(c, row):
            inner_c, inner_ys = lax_mod.scan(lambda d, v: (d * 0.5 + v, d), c, row, unroll=2)
            return inner_c, inner_ys

        return lambda xs: lax_mod.scan(outer, np.float32(0), xs, reverse=True)

    xs = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_trees_close(make(lax)(xs), make(jax.lax)(jnp.asarray(xs)))
    program = ri.make_program(make(lax))(xs)
    ri.check_program(program)
    assert sum(e.primitive is scan_p for e in program.walk_eqns()) == 2


def test_length_zero_returns_init_and_empty_ys():
    carry, ys = lax.scan(lambda c, x: (c + 1, (c, x)), np.ones(2, np.float32), np.zeros((0, 3)))
    np.testing.assert_array_equal(np.asarray(carry), np.ones(2, np.float32))
    assert ys[0].shape == (0, 2) and ys[1].shape == (0, 3)


def test_xs_none_with_length():
    carry, ys = lax.scan(lambda c, _: (c + 1, c * 10), 0, None, length=4)
    np.testing.assert_array_equal(np.asarray(ys), [0, 10, 20, 30])
    assert int(carry) == 4
    assert carry.weak_type  # weak int in, weak int out: stays weak (as in JAX)


@pytest.mark.parametrize("make_length", [int, np.int64, lambda n: ri.device_put(np.int32(n))])
def test_length_accepts_concrete_integers(make_length):
    carry, ys = lax.scan(lambda c, _: (c + 1, c), 0, None, length=make_length(3))
    assert int(carry) == 3 and ys.shape == (3,)


def test_empty_carry():
    carry, ys = lax.scan(lambda c, x: (c, x * 2), None, np.arange(3, dtype=np.float32))
    assert carry is None
    np.testing.assert_array_equal(np.asarray(ys), [0, 2, 4])


def test_body_returning_none_ys():
    carry, ys = lax.scan(lambda c, x: (c + x, None), 0.0, np.ones(3, np.float32))
    assert ys is None
    assert float(carry) == 3.0


# --- weak-type promotion of the carry (JAX 0.10's rules) --------------------------------


def jax_final_carry(f, init, **kw):
    out = jax.eval_shape(lambda: jax.lax.scan(f, init, None, **kw)[0])
    return out.dtype, out.weak_type


def our_final_carry(f, init, **kw):
    out = ri.eval_shape(lambda: lax.scan(f, init, None, **kw)[0])
    return out.dtype, out.weak_type


PROMOTIONS = {
    "weak f32 in, strong f32 out": (lambda c, x: (c + np.float32(1), None), 1.0),
    "strong f32 in, weak out": (lambda c, x: (2.0, None), np.float32(1)),
    "weak i32 in, weak f32 out": (lambda c, x: (c * 1.5, None), 1),
    "weak i32 in, strong f32 out": (lambda c, x: (c * np.float32(1.5), None), 1),
    "weak f32 in, strong bf16 out": (lambda c, x: (ml_dtypes.bfloat16(1), None), 1.0),
}


@pytest.mark.parametrize("name", list(PROMOTIONS))
def test_carry_promotion_matches_jax(name):
    f, init = PROMOTIONS[name]
    assert our_final_carry(f, init, length=3) == jax_final_carry(f, init, length=3)


def test_weak_init_is_made_strong_and_the_body_traced_once():
    # JAX 0.10.2 traces this body once (the carry taken weak, returned
    # strong); refimpl re-types that trace's Program for a strong carry
    # instead of calling the body again (a body with Python side effects,
    # like JAX's test_scan_vjp_systematic_readonly popping from lists, ran twice).
    traces = []

    def body(c, x):
        traces.append(c.weak_type)
        return c + np.float32(1), None

    jax_traces = []
    jax.make_jaxpr(
        lambda: jax.lax.scan(
            lambda c, x: (jax_traces.append(c.weak_type), (c + np.float32(1), None))[1],
            1.0,
            None,
            length=3,
        )
    )()
    program = ri.make_program(lambda: lax.scan(body, 1.0, None, length=3))()
    assert traces == jax_traces == [True]
    eqn = scan_eqn(program)
    assert [v.aval.weak_type for v in eqn.params["body"].in_vars] == [False]
    assert "convert_element_type" in str(program)


XS3 = np.arange(3, dtype=np.float32)

YS_WEAK_TYPES = {
    "weak init, strong carry out": (lambda m: lambda c, x: (c + x, (c, c * 2, c + 1.0, x)), 0.0),
    "strong init, weak carry out": (lambda m: lambda c, x: (1.0, (c, c * 2)), np.float32(0)),
    "weak int init, float carry": (lambda m: lambda c, x: (c + x, c), 0),
    "mixed carries": (lambda m: lambda c, x: ((c[0] + x, c[1] + x), c), (0.0, 0)),
    "nested scan": (
        lambda m: lambda c, x: (c + x, m.lax.scan(lambda d, y: (d + y, d), c, XS3)[1]),
        0.0,
    ),
}


@pytest.mark.parametrize("name", list(YS_WEAK_TYPES))
def test_ys_weak_types_match_jax(backend, name):
    # JAX keeps the trace whose carry differs from the returned one only in
    # weak type, so ys computed from the carry keep its weak type
    make, init = YS_WEAK_TYPES[name]
    ours = jax.tree_util.tree_leaves(lax.scan(make(ri), init, XS3))
    theirs = jax.tree_util.tree_leaves(jax.lax.scan(make(jax), init, XS3))
    assert [a.weak_type for a in ours] == [jax.typeof(b).weak_type for b in theirs]
    assert [np.asarray(a).dtype for a in ours] == [np.asarray(b).dtype for b in theirs]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))
    jitted = jax.tree_util.tree_leaves(ri.jit(lambda xs: lax.scan(make(ri), init, xs))(XS3))
    assert [a.weak_type for a in jitted] == [a.weak_type for a in ours]


def test_promoted_weak_int_carry_values_match_jax():
    ours = lax.scan(lambda c, x: (c * 1.5, c), 3, None, length=4)
    theirs = jax.lax.scan(lambda c, x: (c * 1.5, c), 3, None, length=4)
    assert_trees_close(ours, theirs)


# --- errors ---------------------------------------------------------------------------


def test_error_carry_tree_mismatch():
    with pytest.raises(TypeError, match="same pytree structure") as info:
        lax.scan(lambda c, x: ((c, c), x), 0.0, np.zeros(2, np.float32))
    assert (
        "pytree leaf but the corresponding component of the carry output is a <class 'tuple'>"
        in str(info.value)
    )


def test_error_carry_dict_keys_mismatch():
    with pytest.raises(
        TypeError,
        match=(
            r"(?s)pytree structure.*dict'> with 2 children but .* with 1 child"
            r".*key sets: \{'b'\}"
        ),
    ):
        lax.scan(lambda c, x: ({"a": c["a"]}, x), {"a": 0.0, "b": 1.0}, None, length=2)


def test_error_carry_type_names_leaf_and_both_types():
    init = {"w": np.zeros(3, np.float32), "n": np.int32(0)}
    with pytest.raises(TypeError) as info:
        lax.scan(lambda c, x: ({"w": c["w"], "n": c["n"] * 1.5}, None), init, None, length=2)
    message = str(info.value)
    assert "lax.scan" in message
    assert "c['n'] has type int32[]" in message and "has type float32[]" in message


def test_error_carry_shape_names_leaf_and_both_shapes():
    with pytest.raises(TypeError, match=re.escape("c[1] has type float32[2]")) as info:
        lax.scan(
            lambda c, x: ((c[0], rnp.zeros(3, np.float32)), x),
            (0.0, np.zeros(2, np.float32)), None, length=2,
        )  # fmt: skip
    assert "float32[3]" in str(info.value)


def test_error_strong_int_carry_is_not_promoted():
    with pytest.raises(TypeError, match=r"carry c has type int32\[\].*has type float32\[\]"):
        lax.scan(lambda c, x: (c * 1.5, None), np.int32(1), None, length=2)


def test_weak_only_difference_settles_on_the_one_trace():
    # A body whose Python code flips the weak flag (refimpl's weak_type
    # argument) is traced once: its Program, re-typed for the weak carry it
    # returns, returns it weak again.
    traces = []

    def flip_weak_type(c, x):  # strong in -> weak out
        traces.append(c.weak_type)
        return lax.convert_element_type(c, np.float32, weak_type=not c.weak_type), None

    out, _ = lax.scan(flip_weak_type, np.float32(0), None, length=2)
    assert traces == [False]
    assert out.weak_type and out.dtype == np.float32


def test_error_xs_leading_axes_disagree():
    xs = {"a": np.zeros((3, 2)), "b": np.zeros(4)}
    with pytest.raises(ValueError, match="different leading axis sizes") as info:
        lax.scan(lambda c, x: (c, x), 0.0, xs)
    assert "xs['a'] has 3" in str(info.value) and "xs['b'] has 4" in str(info.value)


def test_error_length_disagrees_with_xs():
    with pytest.raises(ValueError, match=r"length=5 disagrees .* size 3 of xs\[0\]"):
        lax.scan(lambda c, x: (c, x), 0.0, [np.zeros(3)], length=5)


def test_error_no_xs_and_no_length():
    with pytest.raises(ValueError, match="no xs to scan over and no length"):
        lax.scan(lambda c, x: (c, x), 0.0)


def test_error_xs_leaf_without_leading_axis():
    with pytest.raises(ValueError, match=r"xs\[1\] is a scalar"):
        lax.scan(lambda c, x: (c, x), 0.0, (np.zeros(2), 1.0))


@pytest.mark.parametrize("length", [2.0, 2.5, np.float32(2.0), "3", True])
def test_length_is_taken_by_int_as_jax(length):
    # JAX 0.10.2's scan takes int(length): 2.0 and 2.5 are 2 steps, True 1
    want = jax.lax.scan(lambda c, x: (c + 1, c), 0, None, length=length)[1]
    got = lax.scan(lambda c, x: (c + 1, c), 0, None, length=length)[1]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.shape == want.shape


@pytest.mark.parametrize(
    ("length", "error"), [([1], TypeError), (np.array([2, 3]), TypeError), ("abc", ValueError)]
)
def test_error_length_int_refuses(length, error):
    with pytest.raises(error, match="length must be an int"):
        lax.scan(lambda c, x: (c, x), 0.0, None, length=length)
    with pytest.raises(error):  # (JAX's own class)
        jax.lax.scan(lambda c, x: (c, x), 0.0, None, length=length)


def test_error_negative_length():
    with pytest.raises(ValueError, match="length must be non-negative"):
        lax.scan(lambda c, x: (c, x), 0.0, None, length=-1)


def test_error_traced_length():
    with pytest.raises(
        ConcretizationTypeError,
        match="The `length` argument to `scan` expects a concrete `int` value",
    ):
        ri.jit(lambda n: lax.scan(lambda c, x: (c, x), 0.0, None, length=n))(3)


@pytest.mark.parametrize(
    ("unroll", "error", "pattern"),
    [
        (-1, ValueError, "non-negative int, got -1"),
        (1.5, TypeError, "int or a bool, got 1.5"),
        ("2", TypeError, "int or a bool, got '2'"),
        (None, TypeError, "int or a bool, got None"),
    ],
)
def test_error_bad_unroll(unroll, error, pattern):
    with pytest.raises(error, match=pattern):
        lax.scan(lambda c, x: (c, x), 0.0, None, length=3, unroll=unroll)


@pytest.mark.parametrize("out", [1.0, (1.0,), (1.0, 2.0, 3.0)])
def test_error_body_not_a_pair(out):
    with pytest.raises(TypeError, match=r"scan body output must be a pair, got "):
        lax.scan(lambda c, x: out, 1.0, None, length=2)


def test_error_body_output_not_an_array():
    with pytest.raises(TypeError, match=r"the body output\[1\]\['name'\] is a str"):
        lax.scan(lambda c, x: (c, {"name": "step"}), 1.0, None, length=2)


def test_error_f_not_callable():
    with pytest.raises(TypeError, match="f argument should be a callable"):
        lax.scan(3, 1.0, None, length=2)


def test_error_init_not_an_array():
    with pytest.raises(TypeError, match=r"lax.scan: argument at position carry\[0\]"):
        lax.scan(lambda c, x: (c, x), ["a"], None, length=2)


def test_primitive_rejects_mismatched_body():
    program = ri.make_program(lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs))(
        np.zeros(3, np.float32)
    )
    params = dict(scan_eqn(program).params)
    with pytest.raises(TypeError, match="scan: the body takes"):
        scan_p.bind(np.float32(0), np.zeros(3, np.int32), **params)
    with pytest.raises(TypeError, match="leading axis must be the scan length 3"):
        scan_p.bind(np.float32(0), np.zeros(4, np.float32), **params)
    with pytest.raises(TypeError, match=r"invalid scan param unroll .*int >= 1 required"):
        scan_p.bind(np.float32(0), np.zeros(3, np.float32), **{**params, "unroll": 0})
    with pytest.raises(TypeError, match="unroll"):
        del params["unroll"]
        scan_p.bind(np.float32(0), np.zeros(3, np.float32), **params)


@pytest.mark.parametrize("unroll", [1, 2, 3, 10])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_under_x64_matches_jax(backend, x64, unroll, reverse):
    """Under x64 a Python int is int64: the unrolled loop's int32 counters must
    not meet one (pjrt once failed to compile every scan with x64 on)."""

    def body(c, x):
        return c + x, c * x

    xs = np.arange(7.0)
    got = ri.jit(lambda v: ri.lax.scan(body, 0.0, v, unroll=unroll, reverse=reverse))(xs)
    want = jax.jit(lambda v: jax.lax.scan(body, 0.0, v, unroll=unroll, reverse=reverse))(xs)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _readonly_refs_scan_vjp(api, seed, num_consts, num_carry, num_ext_in, num_iters):
    """JAX's mutable_array_test test_scan_vjp_systematic_readonly: a scan
    body reading refs and pure constants, chosen by popping from lists (so
    the body can be traced only once), under vjp."""
    rng = np.random.RandomState(seed)
    num_mut = num_consts // 2
    pure = [rng.normal() for _ in range(num_consts - num_mut)]
    mut = [rng.normal() for _ in range(num_mut)]
    init = [rng.normal() for _ in range(num_carry)]
    xs = [rng.normal(size=num_iters) for _ in range(num_ext_in)]
    is_mut = rng.permutation([True] * num_mut + [False] * (num_consts - num_mut))
    np_ = jnp if api is jax else rnp

    def f(mut_vals, pure_vals, c, xs):
        consts = pure_vals[:], [api.new_ref(v) for v in mut_vals]

        def body(c, x):
            tot = 0.0
            for m in is_mut:
                const = consts[int(m)].pop()
                tot += np_.sin(const[...] if m else const)
            return [np_.sin(ci) + tot for ci in c], sum(map(np_.sin, x)) * 1.0

        return api.lax.scan(body, c, xs, length=num_iters)

    out, pullback = api.vjp(f, mut, pure, init, xs)
    return out, pullback(api.tree_util.tree_map(np_.ones_like, out))


@pytest.mark.parametrize("params", [(0, 2, 3, 0, 3), (1, 5, 3, 3, 1), (0, 3, 0, 3, 3)])
def test_scan_of_read_only_refs_under_vjp_as_jax(backend, params):
    got = _readonly_refs_scan_vjp(ri, *params)
    want = _readonly_refs_scan_vjp(jax, *params)
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
