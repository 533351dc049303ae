"""custom_jvp / custom_vjp programs from the kinds JAX's custom-rule tests run
(issue 29), against JAX (recorded): nested vmap of a custom_vjp gradient, a
bwd output in a user pytree node whose unflatten refuses ``None`` children,
a ``SymbolicZero`` of the wrong type from bwd (``ValueError``), a traced
``nondiff_argnums`` argument of custom_vjp (``UnexpectedTracerError``; a
custom_jvp takes one), ``custom_derivatives.zero_from_primal`` and float0
zeros passed through a custom_jvp rule.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.namespace import Unsupported
from conformance.observe import Raises

TAGS = ("ad", "custom")
XX = np.arange(6, dtype=np.float32).reshape(2, 3)


def _sin_vjp(api: Any) -> Any:
    @api.custom_vjp
    def f(x):
        return api.numpy.sin(x)

    f.defvjp(lambda x: (f(x), api.numpy.cos(x)), lambda c, g: (2 * c * g,))
    return f


def _user_node_bwd(ns: Any) -> Any:
    api = ns.api

    class Box(list):
        pass

    def unflatten(_: Any, children: list) -> Box:
        if children[0] is None:
            raise AssertionError("rebuilt with a None child")
        return Box(children)

    api.tree_util.register_pytree_node(Box, lambda b: (list(b), None), unflatten)

    @api.custom_vjp
    def f(b):
        return b[0] * 3.0

    f.defvjp(lambda b: (f(b), None), lambda _, g: (Box([2.0 * g]),))
    return list(api.grad(f)(Box([ns.asarray(np.float32(1.5))])))


def _swapped_symbolic_zeros(ns: Any) -> Any:
    api = ns.api

    @api.custom_vjp
    def f(x, y):
        return x, y

    f.defvjp(
        lambda x, y: (f(x.value, y.value), None),
        lambda _, cts: (cts[1], cts[0]),
        symbolic_zeros=True,
    )
    return api.grad(lambda x, y: f(x, y)[0].sum())(
        ns.asarray(np.ones(1, np.float32)), ns.asarray(np.ones(2, np.float32))
    )


def _traced_nondiff(ns: Any) -> Any:
    api = ns.api

    @functools.partial(api.custom_vjp, nondiff_argnums=(0,))
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), y), lambda x, y, g: (x * g,))
    return api.jit(f)(2.0, 3.0)


def _traced_nondiff_jvp(ns: Any) -> Any:
    api = ns.api

    @functools.partial(api.custom_jvp, nondiff_argnums=(0,))
    def f(x, y):
        return x * y

    f.defjvp(lambda x, p, t: (f(x, *p), x * t[0]))
    return api.jit(lambda x, y: api.jvp(lambda y: f(x, y), (y,), (1.0,)))(2.0, 3.0)


def _float0_through_rule(ns: Any) -> Any:
    api = ns.api
    z = api.numpy.zeros((), dtype=api.dtypes.float0)

    @api.custom_jvp
    def f(x, i):
        return x, i

    f.defjvp(lambda p, _: (p, (p[0] * 2.0, api.custom_derivatives.zero_from_primal(p[1]))))
    # the tangents only: JAX hands back the Python int primal as it is
    primals, tangents = api.jvp(
        f, (ns.asarray(np.float32(2.0)), 3), (ns.asarray(np.float32(1.0)), z)
    )
    return primals[0], tangents


SCRIPTS: dict[str, Callable[[Any], Any]] = {
    "vmap_vmap_grad": lambda ns: ns.api.vmap(ns.api.vmap(ns.api.grad(_sin_vjp(ns.api))))(
        ns.asarray(XX)
    ),
    "vmap_vmap_value_and_grad_jit": lambda ns: ns.api.jit(
        ns.api.vmap(ns.api.vmap(ns.api.value_and_grad(_sin_vjp(ns.api))))
    )(ns.asarray(XX)),
    "bwd_user_node": _user_node_bwd,
    "bwd_symbolic_zero_of_another_shape": _swapped_symbolic_zeros,
    "custom_vjp_traced_nondiff": _traced_nondiff,
    "custom_jvp_traced_nondiff": _traced_nondiff_jvp,
    "zero_from_primal": lambda ns: ns.api.custom_derivatives.zero_from_primal(
        (2.0, 3, ns.asarray(np.ones(2, np.float16)))
    ),
    "float0_through_rule": _float0_through_rule,
    "float0_cotangent_of_a_scan_carry": lambda ns: _float0_scan_carry(ns),
    "rules_closing_over_an_inner_vmap_value": lambda ns: _closure_with_vmap(ns),
    # checkpoint's DCE prunes a custom call to the output used: its rules
    # then answer for that output (bwd gets a zero cotangent for the other)
    "checkpoint_of_one_output_of_a_custom_vjp": lambda ns: _one_output_checkpointed(ns),
    # jvp of a custom_vjp stages its tangent (custom_lin): a jit dropping it runs
    "jvp_of_custom_vjp_primal_under_jit": lambda ns: ns.api.jit(
        lambda x: ns.api.jvp(_sin_vjp(ns.api), (x,), (x,))[0]
    )(ns.asarray(XX)),
}


def _one_output_checkpointed(ns: Any) -> Any:
    api, jnp = ns.api, ns.api.numpy

    @api.custom_vjp
    def f(x, y):
        return jnp.sin(x), x + jnp.cos(y)

    f.defvjp(
        lambda x, y: (f(x, y), (jnp.cos(x), jnp.sin(y))),
        lambda r, c: (2.0 * r[0] * c[0] + 1.5 * c[1], -0.5 * r[1] * c[1]),
    )
    xs, ys = ns.asarray(XX[0]), ns.asarray(XX[1] - 2.0)

    def grads(k: int) -> Any:
        g = api.grad(lambda x, y: api.checkpoint(lambda a, b: f(a, b)[k])(x, y), (0, 1))
        return api.vmap(g)(xs, ys)

    return [grads(0), grads(1)]


def _float0_scan_carry(ns: Any) -> Any:
    """A custom_vjp over a (float, int) scan carry whose bwd gives the int part
    a float0 zero: grad with allow_int (the int's cotangent as its dtype name)."""
    api = ns.api

    @api.custom_vjp
    def f(c):
        return c

    f.defvjp(
        lambda c: (c, None),
        lambda _, g: ((2.0 * g[0], np.zeros((), dtype=api.dtypes.float0)),),
    )

    def foo(x, y):
        out, _ = api.lax.scan(lambda c, _: (f(c), None), (x, y), None, length=3)
        return out[0] * out[1]

    gx, gy = api.grad(foo, allow_int=True, argnums=(0, 1))(2.0, 3)
    return gx, np.asarray(gy).dtype == api.dtypes.float0


def _closure_with_vmap(ns: Any) -> Any:
    """custom_jvp/custom_vjp functions and rules closing over a value of a vmap
    that runs inside the differentiation (jvp, and grad of the sum)."""
    api = ns.api

    def jvp_h(z: Any) -> Any:
        def f(x: Any) -> Any:
            @api.custom_jvp
            def g(y):
                return x * y

            g.defjvp(lambda p, t: (x * p[0], x * t[0]))
            return g(z)

        return api.vmap(f)(np.arange(3.0, dtype=np.float32))

    def vjp_h(z: Any) -> Any:
        def f(x: Any) -> Any:
            @api.custom_vjp
            def g(y):
                return x * y

            g.defvjp(lambda y: (x * y, (x, y)), lambda res, w: (res[0] * w,))
            return g(z)

        return api.vmap(f)(np.arange(3.0, dtype=np.float32)).sum()

    z = np.float32(3.14)
    return api.jvp(jvp_h, (z,), (np.float32(2.0),)), api.grad(vjp_h)(z)


def _closing_over(api: Any, x: Any, kind: str, use: bool = True) -> Any:
    """A custom_jvp/custom_vjp function closing over ``x`` (reading it, or not)."""

    def fun(y):
        return x + y if use else 2.0 * y

    if kind == "jvp":
        g = api.custom_jvp(fun)
        g.defjvp(lambda p, t: (g(p[0]), 2.0 * t[0]))
    else:
        g = api.custom_vjp(fun)
        g.defvjp(lambda y: (g(y), None), lambda _, c: (2.0 * c,))
    return g


def _closed_over_unperturbed_call(ns: Any, kind: str, how: str) -> Any:
    """The function reads a differentiated value while none of its arguments
    is differentiated: JAX 0.10.2 runs it below that differentiation, where
    the value is an escaped tracer (UnexpectedTracerError)."""
    api, one = ns.api, np.float32(1.0)
    x0 = ns.asarray(np.float32(3.0))
    if how == "jvp":
        return api.jvp(lambda x: _closing_over(api, x, kind)(one), (x0,), (x0,))
    if how == "grad_jit":
        return api.jit(api.grad(lambda x: _closing_over(api, x, kind)(one)))(x0)
    if how == "inner_jvp":  # an enclosing (outer) differentiation's value

        def inner(x):
            return api.jvp(lambda y: _closing_over(api, x, kind)(one) * y, (one,), (one,))

        return api.jvp(inner, (x0,), (x0,))
    ones = ns.asarray(np.ones(2, np.float32))  # how == "vmap_inside": unbatched call
    return api.jvp(
        lambda x: api.vmap(lambda z: _closing_over(api, x, kind)(one) + z)(ones), (x0,), (x0,)
    )


def _closed_over_unused(ns: Any, kind: str) -> Any:
    api = ns.api
    x0 = ns.asarray(np.float32(3.0))
    return api.jvp(
        lambda x: _closing_over(api, x, kind, use=False)(np.float32(1.0)) + x, (x0,), (x0,)
    )


def _closed_over_cases() -> Iterator[Case]:
    for kind in ("jvp", "vjp"):
        for how in ("jvp", "grad_jit", "inner_jvp", "vmap_inside"):
            yield script_case(
                f"custom.api/closed_over_unperturbed_call_{kind}_{how}",
                functools.partial(_closed_over_unperturbed_call, kind=kind, how=how),
                expect=AGREE,
                tags=TAGS,
            )
    yield script_case(
        "custom.api/closed_over_unused_jvp",
        functools.partial(_closed_over_unused, kind="jvp"),
        expect=AGREE,
        tags=TAGS,
    )


def _doubled_three_times(ns: Any, t: Any) -> Any:
    return ns.api.lax.fori_loop(0, 3, lambda i, c: c * 2.0 + i * 0.0, t)


def _fori_in_jvp_rule(ns: Any) -> Any:
    """A custom_jvp rule whose tangent is a fori_loop (a counter carried
    beside the linear value), reverse-differentiated: JAX splits the counter
    off before it transposes the loop."""
    api = ns.api
    f = api.custom_jvp(lambda x: x * 8.0)
    f.defjvp(lambda p, t: (f(p[0]), _doubled_three_times(ns, t[0])))
    x = ns.asarray(np.float32(2.0))
    return api.grad(f)(x), api.jit(api.grad(f))(x), api.vmap(api.grad(f))(ns.asarray(XX[0]))


def _linear_transpose_scan_counter(ns: Any) -> Any:
    api = ns.api
    xs = ns.asarray(np.arange(1, 4, dtype=np.float32))

    def scanned(t):
        body = lambda c, x: ((c[0] + 1, c[1] * x), c[1])  # noqa: E731
        (_, out), ys = api.lax.scan(body, (0, t), xs)
        return out + ys.sum()

    x = np.float32(2.0)
    return api.linear_transpose(scanned, x)(x), api.jit(api.linear_transpose(scanned, x))(x)


def _int_output_tangent(ns: Any, tangent: Any) -> Any:
    """A custom_jvp rule's tangent of an integer output: JAX 0.10.2 takes
    float0 zeros (or a symbolic zero) and refuses integer zeros (TypeError)."""
    api = ns.api
    f = api.custom_jvp(lambda x: (x * 2.0, np.int32(3)))
    f.defjvp(lambda p, t: (f(p[0]), (t[0] * 5.0, tangent)))
    return api.jit(lambda x: api.jvp(f, (x,), (np.float32(1.0),)))(np.float32(1.0))


def _int_output_cases() -> Iterator[Case]:
    yield script_case(
        "custom.api/custom_jvp_int_output_float0_tangent",
        lambda ns: _int_output_tangent(ns, np.zeros((), ns.api.dtypes.float0)),
        expect=AGREE,
        tags=TAGS,
    )
    yield script_case(
        "custom.api/custom_jvp_int_output_int_tangent",
        lambda ns: _int_output_tangent(ns, np.zeros((), np.int32)),
        expect=AGREE,
        tags=TAGS,
    )


def _as_class_attribute(ns: Any) -> Any:
    """A custom_jvp as a class attribute: JAX 0.10.2's is not a descriptor,
    so ``m.f(x)`` does not pass ``m`` (a missing-argument TypeError)."""
    api = ns.api
    f = api.custom_jvp(lambda self, x: x * 3.0, nondiff_argnums=(0,))
    f.defjvp(lambda s, p, t: (f(s, *p), t[0] * 6.0))
    m = type("M", (), {"f": f})()
    return m.f(ns.asarray(np.float32(2.0)))


def _custom_vmap_reverse(ns: Any, how: str) -> Any:
    """Reverse mode linearizes a custom_vmap call taking a tangent: JAX
    0.10.2's partial evaluation finds its primal unknown (ValueError)."""
    api = ns.api
    xs = ns.asarray(np.arange(3, dtype=np.float32))
    if how == "grad_of_vmap_sequential":
        seq = api.custom_batching.sequential_vmap(lambda x, y: x + y)
        return api.grad(lambda x: api.vmap(seq)(x, x).sum())(xs)
    f = api.custom_batching.custom_vmap(lambda x: api.numpy.sin(x))
    f.def_vmap(lambda size, batched, xs: (api.numpy.cos(xs), batched[0]))
    if how == "linearize":
        return api.linearize(f, np.float32(0.5))[0]
    return api.vjp(api.vmap(f), xs)[1](xs)  # the rule applied first: runs


def _custom_vmap_reverse_cases() -> Iterator[Case]:
    for how in ("grad_of_vmap_sequential", "linearize", "vjp_of_vmap"):
        yield script_case(
            f"custom.api/custom_vmap_reverse_{how}",
            functools.partial(_custom_vmap_reverse, how=how),
            expect=AGREE,
            tags=TAGS,
        )


def _known_carry_cases() -> Iterator[Case]:
    yield script_case(
        "custom.api/custom_jvp_as_class_attribute", _as_class_attribute, expect=AGREE, tags=TAGS
    )
    for name, script in (
        ("custom_jvp_rule_fori_tangent_grad", _fori_in_jvp_rule),
        ("linear_transpose_scan_with_counter", _linear_transpose_scan_counter),
    ):
        yield script_case(f"custom.api/{name}", script, expect=AGREE, tags=TAGS)


def cases() -> Iterator[Case]:
    yield script_case(
        "custom.api/custom_vjp_bwd_psum_eager_grad_of_named_vmap",
        _bwd_psum_eager_grad,
        expect=lambda: np.float32([20.5, 34.0, 47.5]),  # 13.5 * x + 7
        tags=TAGS,
    )
    yield from _closed_over_cases()
    yield from _known_carry_cases()
    yield from _int_output_cases()
    yield from _custom_vmap_reverse_cases()
    for name, script in SCRIPTS.items():
        yield script_case(f"custom.api/{name}", script, expect=AGREE, tags=TAGS)
    yield from cases_checked()
    yield from _while_custom_vjp_cases()


def _linear_call(ns: Any, untrue: bool) -> Any:
    api = ns.api
    lc = api.custom_derivatives.linear_call
    y, x = ns.asarray(np.full(2, 3.0, np.float32)), ns.asarray(np.full(2, 6.0, np.float32))
    tp = (lambda r, t: t / (2.0 * r)) if untrue else (lambda r, t: t / r)

    def f(v):
        return v + lc(lambda r, w: w / r, tp, y, v)

    def transposed(g: Any) -> Any:
        return lambda t: api.linear_transpose(g, x)(t)[0]

    ft = transposed(f)
    ftt = transposed(ft)
    return f(x), ft(x), ftt(x), transposed(ftt)(x), api.jit(ft)(x), api.jvp(f, (x,), (x,))


def _linear_call_bad_transpose(ns: Any) -> Any:
    api = ns.api
    f = lambda v: api.custom_derivatives.linear_call(  # noqa: E731
        lambda r, w: w / r, lambda r, t: None, 3.0, v
    )
    return api.linear_transpose(f, 6.0)(1.0)


SCRIPTS.update(
    {
        "linear_call_true_transpose": lambda ns: _linear_call(ns, False),
        "linear_call_untrue_transpose": lambda ns: _linear_call(ns, True),
        "linear_call_grad_jit": lambda ns: ns.api.grad(
            ns.api.jit(
                lambda v: ns.api.custom_derivatives.linear_call(
                    lambda r, w: w * r, lambda r, t: t * (r + 1.0), 3.0, v
                )
            )
        )(2.0),
        "linear_call_bad_transpose": _linear_call_bad_transpose,
    }
)


def _sequential_vmap(ns: Any) -> Any:
    api = ns.api
    xs = ns.asarray(np.linspace(0.0, 1.0, 5).astype(np.float32))

    @api.custom_batching.sequential_vmap
    def add(x, y):
        return {"s": x + y, "p": [x * y]}

    return api.vmap(add)(xs, xs + 1.0), api.vmap(add, in_axes=(0, None))(xs, 4.0)


def _vjp_of_vmap_forwarding(ns: Any) -> Any:
    api = ns.api
    xs = ns.asarray(np.linspace(0.0, 1.0, 5).astype(np.float32))

    @api.custom_vjp
    @api.custom_batching.custom_vmap
    def f(x, y):
        return api.numpy.sin(x) * y

    f.def_vmap(lambda size, batched, x, y: (api.numpy.cos(x) * y, True))
    f.defvjp(lambda x, y: (f(x, y), (api.numpy.cos(x), y)), lambda r, g: (r[0] * g * r[1], g))
    return api.vmap(f)(xs, xs), api.jit(api.grad(f))(xs[1], xs[2])


SCRIPTS.update(
    {
        "sequential_vmap": _sequential_vmap,
        "custom_vjp_of_custom_vmap_def_vmap": _vjp_of_vmap_forwarding,
        "lax_map_batch_size_zero": lambda ns: ns.api.lax.map(
            lambda x: x * x, ns.asarray(np.arange(7, dtype=np.float32)), batch_size=0
        ),
    }
)


def _int_args_not_perturbed(ns: Any) -> Any:
    api = ns.api
    i = ns.asarray(np.array(7, np.int32))
    log: list = []

    @api.custom_vjp
    def f(x, y, z):
        return x * 2.0, x

    def fwd(x, y, z):
        log.append([x.perturbed, y.perturbed, z.perturbed])
        return f(x.value, y.value, z.value), None

    f.defvjp(fwd, lambda _, g: (g[0], g[0], g[1]), symbolic_zeros=True)
    jac = api.jacrev(f, argnums=(0, 1, 2), allow_int=True)(4.0, i, i)
    grads = api.grad(lambda *a: f(*a)[0], argnums=(0, 1, 2), allow_int=True)(4.0, i, i)
    return jac, grads, log


SCRIPTS["int_args_of_custom_vjp_not_perturbed"] = _int_args_not_perturbed


def _vmap_rule_output_of_another_type(ns: Any) -> Any:
    api = ns.api
    z = ns.asarray(np.array([2.0, 1.0, 3.0], np.float32))

    @api.custom_batching.custom_vmap
    def f(x):
        return z + api.numpy.sin(x)  # f32[3] per member

    # under vmap of 3 members f's output is f32[3, 3]; this rule gives f32[3],
    # taken as it is (its members are scalars), as JAX
    f.def_vmap(lambda size, batched, xs: (z + api.numpy.cos(xs), batched[0]))
    xs = ns.asarray(np.arange(3, dtype=np.float32))
    return api.vmap(f)(xs), api.jit(api.vmap(lambda x: f(x).sum() + 1.0))(xs)


def _vmap_rule_output_of_another_dtype(ns: Any) -> Any:
    api = ns.api

    @api.custom_batching.custom_vmap
    def f(x):
        return api.numpy.sin(x)

    f.def_vmap(lambda size, batched, xs: (api.numpy.cos(xs).astype(np.float16), batched[0]))
    xs = ns.asarray(np.arange(3, dtype=np.float32))
    return api.vmap(f)(xs), api.jit(api.vmap(f))(xs)


def _vmap_rule_output_unbatched_flag(ns: Any) -> Any:
    api = ns.api

    @api.custom_batching.custom_vmap
    def f(x):
        return api.numpy.sin(x)

    # marked unbatched: the whole f32[3] is every member's value
    f.def_vmap(lambda size, batched, xs: (xs, False))
    return api.vmap(f)(ns.asarray(np.arange(3, dtype=np.float32)))


def _vmap_rule_output_without_batch_axis(ns: Any) -> Any:
    api = ns.api

    @api.custom_batching.custom_vmap
    def f(x):
        return api.numpy.sin(x)

    # marked batched, but its first axis has 2 members of 3
    f.def_vmap(lambda size, batched, xs: (xs[:2], True))
    return api.vmap(f)(ns.asarray(np.arange(3, dtype=np.float32)))


def cases_checked() -> Iterator[Case]:
    for name, script in (
        ("custom_vmap_rule_output_of_another_type", _vmap_rule_output_of_another_type),
        ("custom_vmap_rule_output_of_another_dtype", _vmap_rule_output_of_another_dtype),
        ("custom_vmap_rule_output_unbatched_flag", _vmap_rule_output_unbatched_flag),
    ):
        yield script_case(f"custom.api/{name}", script, expect=AGREE, tags=TAGS)
    yield script_case(
        "custom.api/custom_vmap_rule_output_without_batch_axis",
        _vmap_rule_output_without_batch_axis,
        expect=Raises(ValueError, "custom vmap rule"),
        tags=TAGS,
    )


def _batched_nondiff_jvp(ns: Any) -> Any:
    api = ns.api

    @functools.partial(api.custom_jvp, nondiff_argnums=(0,))
    def f(x, y):
        return x * y

    f.defjvp(lambda x, p, t: (f(x, p[0]), 5.0 * x * t[0]))
    two = ns.asarray(np.array([2.0, 4.0], np.float32))
    three = ns.asarray(np.array([3.0, 1.0], np.float32))
    g = api.vmap(f)
    return api.jvp(lambda y: g(two, y), (three,), (three,)), api.grad(lambda y: g(two, y).sum())(
        three
    )


SCRIPTS["custom_jvp_batched_nondiff_argument"] = _batched_nondiff_jvp


def _custom_vmap_extra_batched(ns: Any) -> Any:
    api = ns.api
    xs = ns.asarray(np.arange(3, dtype=np.float32))
    log: list = []

    @api.custom_batching.custom_vmap
    def f(x):
        return api.numpy.sin(x)

    @f.def_vmap
    def rule(size, batched, xs):
        log.append(list(batched))
        return api.numpy.cos(xs), batched[0]

    f_jvp = lambda p, t: api.jvp(f, [p], [t])  # noqa: E731
    return (
        api.vmap(f_jvp, in_axes=(None, 0), out_axes=(None, 0))(xs[1], xs + 2.0),
        api.vmap(f_jvp, in_axes=(0, None))(xs, 4.0),
        api.jacfwd(f)(xs + 0.72),
        log,
    )


SCRIPTS["custom_vmap_jvp_batched_apart"] = _custom_vmap_extra_batched


def _int_args_through_transposed_calls(ns: Any) -> Any:
    api = ns.api
    i = ns.asarray(np.array(7, np.int32))

    @api.custom_vjp
    def f(x, n, k):
        return x, x

    f.defvjp(
        lambda x, n, k: ((x.value, x.value), None),
        lambda _, g: (g[0], g[0], g[1]),
        symbolic_zeros=True,
    )
    wraps = (api.jit(f), api.checkpoint(f), lambda *a: api.lax.cond(True, f, f, *a))
    return [api.jacrev(h, argnums=(0, 1, 2), allow_int=True)(4.0, i, i) for h in wraps]


SCRIPTS["custom_vjp_int_args_through_transposed_calls"] = _int_args_through_transposed_calls


def _custom_vmap_outside_vmap(ns: Any) -> Any:
    # Outside vmap the call evaluates the function's program: Python scalar
    # arguments are weak arrays, the results arrays (not Python numbers).
    api = ns.api
    f = api.custom_batching.custom_vmap(lambda x: x + 1.0)
    f.def_vmap(lambda size, batched, xs: (xs + 1.0, batched[0]))
    g = api.custom_batching.sequential_vmap(lambda x, y: x * y)
    return f(2.0), f(3), f(np.arange(3.0)), g(2, 3), g(np.arange(3), 2.0)


SCRIPTS["custom_vmap_outside_vmap_python_scalars"] = _custom_vmap_outside_vmap


def _custom_vmap_jvp_integer_argument(ns: Any) -> Any:
    # The integer argument's tangent is a float0 zero, not an argument of the
    # JVP's own custom_vmap function (nor of its rule's JVP).
    api = ns.api
    f = api.custom_batching.custom_vmap(lambda x, n: x * n)
    f.def_vmap(lambda size, b, x, n: (x * n * 2.0, b[0] or b[1]))

    def one(x: Any, n: Any) -> Any:
        return api.jvp(lambda x: f(x, n), (x,), (ns.asarray(np.float32(1.0)),))

    xs = ns.asarray(np.arange(3, dtype=np.float32))
    return one(xs[1], 3), api.vmap(one)(xs, ns.asarray(np.arange(3, dtype=np.int32)))


SCRIPTS["custom_vmap_jvp_integer_argument"] = _custom_vmap_jvp_integer_argument


def _lax_map_batch_size_empty_axis(ns: Any) -> Any:
    # no chunks and no remainder: the results are empty, not an error
    xs = (ns.asarray(np.zeros((0, 3), np.float32)), ns.asarray(np.zeros((0,), np.int32)))
    return ns.api.lax.map(lambda v: (v[0] * 2, v[1] + 1), xs, batch_size=np.int32(2))


SCRIPTS["lax_map_batch_size_empty_axis"] = _lax_map_batch_size_empty_axis


def _custom_rules_eager_numpy(ns: Any) -> Any:
    # NumPy float64/int64 arguments are canonicalized before the function runs
    api = ns.api
    f = api.custom_jvp(lambda x: x * 1)
    f.defjvp(lambda p, t: (p[0], t[0]))
    g = api.custom_vjp(lambda x: x * 1)
    g.defvjp(lambda x: (x, None), lambda r, c: (c,))
    return [np.asarray(h(a)).dtype.name for h in (f, g) for a in (np.arange(2.0), np.arange(2))]


SCRIPTS["custom_rules_eager_numpy_arguments"] = _custom_rules_eager_numpy


def _while_calling_custom_vjp(ns: Any) -> Any:
    """A while loop whose body calls a custom_vjp function, and its linearization."""
    api = _sin_vjp(ns.api)

    def loop(x: Any) -> Any:
        body = lambda c: (c[0] + 1, api(c[1]), c[2] * 2.0)  # noqa: E731
        return ns.api.lax.while_loop(lambda c: c[0] < 3, body, (0, x, x))

    return ns.api.linearize(loop, ns.asarray(np.float32(0.5)))


def _while_custom_vjp_linearized(ns: Any) -> Any:
    # linearize records the tangent loop unevaluated: it succeeds as in JAX
    return _while_calling_custom_vjp(ns)[0]


def _while_custom_vjp_linear_applied(ns: Any) -> Any:
    return _while_calling_custom_vjp(ns)[1](ns.asarray(np.float32(1.0)))


def _while_custom_vjp_grad(ns: Any) -> Any:
    # reverse mode reaches the while: its own error, as JAX's
    return ns.api.grad(lambda x: _while_grad_loop(ns, x))(ns.asarray(np.float32(0.5)))


def _while_grad_loop(ns: Any, x: Any) -> Any:
    f = _sin_vjp(ns.api)
    return ns.api.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, f(c[1])), (0, x))[1]


