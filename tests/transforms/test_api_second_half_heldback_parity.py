"""Programs from the second half of JAX's tests/api_test.py (RematTest and
its optimization barrier, JaxprTest (``str`` of an equation), DCETest, the
batched ``lax.map``, NamedCallTest, CustomVmapTest's ``sequential_vmap``,
the integer-overflow checks), run on refimpl's ref and pjrt backends and
compared with JAX 0.10.2 live: values, dtypes, weak types and exception
classes, and what ``saved_residuals`` reports.

The held-back run's tally and what stays different are in
docs/parity_audit.md ("Lane APIB: JAX's api_test.py, second half, held back").
"""

from __future__ import annotations

import re
import types
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import custom_batching as jax_custom_batching
from jax import lax as jlax
from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals
from jax.ad_checkpoint import checkpoint_name as jax_checkpoint_name

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax
from refimpl.ad_checkpoint import residual_sources
from refimpl.core import check_program
from refimpl.tracing import eval_program_bind
from refimpl.transforms.dce import dce_program
from tests.helpers.parity import assert_same_as_jax

JAX = types.SimpleNamespace(
    api=jax, np=jnp, lax=jlax, name=jax_checkpoint_name, batching=jax_custom_batching
)
REF = types.SimpleNamespace(
    api=ri, np=rnp, lax=rlax, name=ri.ad_checkpoint.checkpoint_name, batching=ri.custom_batching
)

# ---------------------------------------------------------------------------
# saved_residuals: constants, and a jit's forwarded arguments
# ---------------------------------------------------------------------------


def _residuals_program(case: str, m: types.SimpleNamespace):
    """(function, arguments) of api_test's saved_residuals checks and the
    variants the held-back run found different."""
    np_ = m.np

    def utility(x, y):
        x1, x2 = x
        z = m.name(np_.sin(3.0), "z")
        return z * ((x1 * x2) * y) * np.array([3.0])

    const = m.np.arange(3.0)
    programs = {
        # api_test's test_saved_residuals_utility (a NumPy constant: JAX saves it)
        "utility": (utility, ((2.0, 3.0), 4.0)),
        # ... and _jit: the jit forwards its arguments, saved as themselves
        "utility_jit": (m.api.jit(utility), ((2.0, 3.0), 4.0)),
        "closed_over_array": (lambda x: x * const, (2.0,)),
        "numpy_vector": (lambda x: np_.sin(x * np.ones(3, np.float32)), (2.0,)),
        "jit_numpy_vector": (m.api.jit(lambda x: x * np.ones(3, np.float32)), (np_.ones(3),)),
        "jit_forwards_both": (m.api.jit(lambda x, y: x * y), (np_.ones(3), np_.ones(3))),
        "jit_forwards_one": (m.api.jit(lambda x, y: np_.sin(x) * y), (1.0, 2.0)),
        "numpy_scalar": (lambda x: x * np.float32(3.0), (2.0,)),
        "names_denylist": (
            m.api.checkpoint(
                _named_product(m), policy=m.api.checkpoint_policies.save_any_names_but_these("w")
            ),
            (1.0,),
        ),
    }
    return programs[case]


def _named_product(m):
    def f(x):
        y = m.name(m.np.multiply(2.0, 2.0), "y")
        z = m.name(m.np.multiply(2.0, 2.0), "z")
        w = m.name(m.np.multiply(2.0, 2.0), "w")
        return (((x * y) * z) * w) * m.np.multiply(2.0, 2.0)

    return f


def _words(source: str) -> str:
    # JAX appends the equation's source line ("from file.py:12 (f)"), empty
    # for a jit's output; refimpl's equations carry no source lines
    return re.sub(r" from(\s*| \S*\.py:\d+.*)$", "", source)


def _listing(pairs) -> list[tuple]:
    return [(tuple(a.shape), str(a.dtype), _words(s)) for a, s in pairs]


RESIDUAL_CASES = [
    "utility",
    "utility_jit",
    "closed_over_array",
    "numpy_vector",
    "jit_numpy_vector",
    "jit_forwards_both",
    "jit_forwards_one",
    "numpy_scalar",
    "names_denylist",
]


