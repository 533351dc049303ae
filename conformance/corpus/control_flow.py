"""scan (every unroll form, reverse, pytrees, lengths 0/1/odd), fori_loop,
while_loop, cond and switch, with NumPy oracles written as plain loops."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for, sample, script_case
from conformance.corpus._tables import F32, I32
from conformance.observe import Raises, Weak

SCAN = ("lax_.scan",)


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


# --- scan -----------------------------------------------------------------------------------


def scan_oracle(body, init, xs, length=None, reverse=False):
    """``lax.scan`` as a Python loop over NumPy values (the definition)."""
    n = length if xs is None else len(xs)
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, [None] * n
    for i in order:
        carry, ys[i] = body(carry, None if xs is None else xs[i])
    return carry, ys


def _stack(ys: list[Any], empty_shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.stack(ys) if ys else np.zeros(empty_shape, dtype)


UNROLLS: list[Any] = [1, 2, 3, 4, 5, 7, 100, True, False, 0]
LENGTHS = [5, 1, 0]


def _scan_cases() -> Iterator[Case]:
    for length in LENGTHS:
        for unroll in UNROLLS if length == 5 else [1, 2, True]:
            for reverse in (False, True):
                name = f"scan/len{length}/unroll={unroll}" + ("/reverse" if reverse else "")
                rng = rng_for(f"scan/len{length}")
                init = sample(rng, (3,), F32)
                xs = sample(rng, (length, 3), F32)

                def program(ns, init, xs, _u=unroll, _r=reverse):
                    return ns.lax_.scan(
                        lambda c, x: (c * 0.5 + x, c * 0.5), init, xs, unroll=_u, reverse=_r
                    )

                def oracle(init, xs, _r=reverse, _n=length):
                    def body(c, x):
                        return (c * np.float32(0.5) + x).astype(np.float32), (
                            c * np.float32(0.5)
                        ).astype(np.float32)

                    carry, ys = scan_oracle(body, init, xs, reverse=_r)
                    return carry, _stack(ys, (0, 3), np.float32)

                yield fn_case(
                    name,
                    program,
                    [init, xs],
                    oracle=oracle,
                    requires=SCAN,
                    tags=["control_flow", "scan"]
                    + (["quick"] if length == 5 and unroll in (1, 2, True) else []),
                    source=f"lax.scan(lambda c, x: (c * 0.5 + x, c * 0.5), init, xs, "
                    f"unroll={unroll!r}, reverse={reverse})",
                )


def _scan_structure_cases() -> Iterator[Case]:
    rng = rng_for("scan-structure")
    xs_a, xs_b = sample(rng, (4, 2), F32), sample(rng, (4,), I32)

    def pytree_program(ns, xa, xb):
        def body(carry, x):
            total, count = carry["total"], carry["count"]
            a, b = x
            new = {"total": total + a * 2, "count": count + b}
            return new, {"sum": total.sum(), "pair": (a, count)}

        init = {"total": ns.np_.zeros(2, np.float32), "count": ns.np_.zeros((), np.int32)}
        return ns.lax_.scan(body, init, (xa, xb), unroll=2)

    def pytree_oracle(xa, xb):
        total, count = np.zeros(2, np.float32), np.int32(0)
        sums, pairs_a, pairs_c = [], [], []
        for a, b in zip(xa, xb, strict=True):
            sums.append(np.float32(total.sum()))
            pairs_a.append(a)
            pairs_c.append(count)
            total, count = (total + a * 2).astype(np.float32), np.int32(count + b)
        carry = {"total": total, "count": count}
        return carry, {"sum": np.array(sums, np.float32),
                       "pair": (np.stack(pairs_a), np.array(pairs_c, np.int32))}  # fmt: skip

    yield fn_case(
        "scan/pytree-carry-and-xs",
        pytree_program,
        [xs_a, xs_b],
        oracle=pytree_oracle,
        requires=SCAN,
        tags=["control_flow", "scan", "quick"],
    )

    def no_xs(ns, init):
        return ns.lax_.scan(lambda c, _: (c * 2, c), init, None, length=4, unroll=3)

    def no_xs_oracle(init):
        carry, ys = scan_oracle(lambda c, _: (c * 2, c), init, None, length=4)
        return carry, np.stack(ys)

    yield fn_case(
        "scan/xs-none-with-length",
        no_xs,
        [f32(1, -1)],
        oracle=no_xs_oracle,
        requires=SCAN,
        tags=["control_flow", "scan"],
    )

    def none_ys(ns, xs):
        return ns.lax_.scan(lambda c, x: (c + x, None), np.float32(0), xs)

    yield fn_case(
        "scan/ys-none",
        none_ys,
        [f32(1, 2, 3)],
        oracle=lambda xs: (np.float32(6), None),
        requires=SCAN,
        tags=["control_flow", "scan"],
    )

    def closure(ns, w, xs):
        return ns.lax_.scan(lambda c, x: (c + w * x, c), np.float32(0), xs, unroll=2)

    def closure_oracle(w, xs):
        carry, ys = scan_oracle(
            lambda c, x: (np.float32(c + w * x), np.float32(c)), np.float32(0), xs
        )
        return carry, np.array(ys, np.float32)

    yield fn_case(
        "scan/closure-over-traced-value",
        closure,
        [np.float32(3), f32(1, 2, 3, 4)],
        oracle=closure_oracle,
        requires=SCAN,
        tags=["control_flow", "scan"],
    )

    def int_counter(ns, xs):
        return ns.lax_.scan(lambda c, x: (c + 1, x * c), np.int32(0), xs, reverse=True, unroll=2)

    def int_oracle(xs):
        carry, ys = scan_oracle(
            lambda c, x: (np.int32(c + 1), np.int32(x * c)), np.int32(0), xs, reverse=True
        )
        return carry, np.array(ys, np.int32)

    yield fn_case(
        "scan/int-carry-reverse",
        int_counter,
        [np.arange(5, dtype=np.int32)],
        oracle=int_oracle,
        requires=SCAN,
        tags=["control_flow", "scan"],
    )

    def weak_init(ns, xs):
        return ns.lax_.scan(lambda c, x: (c + x, c), 0.0, xs)

    yield fn_case(
        "scan/weak-init-strong-body",
        weak_init,
        [f32(1, 2)],
        expect=AGREE,
        requires=SCAN,
        tags=["control_flow", "scan", "weak"],
    )

    # issue 29: ys keep the weak types of JAX's trace (the carry taken as given)
    def strong_init_weak_body(ns, xs):
        return ns.lax_.scan(lambda c, x: (1.0, (c, c * 2)), xs[0], xs)

    def weak_init_ys_from_carry(ns, xs):
        return ns.lax_.scan(lambda c, x: (c + x, (c * 2, c + 1.0, x)), 0.0, xs)

    for name, fn in (
        ("scan/strong-init-weak-body", strong_init_weak_body),
        ("scan/weak-init-ys-from-carry", weak_init_ys_from_carry),
    ):
        yield fn_case(
            name, fn, [f32(1, 2)], expect=AGREE, requires=SCAN,
            tags=["control_flow", "scan", "weak"],
        )  # fmt: skip

    def eager(ns, xs):
        return ns.lax_.scan(lambda c, x: (c + x, c * x), np.float32(1), xs, unroll=2)

    yield fn_case(
        "scan/eager",
        eager,
        [f32(1, 2, 3)],
        mode="eager",
        expect=AGREE,
        requires=SCAN,
        tags=["control_flow", "scan"],
    )

    def traces(ns):
        count = [0]

        def body(c, x):
            count[0] += 1
            return c + x, c

        xs = ns.asarray(f32(1, 2, 3, 4, 5))
        outs = [ns.jit(lambda xs, _u=u: ns.lax_.scan(body, np.float32(0), xs, unroll=_u))(xs)
                for u in (1, 2, True)]  # fmt: skip
        return {"outs": outs, "body_traces": count[0]}

    yield script_case(
        "scan/body-traced-once-per-unroll",
        traces,
        expect=AGREE,
        requires=SCAN,
        tags=["control_flow", "scan"],
    )

    def nested(ns, xs):
        def outer(c, row):
            inner_c, inner_ys = ns.lax_.scan(lambda a, v: (a + v, a * v), c, row, unroll=2)
            return inner_c, inner_ys.sum()

        return ns.lax_.scan(outer, np.float32(0), xs, unroll=3)

    def nested_oracle(xs):
        c, sums = np.float32(0), []
        for row in xs:
            ys = []
            for v in row:
                ys.append(np.float32(c * v))
                c = np.float32(c + v)
            sums.append(np.float32(sum(ys)))
        return c, np.array(sums, np.float32)

    yield fn_case(
        "scan/nested",
        nested,
        [sample(rng_for("nested"), (4, 3), F32)],
        oracle=nested_oracle,
        requires=SCAN,
        tags=["control_flow", "scan"],
    )


def _scan_error_cases() -> Iterator[Case]:
    xs = f32(1, 2, 3)
    table = [
        ("carry-dtype-changes", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c.astype(np.int32), x), np.float32(0), xs), TypeError, r"carry"),
        ("carry-shape-changes", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (ns.np_.stack([c, c]), x), np.float32(0), xs), TypeError, r"carry"),
        ("xs-lengths-differ", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c, x[0]), np.float32(0), (xs, xs[:2])), ValueError, r"length|axis"),
        ("length-disagrees", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c, x), np.float32(0), xs, length=4), ValueError, r"length"),
        ("no-xs-no-length", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c, c), np.float32(0), None), ValueError, r"length"),
        ("unroll-negative", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c, x), np.float32(0), xs, unroll=-1), ValueError, r"unroll"),
        ("unroll-string", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c, x), np.float32(0), xs, unroll="2"), TypeError, r"unroll"),
        ("unroll-float", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c, x), np.float32(0), xs, unroll=2.0), TypeError, r"unroll"),
        # a body that computes: jax's unrolling then needs an int and raises too
        ("unroll-float-computing-body", lambda ns, xs: ns.lax_.scan(
            lambda c, x: (c + x, x * 2), np.float32(0), xs, unroll=2.0), TypeError,
         {"jax": r"float.*interpreted as an integer", "*": r"unroll"}),
        ("body-returns-non-pair", lambda ns, xs: ns.lax_.scan(
            lambda c, x: c + x, np.float32(0), xs), TypeError, None),
    ]  # fmt: skip
    for label, program, exc, key in table:
        yield fn_case(
            f"scan/errors/{label}",
            program,
            [xs],
            expect=Raises(exc, key),
            requires=SCAN,
            tags=["control_flow", "scan", "errors"],
        )


# --- loops and conditionals ---------------------------------------------------------------


def _loop_cases() -> Iterator[Case]:
    def fori_static(ns, x):
        return ns.lax_.fori_loop(0, 5, lambda i, c: c * 2 + i, x)

    def fori_oracle(x):
        for i in range(5):
            x = (x * 2 + i).astype(np.float32)
        return x

    yield fn_case(
        "fori_loop/static-bounds",
        fori_static,
        [f32(1, -1)],
        oracle=fori_oracle,
        requires=("lax_.fori_loop",),
        tags=["control_flow", "loops", "quick"],
    )

    def fori_traced(ns, n, x):
        return ns.lax_.fori_loop(0, n, lambda i, c: c + i, x)

    yield fn_case(
        "fori_loop/traced-upper",
        fori_traced,
        [np.int32(4), np.int32(10)],
        oracle=lambda n, x: np.int32(x + sum(range(int(n)))),
        requires=("lax_.fori_loop",),
        tags=["control_flow", "loops"],
    )
    yield fn_case(
        "fori_loop/empty-range",
        lambda ns, x: ns.lax_.fori_loop(3, 3, lambda i, c: c + 1, x),
        [f32(7)],
        oracle=lambda x: x,
        requires=("lax_.fori_loop",),
        tags=["control_flow", "loops"],
    )
    yield fn_case(
        "fori_loop/pytree-carry",
        lambda ns, x: ns.lax_.fori_loop(0, 3, lambda i, c: (c[0] + 1, c[1] * 2), (x, x)),
        [f32(1)],
        oracle=lambda x: (x + 3, x * 8),
        requires=("lax_.fori_loop",),
        tags=["control_flow", "loops"],
    )

    def while_program(ns, x):
        return ns.lax_.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 3, c[1] * 2), (0, x))

    yield fn_case(
        "while_loop/counter",
        while_program,
        [f32(1, 2)],
        oracle=lambda x: (Weak(np.int32(12)), x * 16),
        requires=("lax_.while_loop",),
        tags=["control_flow", "loops", "quick"],
    )
    yield fn_case(
        "while_loop/zero-iterations",
        lambda ns, x: ns.lax_.while_loop(lambda c: c.sum() > 100, lambda c: c * 2, x),
        [f32(1, 2)],
        oracle=lambda x: x,
        requires=("lax_.while_loop",),
        tags=["control_flow", "loops"],
    )
    yield fn_case(
        "while_loop/errors/cond-not-bool",
        lambda ns, x: ns.lax_.while_loop(lambda c: c, lambda c: c - 1, x),
        [np.float32(3)],
        expect=Raises(TypeError),
        requires=("lax_.while_loop",),
        tags=["control_flow", "loops", "errors"],
    )
    yield fn_case(
        "while_loop/errors/body-changes-type",
        lambda ns, x: ns.lax_.while_loop(lambda c: c < 3, lambda c: c + 1.5, x),
        [np.int32(0)],
        expect=Raises(TypeError),
        requires=("lax_.while_loop",),
        tags=["control_flow", "loops", "errors"],
    )


def _cond_cases() -> Iterator[Case]:
    for pred in (True, False):
        yield fn_case(
            f"cond/traced-pred-{pred}",
            lambda ns, p, x: ns.lax_.cond(p, lambda v: v * 2, lambda v: v - 1, x),
            [np.bool_(pred), f32(1, 2, 3)],
            oracle=lambda p, x: x * 2 if p else x - 1,
            requires=("lax_.cond",),
            tags=["control_flow", "cond"] + (["quick"] if pred else []),
        )
    yield fn_case(
        "cond/pytree-operands",
        lambda ns, p, a, b: ns.lax_.cond(p, lambda t: (t[1], t[0]), lambda t: t, (a, b)),
        [np.bool_(True), f32(1), f32(2)],
        oracle=lambda p, a, b: (b, a),
        requires=("lax_.cond",),
        tags=["control_flow", "cond"],
    )
    yield fn_case(
        "cond/int-pred",
        lambda ns, p, x: ns.lax_.cond(p, lambda v: v + 1, lambda v: v - 1, x),
        [np.int32(3), f32(0)],
        expect=AGREE,
        requires=("lax_.cond",),
        tags=["control_flow", "cond"],
    )
    yield fn_case(
        "cond/closure",
        lambda ns, p, x, y: ns.lax_.cond(p, lambda: x + y, lambda: x * y),
        [np.bool_(False), f32(2), f32(5)],
        oracle=lambda p, x, y: x * y,
        requires=("lax_.cond",),
        tags=["control_flow", "cond"],
    )
    yield fn_case(
        "cond/errors/branch-types-differ",
        lambda ns, p, x: ns.lax_.cond(p, lambda v: v, lambda v: v.astype(np.int32), x),
        [np.bool_(True), f32(1)],
        expect=Raises(TypeError),
        requires=("lax_.cond",),
        tags=["control_flow", "cond", "errors"],
    )
    for index in (-1, 0, 1, 2, 5):
        yield fn_case(
            f"switch/index{index}",
            lambda ns, i, x: ns.lax_.switch(
                i, [lambda v: v + 1, lambda v: v * 10, lambda v: -v], x
            ),
            [np.int32(index), f32(2, 3)],
            oracle=lambda i, x: [x + 1, x * 10, -x][min(max(int(i), 0), 2)],
            requires=("lax_.switch",),
            tags=["control_flow", "cond"],
            notes="out-of-range indices clamp",
        )


def cases() -> Iterator[Case]:
    yield from _scan_cases()
    yield from _scan_structure_cases()
    yield from _scan_error_cases()
    yield from _loop_cases()
    yield from _cond_cases()
