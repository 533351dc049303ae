"""What reverse mode saves (issue 36): the residuals of checkpointed programs
as an observable, and the forward/backward split.

A checkpoint policy decides which intermediate values the forward pass keeps
for the backward pass; the others are recomputed there. A policy bug (saving
everything where it should save nothing) cannot change a gradient's value, so
the ``memory_ad`` cases, which compare gradients, cannot see it. These cases
look at what is saved:

* ``residuals/<function>/<policy>``: the shapes and dtypes
  ``saved_residuals`` reports (``ns.saved_residuals``: refimpl's
  ``ad_checkpoint.saved_residuals``, JAX's ``jax._src.ad_checkpoint``'s), in a
  canonical order, with their count, for every policy and a few programs
  (dots with and without batch dims, named values, a checkpoint inside a
  larger function, nested checkpoints, ``jit`` inside). Not here: Python-scalar
  literals in an un-checkpointed function (JAX 0.10.2 counts each as a
  ``float32[]`` residual "from a literal", refimpl does not: an open
  difference);
* ``residuals/policy_inside/<scan|scan_reverse|cond>/<policy>``: a policy
  sees inside a loop or a branch (and a ``jit``, ``residuals/jit_inside``),
  as JAX's partial evaluation;
* ``residuals/dead_scan_carry``, ``residuals/dead_scan_ys``,
  ``residuals/dead_cond_output``: a scan carry, a scan's ys or a cond output
  nothing reads is not saved under everything_saveable;
* ``residuals.barrier/prevent_cse=<bool>``: whether ``jit(grad(f))``'s HLO
  has the optimization barrier a checkpoint's recomputation reads through;
* ``residuals/constants/<variant>``: api_test's ``saved_residuals`` utility
  (a NumPy constant array is saved "from a constant", also inside a ``jit``,
  whose residual arguments are "from the argument"), a closed-over concrete
  array, a ``jit`` forwarding an argument: the count, residuals and the
  sources' words;
* ``residuals.split/<policy>``: ``vjp`` of a checkpointed function whose body
  calls a host function (``pure_callback`` of a value not differentiated):
  how many times it runs in the forward pass (``vjp``) and in the backward
  pass (calling the vjp function) -- once each when its result is recomputed,
  once in all when it is saved -- and the cotangent.

``AGREE`` cases: judged by JAX (live or recorded), never by ``ref`` alone.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, rng_for, script_case
from conformance.corpus.ad_primitives import AD_TOLERANCE
from conformance.namespace import Unsupported

TAGS = ("residuals", "checkpoint")

# policy label -> how to build it from the implementation's checkpoint_policies
POLICIES: dict[str, Any] = {
    "default": lambda cp: None,
    "nothing_saveable": lambda cp: cp.nothing_saveable,
    "everything_saveable": lambda cp: cp.everything_saveable,
    "dots_saveable": lambda cp: cp.dots_saveable,
    "dots_with_no_batch_dims_saveable": lambda cp: cp.dots_with_no_batch_dims_saveable,
    "save_only_these_names_h": lambda cp: cp.save_only_these_names("h"),
    "save_only_these_names_h_g": lambda cp: cp.save_only_these_names("h", "g"),
    "save_any_names_but_these_h": lambda cp: cp.save_any_names_but_these("h"),
    "save_anything_except_these_names_g": lambda cp: cp.save_anything_except_these_names("g"),
    "save_from_both_policies": lambda cp: cp.save_from_both_policies(
        cp.dots_with_no_batch_dims_saveable, cp.save_only_these_names("g")
    ),
}


def _api(ns: Any) -> Any:
    api = ns.api
    if not hasattr(api, "checkpoint") or not hasattr(api, "checkpoint_policies"):
        raise Unsupported(f"{ns.name} has no checkpoint")
    return api


def _name(ns: Any) -> Any:
    return importlib.import_module(f"{_api(ns).__name__}.ad_checkpoint").checkpoint_name


def _body(ns: Any, x: Any, w: Any, v: Any) -> Any:
    """A dot without batch dims (named ``h``), a batched dot, a named ``g``,
    elementwise ops whose derivatives need their inputs."""
    np_, lax = ns.np_, ns.lax_
    name = _name(ns)
    h = name(x @ w, "h")
    a = np_.sin(h)
    b = lax.dot_general(v, v, (((2,), (1,)), ((0,), (0,))), precision="highest")
    g = name(np_.cos(a) * 2.0, "g")
    return np_.sum(a * g) + np_.sum(np_.tanh(b)) + np_.sum(np_.exp(x) * 0.5)


def _inputs() -> list[np.ndarray]:
    rng = rng_for("residuals")
    return [
        rng.uniform(-1, 1, (3, 4)).astype(np.float32),
        (rng.uniform(-1, 1, (4, 5)) / 2).astype(np.float32),
        rng.uniform(-1, 1, (2, 3, 3)).astype(np.float32),
    ]


def _policy(ns: Any, label: str) -> Any:
    return POLICIES[label](_api(ns).checkpoint_policies)


def _observed(ns: Any, fun: Any, *args: Any) -> dict[str, Any]:
    saved = ns.saved_residuals(fun, *args)
    return {"count": len(saved), "residuals": saved}


def _checkpointed(label: str) -> Any:
    def script(ns: Any) -> Any:
        api = _api(ns)
        f = api.checkpoint(lambda x, w, v: _body(ns, x, w, v), policy=_policy(ns, label))
        return _observed(ns, f, *[ns.asarray(a) for a in _inputs()])

    return script


def _plain(ns: Any) -> Any:
    """No checkpoint: every residual of the linearization is saved."""

    def f(x: Any, w: Any, v: Any) -> Any:
        h = ns.np_.sin(x @ w)
        b = ns.lax_.dot_general(v, v, (((2,), (1,)), ((0,), (0,))), precision="highest")
        return ns.np_.sum(h * ns.np_.cos(h)) + ns.np_.sum(ns.np_.tanh(b)) + ns.np_.sum(x * x)

    return _observed(ns, f, *[ns.asarray(a) for a in _inputs()])


def _inside(label: str) -> Any:
    """Only part of the function is checkpointed: what is outside is saved as usual."""

    def script(ns: Any) -> Any:
        api = _api(ns)
        inner = api.checkpoint(lambda x, w: ns.np_.sin(x @ w) * 3.0, policy=_policy(ns, label))

        def f(x: Any, w: Any, v: Any) -> Any:
            y = ns.np_.tanh(x) @ w
            return ns.np_.sum(inner(ns.np_.cos(x), w) * y) + ns.np_.sum(v)

        return _observed(ns, f, *[ns.asarray(a) for a in _inputs()])

    return script


def _nested(ns: Any) -> Any:
    """A checkpoint saving everything inside one saving nothing."""
    api = _api(ns)
    cp = api.checkpoint_policies
    inner = api.checkpoint(lambda a: ns.np_.sin(a) * ns.np_.cos(a), policy=cp.everything_saveable)
    outer = api.checkpoint(lambda x, w: ns.np_.sum(inner(x @ w)), policy=cp.nothing_saveable)
    x, w, _ = _inputs()
    return _observed(ns, outer, ns.asarray(x), ns.asarray(w))


def _jit_inside(label: str) -> Any:
    def script(ns: Any) -> Any:
        api = _api(ns)
        f = api.checkpoint(
            ns.jit(lambda x, w: ns.np_.sum(ns.np_.sin(x @ w) * ns.np_.exp(x @ w))),
            policy=_policy(ns, label),
        )
        x, w, _ = _inputs()
        return _observed(ns, f, ns.asarray(x), ns.asarray(w))

    return script


def _split(label: str) -> Any:
    """vjp of a checkpointed body calling a host function: (forward calls,
    backward calls, cotangent)."""

    def script(ns: Any) -> Any:
        api = _api(ns)
        calls = {"forward": 0, "backward": 0}
        phase = ["forward"]

        def host(v: Any) -> np.ndarray:
            calls[phase[0]] += 1
            return np.asarray(v) * np.float32(2)

        def body(x: Any) -> Any:
            spec = api.ShapeDtypeStruct(x.shape, x.dtype)
            y = api.pure_callback(host, spec, ns.lax_.stop_gradient(x))
            return ns.np_.sum(ns.np_.sin(x) * y)

        x = ns.asarray(_inputs()[0])
        _, pullback = api.vjp(api.checkpoint(body, policy=_policy(ns, label)), x)
        phase[0] = "backward"
        (cotangent,) = pullback(ns.asarray(np.float32(1)))
        return {"calls": dict(calls), "cotangent": cotangent}

    return script


def _dead_step(ns: Any) -> Any:
    """A step whose result nothing reads saves nothing (its derivative's
    residuals would feed only a tangent nothing reads): under
    everything_saveable, x, sin x and cos x, not the dead cos's -sin."""
    api = _api(ns)

    def body(x: Any) -> Any:
        a = ns.np_.sin(x)
        _dead = ns.np_.cos(x) * 3.0
        return ns.np_.sum(a * x)

    f = api.checkpoint(body, policy=api.checkpoint_policies.everything_saveable)
    return _observed(ns, f, ns.asarray(np.linspace(-1.0, 1.0, 3, dtype=np.float32)))


