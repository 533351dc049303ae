"""More of ``jax.lax`` (refimpl/lax/ and refimpl/primitives/linear_solve.py, all_to_all in
collectives.py) against ``jax.lax``.

Values, dtypes and weak types against JAX eagerly, under ``jit`` on the
reference backend and on PJRT; derivatives against ``jax.jvp``/``jax.grad``;
batching against ``jax.vmap``; bad arguments raise errors naming the
function and the argument.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
from refimpl import lax
from refimpl import numpy as rnp

RUNNERS = ["eager", "ref", "pjrt"]


def run(fn, args, runner):
    if runner == "eager":
        return fn(*args)
    return ri.jit(fn, backend=runner)(*args)


def check(ours, theirs, exact=True, rtol=1e-5, atol=1e-6):
    ours_l, tree_o = jax.tree_util.tree_flatten(ours)
    theirs_l, tree_t = jax.tree_util.tree_flatten(theirs)
    assert len(ours_l) == len(theirs_l), (tree_o, tree_t)
    for o, t in zip(ours_l, theirs_l, strict=True):
        t_arr, o_arr = np.asarray(t), np.asarray(o)
        assert o_arr.shape == t_arr.shape, (o_arr.shape, t_arr.shape)
        assert o_arr.dtype == t_arr.dtype, (o_arr.dtype, t_arr.dtype)
        if hasattr(t, "weak_type") and hasattr(o, "weak_type"):
            assert o.weak_type == t.weak_type
        if exact:
            np.testing.assert_array_equal(o_arr, t_arr)
        else:
            np.testing.assert_allclose(o_arr, t_arr, rtol=rtol, atol=atol)


# --- custom_root ---------------------------------------------------------------------------


def _newton_sqrt(L, N):
    """sqrt(y) as the root of x**2 - y by Newton's method (a while_loop: not
    differentiable itself), the derivative by the implicit function theorem."""

    def sqrt(y):
        def f(x):
            return x**2 - y

        def solve(g, x0):
            return L.while_loop(lambda x: N.abs(g(x)) > 1e-6, lambda x: x - g(x) / (2 * x), x0)

        return L.custom_root(f, 1.0, solve, lambda g, t: t / g(1.0))

    return sqrt


@pytest.mark.parametrize("runner", RUNNERS)
def test_custom_root_newton_sqrt(runner):
    ours, theirs = _newton_sqrt(lax, rnp), _newton_sqrt(jlax, jnp)
    y = np.float32(2.0)
    check(run(ours, (y,), runner), theirs(y), exact=False)
    check(run(ri.grad(ours), (y,), runner), jax.grad(theirs)(y), exact=False)
    # weakly typed Python float: the result is weak too, as JAX's
    check(run(ours, (3.0,), runner), theirs(3.0), exact=False)
    check(ri.jvp(ours, (y,), (np.float32(1),)), jax.jvp(theirs, (y,), (np.float32(1),)), False)
    assert abs(float(ri.grad(ours)(y)) - 0.5 / np.sqrt(2.0)) < 1e-6  # 1 / (2 sqrt(y))


def test_custom_root_vmap_and_aux():
    ours, theirs = _newton_sqrt(lax, rnp), _newton_sqrt(jlax, jnp)
    ys = np.array([1.0, 4.0, 9.0, 2.0], np.float32)
    check(ri.vmap(ours)(ys), jax.vmap(theirs)(ys), exact=False)
    check(ri.vmap(ri.grad(ours))(ys), jax.vmap(jax.grad(theirs))(ys), exact=False)

    def with_aux(L, N):
        def fn(y):
            def solve(g, x0):
                x = L.while_loop(lambda x: N.abs(g(x)) > 1e-6, lambda x: x - g(x) / (2 * x), x0)
                return x, {"residual": g(x)}

            x, aux = L.custom_root(lambda x: x**2 - y, 1.0, solve, lambda g, t: t / g(1.0), True)
            return x * 2 + aux["residual"]

        return fn

    for runner in ("eager", "pjrt"):
        check(run(ri.grad(with_aux(lax, rnp)), (np.float32(3),), runner),
              jax.grad(with_aux(jlax, jnp))(np.float32(3)), exact=False)  # fmt: skip


@pytest.mark.slow
def test_custom_root_vector_with_linear_solve_tangent():
    """A 2-d system whose tangent_solve is itself a custom_linear_solve."""

    def make(L, N):
        def fn(p):
            def f(x):
                return N.stack([x[0] ** 3 + x[1] - p[0], x[1] ** 3 - x[0] - p[1]])

            def solve(g, x0):
                def step(_, x):
                    jac = jax_like_jac(g, x, N)
                    return x - N.linalg.solve(jac, g(x))

                return L.fori_loop(0, 30, step, x0)

            def tangent_solve(g, y):
                a = jax_like_jac(g, N.zeros(2, N.float32), N)
                return L.custom_linear_solve(
                    g, y, lambda mv, b: N.linalg.solve(a, b), lambda vm, b: N.linalg.solve(a.T, b)
                )

            return L.custom_root(f, N.ones(2, N.float32), solve, tangent_solve)

        return fn

    def jax_like_jac(g, x, N):
        cols = [g(x + N.eye(2, dtype=N.float32)[i]) - g(x) for i in range(2)]
        return N.stack(cols, axis=1)  # exact for the linear g, Newton's for f (finite diff)

    p = np.array([2.0, 1.0], np.float32)
    ours, theirs = make(lax, rnp), make(jlax, jnp)
    check(ours(p), theirs(p), exact=False, rtol=1e-4)
    loss_o = lambda q: (ours(q) ** 2).sum()  # noqa: E731
    loss_t = lambda q: (theirs(q) ** 2).sum()  # noqa: E731
    for runner in RUNNERS:
        check(run(ri.grad(loss_o), (p,), runner), jax.grad(loss_t)(p), exact=False, rtol=1e-4)


def test_custom_root_errors():
    with pytest.raises(TypeError, match="custom_root: f must be callable"):
        lax.custom_root(3, 1.0, lambda f, x: x, lambda g, y: y)
    with pytest.raises(TypeError, match=r"custom_root: f\(\) output pytree structure must match"):
        lax.custom_root(lambda x: (x, x), 1.0, lambda f, x: x, lambda g, y: y)
    with pytest.raises(TypeError, match=r"custom_root: solve\(\) output pytree structure"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: [x], lambda g, y: y)
    with pytest.raises(ValueError, match=r"custom_root: solve\(\) produced a pytree"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: x, lambda g, y: y, has_aux=True)


# --- custom_linear_solve ---------------------------------------------------------------------

A_SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
A_GEN = np.array([[4.0, 1.0, 0.5], [2.0, 3.0, 0.2], [0.5, -1.0, 2.0]], np.float32)
B = np.array([1.0, 2.0, 3.0], np.float32)


def _cholesky_solve(L, N, symmetric=True):
    """x = A^{-1} b through a Cholesky factorization (solve and its transpose)."""

    def fn(a, b):
        def solve(matvec, x):
            c = L.linalg.cholesky(a)
            y = L.linalg.triangular_solve(c, x[:, None], left_side=True, lower=True)
            z = L.linalg.triangular_solve(c, y, left_side=True, lower=True, transpose_a=True)
            return z[:, 0]

        return L.custom_linear_solve(lambda x: N.dot(a, x), b, solve, symmetric=symmetric)

    return fn


def _general_solve(L, N, has_aux=False):
    def fn(a, b):
        def solve(matvec, x):
            out = N.linalg.solve(a, x)
            return (out, N.sum(matvec(out) - x)) if has_aux else out

        def transpose_solve(vecmat, x):
            out = N.linalg.solve(a.T, x)
            return (out, N.sum(vecmat(out) - x)) if has_aux else out

        out = L.custom_linear_solve(
            lambda x: N.dot(a, x), b, solve, transpose_solve, False, has_aux
        )
        return out[0] if has_aux else out

    return fn


@pytest.mark.parametrize("runner", RUNNERS)
def test_custom_linear_solve_spd_cholesky(runner):
    ours, theirs = _cholesky_solve(lax, rnp), _cholesky_solve(jlax, jnp)
    check(run(ours, (A_SPD, B), runner), theirs(A_SPD, B), exact=False)
    loss_o = lambda a, b: (ours(a, b) ** 2).sum()  # noqa: E731
    loss_t = lambda a, b: (theirs(a, b) ** 2).sum()  # noqa: E731
    got = run(ri.grad(loss_o, (0, 1)), (A_SPD, B), runner)
    check(got, jax.grad(loss_t, (0, 1))(A_SPD, B), exact=False)
    # and the gradient is the true one: against central finite differences (float64)
    a64 = A_SPD.astype(np.float64)
    eps, fd = 1e-6, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            d = np.zeros((3, 3))
            d[i, j] = eps
            fd[i, j] = (
                (np.linalg.solve(a64 + d, B) ** 2).sum() - (np.linalg.solve(a64 - d, B) ** 2).sum()
            ) / (2 * eps)
    np.testing.assert_allclose(np.asarray(got[0]), fd, rtol=1e-3, atol=1e-4)
    # jvp: a tangent of a alone, and of b alone
    ta = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
    check(ri.jvp(ours, (A_SPD, B), (ta, np.zeros(3, np.float32))),
          jax.jvp(theirs, (A_SPD, B), (ta, np.zeros(3, np.float32))), exact=False)  # fmt: skip
    check(ri.jvp(lambda b: ours(A_SPD, b), (B,), (B * 2,)),
          jax.jvp(lambda b: theirs(A_SPD, b), (B,), (B * 2,)), exact=False)  # fmt: skip


@pytest.mark.parametrize("has_aux", [False, True])
@pytest.mark.parametrize("runner", RUNNERS)
def test_custom_linear_solve_general_transpose(runner, has_aux):
    ours, theirs = _general_solve(lax, rnp, has_aux), _general_solve(jlax, jnp, has_aux)
    check(run(ours, (A_GEN, B), runner), theirs(A_GEN, B), exact=False)
    loss_o = lambda a, b: ours(a, b).sum() ** 2  # noqa: E731
    loss_t = lambda a, b: theirs(a, b).sum() ** 2  # noqa: E731
    check(run(ri.grad(loss_o, (0, 1)), (A_GEN, B), runner),
          jax.grad(loss_t, (0, 1))(A_GEN, B), exact=False, rtol=1e-4)  # fmt: skip


def test_custom_linear_solve_vmap_and_trees():
    ours, theirs = _cholesky_solve(lax, rnp), _cholesky_solve(jlax, jnp)
    bs = np.stack([B, 2 * B, -B])
    a2 = np.stack([A_SPD, A_SPD + np.eye(3, dtype=np.float32)])
    check(ri.vmap(ours, (None, 0))(A_SPD, bs), jax.vmap(theirs, (None, 0))(A_SPD, bs), False)
    check(ri.vmap(ours, (0, None))(a2, B), jax.vmap(theirs, (0, None))(a2, B), False)
    loss_o = lambda a, b: (ours(a, b) ** 2).sum()  # noqa: E731
    loss_t = lambda a, b: (theirs(a, b) ** 2).sum()  # noqa: E731
    check(ri.vmap(ri.grad(loss_o), (0, None))(a2, B),
          jax.vmap(jax.grad(loss_t), (0, None))(a2, B), exact=False)  # fmt: skip
    check(ri.jit(ri.vmap(ri.grad(loss_o, 1), (None, 0)), backend="pjrt")(A_SPD, bs),
          jax.vmap(jax.grad(loss_t, 1), (None, 0))(A_SPD, bs), exact=False)  # fmt: skip

    # a pytree right-hand side: a diagonal system on a dict
    def tree_solve(L):
        def fn(b):
            return L.custom_linear_solve(
                lambda x: {"u": 2 * x["u"], "v": 4 * x["v"]},
                b,
                lambda mv, y: {"u": y["u"] / 2, "v": y["v"] / 4},
                symmetric=True,
            )

        return fn

    tb = {"u": B, "v": B[:2]}
    check(tree_solve(lax)(tb), tree_solve(jlax)(tb), exact=False)
    check(ri.grad(lambda b: (tree_solve(lax)(b)["v"] ** 2).sum())(tb),
          jax.grad(lambda b: (tree_solve(jlax)(b)["v"] ** 2).sum())(tb), exact=False)  # fmt: skip


def test_custom_linear_solve_errors():
    no_transpose = lambda b: lax.custom_linear_solve(lambda x: 2 * x, b, lambda mv, y: y / 2)  # noqa: E731
    np.testing.assert_allclose(np.asarray(no_transpose(B)), B / 2)
    # forward mode needs no transpose_solve; reverse mode does (as JAX)
    check(ri.jvp(no_transpose, (B,), (B,)), jax.jvp(
        lambda b: jlax.custom_linear_solve(lambda x: 2 * x, b, lambda mv, y: y / 2), (B,), (B,)
    ), exact=False)  # fmt: skip
    with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
        ri.grad(lambda b: no_transpose(b).sum())(B)
    with pytest.raises(ValueError, match=r"custom_linear_solve: matvec\(\) output shapes"):
        lax.custom_linear_solve(lambda x: x[:2], B, lambda mv, y: y)
    with pytest.raises(TypeError, match=r"custom_linear_solve: solve\(\) output pytree"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, y: (y,))
    with pytest.raises(TypeError, match="custom_linear_solve: solve must be callable"):
        lax.custom_linear_solve(lambda x: x, B, None)


# --- all_to_all ------------------------------------------------------------------------------
#
# The same case code runs on jax.pmap in a subprocess (4 host devices must be
# set before jax is imported) and on refimpl's pmap on both backends.

A2A_CASES = """
import numpy as np

