"""The public transformation API behaves as JAX 0.10.2's (issue 29, JAX's
tests/api_test.py): which functions a transformation accepts, jit's
static/donated argument names, what jit copies from the function, copies of
arrays and tracers, and the named axes in jit's cache key. Each case runs on
both backends and asks JAX for the expected behaviour."""

from __future__ import annotations

import copy
import inspect
import operator
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import core_api, lax


def _gen(x):
    yield x


_STATIC = staticmethod(lambda x: x)

# (name, how each library applies it to a function)
_TRANSFORMS = [
    ("jit", lambda m, f: m.jit(f)),
    ("grad", lambda m, f: m.grad(f)),
    ("value_and_grad", lambda m, f: m.value_and_grad(f)),
    ("jacfwd", lambda m, f: m.jacfwd(f)),
    ("jacrev", lambda m, f: m.jacrev(f)),
    ("hessian", lambda m, f: m.hessian(f)),
    ("vmap", lambda m, f: m.vmap(f)),
    ("pmap", lambda m, f: m.pmap(f)),
    ("jvp", lambda m, f: m.jvp(f, (1.0,), (1.0,))),
    ("vjp", lambda m, f: m.vjp(f, 1.0)),
    ("linearize", lambda m, f: m.linearize(f, 1.0)),
    ("eval_shape", lambda m, f: m.eval_shape(f, 1.0)),
]


def _raised(thunk):
    try:
        thunk()
    except Exception as error:
        return type(error)
    return None


@pytest.mark.parametrize("fun", [_gen, _STATIC], ids=["generator", "staticmethod"])
@pytest.mark.parametrize("name,apply", _TRANSFORMS, ids=[t[0] for t in _TRANSFORMS])
def test_transformations_refuse_generators_and_staticmethods(backend, name, apply, fun):
    want = _raised(lambda: apply(jax, fun))
    assert want is TypeError  # JAX's check_callable, when the transformation is made
    with pytest.raises(TypeError, match="generator function|staticmethod"):
        apply(ri, fun)


def _f(a, b, c): ...


def _g(a, b, **kwargs): ...


def _h(a, /, b, c, *args, **kwargs): ...


@pytest.mark.parametrize("kind", ["static_argnames", "donate_argnames"])
@pytest.mark.parametrize(
    "fun,names",
    [
        (_f, ("b", "c")),
        (_f, ("b", "c", "not_a_parameter")),
        (_g, ("a", "b", "not_a_parameter")),  # **kwargs takes any name
        (_h, ("b", "c", "not_a_parameter")),
        (_h, ("a", "c")),  # positional-only
        (_h, ("args", "c")),  # *args
    ],
)
def test_argnames_are_checked_against_the_signature(backend, kind, fun, names):
    want = _raised(lambda: jax.jit(fun, **{kind: names}))
    got = _raised(lambda: ri.jit(fun, **{kind: names}))
    assert got is want


@pytest.mark.parametrize(
    "options,call",
    [
        # both given: each taken as it is (y by keyword is traced)
        ({"static_argnums": 1, "static_argnames": ()}, lambda f: f(1, y=2)),
        ({"static_argnums": (), "static_argnames": "y"}, lambda f: f(2, 3)),
        ({"static_argnums": (1,), "static_argnames": "x"}, lambda f: f(1, y=3)),
        ({"static_argnums": (1,), "static_argnames": "x"}, lambda f: f(x="foo", y=3)),
        # one given: the other follows from it
        ({"static_argnums": 1}, lambda f: f(1, y="foo")),
        ({"static_argnames": "y"}, lambda f: f(1, "foo")),
        # a negative number names no parameter
        ({"static_argnums": -1}, lambda f: f(1, y=2)),
    ],
)
def test_static_argnums_and_argnames_complete_each_other_only_when_one_is_missing(
    backend, options, call
):
    def flags(jit, tracer_type):
        seen = []

        def f(x, y):
            seen.append((isinstance(x, tracer_type), isinstance(y, tracer_type)))
            return 1

        call(jit(f, **options))
        return seen[-1]

    assert flags(ri.jit, core_api.Tracer) == flags(jax.jit, jax.core.Tracer)


def test_jit_copies_what_functools_wraps_copies(backend):
    def f(x: int) -> int:
        """The docstring."""
        return x + 1

    f.some_value = 4
    want, got = jax.jit(f), ri.jit(f)
    for attribute in ("__doc__", "__name__", "__module__", "__qualname__", "__annotations__"):
        assert getattr(got, attribute) == getattr(want, attribute) == getattr(f, attribute)
    assert got.some_value == want.some_value == 4
    assert inspect.signature(got) == inspect.signature(f)


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copies_of_arrays_and_tracers(backend, copier):
    x = rnp.arange(3.0)
    y = copier(x)
    assert isinstance(y, ri.Array) and y is not x
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    if copier is copy.deepcopy:
        assert copier({"a": x})["a"] is not x
    # a traced copy is a value of the trace (JAX: the same value, weakly typed as the input)
    want = jax.jit(lambda v: copier(v))(1)
    got = ri.jit(lambda v: copier(v))(1)
    assert got.dtype == want.dtype and got.weak_type == want.weak_type and int(got) == int(want)
    assert float(ri.grad(lambda v: copier(v) * 2.0)(1.0)) == float(
        jax.grad(lambda v: copier(v) * 2.0)(1.0)
    )


