"""User-defined primitives through ``jax.interpreters`` (lane INTERP, issue 29).

A primitive defined the JAX 0.10.2 way (``jax.extend.core.Primitive`` with
``def_impl``/``def_abstract_eval``, rules registered through
``jax.interpreters.ad``, ``batching`` and ``mlir``) runs under ``jit``,
``jvp``/``grad``/``vjp``/``linear_transpose`` and ``vmap`` as on JAX: the same
program is defined once with JAX's modules and once with refimpl's (under
``as_jax``, both backends) and the results are compared with JAX live.

Known, documented differences kept out of the compared cases
(docs/semantics.md 15.4): JAX's eager ``bind`` returns what the impl returns
(NumPy values, float64 for Python floats), refimpl's an array of the
abstract evaluation's type; the reference backend runs the impl under
``jit`` (it never lowers), so a hand-written MLIR rule changes nothing there.
"""

from __future__ import annotations

import functools
import importlib
from types import SimpleNamespace

import numpy as np
import pytest

from refimpl import as_jax
from tests.helpers.case_summary import SUMMARY_SOURCE


def _modules():
    """The modules a user's primitive definition imports (JAX's or, under
    ``as_jax``, refimpl's)."""
    names = {
        "jax": "jax",
        "jnp": "jax.numpy",
        "core": "jax.extend.core",
        "ad": "jax.interpreters.ad",
        "batching": "jax.interpreters.batching",
        "mlir": "jax.interpreters.mlir",
    }
    return SimpleNamespace(**{k: importlib.import_module(v) for k, v in names.items()})


def _unary(m, name, impl, lowered):
    p = m.core.Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(lambda a: m.jax.core.ShapedArray(a.shape, a.dtype))
    m.mlir.register_lowering(p, m.mlir.lower_fun(lowered, multiple_results=False))
    return p