def _custom_vjp_linear_part_vmapped(ns: Any) -> Any:
    lin = ns.api.linearize(_sin_vjp(ns.api), ns.asarray(np.float32(0.5)))[1]
    return ns.api.vmap(lin)(ns.asarray(np.ones(2, np.float32)))


def _while_custom_vjp_cases() -> Iterator[Case]:
    yield script_case(
        "custom.api/custom_vjp_linear_part_vmapped",
        _custom_vjp_linear_part_vmapped,
        expect=Raises(TypeError, "forward-mode autodiff"),
        tags=TAGS,
    )
    yield script_case(
        "custom.api/while_calling_custom_vjp_linearized",
        _while_custom_vjp_linearized,
        expect=AGREE,
        tags=TAGS,
    )
    yield script_case(
        "custom.api/while_calling_custom_vjp_linear_function_applied",
        _while_custom_vjp_linear_applied,
        expect=Raises(TypeError, "forward-mode autodiff"),
        tags=TAGS,
    )
    yield script_case(
        "custom.api/while_calling_custom_vjp_grad",
        _while_custom_vjp_grad,
        expect=Raises(ValueError, "Reverse-mode differentiation does not work"),
        tags=TAGS,
    )


def _psum_output_under_named_vmap(ns: Any) -> Any:
    """A custom_vjp whose output is a psum over the vmap's axis name (and one
    whose fwd batches that output, JAX's out_dims2), differentiated around
    the vmap, inside jit and through a jitted vmap: the psum output stays
    unbatched, so bwd sees the summed cotangent."""
    api, lax = ns.api, ns.api.lax
    x, w = ns.asarray(np.arange(1.0, 4.0, dtype=np.float32)), np.float32([1.0, 2.0, 3.0])

    @api.custom_vjp
    def q(v):
        return lax.psum(v, "i")

    q.defvjp(lambda v: (lax.psum(v, "i"), None), lambda _, g: (g * 5.0,))

    @api.custom_vjp
    def p(v):
        return lax.psum(v, "i")

    p.defvjp(lambda v: (v * 3.0, None), lambda _, g: (g * 5.0,))

    def loss(f: Any, jit_inside: bool = False) -> Any:
        mapped = api.vmap(f, axis_name="i")
        mapped = api.jit(mapped) if jit_inside else mapped
        return lambda v: (mapped(v) * w).sum()

    return (
        api.value_and_grad(loss(q))(x),
        api.jit(api.grad(loss(q)))(x),
        api.grad(loss(q, jit_inside=True))(x),
        api.value_and_grad(loss(p))(x),
    )