def test_jit_cache_depends_on_the_bound_named_axes(backend):
    def size(lax_):
        return lambda: lax_.psum(1, "i")

    g, jg = ri.jit(size(lax)), jax.jit(size(jlax))
    for n in (2, 3, 2):
        want = jax.vmap(jg, axis_name="i", axis_size=n, out_axes=None)()
        got = ri.vmap(g, axis_name="i", axis_size=n, out_axes=None)()
        assert int(got) == int(want) == n
    assert g._cache_size() == 2  # one trace per axis size, reused


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacfwd", "jacrev", "hessian"])
def test_derivative_functions_keep_the_signature_for_static_argnames(backend, transform):
    def make(m):
        def f(x, flag):
            return x * 2.0 if flag else x * 0.0

        return m.jit(getattr(m, transform)(f), static_argnames=["flag"])

    want, got = make(jax), make(ri)
    for flag in (False, True):
        w, g = want(1.0, flag), got(1.0, flag)
        np.testing.assert_array_equal(
            np.asarray(jax.tree.leaves(g), np.float32), np.asarray(jax.tree.leaves(w), np.float32)
        )
    assert str(inspect.signature(getattr(ri, transform)(lambda x, flag: x))) == "(x, flag)"


@pytest.mark.parametrize(
    "out,ct",
    [
        ("f32", np.float16(1)),
        ("f32", 1),  # a Python int is int32
        ("f32", np.int32(1)),
        ("f32", 1j),
        ("f32", True),
        ("f32", 1.0),  # a Python float is float32: taken
        ("f32", np.float64(1)),  # float64 is float32 without x64: taken
        ("f16", 1.0),
        ("c64", 1.0),
        ("c64", 1j),
        ("i32", np.float32(1)),  # an integer output's cotangent is not read
    ],
)
def test_vjp_cotangent_dtype_must_match_a_differentiable_output(backend, out, ct):
    casts = {"f32": "float32", "f16": "float16", "c64": "complex64", "i32": "int32"}

    def run(m, np_):
        def f(x):
            return (x * 2.0).astype(casts[out])

        _, pullback = m.vjp(f, np.float32(3))
        return pullback(ct)

    want = _raised(lambda: run(jax, jnp))
    got = _raised(lambda: run(ri, rnp))
    assert got is want
    if want is None:
        w, g = run(jax, jnp), run(ri, rnp)
        np.testing.assert_array_equal(np.asarray(g[0]), np.asarray(w[0]))
        assert g[0].dtype == w[0].dtype


def test_jvp_primals_and_tangents_must_be_the_same_container(backend):
    def f(x):
        return x * 2.0

    for primals, tangents in [((1.0,), [1.0]), ([1.0], (1.0,))]:
        assert _raised(lambda p=primals, t=tangents: jax.jvp(f, p, t)) is TypeError
        with pytest.raises(TypeError, match="same tree structure"):
            ri.jvp(f, primals, tangents)
    out, tangent = ri.jvp(f, [1.0], [1.0])
    assert float(tangent) == float(jax.jvp(f, [1.0], [1.0])[1]) == 2.0


def test_linear_transpose_ignores_what_the_outputs_do_not_need(backend):
    def make(m, np_):
        inner = m.jit(lambda x: (2.0 * x, x > 0))  # a non-linear output, unused
        return m.linear_transpose(lambda x, y: inner(x)[0], 1.0, 1.0)

    want = make(jax, jnp)(3.0)
    got = make(ri, rnp)(3.0)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and float(g) == float(w)
    assert [float(g) for g in got] == [6.0, 0.0]


def test_linearized_function_refuses_tangents_of_another_type(backend):
    primal = np.array([1, 2, 3], np.int32)  # integer primal: float0 tangents
    tangent = np.ones((3, 2), np.float32)
    for jit in (lambda f: f, ri.jit):
        assert _raised(lambda: jax.linearize(jnp.sum, primal)[1](tangent)) is ValueError
        _, f_jvp = ri.linearize(jit(rnp.sum), primal)
        with pytest.raises(ValueError, match="inconsistent with the original primal values"):
            f_jvp(tangent)