def _define(m):
    """The primitives of JAX's "How primitives work" and its rule helpers,
    written as users write them; -> name: thunk."""
    jx, jnp, ad, batching, mlir = m.jax, m.jnp, m.ad, m.batching, m.mlir
    shaped = jx.core.ShapedArray

    # multiply_add: explicit jvp, transpose and batch rules, a lower_fun lowering
    ma = m.core.Primitive("multiply_add")
    ma.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    ma.def_abstract_eval(lambda x, y, z: shaped(x.shape, x.dtype))
    mlir.register_lowering(ma, mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))

    def ma_jvp(primals, tangents):
        (x, y, z), (xt, yt, zt) = primals, tangents
        xt, yt, zt = (ad.instantiate_zeros(t) for t in (xt, yt, zt))
        return ma.bind(x, y, z), ma.bind(xt, y, ma.bind(x, yt, zt))

    def ma_transpose(ct, x, y, z):
        if not ad.is_undefined_primal(x):  # linear in y
            ct_y = (
                ad.Zero(y.aval.to_tangent_aval())
                if type(ct) is ad.Zero
                else ma.bind(x, ct, jnp.zeros_like(x))
            )
            return None, ct_y, ct
        ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else ma.bind(ct, y, jnp.zeros_like(y))
        return ct_x, None, ct

    def ma_batch(args, dims):
        assert dims[0] == dims[1] == dims[2]
        return ma.bind(*args), dims[0]

    ad.primitive_jvps[ma] = ma_jvp
    ad.primitive_transposes[ma] = ma_transpose
    batching.primitive_batchers[ma] = ma_batch

    def affine(a, b):  # x * 3 + b: linear in a and b
        return ma.bind(a, jnp.float32(3.0) * jnp.ones_like(a), b)

    sin_ = _unary(m, "my_sin", np.sin, jnp.sin)
    ad.defjvp(sin_, lambda g, x: g * jnp.cos(x))
    batching.defvectorized(sin_)
    exp_ = _unary(m, "my_exp", np.exp, jnp.exp)
    ad.defjvp2(exp_, lambda g, ans, x: g * ans)
    dbl = _unary(m, "double", lambda x: 2 * x, lambda x: 2 * x)
    ad.deflinear(dbl, lambda ct: [2 * ct])
    batching.defvectorized(dbl)

    scale = m.core.Primitive("scale")  # a param, deflinear2's rule reads the operands
    scale.def_impl(lambda x, *, k: x * np.asarray(k, x.dtype))
    scale.def_abstract_eval(lambda a, *, k: shaped(a.shape, a.dtype))
    ad.deflinear2(scale, lambda ct, x, *, k: [scale.bind(ct, k=k)])
    mlir.register_lowering(scale, mlir.lower_fun(lambda x, *, k: x * k, multiple_results=False))

    barrier = m.core.Primitive("barrier")  # the identity barrier libraries define
    barrier.def_impl(lambda x: x)
    barrier.def_abstract_eval(lambda x: x)
    mlir.register_lowering(
        barrier, mlir.lower_fun(jx.lax.optimization_barrier, multiple_results=False)
    )
    ad.deflinear(barrier, lambda ct: (barrier.bind(ct),))
    batching.defvectorized(barrier)

    sc = m.core.Primitive("sincos")  # multiple results
    sc.multiple_results = True
    sc.def_impl(lambda x: (np.sin(x), np.cos(x)))
    sc.def_abstract_eval(lambda a: (shaped(a.shape, a.dtype), shaped(a.shape, a.dtype)))

    def sc_jvp(primals, tangents):
        s, c = sc.bind(*primals)
        t = ad.instantiate_zeros(tangents[0])
        return (s, c), (c * t, -s * t)

    ad.primitive_jvps[sc] = sc_jvp
    batching.primitive_batchers[sc] = lambda args, dims: (sc.bind(*args), (dims[0], dims[0]))
    mlir.register_lowering(
        sc, mlir.lower_fun(lambda x: (jnp.sin(x), jnp.cos(x)), multiple_results=True)
    )

    hyp = m.core.Primitive("hyp")  # broadcasting operands
    hyp.def_impl(lambda x, y: np.sqrt(x * x + y * y))
    hyp.def_abstract_eval(lambda a, b: shaped(np.broadcast_shapes(a.shape, b.shape), a.dtype))
    batching.defbroadcasting(hyp)
    mlir.register_lowering(
        hyp, mlir.lower_fun(lambda x, y: jnp.sqrt(x * x + y * y), multiple_results=False)
    )

    mul = m.core.Primitive("my_mul")  # defbilinear
    mul.def_impl(lambda x, y: x * y)
    mul.def_abstract_eval(lambda a, b: shaped(a.shape, a.dtype))
    ad.defbilinear(mul, lambda ct, x, y: mul.bind(ct, y), lambda ct, x, y: mul.bind(x, ct))
    mlir.register_lowering(mul, mlir.lower_fun(lambda x, y: x * y, multiple_results=False))

    class Tag(m.core.Primitive):  # a subclass whose own methods are its rules (as kfac's tags)
        def __init__(self):
            super().__init__("layer_tag")
            self.multiple_results = True
            self.def_impl(self._impl)
            self.def_abstract_eval(self._abstract_eval)
            mlir.register_lowering(self, mlir.lower_fun(self._impl, multiple_results=True))
            ad.deflinear(self, self._transpose)
            batching.primitive_batchers[self] = self._batch

        def _impl(self, *args, **params):
            return list(args)

        def _abstract_eval(self, *avals, **params):
            return list(avals)

        def _transpose(self, cts, **params):
            return [ad.instantiate_zeros(c) for c in cts]

        def _batch(self, args, dims, **params):
            return self.bind(*args, **params), dims

    tag = Tag()
    xla = importlib.import_module(f"{jx.__name__}.interpreters.xla")
    lowered = m.core.Primitive("lowered_only")  # defined by its lowering (impl: apply_primitive)
    lowered.def_impl(functools.partial(xla.apply_primitive, lowered))
    lowered.def_abstract_eval(lambda a, *, k: shaped(a.shape, a.dtype))
    mlir.register_lowering(
        lowered, mlir.lower_fun(lambda x, *, k: jnp.sin(x) * k, multiple_results=False)
    )
    ad.defjvp(lowered, lambda g, x, *, k: g * jnp.cos(x) * k)
    batching.defvectorized(lowered)
    unlowered = m.core.Primitive("unlowered")
    unlowered.def_impl(functools.partial(xla.apply_primitive, unlowered))
    unlowered.def_abstract_eval(lambda a: shaped(a.shape, a.dtype))
    seen = []  # the types of the sequences the rules are given (JAX: tuples)
    ident = _unary(m, "ident", lambda x: x, lambda x: x)

    def ident_jvp(primals, tangents):
        seen.append(["jvp", type(primals).__name__, type(tangents).__name__])
        return ident.bind(*primals), ident.bind(*tangents)

    def ident_batch(args, dims):
        seen.append(["batch", type(args).__name__, type(dims).__name__, dims == (0,)])
        return ident.bind(*args), dims[0]

    ad.primitive_jvps[ident] = ident_jvp
    batching.primitive_batchers[ident] = ident_batch

    def conventions():
        jx.jvp(ident.bind, (v,), (w,))
        jx.vmap(ident.bind)(v)
        return seen

    tpu = _unary(m, "tpu_only", np.cos, jnp.cos)
    mlir.register_lowering(tpu, mlir.lower_fun(jnp.cos, multiple_results=False), platform="tpu")

    f32 = jnp.float32
    v = jnp.arange(3.0, dtype=jnp.float32)
    w = jnp.array([1.0, 2.0, 4.0], dtype=jnp.float32)
    square_add = lambda a, b: ma.bind(a, a, b)  # noqa: E731
    dsum = lambda x: jnp.sum(dbl.bind(x) ** 2)  # noqa: E731
    return {
        "ma.jit": lambda: jx.jit(square_add)(f32(2.0), f32(10.0)),
        "ma.jit_weak": lambda: jx.jit(square_add)(2.0, 10.0),
        "ma.jit_vec": lambda: jx.jit(square_add)(v, w),
        "ma.jvp": lambda: jx.jvp(square_add, (f32(2.0), f32(10.0)), (f32(1.0), f32(1.0))),
        "ma.jit_jvp": lambda: jx.jit(lambda a: jx.jvp(square_add, (a, a), (a, a)))(f32(2.0)),
        "ma.grad": lambda: jx.grad(affine, argnums=(0, 1))(f32(2.0), f32(10.0)),
        "ma.jit_grad": lambda: jx.jit(jx.grad(affine, argnums=(0, 1)))(f32(2.0), f32(10.0)),
        "ma.vjp": lambda: jx.vjp(affine, v, w)[1](w),
        "ma.vmap": lambda: jx.vmap(square_add)(v, w),
        "ma.jit_vmap": lambda: jx.jit(jx.vmap(square_add))(v, w),
        "ma.vmap_grad": lambda: jx.vmap(jx.grad(affine))(v, w),
        "ma.linearize": lambda: jx.linearize(affine, f32(2.0), f32(1.0))[1](f32(1.0), f32(0.0)),
        "ma.transpose_both_linear": lambda: jx.grad(square_add)(f32(2.0), f32(1.0)),
        "sin.grad": lambda: jx.grad(sin_.bind)(f32(1.0)),
        "sin.jit_grad": lambda: jx.jit(jx.grad(sin_.bind))(f32(1.0)),
        "sin.grad_grad": lambda: jx.grad(jx.grad(sin_.bind))(f32(1.0)),
        "sin.vmap": lambda: jx.vmap(sin_.bind)(v),
        "sin.jit_vmap_grad": lambda: jx.jit(jx.vmap(jx.grad(sin_.bind)))(v),
        "sin.jvp_weak": lambda: jx.jvp(sin_.bind, (1.0,), (1.0,))[1],
        "sin.transpose_missing": lambda: jx.linear_transpose(sin_.bind, f32(1.0))(f32(1.0)),
        "exp.grad": lambda: jx.grad(exp_.bind)(f32(1.0)),
        "exp.jit_grad_weak": lambda: jx.jit(jx.grad(exp_.bind))(1.0),
        "exp.grad_grad": lambda: jx.grad(jx.grad(exp_.bind))(f32(1.0)),
        "exp.vmap_missing": lambda: jx.vmap(exp_.bind)(v),
        "dbl.jvp": lambda: jx.jvp(dbl.bind, (v,), (w,)),
        "dbl.grad": lambda: jx.grad(dsum)(v),
        "dbl.jit_grad": lambda: jx.jit(jx.grad(dsum))(v),
        "dbl.linear_transpose": lambda: jx.linear_transpose(dbl.bind, v)(w),
        "dbl.vmap_jvp": lambda: jx.vmap(lambda x: jx.jvp(dbl.bind, (x,), (x,)))(v),
        "scale.grad": lambda: jx.grad(lambda x: jnp.sum(scale.bind(x, k=3.0)))(v),
        "scale.jit": lambda: jx.jit(lambda x: scale.bind(x, k=3.0))(v),
        "scale.vmap_missing": lambda: jx.vmap(lambda x: scale.bind(x, k=3.0))(v),
        "barrier.jit_weak": lambda: jx.jit(barrier.bind)(2.0),
        "barrier.grad": lambda: jx.jit(jx.grad(lambda x: jnp.sum(barrier.bind(x) * x)))(w),
        "barrier.vmap": lambda: jx.jit(jx.vmap(barrier.bind))(w),
        "sc.jit": lambda: jx.jit(sc.bind)(v),
        "sc.grad": lambda: jx.grad(lambda x: sum(sc.bind(x)))(f32(1.0)),
        "sc.jit_grad": lambda: jx.jit(jx.grad(lambda x: sum(sc.bind(x))))(f32(1.0)),
        "sc.vmap": lambda: jx.vmap(sc.bind)(v),
        "sc.jacfwd": lambda: jx.jacfwd(sc.bind)(v),
        "hyp.vmap": lambda: jx.vmap(hyp.bind)(v, w),
        "hyp.vmap_unbatched_scalar": lambda: jx.vmap(hyp.bind, in_axes=(0, None))(v, f32(1.0)),
        "hyp.vmap_axes": lambda: jx.vmap(hyp.bind, in_axes=(1, 0))(
            jnp.ones((2, 3), jnp.float32), jnp.ones((3, 2), jnp.float32)
        ),
        "hyp.jit_vmap_broadcast": lambda: jx.jit(jx.vmap(hyp.bind, in_axes=(0, None)))(
            v, jnp.ones(2, jnp.float32)
        ),
        "hyp.grad_missing": lambda: jx.grad(hyp.bind)(f32(1.0), f32(2.0)),
        "mul.grad": lambda: jx.grad(lambda x, y: jnp.sum(mul.bind(x, y)), (0, 1))(v, w),
        "mul.jit_jvp": lambda: jx.jit(lambda x, y: jx.jvp(mul.bind, (x, y), (y, x)))(v, w),
        "tpu_only.grad_missing": lambda: jx.grad(tpu.bind)(f32(1.0)),
        "rule_conventions": conventions,
        "apply_primitive.eager": lambda: lowered.bind(v, k=2.0),
        "apply_primitive.jit": lambda: jx.jit(lambda a: lowered.bind(a, k=2.0))(v),
        "apply_primitive.grad": lambda: jx.grad(lambda a: jnp.sum(lowered.bind(a, k=2.0)))(v),
        "apply_primitive.vmap": lambda: jx.vmap(lambda a: lowered.bind(a, k=2.0))(v),
        "apply_primitive.no_lowering": lambda: unlowered.bind(v),
        "subclass.jit": lambda: jx.jit(lambda a: tag.bind(a, a * 2, name="t"))(v),
        "subclass.grad": lambda: jx.grad(lambda a: jnp.sum(tag.bind(a, a * 2, name="t")[1] ** 2))(
            v
        ),
        "subclass.vmap": lambda: jx.vmap(lambda a, b: tag.bind(a, b, name="t"), in_axes=(0, 1))(
            jnp.ones((2, 3), jnp.float32), jnp.ones((3, 2), jnp.float32)
        ),
        "tangent_aval": lambda: [
            str(a.to_tangent_aval())
            for a in (shaped((2,), jnp.float32), shaped((), jnp.int32, weak_type=True))
        ],
        "get_transpose_missing": lambda: ad.get_primitive_transpose(sin_),
        "tables": lambda: [
            ma in ad.primitive_jvps,
            exp_ in ad.primitive_transposes,
            dbl in ad.primitive_transposes,
            callable(ad.get_primitive_transpose(dbl)),
        ],
        "zeros_like_aval": lambda: ad.zeros_like_aval(shaped((2,), jnp.float32)),
        "instantiate_zeros": lambda: ad.instantiate_zeros(ad.Zero(shaped((2,), jnp.float32))),
        "add_tangents": lambda: ad.add_tangents(w, ad.Zero(shaped((3,), jnp.float32))),
        "bdim_at_front": lambda: batching.bdim_at_front(jnp.ones((2, 3), jnp.float32), 1, 3),
        "bdim_at_front_unbatched": lambda: batching.bdim_at_front(w, None, 2),
        "batchers_write_only": lambda: batching.primitive_batchers[ma],
        "not_mapped_not_public": lambda: batching.not_mapped,
    }


