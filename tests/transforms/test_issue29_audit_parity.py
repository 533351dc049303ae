"""Issue 29's audit: one small program per behaviour its text names, run on
JAX 0.10.2 and on refimpl (both backends, eager and jit where the behaviour
has both), so that none of them can drift back.

Each case is a function of a library namespace (``L.jax``, ``L.jnp``,
``L.lax``, ``L.random``) returning a pytree of results; the test runs it on
JAX and on refimpl and compares leaf by leaf (shape, dtype, weak type,
values) or, where JAX raises, the exception class (and the words where the
issue names the message). The programs are smaller versions of the ones in
JAX's test files named beside each case (mutable_array_test, api_test,
lax_test, lax_numpy_test, random_test, batching_test,
lax_control_flow_test). docs/parity_audit.md is the table this file checks.

Not here: class 3 (custom_jvp/custom_vjp rules: tests/transforms/
test_custom_rules_parity.py) and the unhashable static argument
(tests/transforms/test_api_parity.py).
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax
from jax import random as jrandom

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax as rlax
from refimpl import random as rrandom

# add_at_import: lax.add as this module saw it when imported, before any test
# loaded the pjrt backend (which swaps refimpl.lax's names for native ones)
JAX = types.SimpleNamespace(jax=jax, jnp=jnp, lax=jlax, random=jrandom, add_at_import=jlax.add)
RI = types.SimpleNamespace(jax=ri, jnp=rnp, lax=rlax, random=rrandom, add_at_import=rlax.add)

F32 = np.float32
CASES: dict[str, Callable[[Any], Any]] = {}
# case name -> regex JAX's error message must match on both (only where the
# issue names the wording)
WORDS: dict[str, str] = {}
# cases whose weak flags differ on purpose (values and dtypes compared):
# docs/semantics.md section 5 (a ref holds its value strongly)
WEAK_KNOWN = {
    "weak/vjp_of_a_function_reading_a_ref",
}


def case(name: str, words: str | None = None):
    def register(fn):
        CASES[name] = fn
        if words is not None:
            WORDS[name] = words
        return fn

    return register


def _both(L, f, *args, **kwargs):
    """f's result eagerly and under jit."""
    return f(*args, **kwargs), L.jax.jit(f)(*args, **kwargs)


# --- class 1: refs ----------------------------------------------------------------------------


@case("refs/custom_vjp_fwd_bwd_take_a_ref")
def _(L):
    # mutable_array_test: a Ref argument of a custom_vjp function whose
    # value is differentiated (fwd and bwd see the Ref)
    @L.jax.custom_vjp
    def f(x_ref, y):
        return x_ref[...] * 3.0 * y

    f.defvjp(
        lambda x_ref, y: (f(x_ref, y), (x_ref[...], y)),
        lambda r, g: (g * 100.0 * r[1], g * r[0] * 7.0),
    )
    g = L.jax.grad(lambda x, y: f(L.jax.new_ref(x), y), (0, 1))
    return g(F32(1.5), F32(2.0)), L.jax.jit(g)(F32(1.5), F32(2.0))


@case("refs/new_ref_kind")
def _(L):
    def f(x):
        r = L.jax.new_ref(x, kind="anselm_ref")
        r[...] += 1.0
        return r[...]

    kind = L.jax.typeof(L.jax.new_ref(L.jnp.zeros(3), kind="anselm_ref")).kind
    return kind, _both(L, f, F32(1.0))


def _aliased(L, jit):
    @L.jax.custom_vjp
    def f(x_ref, y_ref):
        return 0.0

    f.defvjp(lambda x_ref, y_ref: (None, None), lambda _, g: (None, None))
    x_ref = L.jax.new_ref(0.0)
    return (L.jax.jit(f) if jit else f)(x_ref, x_ref)


case("refs/one_ref_twice_into_custom_vjp", words="x_ref and y_ref")(
    functools.partial(_aliased, jit=False)
)
case("refs/one_ref_twice_into_jit_custom_vjp", words="x_ref and y_ref")(
    functools.partial(_aliased, jit=True)
)


@case("refs/ref_returned_by_custom_vjp_primal", words="custom_vjp primal function")
def _(L):
    @L.jax.custom_vjp
    def f(ref):
        return ref

    f.defvjp(lambda ref: ..., lambda *_: ...)
    return f(L.jax.new_ref(0.0))


@case("refs/read_only_refs_in_scan_under_vjp")
def _(L):
    # mutable_array_test's test_scan_vjp_systematic_readonly, smaller
    def f(mut, pure, c, xs):
        consts = list(pure), [L.jax.new_ref(v) for v in mut]

        def body(c, x):
            tot = 0.0
            for is_mut in (True, False, True):
                const = consts[int(is_mut)].pop()
                tot += L.jnp.sin(const[...] if is_mut else const)
            return [L.jnp.sin(ci) + tot for ci in c], L.jnp.sin(x) * 1.0

        return L.lax.scan(body, c, xs, length=3)

    args = (list(F32([0.3, -0.7])), [1.2], [0.5, 0.1], F32([0.1, 0.2, 0.3]))
    out, pullback = L.jax.vjp(f, *args)
    return out, pullback(out)


@case("refs/pullback_with_refs")
def _(L):
    # mutable_array_test's test_vjp3_ref_grads_for_val_primals, smaller: a
    # pullback accumulating into a ref it closes over, inside a scan
    ws, xs = L.jnp.ones((2, 3, 3)), L.jnp.ones((4, 2, 3))

    def loss(ws, x):
        return L.jnp.mean(L.lax.scan(lambda a, w: (L.jnp.dot(a, w), None), x, ws)[0])

    acc = L.jax.new_ref(L.jnp.zeros_like(ws))

    def step(_, x):
        value, pullback = L.jax.vjp(lambda w: loss(w, x), ws)
        pullback.with_refs(acc)(L.jnp.ones_like(value))
        return (), value

    _, values = L.lax.scan(step, (), xs)
    return values, L.jax.ref.freeze(acc)


@case("refs/free_ref")
def _(L):
    return len(L.jax.free_ref(L.jax.new_ref(L.jnp.arange(3.0))))


@case("refs/abstract_ref_update")
def _(L):
    ty = L.jax.typeof(L.jax.new_ref(L.jnp.zeros(3)))
    new = ty.update(inner_aval=L.jax.typeof(L.jnp.zeros(2, "int32")))
    return ty.update(kind="k").kind, new.shape, str(new.dtype), ty.update() == ty


# --- class 2: weak types through transformed programs -----------------------------------------


@case("weak/grad_of_cond_and_switch")
def _(L):
    f = lambda x: L.lax.cond(True, lambda v: v * 2.0, lambda v: v * 3.0, x)  # noqa: E731
    s = lambda x: L.lax.switch(1, [lambda v: v * 2.0, L.jnp.sin], x)  # noqa: E731
    return _both(L, L.jax.grad(f), 1.0), _both(L, L.jax.grad(s), 1.0)


