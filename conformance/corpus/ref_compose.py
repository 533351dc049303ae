"""Refs made outside a checkpointed or custom-rule function, touched inside
it (SPEC "Ref"; JAX 0.10.2's behaviour, docs/semantics.md section 5).

A ``checkpoint`` body or a ``custom_vjp`` function under ``jit`` runs with
its ref effects; when a rule replaces a function (``grad`` of a
``custom_jvp``/``custom_vjp``) the function's own accesses do not happen.
Values are checked against NumPy formulas, errors against JAX's words.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.corpus.ref import _api
from conformance.observe import Raises

TAGS = ["ref", "ref_compose"]
X = np.array([0.5, 1.0, 2.0], np.float32)


def _ckpt_writes_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))

    def body(x):
        r[...] = r[...] + x
        return ns.np_.sin(x) * r[...]

    f = ns.jit(lambda x: api.checkpoint(body)(x))
    return {"outs": [f(X), f(X)], "r": api.freeze(r)}


def _ckpt_reads_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.full(3, 2, np.float32))
    f = ns.jit(lambda x: api.checkpoint(lambda x: ns.np_.sin(x) * r[...])(x))
    a = f(X)
    r[...] = np.full(3, 3, np.float32)
    return {"outs": [a, f(X)]}


def _ckpt_in_scan(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))

    def step(c, _):
        def body(c):
            r[...] = r[...] + c
            return c * 2

        return api.checkpoint(body)(c), None

    out = ns.jit(lambda x: ns.scan(step, x, None, length=3)[0])(X)
    return {"out": out, "r": api.freeze(r)}


def _jit_in_ckpt(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))

    def body(x):
        @ns.jit
        def inner(x):
            r[...] = r[...] + x
            return x * 3

        return inner(x)

    out = ns.jit(lambda x: api.checkpoint(body)(x))(X)
    return {"out": out, "r": api.freeze(r)}


def _ckpt_jvp(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))

    def body(x):
        r[...] = r[...] + 1.0
        return (ns.np_.sin(x) * r[...]).sum()

    primal, tangent = api.jvp(api.checkpoint(body), (X,), (X,))
    return {"primal": primal, "tangent": tangent, "r": api.freeze(r)}


def _ckpt_grad_saveable(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))

    def body(x):
        r[...] = r[...] + 2.0
        return (ns.np_.sin(x) * r[...]).sum()

    f = api.checkpoint(body, policy=api.checkpoint_policies.everything_saveable)
    return {"grad": ns.jit(api.grad(f))(X), "r": api.freeze(r)}


def _ckpt_grad_reads(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.full(3, 2, np.float32))
    f = api.checkpoint(lambda x: (ns.np_.sin(x) * r[...]).sum())
    return {"grad": api.grad(f)(X), "jit_grad": ns.jit(api.grad(f))(X)}


def _ckpt_grad_writes_differentiated(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))

    def body(x):
        r[...] = r[...] + x
        return ns.np_.sin(x).sum()

    return api.grad(api.checkpoint(body))(X)


def _ckpt_ref_argument(ns: Any) -> Any:
    """A Ref passed as an argument of a checkpointed function (not closed over)."""
    api = _api(ns)

    def body(x, r):
        r[...] = r[...] + x
        return ns.np_.sin(x) * r[...]

    r = api.new_ref(np.zeros(3, np.float32))
    eager = api.checkpoint(body)(X, r)
    jitted = ns.jit(api.checkpoint(body))(X, r)
    reads = api.checkpoint(lambda x, r: (ns.np_.sin(x) * r[...]).sum())
    return {"outs": [eager, jitted], "r": api.freeze(r), "grad": api.grad(reads)(X, r)}


def _ckpt_grad_writes_differentiated_into_ref_argument(ns: Any) -> Any:
    api = _api(ns)

    def body(x, r):
        r[...] = r[...] + x
        return ns.np_.sin(x).sum()

    return api.grad(api.checkpoint(body))(X, api.new_ref(np.zeros(3, np.float32)))


def _ckpt_returns_ref(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))
    return ns.jit(lambda x: api.checkpoint(lambda x: (x, r))(x)[1][...])(X)


def _stats_grads(ns: Any) -> Any:
    """A custom_vjp whose fwd saves its Ref argument and whose bwd writes the
    output cotangent into it (JAX's gradient-statistics test), differentiated
    through a jit, a scan and a checkpoint in a scan."""
    api = _api(ns)

    @api.custom_vjp
    def stash(r, x):
        return x

    def bwd(r, g):
        r[...] = g
        return None, g

    stash.defvjp(lambda r, x: (x, r), bwd)

    def primal(r, x):
        return ns.np_.sin(stash(r, ns.np_.sin(x)))

    def in_scan(r, x, remat):
        body = lambda c, _: (primal(r, c), None)  # noqa: E731
        return ns.scan(api.checkpoint(body) if remat else body, x, None, length=1)[0]

    out = {}
    for name, f in [("jit", ns.jit(primal)), ("scan", lambda r, x: in_scan(r, x, False)),
                    ("remat_scan", lambda r, x: in_scan(r, x, True))]:  # fmt: skip
        r = api.new_ref(np.float32(0.0))
        out[name] = [api.grad(f, 1)(r, np.float32(1.0)), api.freeze(r)]
    return out


def _scan_over_ref(ns: Any) -> Any:
    """A Ref among a scan's xs: each step reads and writes its row."""
    api = _api(ns)
    r = api.new_ref(np.arange(6, dtype=np.float32).reshape(3, 2))

    def body(c, x_row):
        x, row = x_row
        row[1] = row[1] + x * c
        return c + row[0], row[...]

    eager = ns.scan(body, np.float32(1.0), (X, r))
    jitted = ns.jit(lambda: ns.scan(body, np.float32(1.0), (X, r), reverse=True))()
    return {"eager": eager, "jit": jitted, "r": api.freeze(r)}


def _cond_ref_operand(ns: Any) -> Any:
    """A Ref passed to lax.cond as an operand: each branch gets the Ref."""
    api = _api(ns)
    r = api.new_ref(np.zeros(3, np.float32))

    def add(x, ref):
        ref[...] = ref[...] + x
        return x * 2

    def put(x, ref):
        ref[1] = x[0] + 1
        return x * 3

    f = ns.jit(lambda p, x: ns.cond(p, add, put, x, r))
    return {"true": f(True, X), "false": f(False, X), "r": api.freeze(r)}


def _custom_vjp_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.full(3, 2, np.float32))

    @api.custom_vjp
    def h(x):
        r[...] = r[...] + 1.0
        return ns.np_.sin(x) * r[...]

    h.defvjp(lambda x: (ns.np_.sin(x), x), lambda x, g: (ns.np_.cos(x) * g,))
    return {"out": ns.jit(h)(X), "r": api.freeze(r)}


