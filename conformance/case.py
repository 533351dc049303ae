"""Cases: data plus a function written against the neutral ``Namespace``.

Two ways to write one:

``fn_case(name, fn, args, oracle=...)`` -- the common form. ``fn(ns, *args)``
is called (under ``ns.jit`` by default, or eagerly with ``mode="eager"``) on
``args``: NumPy arrays become arrays of the implementation, Python scalars
stay Python scalars (so they are weakly typed), ``Raw(x)`` passes ``x``
unchanged. ``oracle(*args)`` computes the expected result with NumPy.

``script_case(name, script, expect=...)`` -- for sequences of calls,
donation, trace counts and anything else. ``script(ns)`` does whatever it
likes and returns a pytree of observations (arrays, Python values,
``ns.capture(...)`` results).

The expectation is one of:

* ``AGREE`` -- every implementation must agree with the reference (``ref``);
* an ``Oracle`` (a callable returning the expected pytree, built from NumPy);
* ``Raises(ExcType, key)`` -- the run must raise (a leaf may also be one);
* a constant pytree of expected values.
"""

from __future__ import annotations

import functools
import inspect
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from conformance.compare import Tolerance
from conformance.namespace import Namespace


class _Agree:
    def __repr__(self) -> str:
        return "AGREE"


AGREE = _Agree()


@dataclass(frozen=True)
class Oracle:
    """Expected result computed on demand (NumPy only, never the code under test)."""

    compute: Callable[[], Any]


@dataclass(frozen=True)
class Raw:
    """An argument passed to the function exactly as is (e.g. a NumPy array)."""

    value: Any


@dataclass(frozen=True)
class Case:
    """One conformance case.

    ``run(ns)`` produces the observed pytree; ``expect`` says what it should
    be. ``requires`` lists features (dotted Namespace paths such as
    ``"lax_.scan"``, or probe names such as ``"donation"``) without which
    the case is skipped on an implementation. ``tags`` select subsets
    (``quick``, a family name, ...). ``source`` is shown in reports.
    """

    name: str
    run: Callable[[Namespace], Any]
    expect: Any = AGREE
    tags: frozenset[str] = frozenset()
    requires: tuple[str, ...] = ()
    tolerance: Tolerance | None = None
    x64: bool = False
    source: str = ""
    notes: str = ""

    @property
    def group(self) -> str:
        return self.name.split("/", 1)[0]


def fn_case(
    name: str,
    fn: Callable[..., Any],
    args: Sequence[Any] = (),
    *,
    oracle: Callable[..., Any] | None = None,
    expect: Any = None,
    mode: str = "jit",
    jit_kwargs: dict[str, Any] | None = None,
    tags: Sequence[str] = (),
    requires: Sequence[str] = (),
    tolerance: Tolerance | None = None,
    x64: bool = False,
    notes: str = "",
    source: str | None = None,
) -> Case:
    """A case running ``fn(ns, *args)`` (jitted unless ``mode="eager"``).

    Give ``oracle`` (called with the same args, NumPy arrays as they are) or
    ``expect`` (``AGREE``, ``Raises(...)``, a constant); neither means AGREE.
    """
    if mode not in ("jit", "eager"):
        raise ValueError(f"fn_case {name}: mode must be 'jit' or 'eager', got {mode!r}")
    args = tuple(args)
    jit_kwargs = dict(jit_kwargs or {})

    def run(ns: Namespace) -> Any:
        call_args = [_convert_arg(ns, a) for a in args]
        f = functools.partial(fn, ns)
        if mode == "jit":
            f = ns.jit(f, **jit_kwargs)
        return f(*call_args)

    if oracle is not None:
        expectation = Oracle(lambda: oracle(*[_raw(a) for a in args]))
    else:
        expectation = AGREE if expect is None else expect
    return Case(
        name=name,
        run=run,
        expect=expectation,
        tags=frozenset(tags) | {mode},
        requires=tuple(requires),
        tolerance=tolerance,
        x64=x64,
        source=_describe_call(fn, args, mode, jit_kwargs, source),
        notes=notes,
    )


def script_case(
    name: str,
    script: Callable[[Namespace], Any],
    *,
    expect: Any = AGREE,
    tags: Sequence[str] = (),
    requires: Sequence[str] = (),
    tolerance: Tolerance | None = None,
    x64: bool = False,
    notes: str = "",
) -> Case:
    """A case whose ``script(ns)`` returns the observed pytree."""
    if callable(expect) and not isinstance(expect, (Oracle, type)):
        expect = Oracle(expect)
    return Case(
        name=name,
        run=script,
        expect=expect,
        tags=frozenset(tags) | {"script"},
        requires=tuple(requires),
        tolerance=tolerance,
        x64=x64,
        source=_source_of(script),
        notes=notes,
    )