@case("weak/jacfwd_jacrev_with_aux")
def _(L):
    f = lambda x: (L.lax.cond(x > 0, L.jnp.sin, L.jnp.cos, x), x * 2.0)  # noqa: E731
    return (
        _both(L, L.jax.jacfwd(f, has_aux=True), 1.0),
        _both(L, L.jax.jacrev(f, has_aux=True), 1.0),
    )


@case("weak/jitted_linearize_transpose_checkpoint")
def _(L):
    f = L.jax.checkpoint(lambda x: L.jnp.sin(x) * 2.0)
    y, lin = L.jax.linearize(L.jax.jit(f), 1.0)
    t = L.jax.linear_transpose(L.jax.jit(lambda v: v * 3.0), 1.0)
    return y, lin(F32(1.0)), lin(1.0), t(1.0), _both(L, L.jax.grad(f), 1.0)


@case("weak/transpose_of_jit_given_a_strong_cotangent")
def _(L):
    # runs as in JAX; the transpose is traced with the cotangent's own type
    t = L.jax.linear_transpose(L.jax.jit(lambda v: v * 3.0), 1.0)
    return t(F32(1.0)), L.jax.vjp(L.jax.jit(L.jnp.sin), 1.0)[1](F32(1.0))


@case("weak/vjp_of_a_function_reading_a_ref")
def _(L):
    def f(x):
        r = L.jax.new_ref(x * 1.0)
        return L.jnp.sin(r[...])

    y, pull = L.jax.vjp(L.jax.jit(f), 1.0)
    return y, pull(F32(1.0))


@case("weak/scan_weak_init_strong_carry")
def _(L):
    # the held-back Gaussian-process program: a weak init, a strong carry
    xs = L.jnp.arange(3, dtype=F32)
    f = lambda c: L.lax.scan(lambda c, x: (c + x, c), c, xs)  # noqa: E731
    return _both(L, f, 0.0), _both(L, L.jax.grad(lambda c: f(c)[0]), 0.0)


# --- class 4: lax -----------------------------------------------------------------------------


@case("lax/binary_ops_broadcast_size_one_dims")
def _(L):
    a, b = np.arange(12, dtype=F32).reshape(3, 4), np.arange(3, dtype=F32).reshape(3, 1)
    return _both(L, L.lax.add, a, b), _both(L, L.lax.max, b, a), _both(L, L.lax.atan2, a, b)


@case("lax/reduce_any_computation")
def _(L):
    x = np.arange(1, 7, dtype=F32).reshape(2, 3)
    idx = np.arange(6, dtype=np.int32).reshape(2, 3)

    def argmax(a, b):  # variadic: (value, index) pairs
        pick = a[0] >= b[0]
        return L.lax.select(pick, a[0], b[0]), L.lax.select(pick, a[1], b[1])

    return (
        _both(
            L, lambda v, i: L.lax.reduce((v, i), (F32(-np.inf), np.int32(0)), argmax, (1,)), x, idx
        ),
        _both(
            L,
            lambda v: L.lax.reduce(
                v, F32(0), lambda a, b: a * 2.0 + b * 0.0 + L.lax.max(a, b), (0,)
            ),
            x,
        ),
        _both(L, lambda v: L.lax.reduce(v, F32(1), lambda a, b: a * b, (0, 1)), x),
        _both(L, lambda v: L.lax.reduce(v, F32(10), L.lax.add, (0,)), x),
    )


@case("lax/reduce_window_any_computation")
def _(L):
    x = np.arange(1, 7, dtype=F32)
    mul = lambda v: L.lax.reduce_window(v, F32(1), lambda a, b: a * b, (2,), (1,), "VALID")  # noqa: E731
    return _both(L, mul, x)


@case("lax/top_k_axis")
def _(L):
    x = np.array([[3, 1, 4], [1, 5, 9], [2, 6, 5], [3, 5, 8]], F32)
    return _both(L, lambda v: L.lax.top_k(v, 2, axis=0), x)


@case("lax/mul_out_dtype")
def _(L):
    a, b = np.int8(3), np.int8(100)
    return _both(L, lambda x, y: L.lax.mul(x, y, out_dtype=np.int32), a, b)


@case("lax/reduce_with_a_captured_lax_add")
def _(L):
    # lax.add captured before the pjrt backend swapped refimpl.lax's names
    add = L.add_at_import
    x = np.arange(6, dtype=F32).reshape(2, 3)
    return (
        _both(L, lambda v: L.lax.reduce(v, F32(0), add, (0,)), x),
        _both(L, lambda v: L.lax.reduce_window(v, F32(0), add, (1, 2), (1, 1), "VALID"), x),
    )


# --- class 5: jnp -----------------------------------------------------------------------------

Z = np.array([1.0 + 2.0j, -0.5 + 0.25j, 0.3 - 1.5j], np.complex64)


def _jvp(L, f, z=Z):
    return L.jax.jvp(f, (z,), (np.ones_like(z),))


@case("jnp/complex_grad_logaddexp")
def _(L):
    return _jvp(L, lambda z: L.jnp.logaddexp(z, Z[::-1])), L.jax.jit(L.jnp.logaddexp)(Z, Z[::-1])


@case("jnp/complex_grad_corrcoef")
def _(L):
    m = np.stack([Z, Z * 2.0 + 1.0j, Z[::-1]])
    return L.jnp.corrcoef(m), L.jax.grad(lambda v: L.jnp.abs(L.jnp.corrcoef(v)).sum())(m)


@case("jnp/complex_grad_round")
def _(L):
    return _both(L, L.jnp.round, Z * 3.3), _jvp(L, L.jnp.round)


@case("jnp/complex_grad_arcsinh")
def _(L):
    return _both(L, L.jnp.arcsinh, Z), _jvp(L, L.jnp.arcsinh)


@case("jnp/take_along_axis_one_hot")
def _(L):
    x = np.arange(12, dtype=F32).reshape(3, 4)
    i = np.array([[0, 3], [1, 5], [2, -1]], np.int32)
    f = lambda v: L.jnp.take_along_axis(v, i, axis=1, mode="one_hot")  # noqa: E731
    return _both(L, f, x), L.jax.grad(lambda v: f(v).sum())(x)


@case("jnp/frexp_gradient")
def _(L):
    return _both(L, L.jax.grad(lambda x: L.jnp.frexp(x)[0]), F32(3.0))


@case("jnp/interp_period")
def _(L):
    xp, fp = F32([0.0, 1.0, 2.0, 3.0]), F32([1.0, 3.0, 2.0, 5.0])
    return _both(L, lambda x: L.jnp.interp(x, xp, fp, period=4.0), F32([-1.5, 0.5, 3.5, 7.25]))


@case("jnp/pad_modes")
def _(L):
    x = np.arange(1, 7, dtype=F32).reshape(2, 3)
    modes = [
        "edge",
        "reflect",
        "symmetric",
        "wrap",
        "linear_ramp",
        "maximum",
        "mean",
        "median",
        "minimum",
    ]
    return [_both(L, lambda v, m=m: L.jnp.pad(v, ((1, 2), (2, 1)), mode=m), x) for m in modes]