X = np.arange(4 * 4 * 3 * 2, dtype=np.float32).reshape(4, 4, 3, 2)
W = (np.arange(4 * 3 * 4, dtype=np.float32).reshape(4, 3, 4) % 7) - 3


def cases(L, grad):
    def weighted(split, concat, tiled):
        def loss(v):
            y = L.all_to_all(v, "i", split, concat, tiled=tiled)
            return (y * np.arange(y.size, dtype=np.float32).reshape(y.shape)).sum()

        return grad(loss)

    return {
        "untiled_0_0": (lambda v: L.all_to_all(v, "i", 0, 0), X),
        "untiled_0_2": (lambda v: L.all_to_all(v, "i", 0, 2), X),
        "untiled_1_0_int": (
            lambda v: L.all_to_all(v, "i", 1, 0),
            X.reshape(4, 3, 4, 2).astype(np.int32),
        ),
        "tiled_0_1": (lambda v: L.all_to_all(v, "i", 0, 1, tiled=True), X),
        "tiled_1_1": (lambda v: L.all_to_all(v, "i", 1, 1, tiled=True), X.reshape(4, 3, 8)),
        "groups": (
            lambda v: L.all_to_all(v, "i", 1, 0, axis_index_groups=[[0, 2], [3, 1]]),
            X[:, :, :2],
        ),
        "groups_tiled": (
            lambda v: L.all_to_all(v, "i", 0, 2, axis_index_groups=[[0, 1], [2, 3]], tiled=True),
            X,
        ),
        "tree": (lambda v: L.all_to_all({"a": v, "b": (v[..., 0],)}, "i", 0, 1), X),
        # JAX 0.10.2's transpose fails for untiled split != concat (a cotangent
        # shape error): only the cases it can do are compared here
        "grad_untiled_0_0": (weighted(0, 0, False), X[..., 0]),
        "grad_tiled_0_1": (weighted(0, 1, True), X[..., 0]),
        "grad_tiled_1_0": (weighted(1, 0, True), X[..., 0].reshape(4, 3, 4)),
    }
