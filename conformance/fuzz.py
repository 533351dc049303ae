"""Differential fuzzing: random well-typed programs run on every implementation.

A ``FuzzProgram`` is data: typed inputs (with their values) and a list of
steps, each one op applied to earlier values. It renders to Python source
written against the neutral Namespace; that source is what runs (``exec``),
so a failure prints as exactly the case that failed, ready to be saved and
replayed with ``python -m conformance --case-file FILE``.

The strategy tracks each value's shape, dtype and whether it is *exact*
(bit-identical on every implementation: inputs are multiples of 1/4, and
ops like neg/abs/max/reshape keep that). Discontinuous ops (floor, ceil,
comparisons, float->int casts, argmax) only take exact values, so an ulp of
difference from a transcendental function cannot flip a result.

Programs may run under jit or eagerly, may donate inputs, and may contain
``scan`` with a random ``unroll`` and ``reverse`` (when every implementation
has scan). Hypothesis shrinks a failing program to a minimal one.
"""

from __future__ import annotations

import functools
import importlib
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

import ml_dtypes
import numpy as np

from conformance import implementations as impls_mod
from conformance.case import AGREE, Case, fn_case  # noqa: F401 (AGREE: case files)
from conformance.compare import Tolerance, compare
from conformance.namespace import is_unsupported_error
from conformance.observe import ANY, ErrorObs, Observation, observe

F32, F16, BF16, I32, U8, BOOL = (np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16,
                                                       np.int32, np.uint8, bool))  # fmt: skip
FLOATS = (F32, F16, BF16)
INTS = (I32, U8)
DTYPES = FLOATS + INTS + (BOOL,)
DTYPE_SOURCE = {F32: "np.float32", F16: "np.float16", BF16: "ml_dtypes.bfloat16",
                I32: "np.int32", U8: "np.uint8", BOOL: "np.bool_"}  # fmt: skip

# loose: fuzzing looks for semantic differences, not the last ulps of a chain of ops
FUZZ_TOLERANCE = Tolerance(ulps={"float32": 4096, "float16": 16, "bfloat16": 16},
                           atol_eps=4096)  # fmt: skip


# --- programs as data ------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    """An input: an array (shape, dtype, flat values) or a Python scalar (shape None)."""

    shape: tuple[int, ...] | None
    dtype: np.dtype
    values: tuple[Any, ...]

    def value(self) -> Any:
        if self.shape is None:
            return self.values[0]
        return np.array(self.values, dtype=np.float64).reshape(self.shape).astype(self.dtype)

    def source(self) -> str:
        if self.shape is None:
            return repr(self.values[0])
        flat = [v if self.dtype != BOOL else bool(v) for v in self.values]
        return f"np.array({flat!r}, dtype={DTYPE_SOURCE[self.dtype]}).reshape({self.shape!r})"


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[int, ...]
    params: tuple[tuple[str, Any], ...] = ()
    n_out: int = 1


@dataclass(frozen=True)
class FuzzProgram:
    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    jit: bool = True
    donate: tuple[int, ...] = ()
    # vmapped: the steps are one member's program, run under the implementation's
    # vmap with these in_axes (one per input; the inputs hold the batched values)
    vmap_axes: tuple[int | None, ...] | None = None
    # differentiated: (mode, float32 input positions, float32 output positions); mode
    # "grad" is the gradient of the sum of those outputs w.r.t. those inputs, "jvp"
    # pushes all-ones tangents of those inputs forward to those outputs
    ad: tuple[str, tuple[int, ...], tuple[int, ...]] | None = None

    def source(self, name: str = "program") -> str:
        """The program as a Python function ``name(ns, a0, a1, ...)``."""
        if self.ad is not None:
            return _ad_source(self, name)
        params = ", ".join(f"v{i}" for i in range(len(self.inputs)))
        lines = [f"def {name}(ns, {params}):" if params else f"def {name}(ns):"]
        pad = "    "
        if self.vmap_axes is not None:
            lines.append(f"    def member({params}):")
            pad = "        "
        index = len(self.inputs)
        for step in self.steps:
            args = [f"v{a}" for a in step.args]
            expr = OPS[step.op].render(args, dict(step.params))
            targets = ", ".join(f"v{index + k}" for k in range(step.n_out))
            lines.append(f"{pad}{targets} = {expr}")
            index += step.n_out
        outs = ", ".join(f"v{o}" for o in self.outputs)
        lines.append(f"{pad}return ({outs},)")
        if self.vmap_axes is not None:
            vmap = "importlib.import_module(ns.lax_.__name__.split('.')[0]).vmap"
            lines.append(f"    return {vmap}(member, in_axes={self.vmap_axes!r})({params})")
        return "\n".join(lines)

    def function(self) -> Callable[..., Any]:
        scope: dict[str, Any] = {"np": np, "ml_dtypes": ml_dtypes, "importlib": importlib}
        exec(self.source(), scope)  # noqa: S102 -- our own generated source
        return scope["program"]

    def case_source(self, case_name: str, note: str = "") -> str:
        """A runnable case file reproducing this program (``--case-file``)."""
        args = ",\n        ".join(i.source() for i in self.inputs)
        jit_kwargs = {"donate_argnums": self.donate} if self.donate else {}
        header = f'"""{note}"""\n' if note else ""
        return (
            f"{header}import importlib\n\nimport ml_dtypes\nimport numpy as np\n\n"
            "from conformance import AGREE, fn_case\n\n\n"
            f"{self.source()}\n\n\n"
            f"CASE = fn_case(\n    {case_name!r},\n    program,\n    [\n        {args},\n    ],\n"
            f"    mode={'jit' if self.jit else 'eager'!r},\n"
            f"    jit_kwargs={jit_kwargs!r},\n    expect=AGREE,\n)\n"
        )

    def as_case(self, case_name: str) -> Case:
        return fn_case(
            case_name,
            self.function(),
            [i.value() for i in self.inputs],
            mode="jit" if self.jit else "eager",
            jit_kwargs={"donate_argnums": self.donate} if self.donate else {},
            expect=AGREE,
            tolerance=FUZZ_TOLERANCE,
            source=self.source(),
        )