def _dead_loop_part(kind: str) -> Any:
    """A scan carry (or a cond output) nothing reads is dead, with what
    computes it, so everything_saveable saves nothing of it: a ``(3,)``
    stack of the live carry's ``sin`` inputs, not the dead carry's too
    (api_test's DCETest: JAX's dce_jaxpr prunes scan carries to a fixpoint
    and cond outputs in every branch)."""

    def script(ns: Any) -> Any:
        api, np_, lax = _api(ns), ns.np_, ns.lax_

        def body(x: Any) -> Any:
            if kind == "scan_carry":
                step = lambda c, _: ((np_.sin(c[0]), np_.cos(c[1]) * c[0]), None)  # noqa: E731
                return lax.scan(step, (x, x), None, length=3)[0][0]
            if kind == "scan_ys":  # an unused y leaves the loop too
                step = lambda c, _: (np_.sin(c), np_.cos(c) * 3.0)  # noqa: E731
                return lax.scan(step, x, None, length=3)[0]
            branches = (lambda x: (x, x), lambda x: (np_.sin(x), np_.exp(np_.cos(x))))
            return lax.cond(x > 0, branches[1], branches[0], x)[0]

        f = api.checkpoint(body, policy=api.checkpoint_policies.everything_saveable)
        return _observed(ns, f, np.float32(2.0))

    return script


