"""The public transformation API as JAX's tests/api_test.py exercises it,
against JAX (recorded): which functions a transformation accepts (a
generator function or a ``staticmethod`` object is a ``TypeError`` when it is
made), ``static_argnames``/``donate_argnames`` checked against the signature
(``ValueError``), numbers and names completing each other only when one of
the two is not given, what ``jit`` copies from the function
(``functools.wraps``), ``copy.copy``/``copy.deepcopy`` of arrays and of
tracers, the named axes bound at a call as part of jit's cache key, and the
signature of a ``jacfwd``/``jacrev``/``hessian`` function (``static_argnames``
of its jit name the function's parameters); a ``vjp`` cotangent of another
dtype than its differentiable output (``ValueError``), ``jvp`` primals and
tangents in different containers (``TypeError``), and ``linear_transpose``
of a function with dead non-linear code; a linearized function given a
tangent of another type (``ValueError``); ``len`` and a missing dtype of a
``ShapeDtypeStruct``; ``jit(f).eval_shape``; a bool as a pmap axis
(``TypeError`` when it is made); a vmapped function's docstring; a
custom_vjp cotangent of another dtype leaving a jit or remat sub-program;
``make_jaxpr`` of a duck-typed abstract input; ``device_put`` to something
that is no device (``ValueError``); ``bool``/index conversions of a traced
value its type rules out (the concrete error, not a concretization error),
and the class of each conversion a traced value cannot make; how a type
prints (``str``/``repr`` of ``jax.typeof``); ``default_device("cpu")``;
``ShapeDtypeStruct.update``; the words of an escaped tracer's error, of
Python conversions of arrays and of a few API errors.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

TAGS = ("jit", "api")
X = np.arange(3, dtype=np.float32)


def _generator(x: Any) -> Any:
    yield x


_STATIC = staticmethod(lambda x: x)


def _three(a: Any, b: Any, c: Any) -> Any:
    return a


def _pos_only(a: Any, /, b: Any, *args: Any, **kwargs: Any) -> Any:
    return a


def _times(x: Any, y: Any) -> Any:
    return x * float(y)  # float() of a traced y: ConcretizationTypeError


def _make_jaxpr_axis_env(ns: Any) -> Any:
    # axis_env binds 'i' while tracing: the collectives are equations
    lax = ns.api.lax

    def f(x: Any) -> Any:
        return x - lax.psum(x, "i"), lax.axis_index("i"), lax.all_gather(x * 1.0, "i")

    jaxpr = ns.api.make_jaxpr(f, axis_env=[("i", 4)])(2)
    return [(tuple(a.shape), str(a.dtype), a.weak_type) for a in jaxpr.out_avals]


def _eval_jaxpr(ns: Any) -> Any:
    # jax.core.eval_jaxpr of make_jaxpr's program, eagerly and under grad
    try:  # refimpl's jax.core is refimpl.core_api
        core = importlib.import_module(f"{ns.api.__name__}.core_api")
    except ModuleNotFoundError:
        core = ns.api.core
    c = np.arange(3, dtype=np.float32)
    p = ns.api.make_jaxpr(lambda x: ns.api.numpy.sin(x) * c)(1.0)
    run = lambda x: core.eval_jaxpr(p.jaxpr, p.consts, x)[0]  # noqa: E731
    return run(0.5), ns.api.grad(lambda x: run(x).sum())(0.5)


def _loop_and_scan(ns: Any) -> Any:
    lax = ns.api.lax

    def f(x: Any) -> Any:
        loop = lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] + 1), (0, x))
        return loop, lax.scan(lambda c, x: (c + x, c), np.float32(0), x)

    return f


def _wrapped(api: Any) -> Any:
    def f(x: int) -> int:
        """The docstring."""
        return x + 1

    f.some_value = 4  # type: ignore[attr-defined]
    jf = api.jit(f)
    return [
        getattr(jf, a) == getattr(f, a)
        for a in ("__doc__", "__name__", "__module__", "__qualname__", "__annotations__")
    ] + [jf.some_value]


def _dressed(fun: Any) -> Any:
    """The names, docstring and signature a transformed function carries."""
    return [
        getattr(fun, "__name__", None),
        getattr(fun, "__qualname__", None),
        getattr(fun, "__doc__", None),
        str(inspect.signature(fun)),
    ]


def _transformed_names(ns: Any) -> Any:
    # JAX 0.10.2 dresses each transformed function as the function (its
    # util.wraps): name, qualname, docstring (its own words for vmap, grad and
    # the Jacobians), signature; a partial is named after its function
    api = ns.api
    base = functools.partial(_three_args, z=2.0)
    return {
        f"{name} of {label}": _dressed(make(fun))
        for label, fun in (("a function", _three_args), ("a partial", base))
        for name, make in (
            ("vmap", api.vmap),
            ("grad", api.grad),
            ("grad_argnums", lambda h: api.grad(h, argnums=(0, 1))),
            ("value_and_grad", api.value_and_grad),
            ("jacfwd", api.jacfwd),
            ("jacrev", api.jacrev),
            ("hessian", api.hessian),
            ("pmap", api.pmap),
            ("checkpoint", api.checkpoint),
            ("jit", api.jit),
            ("jit_of_vmap", lambda h: api.jit(api.vmap(h))),
            ("make_jaxpr", api.make_jaxpr),
        )
    }


def _three_args(x: Any, y: Any = 1.0, z: Any = 1.0) -> Any:
    """Multiplies three numbers."""
    return x * y * z


def _flagged(x: Any, flag: bool) -> Any:
    return x * 2.0 if flag else x * 0.0


def _static_flag_of(transform: str) -> Callable[[Any], Any]:
    def script(ns: Any) -> Any:
        f = ns.api.jit(getattr(ns.api, transform)(_flagged), static_argnames=["flag"])
        return f(1.0, False), f(1.0, True)

    return script


def _pullback_of(ns: Any, ct: Any) -> Any:
    _, pullback = ns.api.vjp(lambda x: x * 2.0, np.float32(3))
    return ns.capture(pullback, ct)


def _transpose_past_dead_code(ns: Any) -> Any:
    inner = ns.api.jit(lambda x: (2.0 * x, x > 0))
    return ns.api.linear_transpose(lambda x, y: inner(x)[0], 1.0, 1.0)(3.0)


def _widening_vjp_under(ns: Any, wrap: str) -> Any:
    api = ns.api

    @api.custom_vjp
    def widen(x: Any) -> Any:
        return x.astype("float32")

    widen.defvjp(lambda x: (widen(x), x), lambda x, g: (g * x.astype("float32"),))
    f = api.jit(widen) if wrap == "jit" else api.remat(widen, policy=lambda *_, **__: True)
    x = np.full((2, 2), 1.5, dtype=api.numpy.bfloat16)
    return api.vjp(f, x)[1](np.ones((2, 2), np.float32))


def _axis_sizes(ns: Any) -> Any:
    g = ns.api.jit(lambda: ns.lax_.psum(1, "i"))
    return [ns.api.vmap(g, axis_name="i", axis_size=n, out_axes=None)() for n in (2, 3, 2)]


_TRANSFORMS: dict[str, Callable[[Any, Any], Any]] = {
    "jit": lambda api, f: api.jit(f),
    "grad": lambda api, f: api.grad(f),
    "vmap": lambda api, f: api.vmap(f),
    "jacrev": lambda api, f: api.jacrev(f),
    "vjp": lambda api, f: api.vjp(f, 1.0),
}


def _made(transform: str, fun: Any) -> Callable[[Any], Any]:
    def script(ns: Any) -> Any:
        return ns.capture(lambda: _TRANSFORMS[transform](ns.api, fun) and None)

    return script


SCRIPTS: dict[str, Callable[[Any], Any]] = {
    **{
        f"{name}_of_{kind}": _made(name, fun)
        for name in _TRANSFORMS
        for kind, fun in [("generator", _generator), ("staticmethod", _STATIC)]
    },
    "static_argnames_unknown": lambda ns: ns.capture(
        lambda: ns.api.jit(_three, static_argnames=("b", "nope")) and None
    ),
    "donate_argnames_unknown": lambda ns: ns.capture(
        lambda: ns.api.jit(_three, donate_argnames="nope") and None
    ),
    "static_argnames_positional_only": lambda ns: ns.capture(
        lambda: ns.api.jit(_pos_only, static_argnames="a") and None
    ),
    "static_argnames_var_positional": lambda ns: ns.capture(
        lambda: ns.api.jit(_pos_only, static_argnames="args") and None
    ),
    "static_argnames_under_kwargs": lambda ns: ns.api.jit(_pos_only, static_argnames="zzz")(
        ns.asarray(X), 1
    ),
    "static_argnums_alone_mirrors_names": lambda ns: ns.api.jit(_times, static_argnums=1)(
        ns.asarray(X), y=2.0
    ),
    "static_argnums_with_empty_argnames": lambda ns: ns.capture(
        ns.api.jit(_times, static_argnums=1, static_argnames=()), ns.asarray(X), y=2.0
    ),
    "static_argnames_with_empty_argnums": lambda ns: ns.capture(
        ns.api.jit(_times, static_argnums=(), static_argnames="y"), ns.asarray(X), 2.0
    ),
    "static_argnums_negative_by_keyword": lambda ns: ns.capture(
        ns.api.jit(_times, static_argnums=-1), 3.0, y=2.0
    ),
    "jit_wraps_the_function": lambda ns: _wrapped(ns.api),
    "transformed_functions_are_dressed_as_the_function": _transformed_names,
    "deepcopy_under_jit": lambda ns: ns.api.jit(lambda v: copy.deepcopy(v) * 2)(ns.asarray(X)),
    "copy_of_weak_scalar_under_jit": lambda ns: ns.api.jit(lambda v: copy.copy(v))(1),
    "grad_through_deepcopy": lambda ns: ns.api.grad(lambda v: copy.deepcopy(v) * 3.0)(2.0),
    "deepcopy_of_an_array": lambda ns: copy.deepcopy({"a": ns.asarray(X)}),
    "jit_cache_keyed_on_axis_size": _axis_sizes,
    "vjp_cotangent_float16_for_float32": lambda ns: _pullback_of(ns, np.float16(1)),
    "vjp_cotangent_python_int_for_float32": lambda ns: _pullback_of(ns, 1),
    "vjp_cotangent_python_float_for_float32": lambda ns: _pullback_of(ns, 1.0),
    "jvp_tuple_primals_list_tangents": lambda ns: ns.capture(
        ns.api.jvp, lambda x: x * 2.0, (1.0,), [1.0]
    ),
    "linear_transpose_past_dead_code": _transpose_past_dead_code,
    "linearize_tangent_of_another_type": lambda ns: ns.capture(
        ns.api.linearize(ns.np_.sum, ns.asarray(np.array([1, 2, 3], np.int32)))[1],
        np.ones((3, 2), np.float32),
    ),
    "shape_dtype_struct_len": lambda ns: len(ns.api.ShapeDtypeStruct((3, 2), np.float32)),
    "shape_dtype_struct_len_of_scalar": lambda ns: ns.capture(
        lambda: len(ns.api.ShapeDtypeStruct((), np.float32))
    ),
    "shape_dtype_struct_without_dtype": lambda ns: ns.capture(
        lambda: ns.api.ShapeDtypeStruct((), None) and None
    ),
    "pmap_in_axes_false": lambda ns: ns.capture(
        lambda: ns.api.pmap(lambda x: x, in_axes=False) and None
    ),
    "pmap_out_axes_true": lambda ns: ns.capture(
        lambda: ns.api.pmap(lambda x: x, out_axes=True) and None
    ),
    "vmap_docstring": lambda ns: ns.api.vmap(_three).__doc__,
    "custom_vjp_widening_cotangent_under_jit": lambda ns: _widening_vjp_under(ns, "jit"),
    "custom_vjp_widening_cotangent_under_remat": lambda ns: _widening_vjp_under(ns, "remat"),
    "make_jaxpr_of_a_duck_typed_input": lambda ns: [
        (tuple(a.shape), str(a.dtype))
        for a in ns.api.make_jaxpr(_times, static_argnums=1)(
            types.SimpleNamespace(shape=(2, 3), dtype=np.dtype(np.float32)), 2
        ).out_avals
    ],
    "device_put_to_a_string": lambda ns: ns.capture(
        ns.api.device_put, ns.asarray(np.arange(3.0)), "cpu"
    ),
    "traced_bool_of_several_elements": lambda ns: ns.capture(
        ns.api.jit(bool), ns.asarray(np.arange(3, dtype=np.int32))
    ),
    "traced_bool_of_no_elements": lambda ns: ns.capture(
        ns.api.jit(bool), ns.asarray(np.arange(0, dtype=np.int32))
    ),
    "traced_index_of_a_float": lambda ns: ns.capture(
        ns.api.jit(lambda x: [1, 2][x]), ns.asarray(np.float32(0))
    ),
    "jitted_eval_shape": lambda ns: [
        (s.shape, str(s.dtype), s.weak_type)
        for s in ns.api.jit(lambda x: (x * 2, x.sum())).eval_shape(1.0)
    ],
    **{f"static_argnames_of_{t}": _static_flag_of(t) for t in ("jacfwd", "jacrev", "hessian")},
    "make_jaxpr_axis_env": _make_jaxpr_axis_env,
    "eval_jaxpr_of_make_jaxpr": _eval_jaxpr,
    # make_jaxpr's text is JAX's: names, parameters, layout, no weak mark
    "make_jaxpr_text_of_a_cond": lambda ns: str(
        ns.api.make_jaxpr(
            lambda x: ns.api.lax.cond(x > 0, lambda a: a + 1, lambda a: a - 1, x * 2.0)
        )(3.0)
    ),
    "make_jaxpr_text_of_a_jit": lambda ns: str(
        ns.api.make_jaxpr(ns.api.jit(lambda x: ns.api.numpy.cos(x)))(2.0)
    ),
    # linearize's residuals are the linear jaxpr's constants
    "make_jaxpr_text_of_a_linearized_function": lambda ns: str(
        ns.api.make_jaxpr(ns.api.linearize(ns.api.numpy.sin, 3.0)[1])(1.0)
    ),
    # a scalar constant converted while tracing is a literal, no equation
    "make_jaxpr_text_of_a_folded_conversion": lambda ns: str(
        ns.api.make_jaxpr(lambda: ns.api.lax.convert_element_type(3.0, np.float16))()
    ),
    # switch makes a weak index int32 before clamping it
    "make_jaxpr_text_of_a_switch": lambda ns: str(
        ns.api.make_jaxpr(
            lambda i, x: ns.api.lax.switch(i, [ns.api.numpy.sin, ns.api.numpy.cos], x)
        )(1, 1.0)
    ),
    # jax.debug.print is a debug_print equation with JAX's parameters (a Python
    # number a literal operand, a string a static argument)
    "make_jaxpr_text_of_a_debug_print": lambda ns: str(
        ns.api.make_jaxpr(
            lambda x: (ns.api.debug.print("{} {n} {s}", x, n=2, s="s", ordered=True), x)[1]
        )(np.int32(0))
    ),
    # jnp products name the result type and hold Precision members (testPrecision)
    "make_jaxpr_text_of_a_jnp_dot": lambda ns: str(
        ns.api.make_jaxpr(
            lambda a, b: ns.api.numpy.dot(a, b, precision=ns.api.lax.Precision.HIGHEST)
        )(np.ones((2, 2), np.float32), np.ones((2, 3), np.float32))
    ),
    # a y that is an x is pruned from the scan's body, the xs given for it
    # (lax_control_flow_test's test_scan_input_to_output_forwarding)
    "make_jaxpr_text_of_a_scan_forwarding_an_x": lambda ns: str(
        ns.api.make_jaxpr(lambda xs: ns.api.lax.scan(lambda c, x: (c + 1, x), 0, xs))(
            np.arange(3, dtype=np.float32)
        )
    ),
    # a carry the body returns unchanged is a constant of the scan, the init
    # its final value
    "make_jaxpr_text_of_a_scan_with_a_fixed_carry": lambda ns: str(
        ns.api.make_jaxpr(
            lambda xs: ns.api.lax.scan(
                lambda c, x: ((c[0], c[1] + x), x * c[0]), (np.float32(2), np.float32(1)), xs
            )
        )(np.arange(3, dtype=np.float32))
    ),
    # a while carry the body returns unchanged and cond_fun does not read is a
    # constant of the body (body_nconsts), the init its final value
    "make_jaxpr_text_of_a_while_with_a_fixed_carry": lambda ns: str(
        ns.api.make_jaxpr(
            lambda x: ns.api.lax.while_loop(
                lambda c: c[1] < 3, lambda c: (c[0], c[1] + c[0], c[2]), (x, x, x)
            )
        )(np.float32(1))
    ),
    # an equation's params answer to JAX's names (a while's cond_jaxpr, a
    # scan's jaxpr: lax_control_flow_test's testForiLoopBatchedIssue1190)
    "eqn_params_by_jax_names": lambda ns: [
        (str(e.primitive), [str(a) for a in e.params[k].in_avals], len(e.params[k].jaxpr.eqns))
        for e, k in zip(
            ns.api.make_jaxpr(_loop_and_scan(ns))(np.arange(3, dtype=np.float32)).jaxpr.eqns,
            ("cond_jaxpr", "jaxpr"),
            strict=True,
        )
    ],
    # typed keys are variables of the key type (key<fry>[3,4,5]), and an
    # equation on keys has the keys' parameters (random_test's test_scan_jaxpr)
    "make_jaxpr_text_of_a_scan_over_keys": lambda ns: str(
        ns.api.make_jaxpr(lambda ks: ns.api.lax.scan(lambda _, k: (None, k.T), None, ks))(
            ns.api.vmap(ns.api.random.key)(np.arange(60, dtype=np.uint32)).reshape(3, 4, 5)
        )
    ),
}


def _compiled_weak_call(ns: Any) -> Any:
    # a Compiled compares argument types with weak types stripped
    compiled = ns.api.jit(lambda x: x * 2).lower(1.5).compile()
    return compiled(np.float32(2.0)), compiled(ns.asarray(np.float32(3.0)))


def _traced_stage(ns: Any) -> Any:
    traced = ns.api.jit(lambda x, y: (x * 2, y + 1)).trace(1.5, ns.asarray(X))
    avals = ns.api.tree_util.tree_leaves(traced.out_avals)
    return (
        traced.fun_name,
        [(tuple(a.shape), str(a.dtype), a.weak_type) for a in avals],
        traced(np.float32(2.0), ns.asarray(X)),
    )


def _eval_shape_traces(ns: Any) -> Any:
    # eval_shape is jit(f).trace: it shares jit(f)'s signature cache
    traces: list[int] = []

    def f(x: Any) -> Any:
        traces.append(1)
        return x * 2

    ns.api.eval_shape(f, ns.asarray(X))
    ns.api.eval_shape(f, ns.asarray(X))
    ns.api.jit(f)(ns.asarray(X))
    return len(traces)


def _nested_jacobians_of_cond(ns: Any) -> Any:
    lax, np_ = ns.api.lax, ns.api.numpy

    def f(x: Any) -> Any:
        return lax.cond(x > 0, np_.sin, np_.cos, x)

    return ns.api.hessian(f)(1.0), ns.api.jacfwd(ns.api.jacrev(f))(-1.0)


def _vmap_jit_weak_constant(ns: Any) -> Any:
    c0 = ns.api.numpy.asarray(2.0)
    return ns.api.vmap(ns.api.jit(lambda x: (x, c0 + 1)))(ns.asarray(X))


def _offload_policy_grad(ns: Any) -> Any:
    cp = ns.api.checkpoint_policies
    policy = cp.offload_dot_with_no_batch_dims("device", "pinned_host")
    w = np.eye(3, dtype=np.float32) * 0.5

    def f(x: Any) -> Any:
        return ns.api.numpy.sum(ns.api.numpy.sin(x @ w) @ w)

    return ns.api.grad(ns.api.checkpoint(f, policy=policy))(ns.asarray(np.ones((2, 3), np.float32)))


def _conversion_error_classes(ns: Any) -> Any:
    # JAX 0.10.2 names the conversion a traced value cannot make: bool() a
    # TracerBoolConversionError (a ConcretizationTypeError), __index__ a
    # TracerIntegerConversionError and __array__ a TracerArrayConversionError
    # (neither a ConcretizationTypeError); int()/float()/item() the base class
    errors = ns.api.errors
    uses = {
        "if": lambda x: 1 if x else 0,
        "range": lambda x: sum(range(x)),
        "list_index": lambda x: [1, 2, 3][x],
        "np.asarray": lambda x: np.asarray(x),
        "np.sin": lambda x: np.sin(x),
        "int": lambda x: int(x),
        "item": lambda x: x.item(),
    }
    seen = []
    for name, use in uses.items():
        for transform in (ns.api.jit, ns.api.vmap):
            try:
                transform(use)(np.ones(2, np.int32) if transform is ns.api.vmap else 1)
                seen.append((name, "no error"))
            except TypeError as exc:
                concretization = isinstance(exc, errors.ConcretizationTypeError)
                seen.append((name, type(exc).__name__, concretization))
    return seen


def _type_texts(ns: Any) -> Any:
    # JAX 0.10.2 prints a type with the dtype's full name and the weak mark,
    # its repr naming weak_type only when set
    jnp = ns.api.numpy
    values = [jnp.ones((2, 3)), 1.0, jnp.asarray(3) * 2, jnp.ones(2, jnp.bfloat16), X > 1]
    return [(str(ns.api.typeof(v)), repr(ns.api.typeof(v))) for v in values]


def _typed_key_types(ns: Any) -> Any:
    # JAX 0.10.2: a typed key's type is key<fry>[...] (its logical shape and
    # key dtype), eager and under jit; an old-style key is its uint32 data
    api = ns.api
    keys = api.random.split(api.random.key(0), 3)
    inside = []
    api.jit(lambda k: inside.append(str(api.typeof(k))) or k)(keys)
    return (
        str(api.typeof(keys[0])),
        repr(api.typeof(keys)),
        str(api.typeof(keys).dtype),
        inside,
        str(api.typeof(api.random.PRNGKey(0))),
    )


def _jitted_function_text(ns: Any) -> Any:
    # JAX 0.10.2 prints a jitted function as its C++ wrapper, the wrapped
    # callable's repr inside; nested jits nest
    def f(x):
        return x

    api = ns.api
    texts = [repr(api.jit(f)), str(api.jit(f)), repr(api.jit(api.jit(f)))]
    return [text.replace(repr(f), "F") for text in texts]


def _cost_analysis_kinds(ns: Any) -> Any:
    # what Lowered/Compiled.cost_analysis() return: JAX 0.10.2 on CPU a dict
    # (XLA's HLO cost analysis), refimpl the plugin's answer (None on CPU);
    # JAX's contract allows None ("if unavailable")
    lowered = ns.api.jit(lambda x: x * 2).lower(X)
    analyses = [lowered.cost_analysis(), lowered.compile().cost_analysis()]
    return [type(analysis).__name__ for analysis in analyses]


def _ad_host_outputs(ns: Any) -> Any:
    # JAX 0.10.2's jvp/linearize/vjp return a primal output the function gave
    # as host data (a Python number, a NumPy array) untouched
    api = ns.api
    host = (float, int, np.ndarray, np.generic)

    def kinds(leaves: Any) -> list[str]:
        return [type(v).__name__ if type(v) in host else "array" for v in leaves]

    def f(x: Any) -> Any:
        return x * 2, 2.0, X, 3

    x = api.numpy.ones(3)
    return [
        kinds(api.jvp(f, (x,), (x,))[0]),
        kinds(api.linearize(f, x)[0]),
        kinds(api.vjp(f, x)[0]),
    ]


def _ad_own_inputs(ns: Any) -> Any:
    # JAX 0.10.2's tracers hold the user's own primals and tangents: where no
    # operation made a new value, jvp, linearize, its linear function and
    # vjp's pullback hand back the NumPy array or Python number the user
    # passed (identity, a swap, lax.add's tangent); a jnp function (a jit)
    # and vjp's primal output give arrays
    api, lax = ns.api, ns.lax_
    a, t, s, ts = np.arange(3.0, dtype=np.float32), np.ones(3, np.float32), 2.0, 1.5
    given = {"a": a, "t": t, "s": s, "ts": ts}

    def which(tree: Any) -> list[str]:
        leaves = api.tree_util.tree_leaves(tree)
        return [next((n for n, g in given.items() if v is g), "other") for v in leaves]

    swap = lambda x, y: (y, x)  # noqa: E731
    return [
        which(api.jvp(swap, (a, s), (t, ts))),
        which(api.jvp(lambda x: lax.add(x, 1.0), (a,), (t,))[1]),
        which(api.jvp(api.numpy.asarray, (a,), (t,))),
        which(api.linearize(swap, a, s)[0]),
        which(api.linearize(swap, a, s)[1](t, ts)),
        which(api.vjp(swap, a, s)[0]),
        which(api.vjp(swap, a, s)[1]((ts, t))),
        which(api.linear_transpose(swap, a, s)((s, a))),
        which(api.vmap(lambda x, y: (y, x))(a, a)),
        which(api.vmap(lambda x: (a, s), out_axes=None)(a)),
    ]


def _unhashable_statics(ns: Any) -> Any:
    # JAX 0.10.2: a jnp/lax/nn function that is a jit with static arguments
    # refuses an unhashable one (ValueError); one that is no jit reads a 0-d
    # integer array as its int
    api, jnp, ax = ns.api, ns.np_, np.array(1)
    x = ns.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    calls = [
        lambda: jnp.cumsum(x, ax),
        lambda: jnp.sort(x, axis=[1]),
        lambda: jnp.median(x, ax),
        lambda: jnp.linalg.norm(x, axis=ax),
        lambda: api.nn.log_softmax(x, ax),
        lambda: ns.lax_.fft(x.astype(np.complex64), "FFT", [4]),
        lambda: jnp.sum(x, ax),
        lambda: ns.lax_.cumsum(x, ax),
        lambda: api.nn.softmax(x, ax),
        lambda: jnp.fft.fft(x, axis=ax),  # hashed by the 1-d transform: TypeError
    ]
    seen = []
    for call in calls:
        try:
            call()
            seen.append("ok")
        except (TypeError, ValueError) as exc:
            seen.append(type(exc).__name__)
    return seen


def _eye_numpy_integer_k(ns: Any) -> Any:
    # JAX 0.10.2 (x64 off): a NumPy integer k wraps to int32, a Python int is exact
    ks = (np.int64(2**40), np.int64(2**32 + 1), np.uint64(2**33 + 1), 2**40)
    return [ns.np_.eye(3, 4, k=k) for k in ks]


def _default_platform(ns: Any) -> Any:
    # JAX 0.10.2's default_device takes a platform name too
    with ns.api.default_device("cpu"):
        return ns.api.jit(lambda x: x + 1)(1), ns.api.numpy.add(1, 1)


def _struct_update(ns: Any) -> Any:
    # JAX 0.10.2's ShapeDtypeStruct.update keeps the fields not given
    s = ns.api.ShapeDtypeStruct((2,), np.float32, weak_type=True)
    u = s.update(shape=(3,), dtype=np.int32)
    return repr(u), u.weak_type, u.sharding, repr(s.update(weak_type=False)), s.sharding


def _escaped_tracer_words(ns: Any) -> Any:
    # JAX 0.10.2's error for a tracer used after its jit ended names its type
    # as JAX prints it; JAX's tests search the message for both
    saved: list[Any] = []
    jnp = ns.api.numpy
    ns.api.jit(lambda x: saved.append(x) or x)(jnp.ones((4, 3), dtype=jnp.int32))
    try:
        saved[0] + 1
    except TypeError as exc:
        text = str(exc)
        return type(exc).__name__, "int32[4,3]" in text, "Encountered an unexpected tracer" in text
    return "no error"


def _scalar_conversion_words(ns: Any) -> Any:
    # JAX 0.10.2's class and first words for Python conversions of arrays,
    # concrete and traced (its tests match them case and all)
    import operator
    import re

    jnp = ns.api.numpy
    tries = [
        (int, jnp.arange(1, dtype="float32")),
        (float, jnp.arange(3)),
        (operator.index, jnp.float32(0)),
        (hex, jnp.arange(2)),
        (ns.api.jit(bool), jnp.int32(0)),
        (ns.api.jit(lambda x: 1 if x > 0 else 0), 0),
        (ns.api.jit(operator.index), jnp.int32(0)),
    ]
    seen = []
    for fn, value in tries:
        try:
            fn(value)
            seen.append("no error")
        except TypeError as exc:
            words = re.match(r"[^.;:\n]*", str(exc)).group(0)  # the first phrase
            seen.append((type(exc).__name__, words))
    return seen


def _api_error_words(ns: Any) -> Any:
    # whether each error carries the words JAX 0.10.2's tests match
    import re

    api = ns.api
    tries = [
        ("Expected a callable value", lambda: api.jit(3)),
        (
            "static_argnames and donate_argnames cannot intersect",
            lambda: api.jit(lambda x: x, static_argnames="x", donate_argnames="x"),
        ),
        (
            "may_alias and donate cannot be True at the same time",
            lambda: api.device_put(api.numpy.arange(3), may_alias=True, donate=True),
        ),
        (
            r"as an abstract array\. The problematic value is of type .* and was passed to "
            r"the function at path x\['a'\]\.",
            lambda: api.jit(lambda x: x)({"a": "foo"}),
        ),
    ]
    seen = []
    for words, thunk in tries:
        try:
            thunk()
            seen.append("no error")
        except (TypeError, ValueError) as exc:
            seen.append((type(exc).__name__, bool(re.search(words, str(exc)))))
    return seen


SCRIPTS.update(
    {
        "api_error_words": _api_error_words,
        "scalar_conversion_words": _scalar_conversion_words,
        "escaped_tracer_names_its_type": _escaped_tracer_words,
        "shape_dtype_struct_update": _struct_update,
        "default_device_of_a_platform_name": _default_platform,
        "typeof_text": _type_texts,
        "typeof_of_typed_keys": _typed_key_types,
        "jitted_function_text": _jitted_function_text,
        "cost_analysis_kinds": _cost_analysis_kinds,
        "ad_primal_outputs_keep_host_values": _ad_host_outputs,
        "ad_hands_back_the_users_own_inputs": _ad_own_inputs,
        "unhashable_static_arguments": _unhashable_statics,
        "eye_of_a_numpy_integer_k": _eye_numpy_integer_k,
        "prng_key_of_none": lambda ns: ns.capture(ns.api.random.PRNGKey, None),
        "ref_type_and_empty_array_texts": lambda ns: [
            str(ns.api.typeof(ns.api.new_ref(ns.api.numpy.ones(3)))),
            repr(ns.api.typeof(ns.api.new_ref(ns.api.numpy.ones(3)))),
            repr(ns.api.numpy.zeros((0, 3))),
            repr(ns.api.numpy.zeros((2, 0), np.int32)),
        ],
        "tracer_conversion_error_classes": _conversion_error_classes,
        "compiled_call_with_a_strong_argument": _compiled_weak_call,
        "traced_stage_out_avals_and_call": _traced_stage,
        "eval_shape_shares_the_jit_cache": _eval_shape_traces,
        "nested_jacobians_of_cond": _nested_jacobians_of_cond,
        "vmap_of_jit_with_a_weak_constant": _vmap_jit_weak_constant,
        "offload_policy_grad": _offload_policy_grad,
        "vmap_of_a_string": lambda ns: ns.capture(ns.api.vmap(lambda x: x), "a"),
        "named_scope_of_an_int": lambda ns: ns.capture(lambda: ns.api.named_scope(3) and None),
        "checkpoint_prevent_cse_int": lambda ns: ns.capture(
            lambda: ns.api.checkpoint(lambda x: x, prevent_cse=1) and None
        ),
    }
)


# --- lane APIA of issue 29 (api_test.py's first half held back) -----------------


def _device_put_tree_of_targets(ns: Any) -> Any:
    """device_put with a pytree of targets that is a tree prefix of x."""
    api = ns.api
    d0 = api.devices()[0]
    x = (np.arange(3.0), (np.float32(2), [1.5]))
    out = api.device_put(x, (d0, None))
    bad = ns.capture(lambda: api.device_put((1.0, 2.0, 3.0), (d0, d0)))
    return [out, out[0].devices() == {d0}, bad]


def _slice_transpose_strong(ns: Any) -> Any:
    """x[1]'s cotangent is strong for a Python-float cotangent (slice's transpose)."""
    api = ns.api
    x = api.numpy.ones(4)
    cts = [
        api.vjp(lambda x: x[1], x)[1](1.0),
        api.vjp(lambda x: x[1:3], x)[1](api.lax.broadcast(1.0, (2,))),
        api.vjp(lambda x: x[::2], api.numpy.broadcast_to(2.0, (4,)))[1](
            api.lax.broadcast(1.0, (2,))
        ),
    ]
    return [[ct, ns.weak_type(ct[0])] for ct in cts]


def _jacfwd_aux_is_the_argument(ns: Any) -> Any:
    """jacfwd/hessian's aux returning the argument hands back the user's object."""
    api = ns.api
    x = np.arange(3.0)
    out = []
    for jac in (api.jacfwd, api.hessian):
        j, aux = jac(lambda x: ((x**2).sum(), x), has_aux=True)(x)
        out.append([j, aux is x, str(aux.dtype)])
    return out


def _aot_stage_attributes(ns: Any) -> Any:
    """Lowered/Compiled donate_argnums, in_avals, in_tree; a Compiled under vmap."""
    api = ns.api
    lowered = api.jit(lambda a, b, c: b + c, static_argnums=0, donate_argnums=2).lower(1, 2.0, 3.0)
    compiled = lowered.compile()
    tree = api.tree.flatten(((0, 0), {}))[1]
    under_vmap = ns.capture(lambda: api.vmap(compiled)(np.ones(3, np.float32), np.ones(3)))
    return [
        list(lowered.donate_argnums),
        list(compiled.donate_argnums),
        str(compiled.in_avals) == str(lowered.in_avals),
        compiled.in_tree == tree,
        lowered.in_tree == tree,
        compiled.runtime_executable() is not None,
        under_vmap,
    ]


class _Wrapped:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __jax_array__(self) -> Any:
        return self.value

    dtype = property(lambda self: self.value.dtype)
    shape = property(lambda self: self.value.shape)


def _shape_queries_of_jax_array_objects(ns: Any) -> Any:
    """shape/ndim/size/isscalar of an object defining __jax_array__."""
    jnp = ns.api.numpy
    out = []
    for value in (jnp.array(1), jnp.ones((2, 3), jnp.int8)):
        w = _Wrapped(value)
        out.append([jnp.isscalar(w), jnp.size(w), list(jnp.shape(w)), jnp.ndim(w)])
    return out


def _make_jaxpr_closing_over_a_tracer(ns: Any) -> Any:
    """A closed-over outer tracer is a constant of make_jaxpr's program."""
    api = ns.api
    try:  # refimpl's jax.core is refimpl.core_api
        core = importlib.import_module(f"{api.__name__}.core_api")
    except ModuleNotFoundError:
        core = api.core

    def run(inp: Any) -> Any:
        p = api.make_jaxpr(lambda x: x * 2 + inp)(1)
        return core.eval_jaxpr(p.jaxpr, p.consts, 3)[0]

    return [api.vmap(run)(api.numpy.arange(2)), api.jit(run)(5)]