def _psum_rules_after_the_vmap(ns: Any) -> Any:
    """grad of a jitted vmap of a custom_jvp whose rule uses psum over the
    vmap's name: the rule runs when the jit's program is linearized, after
    the vmap returned, under a vmap of the same name."""
    api, lax = ns.api, ns.api.lax

    @api.custom_jvp
    def h(v):
        return lax.psum(v, "i")

    h.defjvp(lambda p, t: (lax.psum(p[0], "i"), 5.0 * lax.psum(t[0], "i")))
    w = np.float32([1.0, 2.0, 3.0])
    mapped = api.jit(api.vmap(h, axis_name="i"))
    return api.grad(lambda v: (mapped(v) * w).sum())(ns.asarray(np.float32([1.0, 2.0, 4.0])))


def _psum_output_out_axes_none(ns: Any) -> Any:
    """vmap(..., out_axes=None) of a custom_jvp and a custom_vjp whose output
    is a psum over the vmap's name (the operand batched): the output is
    unbatched, so out_axes=None takes it; with jvp of the custom_jvp."""
    api, lax = ns.api, ns.api.lax
    x = ns.asarray(np.arange(1.0, 4.0, dtype=np.float32))

    @api.custom_jvp
    def h(v):
        return lax.psum(v, "i")

    h.defjvp(lambda p, t: (lax.psum(p[0], "i"), 5.0 * lax.psum(t[0], "i")))

    @api.custom_vjp
    def q(v):
        return lax.psum(v, "i")

    q.defvjp(lambda v: (lax.psum(v, "i"), None), lambda _, g: (g * 5.0,))
    mapped_h = api.vmap(h, axis_name="i", out_axes=None)
    mapped_q = api.vmap(q, axis_name="i", out_axes=None)
    return mapped_h(x), api.jvp(mapped_h, (x,), (x,)), mapped_q(x), api.grad(mapped_q)(x)