def _custom_rules_under_grad(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.full(3, 2, np.float32))

    @api.custom_jvp
    def hj(x):
        r[...] = r[...] + 1.0  # replaced by the rule: never runs under grad
        return ns.np_.sin(x) * r[...]

    hj.defjvp(lambda p, t: (ns.np_.sin(p[0]), ns.np_.cos(p[0]) * t[0]))

    @api.custom_vjp
    def hv(x):
        r[...] = r[...] + 1.0  # replaced by fwd
        return ns.np_.sin(x) * r[...]

    def fwd(x):
        r[...] = r[...] + 10.0
        return ns.np_.sin(x), x

    hv.defvjp(fwd, lambda x, g: (ns.np_.cos(x) * g,))
    gj = ns.jit(api.grad(lambda x: hj(x).sum()))(X)
    gv = ns.jit(api.grad(lambda x: hv(x).sum()))(X)
    return {"gj": gj, "gv": gv, "r": api.freeze(r)}


def _custom_jvp_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(np.full(3, 2, np.float32))

    @api.custom_jvp
    def h(x):
        return ns.np_.sin(x) * r[...]

    h.defjvp(lambda p, t: (h(p[0]), ns.np_.cos(p[0]) * t[0]))
    return ns.jit(h)(X)


def _scaled_ref_vjp(api: Any) -> Any:
    # a custom_vjp function of a Ref argument: bwd's cotangent for the Ref
    # is the gradient of the value it holds (100 * y, not the primal's 3 * y)
    @api.custom_vjp
    def f(x_ref, y):
        return x_ref[...] * 3.0 * y

    def fwd(x_ref, y):
        return f(x_ref, y), (x_ref[...], y)

    def bwd(res, g):
        return (g * 100.0 * res[1], g * res[0] * 7.0)

    f.defvjp(fwd, bwd)
    return f


def _custom_vjp_differentiated_ref_argument(ns: Any) -> Any:
    api = _api(ns)
    f = _scaled_ref_vjp(api)
    x, y = np.float32(1.5), np.float32(2.0)

    def g(x, y):
        return f(api.new_ref(x), y)

    return {
        "grad": api.grad(g, (0, 1))(x, y),
        "jit_grad": ns.jit(api.grad(g, (0, 1)))(x, y),
        "grad_jit": api.grad(ns.jit(g), (0, 1))(x, y),
        "sin": api.grad(lambda x: f(api.new_ref(ns.np_.sin(x)), np.float32(1.0)))(x),
    }