@pytest.mark.parametrize("case", RESIDUAL_CASES)
def test_saved_residuals_list_what_jax_saves(backend, case):
    """The residuals in JAX's order, with their sources: a constant array the
    linear part reads (NumPy or a closed-over concrete array, also inside a
    jit) is saved ``from a constant``; a jit's residual output that is its
    input is that input (``from the argument x``); a jit's computed one is an
    ``output of jitted function '<name>'``."""
    fun, args = _residuals_program(case, JAX)
    want = _listing(jax_saved_residuals(fun, *args))
    fun, args = _residuals_program(case, REF)
    assert _listing(residual_sources(fun, *args)) == want


# ---------------------------------------------------------------------------
# dead-code elimination of scan carries and cond outputs (DCETest)
# ---------------------------------------------------------------------------


def _dce_program(case: str, m: types.SimpleNamespace):
    """(function, arguments) of api_test's DCETest programs."""
    np_, lax_ = m.np, m.lax

    def carry_chain(lst):
        def body(c, _):
            return [c[0]] + [c1 + c2 for c1, c2 in zip(c[:-1], c[1:])], None

        return lax_.scan(body, lst, None, length=len(lst))[0]

    hidden = [1, 2, 3, 5, 8]

    def carry_hidden(lst):
        def body(c, _):
            _ = np_.sin(np.array([3.0, 1.0, 4.0]))
            sub = [c[i] for i in hidden]
            sub = [sub[0]] + [a * b for a, b in zip(sub[:-1], sub[1:])]
            new = list(c)
            for i, e in zip(hidden, sub):
                new[i] = e
            return new, None

        return lax_.scan(body, lst, np.arange(len(lst), dtype="float32"))[0]

    def rotate(lst):
        return lax_.scan(lambda c, _: ([c[-1], *c[:-1]], c[-1]), lst, None, length=len(lst))[1]

    def cumprod(xs):
        return lax_.scan(lambda c, x: (c * x, c), np.float32(1.0), xs)

    def unused_ys(xs):
        # an unused computed y leaves the loop with its equations
        return lax_.scan(lambda c, x: (c * x, (np_.sin(c) * x, c)), np.float32(1.0), xs)

    def weak_init_as_y(xs):
        # a weak init the body returns strong and as a y (refimpl's retyped body)
        return lax_.scan(lambda c, x: (np_.sin(c) * x, c), 1.0, xs)

    def cond(second):
        def f(x1, x2):
            return lax_.cond(
                x1 > 0, lambda a, b: (np_.sin(a), np_.sin(b)), lambda a, b: second(a, b), x1, x2
            )

        return f

    one = np.float32(1.0)
    programs = {
        "scan_carry_chain": (carry_chain, ([1.0, 2.0, 3.0, 4.0],)),
        "scan_carry_hidden": (carry_hidden, ([float(i) for i in range(1, 11)],)),
        "scan_extensive_out": (rotate, ([1.0, 2.0, 3.0, 4.0],)),
        "scan_extensive_in": (cumprod, (np.arange(1.0, 5.0, dtype="float32"),)),
        "scan_unused_ys": (unused_ys, (np.arange(1.0, 5.0, dtype="float32"),)),
        "scan_weak_init_as_y": (weak_init_as_y, (np.arange(1.0, 5.0, dtype="float32"),)),
        "cond_same": (cond(lambda a, b: (np_.sin(a), np_.sin(b))), (one, one)),
        "cond_first": (cond(lambda a, b: (np_.sin(a), np_.sin(a))), (one, one)),
        "cond_swap": (cond(lambda a, b: (np_.sin(b), np_.sin(a))), (one, one)),
    }
    return programs[case]


# case -> the used-output patterns api_test tries
DCE_USES = {
    "scan_carry_chain": [(1, 1, 1, 0), (0, 0, 1, 0), (1, 1, 0, 0), (0, 0, 0, 1)],
    "scan_carry_hidden": [
        tuple(int(i == 8) for i in range(10)),
        tuple(int(i in (6, 7, 9)) for i in range(10)),
        tuple(int(i == 3) for i in range(10)),
    ],
    "scan_extensive_out": [(1,), (0,)],
    "scan_extensive_in": [(1, 0), (0, 1), (0, 0)],
    "scan_unused_ys": [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0)],
    "scan_weak_init_as_y": [(1, 0), (0, 1)],
    "cond_same": [(1, 1), (0, 0), (1, 0)],
    "cond_first": [(1, 0)],
    "cond_swap": [(1, 0)],
}


