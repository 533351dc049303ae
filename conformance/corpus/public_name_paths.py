"""Public names of JAX 0.10.2 that JAX's own test files use (lax_test,
random_test, api_test, pmap_test) and refimpl lacked before (issue 29), each
in a program whose result shows its meaning. All ``AGREE``: judged by JAX's
recording.

* ``public_names/rng_bit_generator/*``: ``lax.rng_bit_generator``'s bits and
  new key for each ``lax.RandomAlgorithm`` and bit width (XLA's CPU Threefry
  and Philox expansions; the reference computes them in NumPy), under ``jit``
  and under ``vmap`` (JAX's rule draws every row from the first key).
* ``public_names/tokens/*``: ``lax.create_token``/``lax.after_all`` through
  ``jit`` (a token argument and result next to an array) and ``after_all`` of
  an array (TypeError).
* ``public_names/dot_algorithm/*``: ``dot_general`` with a
  ``lax.DotAlgorithmPreset`` (operands converted to its types, the result to
  the usual type, as JAX on CPU), a preset XLA's CPU backend would ignore
  (ValueError), and JAX's precision strings (``"fastest"``, a pair of strings;
  a mixed pair is a ValueError).
* ``public_names/checking_leaks/no_leak``: ``jax.checking_leaks()`` around
  programs that leak no tracer (jit, vmap, grad) runs them unchanged.
* ``public_names/checking_leaks/outcomes``: which programs that store a
  tracer in a list outside raise JAX's ``Exception("Leaked trace ...")``
  under the check (jit, vmap, a scan body, make_jaxpr) and which JAX does
  not report (grad, jvp, a tracer dropped before the trace ends).
* ``public_names/checking_leaks/custom_vjp_ref_argument``: a ``Ref`` made
  inside ``jit`` and passed to a ``custom_vjp`` function is no leak (jit,
  grad of jit, jit of grad); the traced function keeping the Ref or its
  value is one.
* ``public_names/int_subclass/*``: an ``IntEnum`` member and an ``int``
  subclass as jit arguments (weak int32, as a Python int), as operands under
  vmap and grad, and as a static argument.
* ``public_names/prng_impl/{rbg,unsafe_rbg}/*``: typed keys of the rbg PRNG
  implementations: seeding, split, fold_in (key data), bits and samplers (XLA's
  CPU Philox through ``lax.rng_bit_generator``), under jit and vmap; the same
  for ``{threefry4x32,philox2x32,philox4x32}`` (Random123's counter hashes).
* ``public_names/primitive_objects/*``: ``lax.<name>_p`` (JAX's primitive
  objects) bound directly, eagerly and under ``jit``, and found as the
  primitive of a traced program's equations.
* ``public_names/composite/*``: ``lax.composite`` (values eagerly, under
  ``jit`` and ``eval_shape``, static attributes, pytree results; no JVP
  rule: ValueError; a closed-over traced value or a traced attribute:
  UnexpectedTracerError).
* ``public_names/ragged_dot/*``: ``lax.ragged_dot`` and
  ``lax.ragged_dot_general`` in their three modes (ragged non-contracting,
  contracting and batch dimension), with per-batch group sizes, empty groups
  and rows past the last group, under ``jit``, ``grad`` and ``vmap``, and
  the shape errors.
* ``public_names/fwd_and_bwd/*``: ``jax.fwd_and_bwd``'s forward value and
  residuals, the backward pass reused for two cotangents, jitted or not, with
  ``has_aux``, an int and a tuple ``argnums``.
* ``public_names/array_queries/*``: ``jax.Array``'s ``is_ready``,
  ``copy_to_host_async``, ``on_device_size_in_bytes``, ``addressable_data``,
  ``global_shards`` and ``clone``, of an eager and a jit result.
* ``public_names/policy_answers``: checkpoint policies answering
  ``ad_checkpoint.Saveable``/``Recompute``/``Offloadable``: the gradients
  and values of each.
* ``public_names/array_out_none``: ``x.round(out=None)``,
  ``x.trace(out=None)`` (NumPy's protocol argument), eager and under ``jit``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.compare import Tolerance

TAGS = ["lax"]

_KEY = np.array([0x12345678, 0x9ABCDEF0, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)


def _rbg(algorithm: int, dtype: Any, shape: tuple[int, ...]):
    def script(ns: Any) -> Any:
        alg = ns.lax_.RandomAlgorithm(algorithm)
        key = ns.asarray(_KEY)
        eager = ns.lax_.rng_bit_generator(key, shape, dtype, alg)
        jitted = ns.jit(lambda k: ns.lax_.rng_bit_generator(k, shape, dtype, alg))(key)
        return eager, jitted

    return script


def _rbg_vmap(ns: Any) -> Any:
    keys = ns.asarray(np.arange(12, dtype=np.uint32).reshape(4, 3))
    draw = ns.api.vmap(lambda k: ns.lax_.rng_bit_generator(k, (2, 3)), in_axes=1)
    return draw(keys)


def _rbg_bad_dtype(ns: Any) -> Any:
    return ns.lax_.rng_bit_generator(ns.asarray(_KEY), (3,), np.int32)


def _tokens_through_jit(ns: Any) -> Any:
    def noop(arr, token):
        return arr * 2, ns.lax_.after_all(token, ns.lax_.create_token(arr))

    token = ns.lax_.create_token()
    arr, out = ns.jit(noop)(ns.asarray(np.arange(3, dtype=np.float32)), token)
    return arr, type(out).__name__, out is token


def _after_all_of_an_array(ns: Any) -> Any:
    return ns.lax_.after_all(ns.lax_.create_token(), ns.asarray(np.ones(2, np.float32)))


_X = (np.random.RandomState(0).randn(4, 5) * 100).astype(np.float32)
_Y = (np.random.RandomState(1).randn(5, 3) * 100).astype(np.float32)


def _dot(precision: Any, dtype: Any, jit: bool = False):
    def script(ns: Any) -> Any:
        def dot(a, b):
            return ns.lax_.dot(a, b, precision=precision)

        x, y = ns.asarray(_X.astype(dtype)), ns.asarray(_Y.astype(dtype))
        return ns.jit(dot)(x, y) if jit else dot(x, y)

    return script


def _dot_preset_member(ns: Any) -> Any:
    preset = ns.lax_.DotAlgorithmPreset.F16_F16_F16
    return ns.lax_.dot(ns.asarray(_X), ns.asarray(_Y), precision=preset)


def _dot_lowered_algorithm(ns: Any) -> Any:
    """The algorithm attribute of the lowered dot_general (and the converts
    around it), a preset given and by default_matmul_precision."""

    def dots(text: str) -> list[str]:
        keep = ("stablehlo.dot_general", "stablehlo.convert")
        return [line.split(", algorithm = ", 1)[-1] if "dot_general" in line
                else line.split(" : ", 1)[-1] for line in text.splitlines()
                if any(k in line for k in keep)]  # fmt: skip

    x16 = ns.asarray(_X.astype(np.float16))
    out = dots(
        ns.jit(lambda a: ns.lax_.dot(a, a.T, precision="BF16_BF16_F32")).lower(x16).as_text()
    )
    with ns.api.default_matmul_precision("F32_F32_F32"):
        out += dots(ns.jit(ns.lax_.dot).lower(ns.asarray(_X), ns.asarray(_Y)).as_text())
    return out


def _ragged_all_to_all_outcomes(ns: Any) -> Any:
    """Where lax.ragged_all_to_all does not run (JAX's CPU backend never
    compiles it): a float offsets array and a rank-2 sizes array when lowered
    (JAX's ValueErrors, types before ranks), eagerly outside a named axis
    (RuntimeError), under jit (NameError) and under vmap over its own name
    (NotImplementedError): the exception class and first line of each."""
    L = ns.lax_
    ints = ns.asarray(np.array([0, 1, 3], np.int32))
    args = [ns.asarray(np.arange(6.0, dtype=np.float32)), ns.asarray(np.zeros(7, np.float32))]
    args += [ints] * 4

    def ragged(*a: Any) -> Any:
        return L.ragged_all_to_all(*a, axis_name="x")

    def outcome(run: Any) -> Any:
        try:
            run()
        except Exception as e:  # noqa: BLE001 - the outcome is the observation
            return type(e).__name__, str(e).splitlines()[0]
        return "ok"

    floats = ns.asarray(np.array([0.0, 1.0, 3.0], np.float32))
    rank2 = ns.asarray(np.array([[1, 2, 3]], np.int32))
    stacked = [ns.np_.stack([a, a]) for a in args]
    return [
        outcome(lambda: ns.jit(ragged).lower(*args[:2], floats, *args[3:])),
        outcome(lambda: ns.jit(ragged).lower(*args[:3], rank2, *args[4:])),
        outcome(lambda: ragged(*args)),
        outcome(lambda: ns.jit(ragged)(*args)),
        outcome(lambda: ns.api.vmap(ragged, axis_name="x")(*stacked)),
    ]


def _complex_sinh_cancellation(ns: Any) -> Any:
    """Complex sinh's real part where |Re z| is tiny next to the exponentials:
    JAX's chlo.sinh (exp(z + log 1/2) - exp(-z + log 1/2)) cancels it to 0 (or
    to a few ulps of 1/2), NumPy's formula keeps sinh(a) cos(b); whether each
    is exactly 0, eagerly and under jit, and the imaginary parts."""
    z = ns.asarray(np.array([1e-20 + 1j, -1e-12 + 2j, 1e-30 - 0.5j], np.complex64))
    out = [ns.lax_.sinh(z), ns.jit(ns.lax_.sinh)(z)]
    return [[bool(v) for v in np.asarray(o).real == 0] for o in out], [o.imag for o in out]


def _lgamma_float32_bits(ns: Any) -> Any:
    """float32 lgamma's bits (bitcast to int32, compared exactly) on [1/2, 8]
    and at large x, eagerly and under jit: XLA's Lanczos expansion, as JAX's."""
    x = np.concatenate([np.linspace(0.5, 8, 61), [1e3, 1e6, 3e38]]).astype(np.float32)

    def bits(v: Any) -> Any:
        return ns.lax_.bitcast_convert_type(ns.lax_.lgamma(v), np.int32)

    return bits(ns.asarray(x)), ns.jit(bits)(ns.asarray(x))


def _dot_mixed_precision_pair(ns: Any) -> Any:
    precision = (ns.lax_.Precision.HIGH, "fastest")
    return ns.lax_.dot(ns.asarray(_X), ns.asarray(_Y), precision=precision)


def _checking_leaks_no_leak(ns: Any) -> Any:
    x = ns.asarray(np.arange(3, dtype=np.float32))
    with ns.api.checking_leaks():
        jitted = ns.jit(lambda v: v * 2)(x)
        mapped = ns.api.vmap(lambda v: v + 1)(x)
        slope = ns.api.grad(lambda v: v * v)(3.0)
    return jitted, mapped, slope


def _checking_leaks_outcomes(ns: Any) -> Any:
    x = np.arange(3, dtype=np.float32)

    def keep(store: list, v: Any) -> Any:
        store.append(v)
        return v * 2

    programs = [
        lambda s: ns.jit(lambda v: keep(s, v))(x),
        lambda s: ns.api.vmap(lambda v: keep(s, v))(x),
        lambda s: ns.lax_.scan(lambda c, v: (keep(s, c), v), 0.0, x),
        lambda s: ns.api.make_jaxpr(lambda v: keep(s, v))(1.0),
        lambda s: ns.api.grad(lambda v: keep(s, v))(1.0),
        lambda s: ns.api.jvp(lambda v: keep(s, v), (1.0,), (1.0,)),
        lambda s: ns.jit(lambda v: (keep(s, v), s.clear())[0])(x),
    ]
    outcomes = []
    for program in programs:
        store: list = []
        try:
            with ns.api.checking_leaks():
                program(store)
            outcomes.append("ok")
        except Exception as e:
            leak = type(e) is Exception and str(e).startswith("Leaked trace")
            outcomes.append("leak" if leak else type(e).__name__)
    return tuple(outcomes)


def _checking_leaks_custom_vjp_ref(ns: Any) -> Any:
    # a Ref made inside jit and passed to a custom_vjp function: the staged
    # rule keeps no tracer of the jit; the traced function keeping the Ref or
    # its value is a leak
    api = ns.api

    @api.custom_vjp
    def f(x_ref: Any, y: Any) -> Any:
        return x_ref[...] * 3.0 * y

    f.defvjp(
        lambda x_ref, y: (f(x_ref, y), (x_ref[...], y)),
        lambda res, g: (g * 100.0 * res[1], g * res[0] * 7.0),
    )

    def g(store: list, keep: Any) -> Any:
        def body(x: Any, y: Any) -> Any:
            r = api.new_ref(x)
            if keep is not None:
                store.append(keep(r))
            return f(r, y)

        return body

    x, y = np.float32(1.5), np.float32(2.0)
    programs = [
        lambda s: ns.jit(g(s, None))(x, y),
        lambda s: api.grad(ns.jit(g(s, None)), (0, 1))(x, y),
        lambda s: ns.jit(api.grad(g(s, None), (0, 1)))(x, y),
        lambda s: ns.jit(g(s, lambda r: r))(x, y),
        lambda s: ns.jit(g(s, lambda r: r[...]))(x, y),
    ]
    outcomes: list[Any] = []
    for program in programs:
        store: list = []
        try:
            with api.checking_leaks():
                outcomes.append(program(store))
        except Exception as e:
            leak = type(e) is Exception and str(e).startswith("Leaked trace")
            outcomes.append("leak" if leak else type(e).__name__)
    return tuple(outcomes)


class _Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class _Count(int):
    pass


def _int_subclass_jit(ns: Any) -> Any:
    double = ns.jit(lambda x: x * 2)
    return double(_Color.GREEN), double(_Count(3)), ns.np_.add(_Color.RED, 1.5)


def _int_subclass_transforms(ns: Any) -> Any:
    xs = ns.asarray(np.arange(3, dtype=np.float32))
    mapped = ns.api.vmap(lambda x, c: x * c, in_axes=(0, None))(xs, _Color.GREEN)
    slope = ns.api.grad(lambda x, c: x * c)(2.0, _Color.GREEN)
    static = ns.jit(lambda x, c: x * int(c), static_argnums=1)(xs, _Color.GREEN)
    return mapped, slope, static


def _prng_impl(impl: str, what: str):
    def script(ns: Any) -> Any:
        r = ns.api.random
        key = r.key(11, impl=impl)
        if what == "keys":
            return (
                r.key_data(key),
                r.key_data(r.split(key, 3)),
                r.key_data(r.fold_in(key, 5)),
                str(key.dtype),
                r.key_impl(key),
            )
        if what == "samplers":
            return (
                r.bits(key, (4,)),
                r.bits(key, (3,), np.uint8),
                r.uniform(key, (3,)),
                r.randint(key, (4,), 0, 50),
                r.permutation(key, 6),
            )
        keys = r.split(key, 3)
        return (
            ns.jit(lambda k: r.uniform(k, (2,)))(keys[1]),
            ns.api.vmap(lambda k: r.bits(k, (2,)))(keys),
            r.key_data(ns.api.vmap(r.split)(keys)),
        )

    return script


_M = np.random.RandomState(2).randn(2, 3).astype(np.float32)


def _primitive_bind(jit: bool):
    def script(ns: Any) -> Any:
        L = ns.lax_

        def binds(x):
            return (
                L.add_p.bind(x, x),
                L.neg_p.bind(x),
                L.integer_pow_p.bind(x, y=2),
                L.reduce_sum_p.bind(x, axes=(1,)),
                L.transpose_p.bind(x, permutation=(1, 0)),
            )

        x = ns.asarray(_M)
        return ns.jit(binds)(x) if jit else binds(x)

    return script


def _primitive_in_program(ns: Any) -> Any:
    L = ns.lax_
    x = ns.asarray(_M)
    programs = {
        "dynamic_slice": lambda v: L.dynamic_slice(v, (0, 1), (1, 2)),
        "reduce_max": lambda v: L.reduce(v, np.float32(-np.inf), L.max, (0,)),
        "scan": lambda v: L.scan(lambda c, a: (c + a, a), v[0], v),
        "cond": lambda v: L.cond(v[0, 0] > 0, lambda u: u, lambda u: -u, v),
    }
    return [
        getattr(L, f"{name}_p") in [e.primitive for e in ns.api.make_jaxpr(f)(x).eqns]
        for name, f in programs.items()
    ]


def _composite(what: str):
    def script(ns: Any) -> Any:
        L, api = ns.lax_, ns.api
        square = L.composite(lambda v: v**2, name="my.square")
        x = ns.asarray(_M)
        if what == "values":
            pair = L.composite(lambda a, b: {"s": a + b, "p": a * b}, "my.pair")
            top = L.composite(lambda v, *, k: L.top_k(v, k), "my.top_k", version=1)
            return (
                square(x),
                ns.jit(square)(x),
                api.eval_shape(square, x).shape,
                pair(x, 2.0),
                top(x, k=2),
                ns.jit(top, static_argnames="k")(x, k=1),
                L.composite(lambda: ns.np_.float32(1), "my.one")(),
            )
        if what == "jvp":
            return api.jvp(square, (x,), (x,))
        if what == "grad":
            return api.grad(lambda v: square(v).sum())(x)
        if what == "lowered":
            # the stablehlo.composite ops (attributes of each kind, a version,
            # a repeated name) and top_k's chlo.top_k, as JAX lowers them
            top = L.composite(lambda v, *, k: L.top_k(v, k), "my.top_k", version=2)

            def f(v):
                attrs = {"s": "a", "i": 1, "f": 0.5, "b": True, "arr": np.arange(2)}
                return square(v), square(top(v, k=1)[0]), L.composite(
                    lambda u, **_: u, "my.id")(v, n=None, lst=[1, 2.5], **attrs)  # fmt: skip

            text = ns.jit(f).lower(x).as_text()
            ops = ("stablehlo.composite", "chlo.top_k", "func.func private @my")
            return [line.split("= ", 1)[-1].strip() for line in text.splitlines()
                    if any(op in line for op in ops)]  # fmt: skip

        if what == "traced_attribute":
            # an attribute is static: a traced one raises even unread (eager: runs)
            attr = L.composite(lambda u, **_: u * 2, "my.attr")
            return attr(x, tensor=x + 1), ns.jit(lambda v: attr(v, tensor=v + 1))(x)

        def closing(v, scale):
            return L.composite(lambda u: u / scale, "my.scale")(v)

        assert what == "closure"
        eager = closing(x, x + 1)  # concrete: fine
        return eager, ns.jit(closing)(x, x + 1)

    return script


_SUM_ORDER = Tolerance(ulps=64, atol_eps=64)
_GS = np.array([3, 0, 4], np.int32)
_LHS = np.random.RandomState(3).randn(9, 4).astype(np.float32)
_RHS = np.random.RandomState(4).randn(3, 4, 5).astype(np.float32)


def _ragged(what: str):
    def script(ns: Any) -> Any:
        L, api = ns.lax_, ns.api
        D = L.RaggedDotDimensionNumbers
        lhs, rhs, gs = ns.asarray(_LHS), ns.asarray(_RHS), ns.asarray(_GS)
        rng = np.random.RandomState(5)
        if what == "basic":  # rows 7 and 8 are past the last group
            return L.ragged_dot(lhs, rhs, gs), ns.jit(L.ragged_dot)(lhs, rhs, gs)
        if what == "preferred":
            ints = ns.asarray(np.arange(18, dtype=np.int8).reshape(9, 2))
            return L.ragged_dot(ints, ns.asarray(np.ones((3, 2, 2), np.int8)), gs,
                                preferred_element_type=np.int32)  # fmt: skip
        if what == "grad":
            return api.grad(lambda a, b: L.ragged_dot(a, b, gs).sum(), (0, 1))(lhs, rhs)
        if what == "vmap":
            # (JAX's rule batches all three operands at axis 0 only)
            sizes = ns.asarray(np.array([[3, 0, 4], [1, 6, 2]], np.int32))
            return api.vmap(L.ragged_dot)(
                ns.np_.stack([lhs, -lhs]), ns.np_.stack([rhs, rhs]), sizes
            )
        if what == "contracting":
            numbers = D((([2], [1]), ([0], [0])), [2], [])
            sizes = ns.asarray(np.array([[2, 0, 3], [1, 1, 1]], np.int32))
            a = ns.asarray(rng.randn(2, 4, 5).astype(np.float32))
            b = ns.asarray(rng.randn(2, 5, 3).astype(np.float32))
            return L.ragged_dot_general(a, b, sizes, numbers)
        if what == "batch":
            numbers = D((([2], [1]), ([0], [0])), [0], [])
            a = ns.asarray(rng.randn(4, 3, 5).astype(np.float32))
            b = ns.asarray(rng.randn(4, 5, 2).astype(np.float32))
            return L.ragged_dot_general(a, b, ns.asarray(np.array([1, 3], np.int32)), numbers)
        if what == "noncontracting_batched":
            numbers = D((([2], [2]), ([0], [1])), [1], [0])
            sizes = ns.asarray(np.array([[2, 2, 2], [1, 4, 1]], np.int32))
            a = ns.asarray(rng.randn(2, 6, 5).astype(np.float32))
            b = ns.asarray(rng.randn(3, 2, 5, 7).astype(np.float32))
            return L.ragged_dot_general(a, b, sizes, numbers)
        assert what == "group_size_mismatch"
        return L.ragged_dot(lhs, rhs, ns.asarray(np.array([9, 0], np.int32)))

    return script


def _fwd_and_bwd(jitted: bool, has_aux: bool):
    def script(ns: Any) -> Any:
        np_ = ns.np_

        def loss(x, w):
            value = np_.sum(np_.tanh(x * w))
            return (value, {"xw": x * w}) if has_aux else value

        x, w = ns.asarray(_M[0]), ns.asarray(_M[1])
        results = []
        for argnums in (0, (1, 0)):
            fwd, bwd = ns.api.fwd_and_bwd(loss, argnums, has_aux=has_aux, jitted=jitted)
            out = fwd(x, w)
            residuals = out[1]
            results.append((out[0], out[2:], bwd(residuals, np.float32(1)), bwd(residuals, 2.0)))
        return results

    return script


def _array_queries(jit: bool):
    def script(ns: Any) -> Any:
        x = ns.asarray(_M)
        y = ns.jit(lambda v: v * 2)(x) if jit else x * 2
        clone = y.clone()
        return (
            y.is_ready(),
            y.copy_to_host_async(),
            y.on_device_size_in_bytes(),
            y.addressable_data(0),
            len(y.global_shards),
            y.global_shards[0].data,
            clone,
            clone is y,
        )

    return script


def _policy_answers(ns: Any) -> Any:
    import importlib

    answers = importlib.import_module(f"{ns.api.__name__}.ad_checkpoint")
    np_ = ns.np_

    def f(v):
        return np_.sin(np_.sin(v) * 2.0).sum()

    x = ns.asarray(_M[0])
    policies = [
        lambda prim, *_, **__: answers.Saveable,
        lambda prim, *_, **__: answers.Recompute,
        lambda prim, *_, **__: answers.Offloadable("device", "pinned_host"),
    ]
    return [ns.api.value_and_grad(ns.api.checkpoint(f, policy=p))(x) for p in policies]


def _array_out_none(ns: Any) -> Any:
    def calls(v):
        return (
            v.round(out=None),
            v.round(1, out=None),
            v.trace(out=None),
            v.trace(1, 0, 1, None, None),
        )

    x = ns.asarray(_M / 3)
    return calls(x), ns.jit(calls)(x)


def cases() -> Iterator[Case]:
    for algorithm in (0, 1, 2):
        for dtype in (np.uint8, np.uint32):
            for shape in ((), (5,), (3, 4)):
                name = f"{np.dtype(dtype).name}/{'x'.join(map(str, shape)) or 'scalar'}"
                yield script_case(
                    f"public_names/rng_bit_generator/alg{algorithm}/{name}",
                    _rbg(algorithm, dtype, shape),
                    expect=AGREE,
                    tags=TAGS,
                )
    yield script_case("public_names/rng_bit_generator/vmap_axis1", _rbg_vmap, tags=TAGS)
    yield script_case("public_names/rng_bit_generator/bad_dtype", _rbg_bad_dtype, tags=TAGS)
    yield script_case("public_names/tokens/through_jit", _tokens_through_jit, tags=TAGS)
    yield script_case("public_names/tokens/after_all_array", _after_all_of_an_array, tags=TAGS)
    for precision, dtype in [
        ("F16_F16_F16", np.float32), ("BF16_BF16_F32", np.float16), ("F32_F32_F32", np.int32),
        ("F64_F64_F64", np.float32), ("DEFAULT", np.float16), ("TF32_TF32_F32", np.float32),
        ("fastest", np.float32), (("high", "bfloat16"), np.float32),
    ]:  # fmt: skip
        label = "_".join(precision) if isinstance(precision, tuple) else precision
        name = f"public_names/dot_algorithm/{label}/{np.dtype(dtype).name}"
        yield script_case(name, _dot(precision, dtype), tags=TAGS)
        yield script_case(f"{name}/jit", _dot(precision, dtype, jit=True), tags=TAGS)
    yield script_case("public_names/dot_algorithm/member", _dot_preset_member, tags=TAGS)
    yield script_case("public_names/dot_algorithm/mixed_pair", _dot_mixed_precision_pair, tags=TAGS)
    yield script_case("public_names/dot_algorithm/lowered", _dot_lowered_algorithm, tags=TAGS)
    yield script_case(
        "public_names/ragged_all_to_all/outcomes", _ragged_all_to_all_outcomes, tags=TAGS
    )
    yield script_case(
        "public_names/complex_sinh/cancellation", _complex_sinh_cancellation, tags=TAGS
    )
    yield script_case("public_names/lgamma/float32_bits", _lgamma_float32_bits, tags=TAGS)
    yield script_case("public_names/checking_leaks/no_leak", _checking_leaks_no_leak, tags=TAGS)
    yield script_case("public_names/checking_leaks/outcomes", _checking_leaks_outcomes, tags=TAGS)
    yield script_case(
        "public_names/checking_leaks/custom_vjp_ref_argument",
        _checking_leaks_custom_vjp_ref,
        tags=TAGS,
    )
    yield script_case("public_names/int_subclass/jit", _int_subclass_jit, tags=TAGS)
    yield script_case("public_names/int_subclass/transforms", _int_subclass_transforms, tags=TAGS)
    for impl in ("rbg", "unsafe_rbg", "threefry4x32", "philox2x32", "philox4x32"):
        for what in ("keys", "samplers", "transforms"):
            yield script_case(
                f"public_names/prng_impl/{impl}/{what}", _prng_impl(impl, what), tags=TAGS
            )
    for jit in (False, True):
        name = f"public_names/primitive_objects/bind{'/jit' if jit else ''}"
        yield script_case(name, _primitive_bind(jit), tags=TAGS)
    yield script_case("public_names/primitive_objects/in_program", _primitive_in_program, tags=TAGS)
    # (vmap: unsupported on all three)
    for what in ("values", "jvp", "grad", "closure", "traced_attribute", "lowered"):
        yield script_case(f"public_names/composite/{what}", _composite(what), tags=TAGS)
    for what in (
        "basic", "preferred", "grad", "vmap", "contracting", "batch", "noncontracting_batched",
        "group_size_mismatch",
    ):  # fmt: skip
        # (summation order: XLA's and NumPy's sums of the g * k products differ in the last bits)
        yield script_case(
            f"public_names/ragged_dot/{what}", _ragged(what), tags=TAGS, tolerance=_SUM_ORDER
        )
    for jitted in (True, False):
        for has_aux in (False, True):
            mode = ("jit" if jitted else "plain") + ("_aux" if has_aux else "")
            yield script_case(
                f"public_names/fwd_and_bwd/{mode}", _fwd_and_bwd(jitted, has_aux), tags=TAGS
            )
    for jit in (False, True):
        name = f"public_names/array_queries/{'jit' if jit else 'eager'}"
        yield script_case(name, _array_queries(jit), tags=TAGS)
    yield script_case("public_names/policy_answers", _policy_answers, tags=TAGS)
    yield script_case("public_names/array_out_none", _array_out_none, tags=TAGS)
