"""while_loop, fori_loop, cond and switch against jax.lax (the oracle), and their errors.

Values, dtypes and weak types are compared with JAX, eagerly and under jit;
every traced program passes ``check_program``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.primitives.control_flow import cond_p, scan_p, while_p
from tests.helpers.parity import assert_modes_same_as_jax

jax.config.update("jax_platforms", "cpu")

PROPERTY = settings(max_examples=30, deadline=None)


def assert_like_jax(ours, theirs, exact: bool = True) -> None:
    """Same structure; per leaf the same dtype, shape, weak type and values."""
    o_leaves, o_tree = ri.tree_flatten(ours)
    t_leaves, t_tree = jax.tree_util.tree_flatten(theirs)
    placeholders = list(range(len(o_leaves)))
    assert len(o_leaves) == len(t_leaves)
    assert ri.tree_unflatten(o_tree, placeholders) == t_tree.unflatten(placeholders)
    for o, t in zip(o_leaves, t_leaves):
        assert o.weak_type == t.weak_type
        o, t = np.asarray(o), np.asarray(t)
        assert (o.dtype, o.shape) == (t.dtype, t.shape)
        if exact:
            np.testing.assert_array_equal(o, t)
        else:
            np.testing.assert_allclose(o, t, rtol=1e-6)


def primitives_in(program) -> list[str]:
    return [eqn.primitive.name for eqn in program.walk_eqns()]


# --- while_loop -------------------------------------------------------------------------


def collatz_steps(lax_mod, n):
    """Steps until the Collatz sequence of ``n`` reaches 1 (an int while loop)."""

    def body(state):
        value, steps = state
        nxt = lax_mod.select(value % 2 == 0, value // 2, 3 * value + 1)
        return nxt, steps + 1

    return lax_mod.while_loop(lambda s: s[0] != 1, body, (n, np.int32(0)))


@PROPERTY
@given(st.integers(1, 500))
def test_while_loop_matches_jax(n):
    ours = collatz_steps(lax, np.int32(n))
    assert_like_jax(ours, collatz_steps(jax.lax, jnp.int32(n)))
    assert_like_jax(ri.jit(lambda m: collatz_steps(lax, m))(np.int32(n)), ours)


def test_while_loop_program():
    program = ri.make_program(lambda n: collatz_steps(lax, n))(np.int32(7))
    ri.check_program(program)
    (eqn,) = [e for e in program.eqns if e.primitive is while_p]
    assert eqn.params["cond_num_consts"] == 0 and eqn.params["body_num_consts"] == 0
    assert [a.str_short() for a in eqn.params["body"].in_avals] == ["i32[]", "i32[]"]


def test_while_loop_captures_outer_tracers_for_cond_and_body():
    def fn(limit, step):
        return lax.while_loop(lambda x: x < limit, lambda x: x + step, np.float32(0))

    program = ri.make_program(fn)(np.float32(10), np.float32(3))
    (eqn,) = program.eqns
    assert eqn.params["cond_num_consts"] == 1 and eqn.params["body_num_consts"] == 1
    assert float(fn(np.float32(10), np.float32(3))) == 12.0
    assert float(ri.jit(fn)(np.float32(10), np.float32(3))) == 12.0


def test_while_loop_zero_iterations_returns_init():
    assert_like_jax(
        lax.while_loop(lambda c: c > 100, lambda c: c + 1, 3),
        jax.lax.while_loop(lambda c: c > 100, lambda c: c + 1, 3),
    )


@pytest.mark.parametrize(
    ("body", "init"),
    [
        (lambda c: c * 1.5, 3),  # weak int carry promoted to float32
        (lambda c: c + np.float32(1), 1.0),  # weak float32 made strong
        (lambda c: 20.0, np.float32(1)),  # strong carry, weak output
    ],
)
def test_while_loop_carry_promotion_matches_jax(body, init):
    ours = lax.while_loop(lambda c: c < 10, body, init)
    assert_like_jax(ours, jax.lax.while_loop(lambda c: c < 10, body, init))


def test_while_loop_pytree_carry():
    def make(lax_mod):
        def body(s):
            return {"i": s["i"] + 1, "acc": (s["acc"][0] * 2, s["acc"][1] + s["i"])}

        init = {"i": np.int32(0), "acc": (np.float32(1), np.int32(0))}
        return lax_mod.while_loop(lambda s: s["i"] < 6, body, init)

    assert_like_jax(make(lax), make(jax.lax))


def test_error_while_cond_not_bool():
    with pytest.raises(
        TypeError,
        match=r"but got output type\(s\) \[ShapedArray\(int32\[\], weak_type=True\)\]",
    ):
        lax.while_loop(lambda c: c, lambda c: c - 1, 3)


def test_error_while_cond_returns_a_pair():
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got pytree"):
        lax.while_loop(lambda c: (c < 1, c < 2), lambda c: c - 1, 3)


def test_error_while_cond_not_scalar():
    with pytest.raises(TypeError, match=r"got output type\(s\) \[ShapedArray\(bool\[2\]\)\]"):
        lax.while_loop(lambda c: c < 1, lambda c: c, np.zeros(2, np.float32))


def test_error_while_body_changes_dtype():
    with pytest.raises(TypeError) as info:
        lax.while_loop(lambda c: c < 1, lambda c: c * 1.5, np.int32(3))
    assert "lax.while_loop" in str(info.value) and "The input carry c has type int32[]" in str(
        info.value
    )


def test_error_while_body_changes_shape():
    with pytest.raises(
        TypeError, match=r"c\['x'\] has type float32\[2\].*float32\[3\], so the shapes do not match"
    ):
        lax.while_loop(
            lambda c: rnp.sum(c["x"]) < 10, lambda c: {"x": rnp.zeros(3, np.float32)},
            {"x": np.zeros(2, np.float32)},
        )  # fmt: skip


def test_error_while_body_changes_structure():
    with pytest.raises(TypeError, match="same pytree structure"):
        lax.while_loop(lambda c: c < 1, lambda c: (c, c), 0.0)


def test_error_while_not_callable():
    with pytest.raises(TypeError, match="should be callable"):
        lax.while_loop(None, lambda c: c, 0.0)


# --- fori_loop --------------------------------------------------------------------------


@pytest.mark.parametrize(("lower", "upper"), [(0, 5), (2, 9), (5, 3), (0, 0), (-3, 2)])
def test_fori_loop_static_bounds_match_jax(lower, upper):
    def body(i, c):
        return c * 2 + i

    ours = lax.fori_loop(lower, upper, body, 1)
    assert_like_jax(ours, jax.lax.fori_loop(lower, upper, body, 1))


def test_fori_loop_with_static_bounds_is_a_scan():
    program = ri.make_program(lambda x: lax.fori_loop(0, 4, lambda i, c: c + i, x))(np.int32(1))
    ri.check_program(program)
    assert "scan" in primitives_in(program) and "while" not in primitives_in(program)
    (eqn,) = [e for e in program.eqns if e.primitive is scan_p]
    assert eqn.params["length"] == 4 and eqn.params["unroll"] == 1


def test_fori_loop_passes_unroll_to_the_scan():
    program = ri.make_program(lambda x: lax.fori_loop(0, 6, lambda i, c: c + i, x, unroll=4))(
        np.int32(1)
    )
    (eqn,) = [e for e in program.eqns if e.primitive is scan_p]
    assert eqn.params["unroll"] == 4


def test_fori_loop_with_traced_bounds_is_a_while():
    def fn(n, x):
        return lax.fori_loop(0, n, lambda i, c: c + i, x)

    program = ri.make_program(fn)(np.int32(5), np.int32(1))
    ri.check_program(program)
    assert "while" in primitives_in(program) and "scan" not in primitives_in(program)
    expected = jax.jit(lambda n, x: jax.lax.fori_loop(0, n, lambda i, c: c + i, x))
    assert_like_jax(ri.jit(fn)(np.int32(5), np.int32(1)), expected(np.int32(5), np.int32(1)))


@pytest.mark.parametrize("traced", [False, True])
def test_fori_loop_index_is_weak_like_jax(traced):
    seen = {}

    def make(lax_mod, key):
        def body(i, c):
            seen[key] = (i.dtype, i.weak_type)
            return c

        if traced:
            return lambda n: lax_mod.fori_loop(0, n, body, np.float32(0))
        return lambda n: lax_mod.fori_loop(0, 3, body, np.float32(0))

    ri.jit(make(lax, "ours"))(np.int32(3))
    jax.jit(make(jax.lax, "jax"))(np.int32(3))
    assert seen["ours"] == seen["jax"]


def test_fori_loop_array_bounds_are_static():
    ours = lax.fori_loop(np.int32(0), ri.device_put(np.int32(4)), lambda i, c: c + i, 0)
    assert int(ours) == 6


def test_fori_loop_mixed_weak_and_strong_bounds():
    def fn(n):
        return lax.fori_loop(np.int16(0), n, lambda i, c: c + 1, np.int32(0))

    with pytest.raises(
        TypeError, match="lower and upper arguments to fori_loop must have equal types"
    ):
        ri.jit(fn)(np.int32(3))
    weak_lower = ri.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + 1, np.int32(0)))
    assert int(weak_lower(np.int16(3))) == 3


def test_error_fori_unroll_with_traced_bounds():
    with pytest.raises(
        ValueError,
        match="Can only use `unroll` in `fori_loop` if the loop bounds are statically known",
    ):
        ri.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c, 0.0, unroll=2))(np.int32(3))


def test_error_fori_body_not_callable():
    with pytest.raises(TypeError, match="body_fun argument should be callable"):
        lax.fori_loop(0, 3, None, 0.0)


# --- cond -------------------------------------------------------------------------------


@pytest.mark.parametrize("pred", [True, False, 0, 3, 0.0, -0.5, np.int32(2), np.float32(0)])
def test_cond_matches_jax(pred):
    def true_fun(x, y):
        return {"sum": x + y, "x": x}

    def false_fun(x, y):
        return {"sum": x - y, "x": x * 2}

    args = (np.float32(3), np.arange(3, dtype=np.float32))
    ours = lax.cond(pred, true_fun, false_fun, *args)
    assert_like_jax(ours, jax.lax.cond(pred, true_fun, false_fun, *args))
    jitted = ri.jit(lambda p, x, y: lax.cond(p, true_fun, false_fun, x, y))
    assert_like_jax(jitted(pred, *args), ours)


def test_cond_program_has_both_branches():
    program = ri.make_program(lambda p, x: lax.cond(p, lambda v: v + 1, lambda v: v * 2, x))(
        True, np.float32(1)
    )
    ri.check_program(program)
    (eqn,) = [e for e in program.eqns if e.primitive is cond_p]
    false_branch, true_branch = eqn.params["branches"]
    assert primitives_in(false_branch) == ["mul"] and primitives_in(true_branch) == ["add"]


def test_cond_branches_capturing_different_outer_values():
    def fn(p, a, b, x):
        return lax.cond(p, lambda v: v + a, lambda v: v * b, x)

    args = (np.float32(10), np.float32(3), np.float32(2))
    program = ri.make_program(fn)(True, *args)
    ri.check_program(program)
    (eqn,) = [e for e in program.eqns if e.primitive is cond_p]
    assert len(eqn.inputs) == 4  # index, a, b, x: every branch takes both captures
    assert float(ri.jit(fn)(True, *args)) == 12.0
    assert float(ri.jit(fn)(False, *args)) == 6.0


@pytest.mark.parametrize(
    ("true_out", "false_out"),
    [(1.0, np.float32(2)), (np.float32(1), 2.0), (1.0, 2.0), (np.float32(1), np.float32(2))],
)
@pytest.mark.parametrize("pred", [True, False])
def test_cond_weak_types_follow_false_fun_like_jax(true_out, false_out, pred):
    ours = lax.cond(pred, lambda: true_out, lambda: false_out)
    assert_like_jax(ours, jax.lax.cond(pred, lambda: true_out, lambda: false_out))


def test_cond_nested_in_scan_matches_jax():
    def make(lax_mod):
        def body(c, x):
            return lax_mod.cond(x > 0, lambda v: v + x, lambda v: v - 1, c), c

        return lambda xs: lax_mod.scan(body, np.float32(0), xs)

    xs = np.asarray([1, -2, 3, -4, 5], np.float32)
    assert_like_jax(make(lax)(xs), make(jax.lax)(xs))


def test_error_cond_output_types_name_both_branches():
    with pytest.raises(TypeError) as info:
        lax.cond(True, lambda: np.zeros(3, np.float32), lambda: np.zeros(4, np.float32))
    message = str(info.value)
    assert "false_fun" in message and "true_fun" in message
    assert "float32[3]" in message and "float32[4]" in message


def test_error_cond_dtypes_name_the_leaf():
    with pytest.raises(
        TypeError,
        match=r"The output of true_fun at path \[1\] has type int32\[\] but the corresponding "
        r"output of false_fun has type float32\[\], so the dtypes do not match",
    ):
        lax.cond(True, lambda: (np.int32(0), np.int32(1)), lambda: (np.int32(0), np.float32(1)))


def test_error_cond_output_structures():
    with pytest.raises(TypeError, match="same pytree structure") as info:
        lax.cond(True, lambda: (1.0, 2.0), lambda: 1.0)
    assert "false_fun" in str(info.value) and "true_fun" in str(info.value)


@pytest.mark.parametrize(
    ("pred", "pattern"),
    [
        (None, "cond predicate is None"),
        ([True], r"Pred must be a scalar, got \[True\] of type <class 'list'>"),
        (np.array([True, False]), r"Pred must be a scalar, got \[ True False\] of shape \(2,\)"),
        (np.complex64(1), "Pred type must be either boolean or number, got complex64"),
    ],
)
def test_error_cond_bad_pred(pred, pattern):
    with pytest.raises(TypeError, match=pattern):
        lax.cond(pred, lambda: 1.0, lambda: 2.0)


def test_error_cond_not_callable():
    with pytest.raises(TypeError, match="should be callable"):
        lax.cond(True, 1.0, lambda: 2.0)


# --- switch -----------------------------------------------------------------------------

BRANCHES = [lambda x: x + 1, lambda x: x * 10, lambda x: x - 100]


@pytest.mark.parametrize("index", [-5, -1, 0, 1, 2, 3, 7, np.int8(-2), np.uint8(200)])
def test_switch_clamps_the_index_like_jax(index):
    ours = lax.switch(index, BRANCHES, np.int32(5))
    assert_like_jax(ours, jax.lax.switch(index, BRANCHES, np.int32(5)))


@PROPERTY
@given(st.integers(-10, 10))
def test_switch_under_jit_matches_jax(index):
    def fn(i, x):
        return lax.switch(i, BRANCHES, x)

    ours = ri.jit(fn)(np.int32(index), np.int32(5))
    theirs = jax.jit(lambda i, x: jax.lax.switch(i, BRANCHES, x))(np.int32(index), np.int32(5))
    assert_like_jax(ours, theirs)


def test_switch_single_branch_is_just_called():
    program = ri.make_program(lambda i, x: lax.switch(i, [lambda v: v + 1], x))(
        np.int32(3), np.float32(1)
    )
    assert "cond" not in primitives_in(program)


def test_switch_weak_types_follow_branch_zero_like_jax():
    for outs in ([1.0, np.float32(2), 3.0], [np.float32(2), 1.0, 3.0]):
        fns = [lambda v=v: v for v in outs]
        assert_like_jax(lax.switch(1, fns), jax.lax.switch(1, fns))


def test_error_switch_output_types_name_both_branches():
    with pytest.raises(
        TypeError, match=r"(?s)switch branches must have equal output types.*branch1"
    ):
        lax.switch(1, [lambda: np.float32(0), lambda: np.int32(1)])


def test_error_switch_float_index():
    with pytest.raises(TypeError, match="Index type must be an integer, got 1.0 as float32"):
        lax.switch(1.0, BRANCHES, 1)


def test_error_switch_bool_index():
    with pytest.raises(TypeError, match="Index type must be an integer, got True as bool"):
        lax.switch(True, BRANCHES, 1)


def test_error_switch_vector_index():
    with pytest.raises(TypeError, match="Branch index must be scalar"):
        lax.switch(np.zeros(2, np.int32), BRANCHES, 1)


def test_error_switch_no_branches():
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(0, [], 1)


def test_error_switch_branch_not_callable():
    with pytest.raises(TypeError, match="sequence of callables"):
        lax.switch(0, [BRANCHES[0], 3], 1)


# --- the cond primitive ------------------------------------------------------------------


@pytest.mark.parametrize(("index", "branch"), [(0, 0), (1, 1), (2, 2), (3, 2), (-1, 2)])
def test_cond_primitive_runs_the_last_branch_when_out_of_range(index, branch):
    """StableHLO ``case``: an index outside [0, n) selects the last branch."""
    program = ri.make_program(lambda i, x: lax.switch(i, BRANCHES, x))(np.int32(0), np.int32(5))
    (eqn,) = [e for e in program.eqns if e.primitive is cond_p]
    (out,) = cond_p.bind(np.int32(index), np.int32(5), **eqn.params)
    assert int(out) == int(BRANCHES[branch](5))


def test_cond_primitive_rejects_bad_operands():
    program = ri.make_program(lambda i, x: lax.switch(i, BRANCHES, x))(np.int32(0), np.int32(5))
    (eqn,) = [e for e in program.eqns if e.primitive is cond_p]
    with pytest.raises(TypeError, match=r"cond: the index must be an int32 scalar, got i8\[\]"):
        cond_p.bind(np.int8(0), np.int32(5), **eqn.params)
    with pytest.raises(TypeError, match=r"branch 0 takes \(i32\[\]\) but the operands are"):
        cond_p.bind(np.int32(0), np.float32(5), **eqn.params)


def test_fori_loop_reuses_the_trace_of_the_same_body_as_jax_and_does_not_keep_it_alive():
    import gc
    import weakref

    counts = {}
    for lib in (ri, jax):
        traces = []

        def body(i, v, traces=traces):
            traces.append(1)
            return v + i

        def f(x, k, lib=lib, body=body):
            static = lib.lax.fori_loop(0, 3, body, x) + lib.lax.fori_loop(0, 5, body, x)
            dynamic = lib.lax.fori_loop(0, k, body, x) * 2 + lib.lax.fori_loop(0, k, body, x)
            return static, dynamic

        out = lib.jit(f)(np.float32(1), 4)
        np.testing.assert_array_equal([np.asarray(o) for o in out], [15.0, 21.0])
        counts[lib.__name__] = len(traces)
    assert counts["refimpl"] == counts["jax"] == 2

    def make():
        def body(i, v):
            return v + i

        return body

    body = make()
    alive = weakref.ref(body)
    assert float(ri.lax.fori_loop(0, 3, body, np.float32(1))) == 4.0
    del body
    gc.collect()
    assert alive() is None


# JAX 0.10.2 still accepts cond's older form cond(pred, true_operand,
# true_fun, false_operand, false_fun) (the fallback in lax.cond when the
# second argument is not callable), used throughout its own cond tests.
def _per_branch_operand_conds(api, np_, lax_):
    def fun(x, y, z):
        return lax_.cond(lax_.lt(x, 3), y, lambda y: y, z, lambda z: lax_.neg(z))

    y, z = np_.array([1, 2]), np_.array([3, 4])
    two_or_times = lambda x: lax_.cond(x < 3, None, lambda _: 2.0, x, lambda x: 2.0 * x)  # noqa: E731
    sin_or_cos = lambda x, w: lax_.cond(  # noqa: E731
        x < 3, None, lambda _: 2.0 * np_.sin(w), x, lambda x: 2.0 * np_.cos(x)
    )
    out = {
        "eager": [fun(np_.array(2), y, z), fun(np_.array(4), y, z)],
        "jit": api.jit(fun)(np_.array(4), y, z),
        "vmap unbatched pred": api.vmap(fun, (None, 0, 0))(np_.array(4), y, z),
        "vmap batched pred": api.vmap(fun, (0, 0, None))(np_.array([2, 4]), y, np_.array(5)),
        "tuple operands": lax_.cond(True, (0, 0), lambda x: (x[0], 0), (1, 1), lambda x: x),
        "jvp": [api.jvp(two_or_times, (x,), (x,)) for x in (3.14, 2.72)],
        "grad": [api.grad(two_or_times)(x) for x in (3.14, 2.72)],
        "jit grad": [api.grad(api.jit(sin_or_cos), (0, 1))(x, 5.8) for x in (3.14, 2.72)],
    }
    with api.disable_jit():  # the chosen branch's result as it returns it
        out["disable_jit"] = np_.asarray(two_or_times(3.14))
    return out


def test_cond_with_an_operand_per_branch_as_jax(backend):
    got = _per_branch_operand_conds(ri, rnp, lax)
    want = _per_branch_operand_conds(jax, jnp, jax.lax)
    assert_modes_same_as_jax(got, want, atol=1e-6)
    # not that form (one operand after a non-callable): still the TypeError
    for bad in (jax.lax.cond, lax.cond):
        with pytest.raises(TypeError, match="callable"):
            bad(True, 1.0, lambda x: x, 2.0)


# JAX's cond, while_loop and scan return an output that the branches or the
# body give back unchanged as that input itself (cond: the same operand in
# every branch; while_loop: a carry cond_fun does not read; scan: a carry,
# or an x as the y), so under vmap it keeps the input's batching: out_axes=None
# takes it when a batched predicate leaves it alone (JAX's
# test_cond_vmap_forwarding_doesnt_promote, test_while_readonly_carry_optimization,
# test_scan_readonly_carry_optimization).
def _forwarding_programs(api, np_, lax_):
    def cond_pair(x, y):
        return lax_.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y)

    def while_readonly(w, x, c_max):
        _, x, w = lax_.while_loop(
            lambda v: v[0] < c_max, lambda v: (v[0] + 1, v[1] @ v[2], v[2]), (0, x, w)
        )
        return w, x

    def scan_in_cond(x, y):
        def g(_, y):
            return lax_.scan(lambda y, _: (y, None), y, None, length=1)[0]

        return lax_.cond(x < 0, g, g, x, y)

    def scan_ys_are_xs(x, xs):
        return lax_.cond(
            x < 1, lambda xs: lax_.scan(lambda c, x: (c, x), 0.0, xs)[1], lambda xs: xs, xs
        )

    w = np_.ones((2, 2))
    return {
        "cond": api.vmap(cond_pair, in_axes=(0, None), out_axes=(0, None))(
            np_.arange(3), np_.array(3.0)
        ),
        "cond of a Python scalar": api.vmap(cond_pair, in_axes=(0, None), out_axes=(0, None))(
            np_.arange(3), 3.0
        ),
        "while": api.vmap(while_readonly, in_axes=(None, 0, 0), out_axes=(None, 0))(
            w, np_.ones((4, 2)), np_.arange(4)
        ),
        "scan carry": api.vmap(scan_in_cond, (0, None), None)(np_.arange(3.0), 3.0),
        "scan ys": api.vmap(scan_ys_are_xs, (0, None), None)(np_.arange(3.0), np_.ones(4)),
        "jit": api.jit(api.vmap(cond_pair, in_axes=(0, None), out_axes=(0, None)))(
            np_.arange(3), np_.array(3.0)
        ),
        "grad": api.grad(lambda y: api.vmap(scan_in_cond, (0, None), None)(np_.arange(3.0), y))(
            2.0
        ),
    }


def test_outputs_returned_unchanged_keep_their_batching_as_jax(backend):
    got = _forwarding_programs(ri, rnp, lax)
    want = _forwarding_programs(jax, jnp, jax.lax)
    assert_modes_same_as_jax(got, want)
    y = rnp.array(3.0)  # the operand itself, as JAX's
    assert (
        ri.vmap(
            lambda x: lax.cond(x < 3, lambda x, y: (x, y), lambda x, y: (-x, y), x, y)[1],
            out_axes=None,
        )(rnp.arange(3))
        is y
    )