SCRIPTS.update(
    {
        "device_put_a_tree_of_targets": _device_put_tree_of_targets,
        "slice_transpose_is_strong": _slice_transpose_strong,
        "jacfwd_aux_is_the_argument": _jacfwd_aux_is_the_argument,
        "aot_stage_attributes": _aot_stage_attributes,
        "shape_queries_of_jax_array_objects": _shape_queries_of_jax_array_objects,
        "make_jaxpr_closing_over_a_tracer": _make_jaxpr_closing_over_a_tracer,
    }
)


def cases() -> Iterator[Case]:
    for name, script in SCRIPTS.items():
        yield script_case(f"api.paths/{name}", script, expect=AGREE, tags=TAGS)


# --- lane APIB of issue 29 (api_test.py's second half held back) ----------------


def _eqn_texts(ns: Any) -> Any:
    """str of a make_jaxpr equation is its listing line (``a:f32[] = sin b``,
    its variables named afresh); one without outputs has no ``=``."""
    api, x = ns.api, np.float32(1.0)
    program = api.make_jaxpr(lambda x, y: api.numpy.sin(x) * y)(x, x)

    def printed(v: Any) -> Any:
        api.debug.print("{}", v)
        return v

    callback = api.make_jaxpr(printed)(np.int32(0)).eqns[0]
    return [[str(e) for e in program.eqns], " = " in str(callback)]