def _bwd_psum_eager_grad(ns: Any) -> Any:
    """Eager grad of a named vmap of a custom_vjp whose bwd uses psum over the
    vmap's name: JAX 0.10.2 raises NameError (unbound axis name) eagerly and
    runs it under jit; refimpl gives the jit answer eagerly (the oracle's
    numbers are JAX's under jit)."""
    if ns.name == "jax":
        raise Unsupported("JAX 0.10.2 raises NameError for it eagerly (not under jit)")
    api, lax = ns.api, ns.api.lax

    @api.custom_vjp
    def f(v):
        return lax.psum(v, "i"), v * 2.0

    f.defvjp(
        lambda v: ((lax.psum(v, "i"), v * 2.0), v),
        lambda r, g: (lax.psum(g[0], "i") * r + g[1] * 7.0,),
    )
    x = ns.asarray(np.arange(1.0, 4.0, dtype=np.float32))
    mapped = api.vmap(lambda u: f(u)[0] * 1.5 + f(u)[1], axis_name="i")
    return api.grad(lambda v: mapped(v).sum())(x)


SCRIPTS.update(
    {
        "custom_rules_psum_output_out_axes_none": _psum_output_out_axes_none,
        "custom_vjp_psum_output_under_named_vmap": _psum_output_under_named_vmap,
        "custom_jvp_psum_rule_grad_of_jit_vmap": _psum_rules_after_the_vmap,
    }
)