"""

_JAX_SCRIPT = """
import pickle, sys
import jax, numpy as np
from jax import lax
ns = {}
exec(sys.argv[2], ns)
out = {}
for name, (fn, x) in ns["cases"](lax, jax.grad).items():
    out[name] = jax.tree_util.tree_map(np.asarray, jax.pmap(fn, "i")(x))
with open(sys.argv[1], "wb") as f:
    pickle.dump(out, f)
"""


@pytest.fixture(scope="module")
def a2a_oracle(tmp_path_factory):
    import os
    import pickle
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("a2a") / "jax.pkl"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    subprocess.run(
        [sys.executable, "-c", _JAX_SCRIPT, str(out), A2A_CASES], check=True, env=env, timeout=300
    )
    with open(out, "rb") as f:
        return pickle.load(f)


@pytest.fixture
def four_ref_devices():
    old = ri.config.ref_num_devices
    ri.config.update("ref_num_devices", 4)
    yield
    ri.config.update("ref_num_devices", old)


def _a2a_cases():
    ns: dict = {}
    exec(A2A_CASES, ns)
    return ns


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_all_to_all_pmap_against_jax(a2a_oracle, four_ref_devices, backend):
    for name, (fn, x) in _a2a_cases()["cases"](lax, ri.grad).items():
        got = ri.pmap(fn, "i", backend=backend)(x)
        check(got, a2a_oracle[name])


def test_all_to_all_vmap_against_jax():
    ns = _a2a_cases()
    x = ns["X"]
    for split, concat, tiled in [(0, 0, False), (0, 1, False), (2, 0, False), (0, 2, True)]:
        arg = x if split == 0 else x.reshape(4, 3, 2, 4)

        def ours(v, s=split, c=concat, t=tiled):
            return lax.all_to_all(v, "i", s, c, tiled=t)

        def theirs(v, s=split, c=concat, t=tiled):
            return jlax.all_to_all(v, "i", s, c, tiled=t)

        expected = jax.vmap(theirs, axis_name="i")(arg)
        check(ri.vmap(ours, axis_name="i")(arg), expected)
        check(ri.jit(ri.vmap(ours, axis_name="i"), backend="pjrt")(arg), expected)
        # batched along another input axis
        moved = np.moveaxis(arg, 0, 2)
        check(ri.vmap(ours, in_axes=2, axis_name="i")(moved),
              jax.vmap(theirs, in_axes=2, axis_name="i")(moved))  # fmt: skip
    # an unbatched operand: every member holds the same value (JAX 0.10.2's
    # vmap returns wrongly shaped results here, (4, 3, 4, 4, 3, 1) for this
    # case, so the oracle is JAX on the operand given to every member)
    y = x[0, :, :, 0]
    ys = np.broadcast_to(y, (4, *y.shape))
    check(ri.vmap(lambda i: lax.all_to_all(y, "i", 0, 1) + i, axis_name="i")(np.arange(4.0)),
          jax.vmap(lambda i, v: jlax.all_to_all(v, "i", 0, 1) + i, axis_name="i")(
              np.arange(4.0), ys))  # fmt: skip


def test_all_to_all_transpose_is_the_swapped_exchange(rng):
    """grad of <all_to_all(v, split, concat), w> is all_to_all(w, concat, split)
    (JAX's own transpose fails for untiled split != concat in 0.10.2, so the
    oracle is JAX's forward exchange with the axes swapped)."""
    for split, concat, tiled, v_shape, w_shape in [
        (0, 1, False, (4, 4, 3), (4, 3, 4)),
        (1, 0, True, (4, 3, 8), (4, 12, 2)),
    ]:
        arg = rng.standard_normal(v_shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)

        def loss(a, b, s=split, c=concat, t=tiled):
            return (lax.all_to_all(a, "i", s, c, tiled=t) * b).sum()

        got = ri.vmap(ri.grad(loss), axis_name="i")(arg, w)
        expected = jax.vmap(
            lambda b, s=split, c=concat, t=tiled: jlax.all_to_all(b, "i", c, s, tiled=t),
            axis_name="i",
        )(w)
        check(got, expected)

        def fwd(a, s=split, c=concat, t=tiled):
            return lax.all_to_all(a, "i", s, c, tiled=t)

        def jfwd(a, s=split, c=concat, t=tiled):
            return jlax.all_to_all(a, "i", s, c, tiled=t)

        jv = ri.jvp(ri.vmap(fwd, axis_name="i"), (arg,), (arg * 2,))
        check(jv[1], jax.vmap(jfwd, axis_name="i")(arg * 2))


def test_all_to_all_lowering_and_errors(four_ref_devices):
    x = np.zeros((4, 4, 3), np.float32)
    f = ri.pmap(lambda v: lax.all_to_all(v, "i", 0, 1), "i", backend="pjrt")
    f(x)
    (entry,) = f._entries()
    assert "stablehlo.all_to_all" in str(entry.module) or '"stablehlo.all_to_all"' in str(
        entry.module
    )
    with pytest.raises(ValueError, match=r"all_to_all requires the size of the mapped axis"):
        ri.vmap(lambda v: lax.all_to_all(v, "i", 1, 0), axis_name="i")(x)
    with pytest.raises(ValueError, match=r"all_to_all: the size of split_axis \(3\)"):
        ri.pmap(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), "i", backend="ref")(x)
    # negative axes count from the end (JAX 0.10.2 fails on them: an AssertionError
    # under vmap, a StableHLO verifier error under pmap)
    y = np.arange(4 * 4 * 3 * 2, dtype=np.float32).reshape(4, 4, 3, 2)
    check(ri.vmap(lambda v: lax.all_to_all(v, "i", -3, -1), axis_name="i")(y),
          jax.vmap(lambda v: jlax.all_to_all(v, "i", 0, 2), axis_name="i")(y))  # fmt: skip
    with pytest.raises(NameError, match="unbound axis name: j"):
        ri.vmap(lambda v: lax.all_to_all(v, "j", 0, 0), axis_name="i")(x)
    with pytest.raises(ValueError, match="all_to_all.*split_axis"):
        ri.vmap(lambda v: lax.all_to_all(v, "i", 5, 0), axis_name="i")(x)
    with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
        ri.vmap(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=[[0, 1], [2, 3]]),
                axis_name="i")(x[:, :2])  # fmt: skip