# refimpl's scan body takes its carry with the types it returns (docs/semantics.md,
# C6): a weak init returned strong is converted back to weak inside, one
# equation JAX's body has not
RETYPED_CARRY_EQNS = {"scan_weak_init_as_y": 1}


def _jax_dce(fun, args, used):
    from jax._src import core as jcore
    from jax._src.interpreters import partial_eval as pe

    jaxpr = jax.make_jaxpr(fun)(*args).jaxpr
    pruned, used_inputs = pe.dce_jaxpr(jaxpr, list(used))
    n_eqns = len(pruned.eqns) + sum(len(s.eqns) for s in jcore.subjaxprs(pruned))
    return [bool(u) for u in used_inputs], n_eqns


@pytest.mark.parametrize(
    "case,used", [(c, u) for c, uses in DCE_USES.items() for u in uses], ids=str
)
def test_dce_prunes_scan_carries_and_cond_outputs_as_jax(backend, case, used):
    """A scan carry is live when a used output needs it through the loop (a
    fixpoint); an unused cond output goes from every branch, and an operand
    no branch reads leaves the cond. The same inputs stay used, the same
    number of equations (sub-programs included) remain, and the pruned
    program computes the used outputs."""
    want_used, want_eqns = _jax_dce(*_dce_program(case, JAX), used)
    fun, args = _dce_program(case, REF)
    program = ri.make_jaxpr(fun)(*args)
    pruned, used_inputs = dce_program(program, [bool(u) for u in used])
    check_program(pruned)
    assert used_inputs == want_used
    assert sum(1 for _ in pruned.walk_eqns()) == want_eqns + RETYPED_CARRY_EQNS.get(case, 0)
    flat = [rnp.asarray(a) for a in jax.tree.leaves(args)]
    full = ri.jit(lambda *a: eval_program_bind(program, list(a)))(*flat)
    kept = [a for a, u in zip(flat, used_inputs) if u]
    got = ri.jit(lambda *a: eval_program_bind(pruned, list(a)))(*kept)
    want = [o for o, u in zip(full, used) if u]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


@pytest.mark.parametrize("kind", ["scan", "cond"])
def test_checkpoint_saves_nothing_of_a_dead_carry(backend, kind):
    """everything_saveable of a scan with a carry nothing reads (a cond with
    an output nothing reads): JAX saves what the live part needs only."""

    def fun(m):
        def body(x):
            if kind == "scan":
                step = lambda c, _: ((m.np.sin(c[0]), m.np.cos(c[1]) * c[0]), None)  # noqa: E731
                return m.lax.scan(step, (x, x), None, length=3)[0][0]
            live = lambda x: (m.np.sin(x), m.np.exp(m.np.cos(x)))  # noqa: E731
            return m.lax.cond(x > 0, live, lambda x: (x, x), x)[0]

        return m.api.checkpoint(body, policy=m.api.checkpoint_policies.everything_saveable)

    want = [(tuple(a.shape), str(a.dtype)) for a, _ in jax_saved_residuals(fun(JAX), 2.0)]
    got = [(tuple(a.shape), str(a.dtype)) for a, _ in residual_sources(fun(REF), 2.0)]
    assert got == want


# a checkpointed scan's unused ys: dropped, the weak init's cotangent kept weak
_UNUSED_Y_BODIES = {
    "sin(c)*x, c": lambda np_: lambda c, x: (np_.sin(c) * x, c),
    "c*x+sin(c), c": lambda np_: lambda c, x: (c * x + np_.sin(c), c),
    "c*x, c": lambda np_: lambda c, x: (c * x, c),
}