def _constant_residuals(ns: Any) -> Any:
    """custom_api_test's held-back run: a custom_vjp residual that is a
    Python number reaches bwd as itself, also under jit and vmap, so bwd can
    use it in Python (``range(n)``, ``(g,) * n``, ``if flag:``); JAX 0.10.2
    keeps it out of its trace (refimpl made it an array, a tracer under jit)."""
    api = ns.api

    @api.custom_vjp
    def f(x):
        return 2.0 * x

    def bwd(res, g):
        n, flag = res
        out = sum((g,) * n)
        return (out * 3.0 if flag else out,)

    f.defvjp(lambda x: (f(x), (3, True)), bwd)
    xs = np.arange(3.0, dtype=np.float32)
    return (
        api.grad(f)(1.5),
        api.jit(api.grad(f))(1.5),
        api.grad(api.jit(f))(1.5),
        api.vmap(api.grad(f))(xs),
        api.grad(lambda v: api.vmap(f)(v).sum())(xs),
    )


def _numpy_scalar_residuals(ns: Any) -> Any:
    """A NumPy scalar or 0-d array residual stays a constant too, a 0-d
    NumPy array of its canonical dtype (JAX's TypedNdArray) in every
    context: bwd can branch on it under jit(grad), grad(jit), checkpoint
    (refimpl traced it there: TracerBoolConversionError)."""
    api = ns.api

    @api.custom_vjp
    def f(x):
        return 2.0 * x

    def bwd(res, g):
        flag, scale = res
        return (g * scale if flag else g,)

    f.defvjp(lambda x: (f(x), (np.bool_(True), np.float64(3.0))), bwd)
    return (
        api.grad(f)(1.5),
        api.jit(api.grad(f))(1.5),
        api.grad(api.jit(f))(1.5),
        api.grad(api.checkpoint(f))(1.5),
    )


