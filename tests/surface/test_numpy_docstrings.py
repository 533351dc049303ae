"""refimpl.numpy's public functions are documented as JAX 0.10.2's own
``test_lax_numpy_docstrings`` asks of ``jax.numpy`` (tests/lax_numpy_test.py):
an ``Args:``, ``Returns:`` and ``Examples:`` section, or ``Alias of`` for the
aliases. Every ``Examples:`` section runs as a doctest, and where the function
is also NumPy's, the same example run with NumPy in place of refimpl.numpy
must give the values the docstring prints (NumPy is the reference the
examples were written from; float32 results agree to float32 precision)."""

from __future__ import annotations

import doctest
import math
import warnings

import ml_dtypes
import numpy as np

import refimpl.numpy as rnp

# --- JAX's test_lax_numpy_docstrings, over refimpl.numpy -------------------------------

UNIMPLEMENTED = ["fromfile", "fromiter"]
ALIASES = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "amax", "amin",
    "around", "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_right_shift",
    "conj", "degrees", "divide", "get_printoptions", "mod", "pow", "printoptions", "radians",
    "round_", "set_printoptions",
]  # fmt: skip
SKIP_ARGS_CHECK = ["vsplit", "hsplit", "dsplit", "array_split"]
NO_EXAMPLES_NEEDED = ["frompyfunc", "isdtype", "promote_types"]


def _checked_functions() -> list[str]:
    """The names JAX's test checks: public callables that are neither classes
    nor NumPy's own objects (nor left unimplemented)."""
    names = []
    for name in dir(rnp):
        if name.startswith("_") or name in UNIMPLEMENTED:
            continue
        obj = getattr(rnp, name)
        if isinstance(obj, type) or not callable(obj):
            continue
        if hasattr(np, name) and obj is getattr(np, name):
            continue
        names.append(name)
    return names


def _problem(name: str) -> str | None:
    """What JAX's test would fail on for ``rnp.<name>``, or None."""
    doc = getattr(rnp, name).__doc__ or ""
    if name in ALIASES:
        return None if "Alias of" in doc else "no 'Alias of'"
    if name in SKIP_ARGS_CHECK:
        return None
    missing = [s for s in ("Args:", "Returns:") if s not in doc]
    if name not in NO_EXAMPLES_NEEDED and "Examples:" not in doc:
        missing.append("Examples:")
    return f"no {', '.join(missing)}" if missing else None


def test_lax_numpy_docstrings():
    problems = {n: p for n in _checked_functions() if (p := _problem(n)) is not None}
    assert not problems, f"{len(problems)} functions lack sections: {problems}"


# --- the examples run ------------------------------------------------------------------

_FINDER = doctest.DocTestFinder(recurse=False)


def _with_examples() -> list[str]:
    return [n for n in _checked_functions() if "Examples:" in (getattr(rnp, n).__doc__ or "")]


def test_examples_run():
    """Every example runs and prints what it says (one test over all the
    functions: the default run's sampling of parametrized tests would skip
    most of them)."""
    failures = {}
    for name in _with_examples():
        report: list[str] = []
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        for test in _FINDER.find(getattr(rnp, name), f"rnp.{name}", globs={}):
            runner.run(test, out=report.append)
        if runner.tries == 0:
            failures[name] = "its Examples: section has no example"
        elif runner.failures:
            failures[name] = "".join(report)
    assert not failures, "\n".join(f"rnp.{n}: {r}" for n, r in failures.items())


# --- and agree with NumPy ---------------------------------------------------------------

