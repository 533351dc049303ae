"""Differentiation API paths the other AD families leave untaken (found
with ``tools/conformance_coverage.py``), each against JAX (recorded):
``has_aux`` of jvp/vjp/linearize/jacfwd/jacrev, Jacobians with zero-size
and integer inputs and outputs, ``linear_transpose`` of abstract primals,
and the checks of every entry point (callables, argnums, holomorphic and
real-valued requirements, cotangent/tangent structures and types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.compare import Tolerance

_R = np.random.default_rng(3640)
X = _R.standard_normal(3).astype(np.float32)
Z = np.zeros((0,), np.float32)
C = (X + 1j * X[::-1]).astype(np.complex64)


def _case(name: str, script: Callable[[Any], Any]) -> Case:
    return script_case(f"ad.paths/{name}", script, expect=AGREE)


def _f(np_: Any) -> Callable[[Any], Any]:
    return lambda x: np_.sin(x) * x


def _has_aux(ns: Any) -> Any:
    api, np_ = ns.api, ns.np_
    x = ns.asarray(X)

    def g(x: Any) -> Any:
        return _f(np_)(x), {"s": x.sum(), "n": 2}

    p, t, aux = api.jvp(g, (x,), (ns.asarray(np.ones(3, np.float32)),), has_aux=True)
    p2, pull, aux2 = api.vjp(g, x, has_aux=True)
    p3, lin, aux3 = api.linearize(g, x, has_aux=True)
    jf, auxf = api.jacfwd(g, has_aux=True)(x)
    jr, auxr = api.jacrev(g, has_aux=True)(x)
    return [p, t, aux, p2, pull(ns.asarray(X))[0], aux2, p3, lin(x), aux3, jf, auxf, jr, auxr]


def _jacobian_edges(ns: Any) -> Any:
    """Zero-size inputs and outputs, integer outputs (zeros) and, with
    allow_int, integer inputs (float0 blocks)."""
    api, np_ = ns.api, ns.np_
    x, z = ns.asarray(X), ns.asarray(Z)

    def two(x: Any, z: Any) -> Any:
        return {"x": np_.sin(x), "z": z * 2, "s": (x.sum() + z.sum()) * x}

    def int_out(x: Any) -> Any:
        return np_.sin(x), (x > 0).astype(np.int32)

    def int_in(x: Any, n: Any) -> Any:
        return x * n

    def shapes(tree: Any) -> Any:
        return [(np.shape(t), str(np.asarray(t).dtype)) for t in api.tree_util.tree_leaves(tree)]

    out = [
        api.jacfwd(two, argnums=(0, 1))(x, z),
        api.jacrev(two, argnums=(0, 1))(x, z),
        api.jacfwd(int_out)(x),
    ]
    return out, shapes(api.jacrev(int_in, argnums=(0, 1), allow_int=True)(x, np.int32(3)))


def _linear_transpose_structs(ns: Any) -> Any:
    """linear_transpose of abstract primals (ShapeDtypeStructs)."""
    api = ns.api
    t = api.linear_transpose(lambda x, y: (x * 2 - y, y * 3),
                             api.ShapeDtypeStruct((3,), np.float32),
                             api.ShapeDtypeStruct((3,), np.float32))  # fmt: skip
    return t((ns.asarray(X), ns.asarray(X[::-1])))


def _holomorphic(ns: Any) -> Any:
    api = ns.api
    return api.grad(lambda z: (z * z).sum(), holomorphic=True)(ns.asarray(C)), api.jacfwd(
        lambda z: z * z, holomorphic=True
    )(ns.asarray(C))


def _python_branches(ns: Any) -> Any:
    """Python control flow on a differentiated value outside jit (its primal
    is concrete there)."""
    api = ns.api

    def f(x: Any) -> Any:
        return x * 2 if x > 0 else -x

    return [api.grad(f)(1.5), api.grad(f)(-1.5), api.jvp(f, (-1.5,), (1.0,))]


def _linear_transpose_duck(ns: Any) -> Any:
    """linear_transpose of a primal given as any object with shape and dtype."""

    class Spec:
        shape = (3,)
        dtype = np.dtype(np.float32)

    return ns.api.linear_transpose(lambda x: x * 2 - x[::-1], Spec())(ns.asarray(X))


def _linear_transpose_int_jit(ns: Any) -> Any:
    """linear_transpose of an integer function through jits (issue 29): the
    integer cotangents reach the jit's transpose."""
    api, i = ns.api, np.array([1, 2, 3], np.int32)
    f = ns.jit(lambda x, y: (x + 2 * y, ns.jit(lambda z: -z)(y).sum()))
    return api.linear_transpose(f, i, i)((i, np.int32(5)))