_SUMMARY: dict = {}
exec(SUMMARY_SOURCE, _SUMMARY)


def _facts(m):
    return {name: _SUMMARY["run"](thunk) for name, thunk in _define(m).items()}


_JAX_FACTS: dict = {}


def _jax_facts():
    if not _JAX_FACTS:
        _JAX_FACTS.update(_facts(_modules()))
    return _JAX_FACTS


def _close(got, want):
    if (
        isinstance(want, list)
        and len(want) == 4
        and isinstance(want[0], str)
        and want[0] != "raised"
    ):
        same_type = got[:3] == want[:3]
        return same_type and np.allclose(np.asarray(got[3]), np.asarray(want[3]), rtol=1e-6)
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return all(_close(g, w) for g, w in zip(got, want))
    return got == want


def test_user_primitives_match_jax(backend):
    want = _jax_facts()
    with as_jax.aliased_jax(backend):
        got = _facts(_modules())
    differ = {k: (got[k], want[k]) for k in want if not _close(got[k], want[k])}
    assert not differ
    # the compared cases do compute: most give arrays, the missing rules raise
    assert sum(w[0] == "raised" for w in want.values() if isinstance(w, list)) == 10


def test_missing_rules_raise_jax_errors(backend):
    with as_jax.aliased_jax(backend):
        m = _modules()
        p = m.core.Primitive("bare")
        p.def_impl(np.sin)
        p.def_abstract_eval(lambda a: a)
        with pytest.raises(NotImplementedError, match="Differentiation rule for 'bare'"):
            m.jax.jvp(p.bind, (1.0,), (1.0,))
        with pytest.raises(NotImplementedError, match="batching rule for primitive 'bare'"):
            m.jax.vmap(p.bind)(np.ones(2, np.float32))
        with pytest.raises(NotImplementedError, match="Transpose rule .* for 'bare'"):
            m.ad.get_primitive_transpose(p)