SCRIPTS.update({"str_of_an_equation": _eqn_texts})


def _primitive_impl_is_the_function(ns: Any) -> Any:
    """``old = p.impl; p.def_impl(counting(old))``: JAX's Primitive.impl is an
    attribute, so the saved rule stays the old function (no recursion), and
    an eager ``lax.sin`` runs the counting one once."""
    sin_p = ns.api.lax.sin_p
    saved, calls = sin_p.impl, []

    def counting(*args: Any, **params: Any) -> Any:
        calls.append(1)
        return saved(*args, **params)

    try:
        sin_p.def_impl(counting)
        y = ns.api.lax.sin(np.float32(1.0))
    finally:
        sin_p.def_impl(saved)
    return [y, len(calls), sin_p.impl is saved]


SCRIPTS.update({"primitive_impl_is_the_function": _primitive_impl_is_the_function})


# --- lane API of issue 29 (api_test.py run unchanged) -------------------------------


def _compiled_programs_skip_a_users_impl(ns: Any) -> Any:
    """RematTest.test_remat_no_redundant_flops: a jit's program is compiled,
    so a later ``sin_p.def_impl(counting)`` sees no call from it (the remat
    recomputation included); an eager ``lax.sin`` calls it once."""
    api, sin_p = ns.api, ns.api.lax.sin_p
    saved, calls = sin_p.impl, []

    def counting(*args: Any, **params: Any) -> Any:
        calls.append(1)
        return saved(*args, **params)

    f = api.remat(lambda x, y: api.numpy.sin(x) * y)
    g = api.jit(lambda x: f(2.0, x))
    try:
        sin_p.def_impl(counting)
        grad = api.grad(g)(np.float32(3.0))
        under_jit = len(calls)
        api.lax.sin(np.float32(1.0))
    finally:
        sin_p.def_impl(saved)
    return [grad, under_jit, len(calls)]