def test_shape_dtype_struct_len_and_dtype(backend):
    for shape in [(3, 2), (1,), ()]:
        want = _raised(lambda s=shape: len(jax.ShapeDtypeStruct(s, jnp.float32)))
        got = _raised(lambda s=shape: len(ri.ShapeDtypeStruct(s, np.float32)))
        assert got is want
        if want is None:
            assert len(ri.ShapeDtypeStruct(shape, np.float32)) == shape[0]
    assert _raised(lambda: jax.ShapeDtypeStruct((), None)) is ValueError
    with pytest.raises(ValueError, match="dtype must be specified"):
        ri.ShapeDtypeStruct((), None)


def test_jitted_eval_shape(backend):
    def f(x):
        return x * 2, x.sum()

    for arg in (np.ones(3, np.float32), 1.0):
        want = jax.jit(f).eval_shape(arg)
        got = ri.jit(f).eval_shape(arg)
        for g, w in zip(got, want, strict=True):
            assert (g.shape, g.dtype, g.weak_type) == (w.shape, w.dtype, w.weak_type)


@pytest.mark.parametrize(
    "in_axes,out_axes", [(False, 0), (0, True), ((0, True), 0), (1.0, 0), ((0, None), 0)]
)
def test_pmap_axes_must_be_ints_when_made(backend, in_axes, out_axes):
    def f(x, y=0):
        return x

    want = _raised(lambda: jax.pmap(f, in_axes=in_axes, out_axes=out_axes))
    got = _raised(lambda: ri.pmap(f, in_axes=in_axes, out_axes=out_axes))
    assert got is want


def test_vmap_docstring(backend):
    def superfun(a):
        """Does things with stuff."""

    def plain(a):
        pass

    for f in (superfun, plain):
        assert ri.vmap(f).__doc__ == jax.vmap(f).__doc__


@pytest.mark.parametrize("wrap", ["jit", "remat", "remat_saving_all", "jit_remat"])
def test_a_custom_vjp_cotangent_of_another_dtype_leaves_a_sub_program(backend, wrap):
    def make(m):
        @m.custom_vjp
        def widen(x):
            return x.astype("float32")

        # the bwd rule returns float32 for the bfloat16 input (JAX passes it on)
        widen.defvjp(lambda x: (widen(x), x), lambda x, g: (g * x.astype("float32"),))
        save_all = {"policy": lambda *_, **__: True}
        return {
            "jit": m.jit(widen),
            "remat": m.remat(widen),
            "remat_saving_all": m.remat(widen, **save_all),
            "jit_remat": m.jit(m.remat(widen, **save_all)),
        }[wrap]

    x = np.full((2, 2), 1.5, dtype=jnp.bfloat16)
    (want,) = jax.vjp(make(jax), x)[1](np.ones((2, 2), np.float32))
    (got,) = ri.vjp(make(ri), x)[1](np.ones((2, 2), np.float32))
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_make_jaxpr_takes_duck_typed_abstract_inputs(backend):
    spec = types.SimpleNamespace(shape=(2, 3), dtype=np.dtype(np.float32))

    def f(x, n):
        return x * n

    want = jax.make_jaxpr(f, static_argnums=1)(spec, 2)
    got = ri.make_jaxpr(f, static_argnums=1)(spec, 2)
    assert [(a.shape, a.dtype) for a in got.in_avals] == [(a.shape, a.dtype) for a in want.in_avals]
    assert [(a.shape, a.dtype) for a in got.out_avals] == [
        (a.shape, a.dtype) for a in want.out_avals
    ]


@pytest.mark.parametrize("device", ["cpu", 3, None], ids=["str", "int", "none"])
def test_device_put_of_an_invalid_device_is_a_value_error(backend, device):
    want = _raised(lambda: jax.device_put(jnp.arange(3), device))
    got = _raised(lambda: ri.device_put(rnp.arange(3), device))
    assert got is want


def test_make_jaxpr_names(backend):
    def foo(x, y):
        return x + y

    want, got = jax.make_jaxpr(foo), ri.make_jaxpr(foo)
    assert (got.__name__, got.__qualname__) == (want.__name__, want.__qualname__)


_INT_ARRAY = np.arange(10, dtype=np.int32)
_EMPTY = np.arange(0, dtype=np.int32)


@pytest.mark.parametrize(
    "convert,value",
    [
        (operator.index, _INT_ARRAY),
        (operator.index, _EMPTY),
        (operator.index, np.float32(0)),
        (hex, np.float32(0)),
        (int, _INT_ARRAY),
        (float, np.ones(1, np.float32)),
        (complex, _EMPTY),
        (bool, _INT_ARRAY),
        (bool, _EMPTY),
        (bool, np.ones(1, np.float32)),  # one element: the concretization error
        (int, np.int32(0)),
    ],
)
def test_traced_conversions_check_the_type_first(backend, convert, value):
    want = _raised(lambda: jax.jit(convert)(value))
    got = _raised(lambda: ri.jit(convert)(value))
    assert want is not None and got is not None
    # the same class: a built-in one, or refimpl's class of JAX's name and
    # place in the hierarchy (its Tracer*ConversionError classes, 9daf149)
    if want.__module__ == "builtins":
        assert got is want
    else:
        assert got.__name__ == want.__name__
        assert issubclass(got, ri.errors.ConcretizationTypeError) == issubclass(
            want, jax.errors.ConcretizationTypeError
        )