def _policy_inside(kind: str, label: str) -> Any:
    """A policy sees the equations inside a scan or a cond (RematTest's
    test_remat_checkpoint_dots_outside_{scan,cond}, test_remat_of_scan_policy):
    a loop saves a stack of each step's dots (or cosines) and recomputes its
    sines from them, a cond the taken branch's values; the saved residuals
    and the gradient."""

    def script(ns: Any) -> Any:
        api, np_, lax = _api(ns), ns.np_, ns.lax_
        cp = api.checkpoint_policies
        policy = {
            "dots_saveable": cp.dots_saveable,
            "save_cos": lambda prim, *_, **__: str(prim) == "cos",
            "nothing_saveable": cp.nothing_saveable,
        }[label]

        def layers(w: Any) -> Any:
            def f(x: Any) -> Any:
                for _ in range(2):
                    x = np_.sin(np_.dot(x, w, precision="highest"))
                return np_.cos(x) * x

            return f

        def body(w: Any) -> Any:
            x = np_.ones((3,), np.float32)
            if kind == "cond":
                return np_.sum(lax.cond(np_.sum(x) > 0, layers(w), lambda x: x, x))
            step = lambda c, _: (layers(w)(c), np_.sum(c))  # noqa: E731
            last, ys = lax.scan(step, x, None, length=2, reverse=kind == "scan_reverse")
            return np_.sum(last) + np_.sum(ys)

        f = api.checkpoint(body, policy=policy)
        w = ns.asarray(np.linspace(-0.5, 0.5, 9, dtype=np.float32).reshape(3, 3))
        return {**_observed(ns, f, w), "grad": api.grad(f)(w)}

    return script


def _barrier(prevent_cse: bool) -> Any:
    """api_test's no_cse_widget tests: the compiled backward pass reads the
    recomputation's operands through an optimization barrier (XLA may then
    not merge it with the forward pass) when ``prevent_cse``; the primal
    function has none."""

    def script(ns: Any) -> Any:
        api, lax = _api(ns), ns.lax_
        g = api.checkpoint(lambda x: lax.sin(lax.sin(x)), prevent_cse=prevent_cse)

        def barrier(f: Any) -> bool:
            return "opt-barrier" in ns.jit(f).lower(np.float32(2.0)).as_text("hlo")

        return {"primal": barrier(g), "grad": barrier(api.grad(g))}

    return script


def _scan_zero_carry(carry_shape: tuple[int, ...]) -> Any:
    """A scan whose carry starts as zeros and whose carry tangent becomes
    nonzero in the loop: the zero tangent is instantiated. Of rank 0 it is a
    constant (not saved); of rank 1 a broadcast, saved under
    everything_saveable (fuzzer, kinds=["checkpoint"] at seed 2)."""

    def script(ns: Any) -> Any:
        api = _api(ns)

        def body(xs: Any) -> Any:
            init = ns.np_.zeros(carry_shape, xs.dtype)
            last, _ = ns.lax_.scan(lambda c, x: (ns.np_.tanh(c + x), c * 0.5), init, xs)
            return ns.np_.sum(last)

        f = api.checkpoint(body, policy=api.checkpoint_policies.everything_saveable)
        xs = np.linspace(-1.0, 1.0, 3 * int(np.prod(carry_shape)), dtype=np.float32)
        return _observed(ns, f, ns.asarray(xs.reshape((3,) + carry_shape)))

    return script