def _matmul_precision_settings_keep_their_traces(ns: Any) -> Any:
    """A jit traced under each default matmul precision finds that trace
    again when the setting comes back (the setting is part of its signature;
    pjrt's C++ fast path keys on it too)."""
    api, traces = ns.api, []

    @api.jit
    def f(x: Any) -> Any:
        traces.append(1)
        return api.numpy.dot(x, x)

    x = np.eye(2, dtype=np.float32)
    counts = []
    for setting in [None, "float32", None, "float32", "bfloat16", None]:
        if setting is None:
            f(x)
        else:
            with api.default_matmul_precision(setting):
                f(x)
        counts.append(len(traces))
    return counts


def _warm_transformed_jits_lower_nothing(ns: Any) -> Any:
    """Once warm, ``hessian`` and ``vmap`` of a jitted function lower no
    program again: JAX's ``jax.monitoring`` lowering events (pjrt records
    them where it lowers; the reference backend lowers nothing). The batched
    program of the nested jit is made once, not on every call."""
    api = ns.api
    event = "/jax/core/compile/jaxpr_to_mlir_module_duration"
    lowered: list[str] = []

    def listener(name: str, duration: float, **kwargs: Any) -> None:
        if name == event:
            lowered.append(name)

    jf = api.jit(lambda x: api.numpy.square(x).mean())
    x = np.linspace(0.0, 1.0, 32, dtype=np.float32).reshape(8, 4)
    for _ in range(2):
        api.hessian(jf)(x)
        api.vmap(jf)(x)
    api.monitoring.register_event_duration_secs_listener(listener)
    try:
        for _ in range(3):
            api.hessian(jf)(x)
            api.vmap(jf)(x)
    finally:
        api.monitoring.unregister_event_duration_listener(listener)
    return len(lowered)