@case("jnp/repeat_traced_total_repeat_length")
def _(L):
    x = F32([1.0, 2.0, 3.0])
    f = lambda r: L.jnp.repeat(x, r, total_repeat_length=5)  # noqa: E731
    return _both(L, f, np.array([1, 2, 0], np.int32)), _both(L, f, np.array([3, 3, 3], np.int32))


@case("jnp/roll_array_shifts")
def _(L):
    x = np.arange(12, dtype=F32).reshape(3, 4)
    return (
        _both(L, lambda v, s: L.jnp.roll(v, s, (0, 1)), x, np.array([1, -2], np.int32)),
        _both(L, lambda v, s: L.jnp.roll(v, s, 1), x, np.int32(3)),
    )


@case("jnp/zero_d_arrays_as_axis_and_shape")
def _(L):
    x = np.arange(6, dtype=F32).reshape(2, 3)
    return (
        L.jnp.zeros(np.array(3)),
        L.jnp.sum(x, axis=np.array(1)),
        L.jnp.expand_dims(x, np.array(0)),
        L.jnp.reshape(x, (np.array(3), np.array(2))),
        L.jnp.asarray(x).reshape(np.array(6)),
        L.jnp.asarray(x).reshape(np.array(2), np.array(3)),
    )


@case("jnp/diff_prepend_append")
def _(L):
    x = F32([1.0, 4.0, 9.0, 16.0])
    return _both(L, lambda v: L.jnp.diff(v, n=2, prepend=F32(0.0), append=F32([25.0, 36.0])), x)


@case("jnp/eye_huge_k")
def _(L):
    return [L.jnp.eye(3, 4, k=k) for k in (2**40, -(2**40), 2**31, 2**63)]


@case("jnp/numpy_protocol_arguments")
def _(L):
    x = L.jnp.asarray(np.arange(6, dtype=F32).reshape(2, 3))
    return (
        np.all(x),
        np.any(x, axis=0),
        np.min(x, axis=1),
        np.mean(x),
        x.all(out=None),
        x.any(out=None, keepdims=True),
    )


# --- class 6: random --------------------------------------------------------------------------


@case("random/seeds_any_python_int")
def _(L):
    # random_test's testPRNGKeyArrayOverflow-like seeds: folded to 64 bits
    # (a Python bool is a Python int: True is seed 1)
    seeds = [2**31, 2**32 + 5, 2**63 - 1, -1, -(2**31) - 1, -(2**63), True, np.uint64(2**63 + 7)]
    keys = [L.random.key_data(L.random.PRNGKey(s)) for s in seeds]
    return keys, [L.random.key_data(L.random.key(s)) for s in seeds]


@case("random/seed_past_int64_overflows")
def _(L):
    return L.random.PRNGKey(2**63)


@case("random/bool_seed_under_jit_is_a_type_error")
def _(L):
    return L.jax.jit(L.random.PRNGKey)(True)


@case("random/numpy_bool_seed_is_a_type_error")
def _(L):
    return L.random.key(np.bool_(True))


@case("random/seed_past_int32_overflows_under_jit")
def _(L):
    return L.jax.jit(L.random.PRNGKey)(2**31)


@case("random/typed_key_is_an_array")
def _(L):
    k = L.random.key(0)
    return isinstance(k, L.jax.Array), isinstance(L.random.split(k), L.jax.Array)


@case("random/jit_static_argnames_none")
def _(L):
    f = L.jax.jit(lambda k, x: L.random.normal(k, (2,)) * x, static_argnames=None)
    return f(L.random.key(1), F32(2.0))


@case("random/complex_orthogonal")
def _(L):
    q = L.random.orthogonal(L.random.key(0), 3, dtype=np.complex64)
    return q, L.jnp.abs(q @ L.jnp.conj(q).T)


@case("random/categorical_highest_and_without_replacement")
def _(L):
    k, logits = L.random.key(3), L.jnp.log(F32([0.1, 0.2, 0.3, 0.4]))
    return (
        _both(L, lambda k: L.random.categorical(k, logits, mode="highest"), k),
        _both(L, lambda k: L.random.categorical(k, logits, shape=(3,), replace=False), k),
        _both(
            L,
            lambda k: L.random.categorical(k, logits, shape=(2, 2), replace=False, mode="high"),
            k,
        ),
    )


@case("random/eval_shape_more_than_2_32_elements")
def _(L):
    out = L.jax.eval_shape(lambda k: L.random.normal(k, (2**17, 2**16)), L.random.key(0))
    return out.shape, str(out.dtype)


# --- class 7: vmap and named axes -------------------------------------------------------------


@case("vmap/out_axes_none_batched_output", words="got axis spec None but output was batched")
def _(L):
    return L.jax.vmap(lambda v: v * 2, out_axes=None)(np.ones((2, 3), F32))


@case("vmap/out_axes_none_unbatched_output")
def _(L):
    return L.jax.vmap(lambda v: F32(3.0), out_axes=None)(np.ones((2, 3), F32))


@case("vmap/axis_index_outside_a_named_axis", words="unbound axis name: i")
def _(L):
    return L.lax.axis_index("i")


@case("vmap/axis_index_outside_a_named_axis_jit", words="unbound axis name: i")
def _(L):
    return L.jax.jit(lambda: L.lax.axis_index("i"))()


@case("vmap/axis_env_not_cached_across_calls")
def _(L):
    f = L.jax.jit(lambda v: L.lax.psum(v, "i"))
    a = L.jax.vmap(f, axis_name="i")(np.ones(2, F32))
    b = L.jax.vmap(f, axis_name="i")(np.ones(3, F32))
    c = L.jax.vmap(L.jax.vmap(f, axis_name="i"), axis_name="j")(np.ones((2, 4), F32))
    return a, b, c


@case("vmap/all_none_in_axes_needs_axis_size", words="at least one non-None value in in_axes")
def _(L):
    return L.jax.vmap(lambda v: v, in_axes=None)(np.ones(2, F32))


@case("vmap/all_none_in_axes_with_axis_size")
def _(L):
    return _both(L, L.jax.vmap(lambda v: v * 2, in_axes=None, axis_size=3), np.ones(2, F32))


@case("vmap/conv_batch_size_zero")
def _(L):
    lhs, rhs = np.zeros((0, 1, 1, 4), F32), np.zeros((1, 1, 2), F32)
    f = L.jax.vmap(lambda a, b: L.lax.conv(a, b, (1,), "VALID"), in_axes=(0, None))
    return _both(L, f, lhs, rhs)


@case("vmap/fft_empty_fft_lengths")
def _(L):
    x = (np.arange(6.0) + 1j).reshape(2, 3).astype(np.complex64)
    f = lambda v: L.lax.fft(v, "FFT", ())  # noqa: E731
    return _both(L, f, x), L.jax.vmap(f)(x)