def _checkpointed_carry(m, name, policy=None):
    body = _UNUSED_Y_BODIES[name](m.np)
    xs = np.arange(1.0, 4.0, dtype=np.float32)
    return m.api.checkpoint(lambda c: m.lax.scan(body, c, xs)[0], policy=policy)


@pytest.mark.parametrize("name", sorted(_UNUSED_Y_BODIES))
def test_checkpoint_drops_unused_ys_keeping_weak_types(backend, name):
    """DCE drops a checkpointed scan's unused ys (JAX saves nothing for
    them); a weak init the body returns as such a y keeps JAX's weak
    cotangent (refimpl's transpose decides it from the body's other uses)."""
    for jit in (False, True):
        run = lambda m, f, jit=jit: m.api.jit(m.api.grad(f)) if jit else m.api.grad(f)  # noqa: E731
        got = run(REF, _checkpointed_carry(REF, name))(1.0)
        want = run(JAX, _checkpointed_carry(JAX, name))(1.0)
        assert_same_as_jax(got, want, atol=1e-6)
    saveable = "everything_saveable"
    want = jax_saved_residuals(
        _checkpointed_carry(JAX, name, getattr(jax.checkpoint_policies, saveable)), 1.0
    )
    got = residual_sources(
        _checkpointed_carry(REF, name, getattr(ri.checkpoint_policies, saveable)), 1.0
    )
    assert [(tuple(a.shape), str(a.dtype)) for a, _ in got] == [
        (tuple(a.shape), str(a.dtype)) for a, _ in want
    ]


def _grad_of_one_carry(m, jit):
    xs = np.arange(1.0, 4.0, dtype=np.float32)
    body = lambda c, x: ((c[0] * x, m.np.sin(c[1])), c)  # noqa: E731
    carry = m.api.checkpoint(lambda c: m.lax.scan(body, c, xs)[0])
    grad = m.api.grad(lambda c: carry(c)[0])
    return (m.api.jit(grad) if jit else grad)((1.0, 2.0))


@pytest.mark.parametrize("jit", [False, True])
def test_checkpoint_transpose_drops_outputs_of_zero_cotangent(backend, jit):
    """grad of one carry of a checkpointed scan: JAX's linear program has no
    tangent path for the other carry (its ys dropped, the carry dead), so its
    cotangent is a zero, +0, not 0 * cos(...) = -0 through the loop."""
    got, want = _grad_of_one_carry(REF, jit), _grad_of_one_carry(JAX, jit)
    assert_same_as_jax(got, want, atol=0)
    assert [np.signbit(np.asarray(g)) for g in got] == [np.signbit(np.asarray(w)) for w in want]


# ---------------------------------------------------------------------------
# str of one equation (JaxprTest's test_eqn_repr_with_no_lhs)
# ---------------------------------------------------------------------------


def _eqn_texts(m):
    x = np.float32(1.0)
    program = m.api.make_jaxpr(lambda x, y: m.np.sin(x) * y)(x, x)

    def printed(x):
        m.api.debug.print("{}", x)
        return x

    callback = m.api.make_jaxpr(printed)(np.int32(0)).eqns[0]
    name = str(callback.primitive.name)
    text = str(callback)
    return [str(e) for e in program.eqns], text.startswith(name + "["), " = " in text


def test_str_of_an_equation_is_its_listing_line_as_jax():
    """``str(eqn)``: ``a:f32[] = sin b``, the variables named afresh; one
    without outputs (a debug callback) is its right-hand side alone."""
    assert _eqn_texts(REF) == _eqn_texts(JAX)


# ---------------------------------------------------------------------------
# the recomputation's optimization barrier (RematTest's no_cse_widget tests)
# ---------------------------------------------------------------------------


def _hlo_barriers(m, variant):
    nothing = lambda *_, **__: False  # noqa: E731
    make = {
        "remat": m.api.remat,
        "policy": partial(m.api.remat, policy=nothing),
        "checkpoint": partial(m.api.checkpoint, policy=nothing),
        "no_prevent_cse": partial(m.api.remat, prevent_cse=False),
    }[variant]
    g = make(lambda x: (m.lax.sin(m.lax.sin(x)), 3.0))
    f = lambda x: g(x)[0]  # noqa: E731

    def has(fun):
        text = m.api.jit(fun).lower(2.0).as_text("hlo")
        return ("opt-barrier" in text, "while" in text, "conditional" in text)

    return {"primal": has(f), "grad": has(m.api.grad(f))}