def _vjp_of_ref(ns: Any) -> Any:
    api = ns.api
    if not hasattr(api, "new_ref"):
        from conformance.namespace import Unsupported

        raise Unsupported(f"{ns.name} has no new_ref")
    r = api.new_ref(ns.asarray(X))
    return api.vjp(lambda r: r[...] * 2, r)[1](ns.asarray(X))


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("jvp_not_callable", lambda ns: ns.api.jvp(3, (1.0,), (1.0,))),
    ("jvp_primals_not_tuple", lambda ns: ns.api.jvp(_f(ns.np_), ns.asarray(X), ns.asarray(X))),
    ("vjp_not_callable", lambda ns: ns.api.vjp(3, 1.0)),
    ("linearize_not_callable", lambda ns: ns.api.linearize(3, 1.0)),
    ("grad_not_callable", lambda ns: ns.api.grad(3)),
    ("value_and_grad_not_callable", lambda ns: ns.api.value_and_grad(3)),
    ("jacfwd_not_callable", lambda ns: ns.api.jacfwd(3)),
    ("jacrev_not_callable", lambda ns: ns.api.jacrev(3)),
    ("linear_transpose_not_callable", lambda ns: ns.api.linear_transpose(3, 1.0)),
    ("argnums_str", lambda ns: ns.api.grad(_f(ns.np_), argnums="a")(1.0)),
    ("argnums_float", lambda ns: ns.api.jacfwd(_f(ns.np_), argnums=0.5)(1.0)),
    ("grad_output_not_array", lambda ns: ns.api.grad(lambda x: "s")(1.0)),
    ("grad_output_vector", lambda ns: ns.api.grad(_f(ns.np_))(ns.asarray(X))),
    ("grad_holomorphic_real_output", lambda ns: ns.api.grad(lambda z: (z * z).real.sum(),
                                                           holomorphic=True)(ns.asarray(C))),
    ("grad_holomorphic_real_input", lambda ns: ns.api.grad(lambda x: x * 1j,
                                                          holomorphic=True)(1.0)),
    ("jacfwd_holomorphic_real_input", lambda ns: ns.api.jacfwd(lambda x: x * 2,
                                                              holomorphic=True)(ns.asarray(X))),
    ("jacrev_holomorphic_real_output", lambda ns: ns.api.jacrev(lambda z: z.real,
                                                               holomorphic=True)(ns.asarray(C))),
    ("jacrev_int_output", lambda ns: ns.api.jacrev(lambda x: (x > 0).astype(np.int32))(
        ns.asarray(X))),
    ("jacfwd_int_input", lambda ns: ns.api.jacfwd(lambda n: n * 2)(np.int32(3))),
    ("vjp_cotangent_tree", lambda ns: ns.api.vjp(lambda x: (x, x), ns.asarray(X))[1](
        ns.asarray(X))),
    ("vjp_cotangent_shape", lambda ns: ns.api.vjp(_f(ns.np_), ns.asarray(X))[1](
        ns.asarray(X[:2]))),
    ("linearize_tangent_tree", lambda ns: ns.api.linearize(_f(ns.np_), ns.asarray(X))[1](
        ns.asarray(X), ns.asarray(X))),
    ("linear_transpose_int_to_float", lambda ns: ns.api.linear_transpose(
        lambda n: n * 2.0, np.int32(1))),
    ("linear_transpose_cotangent_tree", lambda ns: ns.api.linear_transpose(
        lambda x: x * 2, ns.asarray(X))((ns.asarray(X), ns.asarray(X)))),
    ("linear_transpose_cotangent_shape", lambda ns: ns.api.linear_transpose(
        lambda x: x * 2, ns.asarray(X))(ns.asarray(X[:2]))),
    # a reduce_window computing other than add/max/min is forward mode only
    # (lax_autodiff_test): its jvp cannot be linearized (ValueError)
    ("grad_generic_reduce_window", lambda ns: ns.api.grad(lambda x: ns.lax_.reduce_window(
        x, np.float32(1), ns.lax_.mul, (2,), (1,), "SAME").sum())(ns.asarray(X))),
    # random_gamma_grad (a traced program in JAX) differentiates forward only
    ("grad_random_gamma_grad", lambda ns: ns.api.grad(lambda a: ns.lax_.random_gamma_grad(
        a, np.abs(X) + 0.5).sum())(ns.asarray(np.abs(X) + 1))),
]  # fmt: skip