# --- class 8: everything else -----------------------------------------------------------------

XS = F32([0.5, 1.0, 2.0])


@case("else/functions_returned_by_jitted_vjp_linearize_linear_transpose")
def _(L):
    f = lambda x: L.jnp.sin(x) * x  # noqa: E731
    pull = L.jax.jit(lambda x: L.jax.vjp(f, x))(XS)[1]
    lin = L.jax.jit(lambda x: L.jax.linearize(f, x))(XS)[1]
    tr = L.jax.jit(lambda x: L.jax.linear_transpose(lambda t: t * x + 2.0 * t, x))(XS)
    passed = L.jax.jit(lambda pb, c: pb(c))(L.jax.vjp(f, XS)[1], XS)
    return pull(XS), lin(XS), tr(XS), passed


@case("else/linear_transpose_of_integer_functions")
def _(L):
    t = L.jax.linear_transpose(lambda x: x * 2, np.int32(1))
    return t(np.int32(3))


@case("else/linear_transpose_of_integer_functions_through_jit")
def _(L):
    # the integer cotangents reach the jit's transpose (refimpl's transposed
    # call took float cotangents only); checkpoint's is JAX's TypeError too
    i = np.array([1, 2, 3], np.int32)
    f = L.jax.jit(lambda x, y: (x + 2 * y, L.jax.jit(lambda z: -z)(y).sum()))
    return (
        L.jax.linear_transpose(L.jax.jit(lambda x: x * 3), np.int16(1))(np.int16(2)),
        L.jax.linear_transpose(f, i, i)((i, np.int32(5))),
        L.jax.jit(lambda c: L.jax.linear_transpose(L.jax.jit(lambda x: x + x), i)(c))(i),
    )


@case("else/linear_transpose_of_gt")
def _(L):
    # api_test: the comparison's output is dropped before transposing
    f = L.jax.jit(lambda x: (2.0 * x, x > 0))
    return L.jax.linear_transpose(lambda x: f(x)[0], XS)(XS)


@case("else/jacrev_of_complex_inputs")
def _(L):
    z = np.complex64(1.0 + 2.0j)
    return (
        L.jax.jacrev(lambda v: v**2, holomorphic=True)(z),
        L.jax.jacrev(lambda v: L.jnp.abs(v) ** 2)(z),
        L.jax.jacrev(lambda v: L.jnp.real(v * v))(Z),
    )


@case("else/remat_traces_once")
def _(L):
    count = [0]

    def f(x):
        count[0] += 1
        return L.jnp.sin(x) * 2.0

    g = L.jax.remat(f)
    for _ in range(10):
        L.jax.grad(g)(F32(1.0))
    return count[0]


@case("else/static_fori_grad")
def _(L):
    # lax_control_flow_test's testStaticForiGrad
    func = lambda x: L.lax.fori_loop(x, x + 2.0, lambda i, c: c, x)  # noqa: E731
    # bounds a JVP tracer holds concretely make a scan (JAX's is_concrete),
    # so a body that uses the carry is differentiable in reverse mode too
    doubling = lambda x: L.lax.fori_loop(x, x + 2.0, lambda i, c: c * 2.0 + i, x)  # noqa: E731
    return (
        _both(L, L.jax.grad(func), 1.0),
        L.jax.grad(doubling)(1.0),
        L.jax.value_and_grad(doubling)(F32(2.5)),
        L.jax.vjp(doubling, 1.0)[1](1.0),
        L.jax.jvp(L.jax.grad(doubling), (1.0,), (1.0,)),
    )


@case("else/static_fori_grad_under_jit_is_a_while")
def _(L):
    # under jit the bounds are staged: a while loop, not reverse-differentiable
    doubling = lambda x: L.lax.fori_loop(x, x + 2.0, lambda i, c: c * 2.0, x)  # noqa: E731
    return L.jax.jit(L.jax.grad(doubling))(1.0)


@case("else/cond_grad_vmap_nan")
def _(L):
    # lax_control_flow_test's testCondGradVmapNan
    eps = 1e-3

    def safe_stuff(x):
        return L.lax.cond(x < eps, lambda _: eps, lambda _: L.jnp.sqrt(x), ())

    return L.jax.grad(lambda x: L.jax.vmap(safe_stuff)(x).sum())(np.arange(5.0, dtype=F32))


@case(
    "else/scan_length_message", words=r"^scan got values with different leading axis sizes: 3, 4\."
)
def _(L):
    return L.lax.scan(lambda c, x: (c, x), 0.0, (np.zeros(3), np.zeros(4)))


@case(
    "else/scan_length_argument_message", words=r"^scan got `length` argument of 5 which disagrees"
)
def _(L):
    return L.lax.scan(lambda c, x: (c, x), 0.0, np.zeros(3), length=5)


@case("else/eval_shape_of_a_shape_dtype_struct")
def _(L):
    s = L.jax.ShapeDtypeStruct((2, 3), np.float32)
    out = L.jax.eval_shape(lambda x: (x, x.sum(0)), s)
    return [(o.shape, str(o.dtype)) for o in out]


# --- wider variants the audit probed (all agreed) ------------------------------------------


@case("weak/more/jacobians_with_aux_under_jit_and_checkpoint")
def _(L):
    f = lambda x: (L.jnp.sin(x) * 2.0, {"a": x * 3.0})  # noqa: E731
    return (
        L.jax.jit(L.jax.jacfwd(f, has_aux=True))(1.0),
        L.jax.jit(L.jax.jacrev(f, has_aux=True))(1.0),
        L.jax.jacrev(L.jax.jit(f), has_aux=True)(1.0),
        L.jax.jacfwd(L.jax.checkpoint(f), has_aux=True)(1.0),
    )


@case("weak/more/switch_vjp_and_linearize")
def _(L):
    f = lambda x: L.lax.switch(1, [lambda v: v * 2.0, L.jnp.sin, L.jnp.cos], x)  # noqa: E731
    y, pb = L.jax.vjp(f, 1.0)
    y2, pb2 = L.jax.vjp(L.jax.jit(f), 1.0)
    return y, pb(1.0), y2, pb2(1.0), L.jax.linearize(f, 1.0)[1](1.0)


@case("weak/more/scan_weak_init_vmap_jit_jvp")
def _(L):
    xs = L.jnp.arange(3, dtype=F32)
    f = lambda c: L.lax.scan(lambda c, x: (c * x + x, c), c, xs)  # noqa: E731
    return (
        L.jax.vmap(lambda c: f(c))(F32([0.0, 1.0])),
        L.jax.jit(f)(1.0),
        L.jax.jit(L.jax.grad(lambda c: f(c)[0]))(0.5),
        L.jax.jvp(f, (0.5,), (1.0,)),
    )