# Functions of NumPy's whose examples do not run under NumPy as written, or
# where refimpl differs from NumPy on purpose (the docstring says so).
_WRITES_IN_PLACE = (
    "NumPy's writes into its argument and returns None (JAX's needs inplace=False and returns "
    "the copy)"
)
NOT_CROSS_CHECKED: dict[str, str] = {
    "einsum_path": "NumPy's path starts with 'einsum_path' and is its own optimizer's (refimpl's "
    "is the greedy order of its einsum)",
    "empty": "NumPy's values are uninitialized memory; refimpl's (as JAX's) are zeros",
    "empty_like": "NumPy's values are uninitialized memory; refimpl's (as JAX's) are zeros",
    "fill_diagonal": _WRITES_IN_PLACE,
    "frompyfunc": "NumPy's ufuncs from frompyfunc compute on Python objects (object arrays)",
    "place": _WRITES_IN_PLACE,
    "polydiv": "refimpl's remainder (JAX's) keeps the dividend's length; NumPy's is trimmed",
    "put": _WRITES_IN_PLACE,
    "put_along_axis": _WRITES_IN_PLACE,
    "unique_values": "NumPy 2.4's leaves the order of the values open (refimpl's and JAX's "
    "sort them)",
}
# Examples of JAX's own arguments (size=, descending=...), dtypes or rules,
# which NumPy's functions lack or treat otherwise (the docstrings say so): an
# example whose source holds one of these strings runs as a doctest only.
JAX_ONLY_EXAMPLES: dict[str, tuple[str, ...]] = {
    "argsort": ("descending=",),
    "bincount": ("length=",),
    "finfo": ("bfloat16",),
    "isscalar": ("rnp.array(3.0)",),  # a rank-0 array is a scalar in JAX
    "issubdtype": ("bfloat16",),
    "nonzero": ("size=",),
    "repeat": ("total_repeat_length=",),
    "result_type": ("1.0)",),  # a Python float is weak in JAX
    "setdiff1d": ("size=",),
    "sort": ("descending=",),
    "take": ("[0, 5]",),  # out of range: a fill, NumPy's IndexError
    "take_along_axis": ("[2, 5, -1]",),  # out of range: a fill, NumPy's IndexError
    "unique": ("size=",),
}
# Functions whose results differ from NumPy's in the kind of dtype on purpose
# (the docstring says so): their values are compared, not the kinds.
KIND_DIFFERS: dict[str, str] = {
    "histogram": "the counts are floats, as JAX's; NumPy's are integers unless weighted",
    "histogram2d": "the unweighted counts are int32, as JAX's; NumPy's are floats",
    "histogramdd": "the unweighted counts are int32, as JAX's; NumPy's are floats",
}


def _numpy_value(text: str) -> object:
    """A printed result (a refimpl ``Array(...)`` repr, a tuple of them, a
    Python value) as NumPy values."""

    def array(value, dtype=None, weak_type=False):
        return np.asarray(value, dtype=dtype)

    namespace = {
        "Array": array,
        "array": array,
        "dtype": np.dtype,
        "nan": np.nan,
        "inf": np.inf,
        "bool": np.bool_,
        "bfloat16": ml_dtypes.bfloat16,
        "np": np,
    }
    for dtype in (
        "int4 int8 int16 int32 int64 uint4 uint8 uint16 uint32 uint64 float16 float32 float64 "
        "complex64 complex128"
    ).split():
        namespace[dtype] = getattr(np, dtype, None) or getattr(ml_dtypes, dtype)
    return eval(text.replace("<BLANKLINE>", ""), namespace)


def _agree(actual: object, expected: object, kinds: bool = True) -> bool:
    """Whether NumPy's ``actual`` has the values (and, with ``kinds``, the kind
    of dtype: bool, int, float...) of the printed ``expected``."""
    if isinstance(expected, tuple | list):
        return (
            isinstance(actual, tuple | list)
            and len(actual) == len(expected)
            and all(_agree(a, e, kinds) for a, e in zip(actual, expected))
        )
    if isinstance(expected, np.ndarray | np.generic):
        actual = np.asarray(actual)
        if actual.shape != expected.shape:
            return False
        if kinds and actual.dtype.kind != expected.dtype.kind:
            return False
        if expected.dtype.kind in "fc":
            return bool(np.allclose(actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True))
        return bool(np.array_equal(actual, expected))
    if isinstance(expected, float):
        return math.isclose(actual, expected, rel_tol=1e-6)
    return actual == expected


def _cross_checked() -> list[str]:
    return [n for n in _with_examples() if hasattr(np, n) and n not in NOT_CROSS_CHECKED]


def _disagreement(name: str) -> str | None:
    """Where NumPy, running ``rnp.<name>``'s examples in refimpl.numpy's place,
    prints other values than the docstring; None if nowhere."""
    examples = doctest.DocTestParser().get_examples(getattr(rnp, name).__doc__)
    namespace: dict[str, object] = {}
    compared = 0
    for example in examples:
        if any(marker in example.source for marker in JAX_ONLY_EXAMPLES.get(name, ())):
            continue
        source = example.source.replace("import refimpl.numpy as", "import numpy as")
        # (NumPy's warnings, such as cross's deprecation of 2-vectors, are not ours)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                if not example.want:
                    exec(source, namespace)
                    continue
                actual = eval(source, namespace)
            except Exception as error:
                return f"{example.source.strip()!r}: NumPy raises {error!r}"
        if not _agree(actual, _numpy_value(example.want), kinds=name not in KIND_DIFFERS):
            source = example.source.strip()
            return f"{source!r}: NumPy gives {actual!r}, the docstring {example.want!r}"
        compared += 1
    return None if compared else "no example prints a value"


def test_examples_agree_with_numpy():
    disagreements = {n: d for n in _cross_checked() if (d := _disagreement(n)) is not None}
    assert not disagreements, "\n".join(f"rnp.{n}: {d}" for n, d in disagreements.items())