def _types(tree, leaves):
    return [(tuple(a.shape), np.dtype(a.dtype), bool(a.weak_type)) for a in leaves(tree)]


def test_traced_stage_spellings_as_jax(backend):
    """``jit(f).trace(...)`` has JAX's ``jaxpr``, ``fun_name`` and ``out_avals``,
    and calling it runs ``f`` on arguments of the traced types (weak types
    aside; the results' weak types follow the arguments, as JAX's evaluation
    of the jaxpr)."""

    def f(x, y):
        return x * 2, y + 1

    def run(m, np_):
        traced = m.jit(f).trace(1.5, np_.ones(2, np_.float32))
        calls = [
            traced(1.5, np_.ones(2, np_.float32)),
            traced(np_.float32(3.0), np_.arange(2, dtype=np_.float32)),
        ]
        return (
            traced.fun_name,
            _types(traced.out_avals, m.tree_util.tree_leaves),
            [_types(c, m.tree_util.tree_leaves) for c in calls],
            [[np.asarray(a).tolist() for a in c] for c in calls],
            len(traced.jaxpr.eqns) == len(m.make_jaxpr(f)(1.5, np_.ones(2, np_.float32)).eqns),
        )

    assert run(ri, rnp) == run(jax, jnp)
    traced = ri.jit(f).trace(1.5, rnp.ones(2, rnp.float32))
    with pytest.raises(TypeError, match="Traced"):
        traced(1.5, rnp.ones(3, rnp.float32))  # JAX evaluates on the wrong shape


def test_eval_shape_shares_the_jit_trace_cache(backend):
    """JAX's eval_shape is ``jit(f).trace``: eval_shape twice, or eval_shape
    then ``jit(f)`` with the same types, traces ``f`` once; a function
    returning a ShapeDtypeStruct still reports it as its own type."""

    def run(m, np_):
        counts = []
        for second in ("eval_shape", "jit"):
            traces: list[int] = []

            def f(x, traces=traces):
                traces.append(1)
                return x * 2

            m.eval_shape(f, np_.ones(3, np_.float32))
            if second == "jit":
                m.jit(f)(np_.ones(3, np_.float32))
            else:
                m.eval_shape(f, np_.ones(3, np_.float32))
            counts.append(len(traces))
        out = m.eval_shape(lambda x: (x, m.ShapeDtypeStruct((2,), np_.float32)), 1.0)
        return counts, [(s.shape, np.dtype(s.dtype), bool(s.weak_type)) for s in out]

    assert run(ri, rnp) == run(jax, jnp)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.grad(jnp.sin, reduce_axes=("i",)),
        lambda m: m.value_and_grad(jnp.sin, reduce_axes=("i",)),
        lambda m: m.vjp(jnp.sin, 1.0, reduce_axes=("i",)),
        lambda m: m.linear_transpose(lambda x: 2 * x, 1.0, reduce_axes=("i",)),
    ],
    ids=["grad", "value_and_grad", "vjp", "linear_transpose"],
)
def test_reduce_axes_is_refused_as_jax(make):
    """JAX 0.10.2 keeps the deprecated ``reduce_axes`` parameter only to
    raise NotImplementedError when it is given (refimpl ignored it)."""
    assert _raised(lambda: make(jax)) is NotImplementedError
    assert _raised(lambda: make(ri)) is NotImplementedError
    assert _raised(lambda: ri.grad(rnp.sin, reduce_axes=())(1.0)) is None


def test_traced_takes_the_dynamic_arguments_alone_as_jax(backend):
    """JAX's Traced of a function with static arguments is called with the
    dynamic ones alone (the static ones were fixed by trace); refimpl also
    takes the whole call."""

    def f(x, n, *, scale):
        return x * n * scale

    def run(m, np_):
        traced = m.jit(f, static_argnums=1, static_argnames="scale").trace(2.0, 3, scale=2)
        out = traced(np_.float32(5.0))
        return float(out), np.dtype(out.dtype), bool(out.weak_type)

    assert run(ri, rnp) == run(jax, jnp)
    traced = ri.jit(f, static_argnums=1, static_argnames="scale").trace(2.0, 3, scale=2)
    assert float(traced(5.0, 3, scale=2)) == 30.0