@case("lax/more/binary_ops_size_one_dims_grad_vmap")
def _(L):
    a = np.arange(6, dtype=F32).reshape(1, 6)
    b = np.arange(6, dtype=F32).reshape(6, 1)
    i = np.arange(4, dtype=np.int32).reshape(4, 1)
    j = np.arange(3, dtype=np.int32).reshape(1, 3)
    return (
        _both(L, L.lax.mul, a, b),
        _both(L, L.lax.sub, b, a),
        _both(L, L.lax.div, a + 1, b + 1),
        _both(L, L.lax.pow, a, b * 0 + 2),
        _both(L, L.lax.rem, i + 5, j + 1),
        _both(L, L.lax.shift_left, i, j),
        _both(L, L.lax.eq, a, b),
        _both(L, L.lax.nextafter, a, b),
        L.jax.grad(lambda x: L.lax.mul(x, b).sum())(a),
        L.jax.vmap(lambda x: L.lax.add(x, b))(np.ones((2, 1, 6), F32)),
    )


@case("lax/more/reduce_computations_grad_vmap")
def _(L):
    x = np.arange(1, 13, dtype=F32).reshape(3, 4)
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    return (
        _both(L, lambda v: L.lax.reduce(v, F32(0), L.lax.add, (1,)), x),
        _both(L, lambda v: L.lax.reduce(v, F32(3), L.lax.max, (0,)), x),
        _both(L, lambda v: L.lax.reduce(v, np.int32(-1), L.lax.bitwise_or, (0, 1)), xi),
        _both(
            L, lambda v: L.lax.reduce(v, F32(-np.inf), lambda a, b: L.jnp.maximum(a, b), (1,)), x
        ),
        _both(L, lambda v: L.lax.reduce(v > 3, True, L.lax.bitwise_and, (1,)), x),
        _both(
            L,
            lambda v: L.lax.reduce(
                [v, v * 2], [F32(0), F32(0)], lambda a, b: [a[0] + b[0], a[1] + b[1]], (0,)
            ),
            x,
        ),
        L.jax.vmap(lambda v: L.lax.reduce(v, F32(1), lambda a, b: a * b, (0,)))(x),
        L.jax.grad(lambda v: L.lax.reduce(v, F32(0), L.lax.add, (0, 1)))(x),
        L.jax.grad(lambda v: L.lax.reduce(v, F32(-np.inf), L.lax.max, (0,)).sum())(x),
    )


@case("lax/more/reduce_window_computations")
def _(L):
    x = np.arange(1, 13, dtype=F32).reshape(3, 4)

    def argmax(a, b):
        p = a[0] >= b[0]
        return L.lax.select(p, a[0], b[0]), L.lax.select(p, a[1], b[1])

    ix = np.arange(12, dtype=np.int32).reshape(3, 4)
    return (
        _both(L, lambda v: L.lax.reduce_window(v, F32(0), L.lax.add, (2, 2), (1, 1), "SAME"), x),
        _both(
            L, lambda v: L.lax.reduce_window(v, F32(-np.inf), L.lax.max, (2, 2), (1, 2), "VALID"), x
        ),
        _both(L, lambda v: L.lax.reduce_window(v, F32(1), L.lax.mul, (2, 1), (1, 1), "VALID"), x),
        _both(
            L,
            lambda v, i: L.lax.reduce_window(
                (v, i), (F32(-np.inf), np.int32(0)), argmax, (2, 2), (1, 1), "VALID"
            ),
            x,
            ix,
        ),
        _both(
            L,
            lambda v: L.lax.reduce_window(
                v,
                F32(0),
                lambda a, b: a + b,
                (2, 2),
                (1, 1),
                ((1, 0), (0, 1)),
                base_dilation=(2, 1),
                window_dilation=(1, 2),
            ),
            x,
        ),
        L.jax.grad(
            lambda v: L.lax.reduce_window(v, F32(0), L.lax.add, (2, 2), (1, 1), "VALID").sum()
        )(x),
        L.jax.vmap(
            lambda v: L.lax.reduce_window(v, F32(1), lambda a, b: a * b, (2,), (1,), "VALID")
        )(x),
    )


@case("lax/more/top_k_axis_grad_vmap_jvp")
def _(L):
    x = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]], F32)
    return (
        _both(L, lambda v: L.lax.top_k(v, 2, axis=-1), x),
        _both(L, lambda v: L.lax.top_k(v, 3, axis=0), x),
        L.jax.grad(lambda v: L.lax.top_k(v, 2, axis=0)[0].sum())(x),
        L.jax.vmap(lambda v: L.lax.top_k(v, 1, axis=0))(x),
        L.jax.jvp(lambda v: L.lax.top_k(v, 2, axis=0)[0], (x,), (x,)),
    )


@case("jnp/more/take_along_axis_modes")
def _(L):
    x = np.arange(12, dtype=F32).reshape(3, 4)
    i = np.array([[0, 3], [1, 5], [2, -1]], np.int32)
    return [
        _both(L, lambda v, m=m: L.jnp.take_along_axis(v, i, axis=1, mode=m), x)
        for m in ("clip", "fill", "one_hot", "promise_in_bounds")
    ] + [
        L.jax.vmap(lambda v, j: L.jnp.take_along_axis(v, j, axis=0, mode="one_hot"))(x, i % 4),
        _both(
            L,
            lambda v: L.jnp.take_along_axis(
                v, i[:, :1] % 4, axis=None if False else 1, mode="one_hot"
            ),
            x,
        ),
    ]


@case("jnp/more/repeat_total_repeat_length_axes_vmap_grad")
def _(L):
    x = np.arange(6, dtype=F32).reshape(2, 3)
    return (
        _both(
            L,
            lambda r: L.jnp.repeat(x, r, axis=1, total_repeat_length=7),
            np.array([1, 2, 3], np.int32),
        ),
        _both(
            L,
            lambda r: L.jnp.repeat(x, r, axis=0, total_repeat_length=3),
            np.array([2, 2], np.int32),
        ),
        _both(L, lambda r: L.jnp.repeat(x, r, total_repeat_length=4), np.int32(2)),
        L.jax.vmap(lambda r: L.jnp.repeat(x[0], r, total_repeat_length=5))(
            np.array([[1, 2, 2], [0, 0, 5]], np.int32)
        ),
        L.jax.grad(lambda v: L.jnp.repeat(v, np.array([1, 2, 3]), total_repeat_length=6).sum())(
            x[0]
        ),
    )


@case("random/more/categorical_axes_and_batches")
def _(L):
    k = L.random.key(5)
    logits = L.jnp.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], F32))
    return (
        L.random.categorical(k, logits, axis=-1, mode="highest"),
        L.random.categorical(k, logits, axis=0, mode="highest"),
        L.random.categorical(k, logits, axis=1, shape=(3, 2), mode="highest"),
        L.random.categorical(k, logits, axis=-1, shape=(2, 2), replace=False),
        L.random.categorical(k, logits, axis=0, shape=(2, 4), replace=False),
        L.random.categorical(k, logits[0], shape=(4,), replace=False, mode="highest"),
        L.jax.vmap(lambda k: L.random.categorical(k, logits[0], shape=(2,), replace=False))(
            L.random.split(k, 3)
        ),
    )