def test_lowerings_on_pjrt():
    """pjrt lowers through the registered rule: a lower_fun, a hand-written
    rule that calls one, a rule for another platform only (JAX's error), and a
    rule reading JAX's lowering context (refimpl's NotImplementedError)."""
    with as_jax.aliased_jax("pjrt"):
        m = _modules()
        x = np.float32(0.5)

        def define(name, rule, platform=None):
            p = m.core.Primitive(name)
            p.def_impl(np.cos)
            p.def_abstract_eval(lambda a: m.jax.core.ShapedArray(a.shape, a.dtype))
            assert m.mlir.register_lowering(p, rule, platform=platform) is None
            return p

        via = define("via", lambda ctx, v: m.mlir.lower_fun(m.jnp.cos, False)(ctx, v))
        np.testing.assert_allclose(m.jax.jit(via.bind)(x), np.cos(x), rtol=1e-6)
        ident = define("ident", lambda ctx, v: [v])  # no context read: emitted as written
        assert float(m.jax.jit(ident.bind)(x)) == 0.5
        other = define("other", m.mlir.lower_fun(m.jnp.cos, False), platform="tpu")
        with pytest.raises(NotImplementedError, match="rule for primitive 'other' not found"):
            m.jax.jit(other.bind)(x)
        # no lowering: eagerly its impl runs (as JAX's eager bind), under jit JAX's error class
        bare = m.core.Primitive("bare_eager")
        bare.def_impl(np.cos)
        bare.def_abstract_eval(lambda a: m.jax.core.ShapedArray(a.shape, a.dtype))
        on_device = m.jnp.arange(3.0, dtype=m.jnp.float32)
        got = bare.bind(on_device)
        assert type(got) is type(on_device) and got.device == on_device.device
        np.testing.assert_allclose(got, np.cos(np.arange(3.0, dtype=np.float32)), rtol=1e-6)
        with pytest.raises(NotImplementedError, match="'bare_eager'"):
            m.jax.jit(bare.bind)(on_device)
        reads = define("reads", lambda ctx, v: [ctx.module_context.backend])
        with pytest.raises(NotImplementedError, match="'reads' reads ctx.module_context"):
            m.jax.jit(reads.bind)(x)