def _warm_conds_lower_nothing(ns: Any) -> Any:
    """Once warm, eager ``cond`` and ``switch`` of the same branch functions
    lower no program again (``jax.monitoring``'s lowering events, as in
    :func:`_warm_transformed_jits_lower_nothing`): the same branches make
    the same equation."""
    api = ns.api
    event = "/jax/core/compile/jaxpr_to_mlir_module_duration"
    lowered: list[str] = []

    def listener(name: str, duration: float, **kwargs: Any) -> None:
        if name == event:
            lowered.append(name)

    def inc(v: Any) -> Any:
        return v + 1

    def add2(v: Any) -> Any:
        return v + 2

    x = api.device_put(np.float32(1.0))

    def calls() -> None:
        for i in range(6):
            api.lax.cond(i % 2, inc, add2, x)
            api.lax.switch(i % 3, [inc, add2, inc], x)

    calls()
    api.monitoring.register_event_duration_secs_listener(listener)
    try:
        calls()
    finally:
        api.monitoring.unregister_event_duration_listener(listener)
    return len(lowered)


def _live_array_counts(ns: Any) -> Any:
    """``jax.live_arrays``: the arrays alive, not deleted, each once."""
    api = ns.api
    import gc

    gc.collect()
    before = len(api.live_arrays())
    x = api.numpy.ones(3)
    y = api.jit(lambda a: (a + 1, a * 2))(x)
    gc.collect()
    made = len(api.live_arrays()) - before
    x.delete()
    deleted = len(api.live_arrays()) - before
    del x, y
    gc.collect()
    return [made, deleted, len(api.live_arrays()) - before]