# --- the op catalogue ------------------------------------------------------------------


@dataclass(frozen=True)
class Val:
    """What generation knows about a value."""

    shape: tuple[int, ...]
    dtype: np.dtype
    exact: bool
    scalar: bool = False  # a Python scalar input

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOATS

    @property
    def is_int(self) -> bool:
        return self.dtype in INTS


@dataclass
class Op:
    """One op: which operands it takes, its params, its result types, its source."""

    name: str
    arity: int
    accepts: Callable[..., bool]  # accepts(*vals) -> bool
    out: Callable[..., list[Val]]  # out(params, *vals) -> result Vals
    render: Callable[[list[str], dict[str, Any]], str]
    params: Callable[..., dict[str, Any]] = field(default=lambda draw, *vals: {})
    requires: tuple[str, ...] = ()


def _same(v: Val, exact: bool | None = None, **changes: Any) -> list[Val]:
    fields = dict(shape=v.shape, dtype=v.dtype, exact=v.exact if exact is None else exact)
    fields.update(changes)
    return [Val(**fields)]


def _broadcast(a: Val, b: Val) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        return None


def _arrays(*vals: Val) -> bool:
    return not any(v.scalar for v in vals)


def _unary(name: str, accepts: Callable[[Val], bool], exact: bool | None) -> Op:
    return Op(name, 1, lambda v: _arrays(v) and accepts(v),
              lambda p, v: _same(v, exact=(v.exact if exact is None else exact and v.exact)),
              lambda a, p: f"ns.np_.{name}({a[0]})")  # fmt: skip


def _combined_dtype(a: Val, b: Val) -> np.dtype | None:
    """The result dtype of a binary op, for the pairs fuzzing uses without promotion:
    equal dtypes, or an array with a Python scalar of a compatible kind."""
    if a.scalar and b.scalar:
        return a.dtype if a.dtype == b.dtype else None
    if a.scalar or b.scalar:
        scalar, array = (a, b) if a.scalar else (b, a)
        if scalar.dtype == I32 and array.dtype != BOOL:
            return array.dtype
        if scalar.dtype == F32 and array.is_float:
            return array.dtype
        return None
    return a.dtype if a.dtype == b.dtype else None


def _binary_ok(a: Val, b: Val, accepts: Callable[[Val], bool]) -> bool:
    dtype = _combined_dtype(a, b)
    if dtype is None or _broadcast(a, b) is None:
        return False
    return accepts(Val((), dtype, True))


def _binary(name: str, accepts: Callable[[Val], bool], exact_ints: bool, exact: bool) -> Op:
    def ok(a: Val, b: Val) -> bool:
        return _binary_ok(a, b, accepts)

    def out(p: dict, a: Val, b: Val) -> list[Val]:
        dtype = _combined_dtype(a, b)
        is_exact = a.exact and b.exact and (exact or (exact_ints and dtype in INTS))
        return [Val(_broadcast(a, b), dtype, is_exact)]

    return Op(name, 2, ok, out, lambda a, p: f"ns.np_.{name}({a[0]}, {a[1]})")


def _scalar_param(draw: Any, v: Val) -> dict[str, Any]:
    from hypothesis import strategies as st

    if v.dtype == U8:
        return {"c": draw(st.sampled_from([2, 3]))}
    if v.is_int:
        return {"c": draw(st.sampled_from([2, -1, 3]))}
    return {"c": draw(st.sampled_from([0.5, -1.5, 2.0, 0.25]))}