def _custom_call_binding(ns: Any) -> Any:
    """A custom_jvp call's arguments are bound to the function's signature
    before anything runs, as JAX's resolve_kwargs: a missing one is JAX's
    TypeError (refimpl ran the function: Python's own TypeError, other
    words), a default is one of the rule's primals."""
    api = ns.api

    @api.custom_jvp
    def f(x, y, c=1.0):
        return c * (x + y)

    f.defjvp(lambda p, t: (f(*p), len(p) * t[0]))
    return (
        api.jit(lambda x, t: api.jvp(f, (x, 2.0), (t, 1.0)))(1.0, 1.0),
        ns.capture(f, 0.5),
        ns.capture(f, 0.5, 0.1, 0.2, 0.3),
    )


def _jaxpr_pretty_print(ns: Any) -> Any:
    """custom_api_test's test_pretty_print: ClosedJaxpr.pretty_print (with
    JAX's keyword options) is the listing str gives; literals are the
    constants (refimpl's Program had neither)."""
    api = ns.api

    @api.custom_jvp
    def f(x):
        return x + np.arange(1.0, 2.0, dtype=np.float32)

    f.defjvp(lambda p, t: (f(*p), t[0]))
    program = api.make_jaxpr(f)(np.array([4.2], np.float32))
    closed = api.make_jaxpr(lambda v: v * np.float32(3.0) + np.ones(1, np.float32))(2.0)
    return (
        program.pretty_print(use_color=False) == str(program),
        closed.literals is closed.consts,
        [np.asarray(c) for c in closed.literals],
    )


