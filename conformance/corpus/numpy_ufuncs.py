"""``np_`` elementwise functions: every function x dtypes x broadcasting shapes,
and the Python operators on arrays, with NumPy oracles.

The oracles follow jax.numpy's rules where they differ from NumPy's: with
x64 off, 64-bit results become 32-bit, and integer inputs to float functions
give float32 (NumPy would give float16 for int8, float64 for int32).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.case import (
    ANYWHERE,
    NONZERO,
    POSITIVE,
    SMALL,
    UNIT,
    Case,
    Domain,
    fn_case,
    rng_for,
    sample,
    special_floats,
)
from conformance.corpus._tables import (
    BF16,
    BOOL,
    C64,
    F16,
    F32,
    I8,
    I32,
    NP_BINARY_SHAPES,
    U8,
    canonical,
    shape_str,
    short,
)

FLOATY = (F32, BF16, F16)


def to_float(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    """Oracle of a float function: computed in float64, returned in the input's
    float dtype, or float32 for integer and bool inputs (jnp's rule)."""

    def oracle(*args: np.ndarray) -> np.ndarray:
        dtype = np.asarray(args[0]).dtype
        out = dtype if dtype.kind in "fc" or dtype == BF16 else F32
        wide = [
            np.asarray(a).astype(np.complex128 if out.kind == "c" else np.float64) for a in args
        ]
        with np.errstate(all="ignore"):
            return np.asarray(fn(*wide)).astype(out)

    return oracle


def same(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    """Oracle keeping the input dtype (integers wrap; floats computed wide)."""

    def oracle(*args: np.ndarray) -> np.ndarray:
        dtype = np.asarray(args[0]).dtype
        with np.errstate(all="ignore"):
            if dtype.kind in "fc" or dtype == BF16:
                wide = [np.asarray(a).astype(np.float64 if dtype.kind != "c" else np.complex128)
                        for a in args]  # fmt: skip
                return np.asarray(fn(*wide)).astype(dtype)
            return np.asarray(fn(*args)).astype(canonical(np.result_type(*args)))

    return oracle


def to_bool(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    def oracle(*args: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            wide = [a.astype(np.float64) if a.dtype == BF16 else a for a in map(np.asarray, args)]
            return np.asarray(fn(*wide)).astype(bool)

    return oracle


@dataclass(frozen=True)
class Fn:
    name: str
    oracle: Callable[..., np.ndarray]
    dtypes: tuple[np.dtype, ...]
    domains: tuple[Domain, ...] = (ANYWHERE,)
    arity: int = 1


def _u(name, oracle, dtypes, domain=ANYWHERE) -> Fn:
    return Fn(name, oracle, tuple(dtypes), (domain,))


def _b(name, oracle, dtypes, x=ANYWHERE, y=ANYWHERE) -> Fn:
    return Fn(name, oracle, tuple(dtypes), (x, y), arity=2)


def _round_even(x: np.ndarray) -> np.ndarray:
    return np.round(x)


UNARY = [
    _u("negative", same(np.negative), (F32, I32, BF16, I8, C64)),
    _u("positive", same(np.positive), (F32, I32)),
    _u("abs", same(np.abs), (F32, I32, BF16, I8)),
    _u("absolute", same(np.abs), (F32,)),
    _u("sign", same(np.sign), (F32, I32, U8)),
    _u("floor", same(np.floor), FLOATY),
    _u("ceil", same(np.ceil), FLOATY),
    _u(
        "round", same(_round_even), FLOATY, Domain(-4, 4, special=(0.5, -0.5, 1.5, 2.5, -2.5))
    ),  # fmt: skip
    _u("exp", to_float(np.exp), FLOATY + (I32, C64)),
    _u("expm1", to_float(np.expm1), (F32, BF16)),
    _u("log", to_float(np.log), FLOATY + (I32,), POSITIVE),
    _u("log1p", to_float(np.log1p), (F32, BF16), POSITIVE),
    _u("sqrt", to_float(np.sqrt), FLOATY + (I32, I8, U8), POSITIVE),
    _u("cbrt", to_float(np.cbrt), (F32,)),
    _u("sin", to_float(np.sin), FLOATY + (I32, BOOL)),
    _u("cos", to_float(np.cos), FLOATY),
    _u("tan", to_float(np.tan), (F32,), Domain(-1.4, 1.4)),
    _u("arcsin", to_float(np.arcsin), (F32,), UNIT),
    _u("arccos", to_float(np.arccos), (F32,), UNIT),
    _u("arctan", to_float(np.arctan), (F32,)),
    _u("sinh", to_float(np.sinh), (F32,)),
    _u("cosh", to_float(np.cosh), (F32,)),
    _u("tanh", to_float(np.tanh), (F32, BF16)),
    _u("square", same(np.square), (F32, I32)),
    _u("reciprocal", to_float(np.reciprocal), (F32,), NONZERO),
    _u("logical_not", to_bool(np.logical_not), (BOOL, F32, I32)),
    _u("invert", same(np.invert), (I32, U8, BOOL)),
    _u("bitwise_not", same(np.invert), (I8,)),
    _u("real", lambda x: np.real(x).astype(np.float32), (C64,)),
    _u("imag", lambda x: np.imag(x).astype(np.float32), (C64,)),
    _u("conj", same(np.conj), (C64,)),
]

BINARY = [
    _b("add", same(np.add), (F32, I32, BF16, U8, BOOL, C64)),
    _b("subtract", same(np.subtract), (F32, I32, BF16, U8)),
    _b("multiply", same(np.multiply), (F32, I32, F16, BOOL)),
    _b("divide", to_float(np.divide), (F32, I32, BF16), y=NONZERO),
    _b("true_divide", to_float(np.true_divide), (F32,), y=NONZERO),
    _b("floor_divide", same(np.floor_divide), (F32, I32, I8), y=NONZERO),
    _b("remainder", same(np.remainder), (F32, I32, I8), y=NONZERO),
    _b("mod", same(np.mod), (I32,), y=NONZERO),
    _b("power", same(np.power), (F32,), x=POSITIVE, y=SMALL),
    _b("power", same(np.power), (I32,), x=Domain(int_low=-5, int_high=5), y=Domain(0, 3, 0, 3)),
    _b("maximum", same(np.maximum), (F32, I32, U8)),
    _b("minimum", same(np.minimum), (F32, I32, U8)),
    _b("arctan2", to_float(np.arctan2), (F32,)),
    _b("equal", to_bool(np.equal), (F32, I32, BOOL)),
    _b("not_equal", to_bool(np.not_equal), (F32, I32)),
    _b("less", to_bool(np.less), (F32, I32)),
    _b("less_equal", to_bool(np.less_equal), (F32, I32)),
    _b("greater", to_bool(np.greater), (F32, U8)),
    _b("greater_equal", to_bool(np.greater_equal), (F32, I32)),
    _b("logical_and", to_bool(np.logical_and), (BOOL, F32)),
    _b("logical_or", to_bool(np.logical_or), (BOOL, I32)),
    _b("logical_xor", to_bool(np.logical_xor), (BOOL,)),
    _b("bitwise_and", same(np.bitwise_and), (I32, U8, BOOL)),
    _b("bitwise_or", same(np.bitwise_or), (I32, BOOL)),
    _b("bitwise_xor", same(np.bitwise_xor), (I32, U8)),
    _b("left_shift", same(np.left_shift), (I32, U8), y=Domain(0, 7, 0, 7)),
    _b("right_shift", same(np.right_shift), (I32, U8, I8), y=Domain(0, 7, 0, 7)),
]


def _program(name: str) -> Callable[..., Any]:
    def program(ns, *xs):
        return getattr(ns.np_, name)(*xs)

    return program


def _fn_cases(fn: Fn) -> Iterator[Case]:
    shape_sets = [((3, 4),), ((),), ((0, 2),)] if fn.arity == 1 else NP_BINARY_SHAPES
    plans = [(dtype, shape_sets[0], "jit") for dtype in fn.dtypes]
    plans += [(fn.dtypes[0], shapes, "jit") for shapes in shape_sets[1:]]
    plans += [(fn.dtypes[0], shape_sets[0], "eager")]
    operands = "x" if fn.arity == 1 else "x, y"
    source = f"lambda ns, {operands}: ns.np_.{fn.name}({operands})"
    seen = set()
    for index, (dtype, shapes, mode) in enumerate(plans):
        shown = "x".join(shape_str(s) for s in shapes)
        name = f"np.{fn.name}/{short(dtype)}/{shown}" + ("/eager" if mode == "eager" else "")
        if name in seen:
            continue
        seen.add(name)
        rng = rng_for(name)
        args = [sample(rng, s, dtype, d) for s, d in zip(shapes, fn.domains, strict=True)]
        yield fn_case(
            name,
            _program(fn.name),
            args,
            oracle=fn.oracle,
            mode=mode,
            tags=["elementwise", "numpy"] + (["quick"] if index == 0 else []),
            source=source,
        )


def _special_value_cases() -> Iterator[Case]:
    for name in ("isnan", "isinf", "isfinite"):
        for dtype in (F32, BF16):
            x = special_floats(dtype)
            yield fn_case(
                f"np.{name}/{short(dtype)}/special-values",
                _program(name),
                [x],
                oracle=to_bool(getattr(np, name)),
                tags=["elementwise", "numpy", "edge"],
                source=f"lambda ns, x: ns.np_.{name}(x)",
            )


# --- Python operators on arrays ----------------------------------------------------------

OPERATORS: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...], Domain]] = [
    ("add", lambda ns, x, y: x + y, np.add, (F32, I32), ANYWHERE),
    ("sub", lambda ns, x, y: x - y, np.subtract, (F32,), ANYWHERE),
    ("mul", lambda ns, x, y: x * y, np.multiply, (F32, I32), ANYWHERE),
    ("truediv", lambda ns, x, y: x / y, np.true_divide, (F32, I32), NONZERO),
    ("floordiv", lambda ns, x, y: x // y, np.floor_divide, (F32, I32), NONZERO),
    ("mod", lambda ns, x, y: x % y, np.remainder, (F32, I32), NONZERO),
    ("pow", lambda ns, x, y: abs(x) ** y, lambda x, y: np.abs(x) ** y, (F32,), SMALL),
    ("lt", lambda ns, x, y: x < y, np.less, (F32,), ANYWHERE),
    ("le", lambda ns, x, y: x <= y, np.less_equal, (I32,), ANYWHERE),
    ("eq", lambda ns, x, y: x == y, np.equal, (I32,), ANYWHERE),
    ("ne", lambda ns, x, y: x != y, np.not_equal, (F32,), ANYWHERE),
    ("and", lambda ns, x, y: x & y, np.bitwise_and, (I32, BOOL), ANYWHERE),
    ("or", lambda ns, x, y: x | y, np.bitwise_or, (BOOL,), ANYWHERE),
    ("xor", lambda ns, x, y: x ^ y, np.bitwise_xor, (I32,), ANYWHERE),
    ("rsub-scalar", lambda ns, x, y: 2 - x, lambda x, y: 2 - x, (F32, I32), ANYWHERE),
    ("rmul-scalar", lambda ns, x, y: 3 * x, lambda x, y: 3 * x, (F32, U8), ANYWHERE),
    ("neg", lambda ns, x, y: -x, lambda x, y: -x, (F32, I32), ANYWHERE),
    ("invert", lambda ns, x, y: ~x, lambda x, y: ~x, (I32, BOOL), ANYWHERE),
    ("abs", lambda ns, x, y: abs(x), lambda x, y: abs(x), (F32,), ANYWHERE),
]


def _operator_oracle(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    def oracle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = np.asarray(fn(x, y))
        if out.dtype.kind == "f" and x.dtype.kind in "iub":
            return out.astype(F32)  # true division of ints: jnp gives float32
        if out.dtype.kind == "b" or out.dtype == x.dtype:
            return out
        return out.astype(x.dtype)  # Python scalars are weak: the array's dtype wins

    return oracle


def _operator_cases() -> Iterator[Case]:
    for label, program, np_fn, dtypes, domain in OPERATORS:
        for index, dtype in enumerate(dtypes):
            for mode in ("jit", "eager") if index == 0 else ("jit",):
                name = f"operator.{label}/{short(dtype)}" + ("/eager" if mode == "eager" else "")
                rng = rng_for(name)
                x, y = sample(rng, (3, 4), dtype), sample(rng, (4,), dtype, domain)
                yield fn_case(
                    name,
                    program,
                    [x, y],
                    oracle=_operator_oracle(np_fn),
                    mode=mode,
                    tags=["operators"] + (["quick"] if index == 0 and mode == "jit" else []),
                )


def cases() -> Iterator[Case]:
    for fn in UNARY + BINARY:
        yield from _fn_cases(fn)
    yield from _special_value_cases()
    yield from _operator_cases()