def _axis_params(draw: Any, v: Val, allow_none: bool = True) -> dict[str, Any]:
    from hypothesis import strategies as st

    choices: list[Any] = list(range(len(v.shape))) + ([None] if allow_none else [])
    axis = draw(st.sampled_from(choices))
    return {"axis": axis, "keepdims": draw(st.booleans())}


def _reduced_shape(v: Val, axis: Any, keepdims: bool) -> tuple[int, ...]:
    axes = range(len(v.shape)) if axis is None else [axis]
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(v.shape))
    return tuple(d for i, d in enumerate(v.shape) if i not in axes)


def _nonempty_axis(v: Val, axis: Any) -> bool:
    return (int(np.prod(v.shape)) if axis is None else v.shape[axis]) > 0


def _reduction(name: str, accepts: Callable[[Val], bool], exact_kind: str) -> Op:
    def out(p: dict, v: Val) -> list[Val]:
        dtype = v.dtype
        if name == "sum" and v.dtype in (U8, BOOL):
            dtype = {U8: np.dtype(np.uint32), BOOL: I32}[v.dtype]
        exact = v.exact and (exact_kind == "always" or (exact_kind == "ints" and v.is_int))
        return [Val(_reduced_shape(v, p["axis"], p["keepdims"]), dtype, exact)]

    def params(draw: Any, v: Val) -> dict[str, Any]:
        p = _axis_params(draw, v)
        from hypothesis import assume

        if name in ("max", "min"):
            assume(_nonempty_axis(v, p["axis"]))
        return p

    return Op(name, 1, lambda v: _arrays(v) and accepts(v), out,
              lambda a, p: f"ns.np_.{name}({a[0]}, axis={p['axis']!r}, keepdims={p['keepdims']})",
              params)  # fmt: skip


def _cast_params(draw: Any, v: Val) -> dict[str, Any]:
    from hypothesis import strategies as st

    targets = [d for d in FLOATS + INTS if d != v.dtype]
    if v.is_float and not v.exact:
        targets = [d for d in FLOATS if d != v.dtype]
    return {"dtype": draw(st.sampled_from(targets))}


def _transpose_params(draw: Any, v: Val) -> dict[str, Any]:
    from hypothesis import strategies as st

    return {"perm": tuple(draw(st.permutations(range(len(v.shape)))))}