def _sources(ns: Any, fun: Any, *args: Any) -> dict[str, Any]:
    """The count, the residuals and their sources' words, without the
    ``from file:line`` JAX adds to an equation's output (refimpl's equations
    carry no source lines; JAX's is empty for a jit's output)."""
    words = sorted(
        re.sub(r" from(\s*| \S*\.py:\d+.*)$", "", source)
        for _, source in ns.impl.saved_residuals(fun, *args)
    )
    return {**_observed(ns, fun, *args), "sources": words}


def _constants(variant: str) -> Any:
    """api_test's saved_residuals utility: a NumPy array the linear part
    multiplies by is saved ``from a constant`` (also inside a jit, whose
    residual arguments are forwarded: ``from the argument``); a closed-over
    concrete array too; a jit's output that is its input is the input."""

    def script(ns: Any) -> Any:
        np_, name = ns.np_, _name(ns)
        if variant == "closed_over_array":
            c = ns.asarray(np.arange(3.0, dtype=np.float32))
            return _sources(ns, lambda x: x * c, np.float32(2.0))
        if variant == "jit_forwarded_argument":
            f = ns.jit(lambda x, y: np_.sin(x) * y)
            return _sources(ns, f, np.float32(1.0), np.float32(2.0))

        def f(x1: Any, x2: Any, y: Any) -> Any:
            z = name(np_.sin(np.float32(3.0)), "z")
            return z * ((x1 * x2) * y) * np.array([3.0], np.float32)

        fun = ns.jit(f) if variant == "numpy_constant_jit" else f
        return _sources(ns, fun, np.float32(2.0), np.float32(3.0), np.float32(4.0))

    return script


def cases() -> Iterator[Case]:
    for label in POLICIES:
        yield script_case(
            f"residuals/checkpoint/{label}",
            _checkpointed(label),
            expect=AGREE,
            tags=TAGS + (("quick",) if label == "nothing_saveable" else ()),
        )
    yield script_case("residuals/no_checkpoint", _plain, expect=AGREE, tags=TAGS)
    for label in ("default", "everything_saveable", "dots_saveable"):
        yield script_case(
            f"residuals/checkpoint_inside/{label}", _inside(label), expect=AGREE, tags=TAGS
        )
    # dots_saveable: the policy sees inside the nested jit (saving its two dots), as JAX's
    for label in ("default", "everything_saveable", "dots_saveable"):
        yield script_case(f"residuals/jit_inside/{label}", _jit_inside(label), expect=AGREE,
                          tags=TAGS)  # fmt: skip
    for kind in ("scan", "scan_reverse", "cond"):
        for label in ("dots_saveable", "save_cos", "nothing_saveable"):
            yield script_case(f"residuals/policy_inside/{kind}/{label}",
                              _policy_inside(kind, label), expect=AGREE, tags=TAGS)  # fmt: skip
    yield script_case("residuals/nested", _nested, expect=AGREE, tags=TAGS)
    for variant in ("numpy_constant", "numpy_constant_jit", "closed_over_array",
                    "jit_forwarded_argument"):  # fmt: skip
        yield script_case(f"residuals/constants/{variant}", _constants(variant), expect=AGREE,
                          tags=TAGS)  # fmt: skip
    yield script_case("residuals/dead_step", _dead_step, expect=AGREE, tags=TAGS)
    for prevent_cse in (True, False):
        yield script_case(f"residuals.barrier/prevent_cse={prevent_cse}", _barrier(prevent_cse),
                          expect=AGREE, tags=TAGS)  # fmt: skip
    for kind in ("scan_carry", "scan_ys", "cond_output"):
        yield script_case(f"residuals/dead_{kind}", _dead_loop_part(kind), expect=AGREE, tags=TAGS)
    for label, shape in (("scalar", ()), ("vector", (2,))):
        yield script_case(f"residuals/scan_zero_carry/{label}", _scan_zero_carry(shape),
                          expect=AGREE, tags=TAGS)  # fmt: skip
    for label in ("default", "nothing_saveable", "everything_saveable", "dots_saveable"):
        yield script_case(
            f"residuals.split/{label}",
            _split(label),
            expect=AGREE,
            tags=TAGS + ("host_callbacks",),
            tolerance=AD_TOLERANCE,
        )