def _custom_vjp_fwd_writes_ref_argument(ns: Any) -> Any:
    # fwd's write to the Ref argument is its final value, with the tangent
    # the ref had before the call (JAX's fwd writes the primal ref only)
    api = _api(ns)

    @api.custom_vjp
    def h(x_ref):
        v = x_ref[...]
        x_ref[...] = v * 2.0
        return v * 3.0

    def fwd(x_ref):
        v = x_ref[...]
        x_ref[...] = v * 2.0
        return v * 3.0, None

    h.defvjp(fwd, lambda _, g: (g * 100.0,))

    def g(x):
        r = api.new_ref(x)
        return h(r) + r[...] * 5.0

    x = np.float32(1.0)
    return {"grad": api.grad(g)(x), "grad_jit": api.grad(ns.jit(g))(x)}


def cases() -> Iterator[Case]:
    f32 = np.float32
    s, c = np.sin(X), np.cos(X)
    yield script_case("ref.compose/checkpoint-writes-in-jit", _ckpt_writes_in_jit, tags=TAGS,
                      expect={"outs": [s * X, s * 2 * X], "r": 2 * X})  # fmt: skip
    yield script_case("ref.compose/checkpoint-reads-in-jit", _ckpt_reads_in_jit, tags=TAGS,
                      expect={"outs": [s * 2, s * 3]})  # fmt: skip
    yield script_case("ref.compose/checkpoint-in-scan", _ckpt_in_scan, tags=TAGS,
                      expect={"out": 8 * X, "r": 7 * X})  # fmt: skip
    yield script_case("ref.compose/jit-in-checkpoint", _jit_in_ckpt, tags=TAGS,
                      expect={"out": 3 * X, "r": X})  # fmt: skip
    yield script_case("ref.compose/checkpoint-jvp-writes-once", _ckpt_jvp, tags=TAGS,
                      expect={"primal": f32(s.sum()), "tangent": f32((c * X).sum()),
                              "r": np.ones(3, f32)})  # fmt: skip
    yield script_case("ref.compose/checkpoint-grad-everything-saveable", _ckpt_grad_saveable,
                      tags=TAGS, expect={"grad": 2 * c, "r": np.full(3, 2, f32)})  # fmt: skip
    yield script_case("ref.compose/checkpoint-grad-reads", _ckpt_grad_reads, tags=TAGS,
                      expect={"grad": 2 * c, "jit_grad": 2 * c})  # fmt: skip
    differentiated = "set/swap operation with a differentiated value on a non-differentiated"
    yield script_case("ref.compose/error-checkpoint-grad-writes-differentiated",
                      _ckpt_grad_writes_differentiated, tags=TAGS,
                      expect=Raises(Exception, differentiated))  # fmt: skip
    yield script_case("ref.compose/checkpoint-ref-argument", _ckpt_ref_argument, tags=TAGS,
                      expect={"outs": [s * X, s * 2 * X], "r": 2 * X,
                              "grad": c * 2 * X})  # fmt: skip
    yield script_case("ref.compose/error-checkpoint-grad-writes-differentiated-ref-argument",
                      _ckpt_grad_writes_differentiated_into_ref_argument, tags=TAGS,
                      expect=Raises(Exception, differentiated))  # fmt: skip
    yield script_case("ref.compose/error-checkpoint-returns-ref", _ckpt_returns_ref, tags=TAGS,
                      expect=Raises(ValueError, "traced for checkpoint / remat returned a "
                                                "mutable array reference"))  # fmt: skip
    yield script_case("ref.compose/custom-vjp-bwd-writes-saved-ref", _stats_grads, tags=TAGS,
                      expect=AGREE)  # fmt: skip
    yield script_case("ref.compose/scan-over-ref", _scan_over_ref, tags=TAGS, expect=AGREE)
    yield script_case("ref.compose/cond-ref-operand", _cond_ref_operand, tags=TAGS, expect=AGREE)
    yield script_case("ref.compose/custom-vjp-in-jit", _custom_vjp_in_jit, tags=TAGS,
                      expect={"out": s * 3, "r": np.full(3, 3, f32)})  # fmt: skip
    yield script_case("ref.compose/custom-rules-under-grad", _custom_rules_under_grad,
                      tags=TAGS, expect={"gj": c, "gv": c, "r": np.full(3, 12, f32)})  # fmt: skip
    no_discharge = {
        "jax": "No state discharge rule implemented for primitive: custom_jvp_call",
        "*": "custom_jvp: the function h reads or writes a Ref made outside",
    }
    yield script_case("ref.compose/error-custom-jvp-in-jit", _custom_jvp_in_jit, tags=TAGS,
                      expect=Raises(NotImplementedError, no_discharge))  # fmt: skip
    yield script_case("ref.compose/custom-vjp-differentiated-ref-argument",
                      _custom_vjp_differentiated_ref_argument, tags=TAGS,
                      expect=AGREE)  # fmt: skip
    yield script_case("ref.compose/custom-vjp-fwd-writes-ref-argument",
                      _custom_vjp_fwd_writes_ref_argument, tags=TAGS, expect=AGREE)  # fmt: skip