def _device_platform(ns: Any) -> Any:
    """The platform of the default backend's devices: refimpl's reference
    backend names its own ('ref'; known difference), pjrt's CPU plugin 'cpu'."""
    return ns.api.local_devices()[0].platform


SCRIPTS.update(
    {
        "compiled_programs_skip_a_users_impl": _compiled_programs_skip_a_users_impl,
        "matmul_precision_settings_keep_their_traces": _matmul_precision_settings_keep_their_traces,
        "live_array_counts": _live_array_counts,
        "warm_transformed_jits_lower_nothing": _warm_transformed_jits_lower_nothing,
        "warm_conds_lower_nothing": _warm_conds_lower_nothing,
        "device_platform": _device_platform,
    }
)


# --- lane PROMO of issue 29 (jax_numpy_rank_promotion, jax_numpy_dtype_promotion) ---


def _numpy_promotion_modes(ns: Any) -> Any:
    """Under each rank / dtype promotion mode, a jitted ``x + y`` of ranks 1
    and 2 broadcasts, warns or raises, and traces again when the modes change
    (they are part of its signature; pjrt's C++ fast path keys them too); a
    mode seen before finds its trace. Under "strict" an int32 + float32 is a
    TypePromotionError and a weak Python scalar still takes the array's type."""
    api, traces = ns.api, []

    @api.jit
    def f(x: Any, y: Any) -> Any:
        traces.append(1)
        return x + y

    def outcome(fn: Any, *args: Any) -> Any:
        try:
            out, said = ns.recording_warnings(fn, *args)
        except Exception as exc:  # the class only: JAX names the dtypes in set order
            return type(exc).__name__
        return [out, [w.split(":")[0] for w in said]]

    x, y = np.ones(2, np.float32), np.ones((1, 2), np.float32)
    seen = []
    modes = [("allow", "standard"), ("raise", "standard"), ("warn", "standard")]
    for rank, dtype in modes + [("allow", "standard"), ("allow", "strict")]:
        with api.numpy_rank_promotion(rank), api.numpy_dtype_promotion(dtype):
            seen.append([outcome(f, x, y), len(traces)])
    with api.numpy_dtype_promotion("strict"):
        seen.append(outcome(api.numpy.add, np.ones(2, np.int32), np.ones(2, np.float32)))
        seen.append(outcome(api.numpy.multiply, np.ones(2, np.float16), 3))
        seen.append(outcome(api.numpy.add, np.ones(2, np.int32), 1.5))
    return seen