SCRIPTS.update(
    {
        "custom_vjp_constant_residuals": _constant_residuals,
        "custom_vjp_numpy_scalar_residuals": _numpy_scalar_residuals,
        "custom_call_binds_its_arguments": _custom_call_binding,
        "jaxpr_pretty_print_and_literals": _jaxpr_pretty_print,
    }
)


def _user_primitive(ns: Any) -> Any:
    """A primitive defined the JAX 0.10.2 way (``jax.extend.core.Primitive``,
    its rules through ``jax.interpreters.ad``/``batching``/``mlir``) under jit,
    jvp, grad and vmap (lane INTERP, issue 29)."""
    api, jnp = ns.api, ns.np_
    core = importlib.import_module(f"{api.__name__}.extend.core")
    ad = importlib.import_module(f"{api.__name__}.interpreters.ad")
    batching = importlib.import_module(f"{api.__name__}.interpreters.batching")
    mlir = importlib.import_module(f"{api.__name__}.interpreters.mlir")
    p = core.Primitive("user_multiply_add")
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    p.def_abstract_eval(lambda x, y, z: api.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))

    def jvp(primals, tangents):
        x, y, z = primals
        xt, yt, zt = (ad.instantiate_zeros(t) for t in tangents)
        return p.bind(x, y, z), p.bind(xt, y, p.bind(x, yt, zt))

    def transpose(ct, x, y, z):  # linear in x and z (y is a constant)
        if type(ct) is ad.Zero:
            return ad.Zero(x.aval.to_tangent_aval()), None, ct
        return p.bind(ct, y, jnp.zeros_like(y)), None, ct

    ad.primitive_jvps[p] = jvp
    ad.primitive_transposes[p] = transpose
    batching.primitive_batchers[p] = lambda args, dims: (p.bind(*args), dims[0])
    v = ns.asarray(np.arange(3, dtype=np.float32))
    w = ns.asarray(np.array([1.0, 2.0, 4.0], np.float32))

    def affine(a, b):
        return p.bind(a, 3.0 * jnp.ones_like(a), b)

    return {
        "eager": p.bind(v, w, w),
        "jit": ns.jit(lambda a, b: p.bind(a, a, b))(v, w),
        "jvp": api.jvp(lambda a: p.bind(a, a, w), (v,), (w,)),
        "grad": ns.jit(api.grad(lambda a, b: jnp.sum(affine(a, b)), (0, 1)))(v, w),
        "vmap": api.vmap(lambda a, b: p.bind(a, a, b))(v, w),
        "vmap_grad": api.vmap(api.grad(lambda a, b: affine(a, b)))(v, w),
    }