@pytest.mark.parametrize("variant", ["remat", "policy", "checkpoint", "no_prevent_cse"])
def test_recomputation_reads_through_a_barrier_as_jax(backend, variant):
    """With prevent_cse (the default), jit(grad(f))'s HLO reads the
    recomputation's operands through an optimization barrier, so XLA cannot
    merge it with the forward pass; the primal function has none."""
    assert _hlo_barriers(REF, variant) == _hlo_barriers(JAX, variant)


# ---------------------------------------------------------------------------
# programs that agree: kept so that they stay so
# ---------------------------------------------------------------------------

HI = "highest"


def _sum(m, f):
    return lambda *a: m.np.sum(f(*a))


def _scan_sin(m, policy):
    to_scan = lambda c, _: (m.np.sin(c), m.np.sin(c))  # noqa: E731
    return m.api.checkpoint(
        lambda x: _sum(m, lambda x: m.lax.scan(to_scan, x, None, length=3)[1])(x), policy=policy
    )


def _save(prim_name):
    return lambda prim, *_, **__: str(prim) == prim_name


def _funky_cond(m, policy):
    """api_test's remat_of_cond_funky_custom_jvp: a custom_jvp whose rule
    calls a jit, under a cond, checkpointed."""

    @m.api.custom_jvp
    def sin(x):
        return m.np.sin(x)

    @sin.defjvp
    def _(p, t):
        y, c = m.api.jit(lambda: (m.np.sin(p[0]), m.np.cos(p[0])))()
        return y, c * t[0]

    apply = lambda x: m.lax.cond(x.sum() > -m.np.inf, sin, lambda x: x, x)  # noqa: E731
    return m.api.checkpoint(apply, policy=policy)


def _dots_in_scan(m):
    """api_test's remat_checkpoint_dots_inside_scan."""

    def f(W):
        @partial(m.api.remat, policy=m.api.checkpoint_policies.checkpoint_dots)
        def g(x):
            for _ in range(3):
                x = m.np.sin(m.np.dot(x, W, precision=HI))
            return x

        return m.lax.scan(lambda x, _: (g(x), None), m.np.ones((5,)), None, length=2)[0]

    return _sum(m, f)


def _while_sin(m):
    def f(x):
        return m.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, m.np.sin(c[1])), (0, x))[1]

    return m.api.remat(f)


def _programs(m):
    """name -> thunk of a result, per library."""
    cp = m.api.checkpoint_policies
    api = m.api
    w = np.full((5, 5), 0.1, np.float32)
    return {
        "remat_of_scan_nothing": lambda: api.grad(_scan_sin(m, cp.nothing_saveable))(3.0),
        "remat_of_scan_save_cos": lambda: api.grad(api.grad(_scan_sin(m, _save("cos"))))(3.0),
        "remat_of_scan_everything": lambda: api.jit(api.grad(_scan_sin(m, cp.everything_saveable)))(
            3.0
        ),
        "funky_cond_save_sin": lambda: api.grad(api.grad(_funky_cond(m, _save("sin"))))(3.0),
        "funky_cond_nothing": lambda: api.linearize(_funky_cond(m, cp.nothing_saveable), 4.0)[1](
            1.0
        ),
        "dots_inside_scan_grad": lambda: api.grad(_dots_in_scan(m))(w),
        "remat_of_while_linearize": lambda: api.linearize(_while_sin(m), 3.0)[1](1.0),
        "batch_map_remainder": lambda: m.lax.map(lambda x: x * 2.0, m.np.arange(6.0), batch_size=4),
        "batch_map_grad": lambda: api.grad(lambda xs: m.lax.map(m.np.sin, xs, batch_size=4).sum())(
            m.np.arange(6.0)
        ),
        "batch_map_tree": lambda: m.lax.map(
            lambda x: {"b": x["a"] ** 2}, {"a": np.arange(16)}, batch_size=8
        ),
        "named_call_grad": lambda: api.grad(api.named_call(m.np.sum, name="test"))(
            m.np.array([1.0])
        ),
        "named_call_vmap": lambda: api.vmap(api.named_call(m.np.sum, name="test"))(
            m.np.array([1.0])
        ),
        "sequential_vmap_mixed": lambda: api.vmap(
            m.batching.sequential_vmap(lambda x, y: x + y), in_axes=(0, None)
        )(m.np.arange(3.0), 4.0),
    }


