"""checkpoint / remat with policies, checkpoint_name, custom_vjp optimize_remat,
and dead-code elimination, against JAX."""

from __future__ import annotations

from collections import Counter

import jax
import jax._src.ad_checkpoint as jax_ad_checkpoint
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.ad_checkpoint import checkpoint_name, remat_p, saved_residuals
from refimpl.primitives.base import Primitive
from refimpl.transforms.dce import dce_program
from tests.helpers.parity import assert_modes_same_as_jax

RNG = np.random.RandomState(0)
X = RNG.randn(4, 5).astype(np.float32)
W = (RNG.randn(5, 5) / 3).astype(np.float32)


def _close(got, want, tol=2e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def _mlp(np_, name):
    def f(x, w):
        for i in range(3):
            h = name(x @ w, f"dot{i}")
            x = np_.sin(h) * 2.0 + np_.exp(-x)
        return np_.sum(x * x)

    return f


R_F = _mlp(rnp, checkpoint_name)
J_F = _mlp(jnp, jax.ad_checkpoint.checkpoint_name)

POLICIES = [
    ("none", lambda cp: None),
    ("nothing_saveable", lambda cp: cp.nothing_saveable),
    ("everything_saveable", lambda cp: cp.everything_saveable),
    ("dots_saveable", lambda cp: cp.dots_saveable),
    ("dots_with_no_batch_dims_saveable", lambda cp: cp.dots_with_no_batch_dims_saveable),
    ("save_only_these_names", lambda cp: cp.save_only_these_names("dot0", "dot2")),
    ("save_anything_except_these_names", lambda cp: cp.save_anything_except_these_names("dot1")),
    ("save_any_names_but_these", lambda cp: cp.save_any_names_but_these("dot1")),
]


@pytest.mark.parametrize("name,make", POLICIES, ids=[p[0] for p in POLICIES])
def test_policy_gradients_and_saved_residuals_match_jax(name, make):
    rf = ri.checkpoint(R_F, policy=make(ri.checkpoint_policies))
    jf = jax.checkpoint(J_F, policy=make(jax.checkpoint_policies))
    got = ri.grad(rf, argnums=(0, 1))(X, W)
    want = jax.grad(jf, argnums=(0, 1))(X, W)
    for g, w in zip(got, want):
        _close(g, w)
    # jit and the pjrt backend agree too
    for backend in ("ref", "pjrt"):
        for g, w in zip(ri.jit(ri.grad(rf, argnums=(0, 1)), backend=backend)(X, W), want):
            _close(g, w)
    ours = saved_residuals(rf, X, W)
    theirs = jax_ad_checkpoint.saved_residuals(jf, X, W)
    assert sorted((a.shape, a.dtype) for a in ours) == sorted(
        (a.shape, np.dtype(a.dtype)) for a, _ in theirs
    ), name


def _checkpoint_eqns(program):
    return [e for e in program.eqns if e.primitive is remat_p]


def _remat_summary(eqns, primitive_of, program_of):
    """Per checkpoint equation: (differentiated, operands, dots in its body)."""
    return [
        (
            e.params["differentiated"],
            len(primitive_of(e)),
            sum(q.primitive.name == "dot_general" for q in program_of(e).eqns),
        )
        for e in eqns
    ]


@pytest.mark.parametrize("policy", [None, "dots_saveable", "everything_saveable"])
def test_program_shows_saved_values_and_recomputation(policy):
    # As JAX's: the forward pass (primal outputs and saved values) is inline,
    # not a checkpoint call; the one checkpoint equation is the backward pass,
    # taking the saved values and recomputing the rest (its dots: the 3
    # transposed ones, plus the 3 forward ones unless they were saved).
    pol = None if policy is None else getattr(ri.checkpoint_policies, policy)
    program = ri.make_program(ri.grad(ri.checkpoint(R_F, policy=pol)))(X, W)
    ri.check_program(program)
    ours = _remat_summary(
        _checkpoint_eqns(program), lambda e: e.inputs, lambda e: e.params["program"]
    )
    jpol = None if policy is None else getattr(jax.checkpoint_policies, policy)
    jaxpr = jax.make_jaxpr(jax.grad(jax.checkpoint(J_F, policy=jpol)))(X, W).jaxpr
    theirs = _remat_summary(
        [e for e in jaxpr.eqns if e.primitive.name == "remat2"],
        lambda e: e.invars,
        lambda e: e.params["jaxpr"],
    )
    assert ours == theirs


def test_checkpoint_is_transparent_to_values_jvp_and_vmap():
    rf = ri.checkpoint(R_F)
    _close(rf(X, W), J_F(X, W))
    _close(ri.jit(rf)(X, W), J_F(X, W))
    t = np.ones_like(X)
    _, tout = ri.jvp(lambda x: rf(x, W), (X,), (t,))
    _, tj = jax.jvp(lambda x: J_F(x, W), (X,), (t,))
    _close(tout, tj, 1e-4)
    xs = np.stack([X, 2 * X])
    got = ri.vmap(ri.grad(rf), in_axes=(0, None))(xs, W)
    want = jax.vmap(jax.grad(jax.checkpoint(J_F)), in_axes=(0, None))(xs, W)
    _close(got, want)
    # second order
    h = ri.grad(lambda s: ri.grad(rf)(s * X, W).sum())(1.5)
    hj = jax.grad(lambda s: jax.grad(jax.checkpoint(J_F))(s * X, W).sum())(1.5)
    _close(h, hj, 1e-3)


def test_static_argnums_and_closure():
    def f(x, n, w):
        for _ in range(n):
            x = rnp.tanh(x @ w)
        return x.sum()

    def fj(x, n, w):
        for _ in range(n):
            x = jnp.tanh(x @ w)
        return x.sum()

    got = ri.grad(ri.checkpoint(f, static_argnums=(1,)), argnums=(0, 2))(X, 3, W)
    want = jax.grad(jax.checkpoint(fj, static_argnums=(1,)), argnums=(0, 2))(X, 3, W)
    for g, w in zip(got, want):
        _close(g, w)
    # a closed-over differentiated value
    got = ri.grad(lambda w: ri.checkpoint(lambda x: f(x, 2, w))(X))(W)
    want = jax.grad(lambda w: jax.checkpoint(lambda x: fj(x, 2, w))(X))(W)
    _close(got, want)
    with pytest.raises(ValueError, match="static_argnums"):
        ri.grad(ri.checkpoint(f, static_argnums=(5,)))(X, 3, W)
    with pytest.raises(TypeError, match="policy"):
        ri.checkpoint(f, policy="dots")


_TRACES: list = []


def _traced_f(x, n):
    _TRACES.append(n)
    return rnp.sin(x) * n


def test_traced_once_per_types_and_statics():
    traces = _TRACES
    traces.clear()
    cf = ri.checkpoint(_traced_f, static_argnums=(1,))
    g = ri.grad(lambda x, n: cf(x, n).sum())
    for n in (2.0, 2.0, 3.0):
        _close(g(X, n), np.cos(X) * n)
    _close(g(X[0], 2.0), np.cos(X[0]) * 2.0)
    assert traces == [2.0, 3.0, 2.0]
    # a trace that captured a tracer is not kept (a cached Program would hold
    # a dead tracer): traced at every call (JAX keeps it and raises
    # UnexpectedTracerError at the second call)
    cell = {}
    cw = ri.checkpoint(lambda x: x * cell["w"])

    def h(w):
        cell["w"] = w
        return cw(X).sum()

    for w in (1.0, 2.0):
        _close(ri.grad(h)(w), X.sum())
    # as JAX, a closure's mutable state is not re-read: the first trace stands
    for m in (ri, jax):
        cell = {"w": 1.0}
        cw = m.checkpoint(lambda x, cell=cell: x * cell["w"])
        _close(m.grad(lambda x, cw=cw: cw(x).sum())(X), np.ones_like(X))
        cell["w"] = 3.0
        _close(m.grad(lambda x, cw=cw: cw(x).sum())(X), np.ones_like(X))


def test_traced_once_like_jax_counting_with_a_side_effect(backend):
    # JAX caches a checkpointed function's trace on the function (every
    # checkpoint(f) wrapper of it) and traces eagerly too; counts from JAX
    def run(m):
        count = [0]

        def f(x):
            count[0] += 1
            return m.numpy.sin(x) * x

        c = m.checkpoint(f)
        counts = []
        for call in (
            lambda: c(2.0),
            lambda: m.grad(c)(2.0),
            lambda: m.grad(m.checkpoint(f))(3.0),
            lambda: m.jit(lambda x: c(x))(np.float32(2)),
            lambda: m.vmap(c)(np.ones(3, np.float32)),
            lambda: m.jvp(c, (np.float32(1),), (np.float32(1),)),
        ):
            count[0] = 0
            for _ in range(10):
                call()
            counts.append(count[0])
        return counts

    assert run(ri) == run(jax)


def test_remat_alias_and_checkpoint_name_identity():
    # JAX 0.10.2's remat is a function of its own (named remat) calling checkpoint
    assert ri.remat.__name__ == jax.remat.__name__ == "remat"
    _close(checkpoint_name(X, "a"), X)
    prog = ri.make_program(lambda x: checkpoint_name(x, "a") * 2)(X)
    assert prog.eqns[0].primitive.name == "name" and prog.eqns[0].params["name"] == "a"


def test_dce_removes_dead_equations_and_inputs():
    def f(x, y):
        dead = rnp.exp(y) * 3.0  # noqa: F841
        return rnp.sin(x), rnp.cos(x) + y

    program = ri.make_program(f)(X, X)
    new, used = dce_program(program, [True, False])
    ri.check_program(new)
    assert used == [True, False]
    assert [e.primitive.name for e in new.eqns] == ["sin"]
    full, used = dce_program(program)
    assert used == [True, True] and len(full.eqns) == len(program.eqns) - 2


# --- custom_vjp(optimize_remat=True) ------------------------------------------------------

CALLS = {"impl": 0, "lowering": 0}

#: An opaque forward: (sin x, cos x) in one primitive that DCE cannot split.
#: Its hook counts evaluations (reference backend) and emissions into an
#: executable (pjrt: each emitted op runs once per execution).
opaque_p = Primitive("opaque_sincos", multiple_results=True)
opaque_p.def_abstract_eval(lambda x: [x, x])


@opaque_p.def_impl
def _opaque_impl(x):
    CALLS["impl"] += 1
    return [np.sin(x), np.cos(x)]


@opaque_p.def_lowering
def _opaque_lowering(ctx, x):
    CALLS["lowering"] += 1
    return [ctx.hlo.sine(x), ctx.hlo.cosine(x)]


opaque_p.def_batch(lambda args, dims: (opaque_p.bind(args[0]), [dims[0]] * 2))


def _sin_vjp(custom_vjp, sin, fwd_sincos, optimize_remat):
    f = custom_vjp(lambda x: sin(x))

    def fwd(x):
        y, c = fwd_sincos(x)
        return y, c

    f.defvjp(fwd, lambda c, g: (g * c * 0.5,), optimize_remat=optimize_remat)
    return f


XV = np.linspace(0.1, 1.2, 6).astype(np.float32)


def _loss(np_, checkpoint, f):
    return lambda x: np_.sum(checkpoint(lambda x: f(x) * 2.0)(x))


@pytest.mark.parametrize("optimize_remat,expected", [(False, 2), (True, 1)])
def test_optimize_remat_runs_residual_computation_once(optimize_remat, expected):
    f = _sin_vjp(ri.custom_vjp, rnp.sin, lambda x: opaque_p.bind(x), optimize_remat)
    fj = _sin_vjp(jax.custom_vjp, jnp.sin, lambda x: (jnp.sin(x), jnp.cos(x)), optimize_remat)
    want = jax.grad(_loss(jnp, jax.checkpoint, fj))(XV)
    loss = _loss(rnp, ri.checkpoint, f)
    # eager, reference backend
    CALLS["impl"] = 0
    _close(ri.grad(loss)(XV), want)
    assert CALLS["impl"] == expected
    # under jit the forward pass's primal computation is dead (grad drops the
    # loss's value) and is removed before the program runs, as JAX's lowering
    # removes it (JAX's jit(grad) of the same function emits one cosine and
    # no sine, with or without optimize_remat): once, on ref (the interpreter
    # runs the program once) and on pjrt (emitted into the executable once)
    CALLS["impl"] = 0
    _close(ri.jit(ri.grad(loss), backend="ref")(XV), want)
    assert CALLS["impl"] == 1
    CALLS["lowering"] = 0
    _close(ri.jit(ri.grad(loss), backend="pjrt")(XV), want)
    assert CALLS["lowering"] == 1
    # under vmap
    xs = np.stack([XV, XV[::-1]])
    _close(ri.vmap(ri.grad(loss))(xs), jax.vmap(jax.grad(_loss(jnp, jax.checkpoint, fj)))(xs))


def test_optimize_remat_without_checkpoint_and_with_closure():
    w = np.float32(1.5)

    def make(cv, np_):
        f = cv(lambda x: np_.sin(x * w))
        f.defvjp(
            lambda x: (np_.sin(x * w), np_.cos(x * w) * w),
            lambda c, g: (g * c,),
            optimize_remat=True,
        )
        return f

    f, fj = make(ri.custom_vjp, rnp), make(jax.custom_vjp, jnp)
    _close(ri.grad(lambda x: f(x).sum())(XV), jax.grad(lambda x: fj(x).sum())(XV))
    _close(ri.jit(ri.grad(lambda x: f(x).sum()))(XV), jax.grad(lambda x: fj(x).sum())(XV))
    _close(f(XV), fj(XV))


def test_optimize_remat_fwd_with_python_control_flow_is_a_concretization_error():
    f = ri.custom_vjp(lambda x: rnp.sin(x))

    def fwd(x):
        if x.sum() > 0:  # data-dependent Python control flow
            return rnp.sin(x), rnp.cos(x)
        return rnp.sin(x), -rnp.cos(x)

    f.defvjp(fwd, lambda c, g: (g * c,), optimize_remat=True)
    with pytest.raises(ri.ConcretizationTypeError, match="optimize_remat=True traces its fwd"):
        ri.grad(lambda x: f(x).sum())(XV)


def test_remat_opt_program_turns_into_the_primal_under_checkpoint():
    f = _sin_vjp(ri.custom_vjp, rnp.sin, lambda x: opaque_p.bind(x), True)
    program = ri.make_program(ri.grad(_loss(rnp, ri.checkpoint, f)))(XV)
    ri.check_program(program)
    # the forward pass is inline (as JAX's), the checkpoint is the backward pass
    (lin,) = _checkpoint_eqns(program)
    lin_names = [e.primitive.name for e in lin.params["program"].walk_eqns()]
    fwd_names = list(
        (Counter(e.primitive.name for e in program.walk_eqns()) - Counter(lin_names)).elements()
    )
    assert "opaque_sincos" not in fwd_names and "sin" in fwd_names
    assert lin_names.count("opaque_sincos") == 1 and "remat_opt" in lin_names
    assert lax is not None


def _scan_of_zero_carry(api, np_, shape):
    def member(xs):
        carry = np_.zeros(shape, xs.dtype)
        last, _ = api.lax.scan(lambda c, x: (np_.tanh(c + x), c * 0.5), carry, xs)
        return last

    policy = api.checkpoint_policies.everything_saveable
    return lambda xs: np_.sum(api.checkpoint(member, policy=policy)(xs))


@pytest.mark.parametrize("xs_shape", [(1,), (3,), (3, 2)])
def test_scan_zero_carry_tangent_saved_as_jax(xs_shape):
    # The carry's tangent starts as a symbolic zero and becomes nonzero in the
    # loop: the zero is instantiated. A rank-0 zero is a constant in JAX, not
    # a computed value, so everything_saveable does not save it (found by the
    # fuzzer, kinds=["checkpoint"] at seed 2); a rank-1 one is a
    # broadcast_in_dim, saved by both.
    xs = np.linspace(-1, 1, int(np.prod(xs_shape)), dtype=np.float32).reshape(xs_shape)
    ours = saved_residuals(_scan_of_zero_carry(ri, rnp, xs_shape[1:]), xs)
    theirs = jax_ad_checkpoint.saved_residuals(_scan_of_zero_carry(jax, jnp, xs_shape[1:]), xs)
    assert sorted((a.shape, a.dtype) for a in ours) == sorted(
        (a.shape, np.dtype(a.dtype)) for a, _ in theirs
    )
    _close(
        ri.grad(_scan_of_zero_carry(ri, rnp, xs_shape[1:]))(xs),
        jax.grad(_scan_of_zero_carry(jax, jnp, xs_shape[1:]))(xs),
    )


def test_instantiated_scalar_zero_is_a_constant_not_an_equation():
    # grad w.r.t. an unused scalar argument: JAX's program returns the literal
    # 0.0; no equation computes it
    program = ri.make_program(ri.grad(lambda x, y: rnp.sum(x), argnums=(0, 1)))(
        np.ones(3, np.float32), np.float32(2)
    )
    assert [e.primitive.name for e in program.eqns].count("broadcast_in_dim") == 1  # the seed
    on_pjrt = lambda f: ri.jit(ri.grad(f), backend="pjrt")  # noqa: E731
    for run in (ri.grad, lambda f: ri.jit(ri.grad(f)), on_pjrt):
        out = run(lambda y, x: rnp.sum(x))(2.0, np.ones(3, np.float32))
        assert float(out) == 0.0 and out.dtype == np.float32 and out.weak_type  # as JAX's


# JAX's remat evaluates its transposed program equation by equation eagerly
# (eval_jaxpr on the values given), so a strong cotangent of a weak output
# gives a strong input cotangent; under jit the call's outputs have the
# program's (weak) types. The scan case: the transposed scan is bound with
# cotangents whose weak types are the given ones.
def _checkpoint_pullbacks(api, np_, lax_):
    xs = np_.arange(3.0, dtype=np_.float32)
    bodies = {
        "c*2": lambda c: c * 2.0,
        "sin": lambda c: np_.sin(c) * 3.0,
        "scan": lambda c: lax_.scan(lambda d, x: (d * 2.0, d * x), c, xs),
    }
    strong = np_.float32(1.0)
    out = {}
    for name, f in bodies.items():
        ct = (strong, np_.ones(3, np_.float32)) if name == "scan" else strong
        pullback = api.vjp(api.checkpoint(f), 1.0)[1]
        out[name] = pullback(ct)
        out[name + " jit"] = api.jit(lambda x, c, f=f: api.vjp(api.checkpoint(f), x)[1](c))(1.0, ct)
    return out


def test_checkpoint_pullback_of_a_strong_cotangent_has_jaxs_weak_types(backend):
    got = _checkpoint_pullbacks(ri, rnp, lax)
    want = _checkpoint_pullbacks(jax, jnp, jax.lax)
    assert_modes_same_as_jax(got, want, atol=1e-6)


def _offload_policies(m):
    cp = m.checkpoint_policies
    return [
        cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
        cp.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"],
            names_which_can_be_offloaded=["b"],
            offload_src="device",
            offload_dst="pinned_host",
        ),
    ]