def _convert_arg(ns: Namespace, arg: Any) -> Any:
    if isinstance(arg, Raw):
        return arg.value
    if isinstance(arg, np.ndarray):
        return ns.asarray(arg)
    return arg


def _raw(arg: Any) -> Any:
    return arg.value if isinstance(arg, Raw) else arg


def _source_of(fn: Callable[..., Any]) -> str:
    if isinstance(fn, functools.partial):
        # the function's text and the bound arguments: a partial's repr holds the
        # function's address, which would make the recorded fingerprint per process
        bound = [repr(a) for a in fn.args] + [f"{k}={v!r}" for k, v in fn.keywords.items()]
        return f"{_source_of(fn.func)}\n# partial({', '.join(bound)})"
    try:
        return inspect.getsource(fn).strip()
    except (OSError, TypeError):
        return getattr(fn, "__name__", repr(fn))


def _describe_call(
    fn: Callable[..., Any], args: tuple[Any, ...], mode: str, jit_kwargs: dict, source: str | None
) -> str:
    shown = ", ".join(describe_value(a) for a in args)
    jit = f"jit({', '.join(f'{k}={v!r}' for k, v in jit_kwargs.items())})" if mode == "jit" else ""
    return f"{source or _source_of(fn)}\n# called {mode} {jit} on ({shown})"


def describe_value(value: Any) -> str:
    value = _raw(value)
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name}{list(value.shape)}"
    return repr(value)


# --- deterministic inputs --------------------------------------------------------------

FLOAT_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
INT_DTYPES = [np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.uint32)]
COMPLEX_DTYPES = [np.dtype(np.complex64)]
BOOL = np.dtype(bool)


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded by the case name: inputs are stable run to run."""
    return np.random.default_rng(zlib.crc32(name.encode()))


@dataclass(frozen=True)
class Domain:
    """Where sample values come from: a float range and an int range."""

    low: float = -3.0
    high: float = 3.0
    int_low: int = -20
    int_high: int = 20
    nonzero: bool = False
    special: tuple[float, ...] = field(default=())


ANYWHERE = Domain()
POSITIVE = Domain(0.05, 4.0, 1, 20)
UNIT = Domain(-0.95, 0.95, -1, 1)
NONZERO = Domain(-3.0, 3.0, -20, 20, nonzero=True)
SMALL = Domain(-1.5, 1.5, -4, 4)
ABOVE_ONE = Domain(1.05, 4.0, 1, 20)


def sample(rng: np.random.Generator, shape: Sequence[int], dtype: Any, domain: Domain = ANYWHERE):
    """A NumPy array of ``shape`` and ``dtype`` with values from ``domain``."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low = max(domain.int_low, int(info.min))
        high = min(domain.int_high, int(info.max))
        values = rng.integers(low, high + 1, size=shape, dtype=np.int64)
        if domain.nonzero:
            values = np.where(values == 0, max(1, low) if high >= 1 else -1, values)
        return values.astype(dtype)
    if dtype.kind == "c":
        real = _floats(rng, shape, domain)
        imag = _floats(rng, shape, domain)
        return (real + 1j * imag).astype(dtype)
    return _floats(rng, shape, domain).astype(dtype)


def _floats(rng: np.random.Generator, shape: tuple[int, ...], domain: Domain) -> np.ndarray:
    values = rng.uniform(domain.low, domain.high, size=shape)
    if domain.nonzero:
        values = np.where(np.abs(values) < 0.1, 0.5, values)
    if domain.special:  # mix in the values that matter (ties for rounding, ...)
        picks = rng.choice(np.array(domain.special, np.float64), size=shape)
        values = np.where(rng.random(shape) < 0.4, picks, values)
    return values


def special_floats(dtype: Any) -> np.ndarray:
    """Edge values of a float dtype: signed zeros, infinities, NaN, extremes, tiny."""
    info = ml_dtypes.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, np.inf, -np.inf, np.nan,
              float(info.max), float(info.min), float(info.smallest_normal),
              -float(info.smallest_normal), float(info.eps), 3.0, 100.0]  # fmt: skip
    return np.array(values, dtype=np.float64).astype(dtype)


def special_ints(dtype: Any) -> np.ndarray:
    """Edge values of an integer dtype: 0, +-1, extremes and their neighbours."""
    info = np.iinfo(dtype)
    values = {0, 1, 2, 7, info.max, info.max - 1, info.min, info.min + 1}
    if info.min < 0:
        values |= {-1, -2, -7}
    return np.array(sorted(values), dtype=np.int64).astype(dtype)