# --- reduce_xor, approx_max_k/min_k, conv_general_dilated_patches, wrappers -------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_reduce_xor(runner, rng):
    for dtype in (np.int32, np.uint8, np.int8, np.bool_):
        if dtype == np.bool_:
            x = rng.random((3, 4, 5)) < 0.5
        else:
            x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (3, 4, 5), dtype=dtype)
        for axes in [(1,), (0, 2), (), (0, 1, 2)]:
            check(
                run(lambda v, a=axes: lax.reduce_xor(v, a), (x,), runner), jlax.reduce_xor(x, axes)
            )
    check(run(lambda v: lax.reduce_xor(v, (0,)), (np.zeros((0, 3), np.int32),), runner),
          jlax.reduce_xor(np.zeros((0, 3), np.int32), (0,)))  # fmt: skip


def test_reduce_xor_rules_and_errors(rng):
    x = rng.integers(-50, 50, (4, 3), dtype=np.int32)
    check(ri.vmap(lambda v: lax.reduce_xor(v, (0,)), in_axes=1)(x),
          jax.vmap(lambda v: jlax.reduce_xor(v, (0,)), in_axes=1)(x))  # fmt: skip
    # weakly typed input, strongly typed result (as JAX)
    check(lax.reduce_xor(5, ()), jlax.reduce_xor(5, ()))
    f = rng.standard_normal(3).astype(np.float32)
    check(ri.grad(lambda v: v.sum() + lax.reduce_xor(v > 0, (0,)))(f),
          jax.grad(lambda v: v.sum() + jlax.reduce_xor(v > 0, (0,)))(f))  # fmt: skip
    with pytest.raises(TypeError, match="reduce_xor"):
        lax.reduce_xor(f, (0,))
    with pytest.raises(ValueError, match="reduce_xor"):
        lax.reduce_xor(x, (2,))