PROGRAMS = sorted(_programs(JAX))


@pytest.mark.parametrize("name", PROGRAMS)
def test_held_back_programs_agree(backend, name):
    want = _programs(JAX)[name]()
    got = _programs(REF)[name]()
    assert jax.tree.structure(got) == jax.tree.structure(want)
    assert_same_as_jax(got, want, rtol=2e-6, atol=1e-6)


# ---------------------------------------------------------------------------
# Primitive.impl is the function, so its monkeypatching idiom counts calls
# (RematTest's test_remat_basic)
# ---------------------------------------------------------------------------


def _impl_calls_of_linear_function(m, remat_variant):
    remat = {
        "remat": m.api.remat,
        "policy": partial(m.api.remat, policy=lambda *_, **__: False),
        "checkpoint": partial(m.api.checkpoint, policy=lambda *_, **__: False),
    }[remat_variant]
    g = remat(lambda x: (m.lax.sin(m.lax.sin(x)), 3.0))
    _, f_lin = m.api.linearize(lambda x: g(x)[0], 2.0)
    calls = {"sin": 0, "cos": 0}
    saved = {name: getattr(m.lax, f"{name}_p").impl for name in calls}

    def counting(name):
        def impl(*args, **params):
            calls[name] += 1
            return saved[name](*args, **params)

        return impl

    try:
        for name in calls:
            getattr(m.lax, f"{name}_p").def_impl(counting(name))
        tangent = f_lin(3.0)
    finally:
        for name, impl in saved.items():
            getattr(m.lax, f"{name}_p").def_impl(impl)
    return calls, float(tangent)


@pytest.mark.parametrize("variant", ["remat", "policy", "checkpoint"])
def test_linear_function_of_a_remat_recomputes_once(backend, variant):
    """``old = p.impl; p.def_impl(counting(old))`` (JAX's Primitive.impl is
    an attribute): the linear function of a remat recomputes ``sin`` once and
    evaluates ``cos`` twice, as JAX's."""
    got_calls, got = _impl_calls_of_linear_function(REF, variant)
    want_calls, want = _impl_calls_of_linear_function(JAX, variant)
    assert got_calls == want_calls
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def _overflow(m, how):
    big = int(np.iinfo(np.int32).max) + 1
    return {
        "jit_identity": lambda: m.api.jit(lambda x: x)(big),
        "jit_closure": lambda: m.api.jit(lambda x: m.api.jit(lambda: x + 0)())(big),
        "asarray": lambda: m.np.asarray(big),
        "device_put": lambda: m.api.device_put(-big - 1),
    }[how]


def _raised(thunk):
    try:
        thunk()
    except Exception as error:
        return type(error).__name__
    return None


@pytest.mark.parametrize("how", ["jit_identity", "jit_closure", "asarray", "device_put"])
def test_integer_overflow_is_jax_error(backend, how):
    want = _raised(_overflow(JAX, how))
    assert want == "OverflowError"
    assert _raised(_overflow(REF, how)) == want


def _bool_of_remat_argument(m):
    @partial(m.api.remat, static_argnums=(1,))
    def g(x, _):
        return x if x > 0 else m.np.sin(x)

    try:
        g(3.0, 1.0)
    except Exception as error:
        return type(error).__name__, bool(re.search(r"argument x\b", str(error)))
    return None


def test_remat_concreteness_error_is_jax_class(backend):
    """JAX's class, and the message names the argument (``x``), as JAX's and
    as refimpl's jit's do."""
    want = _bool_of_remat_argument(JAX)
    assert want == ("TracerBoolConversionError", True)
    assert _bool_of_remat_argument(REF) == want