def _user_primitive_helpers(ns: Any) -> Any:
    """The rule builders of ``jax.interpreters``: ``defjvp2``, ``deflinear``,
    ``defvectorized``, ``defbroadcasting`` and a ``multiple_results``
    primitive, under jit, grad, linear_transpose and vmap."""
    api, jnp = ns.api, ns.np_
    core = importlib.import_module(f"{api.__name__}.extend.core")
    ad = importlib.import_module(f"{api.__name__}.interpreters.ad")
    batching = importlib.import_module(f"{api.__name__}.interpreters.batching")
    mlir = importlib.import_module(f"{api.__name__}.interpreters.mlir")
    shaped = api.core.ShapedArray

    def unary(name, impl, lowered):
        p = core.Primitive(name)
        p.def_impl(impl)
        p.def_abstract_eval(lambda a: shaped(a.shape, a.dtype))
        mlir.register_lowering(p, mlir.lower_fun(lowered, multiple_results=False))
        return p

    exp_ = unary("user_exp", np.exp, jnp.exp)
    ad.defjvp2(exp_, lambda g, ans, x: g * ans)
    batching.defvectorized(exp_)
    dbl = unary("user_double", lambda x: 2 * x, lambda x: 2 * x)
    ad.deflinear(dbl, lambda ct: [2 * ct])
    hyp = core.Primitive("user_hypot")
    hyp.def_impl(lambda x, y: np.sqrt(x * x + y * y))
    hyp.def_abstract_eval(lambda a, b: shaped(np.broadcast_shapes(a.shape, b.shape), a.dtype))
    batching.defbroadcasting(hyp)
    mlir.register_lowering(
        hyp, mlir.lower_fun(lambda x, y: jnp.sqrt(x * x + y * y), multiple_results=False)
    )
    sc = core.Primitive("user_sincos")
    sc.multiple_results = True
    sc.def_impl(lambda x: (np.sin(x), np.cos(x)))
    sc.def_abstract_eval(lambda a: (shaped(a.shape, a.dtype), shaped(a.shape, a.dtype)))
    mlir.register_lowering(
        sc, mlir.lower_fun(lambda x: (jnp.sin(x), jnp.cos(x)), multiple_results=True)
    )

    def sc_jvp(primals, tangents):
        s, c = sc.bind(*primals)
        t = ad.instantiate_zeros(tangents[0])
        return (s, c), (c * t, -s * t)

    ad.primitive_jvps[sc] = sc_jvp
    batching.primitive_batchers[sc] = lambda args, dims: (sc.bind(*args), (dims[0], dims[0]))
    v = ns.asarray(np.arange(3, dtype=np.float32))
    m = ns.asarray(np.ones((3, 2), np.float32))
    return {
        "exp_grad": ns.jit(api.grad(lambda x: jnp.sum(exp_.bind(x))))(v),
        "exp_vmap": api.vmap(exp_.bind)(v),
        "double_transpose": api.linear_transpose(dbl.bind, v)(v),
        "double_jvp": api.jvp(dbl.bind, (v,), (v,)),
        "hypot_vmap": ns.jit(api.vmap(hyp.bind, in_axes=(0, None)))(v, m[0]),
        "hypot_vmap_axes": api.vmap(hyp.bind, in_axes=(1, 0))(m.T, m),
        "sincos_jit": ns.jit(sc.bind)(v),
        "sincos_grad": api.grad(lambda x: sum(sc.bind(x)))(ns.asarray(np.float32(1.0))),
        "sincos_vmap": api.vmap(sc.bind)(v),
    }


def _user_primitive_by_lowering(ns: Any) -> Any:
    """A primitive defined by its lowering: ``xla.apply_primitive`` as its
    impl, a ``mlir.lower_fun`` rule, ``defjvp`` and ``defvectorized``."""
    api, jnp = ns.api, ns.np_
    core = importlib.import_module(f"{api.__name__}.extend.core")
    ad = importlib.import_module(f"{api.__name__}.interpreters.ad")
    batching = importlib.import_module(f"{api.__name__}.interpreters.batching")
    mlir = importlib.import_module(f"{api.__name__}.interpreters.mlir")
    xla = importlib.import_module(f"{api.__name__}.interpreters.xla")
    p = core.Primitive("user_lowered_sin")
    p.def_impl(functools.partial(xla.apply_primitive, p))
    p.def_abstract_eval(lambda a, *, k: api.core.ShapedArray(a.shape, a.dtype))
    mlir.register_lowering(
        p, mlir.lower_fun(lambda x, *, k: jnp.sin(x) * k, multiple_results=False)
    )
    ad.defjvp(p, lambda g, x, *, k: g * jnp.cos(x) * k)
    batching.defvectorized(p)
    v = ns.asarray(np.arange(3, dtype=np.float32))
    return {
        "eager": p.bind(v, k=2.0),
        "jit": ns.jit(lambda a: p.bind(a, k=2.0))(v),
        "grad": ns.jit(api.grad(lambda a: jnp.sum(p.bind(a, k=2.0))))(v),
        "vmap_grad": api.vmap(api.grad(lambda a: p.bind(a, k=2.0)))(v),
    }


SCRIPTS.update(
    {
        "user_primitive_by_lowering": _user_primitive_by_lowering,
        "user_primitive_rules": _user_primitive,
        "user_primitive_rule_builders": _user_primitive_helpers,
    }
)