def _reshape_params(draw: Any, v: Val) -> dict[str, Any]:
    from hypothesis import strategies as st

    size = int(np.prod(v.shape))
    options = [(size,), (1, size)]
    if size > 0:
        options += [(d, size // d) for d in range(2, size) if size % d == 0]
    else:
        options += [(0, 3), (2, 0)]
    return {"shape": draw(st.sampled_from(options))}


def _slice_params(draw: Any, v: Val) -> dict[str, Any]:
    from hypothesis import strategies as st

    n = v.shape[0]
    start = draw(st.integers(0, n))
    return {"start": start, "stop": draw(st.integers(start, n))}


def _scan_params(draw: Any, v: Val) -> dict[str, Any]:
    from hypothesis import strategies as st

    length = v.shape[0]
    unroll = draw(st.sampled_from([1, 2, 3, max(length, 1), length + 1, True, False, 0]))
    return {"unroll": unroll, "reverse": draw(st.booleans())}


def _concat_ok(a: Val, b: Val) -> bool:
    return (_arrays(a, b) and a.dtype == b.dtype and len(a.shape) == len(b.shape) >= 1
            and a.shape[1:] == b.shape[1:])  # fmt: skip


def _matmul_ok(a: Val, b: Val) -> bool:
    return (_arrays(a, b) and a.dtype == b.dtype == F32 and len(a.shape) == 2
            and len(b.shape) == 2 and a.shape[1] == b.shape[0])  # fmt: skip


_numeric = lambda v: v.dtype != BOOL  # noqa: E731
_float = lambda v: v.is_float  # noqa: E731
_signed = lambda v: v.is_float or v.dtype == I32  # noqa: E731

OP_LIST: list[Op] = [
    _unary("sin", _float, False),
    _unary("cos", _float, False),
    _unary("tanh", _float, False),
    _unary("negative", _signed, True),
    _unary("abs", _signed, True),
    _unary("floor", lambda v: v.is_float and v.exact, True),
    _unary("ceil", lambda v: v.is_float and v.exact, True),
    _unary("sign", lambda v: _signed(v) and v.exact, True),
    _unary("logical_not", lambda v: v.dtype == BOOL, True),
    _binary("add", _numeric, True, False),
    _binary("subtract", _numeric, True, False),
    _binary("multiply", _numeric, True, False),
    _binary("maximum", _numeric, True, True),
    _binary("minimum", _numeric, True, True),
    _binary("logical_and", lambda v: v.dtype == BOOL, True, True),
    Op("scalar_mul", 1, lambda v: _arrays(v) and _numeric(v),
       lambda p, v: _same(v, exact=v.exact and v.is_int),
       lambda a, p: f"{a[0]} * {p['c']!r}", _scalar_param),
    Op("scalar_add", 1, lambda v: _arrays(v) and _numeric(v),
       lambda p, v: _same(v, exact=v.exact and v.is_int),
       lambda a, p: f"{p['c']!r} + {a[0]}", _scalar_param),
    Op("where_greater", 2,
       lambda a, b: _binary_ok(a, b, _numeric) and a.exact and b.exact,
       lambda p, a, b: [Val(_broadcast(a, b), _combined_dtype(a, b), True)],
       lambda a, p: f"ns.np_.where(ns.np_.greater({a[0]}, {a[1]}), {a[0]}, {a[1]})"),
    Op("greater", 2,
       lambda a, b: _binary_ok(a, b, _numeric) and a.exact and b.exact,
       lambda p, a, b: [Val(_broadcast(a, b), BOOL, True)],
       lambda a, p: f"ns.np_.greater({a[0]}, {a[1]})"),
    Op("astype", 1, lambda v: _arrays(v) and v.dtype != BOOL and (v.exact or v.is_float),
       lambda p, v: [Val(v.shape, p["dtype"], v.exact)],
       lambda a, p: f"{a[0]}.astype({DTYPE_SOURCE[p['dtype']]})", _cast_params),
    _reduction("sum", lambda v: v.dtype != BOOL, "ints"),
    _reduction("max", _numeric, "always"),
    _reduction("min", _numeric, "always"),
    _reduction("mean", lambda v: v.dtype == F32, "never"),
    Op("cumsum", 1, lambda v: _arrays(v) and v.dtype in (F32, I32) and len(v.shape) >= 1,
       lambda p, v: _same(v, exact=v.exact and v.is_int),
       lambda a, p: f"ns.np_.cumsum({a[0]}, axis={p['axis']})",
       lambda draw, v: {"axis": _axis_params(draw, v, allow_none=False)["axis"]}),
    Op("argmax", 1, lambda v: _arrays(v) and _numeric(v) and v.exact and len(v.shape) >= 1
       and all(v.shape),
       lambda p, v: [Val(_reduced_shape(v, p["axis"], False), I32, True)],
       lambda a, p: f"ns.np_.argmax({a[0]}, axis={p['axis']})",
       lambda draw, v: {"axis": _axis_params(draw, v, allow_none=False)["axis"]}),
    Op("transpose", 1, lambda v: _arrays(v) and len(v.shape) >= 2,
       lambda p, v: _same(v, shape=tuple(v.shape[i] for i in p["perm"])),
       lambda a, p: f"ns.np_.transpose({a[0]}, {p['perm']!r})", _transpose_params),
    Op("reshape", 1, lambda v: _arrays(v),
       lambda p, v: _same(v, shape=p["shape"]),
       lambda a, p: f"ns.np_.reshape({a[0]}, {p['shape']!r})", _reshape_params),
    Op("expand_dims", 1, lambda v: _arrays(v) and len(v.shape) < 3,
       lambda p, v: _same(v, shape=(1,) + v.shape),
       lambda a, p: f"ns.np_.expand_dims({a[0]}, 0)"),
    Op("flip", 1, lambda v: _arrays(v) and len(v.shape) >= 1, lambda p, v: _same(v),
       lambda a, p: f"ns.np_.flip({a[0]}, 0)"),
    Op("slice", 1, lambda v: _arrays(v) and len(v.shape) >= 1,
       lambda p, v: _same(v, shape=(p["stop"] - p["start"],) + v.shape[1:]),
       lambda a, p: f"{a[0]}[{p['start']}:{p['stop']}]", _slice_params),
    Op("concatenate", 2, _concat_ok,
       lambda p, a, b: [Val((a.shape[0] + b.shape[0],) + a.shape[1:], a.dtype,
                            a.exact and b.exact)],
       lambda a, p: f"ns.np_.concatenate([{a[0]}, {a[1]}])"),
    Op("matmul", 2, _matmul_ok,
       lambda p, a, b: [Val((a.shape[0], b.shape[1]), F32, False)],
       lambda a, p: f"ns.np_.matmul({a[0]}, {a[1]})"),
    Op("lax_add", 2,
       lambda a, b: _arrays(a, b) and a.dtype == b.dtype and a.shape == b.shape and _numeric(a),
       lambda p, a, b: [Val(a.shape, a.dtype, a.exact and b.exact and a.is_int)],
       lambda a, p: f"ns.lax_.add({a[0]}, {a[1]})"),
    Op("scan", 1, lambda v: _arrays(v) and v.dtype in (F32, BF16) and len(v.shape) >= 1,
       lambda p, v: [Val(v.shape[1:], v.dtype, False), Val(v.shape, v.dtype, False)],
       lambda a, p: (f"ns.lax_.scan(lambda c, x: (ns.np_.tanh(c + x), c * 0.5), "
                     f"ns.np_.zeros({a[0]}.shape[1:], {a[0]}.dtype), {a[0]}, "
                     f"unroll={p['unroll']!r}, reverse={p['reverse']})"),
       _scan_params, requires=("lax_.scan",)),
]  # fmt: skip
OPS: dict[str, Op] = {op.name: op for op in OP_LIST}


# --- the hypothesis strategy -------------------------------------------------------------


def programs(
    ops: Sequence[Op], *, max_steps: int = 6, donation: bool = True, vmap: bool = False,
    ad: bool = False,
) -> Any:  # fmt: skip
    """A hypothesis strategy of random well-typed ``FuzzProgram``s over ``ops``
    (with ``vmap``, a quarter of them vmapped over random axes; with ``ad``, a
    quarter of the others differentiated by ``grad`` or ``jvp``)."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw: Any) -> FuzzProgram:
        inputs = [draw(_inputs()) for _ in range(draw(st.integers(1, 3)))]
        vals = [_input_val(i) for i in inputs]
        vmap_axes = None
        if vmap and draw(st.integers(0, 3)) == 0:
            inputs, vmap_axes = _batched_inputs(draw, inputs)
        steps: list[Step] = []
        for _ in range(draw(st.integers(1, max_steps))):
            choices = [(op, args) for op in ops for args in _operand_choices(op, vals)]
            if not choices:
                break
            op, args = draw(st.sampled_from(choices))
            params = op.params(draw, *[vals[a] for a in args])
            outs = op.out(params, *[vals[a] for a in args])
            steps.append(Step(op.name, args, tuple(sorted(params.items(), key=str)), len(outs)))
            vals.extend(outs)
        produced = list(range(len(inputs), len(vals))) or [0]
        outputs = tuple(sorted(set(draw(st.lists(st.sampled_from(produced), min_size=1,
                                                 max_size=2)))))  # fmt: skip
        jit = draw(st.booleans()) or not steps
        array_inputs = [k for k, i in enumerate(inputs) if i.shape is not None]
        donate: tuple[int, ...] = ()
        if donation and jit and array_inputs and draw(st.integers(0, 3)) == 0:
            donate = tuple(sorted(set(draw(st.lists(st.sampled_from(array_inputs), min_size=1,
                                                    max_size=2)))))  # fmt: skip
        ad_spec = None
        if ad and vmap_axes is None and not donate and draw(st.integers(0, 3)) == 0:
            float_in = tuple(k for k, i in enumerate(inputs)
                             if i.shape is not None and i.dtype == F32)  # fmt: skip
            float_out = tuple(k for k, o in enumerate(outputs) if vals[o].dtype == F32)
            if float_in and float_out:
                ad_spec = ("grad" if draw(st.booleans()) else "jvp", float_in, float_out)
        return FuzzProgram(tuple(inputs), tuple(steps), outputs, jit, donate, vmap_axes, ad_spec)

    return build()


def _batched_inputs(draw: Any, inputs: list[Input]) -> tuple[list[Input], tuple | None]:
    """Each array input mapped (or not) over a random axis, a new axis of size
    1 to 3 holding fresh values of the same kind; None if none is mapped."""
    from hypothesis import strategies as st

    size = draw(st.integers(1, 3))
    axes: list[int | None] = []
    batched = []
    for i in inputs:
        axis = None if i.shape is None else draw(st.sampled_from([None, *range(len(i.shape) + 1)]))
        axes.append(axis)
        if axis is None:
            batched.append(i)
            continue
        shape = list(i.shape)
        shape.insert(axis, size)
        n = int(np.prod(shape))
        if i.dtype == BOOL:
            values: list[Any] = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        elif i.dtype in INTS:
            low = 0 if i.dtype == U8 else -5
            values = draw(st.lists(st.integers(low, 5), min_size=n, max_size=n))
        else:
            values = [q / 4 for q in draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n))]
        batched.append(Input(tuple(shape), i.dtype, tuple(values)))
    if all(a is None for a in axes):
        return inputs, None
    return batched, tuple(axes)


@functools.cache
def _inputs() -> Any:
    """The strategy of one input (built once: making strategies is slow)."""
    from hypothesis import strategies as st

    @st.composite
    def one(draw: Any) -> Input:
        dtype = draw(st.sampled_from(DTYPES))
        if draw(st.integers(0, 5)) == 0 and dtype in (F32, I32):  # a Python scalar
            value = draw(st.integers(-8, 8))
            return Input(None, dtype, (value / 4 if dtype == F32 else value,))
        rank = draw(st.integers(0, 3))
        shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 0, 2, 3]), min_size=rank,
                                    max_size=rank)))  # fmt: skip
        size = int(np.prod(shape))
        if dtype == BOOL:
            values = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        elif dtype in INTS:
            low = 0 if dtype == U8 else -5
            values = draw(st.lists(st.integers(low, 5), min_size=size, max_size=size))
        else:
            quarters = draw(st.lists(st.integers(-8, 8), min_size=size, max_size=size))
            values = [q / 4 for q in quarters]
        return Input(shape, dtype, tuple(values))

    return one()


def _input_val(i: Input) -> Val:
    if i.shape is None:
        return Val((), I32 if isinstance(i.values[0], int) else F32, True, scalar=True)
    return Val(i.shape, i.dtype, True)


def _operand_choices(op: Op, vals: list[Val]) -> list[tuple[int, ...]]:
    idx = range(len(vals))
    if op.arity == 1:
        return [(i,) for i in idx if op.accepts(vals[i])]
    return [(i, j) for i in idx for j in idx if op.accepts(vals[i], vals[j])]


# --- running --------------------------------------------------------------------------------


@dataclass
class FuzzResult:
    ok: bool
    examples: int = 0
    failure: str = ""
    case_source: str = ""
    skipped_reason: str = ""


def observe_program(impl: impls_mod.Implementation, program: FuzzProgram) -> Observation | str:
    """Run ``program`` on ``impl``: the observation, or the reason it cannot run."""
    ns = impl.namespace()
    fn = program.function()
    with impl.session():
        try:
            args = [ns.asarray(a) if isinstance(a, np.ndarray) else a
                    for a in (i.value() for i in program.inputs)]  # fmt: skip
            run = functools.partial(fn, ns)
            if program.jit:
                run = ns.jit(run, donate_argnums=program.donate) if program.donate else ns.jit(run)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = run(*args)
            deleted = [ns.is_deleted(args[k]) if impl.spec_donation else ANY
                       for k in program.donate]  # fmt: skip
            result = {"out": out, "deleted": deleted}
            return observe(impl, result)
        except Exception as exc:
            if is_unsupported_error(exc):
                return f"unsupported by {impl.name}: {type(exc).__name__}: {exc}"
            return Observation("*", [("out", ErrorObs.from_exception(exc))])


def check_program(program: FuzzProgram, impls: Sequence[impls_mod.Implementation]) -> list[str]:
    """Differences between the first implementation (the reference) and the others."""
    observations = [observe_program(impl, program) for impl in impls]
    if any(isinstance(o, str) for o in observations):
        from hypothesis import reject

        reject()
    reference = observations[0]
    assert isinstance(reference, Observation)
    problems = []
    for impl, obs in zip(impls[1:], observations[1:], strict=True):
        assert isinstance(obs, Observation)
        expected = _without_any(reference, obs)
        diff = compare(expected, obs, impl.name, FUZZ_TOLERANCE)
        if not diff:
            problems.append(f"{impls[0].name} vs {impl.name}: " + "; ".join(diff.differences))
    return problems


def _without_any(reference: Observation, other: Observation) -> Observation:
    """Where either side did not observe something (ANY), do not compare it."""
    if reference.structure != other.structure:
        return reference
    leaves = [(p, ANY if b is ANY else a) for (p, a), (_, b) in
              zip(reference.leaves, other.leaves, strict=True)]  # fmt: skip
    return Observation(reference.structure, leaves)


def run_fuzz(
    n: int,
    impl_names: Sequence[str] | None = None,
    *,
    seed: int = 0,
    stream: TextIO = sys.stdout,
    max_steps: int = 6,
    op_names: Sequence[str] | None = None,
    donation: bool | None = None,
    vmap: bool | None = None,
    ad: bool | None = None,
) -> FuzzResult:
    """Run ``n`` random programs on the implementations; print a minimal failure.

    ``op_names`` restricts the ops programs are built from (default: all that
    every implementation supports); ``donation=False`` never donates (default:
    donate when every implementation implements donation).
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    names = list(impl_names or impls_mod.registered_names())
    impls = [impls_mod.get(name) for name in names]
    impls = [i for i in impls if i.is_available()]
    reference = [i for i in impls if i.name == "ref"]
    impls = reference + [i for i in impls if i.name != "ref"]
    if len(impls) < 2:
        reason = "fuzzing needs two available implementations"
        print(f"fuzz: skipped ({reason}: {[i.name for i in impls]})", file=stream)
        return FuzzResult(ok=True, skipped_reason=reason)
    ops = [op for op in OP_LIST if all(not i.missing_feature(f) for i in impls
                                       for f in op.requires)]  # fmt: skip
    if op_names is not None:
        ops = [op for op in ops if op.name in op_names]
    supported = all(not i.missing_feature("donation") for i in impls)
    donation = supported if donation is None else donation and supported
    vmap = all(_has_vmap(i) for i in impls) if vmap is None else vmap
    ad = all(_has_vmap(i, "grad") for i in impls) if ad is None else ad
    last_failure: dict[str, Any] = {}
    count = [0]

    @hypothesis_seed(seed)
    @settings(max_examples=n, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)  # fmt: skip
    @given(programs(ops, max_steps=max_steps, donation=donation, vmap=vmap, ad=ad))
    def check(program: FuzzProgram) -> None:
        count[0] += 1
        problems = check_program(program, impls)
        if problems:
            last_failure["program"] = program
            last_failure["problems"] = problems
            raise AssertionError("\n".join(problems))

    names_shown = ", ".join(i.name for i in impls)
    print(f"fuzz: {n} programs on {names_shown} (ops: {len(ops)}, donation: {donation})",
          file=stream)  # fmt: skip
    try:
        check()
    except AssertionError:
        program = last_failure["program"]
        problems = last_failure["problems"]
        note = "Found by python -m conformance --fuzz:\n" + "\n".join(problems)
        source = program.case_source("fuzz/found", note)
        print("fuzz: FOUND A DIFFERENCE (shrunk). Runnable case "
              "(save as found.py; python -m conformance --case-file found.py -k fuzz/):",
              file=stream)  # fmt: skip
        print(textwrap.indent(source, "    "), file=stream)
        return FuzzResult(False, count[0], "\n".join(problems), source)
    print(f"fuzz: no difference in {count[0]} programs", file=stream)
    return FuzzResult(True, count[0])


def _has_vmap(impl: impls_mod.Implementation, name: str = "vmap") -> bool:
    """Whether the implementation's top-level module (refimpl, jax) has vmap (or ``name``)."""
    try:
        ns = impl.namespace()
        return hasattr(importlib.import_module(ns.lax_.__name__.split(".")[0]), name)
    except Exception:
        return False


def _ad_source(program: FuzzProgram, name: str) -> str:
    """``program`` (its steps as an inner ``member``) under ``grad`` or ``jvp``."""
    mode, float_in, float_out = program.ad  # type: ignore[misc]
    params = [f"v{i}" for i in range(len(program.inputs))]
    inner = replace(program, ad=None).source("member").replace("def member(ns, ", "def member(")
    diff = [params[k] for k in float_in]
    picked = ", ".join(f"outs[{k}]" for k in float_out)
    lines = [f"def {name}(ns, {', '.join(params)}):", *("    " + ln for ln in inner.split("\n"))]
    lines.append("    api = importlib.import_module(ns.lax_.__name__.split('.')[0])")
    lines.append(f"    def differentiated({', '.join(diff)}):")
    lines.append(f"        outs = member({', '.join(params)})")
    if mode == "grad":
        lines.append(f"        return sum(ns.np_.sum(o) for o in ({picked},))")
        argnums = tuple(range(len(diff)))
        lines.append(f"    return api.grad(differentiated, argnums={argnums!r})({', '.join(diff)})")
    else:
        lines.append(f"        return ({picked},)")
        ones = ", ".join(f"ns.np_.ones_like({d})" for d in diff)
        lines.append(f"    return api.jvp(differentiated, ({', '.join(diff)},), ({ones},))")
    return "\n".join(lines)


# --- masked programs ---------------------------------------------------------------------
#
# A masked program is a fuzz program over inputs whose leading dim is the masked dim
# ``n`` (padded to N). It runs through ``ns.mask`` on padded inputs full of garbage past
# ``n``; the valid region must equal the same program run unmasked on the unpadded
# inputs, on the same implementation (masking is checked against the implementation's
# own unmasked semantics, which the corpus checks against the oracles).

MASK_OPS = ("sin", "tanh", "negative", "abs", "add", "subtract", "multiply", "maximum",
            "scalar_mul", "scalar_add", "where_greater", "cumsum", "sum", "max")  # fmt: skip


@dataclass(frozen=True)
class MaskedProgram:
    program: FuzzProgram
    padded: int  # N
    logical: int  # n
    out_masked: bool  # whether the output's leading dim is the masked one

    def in_specs(self) -> list[str]:
        return [_spec(i.shape, True) for i in self.program.inputs]


def _spec(shape: tuple[int, ...], masked: bool) -> str:
    dims = (["n"] if masked else [str(shape[0])]) + [str(d) for d in shape[1:]]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def masked_programs(max_steps: int = 4) -> Any:
    from hypothesis import strategies as st

    ops = [OPS[name] for name in MASK_OPS]

    @st.composite
    def build(draw: Any) -> MaskedProgram:
        padded = draw(st.integers(1, 5))
        logical = draw(st.integers(0, padded))
        dtype = draw(st.sampled_from([F32, I32]))
        inputs = []
        for _ in range(draw(st.integers(1, 2))):
            shape = (padded,) + tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
            size = int(np.prod(shape))
            if dtype == F32:
                values = [q / 4 for q in draw(st.lists(st.integers(-8, 8), min_size=size,
                                                        max_size=size))]  # fmt: skip
            else:
                values = draw(st.lists(st.integers(-5, 5), min_size=size, max_size=size))
            inputs.append(Input(shape, dtype, tuple(values)))
        vals = [Val(i.shape, i.dtype, True) for i in inputs]
        masked = [True] * len(vals)
        steps: list[Step] = []
        for _ in range(draw(st.integers(1, max_steps))):
            choices = []
            for op in ops:
                for args in _operand_choices(op, vals):
                    shapes = {vals[a].shape for a in args}
                    if len(shapes) == 1 and all(masked[a] for a in args):
                        choices.append((op, args))
            if logical == 0:  # max over an empty masked dim has no identity: an error
                choices = [(op, args) for op, args in choices if op.name != "max"]
            if not choices:
                break
            op, args = draw(st.sampled_from(choices))
            params = op.params(draw, *[vals[a] for a in args])
            if op.name in ("sum", "max"):
                params["keepdims"] = False
                if params["axis"] is None:
                    params["axis"] = 0
            (out,) = op.out(params, *[vals[a] for a in args])
            steps.append(Step(op.name, args, tuple(sorted(params.items(), key=str))))
            vals.append(out)
            masked.append(not (op.name in ("sum", "max") and params["axis"] == 0))
        last = len(vals) - 1
        program = FuzzProgram(tuple(inputs), tuple(steps), (last,), jit=draw(st.booleans()))
        return MaskedProgram(program, padded, logical, masked[last])

    return build()


def check_masked(mp: MaskedProgram, impl: impls_mod.Implementation) -> str | None:
    """A description of the difference between masked and unmasked, or None."""
    ns = impl.namespace()
    fn = mp.program.function()
    n = mp.logical
    padded = [i.value() for i in mp.program.inputs]
    garbage = []
    for p in padded:
        g = p.copy()
        g[n:] = 7 if g.dtype.kind in "iu" else np.float32(3.5)
        garbage.append(g)
    with impl.session(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unmasked = fn(ns, *[ns.asarray(p[:n]) for p in padded])[0]
        expected = np.asarray(ns.to_numpy(unmasked))
        out_shape = _spec(expected.shape, mp.out_masked) if expected.ndim else "()"
        if mp.out_masked and expected.ndim:
            out_shape = _spec((mp.padded,) + expected.shape[1:], True)
        masked_fn = ns.mask(lambda *a: fn(ns, *a)[0], mp.in_specs(), out_shape)
        if mp.program.jit:
            masked_fn = ns.jit(masked_fn)
        got = np.asarray(ns.to_numpy(masked_fn([ns.asarray(g) for g in garbage], {"n": n})))
    if mp.out_masked and got.ndim:
        got = got[:n]
    expected_obs = observe(impl, expected)
    diff = compare(expected_obs, observe(impl, got), impl.name, FUZZ_TOLERANCE)
    return None if diff else "; ".join(diff.differences)


def run_mask_fuzz(
    n: int, impl_names: Sequence[str] | None = None, *, seed: int = 0, stream: TextIO = sys.stdout
) -> FuzzResult:
    """Random masked programs on every implementation that has ``mask``."""
    from hypothesis import HealthCheck, given, reject, settings
    from hypothesis import seed as hypothesis_seed

    names = list(impl_names or impls_mod.registered_names())
    impls = [impls_mod.get(name) for name in names]
    impls = [i for i in impls if i.is_available() and not i.missing_feature("mask")]
    if not impls:
        print("fuzz (masking): skipped (no implementation with mask)", file=stream)
        return FuzzResult(ok=True, skipped_reason="no implementation with mask")
    last_failure: dict[str, Any] = {}

    @hypothesis_seed(seed)
    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)  # fmt: skip
    @given(masked_programs())
    def check(mp: MaskedProgram) -> None:
        for impl in impls:
            try:
                problem = check_masked(mp, impl)
            except Exception as exc:
                if is_unsupported_error(exc):
                    reject()
                problem = f"raised {type(exc).__name__}: {exc}"
            if problem:
                last_failure.update(mp=mp, problem=f"{impl.name}: {problem}")
                raise AssertionError(problem)

    print(f"fuzz (masking): {n} masked programs on {', '.join(i.name for i in impls)}",
          file=stream)  # fmt: skip
    try:
        check()
    except AssertionError:
        mp, problem = last_failure["mp"], last_failure["problem"]
        print(f"fuzz (masking): FOUND A DIFFERENCE (shrunk): {problem}", file=stream)
        print(f"    in_shapes={mp.in_specs()} logical n={mp.logical} padded N={mp.padded}",
              file=stream)  # fmt: skip
        print(textwrap.indent(mp.program.source(), "    "), file=stream)
        for i in mp.program.inputs:
            print(f"    input: {i.source()}", file=stream)
        return FuzzResult(False, n, problem, mp.program.source())
    print("fuzz (masking): no difference", file=stream)
    return FuzzResult(True, n)


__all__ = ["FuzzProgram", "Input", "Step", "programs", "run_fuzz", "check_program", "OPS",
           "masked_programs", "run_mask_fuzz"]  # fmt: skip