def test_rule_tables_are_the_primitives_rules():
    """One mechanism: a table entry is the primitive's own rule slot, for a
    user's primitive and for refimpl's (lax.sin_p's jvp rule is in the table)."""
    from refimpl import lax
    from refimpl.extend.core import Primitive
    from refimpl.interpreters import ad, batching, mlir

    p = Primitive("slots")
    rule, batch = (lambda primals, tangents: None), (lambda args, dims: None)
    ad.primitive_jvps[p] = rule
    batching.primitive_batchers[p] = batch
    # (in the slot, adapted to JAX's convention of tuple arguments)
    assert p.jvp_rule.rule is rule and p.batch_rule.rule is batch
    assert ad.primitive_jvps[p] is rule
    assert ad.primitive_jvps[lax.sin_p] is lax.sin_p.jvp_rule
    assert lax.sin_p in ad.primitive_jvps and lax.sin_p not in ad.primitive_transposes
    del ad.primitive_jvps[p]
    assert p.jvp_rule is None and p not in ad.primitive_jvps
    mlir.register_lowering(p, mlir.lower_fun(lambda x: x, multiple_results=False))
    assert isinstance(p.lowering, mlir.UserLowering)


def _weak_tangent_grads(m):
    """grad of a primitive whose strong output's JVP rule computes a tangent
    of the weak input's type (``g * cos(x)`` of a Python-float ``x``): JAX
    seeds the cotangent as a one of the output's own type (strong), so the
    gradient is strong; refimpl seeded the linearized output's type (weak)."""
    jx, jnp = m.jax, m.jnp
    p = m.core.Primitive("strong_sin")
    p.def_impl(lambda x: np.sin(np.asarray(x, np.float32)))
    p.def_abstract_eval(lambda a: jx.core.ShapedArray(a.shape, np.dtype(np.float32)))
    m.mlir.register_lowering(p, m.mlir.lower_fun(jnp.sin, multiple_results=False))
    m.ad.defjvp(p, lambda g, x: g * jnp.cos(x))
    programs = {
        "grad": jx.grad(p.bind),
        "jit_grad": jx.jit(jx.grad(p.bind)),
        "value_and_grad": lambda x: jx.value_and_grad(p.bind)(x)[1],
        "grad_of_sum": jx.grad(lambda x: jnp.sum(p.bind(x) * 2.0)),
    }
    out = {}
    for name, f in programs.items():
        r = f(0.5)
        out[name] = (str(r.dtype), bool(r.weak_type), round(float(r), 5))
    return out


def test_grad_seeds_a_one_of_the_outputs_own_type(backend):
    want = _weak_tangent_grads(_modules())
    with as_jax.aliased_jax(backend):
        got = _weak_tangent_grads(_modules())
    assert want["grad"][:2] == ("float32", False)  # the oracle's premise
    assert got == want
