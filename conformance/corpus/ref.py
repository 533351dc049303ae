"""Mutable array references (SPEC "Ref"): ``new_ref``, ``freeze``, ``ref[idx] = v``.

Every case calls the implementation's own ``new_ref``/``freeze`` from its
top-level module (``refimpl.new_ref`` / ``jax.new_ref``). Values are
checked against NumPy oracles (the same writes on a NumPy copy); errors
against JAX's words.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, fn_case, script_case
from conformance.compare import Tolerance
from conformance.namespace import Unsupported
from conformance.observe import Raises

TAGS = ["ref"]


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "new_ref") or not hasattr(module, "freeze"):
        raise Unsupported(f"{ns.name} has no new_ref/freeze")
    return module


def _writes(ns: Any, x: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(x)
    r[...] = r[...] * 2
    r[1] += 10
    r[0:2] = r[2:4] + 1
    return api.freeze(r)


def _writes_oracle(x: np.ndarray) -> np.ndarray:
    r = np.array(x, copy=True)
    r[...] = r * 2
    r[1] += 10
    r[0:2] = r[2:4] + 1
    return r


def _scan_accumulate(ns: Any, xs: Any) -> Any:
    api = _api(ns)
    acc = api.new_ref(np.zeros(xs.shape[1:], np.float32))

    def body(c, x):
        acc[...] += x * c
        return c + 1, None

    ns.scan(body, np.float32(1), xs)
    return api.freeze(acc)


def _scan_oracle(xs: np.ndarray) -> np.ndarray:
    return sum((i + 1) * x for i, x in enumerate(xs)).astype(np.float32)


def _grad_internal(ns: Any, x: Any) -> Any:
    api = _api(ns)

    def f(x):
        q = api.new_ref(x)
        q[...] = q[...] * x
        q[0] += 3 * x[1]
        return api.freeze(q).sum()

    return api.grad(f)(x)


def _grad_oracle(x: np.ndarray) -> np.ndarray:
    g = 2 * x
    g[1] += 3
    return g


def cases() -> Iterator[Case]:
    x = np.arange(1, 5, dtype=np.float32)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    for mode in ("eager", "jit"):
        yield fn_case(f"ref/writes-{mode}", _writes, [x], oracle=_writes_oracle, mode=mode,
                      tags=TAGS + (["quick"] if mode == "jit" else []))  # fmt: skip
        yield fn_case(f"ref/scan-accumulate-{mode}", _scan_accumulate, [xs],
                      oracle=_scan_oracle, mode=mode, tags=TAGS)  # fmt: skip
    yield fn_case("ref/grad-internal", _grad_internal, [x], oracle=_grad_oracle, tags=TAGS)

    def in_place(ns):
        api = _api(ns)
        r = api.new_ref(np.arange(3, dtype=np.float32))

        def step(r, s):
            r[...] = r[...] * s

        stepped = ns.jit(step)
        for _ in range(3):
            stepped(r, np.float32(2))
        return ns.to_numpy(r[...])

    yield script_case("ref/jit-argument-updated", in_place,
                      expect=np.arange(3, dtype=np.float32) * 8, tags=TAGS)  # fmt: skip

    def returned(ns):
        api = _api(ns)
        return ns.jit(lambda x: api.new_ref(x))(np.float32(1))

    returned_error = Raises(ValueError, "mutable array references cannot be returned")
    yield script_case("ref/error-returned-from-jit", returned, tags=TAGS, expect=returned_error)

    def twice(ns):
        api = _api(ns)
        r = api.new_ref(np.ones(2, np.float32))
        return ns.jit(lambda a, b: a[...] + b[...])(r, r)

    twice_error = Raises(ValueError, "only one reference to a mutable array")
    yield script_case("ref/error-passed-twice", twice, tags=TAGS, expect=twice_error)

    def bad_dtype(ns):
        api = _api(ns)
        r = api.new_ref(np.ones(2, np.float32))
        r[...] = ns.asarray(np.ones(2, np.int32))

    yield script_case("ref/error-dtype", bad_dtype, tags=TAGS,
                      expect=Raises(ValueError, "Invalid dtype for `swap`"))  # fmt: skip
    yield from _more_cases()


# --- while_loop / fori_loop over refs, vmap over Ref arguments, jit closing over refs ----------


def _while_accumulate(ns: Any, x: Any) -> Any:
    api = _api(ns)
    acc = api.new_ref(x)

    def body(i):
        acc[...] = acc[...] * 2 + i
        return i + 1

    n = ns.lax_.while_loop(lambda i: i < 4, body, np.float32(0))
    return n, api.freeze(acc)


def _while_oracle(x: np.ndarray) -> Any:
    acc = np.array(x, copy=True)
    for i in range(4):
        acc = acc * 2 + np.float32(i)
    return np.float32(4), acc


def _fori_dynamic(ns: Any, x: Any, n: Any) -> Any:
    api = _api(ns)
    q = api.new_ref(x)

    def body(i, c):
        q[...] += c
        return c * 2

    c = ns.lax_.fori_loop(0, n, body, np.float32(1))
    return api.freeze(q), c


def _fori_oracle(x: np.ndarray, n: np.ndarray) -> Any:
    return x + np.float32(2 ** int(n) - 1), np.float32(2 ** int(n))


def _more_cases() -> Iterator[Case]:
    x = np.arange(1, 5, dtype=np.float32)
    for mode in ("eager", "jit"):
        yield fn_case(f"ref/while-body-writes-{mode}", _while_accumulate, [x],
                      oracle=_while_oracle, mode=mode, tags=TAGS)  # fmt: skip
    yield fn_case("ref/fori-dynamic-bounds", _fori_dynamic, [x, np.int32(3)],
                  oracle=_fori_oracle, tags=TAGS)  # fmt: skip

    def cond_writes(ns):
        # JAX's rule: the predicate's writes are dropped; each iteration runs
        # the cond again (keeping its writes) before the body.
        api = _api(ns)
        r = api.new_ref(np.float32(3))

        def cond(i):
            r[...] += 1
            return r[...] < 6

        n = ns.lax_.while_loop(cond, lambda i: i + 1, np.int32(0))
        return ns.to_numpy(n), ns.to_numpy(r[...])

    yield script_case("ref/while-cond-writes", cond_writes, tags=TAGS,
                      expect=(np.int32(2), np.float32(5)))  # fmt: skip

    def same_ref_cond_and_body(ns):
        api = _api(ns)

        def f(x):
            r = api.new_ref(x)

            def cond(i):
                r[...] += 1.0
                return i < 3

            def body(i):
                r[...] += 1.0
                return i + 1

            ns.lax_.while_loop(cond, body, 0)
            return api.freeze(r)

        return ns.jit(f)(np.float32(0))

    same_ref_error = Raises(NotImplementedError, "same ref in both cond and body")
    yield script_case("ref/error-while-writes-in-cond-and-body", same_ref_cond_and_body,
                      tags=TAGS, expect=same_ref_error)  # fmt: skip

    def vmap_ref_argument(ns, in_axes):
        api = _api(ns)
        r = api.new_ref(np.arange(6, dtype=np.float32).reshape(3, 2))

        def f(r):
            r[...] = r[...] * 2 + 1
            return r[...].sum()

        out = api.vmap(f, in_axes=in_axes)(r)
        return ns.to_numpy(out), ns.to_numpy(r[...])

    start = np.arange(6, dtype=np.float32).reshape(3, 2)
    for in_axes in (0, 1):
        want = (
            (start * 2 + 1).sum(axis=1 - in_axes).astype(np.float32),
            (start * 2 + 1).astype(np.float32),
        )
        yield script_case(f"ref/vmap-ref-argument-in_axes={in_axes}",
                          lambda ns, a=in_axes: vmap_ref_argument(ns, a), tags=TAGS,
                          expect=want)  # fmt: skip

    def vmap_unbatched_write(ns):
        api = _api(ns)
        r = api.new_ref(np.zeros(2, np.float32))

        def g(x):
            r[...] = r[...] + 1  # not even batched: JAX refuses any write
            return x

        return api.vmap(g)(ns.asarray(np.ones((3, 2), np.float32)))

    yield script_case("ref/error-vmap-write-unbatched-ref", vmap_unbatched_write, tags=TAGS,
                      expect=Raises(Exception, "set/swap operation with vmapped value on an "
                                               "unbatched array reference"))  # fmt: skip

    def jit_closed_over(ns):
        api = _api(ns)
        r = api.new_ref(np.float32(1))
        read = ns.jit(lambda x: r[...] + x)
        first = ns.to_numpy(read(np.float32(2)))
        r[...] = 10.0
        second = ns.to_numpy(read(np.float32(2)))  # sees the new value

        def g(x):
            r[...] = r[...] + x
            return x * 2

        step = ns.jit(g)
        outs = [ns.to_numpy(step(np.float32(2)))]
        pointer = r.unsafe_buffer_pointer()  # after the first call: the ref is on the device
        outs += [ns.to_numpy(step(np.float32(2))) for _ in range(2)]
        return first, second, outs, ns.to_numpy(r[...]), r.unsafe_buffer_pointer() == pointer

    yield script_case("ref/jit-closes-over-ref", jit_closed_over, tags=TAGS,
                      expect=(np.float32(3), np.float32(12), [np.float32(4)] * 3,
                              np.float32(16), True))  # fmt: skip

    def closed_and_passed(ns):
        api = _api(ns)
        r = api.new_ref(np.ones(2, np.float32))
        return ns.jit(lambda a: r[...] + a[...])(r)

    closed_error = Raises(ValueError, "both closed over and passed as the argument")
    yield script_case("ref/error-closed-over-and-passed", closed_and_passed, tags=TAGS,
                      expect=closed_error)  # fmt: skip

    # issue 29: a Ref argument of a custom_vjp function reaches fwd, which may
    # save it for bwd to write (gradient statistics); eagerly and under jit(grad)
    def custom_vjp_ref_through_rules(ns):
        api = _api(ns)

        @api.custom_vjp
        def f(x, ref):
            return x * ref[...]

        def fwd(x, ref):
            return x * ref[...], (ref, ref[...])

        def bwd(res, g):
            ref, value = res
            ref[...] += g.sum()
            return g * value, None

        f.defvjp(fwd, bwd)
        r = api.new_ref(np.float32(2))
        x = np.array([0.5, 1.0, 2.0], np.float32)
        loss = lambda x, r: f(x, r).sum()  # noqa: E731
        eager = ns.to_numpy(api.grad(loss)(x, r))
        jitted = ns.to_numpy(ns.jit(api.grad(loss))(x, r))
        return eager, jitted, ns.to_numpy(ns.jit(f)(x, r)), ns.to_numpy(r[...])

    yield script_case("ref/custom_vjp-ref-argument-through-fwd-bwd", custom_vjp_ref_through_rules,
                      tags=TAGS)  # fmt: skip

    # a custom_vjp whose fwd (not the function) writes its Ref argument, read
    # after the call: under differentiation the read sees fwd's write with
    # the tangent the ref had before (JAX: fwd writes the primal ref only)
    def custom_vjp_fwd_only_writes_ref_argument(ns):
        api = _api(ns)

        @api.custom_vjp
        def f(x_ref, y):
            return x_ref[...] * 3.0 * y

        def fwd(x_ref, y):
            v = x_ref[...]
            x_ref[...] = v * 2.0
            return v * 3.0 * y, (v, y)

        f.defvjp(fwd, lambda res, g: (g * 100.0 * res[1], g * res[0] * 7.0))

        def g(x, y):
            r = api.new_ref(x)
            return f(r, y) + r[...]

        x, y = np.float32(1.5), np.float32(2.0)
        vg = api.value_and_grad(g, (0, 1))
        return [
            ns.to_numpy(v)
            for v in api.tree_util.tree_leaves(
                (
                    ns.jit(g)(x, y),
                    vg(x, y),
                    ns.jit(vg)(x, y),
                    api.value_and_grad(ns.jit(g), (0, 1))(x, y),
                )
            )
        ]

    yield script_case("ref/custom_vjp-fwd-only-writes-ref-argument",
                      custom_vjp_fwd_only_writes_ref_argument, tags=TAGS)  # fmt: skip

    # issue 29: JAX's test_scan_vjp_systematic_readonly -- a scan body reading
    # refs and constants it pops from lists (so it can be traced only once)
    # with a weak carry it returns strong, under vjp
    def scan_read_only_refs_vjp(ns):
        api = _api(ns)

        def f(mut, pure, c, xs):
            consts = list(pure), [api.new_ref(v) for v in mut]

            def body(c, x):
                tot = 0.0
                for is_mut in (True, False, True):
                    const = consts[int(is_mut)].pop()
                    tot += ns.np_.sin(const[...] if is_mut else const)
                return [ns.np_.sin(ci) + tot for ci in c], ns.np_.sin(x) * 1.0

            return ns.lax_.scan(body, c, xs, length=3)

        # strong ref values (new_ref of a Python float differs: docs/semantics.md section 5)
        args = (list(np.float32([0.3, -0.7])), [1.2], [0.5, 0.1], np.float32([0.1, 0.2, 0.3]))
        out, pullback = api.vjp(f, *args)
        return out, pullback(out)

    yield script_case("ref/scan-read-only-refs-under-vjp", scan_read_only_refs_vjp, tags=TAGS,
                      tolerance=Tolerance(ulps={"float32": 8}))  # fmt: skip

    # issue 29: vjp's pullback.with_refs accumulating cotangents into a ref
    # inside a scan (JAX's test_vjp3_ref_grads_for_val_primals, smaller)
    def pullback_with_refs_in_scan(ns):
        api, np_ = _api(ns), ns.np_
        ws, xs = np_.ones((2, 3, 3)), np_.ones((4, 2, 3))

        def loss(ws, x):
            return np_.mean(ns.lax_.scan(lambda a, w: (np_.dot(a, w), None), x, ws)[0])

        acc = api.new_ref(np_.zeros_like(ws))

        def step(_, x):
            value, pullback = api.vjp(lambda w: loss(w, x), ws)
            pullback.with_refs(acc)(np_.ones_like(value))
            return (), value

        _, values = ns.lax_.scan(step, (), xs)
        return values, api.freeze(acc)

    yield script_case("ref/pullback-with-refs-in-scan", pullback_with_refs_in_scan, tags=TAGS,
                      tolerance=Tolerance(ulps={"float32": 8}))  # fmt: skip