SCRIPTS.update({"numpy_promotion_modes": _numpy_promotion_modes})


# --- lane MISC of issue 29 ---


def _key_equality_rank_promotion(ns: Any) -> Any:
    """A scalar typed key compared with keys of shape (5,) under
    jax_numpy_rank_promotion="raise": allowed, since keys compare by their
    key shapes (() and (5,)), not by their key data's ((2,) and (5, 2));
    keys of ranks 1 and 2 are refused (ValueError)."""
    api = ns.api
    key = api.random.key(123)
    keys = api.random.split(key, 5).at[2:4].set(key)
    seen = []
    with api.numpy_rank_promotion("raise"):
        seen.append([np.asarray(key == keys), np.asarray(keys != key)])
        try:
            api.random.split(key, (2, 5)) == keys  # noqa: B015 - the comparison raises
        except ValueError as exc:
            seen.append(type(exc).__name__)
    return seen


SCRIPTS.update({"key_equality_rank_promotion": _key_equality_rank_promotion})


def _eval_jaxpr_scan_on_strong_carries(ns: Any) -> Any:
    """jax.core.eval_jaxpr of a scan traced with weak carries (Python floats),
    run on float32 ones, eagerly and under jit: a carry the body returns
    unchanged keeps the loop's type (pjrt replays the body in a while loop,
    which refused the other weak type). (Under vjp the zero cotangent of an
    unchanged carry is weak on refimpl, strong on JAX: left, see
    docs/_lanes/MISC.md.)"""
    try:  # refimpl's jax.core is refimpl.core_api
        core = importlib.import_module(f"{ns.api.__name__}.core_api")
    except ModuleNotFoundError:
        core = ns.api.core
    api = ns.api

    def f(lst: Any) -> Any:
        def body(c: Any, _: Any) -> Any:
            return [c[0]] + [c1 + c2 for c1, c2 in zip(c[:-1], c[1:])], None

        return api.lax.scan(body, lst, None, length=len(lst))[0]

    p = api.make_jaxpr(f)([1.0, 2.0, 3.0, 4.0])
    run = lambda *a: core.eval_jaxpr(p.jaxpr, p.consts, *a)  # noqa: E731
    args = [np.float32(v) for v in (0.5, 1.5, -1.0, 2.0)]
    return run(*args), api.jit(run)(*args)


SCRIPTS.update({"eval_jaxpr_scan_on_strong_carries": _eval_jaxpr_scan_on_strong_carries})