@case("vmap/more/axis_env_across_sizes")
def _(L):
    f = L.jax.jit(lambda v: L.lax.psum(v, "i") + L.lax.axis_index("i"))
    out = []
    for n in (2, 3, 2):
        out.append(L.jax.vmap(f, axis_name="i")(np.ones(n, F32)))
    g = L.jax.jit(lambda v: L.lax.axis_size("i") * v) if hasattr(L.lax, "axis_size") else None
    if g:
        out += [L.jax.vmap(g, axis_name="i")(np.ones(n, F32)) for n in (2, 5)]
    return out


@case("else/more/remat_trace_counts_policies")
def _(L):
    counts = []
    for wrap in (
        lambda f: L.jax.checkpoint(f),
        lambda f: L.jax.checkpoint(f, prevent_cse=False),
        lambda f: L.jax.remat(f, policy=L.jax.checkpoint_policies.nothing_saveable),
    ):
        c = [0]

        def f(x):
            c[0] += 1  # noqa: B023 - called in this iteration only
            return L.jnp.sin(x) * 2.0

        g = wrap(f)
        for _ in range(5):
            L.jax.grad(g)(F32(1.0))
            g(F32(2.0))
            L.jax.vjp(g, F32(1.0))
            L.jax.jvp(g, (F32(1.0),), (F32(1.0),))
        counts.append(c[0])
    return counts


@case("else/more/cond_switch_grad_vmap_nan")
def _(L):
    x = np.array([0.0, 0.0, 1.0, 4.0], F32)

    def f(v):
        return L.lax.cond(v > 0, L.jnp.sqrt, lambda y: y * 0.0, v)

    def s(v):
        return L.lax.switch(
            L.jnp.clip(v, 0, 2).astype(np.int32), [lambda y: y * 0.0, L.jnp.sqrt, L.jnp.log], v
        )

    return (
        L.jax.grad(lambda v: L.jax.vmap(f)(v).sum())(x),
        L.jax.grad(lambda v: L.jax.vmap(s)(v).sum())(x),
        L.jax.jit(L.jax.grad(lambda v: L.jax.vmap(f)(v).sum()))(x),
        L.jax.vmap(L.jax.grad(f))(x),
        L.jax.jacrev(L.jax.vmap(f))(x),
    )


@case("refs/more/scan_reading_a_ref_grad_vjp")
def _(L):
    def f(x):
        r = L.jax.new_ref(x * 2)

        def body(c, _):
            return c + L.jnp.sin(r[...]), None

        return L.lax.scan(body, x, None, length=3)[0]

    return (
        L.jax.grad(lambda x: f(x).sum())(XS),
        L.jax.jit(L.jax.grad(lambda x: f(x).sum()))(XS),
        L.jax.vjp(f, XS)[1](XS),
    )


# --- left from earlier rounds (docs/parity_audit.md's second table) -----------------------------


@case("left/typeof_of_typed_keys")
def _(L):
    # api_test / random_test: jax.typeof of a typed key array is its logical
    # type, key<fry>[...] (not the uint32 key data's), eager, under jit and vmap
    k = L.random.key(0)
    keys = L.random.split(k, 3)
    seen = []

    def f(key):
        seen.append(str(L.jax.typeof(key)))
        return key

    L.jax.jit(f)(keys)
    L.jax.vmap(f)(keys)
    t = L.jax.typeof(keys)
    return (
        str(L.jax.typeof(k)),
        repr(L.jax.typeof(keys)),
        str(t.dtype),
        t.shape,
        t.weak_type,
        L.jax.typeof(k) == L.jax.typeof(L.random.key(1)),
        str(L.jax.typeof(L.random.key(0, impl="rbg"))),
        str(L.jax.typeof(L.random.PRNGKey(0))),
        tuple(seen),
    )


@case("left/repr_of_a_jitted_function")
def _(L):
    # api_test: a jitted function prints as JAX's C++ wrapper,
    # <PjitFunction of <function f at 0x...>>, the wrapped callable's repr
    # inside (nested jits nest)
    def f(x):
        return x

    mesh = L.jax.sharding.Mesh(L.jax.devices()[:1], ("x",))
    sharded = L.jax.jit(f, in_shardings=L.jax.sharding.NamedSharding(mesh, L.jax.P()))
    texts = (
        repr(L.jax.jit(f)),
        str(L.jax.jit(f)),
        repr(L.jax.jit(L.jax.jit(f))),
        repr(sharded),
    )
    return tuple(t.replace(repr(f), "F") for t in texts)


def _kinds(tree):
    """Each leaf's kind: host data by its Python type, an array as 'array'."""
    leaves = jax.tree_util.tree_leaves(tree) if isinstance(tree, tuple) else [tree]
    host = (float, int, np.ndarray, np.generic)
    return tuple(type(x).__name__ if type(x) in host else "array" for x in leaves)


@case("left/ad_outputs_pass_host_values_through")
def _(L):
    # api_test: jvp, linearize and vjp hand back a primal output the function
    # returned as host data (a Python number, a NumPy array) untouched, as
    # they hand back has_aux's aux; computed outputs and tangents are arrays
    a = np.ones(3, F32)

    def f(x):
        return x * 2, 2.0, a, 3, np.float32(4)

    x = L.jnp.ones(3)
    p, t = L.jax.jvp(f, (x,), (x,))
    lin_p, f_jvp = L.jax.linearize(f, x)
    vjp_p, _ = L.jax.vjp(f, x)
    aux = L.jax.jvp(lambda x: (x, (2.0, a)), (x,), (x,), has_aux=True)[2]
    return (
        _kinds(p),
        _kinds(t[:3]),
        _kinds(lin_p),
        _kinds(f_jvp(x)[:3]),
        _kinds(vjp_p),
        _kinds(aux),
        p[1:4],
    )


def _which(tree, **given):
    """Each leaf: the name of the user's object it is (``is``), else its kind."""
    leaves = jax.tree_util.tree_leaves(tree, is_leaf=lambda x: x is None)
    names = [next((n for n, g in given.items() if x is g), None) for x in leaves]
    return tuple(n or k for n, k in zip(names, _kinds(tuple(leaves)), strict=True))


