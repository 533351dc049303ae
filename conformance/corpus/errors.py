"""Bad operands: every public op given a non-array -> TypeError naming the
position; mismatched shapes and dtypes -> errors naming both."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from conformance.case import Case, Raw, fn_case
from conformance.observe import Raises

BAD_VALUES = {"tuple": (1, 2), "str": "abc", "none": None, "object": object(), "list": [1.0, 2.0]}
LAX_BINARY = ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "eq", "lt"]
LAX_UNARY = ["neg", "exp", "sin", "abs", "floor", "sqrt", "tanh"]
NP_BINARY = ["add", "multiply", "subtract", "maximum", "less", "divide", "power"]
NP_UNARY = ["sin", "exp", "negative", "abs", "sqrt", "sum", "argmax", "reshape-like"]

# Where the position is part of the message (JAX: "passed to add at position 1")
POSITION_1 = r"position 1"
POSITION_0 = r"position 0"
# jax.numpy words it "Error interpreting argument ... The problematic value is of type <str>
# and was passed to the function at path y", and reads a str as a dtype name in power
NP_POSITION_1 = {"*": POSITION_1, "jax": r"position 1|problematic value|not understood"}


def _x() -> np.ndarray:
    return np.array([1.0, 2.0], np.float32)


def _bad_operand_cases() -> Iterator[Case]:
    for op in LAX_BINARY:
        for label, bad in BAD_VALUES.items():
            yield fn_case(
                f"errors.lax-bad-operand/{op}/{label}",
                lambda ns, x, b, _op=op: getattr(ns.lax_, _op)(x, b),
                [_x(), Raw(bad)],
                mode="eager",
                expect=Raises(TypeError, POSITION_1),
                tags=["errors"] + (["quick"] if op == "add" else []),
                source=f"lambda ns, x, b: ns.lax_.{op}(x, b)  # b = {bad!r}",
            )
        yield fn_case(
            f"errors.lax-bad-operand/{op}/str-first-under-jit",
            lambda ns, x, _op=op: getattr(ns.lax_, _op)("abc", x),
            [_x()],
            expect=Raises(TypeError, POSITION_0),
            tags=["errors"],
        )
    for op in LAX_UNARY:
        for label in ("tuple", "str", "none"):
            yield fn_case(
                f"errors.lax-bad-operand/{op}/{label}",
                lambda ns, b, _op=op: getattr(ns.lax_, _op)(b),
                [Raw(BAD_VALUES[label])],
                mode="eager",
                expect=Raises(TypeError),
                tags=["errors"],
            )
    for fn in NP_BINARY:
        for label in ("str", "none", "object"):
            yield fn_case(
                f"errors.np-bad-operand/{fn}/{label}",
                lambda ns, x, b, _fn=fn: getattr(ns.np_, _fn)(x, b),
                [_x(), Raw(BAD_VALUES[label])],
                mode="eager",
                expect=Raises(TypeError, NP_POSITION_1),
                tags=["errors"],
            )
    for fn in ("sin", "exp", "negative", "sum"):
        yield fn_case(
            f"errors.np-bad-operand/{fn}/str",
            lambda ns, b, _fn=fn: getattr(ns.np_, _fn)(b),
            [Raw("abc")],
            mode="eager",
            expect=Raises(TypeError),
            tags=["errors"],
        )


def _shape_dtype_cases() -> Iterator[Case]:
    a23 = np.ones((2, 3), np.float32)
    a32 = np.ones((3, 2), np.float32)
    yield fn_case(
        "errors.shapes/lax-add-mismatch",
        lambda ns, x, y: ns.lax_.add(x, y),
        [a23, a32],
        expect=Raises(TypeError, r"\(2, 3\).*\(3, 2\)|shapes"),
        tags=["errors", "quick"],
    )
    yield fn_case(
        "errors.shapes/lax-add-rank-mismatch",
        lambda ns, x, y: ns.lax_.add(x, y),
        [a23, np.ones(3, np.float32)],
        expect=Raises(TypeError, r"shapes|dimensions"),
        tags=["errors"],
    )
    yield fn_case(
        "errors.shapes/np-add-not-broadcastable",
        lambda ns, x, y: ns.np_.add(x, y),
        [a23, np.ones(4, np.float32)],
        expect=Raises(TypeError, r"\(2, 3\).*\(4,\)"),
        tags=["errors"],
        notes="SPEC/preamble: shape errors are TypeError; jax raises ValueError here",
    )
    yield fn_case(
        "errors.dtypes/lax-add-f32-i32",
        lambda ns, x, y: ns.lax_.add(x, y),
        [a23, np.ones((2, 3), np.int32)],
        expect=Raises(TypeError, r"float32.*int32|same dtype"),
        tags=["errors", "quick"],
    )
    yield fn_case(
        "errors.dtypes/lax-sin-int",
        lambda ns, x: ns.lax_.sin(x),
        [np.ones(3, np.int32)],
        expect=Raises(TypeError, r"int32"),
        tags=["errors"],
    )
    yield fn_case(
        "errors.dtypes/lax-bitwise-and-float",
        lambda ns, x: ns.lax_.bitwise_and(x, x),
        [np.ones(3, np.float32)],
        expect=Raises(TypeError, r"float32"),
        tags=["errors"],
    )
    yield fn_case(
        "errors.dtypes/lax-shift-float",
        lambda ns, x: ns.lax_.shift_left(x, x),
        [np.ones(3, np.float32)],
        expect=Raises(TypeError, r"float32"),
        tags=["errors"],
    )
    yield fn_case(
        "errors.dtypes/lax-pow-int",
        lambda ns, x: ns.lax_.pow(x, x),
        [np.ones(3, np.int32)],
        expect=Raises(TypeError, r"int32"),
        tags=["errors"],
    )
    yield fn_case(
        "errors.shapes/reshape-bad-size",
        lambda ns, x: ns.lax_.reshape(x, (4, 2)),
        [a23],
        expect=Raises(ValueError, r"reshape"),
        tags=["errors"],
    )
    for mode in ("jit", "eager"):
        # jnp.reshape of an array (not a NumPy one) to a wrong size: JAX's TypeError
        yield fn_case(
            f"errors.shapes/np-reshape-bad-size/{mode}",
            lambda ns, x: ns.np_.reshape(x, (5, -1)),
            [a23],
            expect=Raises(TypeError, r"reshape"),
            tags=["errors"],
            mode=mode,
        )
    yield fn_case(
        "errors.shapes/broadcast_in_dim-bad",
        lambda ns, x: ns.lax_.broadcast_in_dim(x, (4, 3), (0, 1)),
        [a23],
        expect=Raises(TypeError, r"broadcast"),
        tags=["errors"],
    )
    yield fn_case(
        "errors.values/integer_pow-float-exponent",
        lambda ns, x: ns.lax_.integer_pow(x, 2.5),
        [a23],
        expect=Raises(TypeError),
        tags=["errors"],
    )
    yield fn_case(
        "errors.values/convert-to-str-dtype",
        lambda ns, x: ns.lax_.convert_element_type(x, "not-a-dtype"),
        [a23],
        expect=Raises(TypeError),
        tags=["errors"],
    )


def _scan_length_cases() -> Iterator[Case]:
    # issue 29: scan's length errors begin with JAX 0.10.2's exact words,
    # which programs and their tests match
    a3, a4 = np.zeros(3, np.float32), np.zeros(4, np.float32)
    yield fn_case(
        "errors.scan/leading-sizes-differ-words",
        lambda ns, x, y: ns.lax_.scan(lambda c, v: (c, v), 0.0, (x, y)),
        [a3, a4],
        expect=Raises(ValueError, r"^scan got values with different leading axis sizes: 3, 4\."),
        tags=["errors"],
        mode="eager",
    )
    yield fn_case(
        "errors.scan/length-disagrees-words",
        lambda ns, x: ns.lax_.scan(lambda c, v: (c, v), 0.0, x, length=5),
        [a3],
        expect=Raises(
            ValueError,
            r"^scan got `length` argument of 5 which disagrees with leading axis sizes \[3\]\.",
        ),
        tags=["errors"],
        mode="eager",
    )
    yield fn_case(
        "errors.scan/no-values-no-length-words",
        lambda ns, x: ns.lax_.scan(lambda c, v: (c, v), x, None),
        [a3],
        expect=Raises(ValueError, r"^scan got no values to scan over and `length` not provided\."),
        tags=["errors"],
        mode="eager",
    )


def cases() -> Iterator[Case]:
    yield from _bad_operand_cases()
    yield from _shape_dtype_cases()
    yield from _scan_length_cases()