def _named_dots(np_, name_fn):
    def f(x, w):
        a = name_fn(np_.sin(x @ w), "a")
        b = name_fn(np_.cos(a @ w), "b")
        return np_.sum(np_.tanh(b @ w))

    return f


@pytest.mark.parametrize("which", [0, 1], ids=["offload_dots", "save_and_offload_names"])
def test_offload_policies_save_what_jax_keeps(backend, which):
    """JAX 0.10.2's host-offload policies (CPU runs them): the residuals they
    offload are kept, so the same residual count as JAX and the gradient;
    refimpl has no memory kinds and keeps them on the device."""
    rf = ri.checkpoint(_named_dots(rnp, checkpoint_name), policy=_offload_policies(ri)[which])
    jf = jax.checkpoint(
        _named_dots(jnp, jax.ad_checkpoint.checkpoint_name), policy=_offload_policies(jax)[which]
    )
    _close(ri.grad(rf)(X, W), jax.grad(jf)(X, W))
    assert len(saved_residuals(rf, X, W)) == len(jax_ad_checkpoint.saved_residuals(jf, X, W))


@pytest.mark.parametrize("prevent_cse", [1, None, "yes", [True], (True, False)])
def test_prevent_cse_types_as_jax(prevent_cse):
    """prevent_cse is a bool or a sequence of bools (JAX's check when
    checkpoint is made: anything else is a TypeError)."""

    def made(m):
        try:
            m.checkpoint(lambda x, y: x * y, prevent_cse=prevent_cse)
        except Exception as error:  # noqa: BLE001 - the class is compared
            return type(error)
        return None

    assert made(ri) is made(jax)
    if made(jax) is None:
        g = ri.grad(ri.checkpoint(lambda x, y: x * y, prevent_cse=prevent_cse))(2.0, 3.0)
        assert float(g) == 3.0
