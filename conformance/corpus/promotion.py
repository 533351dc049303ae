"""Type promotion with weak types: every dtype pair, arrays and Python scalars.

What the result dtype and weak type of ``np_.add`` are for each pair is
JAX's lattice: the array/scalar pair cases take their expectation from
``conformance.lattice`` (the lattice written down independently of refimpl,
checked against ``jax.numpy.result_type`` by a test) with the value computed
by NumPy in the promoted dtype, so a wrong promotion rule fails on every
implementation, jax or no jax. The remaining cases (weak arrays, lax
scalars, comparisons) are ``AGREE``: judged against live jax, or JAX's
recorded results (``conformance.recorded``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from conformance import lattice
from conformance.case import AGREE, Case, fn_case, rng_for, sample, script_case
from conformance.corpus._tables import BF16, BOOL, C64, F16, F32, I8, I16, I32, U8, U32, short
from conformance.observe import Weak

PROMOTION_DTYPES = (BOOL, U8, U32, I8, I16, I32, F16, BF16, F32, C64)
SCALARS = {"bool": True, "int": 3, "float": 2.5, "complex": 1.5 + 2j}


def _add(ns, x, y):
    return ns.np_.add(x, y)


def _operand(value, x64: bool):
    if isinstance(value, np.ndarray):
        return value.dtype, False
    return lattice.python_scalar_operand(value, x64)


def _lattice_oracle(op, x64: bool = False, constants: tuple = ()):
    """``op`` computed by NumPy in the dtype JAX's lattice promotes the operands
    (the case's arguments, then ``constants``) to."""

    def oracle(*args):
        operands = args + constants
        dtype, weak = lattice.result_type(*(_operand(v, x64) for v in operands), x64=x64)
        with np.errstate(all="ignore"):
            value = op(*(np.asarray(v).astype(dtype) for v in operands))
        value = np.asarray(value, dtype)
        return Weak(value) if weak else value

    return oracle


def _pair_cases() -> Iterator[Case]:
    for i, a in enumerate(PROMOTION_DTYPES):
        for b in PROMOTION_DTYPES[i:]:
            name = f"promotion.array-array/{short(a)}+{short(b)}"
            rng = rng_for(name)
            yield fn_case(
                name,
                _add,
                [sample(rng, (3,), a), sample(rng, (3,), b)],
                oracle=_lattice_oracle(np.add),
                tags=["promotion"] + (["quick"] if a == I8 else []),
                source="lambda ns, x, y: ns.np_.add(x, y)",
            )


def _scalar_cases() -> Iterator[Case]:
    for dtype in PROMOTION_DTYPES:
        for label, scalar in SCALARS.items():
            name = f"promotion.array-scalar/{short(dtype)}+{label}"
            x = sample(rng_for(name), (3,), dtype)
            # the scalar is a jit argument: a weakly typed tracer
            yield fn_case(
                name,
                _add,
                [x, scalar],
                oracle=_lattice_oracle(np.add),
                tags=["promotion"],
                source="lambda ns, x, y: ns.np_.add(x, y)",
            )
            # the scalar is a constant inside the function
            yield fn_case(
                f"promotion.array-const/{short(dtype)}+{label}",
                lambda ns, x, _s=scalar: ns.np_.multiply(x, _s),
                [x],
                oracle=_lattice_oracle(np.multiply, constants=(scalar,)),
                tags=["promotion"] + (["quick"] if dtype == U8 else []),
                source=f"lambda ns, x: ns.np_.multiply(x, {scalar!r})",
            )


def _weak_weak_cases() -> Iterator[Case]:
    for la, a in SCALARS.items():
        for lb, b in SCALARS.items():
            yield fn_case(
                f"promotion.scalar-scalar/{la}+{lb}",
                _add,
                [a, b],
                oracle=_lattice_oracle(np.add),
                tags=["promotion", "weak"],
                source="lambda ns, x, y: ns.np_.add(x, y)",
            )


def _weak_array_cases() -> Iterator[Case]:
    """A weakly typed *array* (a jit output of Python scalars) meets a strong array."""
    for dtype in (U8, I8, I32, F16, BF16, F32, BOOL):
        for label, scalar in (("int", 3), ("float", 2.5)):
            name = f"promotion.weak-array/{label}+{short(dtype)}"
            x = sample(rng_for(name), (3,), dtype)

            def script(ns, _s=scalar, _x=x):
                weak = ns.jit(lambda s: s * 1)(_s)
                out = ns.jit(lambda w, a: ns.np_.add(w, a))(weak, ns.asarray(_x))
                return {"weak_input_is_weak": ns.weak_type(weak), "sum": out}

            yield script_case(name, script, expect=AGREE, tags=["promotion", "weak"])


def _lax_scalar_cases() -> Iterator[Case]:
    """lax ops take Python scalars of a compatible kind (weakly typed)."""
    combos = [(F32, 2.0), (F32, 2), (BF16, 0.5), (I32, 3), (U8, 7), (I32, 2.5), (BOOL, True)]
    for dtype, scalar in combos:
        name = f"promotion.lax-scalar/{short(dtype)}+{type(scalar).__name__}"
        x = sample(rng_for(name), (3,), dtype)
        yield fn_case(
            name,
            lambda ns, x, _s=scalar: ns.lax_.add(x, _s) if x.dtype != bool else ns.lax_.max(x, _s),
            [x],
            expect=AGREE,
            tags=["promotion", "lax"],
            source=f"lambda ns, x: ns.lax_.add(x, {scalar!r})",
        )
    for scalar in (2.0, 3, True):
        yield fn_case(
            f"promotion.lax-scalar/eager-{type(scalar).__name__}-only",
            lambda ns, _s=scalar: ns.lax_.mul(_s, _s),
            [],
            mode="eager",
            expect=AGREE,
            tags=["promotion", "lax", "weak"],
        )


def _weak_comparison_cases() -> Iterator[Case]:
    """Comparisons and predicates of weakly typed operands (found by the fuzzer: in
    JAX the bool result of a comparison is weak when every operand is)."""
    programs = {
        "lax.gt": lambda ns, a, b: ns.lax_.gt(a, b),
        "lax.eq": lambda ns, a, b: ns.lax_.eq(a, b),
        "np.greater": lambda ns, a, b: ns.np_.greater(a, b),
        "np.equal": lambda ns, a, b: ns.np_.equal(a, b),
        "np.logical_and": lambda ns, a, b: ns.np_.logical_and(a, b),
        "lax.is_finite": lambda ns, a, b: ns.lax_.is_finite(a),
        "np.isnan": lambda ns, a, b: ns.np_.isnan(a),
    }
    for label, program in programs.items():
        for mode in ("jit", "eager"):
            yield fn_case(
                f"promotion.weak-comparison/{label}" + ("/eager" if mode == "eager" else ""),
                program,
                [1.5, 2.5],
                mode=mode,
                expect=AGREE,
                tags=["promotion", "weak"] + (["quick"] if label == "lax.gt" else []),
            )
    yield fn_case(
        "promotion.weak-comparison/strong-and-weak",
        lambda ns, a, b: ns.np_.greater(a, b),
        [np.float32(1.5), 2.5],
        expect=AGREE,
        tags=["promotion", "weak"],
    )


def _x64_cases() -> Iterator[Case]:
    """With enable_x64 the 64-bit types exist and Python scalars default to them."""
    pairs = [(np.dtype(np.int64), F32), (np.dtype(np.float64), I32), (U32, I32),
             (np.dtype(np.uint64), np.dtype(np.int64)), (F16, np.dtype(np.int64))]  # fmt: skip
    for a, b in pairs:
        name = f"promotion.x64/{short(a)}+{short(b)}"
        rng = rng_for(name)
        yield fn_case(
            name,
            _add,
            [sample(rng, (3,), a), sample(rng, (3,), b)],
            oracle=_lattice_oracle(np.add, x64=True),
            tags=["promotion", "x64"],
            x64=True,
        )
    for label, scalar in SCALARS.items():
        yield fn_case(
            f"promotion.x64/scalar-{label}",
            lambda ns, s: ns.np_.add(s, s),
            [scalar],
            oracle=_lattice_oracle(lambda s: np.add(s, s), x64=True),
            tags=["promotion", "x64", "weak"],
            x64=True,
        )
    for dtype in (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64)):
        yield fn_case(
            f"promotion.x64-off/{short(dtype)}-input-canonicalized",
            lambda ns, x: x * 1,
            [sample(rng_for(dtype.name), (3,), dtype)],
            expect=AGREE,
            tags=["promotion"],
        )


def cases() -> Iterator[Case]:
    yield from _pair_cases()
    yield from _scalar_cases()
    yield from _weak_weak_cases()
    yield from _weak_array_cases()
    yield from _lax_scalar_cases()
    yield from _weak_comparison_cases()
    yield from _x64_cases()
