"""Automatic differentiation beyond single primitives: control flow, nested
jit, custom rules, float0 tangents, the API surface and its errors.

Every case calls the implementation's own AD API (``refimpl.grad`` /
``jax.grad`` ...) from its top-level module; an implementation without it
skips. Values are compared across implementations (``AGREE``) with the
derivative tolerance of ``ad_primitives``; error cases expect JAX's class
and words.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for, script_case
from conformance.corpus.ad_primitives import AD_TOLERANCE
from conformance.namespace import Unsupported
from conformance.observe import Raises


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "grad") or not hasattr(module, "custom_vjp"):
        raise Unsupported(f"{ns.name} has no grad/custom_vjp")
    return module


def _vec(name: str, n: int = 5, lo: float = 0.1, hi: float = 1.0) -> np.ndarray:
    return rng_for(f"ad/{name}").uniform(lo, hi, n).astype(np.float32)


# --- functions written once against ns -------------------------------------------------------


def _scan_loss(ns: Any, c: Any, xs: Any, unroll: Any = 1, reverse: bool = False) -> Any:
    L = ns.lax_

    def body(carry: Any, x: Any) -> Any:
        carry = carry * L.sin(x) + x * c
        return carry, carry * 2.0

    carry, ys = L.scan(body, np.float32(1.0), xs, unroll=unroll, reverse=reverse)
    return carry + ns.np_.sum(ys)


def _cond_fn(ns: Any, x: Any) -> Any:
    L = ns.lax_
    return L.cond(x > 0.5, lambda y: L.sin(y) * y, lambda y: y * 3.0, x)


def _switch_fn(ns: Any, i: Any, x: Any) -> Any:
    L = ns.lax_
    return L.switch(i, [lambda y: y * y, lambda y: L.exp(y), lambda y: -y], x)


def _fori_fn(ns: Any, x: Any) -> Any:
    L = ns.lax_
    return L.fori_loop(0, 4, lambda i, c: c * L.sin(c) + i, x)


def _while_fn(ns: Any, x: Any) -> Any:
    L = ns.lax_
    return L.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * L.sin(c[1])), (0, x))[1]


def _custom_jvp_fn(ns: Any) -> Any:
    api, L = _api(ns), ns.lax_

    @api.custom_jvp
    def f(x, y):
        return L.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), 2.0 * L.cos(x) * y * tx + L.sin(x) * ty

    return f


def _custom_vjp_fn(ns: Any) -> Any:
    api, L = _api(ns), ns.lax_

    @api.custom_vjp
    def g(x, y):
        return L.sin(x) * y

    def fwd(x, y):
        return g(x, y), (L.cos(x), L.sin(x), y)

    def bwd(res, ct):
        c, s, y = res
        return (3.0 * c * y * ct, s * ct)

    g.defvjp(fwd, bwd)
    return g


def _mlp_loss(ns: Any, params: Any, x: Any) -> Any:
    np_ = ns.np_
    h = np_.tanh(x @ params["w"] + params["b"])
    return np_.sum(h * h)


# --- cases --------------------------------------------------------------------------------------

XS = _vec("xs")
C = np.float32(0.7)
X0 = np.float32(0.3)
X4 = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
Y0 = np.float32(2.0)


def _case(name: str, fn: Any, args: list, mode: str = "jit", **kw: Any) -> Case:
    kw.setdefault("expect", AGREE)
    return fn_case(f"ad/{name}", fn, args, mode=mode, tolerance=AD_TOLERANCE, **kw)


def cases() -> Iterator[Case]:
    # control flow
    for unroll, label in ((1, "1"), (2, "2"), (True, "full")):
        for reverse in (False, True):
            tag = f"unroll={label},reverse={reverse}"

            def grad_scan(ns, c, xs, unroll=unroll, reverse=reverse):
                return _api(ns).grad(lambda c, xs: _scan_loss(ns, c, xs, unroll, reverse), (0, 1))(
                    c, xs
                )

            def jvp_scan(ns, c, xs, tc, txs, unroll=unroll, reverse=reverse):
                return _api(ns).jvp(
                    lambda c, xs: _scan_loss(ns, c, xs, unroll, reverse), (c, xs), (tc, txs)
                )

            yield _case(
                f"scan.grad/{tag}",
                grad_scan,
                [C, XS],
                tags=("quick",) if label == "2" and not reverse else (),
            )
            yield _case(f"scan.jvp/{tag}", jvp_scan, [C, XS, np.float32(1.0), _vec("txs")])
    for x in (0.2, 0.9):
        yield _case(
            f"cond.grad/x={x}", lambda ns, x: _api(ns).grad(lambda x: _cond_fn(ns, x))(x),
            [np.float32(x)], tags=("quick",) if x == 0.9 else (),
        )  # fmt: skip
        yield _case(
            f"cond.jvp/x={x}",
            lambda ns, x: _api(ns).jvp(lambda x: _cond_fn(ns, x), (x,), (np.float32(2.0),)),
            [np.float32(x)],
        )
    for i in range(3):
        yield _case(
            f"switch.grad/index={i}",
            lambda ns, i, x: _api(ns).grad(lambda i, x: _switch_fn(ns, i, x), 1)(i, x),
            [np.int32(i), X0],
        )
    yield _case(
        "fori_loop.grad/static_bounds",
        lambda ns, x: _api(ns).grad(lambda x: _fori_fn(ns, x))(x),
        [np.float32(0.9)],
    )
    yield _case(
        "while_loop.jvp",
        lambda ns, x: _api(ns).jvp(lambda x: _while_fn(ns, x), (x,), (np.float32(1.0),)),
        [np.float32(0.9)],
    )
    yield _case(
        "while_loop.grad/error",
        lambda ns, x: _api(ns).grad(lambda x: _while_fn(ns, x))(x),
        [np.float32(0.9)],
        mode="eager",
        expect=Raises(ValueError, "Reverse-mode differentiation does not work for lax.while_loop"),
    )
    # reverse mode of a while_loop whose carry has no tangent works (JAX 0.10.2):
    # the loop passes the carry through untouched, or it does not depend on x
    yield _case(
        "while_loop.grad/carry_not_differentiated",
        lambda ns, x: [
            _api(ns).grad(lambda x: ns.lax_.while_loop(lambda c: False, lambda c: c * 2.0, x))(x),
            _api(ns).grad(
                lambda x: ns.lax_.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, 0.0) * x
            )(x),
            _api(ns).grad(
                lambda x: ns.lax_.while_loop(
                    lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1]), (0, x)
                )[1]
            )(x),
        ],
        [np.float32(0.9)],
    )
    yield _case(
        "nested_jit.grad",
        lambda ns, x: _api(ns).grad(lambda x: ns.jit(lambda y: ns.lax_.sin(y) * y)(x) * 3.0)(x),
        [X0],
        mode="eager",
    )
    yield _case(
        "grad_of_grad/scan",
        lambda ns, c, xs: _api(ns).grad(_api(ns).grad(lambda c, xs: _scan_loss(ns, c, xs)))(c, xs),
        [C, XS],
    )
    # custom rules
    yield _case(
        "custom_jvp.grad",
        lambda ns, x, y: _api(ns).grad(_custom_jvp_fn(ns), (0, 1))(x, y),
        [X0, Y0],
        tags=("quick",),
    )
    yield _case(
        "custom_jvp.jvp",
        lambda ns, x, y: _api(ns).jvp(_custom_jvp_fn(ns), (x, y), (np.float32(1), np.float32(2))),
        [X0, Y0],
    )
    yield _case(
        "custom_vjp.grad",
        lambda ns, x, y: _api(ns).grad(_custom_vjp_fn(ns), (0, 1))(x, y),
        [X0, Y0],
        tags=("quick",),
    )
    yield _case(
        "custom_vjp.grad/keyword_argument",
        lambda ns, x, y: _api(ns).grad(lambda x: _custom_vjp_fn(ns)(x, y=y))(x),
        [X0, Y0],
    )
    yield _case(
        "custom_vjp.jvp/error",
        lambda ns, x, y: _api(ns).jvp(_custom_vjp_fn(ns), (x, y), (x, y)),
        [X0, Y0],
        mode="eager",
        expect=Raises(TypeError, "can't apply forward-mode autodiff"),
    )

    def keyword_only(ns, x):
        api = _api(ns)

        @api.custom_vjp
        def h(x, *, scale):
            return x * scale

        h.defvjp(lambda x, *, scale: (x * scale, None), lambda res, ct: (ct,))
        return api.grad(lambda x: h(x, scale=2.0))(x)

    yield _case(
        "custom_vjp.keyword_only/error",
        keyword_only,
        [X0],
        mode="eager",
        expect=Raises(TypeError, "could not be resolved to positional-only arguments"),
    )
    # float0 and integer inputs
    yield _case(
        "float0.grad_allow_int",
        lambda ns, x, i: _api(ns).grad(lambda x, i: x * i, (0, 1), allow_int=True)(x, i),
        [X0, np.int32(3)],
        mode="eager",
    )
    yield _case(
        "float0.vjp_int_input",
        lambda ns, x, i: _api(ns).vjp(lambda x, i: x * i, x, i)[1](np.float32(1.0)),
        [X0, np.int32(3)],
        mode="eager",
    )
    yield _case(
        "grad/error_int_input",
        lambda ns, i: _api(ns).grad(lambda i: i * 2)(i),
        [np.int32(3)],
        mode="eager",
        expect=Raises(TypeError, "grad requires real- or complex-valued inputs"),
    )
    yield _case(
        "grad/error_non_scalar_output",
        lambda ns, x: _api(ns).grad(lambda x: x * 2.0)(x),
        [XS],
        mode="eager",
        expect=Raises(TypeError, "Gradient only defined for scalar-output functions"),
    )
    # the API surface
    params = {
        "w": rng_for("ad/mlp_w").normal(size=(5, 3)).astype(np.float32),
        "b": np.zeros(3, np.float32),
    }

    def value_and_grad_aux(ns, params, x):
        def loss(p, x):
            value = _mlp_loss(ns, p, x)
            return value, {"twice": value * 2.0}

        return _api(ns).value_and_grad(loss, has_aux=True)(params, x)

    yield _case("value_and_grad/has_aux_pytree", value_and_grad_aux, [params, XS])
    for name in ("jacfwd", "jacrev", "hessian"):
        yield _case(
            f"{name}/sin_x_x",
            lambda ns, x, name=name: getattr(_api(ns), name)(
                lambda x: (
                    ns.np_.sum(ns.np_.sin(x) * x * x) if name == "hessian" else ns.np_.sin(x) * x
                )
            )(x),
            [XS],
        )
    yield _case(
        "linearize/sin_x",
        lambda ns, x, t: _api(ns).linearize(lambda x: ns.np_.sin(x) * x, x)[1](t),
        [XS, _vec("t")],
        mode="eager",
    )
    yield _case(
        "linear_transpose/slices",
        lambda ns, x, ct: _api(ns).linear_transpose(lambda a: 2.0 * a[:4] + a[1:], x)(ct),
        [XS, _vec("ct", 4)],
        mode="eager",
    )

    # issue 29: eval_shape reports a returned ShapeDtypeStruct as its own shape
    def eval_shape_struct_output(ns, x):
        api = _api(ns)
        out = api.eval_shape(
            lambda x: (x * 2.0, api.ShapeDtypeStruct((2, 3), np.int8, weak_type=True)), x
        )
        return [(tuple(s.shape), str(s.dtype), bool(s.weak_type)) for s in out]

    yield _case("eval_shape/struct_output", eval_shape_struct_output, [XS], mode="eager")
    # issue 29: a Jacobian of weakly typed values is weak (the basis takes each leaf's weak type)
    for name in ("jacfwd", "jacrev", "hessian"):
        yield _case(
            f"{name}/weak_input",
            lambda ns, name=name: getattr(_api(ns), name)(lambda x: ns.np_.sin(x) * x * 2.0)(0.5),
            [],
            mode="eager",
        )
    yield _case(
        "jacrev/weak_input_strong_output",
        lambda ns, s: _api(ns).jacrev(lambda x: ns.np_.sin(x) * s, has_aux=False)(0.5),
        [np.float32(3.0)],
    )

    # issue 29: a checkpointed function is traced once per types, eagerly and under grad/jit
    def remat_trace_count(ns, x):
        api, count = _api(ns), [0]

        def f(x):
            count[0] += 1
            return ns.np_.sin(x) * x

        counts = []
        for call in (
            lambda: api.checkpoint(f)(x),
            lambda: api.grad(lambda y: api.checkpoint(f)(y).sum())(x),
            lambda: ns.jit(lambda y: api.checkpoint(f)(y))(x),
        ):
            count[0] = 0
            for _ in range(10):
                call()
            counts.append(count[0])
        return np.array(counts, np.int32)

    yield _case("checkpoint/trace_count", remat_trace_count, [XS], mode="eager")

    # issue 29: the functions jitted vjp/linearize/linear_transpose return are pytrees
    # (their leaves the residuals), so they can leave a jit and enter another
    def _sin_x(ns):
        return lambda x: ns.np_.sin(x) * x

    yield _case(
        "jit_returns/vjp_pullback",
        lambda ns, x, ct: ns.jit(lambda x: _api(ns).vjp(_sin_x(ns), x))(x)[1](ct),
        [XS, _vec("ct")],
        mode="eager",
    )
    yield _case(
        "jit_returns/linearize_jvp",
        lambda ns, x, t: ns.jit(lambda x: _api(ns).linearize(_sin_x(ns), x))(x)[1](t),
        [XS, _vec("t")],
        mode="eager",
    )
    yield _case(
        "jit_returns/linear_transpose",
        lambda ns, x, ct: ns.jit(lambda x: _api(ns).linear_transpose(lambda t: t * x + 2.0 * t, x))(
            x
        )(ct),
        [XS, _vec("ct")],
        mode="eager",
    )
    yield _case(
        "jit_takes/vjp_pullback",
        lambda ns, x, ct: ns.jit(lambda pb, c: pb(c))(_api(ns).vjp(_sin_x(ns), x)[1], ct),
        [XS, _vec("ct")],
        mode="eager",
    )

    # issue 29: a strong tangent/cotangent for a weakly typed primal through a
    # jit or cond (their linear programs take the weak type; JAX's typematch)
    def _sin2(ns):
        return lambda x: ns.np_.sin(x) * 2.0

    def _cond2(ns):
        return lambda x: ns.lax_.cond(x > 0, lambda y: y * 2.0, lambda y: y, x)

    mixed = {
        "jvp_jit": lambda ns, t: _api(ns).jvp(ns.jit(_sin2(ns)), (1.0,), (t,)),
        "linearize_jit": lambda ns, t: _api(ns).linearize(ns.jit(_sin2(ns)), 1.0)[1](t),
        "linearize_cond": lambda ns, t: _api(ns).linearize(_cond2(ns), 1.0)[1](t),
        "vjp_jit_weak_ct": lambda ns, x: _api(ns).vjp(ns.jit(_sin2(ns)), x)[1](1.0),
        # the transpose traced with the cotangent's own type (strong), as JAX's
        "vjp_jit_strong_ct": lambda ns, c: _api(ns).vjp(ns.jit(_sin2(ns)), 1.0)[1](c),
    }
    for name, fn in mixed.items():
        yield _case(f"weak_primal_strong_tangent/{name}", fn, [np.float32(1.0)], mode="eager")

    # cotangent sums as JAX's add_any: staged, typed as the first term (the
    # outputs' cotangents first, then the equations in reverse); eagerly,
    # add's promotion.
    def _custom_times_2(ns):
        f = _api(ns).custom_vjp(lambda c: c * 2.0)
        f.defvjp(lambda c: (f(c), None), lambda _, g: (np.float32(2.0) * g,))
        return f

    sums = {
        "jit_weak_then_strong": lambda ns, c: _api(ns).vjp(ns.jit(lambda v: (v, v)), c)[1](
            (1.0, c)
        ),
        "jit_strong_then_weak": lambda ns, c: _api(ns).vjp(ns.jit(lambda v: (v, v)), 1.0)[1](
            (c, 1.0)
        ),
        "jit_of_mul_python_cts": lambda ns, c: _api(ns).vjp(ns.jit(lambda v: (v, v * 2)), c)[1](
            (1.0, 2.0)
        ),
        "eager_weak_then_strong": lambda ns, c: _api(ns).vjp(lambda v: (v, v), c)[1]((1.0, c)),
        "custom_vjp_strong_bwd_jit_sum": lambda ns, c: _api(ns).vjp(
            ns.jit(lambda v: (v, _custom_times_2(ns)(v))), 1.0
        )[1]((1.0, 1.0)),
    }
    for name, fn in sums.items():
        yield _case(f"cotangent_sums/{name}", fn, [np.float32(1.0)], mode="eager")

    # jnp functions are jits in JAX: under jvp they type their arguments'
    # tangents as the primals; lax functions keep the tangent's own weak type
    def _where(ns):
        return lambda x: ns.np_.where(x > 0, x, 0.0)

    at_jnp = {
        "jvp_mul_scalar": lambda ns, t: _api(ns).jvp(lambda x: x * 2.0, (2.0,), (t,)),
        "jvp_sin": lambda ns, t: _api(ns).jvp(ns.np_.sin, (2.0,), (t,)),
        "jvp_where": lambda ns, t: _api(ns).jvp(_where(ns), (2.0,), (t,)),
        "jvp_lax_add": lambda ns, t: _api(ns).jvp(lambda x: ns.lax_.add(x, 1.0), (2.0,), (t,)),
        "jvp_sum_weak_tangent": lambda ns, x: _api(ns).jvp(ns.np_.sum, (x,), (0.5,)),
        "linearize_pow": lambda ns, t: _api(ns).linearize(lambda x: x**2.5, 2.0)[1](t),
        # known.py: JAX keeps where's jit in the linear program, which retypes
        "linearize_where_strong_tangent": lambda ns, t: _api(ns).linearize(_where(ns), 2.0)[1](t),
        # known.py: JAX's cotangent keeps the given weak type
        "vjp_prod_weak_cotangent": lambda ns, x: _api(ns).vjp(ns.np_.prod, x)[1](0.5),
    }
    for name, fn in at_jnp.items():
        yield _case(f"weak_tangent_at_jnp/{name}", fn, [np.float32(0.5)], mode="eager")
    # a weakly typed array: rules multiply by JAX's lax._const, strong for an
    # array; arcsinh takes JAX's asinh rule (which keeps it weak)
    on_weak_array = {
        "jvp_sqrt_weak_array": lambda ns, t: _api(ns).jvp(
            ns.np_.sqrt, (ns.np_.full(3, 2.0),), (t,)
        ),
        "jvp_arcsinh_weak_array": lambda ns, t: _api(ns).jvp(
            ns.np_.arcsinh, (ns.np_.full(3, 2.0),), (t,)
        ),
    }
    for name, fn in on_weak_array.items():
        yield _case(f"weak_tangent_at_jnp/{name}", fn, [np.full(3, 0.5, np.float32)], mode="eager")

    # issue 29: differentiating a value a custom rule's function closes over:
    # JAX meets it as an escaped tracer (UnexpectedTracerError, a TypeError)
    def closure_jvp(ns, x):
        api = _api(ns)

        def loss(x):
            @api.custom_jvp
            def f(y):
                return x * y

            f.defjvp(lambda p, t: (x * p[0], x * t[0]))
            return f(x)

        return api.grad(loss)(x)

    def closure_vjp(ns, x):
        api = _api(ns)

        def loss(x):
            @api.custom_vjp
            def f(y):
                return x * y

            f.defvjp(lambda y: (f(y), y), lambda y, g: (x * g,))
            return f(x)

        return api.grad(loss)(x)

    closed_over = Raises(TypeError, {"jax": "unexpected tracer", "*": "closed-over value"})
    for name, fn in (("custom_jvp", closure_jvp), ("custom_vjp", closure_vjp)):
        yield _case(f"{name}/grad_of_closed_over_value", fn, [X0], mode="eager", expect=closed_over)

    # the differentiation reaches none of the function's arguments: JAX runs
    # it below the differentiation, where the closed-over value has escaped
    def closure_untraced_args(ns, x):
        api = _api(ns)

        def loss(x):
            @api.custom_jvp
            def f(y):
                return x * y

            f.defjvp(lambda p, t: (x * p[0], x * t[0]))
            return f(np.float32(3.0))

        return api.grad(loss)(x)

    yield _case(
        "custom_jvp/grad_of_closed_over_value_untraced_args",
        closure_untraced_args,
        [X0],
        mode="eager",
        expect=closed_over,
    )

    # tangent types of a jit call are its differentiated program's (the int
    # exponent converted to a strong float: strong), a custom_vjp bwd's
    # cotangent keeps its type, jacfwd/jacrev blocks take the output's /
    # input's weak type (JAX's _possible_downcast)
    def pow_int_grad_jit(ns, x):
        api = _api(ns)
        return api.grad(api.jit(lambda x, n: x**n))(x, 0)

    def pow_int_jvp_jit(ns, x):
        api = _api(ns)
        return api.jvp(api.jit(lambda x: ns.lax_.pow(x, np.int32(2))), (x,), (1.0,))

    def custom_vjp_strong_ct(ns, x):
        api = _api(ns)

        @api.custom_vjp
        def f(y):
            return y * 3.0

        f.defvjp(lambda y: (f(y), np.float32(2.0)), lambda r, g: (g * r,))
        return api.grad(f)(x), api.grad(api.jit(f))(x)

    def jac_pow(ns, x, y):
        api = _api(ns)
        return (
            api.jacfwd(ns.lax_.pow, (0, 1))(x, y),
            api.jacrev(ns.lax_.pow, (0, 1))(x, y),
            api.jacrev(api.jacrev(ns.lax_.pow, (0, 1)), (0, 1))(x, y),
        )

    for name, fn, args in (
        ("tangent_types/pow_int_grad_jit", pow_int_grad_jit, [0.0]),
        ("tangent_types/pow_int_jvp_jit", pow_int_jvp_jit, [2.0]),
        ("tangent_types/custom_vjp_strong_cotangent", custom_vjp_strong_ct, [2.0]),
        ("tangent_types/jacobians_of_weak_pow", jac_pow, [4.0, 0.0]),
    ):
        yield _case(name, fn, args, mode="eager")

    # out-of-range indices under reverse mode: x[idx] and x.at[idx].get()
    # promise in-bounds indices (the read clamps, the cotangent of an index
    # out of range is dropped, as XLA's scatter), get(mode="clip") clamps it
    oob = np.array([5, -1, -5, 1, 9, -9])

    def getitem_oob_grad(ns, x):
        api = _api(ns)
        return (
            api.grad(lambda x: x[oob].sum())(x),
            api.grad(lambda x: x.at[oob].get().sum())(x),
            api.grad(lambda x: x.at[oob].get(mode="clip").sum())(x),
            api.jacfwd(lambda x: x[oob])(x),
        )

    def getitem_oob_grad_2d(ns, x):
        api = _api(ns)
        x = ns.np_.reshape(x, (2, 2))
        return api.grad(lambda x: x[np.array([2, -3, 1]), np.array([0, 1, 1])].sum())(x)

    yield _case("gather_out_of_range/grad", getitem_oob_grad, [X4])
    yield _case("gather_out_of_range/grad_2d", getitem_oob_grad_2d, [X4])

    # jacfwd calls the function on arrays (JAX's tracers), also for NumPy
    # inputs: x.at works inside
    def jacfwd_numpy_input(ns):
        api = _api(ns)
        x = np.array([1.0, 2.0], np.float32)
        return api.jacfwd(lambda x: x.at[0].set(1.0) * x[np.array([0, 5])])(x)

    yield script_case("ad/jacfwd_numpy_input_is_an_array", jacfwd_numpy_input, expect=AGREE)
