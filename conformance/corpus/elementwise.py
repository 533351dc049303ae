"""lax elementwise primitives: every op x its dtypes x edge shapes, NumPy oracles.

One table row per op; the generator makes, per row:

* one jitted case per accepted dtype on the main shape,
* one jitted case per edge shape (rank 0, zero-size, rank 3, rank-0 operand
  broadcast for binaries) on the first dtype,
* one eager case on the first dtype.

Edge *values* (NaN, infinities, division by zero, INT_MIN / -1, shifts past
the bit width, float->int overflow) are separate ``AGREE`` cases: there the
question is what XLA does, so the reference is compared with JAX directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from conformance.case import (
    AGREE,
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
    special_ints,
)
from conformance.compare import Tolerance
from conformance.corpus._tables import (
    ALL,
    BOOL,
    C64,
    F16,
    F32,
    FLOATS,
    I8,
    I32,
    INTS,
    LAX_BINARY_SHAPES,
    NUMERIC,
    REAL,
    SIGNED,
    U8,
    U32,
    UNARY_SHAPES,
    convert,
    erf,
    logistic,
    round_half_away,
    shape_str,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
    short,
    trunc_div,
    wide,
    wide_to,
)
from conformance.observe import Raises


@dataclass(frozen=True)
class Op:
    """One lax elementwise function and how to test it."""

    name: str  # the lax function
    oracle: Callable[..., np.ndarray]
    dtypes: tuple[np.dtype, ...]
    domains: tuple[Domain, ...] = (ANYWHERE,)
    params: dict[str, Any] = field(default_factory=dict)
    label: str = ""  # case name when it differs from ``name`` (same op, other params)
    tolerance: Tolerance | None = None
    arity: int = 1
    equal_rate: float = 0.0  # binary ops: fraction of positions where y == x

    @property
    def case_label(self) -> str:
        return self.label or self.name


def _u(name, oracle, dtypes, domain=ANYWHERE, **kw) -> Op:
    return Op(name, oracle, tuple(dtypes), (domain,), **kw)


def _b(name, oracle, dtypes, x=ANYWHERE, y=ANYWHERE, **kw) -> Op:
    return Op(name, oracle, tuple(dtypes), (x, y), arity=2, **kw)


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))
    return np.sign(x)


def _abs(x: np.ndarray) -> np.ndarray:
    out = np.abs(x)
    return out.astype(np.float32) if x.dtype == C64 else out.astype(x.dtype)


def _fmod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.fmod(x, y)


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":
        return trunc_div(x, y)
    return x / y


TIES = Domain(-4, 4, special=(0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.0, 1.0))
TRANSCENDENTAL_C64 = (F32, F16, np.dtype("bfloat16"), C64)
# XLA's float32 tanh/logistic/erf are fast approximations, a few ulps off
APPROX = Tolerance(ulps={"float32": 8, "float16": 2, "bfloat16": 2, "complex64": 8})

UNARY_OPS = [
    _u("neg", wide(np.negative), NUMERIC),
    _u("sign", wide(_sign), NUMERIC),
    _u("floor", wide(np.floor), FLOATS),
    _u("ceil", wide(np.ceil), FLOATS),
    _u("round", wide(round_half_away), FLOATS, TIES, label="round-half-away"),
    _u(
        "round",
        wide(np.round),
        FLOATS,
        TIES,
        params={"rounding_method": 1},
        label="round-half-even",
    ),
    _u("exp", wide(np.exp), TRANSCENDENTAL_C64),
    _u("log", wide(np.log), TRANSCENDENTAL_C64, POSITIVE),
    _u("log1p", wide(np.log1p), FLOATS, Domain(-0.9, 3.0)),
    _u("expm1", wide(np.expm1), FLOATS),
    _u("tanh", wide(np.tanh), FLOATS, tolerance=APPROX),
    _u("sin", wide(np.sin), TRANSCENDENTAL_C64),
    _u("cos", wide(np.cos), TRANSCENDENTAL_C64),
    _u("tan", wide(np.tan), FLOATS, Domain(-1.4, 1.4)),
    _u("asin", wide(np.arcsin), FLOATS, UNIT),
    _u("acos", wide(np.arccos), FLOATS, UNIT),
    _u("atan", wide(np.arctan), FLOATS),
    _u("sinh", wide(np.sinh), FLOATS),
    _u("cosh", wide(np.cosh), FLOATS),
    _u("sqrt", wide(np.sqrt), TRANSCENDENTAL_C64, POSITIVE),
    _u("rsqrt", wide(lambda x: 1 / np.sqrt(x)), FLOATS, POSITIVE),
    _u("cbrt", wide(np.cbrt), FLOATS),
    _u("logistic", wide(logistic), FLOATS, tolerance=APPROX),
    _u("erf", wide(erf), FLOATS, tolerance=APPROX),
    _u("is_finite", wide_to(np.isfinite, BOOL), FLOATS),
    _u("bitwise_not", wide(np.invert), (BOOL,) + INTS),
    _u("abs", _abs, FLOATS + SIGNED + (C64,)),
    _u(
        "integer_pow", wide(lambda x: x * x), NUMERIC, SMALL, params={"y": 2}, label="integer_pow-2"
    ),
    _u(
        "integer_pow",
        wide(lambda x: x * x * x),
        FLOATS + SIGNED,
        SMALL,
        params={"y": 3},
        label="integer_pow-3",
    ),
    _u(
        "integer_pow",
        wide(lambda x: 1 / (x * x)),
        FLOATS,
        NONZERO,
        params={"y": -2},
        label="integer_pow-neg2",
    ),
    _u("integer_pow", wide(lambda x: x**0), FLOATS + INTS, params={"y": 0}, label="integer_pow-0"),
    _u("copy", wide(lambda x: x), ALL),
]

_EQ = 0.3  # comparisons: make some positions equal so == and <= are exercised

BINARY_OPS = [
    _b("add", wide(np.add), NUMERIC),
    _b("sub", wide(np.subtract), NUMERIC),
    _b("mul", wide(np.multiply), NUMERIC),
    _b("div", wide(_div), NUMERIC, y=NONZERO),
    _b("rem", wide(_fmod), REAL, y=NONZERO),
    _b("pow", wide(np.power), FLOATS, x=POSITIVE, y=SMALL),
    _b("max", wide(np.maximum), (BOOL,) + REAL, equal_rate=_EQ),
    _b("min", wide(np.minimum), (BOOL,) + REAL, equal_rate=_EQ),
    _b("atan2", wide(np.arctan2), FLOATS),
    _b("nextafter", wide(np.nextafter), (F32,)),
    _b("bitwise_and", wide(np.bitwise_and), (BOOL,) + INTS),
    _b("bitwise_or", wide(np.bitwise_or), (BOOL,) + INTS),
    _b("bitwise_xor", wide(np.bitwise_xor), (BOOL,) + INTS),
    _b("shift_left", shift_left, INTS, x=Domain(int_low=-100, int_high=100), y=Domain(0, 7, 0, 7)),
    _b(
        "shift_right_logical",
        shift_right_logical,
        INTS,
        x=Domain(int_low=-100, int_high=100),
        y=Domain(0, 7, 0, 7),
    ),
    _b(
        "shift_right_arithmetic",
        shift_right_arithmetic,
        INTS,
        x=Domain(int_low=-100, int_high=100),
        y=Domain(0, 7, 0, 7),
    ),
    _b("eq", wide_to(np.equal, BOOL), ALL, equal_rate=_EQ),
    _b("ne", wide_to(np.not_equal, BOOL), ALL, equal_rate=_EQ),
    _b("lt", wide_to(np.less, BOOL), (BOOL,) + REAL, equal_rate=_EQ),
    _b("le", wide_to(np.less_equal, BOOL), (BOOL,) + REAL, equal_rate=_EQ),
    _b("gt", wide_to(np.greater, BOOL), (BOOL,) + REAL, equal_rate=_EQ),
    _b("ge", wide_to(np.greater_equal, BOOL), (BOOL,) + REAL, equal_rate=_EQ),
]


def _program(op: Op) -> Callable[..., Any]:
    name, params = op.name, dict(op.params)

    def program(ns, *operands):
        return getattr(ns.lax_, name)(*operands, **params)

    return program


def _source(op: Op) -> str:
    params = "".join(f", {k}={v!r}" for k, v in op.params.items())
    operands = "x" if op.arity == 1 else "x, y"
    return f"lambda ns, {operands}: ns.lax_.{op.name}({operands}{params})"


def _operands(op: Op, case_name: str, shapes: tuple[tuple[int, ...], ...], dtype: np.dtype):
    rng = rng_for(case_name)
    values = [sample(rng, s, dtype, d) for s, d in zip(shapes, op.domains, strict=True)]
    if op.equal_rate and shapes[0] == shapes[1]:
        same = rng.random(shapes[0]) < op.equal_rate
        values[1] = np.where(same, values[0], values[1]).astype(dtype)
    return values


def _op_cases(op: Op) -> Iterator[Case]:
    program, source = _program(op), _source(op)
    shape_sets = (
        [(s,) for s in UNARY_SHAPES] if op.arity == 1 else [tuple(p) for p in LAX_BINARY_SHAPES]
    )
    plans = [(dtype, shape_sets[0], "jit") for dtype in op.dtypes]
    plans += [(op.dtypes[0], shapes, "jit") for shapes in shape_sets[1:]]
    plans += [(op.dtypes[0], shape_sets[0], "eager")]
    for index, (dtype, shapes, mode) in enumerate(plans):
        shown = "x".join(shape_str(s) for s in shapes)
        name = f"lax.{op.case_label}/{short(dtype)}/{shown}" + ("/eager" if mode == "eager" else "")
        args = _operands(op, name, shapes, dtype)
        yield fn_case(
            name,
            program,
            args,
            oracle=op.oracle,
            mode=mode,
            tags=["elementwise", "lax"] + (["quick"] if index == 0 else []),
            tolerance=op.tolerance,
            source=source,
        )


# --- edge values: what XLA does is the question, so compare with the reference ---------


def _edge_cases() -> Iterator[Case]:
    float_unary = ["sign", "floor", "ceil", "round", "exp", "log", "log1p", "expm1", "tanh",
                   "sqrt", "rsqrt", "cbrt", "is_finite", "abs", "neg", "logistic", "sin",
                   "atan", "erf"]  # fmt: skip
    for name in float_unary:
        for dtype in (F32, F16):
            x = special_floats(dtype)
            yield fn_case(
                f"lax.{name}/{short(dtype)}/special-values",
                lambda ns, x, _n=name: getattr(ns.lax_, _n)(x),
                [x],
                expect=AGREE,
                tags=["elementwise", "lax", "edge"],
                tolerance=APPROX,
                source=f"lambda ns, x: ns.lax_.{name}(x)",
            )
    float_binary = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter"]
    for name in float_binary:
        x = special_floats(F32)
        xs, ys = np.meshgrid(x, x)
        yield fn_case(
            f"lax.{name}/f32/special-values",
            lambda ns, x, y, _n=name: getattr(ns.lax_, _n)(x, y),
            [xs.ravel(), ys.ravel()],
            expect=AGREE,
            tags=["elementwise", "lax", "edge"],
            tolerance=APPROX,
            source=f"lambda ns, x, y: ns.lax_.{name}(x, y)",
        )
    int_ops = ["add", "sub", "mul", "div", "rem", "max", "min", "shift_left",
               "shift_right_logical", "shift_right_arithmetic", "neg", "abs", "sign"]  # fmt: skip
    for name in int_ops:
        for dtype in (I32, I8, U8, U32):
            if name in ("abs",) and dtype.kind == "u":
                continue
            x = special_ints(dtype)
            if name in ("neg", "abs", "sign"):
                args = [x]
                src = f"lambda ns, x: ns.lax_.{name}(x)"
            else:
                xs, ys = np.meshgrid(x, x)
                if name.startswith("shift"):
                    bits = dtype.itemsize * 8
                    ys = np.array([0, 1, bits - 1, bits, bits + 3, 2 * bits], np.int64)
                    xs, ys = np.meshgrid(x, ys.astype(dtype))
                args = [xs.ravel(), ys.ravel()]
                src = f"lambda ns, x, y: ns.lax_.{name}(x, y)"
            yield fn_case(
                f"lax.{name}/{short(dtype)}/special-values",
                lambda ns, *a, _n=name: getattr(ns.lax_, _n)(*a),
                args,
                expect=AGREE,
                tags=["elementwise", "lax", "edge"],
                source=src,
            )


def _complex_atan2_cases() -> Iterator[Case]:
    """JAX 0.10.2's ``lax.atan2`` (and so ``jnp.arctan2``) takes complex
    operands: values and the holomorphic derivative (issue 29's operator sweep)."""
    x = np.array([1 + 1j, 2 - 0.5j, -1 + 0.3j, 0.5j], np.complex64)
    y = np.array([0.5 + 0.2j, 1j, -2 + 0j, 1.5 - 1j], np.complex64)
    yield fn_case(
        "lax.atan2/c64/complex-operands",
        lambda ns, x, y: ns.lax_.atan2(x, y),
        [x, y],
        expect=AGREE,
        tags=["elementwise", "lax"],
        tolerance=APPROX,
        source="lambda ns, x, y: ns.lax_.atan2(x, y)",
    )
    yield fn_case(
        "lax.atan2/c64/complex-operands-grad",
        lambda ns, x, y: ns.api.grad(lambda a, b: ns.np_.real(ns.np_.arctan2(a, b)).sum(), (0, 1))(
            x, y
        ),
        [x, y],
        expect=AGREE,
        tags=["elementwise", "lax", "ad"],
        tolerance=APPROX,
        source="lambda ns, x, y: grad(lambda a, b: real(arctan2(a, b)).sum(), (0, 1))(x, y)",
    )


def _grad_of_rejected_operand_cases() -> Iterator[Case]:
    """A primitive without a derivative rule, given operands it rejects, under
    ``grad``: JAX 0.10.2 reports the operands (TypeError) before the missing
    rule (NotImplementedError); so do both backends."""
    yield fn_case(
        "lax.nextafter/c64/grad-reports-the-dtype-first",
        lambda ns, x: ns.api.grad(lambda a: ns.np_.real(ns.np_.nextafter(a, a)).sum())(x),
        [np.array([1 + 1j, 2.0], np.complex64)],
        mode="eager",
        expect=Raises(TypeError),
        tags=["elementwise", "ad", "errors"],
        source="lambda ns, x: grad(lambda a: real(nextafter(a, a)).sum())(x)",
    )


# --- select_n, clamp, convert_element_type ---------------------------------------------------


def _select_clamp_cases() -> Iterator[Case]:
    for dtype in (F32, I32, BOOL, BF16_ := np.dtype("bfloat16")):
        name = f"lax.select/{short(dtype)}/(3,4)"
        rng = rng_for(name)
        pred = sample(rng, (3, 4), BOOL)
        a, b = sample(rng, (3, 4), dtype), sample(rng, (3, 4), dtype)
        yield fn_case(
            name,
            lambda ns, p, a, b: ns.lax_.select(p, a, b),
            [pred, a, b],
            oracle=lambda p, a, b: np.where(p, a, b),
            tags=["elementwise", "lax"] + (["quick"] if dtype == F32 else []),
        )
    del BF16_
    name = "lax.select_n/f32/int32-which-3-cases"
    rng = rng_for(name)
    which = rng.integers(0, 3, (3, 4)).astype(np.int32)
    cases = [sample(rng, (3, 4), F32) for _ in range(3)]
    yield fn_case(
        name,
        lambda ns, w, a, b, c: ns.lax_.select_n(w, a, b, c),
        [which, *cases],
        oracle=lambda w, a, b, c: np.choose(w, [a, b, c]),
        tags=["elementwise", "lax"],
    )
    name = "lax.select/f32/scalar-pred"
    yield fn_case(
        name,
        lambda ns, p, a, b: ns.lax_.select(p, a, b),
        [np.array(True), *(sample(rng_for(name), (3,), F32) for _ in range(2))],
        oracle=lambda p, a, b: np.where(p, a, b),
        tags=["elementwise", "lax"],
    )
    for dtype in (F32, I32, U8):
        name = f"lax.clamp/{short(dtype)}/(3,4)"
        rng = rng_for(name)
        x = sample(rng, (3, 4), dtype)
        lo, hi = np.array(2, dtype), np.array(10, dtype)
        yield fn_case(
            name,
            lambda ns, lo, x, hi: ns.lax_.clamp(lo, x, hi),
            [lo, x, hi],
            oracle=lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
            tags=["elementwise", "lax"],
        )
    name = "lax.clamp/f32/array-bounds"
    rng = rng_for(name)
    x, lo = sample(rng, (5,), F32), sample(rng, (5,), F32, Domain(-3, -1))
    hi = sample(rng, (5,), F32, Domain(1, 3))
    yield fn_case(
        name,
        lambda ns, lo, x, hi: ns.lax_.clamp(lo, x, hi),
        [lo, x, hi],
        oracle=lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
        tags=["elementwise", "lax"],
    )


CONVERT_DTYPES = (BOOL, I8, U8, I32, U32, F16, np.dtype("bfloat16"), F32, C64)


def _convert_cases() -> Iterator[Case]:
    for src in CONVERT_DTYPES:
        for dst in CONVERT_DTYPES:
            name = f"lax.convert_element_type/{short(src)}->{short(dst)}"
            rng = rng_for(name)
            domain = Domain(-40.0, 300.0, -40, 300) if dst.kind in "iub" else ANYWHERE
            x = sample(rng, (12,), src, domain)
            yield fn_case(
                name,
                lambda ns, x, _d=dst: ns.lax_.convert_element_type(x, _d),
                [x],
                oracle=lambda x, _d=dst: convert(x, _d),
                tags=["elementwise", "lax", "convert"] + (["quick"] if src == F32 else []),
                source=f"lambda ns, x: ns.lax_.convert_element_type(x, {dst.name})",
            )
    for src in (F32, F16):
        x = special_floats(src)
        for dst in (I32, U8, I8, U32, BOOL, F16, F32):
            yield fn_case(
                f"lax.convert_element_type/{short(src)}->{short(dst)}/special-values",
                lambda ns, x, _d=dst: ns.lax_.convert_element_type(x, _d),
                [x],
                expect=AGREE,
                tags=["elementwise", "lax", "convert", "edge"],
                source=f"lambda ns, x: ns.lax_.convert_element_type(x, {dst.name})",
            )


def cases() -> Iterator[Case]:
    for op in UNARY_OPS + BINARY_OPS:
        yield from _op_cases(op)
    yield from _edge_cases()
    yield from _complex_atan2_cases()
    yield from _grad_of_rejected_operand_cases()
    yield from _select_clamp_cases()
    yield from _convert_cases()