@case("left/ad_hands_back_the_users_own_inputs")
def _(L):
    # api_test's jvp of an identity: JAX's tracers hold the user's own primals
    # and tangents, and nothing converts them on the way out; where no
    # operation made a new value the NumPy array or Python number the user
    # passed comes back as itself (jvp, linearize and its linear function,
    # vjp's pullback, aux), where one did (a jitted jnp function under jvp,
    # vjp's primal) an array does
    a, t, s, ts = np.arange(3.0, dtype=F32), np.ones(3, F32), 2.0, 1.5
    names = {"a": a, "t": t, "s": s, "ts": ts}
    ident = lambda x: x  # noqa: E731
    swap = lambda x, y: (y, x)  # noqa: E731
    lin_p, lin_f = L.jax.linearize(swap, a, s)
    return (
        _which(L.jax.jvp(ident, (a,), (t,)), **names),
        _which(L.jax.jvp(swap, (a, s), (t, ts)), **names),
        _which(L.jax.jvp(lambda x: (x, {"k": x}), (a,), (t,), has_aux=True), **names),
        # a rule passing the tangent through (lax.add of a constant): the tangent
        _which(L.jax.jvp(lambda x: L.lax.add(x, 1.0), (a,), (t,)), **names),
        # jnp functions are jits in JAX: new arrays, also for an identity
        _which(L.jax.jvp(L.jnp.asarray, (a,), (t,)), **names),
        _which(L.jax.jvp(lambda x: x + 0, (a,), (t,)), **names),
        _which(L.jax.jvp(L.jnp.squeeze, (a,), (t,)), **names),
        # ... but no jit: concatenate of one array, a same-shape reshape, .T
        _which(L.jax.jvp(lambda x: L.jnp.concatenate([x]), (a,), (t,)), **names),
        _which(L.jax.jvp(lambda x: (x.reshape(3), x.T, x[...]), (a,), (t,)), **names),
        _which((lin_p, lin_f(t, ts)), **names),
        _which(L.jax.linearize(lambda x: (x * 2, x), a, has_aux=True)[2], **names),
        _which(L.jax.linearize(lambda x: (x, x * 2), a)[1](t), **names),
        # vjp's primal output is an array; its pullback returns what it was given
        _which(L.jax.vjp(ident, a)[0], **names),
        _which(L.jax.vjp(swap, a, s)[1]((ts, t)), **names),
        _which(L.jax.vjp(lambda x: x * 2, s)[1](ts), **names),
        _which(L.jax.linear_transpose(swap, a, s)((s, a)), **names),
        _which(L.jax.linear_transpose(lambda x: (x, x), a)((a, a)), **names),
    )


@case("left/vmap_hands_back_the_users_own_inputs")
def _(L):
    # batching_test: vmap's tracers hold the user's values too; an output no
    # operation touched comes back as the function returned it (at its own
    # batch axis, or out_axes=None), a NumPy argument whose axis moves is
    # moved by NumPy, an unbatched output broadcast is an array; jits and
    # jax.lax.fft (a jit in JAX) make arrays
    a, b = np.arange(3.0, dtype=F32), np.ones((2, 3), F32)
    names = {"a": a, "b": b}
    ident = lambda x: x  # noqa: E731
    vmap = L.jax.vmap
    return (
        _which(vmap(ident)(a), **names),
        _which(vmap(lambda x, y: (y, x))(a, a), **names),
        _which(vmap(ident, in_axes=1, out_axes=1)(b), **names),
        _which(vmap(ident, in_axes=1, out_axes=0)(b), **names),
        _which(vmap(lambda x: (a, 2.0, 3), out_axes=None)(a), **names),
        _which(vmap(lambda x, y: y, in_axes=(0, None), out_axes=None)(a, b), **names),
        _which(vmap(lambda x: (a, 2.0))(a), **names),
        _which(vmap(vmap(ident))(b), **names),
        _which(vmap(lambda x: (x.reshape(3), L.jnp.asarray(x)))(b), **names),
        _which(L.jax.jit(vmap(ident))(a), **names),
        _which(vmap(lambda v: L.lax.fft(v, "FFT", ()))(b.astype(np.complex64)), **names),
    )


def _outcomes(calls):
    """Each thunk's outcome: 'ok' or the class of what it raised."""
    seen = []
    for call in calls:
        try:
            call()
            seen.append("ok")
        except Exception as error:  # noqa: BLE001 - the class is compared
            seen.append(type(error).__name__)
    return tuple(seen)


@case("left/unhashable_static_arguments")
def _(L):
    # lax_numpy_test / lax_test: the functions JAX 0.10.2 runs as a jit with
    # static arguments refuse an unhashable one (a 0-d NumPy array or a list
    # as axis: ValueError); the ones that are no jit read a 0-d integer array
    # as its int (sum, take, flip, lax.cumsum, nn.softmax)
    jnp, ax = L.jnp, np.array(1)
    x = L.jnp.asarray(np.arange(12, dtype=F32).reshape(3, 4))
    return _outcomes(
        [
            lambda: jnp.cumsum(x, ax),
            lambda: jnp.cumsum(x, axis=[1]),
            lambda: jnp.sort(x, ax),
            lambda: jnp.argsort(x, axis=ax),
            lambda: jnp.swapaxes(x, ax, 0),
            lambda: jnp.diagonal(x, 0, ax, 0),
            lambda: jnp.quantile(x, 0.5, axis=ax),
            lambda: jnp.diff(x, axis=ax),
            lambda: jnp.median(x, ax),
            lambda: jnp.take_along_axis(x, np.zeros((3, 1), np.int32), ax),
            lambda: jnp.rot90(x, 1, [0, 1]),
            lambda: jnp.linalg.norm(x, axis=ax),
            lambda: L.jax.nn.log_softmax(x, ax),
            lambda: L.jax.nn.one_hot(np.array([1, 2]), 3, axis=np.array(0)),
            lambda: L.lax.fft(x.astype(np.complex64), "FFT", [4]),
            lambda: jnp.sum(x, ax),
            lambda: jnp.take(x, 0, ax),
            lambda: jnp.flip(x, ax),
            lambda: L.lax.cumsum(x, ax),
            lambda: L.lax.cumlogsumexp(x, ax),
            lambda: L.jax.nn.softmax(x, ax),
            lambda: jnp.cumsum(x, np.int64(1)),
            lambda: jnp.fft.fft(x, axis=ax),  # JAX hashes it: TypeError
            lambda: jnp.fft.rfft(x, axis=np.int64(1)),
        ]
    )


@case("left/eye_of_a_numpy_integer_k")
def _(L):
    # lax_numpy_test: JAX 0.10.2 makes a NumPy integer k an array of the
    # canonical integer type (x64 off: an int64 wraps to int32, so
    # np.int64(2**40) is the main diagonal); a Python int is exact (zeros)
    ks = (np.int64(2**40), np.int64(2**32 + 1), np.int64(-(2**32) + 2), np.uint64(2**33 + 1))
    return (
        *(L.jnp.eye(3, 4, k=k) for k in ks),
        L.jnp.eye(3, 4, k=np.array(2**40)),
        L.jnp.eye(3, 4, k=2**40),
        L.jnp.eye(3, 4, k=np.int32(1)),
    )


@case("left/prng_key_of_none", words="None is not a valid value for jnp.array")
def _(L):
    # random_test: a None seed is jnp.asarray's ValueError
    return L.random.PRNGKey(None)


@case("left/key_of_none", words="None is not a valid value for jnp.array")
def _(L):
    return L.random.key(None)