def _random_gamma_grad_jvp(ns: Any) -> Any:
    a, x = ns.asarray(np.abs(X) + 0.3), ns.asarray(np.abs(X[::-1]) * 2 + 0.2)
    f = ns.lax_.random_gamma_grad
    return ns.api.jvp(f, (a, x), (ns.asarray(X), ns.asarray(X[::-1]))), ns.api.jit(
        lambda a, x: ns.api.jvp(f, (a, x), (x, a))
    )(a, x)


def _random_gamma_grad_linearize(ns: Any) -> Any:
    # JAX 0.10.2 linearizes the inline program (its while loops go whole into
    # the linear function): linearize runs, eagerly and under jit
    a, x = ns.asarray(np.abs(X) + 0.3), ns.asarray(np.abs(X[::-1]) * 2 + 0.2)

    def run(a: Any, x: Any) -> Any:
        primal, f_jvp = ns.api.linearize(ns.lax_.random_gamma_grad, a, x)
        return primal, f_jvp(x, a)

    return run(a, x), ns.api.jit(run)(a, x)


def _igamma_second_order_in_x(ns: Any) -> Any:
    # d/dx of igamma is differentiable in x; its slope in a (unused here) is not
    f = lambda x: ns.lax_.igamma(np.float32(2), x)  # noqa: E731
    x = ns.asarray(np.abs(X) + 0.5)
    return ns.api.hessian(lambda x: f(x).sum())(x), ns.api.jvp(
        lambda x: ns.api.jvp(f, (x,), (x,))[1], (x,), (x,)
    )


def _printed_dot_precision(ns: Any) -> Any:
    # lax_autodiff_test reads the precision in a dot's printed pullback.
    x, y = ns.asarray(X), ns.asarray(np.outer(X, X[::-1]))
    out = []
    for precision in ("highest", ("high", "default")):
        dot = lambda a, b, p=precision: ns.lax_.dot(a, b, precision=p)  # noqa: E731
        value, pullback = ns.api.vjp(dot, x, y)
        text = str(ns.api.make_jaxpr(pullback)(value))
        out.append([name in text for name in ("Precision.HIGHEST", "Precision.HIGH,", "'HIGH")])
    return out


def _check_grads_rank0_complex(ns: Any) -> Any:
    # JAX's check_grads draws a rank-0 complex tangent for a rank-0 complex array.
    import importlib

    check_grads = importlib.import_module(ns.api.__name__ + ".test_util").check_grads
    z = np.asarray(0.5 + 0.25j, np.complex64)
    for op in (ns.lax_.exp, ns.lax_.conj):
        check_grads(op, (z,), 2, ["fwd", "rev"])
    return True


def cases() -> Iterator[Case]:
    yield _case("has_aux", _has_aux)
    yield _case("jacobian_edges", _jacobian_edges)
    yield _case("linear_transpose_structs", _linear_transpose_structs)
    yield _case("holomorphic", _holomorphic)
    yield _case("python_branches", _python_branches)
    yield _case("linear_transpose_duck", _linear_transpose_duck)
    yield _case("linear_transpose_int_jit", _linear_transpose_int_jit)
    yield _case("errors/vjp_of_ref", _vjp_of_ref)
    yield _case("printed_dot_precision", _printed_dot_precision)
    yield _case("igamma_second_order_in_x", _igamma_second_order_in_x)
    # the derivative of series and continued-fraction iterates: float32
    # rounding accumulates (refimpl's primal is the float64 impl's, rounded)
    yield script_case("ad.paths/random_gamma_grad_jvp", _random_gamma_grad_jvp, expect=AGREE,
                      tolerance=Tolerance(ulps=1024))  # fmt: skip
    yield script_case("ad.paths/random_gamma_grad_linearize", _random_gamma_grad_linearize,
                      expect=AGREE, tolerance=Tolerance(ulps=1024))  # fmt: skip
    yield _case("check_grads_rank0_complex", _check_grads_rank0_complex)
    for name, build in ERRORS:
        yield _case(f"errors/{name}", build)