@pytest.mark.parametrize("runner", RUNNERS)
def test_approx_max_min_k(runner, rng):
    x = rng.standard_normal((3, 40)).astype(np.float32)
    x[0, 5] = x[0, 9]  # a tie: the lower index first
    for ours, theirs in [
        (lax.approx_max_k, jlax.approx_max_k),
        (lax.approx_min_k, jlax.approx_min_k),
    ]:
        check(run(lambda v, f=ours: f(v, 5), (x,), runner), theirs(x, 5))
        kw = dict(reduction_dimension=0, recall_target=0.5)
        check(run(lambda v, f=ours, kw=kw: f(v, 2, **kw), (x,), runner), theirs(x, 2, **kw))
        h = x.astype(np.float16)
        check(run(lambda v, f=ours: f(v, 3), (h,), runner), theirs(h, 3))
    nan = np.array([1.0, np.nan, 3.0, -np.inf, 2.0, np.nan], np.float32)
    check(run(lambda v: lax.approx_max_k(v, 3), (nan,), runner), jlax.approx_max_k(nan, 3))


def test_approx_k_aggregate_grad_vmap_and_errors(rng):
    # aggregate_to_topk=False: as many candidates as XLA's reduction keeps, sorted
    for shape, k in [((2, 1000), 10), ((1, 5000), 10), ((3000,), 1), ((20000,), 3), ((2, 300), 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        got = lax.approx_max_k(x, k, aggregate_to_topk=False)
        check(got, jlax.approx_max_k(x, k, aggregate_to_topk=False))
    x = rng.standard_normal((2, 1500)).astype(np.float32)
    check(lax.approx_min_k(x, 7, recall_target=0.9, reduction_input_size_override=6000,
                           aggregate_to_topk=False),
          jlax.approx_min_k(x, 7, recall_target=0.9, reduction_input_size_override=6000,
                            aggregate_to_topk=False))  # fmt: skip
    y = rng.standard_normal((4, 6)).astype(np.float32)
    for ours, theirs in [
        (lax.approx_max_k, jlax.approx_max_k),
        (lax.approx_min_k, jlax.approx_min_k),
    ]:
        check(ri.grad(lambda v, f=ours: (f(v, 2)[0] ** 2).sum())(y),
              jax.grad(lambda v, f=theirs: (f(v, 2)[0] ** 2).sum())(y))  # fmt: skip
        check(ri.vmap(lambda v, f=ours: f(v, 2, 0), in_axes=1)(y),
              jax.vmap(lambda v, f=theirs: f(v, 2, 0), in_axes=1)(y))  # fmt: skip
    with pytest.raises(ValueError, match="approx_max_k: k must be smaller than the size"):
        lax.approx_max_k(y, 7)
    with pytest.raises(ValueError, match="approx_max_k: k must be positive"):
        lax.approx_max_k(y, 0)
    with pytest.raises(ValueError, match="approx_min_k: operand must be a floating type"):
        lax.approx_min_k(y.astype(np.int32), 2)
    with pytest.raises(TypeError, match="approx_max_k: operand must have >= 1 dimension"):
        lax.approx_max_k(np.float32(1), 1)
    with pytest.raises(ValueError, match="approx_max_k.*reduction_dimension"):
        lax.approx_max_k(y, 1, reduction_dimension=2)


@pytest.mark.parametrize("runner", RUNNERS)
def test_conv_general_dilated_patches(runner, rng):
    lhs = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    nhwc = np.transpose(lhs, (0, 2, 3, 1)).copy()
    for arg, kwargs in [
        (lhs, dict(filter_shape=(2, 3), window_strides=(1, 2), padding="SAME")),
        (lhs, dict(filter_shape=(3, 3), window_strides=(1, 1), padding=[(0, 1), (2, 0)],
                   lhs_dilation=(2, 1))),
        (nhwc, dict(filter_shape=(3, 2), window_strides=(2, 1), padding="VALID",
                    rhs_dilation=(1, 2), dimension_numbers=("NHWC", "OIHW", "NHWC"))),
        (nhwc, dict(filter_shape=(3, 2), window_strides=(2, 1), padding=[(1, 0), (0, 2)],
                    dimension_numbers=("NHWC", "HWIO", "NCHW"))),
        (lhs[:, :, :, 0], dict(filter_shape=(4,), window_strides=(1,), padding="SAME")),
    ]:  # fmt: skip
        check(run(lambda v, kw=kwargs: lax.conv_general_dilated_patches(v, **kw), (arg,), runner),
              jlax.conv_general_dilated_patches(arg, **kwargs))  # fmt: skip
    b = lhs.astype(jnp.bfloat16)
    check(run(lambda v: lax.conv_general_dilated_patches(v, (2, 2), (1, 1), "SAME"), (b,), runner),
          jlax.conv_general_dilated_patches(b, (2, 2), (1, 1), "SAME"))  # fmt: skip


def test_conv_general_dilated_patches_grad_and_errors(rng):
    lhs = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)
    w = rng.standard_normal((1, 8, 5, 4)).astype(np.float32)

    def loss(L):
        return lambda v: (L.conv_general_dilated_patches(v, (2, 2), (1, 1), "SAME") * w).sum()

    check(ri.grad(loss(lax))(lhs), jax.grad(loss(jlax))(lhs), exact=False)
    with pytest.raises(ValueError, match="conv_general_dilated_patches: filter_shape"):
        lax.conv_general_dilated_patches(lhs, (2,), (1, 1), "SAME")


@pytest.mark.parametrize("runner", RUNNERS)
def test_index_take_broadcast_like_and_sharding(runner, rng):
    src = rng.standard_normal((4, 5, 6)).astype(np.float32)
    i0 = np.array([0, 3, -1, 7], np.int32)
    i1 = np.array([1, 2, 5, -7], np.int32)
    for axes in [(0, 2), (0, 1), (1, 2)]:
        check(run(lambda s, a, b, ax=axes: lax.index_take(s, (a, b), ax), (src, i0, i1), runner),
              jlax.index_take(src, (i0, i1), axes))  # fmt: skip
    check(run(lambda s, a: lax.index_take(s, (a,), (1,)), (src, i1), runner),
          jlax.index_take(src, (i1,), (1,)))  # fmt: skip
    like = np.zeros((2, 3), np.int32)
    check(
        run(lambda v: lax.broadcast_like(2.0, v), (like,), runner), jlax.broadcast_like(2.0, like)
    )
    check(run(lambda v: lax.broadcast_like(np.arange(3), v), (like,), runner),
          jlax.broadcast_like(np.arange(3), like))  # fmt: skip
    from jax.sharding import SingleDeviceSharding

    sharding = SingleDeviceSharding(jax.devices()[0])
    tree = {"a": np.float32(1.5), "w": 2.0, "i": np.arange(3)}
    check(run(lambda t: lax.with_sharding_constraint(t, sharding), (tree,), runner),
          jlax.with_sharding_constraint(tree, sharding))  # fmt: skip
    check(lax.with_sharding_constraint(2.0, sharding), jlax.with_sharding_constraint(2.0, sharding))


def test_small_wrappers_errors_and_grad(rng):
    src = rng.standard_normal((4, 5)).astype(np.float32)
    idx = np.array([1, 3], np.int32)
    check(ri.grad(lambda s: lax.index_take(s, (idx, idx), (0, 1)).sum())(src),
          jax.grad(lambda s: jlax.index_take(s, (idx, idx), (0, 1)).sum())(src))  # fmt: skip
    with pytest.raises(TypeError, match="index_take: axes must be distinct and sorted"):
        lax.index_take(src, (idx, idx), (1, 0))
    with pytest.raises(ValueError, match="index_take: idxs must hold one index array per axis"):
        lax.index_take(src, (idx,), (0, 1))
    with pytest.raises(ValueError, match="with_sharding_constraint.*sharding None"):
        lax.with_sharding_constraint(src, None)


def test_pbroadcast(four_ref_devices):
    """Against jax.vmap for values. JAX 0.10.2 has no CPU lowering for its
    pbroadcast (pmap fails) and its derivative fails under vmap, so pmap
    values and all gradients are checked against the definition: every
    member gets member ``source``'s value; the cotangents' sum goes back to
    ``source`` alone."""
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    expected = jax.vmap(lambda v: jlax.pbroadcast(v, "i", 2), axis_name="i")(x)
    check(ri.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(x), expected)
    np.testing.assert_array_equal(np.asarray(expected), np.broadcast_to(x[2], x.shape))
    for backend in ("ref", "pjrt"):
        got = ri.pmap(lambda v: lax.pbroadcast({"a": v, "b": v[0]}, "i", 2), "i", backend=backend)(
            x
        )
        check(got, {"a": expected, "b": expected[:, 0]})
    w = (np.arange(12.0, dtype=np.float32).reshape(4, 3) % 5) - 2
    grad_expected = np.zeros_like(x)
    grad_expected[1] = w.sum(0)
    got = ri.vmap(ri.grad(lambda v, u: (lax.pbroadcast(v, "i", 1) * u).sum()), axis_name="i")(x, w)
    np.testing.assert_array_equal(np.asarray(got), grad_expected)
    got = ri.pmap(
        ri.grad(lambda v, u: (lax.pbroadcast(v, "i", 1) * u).sum()), "i", backend="pjrt"
    )(x, w)  # fmt: skip
    np.testing.assert_array_equal(np.asarray(got), grad_expected)
    with pytest.raises(ValueError, match=r"pbroadcast: source 4 is outside range\(4\)"):
        ri.vmap(lambda v: lax.pbroadcast(v, "i", 4), axis_name="i")(x)


def test_pshuffle_and_pswapaxes():
    x = np.arange(4.0, dtype=np.float32)
    check(ri.vmap(lambda v: lax.pshuffle(v, "i", [2, 0, 3, 1]), axis_name="i")(x),
          jax.vmap(lambda v: jlax.pshuffle(v, "i", [2, 0, 3, 1]), axis_name="i")(x))  # fmt: skip
    y = np.arange(4 * 3 * 4, dtype=np.float32).reshape(4, 3, 4)
    check(ri.vmap(lambda v: lax.pswapaxes(v, "i", 1), axis_name="i")(y),
          jax.vmap(lambda v: jlax.pswapaxes(v, "i", 1), axis_name="i")(y))  # fmt: skip
    with pytest.raises(ValueError, match="pshuffle: `perm` does not represent a permutation"):
        ri.vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1, 2]), axis_name="i")(x)