@case("left/type_and_array_texts")
def _(L):
    # api_test / mutable_array_test: a Ref type prints with the dtype spelled
    # out (str and repr: Ref{float32[3]}); an empty array's repr names its shape
    ref_type = L.jax.typeof(L.jax.new_ref(L.jnp.ones(3)))
    empties = (np.zeros((0, 3), F32), np.zeros((2, 0), np.int32), np.zeros(0, F32))
    return (str(ref_type), repr(ref_type), *(repr(L.jnp.asarray(e)) for e in empties))


# --- the comparison -----------------------------------------------------------------------------


def _outcome(L, name):
    try:
        return CASES[name](L), None
    except Exception as error:  # noqa: BLE001 - the class is compared
        return None, error


def _is_array(x):
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _weak(x):
    aval = getattr(x, "aval", None)
    return bool(getattr(aval, "weak_type", False))


def assert_same_results(got, want, rtol=2e-6, weak=True):
    got_leaves = ri.tree_util.tree_leaves(got)
    want_leaves = jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves), (got, want)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        if not _is_array(w):
            assert type(g) is type(w) and g == w, (g, w)
            continue
        assert _is_array(g), (g, w)
        if jax.dtypes.issubdtype(w.dtype, jax.dtypes.prng_key):
            g, w = ri.random.key_data(g), jax.random.key_data(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert np.dtype(g.dtype) == np.dtype(w.dtype), (g.dtype, w.dtype)
        assert _weak(g) == _weak(w) or not weak, (g, w)
        gv, wv = np.asarray(g), np.asarray(w)
        if gv.dtype == jax.dtypes.float0:
            continue
        np.testing.assert_allclose(gv, wv, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_issue29_behaviour_as_jax(backend, name):
    want, want_error = _outcome(JAX, name)
    got, got_error = _outcome(RI, name)
    if want_error is not None:
        assert got_error is not None, f"JAX raised {want_error!r}, refimpl returned {got!r}"
        assert type(got_error).__name__ == type(want_error).__name__, (got_error, want_error)
        if name in WORDS:
            assert re.search(WORDS[name], str(want_error)), want_error
            assert re.search(WORDS[name], str(got_error)), got_error
        return
    if got_error is not None:
        raise got_error
    assert_same_results(got, want, weak=name not in WEAK_KNOWN)


def test_cost_analysis_is_the_plugins_or_none(backend):
    # JAX 0.10.2 on CPU answers a dict from XLA's in-process HLO cost
    # analysis; refimpl asks the PJRT plugin (the CPU plugin: UNIMPLEMENTED),
    # giving None, which JAX's contract allows ("None if unavailable");
    # conformance/known.py api.paths/cost_analysis_kinds
    lowered = ri.jit(lambda x: x * 2).lower(np.arange(3, dtype=F32))
    assert lowered.cost_analysis() is None
    assert lowered.compile().cost_analysis() is None
    want = jax.jit(lambda x: x * 2).lower(np.arange(3, dtype=F32))
    assert isinstance(want.cost_analysis(), dict)


def test_nested_pmap_runs_where_jax_raises(backend):
    # JAX 0.10.2's pmap (a shard_map underneath) rejects a pmap nested in a
    # pmap, even 1 x 1, with its context-mesh ValueError; refimpl runs it, as
    # JAX's own pmap_test.testNestedBasic expects (docs/semantics.md, pmap's
    # "Left different"; values against JAX's shard_map in
    # tests/transforms/test_pmap.py::test_nested_2x2_against_shard_map)
    x = np.arange(1.0, dtype=F32).reshape(1, 1) + 3

    def body(v):
        return jlax.psum(jlax.psum(v, "j"), "i")

    with pytest.raises(ValueError, match="should match the mesh passed to shard_map"):
        jax.pmap(jax.pmap(body, "j"), "i")(x)
    got = ri.pmap(ri.pmap(lambda v: rlax.psum(rlax.psum(v, "j"), "i"), "j"), "i")(x)
    np.testing.assert_array_equal(np.asarray(got), x)


@pytest.mark.parametrize("method", ["eigh", "svd"])
def test_multivariate_normal_factor_signs_on_pjrt(method):
    # JAX 0.10.2 factors cov with LAPACK (syevd / gesdd custom calls); pjrt's
    # lowering is Jacobi, whose vectors may have other column signs: its
    # samples are JAX's draws through JAX's factor with some columns negated
    # (known.py random_more/multivariate_normal_*; the reference backend,
    # LAPACK through NumPy, gives JAX's samples: tests/surface/test_random.py)
    cov = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 1.5]], F32)
    mean = np.array([1.0, -1.0, 0.5], F32)
    got = np.asarray(
        ri.jit(lambda k: rrandom.multivariate_normal(k, mean, cov, (4,), method=method),
               backend="pjrt")(rrandom.key(0))
    )  # fmt: skip
    key = jrandom.key(0)
    want = np.asarray(jrandom.multivariate_normal(key, mean, cov, (4,), method=method))
    if method == "eigh":
        w, v = np.linalg.eigh(cov.astype(np.float64))
        factor = v * np.sqrt(w)
    else:
        u, s, _ = np.linalg.svd(cov.astype(np.float64))
        factor = u * np.sqrt(s)
    z = np.asarray(jrandom.normal(key, (4, 3)), np.float64)
    np.testing.assert_allclose(mean + z @ factor.T, want, atol=1e-5)  # JAX's algorithm
    flips = [np.diag(signs) for signs in np.array(np.meshgrid(*[[1, -1]] * 3)).reshape(3, -1).T]
    errors = [np.abs(mean + z @ (factor @ flip).T - got).max() for flip in flips]
    assert min(errors) < 1e-5, errors
    assert not np.allclose(got, want, atol=1e-3)  # (the difference this documents)


@pytest.mark.parametrize(
    "name, fun, n_args",
    [
        ("identity", lambda x: x, 1),
        ("pair", lambda x, y: (x, y), 2),
        ("add", lambda x, y: x + 3.0 * y, 2),
        ("plus_zero", lambda x: x + 0.0, 1),
        ("sum", lambda x, y: x + y, 2),
    ],
)
def test_linear_transpose_hands_back_only_what_no_equation_read(backend, name, fun, n_args):
    """JAX 0.10.2: a cotangent comes back as the user's NumPy array only for
    an input the function returns as it is; one an equation reads (add's
    transpose passes it through) is a new Array. (Found by CI: the
    linear_transpose docstring's example.)"""
    ct = np.ones(2, np.float32)
    n_out = 2 if name == "pair" else 1
    arg = (ct, ct) if n_out == 2 else ct

    def kinds(lib):
        spec = lib.ShapeDtypeStruct((2,), np.float32)
        out = lib.linear_transpose(fun, *[spec] * n_args)(arg)
        return [type(v) is np.ndarray for v in out], [np.asarray(v) for v in out]

    (got_host, got), (want_host, want) = kinds(ri), kinds(jax)
    assert got_host == want_host
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