# --- mulhi, dtype and the shape helpers ----------------------------------------------------------


def _mulhi_operands(rng, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    a[:4] = [info.min, info.max, 0, info.max]
    b[:4] = [info.min, info.min, info.max, info.max]
    return a, b


@pytest.mark.parametrize("runner", RUNNERS)
def test_mulhi(runner, rng):
    for dtype in (np.int32, np.uint32, np.int8, np.uint8, np.int16, np.uint16):
        a, b = _mulhi_operands(rng, dtype)
        check(run(lax.mulhi, (a, b), runner), jlax.mulhi(a, b))
    a = np.array([5, 2**30, -(2**31)], np.int32)
    check(run(lambda v: lax.mulhi(v, 8), (a,), runner), jlax.mulhi(a, 8))
    with pytest.raises(TypeError, match="mulhi: x must have an integer dtype"):
        lax.mulhi(np.float32(1), np.float32(2))


def test_mulhi_int64(x64, rng):
    for dtype in (np.int64, np.uint64):
        a, b = _mulhi_operands(rng, dtype)
        check(lax.mulhi(a, b), jlax.mulhi(a, b))
        check(ri.jit(lax.mulhi, backend="pjrt")(a, b), jlax.mulhi(a, b))


def test_dtype_and_shape_helpers():
    import warnings

    for value in [1.0, np.int8(1), "float64", np.arange(3), np.float64(1), True, 3, 1j]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # JAX warns about the float64 it truncates
            assert lax.dtype(value) == jlax.dtype(value)

    def same(ours, theirs):
        assert tuple(ours) == tuple(int(v) for v in theirs), (ours, theirs)
        assert all(type(v) is int for v in ours)

    for args in [((2, 3, 10, 9), (4, 3, 3, 2), (2, 1), [(1, 1), (0, 2)]),
                 ((2, 3, 3, 3), (4, 3, 5, 5), (1, 1), [(0, 0), (0, 0)])]:  # fmt: skip
        same(lax.conv_shape_tuple(*args), jlax.conv_shape_tuple(*args))
    grouped = ((4, 3, 10, 9), (4, 3, 3, 2), (2, 1), [(1, 1), (0, 2)], 2)
    same(lax.conv_shape_tuple(*grouped), jlax.conv_shape_tuple(*grouped))
    for pad in ["SAME", "VALID", [(1, 1), (0, 2)]]:
        for dn in [("NHWC", "HWIO", "NHWC"), ("NHWC", "HWIO", "NCHW"), ("NCHW", "OIHW", "NCHW")]:
            lhs = (2, 10, 9, 3) if dn[0] == "NHWC" else (2, 3, 10, 9)
            rhs = (3, 2, 3, 4) if dn[1] == "HWIO" else (4, 3, 3, 2)
            same(lax.conv_general_shape_tuple(lhs, rhs, (2, 1), pad, dn),
                 jlax.conv_general_shape_tuple(lhs, rhs, (2, 1), pad, dn))  # fmt: skip
            same(lax.conv_transpose_shape_tuple(lhs, rhs, (2, 3), pad, dn),
                 jlax.conv_transpose_shape_tuple(lhs, rhs, (2, 3), pad, dn))  # fmt: skip
    rw = ((10, 9), (3, 2), (2, 1), [(1, 1), (0, 2)])
    same(lax.reduce_window_shape_tuple(*rw), jlax.reduce_window_shape_tuple(*rw))
    same(lax.reduce_window_shape_tuple(*rw, (2, 1), (1, 2)),
         jlax.reduce_window_shape_tuple(*rw, (2, 1), (1, 2)))  # fmt: skip
    dn = ("NHWC", "HWIO", "NCHW")
    assert lax.conv_general_permutations(dn) == jlax.conv_general_permutations(dn)
    with pytest.raises(TypeError, match="conv_general_permutations: dimension_numbers"):
        lax.conv_general_permutations(((0, 3, 1, 2), (3, 2, 0, 1), (0, 1, 2, 3)))
    with pytest.raises(ValueError, match="reduce_window_shape_tuple: padding must be 2"):
        lax.reduce_window_shape_tuple((10, 9), (3, 2), (2, 1), [(1, 1)])


@pytest.mark.parametrize("runner", RUNNERS)
def test_conv_general_dilated_local(runner, rng):
    lhs = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    rhs = rng.standard_normal((4, 3 * 2 * 3, 5, 2)).astype(np.float32)
    args = ((1, 2), "VALID", (2, 3))
    check(run(lambda u, v: lax.conv_general_dilated_local(u, v, *args), (lhs, rhs), runner),
          jlax.conv_general_dilated_local(lhs, rhs, *args), exact=False)  # fmt: skip
    nhwc = np.transpose(lhs, (0, 2, 3, 1)).copy()
    rhs2 = rng.standard_normal((3, 5, 3 * 2 * 2, 4)).astype(np.float32)
    kw = dict(dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss(L):
        return lambda u, v: (
            L.conv_general_dilated_local(u, v, (2, 1), [(0, 1), (1, 0)], (2, 2), **kw) ** 2
        ).sum()

    check(run(ri.grad(loss(lax), (0, 1)), (nhwc, rhs2), runner),
          jax.grad(loss(jlax), (0, 1))(nhwc, rhs2), exact=False, rtol=1e-4, atol=1e-4)  # fmt: skip


@pytest.mark.slow
def test_implicit_solves_second_order_and_scan():
    ours, theirs = _general_solve(lax, rnp), _general_solve(jlax, jnp)
    loss_o = lambda a, b: (ours(a, b) ** 3).sum()  # noqa: E731
    loss_t = lambda a, b: (theirs(a, b) ** 3).sum()  # noqa: E731
    check(ri.hessian(loss_o, 1)(A_GEN, B), jax.hessian(loss_t, 1)(A_GEN, B), exact=False)
    rev_rev = jax.jacrev(jax.grad(loss_t, 0), 0)(A_GEN, B)
    check(ri.jacrev(ri.grad(loss_o, 0), 0)(A_GEN, B), rev_rev, exact=False, rtol=1e-4, atol=1e-5)

    def in_scan(L, solve):
        def fn(a, b):
            def body(carry, _):
                return solve(a, carry) * 0.5 + b, None

            return L.scan(body, b, None, length=3)[0].sum()

        return fn

    check(ri.jit(ri.grad(in_scan(lax, ours), (0, 1)), backend="pjrt")(A_GEN, B),
          jax.grad(in_scan(jlax, theirs), (0, 1))(A_GEN, B), exact=False, rtol=1e-4)  # fmt: skip
    sq_o, sq_t = _newton_sqrt(lax, rnp), _newton_sqrt(jlax, jnp)
    check(ri.grad(ri.grad(sq_o))(2.0), jax.grad(jax.grad(sq_t))(2.0), exact=False)


@pytest.mark.parametrize("runner", RUNNERS)
def test_igamma_grad_a(runner, rng):
    a = (rng.random(64) * 10 + 0.1).astype(np.float32)
    x = (rng.random(64) * 12 + 0.01).astype(np.float32)
    check(run(lax.igamma_grad_a, (a, x), runner), jlax.igamma_grad_a(a, x), False, 2e-5, 1e-7)
    check(run(lambda u: lax.igamma_grad_a(u, 2.0), (a,), runner),
          jlax.igamma_grad_a(a, 2.0), False, 2e-5, 1e-7)  # fmt: skip
    check(lax.igamma_grad_a(2.0, 1.0), jlax.igamma_grad_a(2.0, 1.0), False)  # weak, as JAX
    # it is the a-derivative of igamma (JAX's grad)
    check(ri.grad(lax.igamma, 0)(np.float32(1.5), np.float32(2.0)),
          lax.igamma_grad_a(np.float32(1.5), np.float32(2.0)), exact=False)  # fmt: skip
    with pytest.raises(TypeError, match="igamma_grad_a: .*int32"):
        lax.igamma_grad_a(np.int32(1), np.int32(2))


# From JAX's custom_root tests: a solve returning constants as its aux
# (eagerly they came out of refimpl's program as NumPy data and a
# TypedScalar), and a Newton solve whose while_loop carries weak values
# through jnp.linalg.solve (weak when a and b both are, as JAX's).
def _custom_root_cases(api, np_, lax_):
    orig = {"converged": np.array(1.0), "grad": np.array([1.0, 2.0, 3.0])}
    b = np.array([0.5, -1.0], np.float32)

    def root_aux(b):
        return lax_.custom_root(
            lambda x: x - b, b, lambda f, y: (y, orig), lambda g, y: y, has_aux=True
        )

    def newton(func, x0):
        def body(state):
            it, x, fx, dfx = state
            step = np_.linalg.solve(dfx.reshape((-1, fx.size)), fx.ravel()).reshape(fx.shape)
            return it + 1, x - step, func(x - step), api.jacobian(func)(x - step)

        def cond(state):
            return (np_.max(np_.abs(state[2])) > 1e-16) & (state[0] < 20)

        return lax_.while_loop(cond, body, (0, x0, func(x0), api.jacobian(func)(x0)))[1]

    def sqrt_cubed(x):
        return lax_.custom_root(lambda y: y**2 - x**3, 1.0, newton, lambda f, y: y / f(1.0))

    weak = np_.broadcast_to(np_.asarray(2.0), (2,))
    return {
        "aux eager": root_aux(b),
        "aux jit": api.jit(root_aux)(b),
        "newton": api.value_and_grad(sqrt_cubed)(5.0),
        "newton jit": api.jit(sqrt_cubed)(5.0),
        "solve weak": [
            np_.linalg.solve(np_.eye(2) * 2.0 + 0.0 * weak[:, None], weak),
            np_.linalg.solve(np_.broadcast_to(np_.asarray(2.0), (1, 1)), weak[:1]),
        ],
    }


def test_custom_root_aux_and_weak_newton_as_jax(backend):
    got = _custom_root_cases(ri, rnp, lax)
    want = _custom_root_cases(jax, jnp, jlax)
    for mode in want:
        got_leaves, want_leaves = jax.tree.leaves(got[mode]), jax.tree.leaves(want[mode])
        assert len(got_leaves) == len(want_leaves), mode
        for g, w in zip(got_leaves, want_leaves, strict=True):
            assert isinstance(g, ri.Array), (mode, type(g))
            assert g.dtype == w.dtype and g.shape == w.shape, mode
            assert g.weak_type == w.weak_type, mode
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)
