# ruff: noqa: B023, E731 - every case lambda binds its loop values as defaults
"""The cases JAX's tests/lax_numpy_test.py parametrizes its function tests
with (not the operator and reducer records: those have their own sweeps),
as one table: per test method, dtypes x shapes x keyword forms drawn from a
fixed NumPy RNG. ``cases()`` yields ``Case``s; ``run(case, module)`` calls
one with ``jax.numpy`` or ``refimpl.numpy`` (eager, or under the module's
jit where JAX's test compiles), and ``compare`` tells what differs.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

BOOL = [np.bool_]
INTS = [np.int8, np.int16, np.int32, np.uint8, np.uint32]
FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32]
COMPLEX = [np.complex64]
NUMBER = INTS + FLOATS + COMPLEX
ALL = BOOL + NUMBER
REAL = INTS + FLOATS


@dataclasses.dataclass(frozen=True)
class Case:
    method: str  # JAX's test method
    label: str
    fn: Callable[[Any], Callable[..., Any]]  # numpy module -> function of the arrays
    args: tuple
    jit: bool = True
    sort_out: bool = False  # compare sorted values (an order neither promises)

    @property
    def name(self) -> str:
        return f"{self.method}[{self.label}]"


def _rand(rng, shape, dtype):
    """JAX's rand_default: small numbers, both signs where the dtype has them."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.rand(*shape) > 0.5)
    if np.issubdtype(dtype, np.unsignedinteger):
        return np.asarray(rng.randint(0, 6, shape)).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return np.asarray(rng.randint(-5, 6, shape)).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return np.asarray(rng.randn(*shape) * 3 + 1j * rng.randn(*shape) * 3).astype(dtype)
    return np.asarray(rng.randn(*shape) * 3).astype(dtype)


def _dname(dtype) -> str:
    return np.dtype(dtype).name


def _label(*parts) -> str:
    return "-".join(str(p).replace(" ", "") for p in parts)


def _even(items: list, limit: int) -> list:
    """At most ``limit`` items spread evenly over ``items``."""
    if len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


# Each generator below yields the cases of one JAX test method.


def _sort(rng):
    for dtype, shape, axis, stable, desc in itertools.product(
        REAL + BOOL, [(5,), (3, 4), (2, 3, 4)], [None, 0, -1], [True, False], [False, True]
    ):
        if axis is None and not stable:
            continue
        x = _rand(rng, shape, dtype)
        kw = dict(axis=axis, stable=stable, descending=desc)
        yield Case(
            "testSort",
            _label(_dname(dtype), shape, axis, stable, desc),
            lambda m, kw=kw: lambda x: m.sort(x, **kw),
            (x,),
        )
        if stable:
            yield Case(
                "testArgsort",
                _label(_dname(dtype), shape, axis, desc),
                lambda m, kw=kw: lambda x: m.argsort(x, **kw),
                (x,),
            )
    for dtype, shape in itertools.product(COMPLEX + FLOATS, [(5,), (3, 4)]):
        x = _rand(rng, shape, dtype)
        yield Case("testSortComplex", _label(_dname(dtype), shape), lambda m: m.sort_complex, (x,))
    for dtype, shape, axis in itertools.product(REAL, [(5,), (3, 4)], [0, -1]):
        keys = tuple(_rand(rng, shape, dtype) for _ in range(3))
        yield Case(
            "testLexsort",
            _label(_dname(dtype), shape, axis),
            lambda m, axis=axis: lambda *k: m.lexsort(k, axis=axis),
            keys,
        )
    for dtype, shape, axis in itertools.product(REAL, [(5,), (3, 6)], [0, -1]):
        x = _rand(rng, shape, dtype)
        kth = shape[axis] // 2
        yield Case(
            "testPartition",
            _label(_dname(dtype), shape, axis),
            lambda m, kth=kth, axis=axis: (
                lambda x: m.take(m.partition(x, kth, axis=axis), kth, axis=axis)
            ),
            (x,),
        )


def _search(rng):
    for dtype, n, vshape, side, method in itertools.product(
        REAL,
        [0, 5],
        [(), (4,), (2, 3)],
        ["left", "right"],
        ["scan", "sort", "compare_all", "scan_unrolled"],
    ):
        a = np.sort(_rand(rng, (n,), dtype))
        v = _rand(rng, vshape, dtype)
        kw = dict(side=side, method=method)
        yield Case(
            "testSearchsorted",
            _label(_dname(dtype), n, vshape, side, method),
            lambda m, kw=kw: lambda a, v: m.searchsorted(a, v, **kw),
            (a, v),
        )
    for dtype, bshape, right, rev in itertools.product(
        REAL, [(0,), (4,)], [False, True], [False, True]
    ):
        bins = np.sort(_rand(rng, bshape, dtype))
        if rev:
            bins = bins[::-1]
        x = _rand(rng, (3, 4), dtype)
        yield Case(
            "testDigitize",
            _label(_dname(dtype), bshape, right, rev),
            lambda m, right=right: lambda x, b: m.digitize(x, b, right=right),
            (x, bins),
        )


def _take(rng):
    for dtype, shape, ishape, axis, mode in itertools.product(
        ALL, [(5,), (3, 4)], [(), (3,), (2, 2)], [None, 0, -1], [None, "clip", "wrap", "fill"]
    ):
        x = _rand(rng, shape, dtype)
        n = x.size if axis is None else shape[axis]
        idx = rng.randint(-n - 2, n + 2, ishape).astype(np.int32)
        kw = dict(axis=axis, mode=mode)
        yield Case(
            "testTake",
            _label(_dname(dtype), shape, ishape, axis, mode),
            lambda m, kw=kw: lambda x, i: m.take(x, i, **kw),
            (x, idx),
        )
    for dtype, shape, axis, mode in itertools.product(
        ALL, [(5,), (3, 4), (2, 3, 4)], [None, 0, -1], [None, "clip", "fill"]
    ):
        x = _rand(rng, shape, dtype)
        if axis is None:
            idx = rng.randint(-x.size, x.size, (3,)).astype(np.int32)
        else:
            ishape = list(shape)
            ishape[axis] = 3
            idx = rng.randint(-shape[axis], shape[axis], ishape).astype(np.int32)
        kw = dict(axis=axis, mode=mode)
        yield Case(
            "testTakeAlongAxis",
            _label(_dname(dtype), shape, axis, mode),
            lambda m, kw=kw: lambda x, i: m.take_along_axis(x, i, **kw),
            (x, idx),
        )
    for dtype, shape, ishape, vshape, mode in itertools.product(
        NUMBER, [(5,), (3, 4)], [(), (3,)], [(), (3,), (1,)], [None, "clip", "wrap"]
    ):
        x = _rand(rng, shape, dtype)
        idx = (
            rng.choice(x.size, ishape, replace=False).astype(np.int32)
            if ishape
            else np.int32(rng.randint(x.size))
        )
        v = _rand(rng, vshape, dtype)
        yield Case(
            "testPut",
            _label(_dname(dtype), shape, ishape, vshape, mode),
            lambda m, mode=mode: lambda x, i, v: m.put(x, i, v, mode=mode, inplace=False),
            (x, idx, v),
        )


def _where(rng):
    shapes = [(), (4,), (3, 4), (1, 4)]
    for cshape, xshape, yshape, xdt, ydt in itertools.product(
        shapes, shapes, shapes, ALL, [np.float32, np.int32, np.bool_]
    ):
        c = rng.rand(*cshape) > 0.5
        x, y = _rand(rng, xshape, xdt), _rand(rng, yshape, ydt)
        yield Case(
            "testWhereThreeArgument",
            _label(cshape, xshape, yshape, _dname(xdt), _dname(ydt)),
            lambda m: m.where,
            (c, x, y),
        )
    for xdt, scalar in itertools.product(ALL, [1, 1.5, True, 2j]):
        c = rng.rand(3, 4) > 0.5
        x = _rand(rng, (3, 4), xdt)
        yield Case(
            "testWhereScalarPromotion",
            _label(_dname(xdt), scalar),
            lambda m, s=scalar: lambda c, x: m.where(c, x, s),
            (c, x),
        )
    for dtype, shape, size, fill in itertools.product(
        ALL, [(), (5,), (3, 4)], [None, 3, 8], [None, -1, (1, 2)]
    ):
        if size is None and fill is not None:
            continue
        if fill == (1, 2) and len(shape) != 2:
            continue
        x = _rand(rng, shape, dtype)
        kw = dict(size=size, fill_value=fill)
        jit = size is not None
        yield Case(
            "testWhereOneArgument",
            _label(_dname(dtype), shape, size, fill),
            lambda m, kw=kw: lambda x: m.where(x, **kw),
            (x,),
            jit=jit,
        )
        yield Case(
            "testNonzero",
            _label(_dname(dtype), shape, size, fill),
            lambda m, kw=kw: lambda x: m.nonzero(x, **kw),
            (x,),
            jit=jit,
        )
        if fill != (1, 2):
            yield Case(
                "testFlatNonzero",
                _label(_dname(dtype), shape, size, fill),
                lambda m, kw=kw: lambda x: m.flatnonzero(x, **kw),
                (x,),
                jit=jit,
            )
        yield Case(
            "testArgwhere",
            _label(_dname(dtype), shape, size, fill),
            lambda m, kw=kw: lambda x: m.argwhere(x, **kw),
            (x,),
            jit=jit,
        )
    for n, shape, dtype in itertools.product([1, 3], [(), (4,), (3, 4)], ALL):
        conds = tuple(rng.rand(*shape) > 0.5 for _ in range(n))
        choices = tuple(_rand(rng, shape, dtype) for _ in range(n))
        default = _rand(rng, (), dtype)
        yield Case(
            "testSelect",
            _label(n, shape, _dname(dtype)),
            lambda m, n=n: lambda *a: m.select(list(a[:n]), list(a[n : 2 * n]), a[-1]),
            conds + choices + (default,),
        )
    for dtype, ncond, nfunc in itertools.product(NUMBER, [1, 2], [0, 1]):
        x = _rand(rng, (6,), dtype)

        def fn(m, ncond=ncond, nfunc=nfunc):
            def f(x):
                conds = [x < 0, x > 1][:ncond]
                funcs = [lambda v: v * 2, 7, lambda v: v - 1][: ncond + nfunc]
                return m.piecewise(x, conds, funcs)

            return f

        yield Case("testPiecewise", _label(_dname(dtype), ncond, nfunc), fn, (x,))


def _stacking(rng):
    for dtypes, base, axis in itertools.product(
        [
            (np.float32,),
            (np.int32, np.float32),
            (np.bool_, np.uint8, np.int16),
            (np.float16, ml_dtypes.bfloat16),
            (np.complex64, np.int8),
        ],
        [(3,), (2, 3), (2, 3, 1)],
        [None, 0, -1, 1],
    ):
        if axis == 1 and len(base) < 2:
            continue
        arrs = tuple(_rand(rng, base, d) for d in dtypes)
        yield Case(
            "testConcatenate",
            _label([_dname(d) for d in dtypes], base, axis),
            lambda m, axis=axis: lambda *a: m.concatenate(a, axis=axis),
            arrs,
        )
        if axis is not None:
            for _name in ("stack",):
                yield Case(
                    "testStack",
                    _label([_dname(d) for d in dtypes], base, axis),
                    lambda m, axis=axis: lambda *a: m.stack(a, axis=axis),
                    arrs,
                )
        for name in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
            if axis is None:
                yield Case(
                    "testHVDStack",
                    _label(name, [_dname(d) for d in dtypes], base),
                    lambda m, name=name: lambda *a: getattr(m, name)(a),
                    arrs,
                )
        if axis == 0:
            yield Case(
                "testConcatenateDtype",
                _label([_dname(d) for d in dtypes], base),
                lambda m: lambda *a: m.concatenate(a, dtype=np.float32),
                arrs,
            )
            yield Case(
                "testStackDtype",
                _label([_dname(d) for d in dtypes], base),
                lambda m: lambda *a: m.stack(a, dtype=np.int32),
                arrs,
            )
    for dtype in ALL:
        yield Case(
            "testAppend",
            _label(_dname(dtype)),
            lambda m: lambda x, y: m.append(x, y, axis=0),
            (_rand(rng, (2, 3), dtype), _rand(rng, (1, 3), np.float32)),
        )
        yield Case(
            "testAppend",
            _label(_dname(dtype), "flat"),
            lambda m: m.append,
            (_rand(rng, (2, 3), dtype), _rand(rng, (4,), dtype)),
        )
    for shape, num, axis, fname in itertools.product(
        [(12,), (6, 4), (4, 6, 2)],
        [1, 2, 3, [1, 3], [0, 5, 2]],
        [0, -1, 1],
        ["split", "array_split", "hsplit", "vsplit", "dsplit"],
    ):
        if fname != "split" and fname != "array_split" and axis != 0:
            continue
        if axis == 1 and len(shape) < 2:
            continue
        x = _rand(rng, shape, np.float32)
        if fname in ("split", "array_split"):
            fn = lambda m, fname=fname, num=num, axis=axis: (
                lambda x: getattr(m, fname)(x, num, axis=axis)
            )  # noqa: E731
        else:
            fn = lambda m, fname=fname, num=num: lambda x: getattr(m, fname)(x, num)  # noqa: E731
        yield Case("testSplit", _label(fname, shape, num, axis), fn, (x,))
    for shapes in [
        [(2,), (3,)],
        [[(2, 2), (2, 3)], [(1, 2), (1, 3)]],
        [[(2,)], [(2,)]],
        [[[(1, 2)]], [[(1, 2)]]],
    ]:

        def build(m, shapes=shapes):
            flat = []

            def walk(s):
                return (
                    [walk(v) for v in s] if isinstance(s, list) else flat.append(s) or len(flat) - 1
                )

            tree = walk(shapes)

            def f(*arrs):
                def put(t):
                    return [put(v) for v in t] if isinstance(t, list) else arrs[t]

                return m.block(put(tree))

            return f

        leaves = []

        def gather(s):
            if isinstance(s, list):
                for v in s:
                    gather(v)
            else:
                leaves.append(_rand(rng, s, np.float32))

        gather(shapes)
        yield Case("testBlock", _label(shapes), build, tuple(leaves))


def _shape_ops(rng):
    for dtype, shape, repeats, axis, trl in itertools.product(
        [np.float32, np.int8, np.bool_, ml_dtypes.bfloat16],
        [(), (3,), (2, 3)],
        [0, 2, [1, 2, 0]],
        [None, 0, -1],
        [None, 4],
    ):
        x = _rand(rng, shape, dtype)
        r = np.array(repeats, np.int32) if isinstance(repeats, list) else repeats
        if isinstance(repeats, list):
            n = x.size if axis is None else (shape[axis] if shape else 1)
            if n != 3:
                continue
        kw = dict(axis=axis, total_repeat_length=trl)
        yield Case(
            "testRepeat",
            _label(_dname(dtype), shape, repeats, axis, trl),
            lambda m, r=r, kw=kw: lambda x: m.repeat(x, r, **kw),
            (x,),
            jit=trl is not None or not isinstance(repeats, list),
        )
    for dtype, shape, reps in itertools.product(
        [np.float32, np.int16, np.bool_], [(), (3,), (2, 3)], [(), (2,), (1, 2), (2, 1, 3), 0, 2]
    ):
        x = _rand(rng, shape, dtype)
        yield Case(
            "testTile",
            _label(_dname(dtype), shape, reps),
            lambda m, reps=reps: lambda x: m.tile(x, reps),
            (x,),
        )
    for dtype, shape, shift, axis in itertools.product(
        [np.float32, np.int8, np.bool_, np.complex64],
        [(), (4,), (3, 4)],
        [0, 2, -7, (1, 2)],
        [None, 0, -1, (0, 1)],
    ):
        if isinstance(axis, tuple) != isinstance(shift, tuple) and isinstance(shift, tuple):
            continue
        x = _rand(rng, shape, dtype)
        yield Case(
            "testRoll",
            _label(_dname(dtype), shape, shift, axis),
            lambda m, s=shift, a=axis: lambda x: m.roll(x, s, a),
            (x,),
        )
    for shape, k, axes in itertools.product(
        [(2, 3), (2, 3, 4)], [-3, -1, 0, 1, 2, 5], [(0, 1), (1, 0), (-1, 0)]
    ):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testRot90",
            _label(shape, k, axes),
            lambda m, k=k, axes=axes: lambda x: m.rot90(x, k, axes),
            (x,),
        )
    for shape, axis in itertools.product([(), (3,), (2, 3), (2, 3, 4)], [None, 0, -1, (0, 1), ()]):
        x = _rand(rng, shape, np.float32)
        yield Case("testFlip", _label(shape, axis), lambda m, a=axis: lambda x: m.flip(x, a), (x,))
        for name in ("fliplr", "flipud"):
            yield Case(
                "testFlipLrUd",
                _label(name, shape),
                lambda m, name=name: lambda x: getattr(m, name)(x),
                (x,),
            )
    for shape, axis in itertools.product([(), (1,), (1, 3, 1), (2, 1)], [None, 0, -1, (0, 2), 1]):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testSqueeze", _label(shape, axis), lambda m, a=axis: lambda x: m.squeeze(x, a), (x,)
        )
    for shape, axis in itertools.product([(), (3,), (2, 3)], [0, -1, (0, 2), (1, -1), 3]):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testExpandDims",
            _label(shape, axis),
            lambda m, a=axis: lambda x: m.expand_dims(x, a),
            (x,),
        )
    for shape, src, dst in itertools.product(
        [(2, 3, 4)], [0, -1, (0, 1), [2, 0]], [1, -2, (2, 0), [0, 1]]
    ):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testMoveaxis",
            _label(shape, src, dst),
            lambda m, s=src, d=dst: lambda x: m.moveaxis(x, s, d),
            (x,),
        )
    for shape, a1, a2 in itertools.product([(2, 3), (2, 3, 4)], [0, -1, 2], [1, -2]):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testSwapAxes",
            _label(shape, a1, a2),
            lambda m, a1=a1, a2=a2: lambda x: m.swapaxes(x, a1, a2),
            (x,),
        )
    for name, shapes, dtype in itertools.product(
        ["atleast_1d", "atleast_2d", "atleast_3d"],
        [[()], [(3,)], [(2, 3)], [(2, 3, 4)], [(), (3,), (2, 3)]],
        [np.float32, np.int32],
    ):
        arrs = tuple(_rand(rng, s, dtype) for s in shapes)
        yield Case(
            "testAtLeastNdLiterals",
            _label(name, shapes, _dname(dtype)),
            lambda m, name=name: lambda *a: getattr(m, name)(*a),
            arrs,
        )
    for name, value in itertools.product(
        ["atleast_1d", "atleast_2d", "atleast_3d"], [1, 2.5, True]
    ):
        yield Case(
            "testAtLeastNdLiterals",
            _label(name, "py", value),
            lambda m, name=name, v=value: lambda: getattr(m, name)(v),
            (),
        )
    for shape, new in itertools.product([(), (3,), (2, 3)], [(), (4,), (2, 5), (0,), 7]):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testResize", _label(shape, new), lambda m, n=new: lambda x: m.resize(x, n), (x,)
        )


def _diag(rng):
    for dtype, shape, offset, a1, a2, out in itertools.product(
        [np.float32, np.int8, np.bool_, np.uint8, np.complex64, np.float16],
        [(3, 4), (2, 3, 4)],
        [0, 1, -2, 5],
        [0, -1],
        [1, -2],
        [None, np.float32, np.int32],
    ):
        if (a1 % len(shape)) == (a2 % len(shape)):
            continue
        x = _rand(rng, shape, dtype)
        kw = dict(offset=offset, axis1=a1, axis2=a2, dtype=out)
        yield Case(
            "testTrace",
            _label(_dname(dtype), shape, offset, a1, a2, out and _dname(out)),
            lambda m, kw=kw: lambda x: m.trace(x, **kw),
            (x,),
        )
        if out is None:
            kw = dict(offset=offset, axis1=a1, axis2=a2)
            yield Case(
                "testDiagonal",
                _label(_dname(dtype), shape, offset, a1, a2),
                lambda m, kw=kw: lambda x: m.diagonal(x, **kw),
                (x,),
            )
    for dtype, shape, k in itertools.product(
        [np.float32, np.int32, np.bool_], [(4,), (3, 4), (0,)], [0, 2, -1, -5]
    ):
        x = _rand(rng, shape, dtype)
        yield Case(
            "testDiag", _label(_dname(dtype), shape, k), lambda m, k=k: lambda x: m.diag(x, k), (x,)
        )
        yield Case(
            "testDiagFlat",
            _label(_dname(dtype), shape, k),
            lambda m, k=k: lambda x: m.diagflat(x, k),
            (x,),
        )
    for dtype, n, mm, k in itertools.product(
        [None, np.float32, np.int8, np.bool_], [0, 3], [None, 2, 5], [0, 1, -2]
    ):
        yield Case(
            "testTri",
            _label(dtype and _dname(dtype), n, mm, k),
            lambda m, n=n, mm=mm, k=k, d=dtype: lambda: m.tri(n, mm, k, dtype=d),
            (),
        )
    for dtype, shape, k, name in itertools.product(
        [np.float32, np.bool_, np.int8], [(3,), (3, 4), (2, 3, 4)], [0, 1, -2], ["tril", "triu"]
    ):
        x = _rand(rng, shape, dtype)
        yield Case(
            "testTriLU",
            _label(name, _dname(dtype), shape, k),
            lambda m, k=k, name=name: lambda x: getattr(m, name)(x, k),
            (x,),
        )
    for name, n, k, mm in itertools.product(
        ["tril_indices", "triu_indices"], [0, 3, 4], [0, 1, -2], [None, 2, 5]
    ):
        yield Case(
            "testTriLUIndices",
            _label(name, n, k, mm),
            lambda m, name=name, n=n, k=k, mm=mm: lambda: getattr(m, name)(n, k, mm),
            (),
            jit=False,
        )
    for name, shape, k in itertools.product(
        ["tril_indices_from", "triu_indices_from"], [(3, 3), (3, 5), (5, 3)], [0, 1, -2]
    ):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testTriLUIndicesFrom",
            _label(name, shape, k),
            lambda m, name=name, k=k: lambda x: getattr(m, name)(x, k),
            (x,),
        )
    for n, ndim in itertools.product([0, 1, 3], [1, 2, 3]):
        yield Case(
            "testDiagIndices",
            _label(n, ndim),
            lambda m, n=n, ndim=ndim: lambda: m.diag_indices(n, ndim),
            (),
            jit=False,
        )
    for shape in [(3, 3), (2, 2, 2)]:
        yield Case(
            "testDiagIndicesFrom",
            _label(shape),
            lambda m: m.diag_indices_from,
            (_rand(rng, shape, np.float32),),
        )
    for dtype, shape, wrap, vshape in itertools.product(
        [np.float32, np.int32], [(3, 3), (5, 3), (2, 2, 2)], [False, True], [(), (2,)]
    ):
        x, v = _rand(rng, shape, dtype), _rand(rng, vshape, dtype)
        yield Case(
            "testFillDiagonal",
            _label(_dname(dtype), shape, wrap, vshape),
            lambda m, wrap=wrap: lambda x, v: m.fill_diagonal(x, v, wrap=wrap, inplace=False),
            (x, v),
        )
    for dtype, n, mm, k in itertools.product(
        [None, np.int32, np.bool_, np.complex64], [0, 3], [None, 4], [0, -1, 2]
    ):
        yield Case(
            "testEye",
            _label(dtype and _dname(dtype), n, mm, k),
            lambda m, n=n, mm=mm, k=k, d=dtype: lambda: m.eye(n, mm, k, dtype=d),
            (),
        )
    for dtype, n in itertools.product([None, np.int32, np.bool_], [0, 3]):
        yield Case(
            "testIdentity",
            _label(dtype and _dname(dtype), n),
            lambda m, n=n, d=dtype: lambda: m.identity(n, dtype=d),
            (),
        )


def _products(rng):
    for ldt, rdt, ls, rs, axes in itertools.product(
        [
            np.float32,
            np.int32,
            np.bfloat16 if hasattr(np, "bfloat16") else ml_dtypes.bfloat16,
            np.complex64,
            np.bool_,
        ],
        [np.float32, np.int8, np.float16],
        [(3,), (2, 3), (4, 3)],
        [(3,), (5, 3), (2, 3)],
        [(-1, -1, -1), (0, 0, 0)],
    ):
        if axes == (0, 0, 0) and (len(ls) < 2 or len(rs) < 2 or ls[0] != rs[0]):
            continue
        a, b = _rand(rng, ls, ldt), _rand(rng, rs, rdt)
        if ls[-1] == 3 and rs[-1] == 3 or axes == (0, 0, 0):
            yield Case(
                "testCross",
                _label(_dname(ldt), _dname(rdt), ls, rs, axes),
                lambda m, ax=axes: lambda a, b: m.cross(a, b, ax[0], ax[1], ax[2]),
                (a, b),
            )
    shapes = [(), (3,), (2, 3), (3, 2), (2, 3, 4)]
    for ldt, rdt, ls, rs in itertools.product(
        [np.float32, np.int8, np.bool_, np.complex64],
        [np.float16, np.int32, np.bool_],
        shapes,
        shapes,
    ):
        a, b = _rand(rng, ls, ldt), _rand(rng, rs, rdt)
        lab = _label(_dname(ldt), _dname(rdt), ls, rs)
        for name in ("outer", "inner", "kron", "dot", "matmul", "vdot", "vecdot"):
            yield Case(
                f"test{name.capitalize()}",
                lab,
                lambda m, name=name: lambda a, b: getattr(m, name)(a, b),
                (a, b),
            )
        yield Case(
            "testDotPreferred",
            lab,
            lambda m: lambda a, b: m.dot(a, b, preferred_element_type=np.float32),
            (a, b),
        )
    for ls, rs, axes in [
        ((3,), (3,), 1),
        ((2, 3), (3, 4), 1),
        ((2, 3, 4), (3, 4, 5), 2),
        ((2, 3, 4), (5, 4, 3), [[1, 2], [2, 1]]),
        ((2, 3), (4, 3), [-1, -1]),
        ((2, 3), (2, 3), 0),
        ((3,), (3,), [[0], [0]]),
        ((2, 3), (3, 2), (1, 0)),
    ]:
        for ldt, rdt in itertools.product([np.float32, np.int32, np.bool_], [np.int8, np.float16]):
            a, b = _rand(rng, ls, ldt), _rand(rng, rs, rdt)
            yield Case(
                "testTensordot",
                _label(_dname(ldt), _dname(rdt), ls, rs, axes),
                lambda m, ax=axes: lambda a, b: m.tensordot(a, b, ax),
                (a, b),
            )
    for ls, rs, name in itertools.product(
        [(3,), (2, 3), (4, 2, 3)], [(3,), (2, 3), (3, 4)], ["matvec", "vecmat"]
    ):
        a, b = _rand(rng, ls, np.float32), _rand(rng, rs, np.int32)
        yield Case(
            "testMatvecVecmat",
            _label(name, ls, rs),
            lambda m, name=name: lambda a, b: getattr(m, name)(a, b),
            (a, b),
        )


def _rounding(rng):
    for dtype, shape, lo, hi in itertools.product(
        ALL, [(), (5,), (2, 3)], [None, -1, (3,), 0.5], [None, 2, 1.5]
    ):
        if lo is None and hi is None:
            continue
        x = _rand(rng, shape, dtype)
        lo_v = _rand(rng, lo, dtype) if isinstance(lo, tuple) else lo
        yield Case(
            "testClipStaticBounds",
            _label(_dname(dtype), shape, lo, hi),
            lambda m, lo=lo_v, hi=hi: lambda x: m.clip(x, lo, hi),
            (x,),
        )
    for dtype, shape, decimals in itertools.product(ALL, [(), (5,)], [0, 1, -1, 3]):
        x = _rand(rng, shape, dtype) * (
            10 if np.dtype(dtype).kind in "iuf" and np.dtype(dtype) != np.bool_ else 1
        )
        x = x.astype(dtype)
        yield Case(
            "testRound",
            _label(_dname(dtype), shape, decimals),
            lambda m, d=decimals: lambda x: m.round(x, d),
            (x,),
        )
    for dtype, shape in itertools.product(ALL, [(), (5,)]):
        x = _rand(rng, shape, dtype)
        yield Case("testFix", _label(_dname(dtype), shape), lambda m: m.fix, (x,))
    for dtype, kw in itertools.product(
        NUMBER + BOOL, [{}, dict(nan=1.0, posinf=2.0, neginf=-3.0), dict(copy=False, nan=0)]
    ):
        x = _rand(rng, (6,), dtype)
        if np.dtype(dtype).kind in "fc":
            x = x.astype(np.complex64 if np.dtype(dtype).kind == "c" else np.float32)
            x[:3] = [np.nan, np.inf, -np.inf]
            x = x.astype(dtype)
        yield Case(
            "testNanToNum",
            _label(_dname(dtype), sorted(kw.items())),
            lambda m, kw=kw: lambda x: m.nan_to_num(x, **kw),
            (x,),
        )


def _sets(rng):
    for dtype, shape, flags, axis, size in itertools.product(
        [np.float32, np.int8, np.bool_, np.uint8, np.complex64],
        [(0,), (6,), (3, 4)],
        [(0, 0, 0), (1, 1, 1), (0, 1, 0), (0, 0, 1)],
        [None, 0, -1],
        [None, 3, 8],
    ):
        if axis is not None and len(shape) < 2:
            continue
        x = (
            _rand(rng, shape, dtype)
            if dtype != np.float32
            else rng.randint(-2, 3, shape).astype(dtype)
        )
        ri, rv, rc = flags
        kw = dict(
            return_index=bool(ri),
            return_inverse=bool(rv),
            return_counts=bool(rc),
            axis=axis,
            size=size,
            fill_value=None,
        )
        if size is not None and shape == (0,):
            kw["fill_value"] = 0
        yield Case(
            "testUnique",
            _label(_dname(dtype), shape, flags, axis, size),
            lambda m, kw=kw: lambda x: m.unique(x, **kw),
            (x,),
            jit=size is not None,
        )
    for name, dtype, shape in itertools.product(
        ["unique_values", "unique_counts", "unique_inverse", "unique_all"],
        [np.float32, np.int32],
        [(6,), (2, 3)],
    ):
        x = rng.randint(-2, 3, shape).astype(dtype)
        yield Case(
            "testUniqueArrayApi",
            _label(name, _dname(dtype), shape),
            lambda m, name=name: (
                lambda x: (
                    tuple(getattr(m, name)(x)) if name != "unique_values" else m.unique_values(x)
                )
            ),
            (x,),
            jit=False,
        )
    for name, ldt, rdt, ls, rs, au in itertools.product(
        ["intersect1d", "union1d", "setdiff1d", "setxor1d"],
        [np.int32, np.float32, np.uint8],
        [np.int8, np.float16],
        [(0,), (5,), (2, 3)],
        [(4,), (0,)],
        [False, True],
    ):
        a, b = rng.randint(0, 6, ls).astype(ldt), rng.randint(0, 6, rs).astype(rdt)
        if au:
            a, b = np.unique(a), np.unique(b)
        kw = dict(assume_unique=au) if name != "union1d" else {}
        yield Case(
            f"test{name.capitalize()}",
            _label(_dname(ldt), _dname(rdt), ls, rs, au),
            lambda m, name=name, kw=kw: lambda a, b: getattr(m, name)(a, b, **kw),
            (a, b),
            jit=False,
        )
    for ldt, rdt, ls, rs, invert, method in itertools.product(
        [np.int32, np.float32, np.bool_],
        [np.int8, np.float16],
        [(), (5,), (2, 3)],
        [(4,), (2, 2), ()],
        [False, True],
        ["auto", "compare_all", "binary_search", "sort"],
    ):
        a, b = rng.randint(0, 4, ls).astype(ldt), rng.randint(0, 4, rs).astype(rdt)
        yield Case(
            "testIsin",
            _label(_dname(ldt), _dname(rdt), ls, rs, invert, method),
            lambda m, i=invert, meth=method: lambda a, b: m.isin(a, b, invert=i, method=meth),
            (a, b),
        )
    for size, fill, ri_, _rc in itertools.product(
        [None, 3], [None, 9], [False, True], [False, True]
    ):
        a, b = rng.randint(0, 6, (6,)).astype(np.int32), rng.randint(0, 6, (5,)).astype(np.int32)
        if size is None and fill is not None:
            continue
        yield Case(
            "testIntersect1dReturnIndices",
            _label(size, fill, ri_),
            lambda m, ri_=ri_: lambda a, b: m.intersect1d(a, b, return_indices=ri_),
            (a, b),
            jit=False,
        )
        yield Case(
            "testUnion1dSize",
            _label(size, fill),
            lambda m, s=size, f=fill: lambda a, b: m.union1d(a, b, size=s, fill_value=f),
            (a, b),
            jit=size is not None,
        )
        yield Case(
            "testSetdiff1dSize",
            _label(size, fill),
            lambda m, s=size, f=fill: lambda a, b: m.setdiff1d(a, b, size=s, fill_value=f),
            (a, b),
            jit=size is not None,
        )
        yield Case(
            "testSetxor1dSize",
            _label(size, fill),
            lambda m, s=size, f=fill: lambda a, b: m.setxor1d(a, b, size=s, fill_value=f),
            (a, b),
            jit=size is not None,
        )


def _histograms(rng):
    for dtype, shape, bins, rng_, density, weights in itertools.product(
        [np.float32, np.int32, np.uint8, np.float16],
        [(0,), (10,), (3, 4)],
        [1, 4, "edges"],
        [None, (-1.0, 2.0)],
        [False, True],
        [False, True],
    ):
        x = _rand(rng, shape, dtype)
        w = _rand(rng, shape, np.float32) if weights else None
        b = np.array([-2.0, -0.5, 0.0, 1.0, 4.0], np.float32) if bins == "edges" else bins
        yield Case(
            "testHistogram",
            _label(_dname(dtype), shape, bins, rng_, density, weights),
            lambda m, b=b, r=rng_, d=density: (
                lambda x, w: m.histogram(x, bins=b, range=r, density=d, weights=w)
            ),
            (x, w),
        )
        if not density and not weights:
            yield Case(
                "testHistogramBinEdges",
                _label(_dname(dtype), shape, bins, rng_),
                lambda m, b=b, r=rng_: lambda x: m.histogram_bin_edges(x, bins=b, range=r),
                (x,),
            )
    for shape, bins, density in itertools.product(
        [(10,), (0,)], [2, [2, 3], "edges"], [False, True]
    ):
        x, y = _rand(rng, shape, np.float32), _rand(rng, shape, np.float32)
        b = (
            [np.array([-3.0, 0.0, 3.0], np.float32), np.array([-1.0, 1.0], np.float32)]
            if bins == "edges"
            else bins
        )
        yield Case(
            "testHistogram2d",
            _label(shape, bins, density),
            lambda m, b=b, d=density: lambda x, y: m.histogram2d(x, y, bins=b, density=d),
            (x, y),
        )
    for shape, bins in itertools.product([(10, 3), (0, 2)], [2, 3]):
        x = _rand(rng, shape, np.float32)
        yield Case(
            "testHistogramdd",
            _label(shape, bins),
            lambda m, b=bins: lambda x: m.histogramdd(x, bins=b),
            (x,),
        )
    for dtype, n, weights, minlength, length in itertools.product(
        [np.int32, np.uint8, np.int8, np.bool_],
        [0, 8],
        [None, np.float32, np.int32],
        [0, 10],
        [None, 3, 12],
    ):
        x = rng.randint(0, 6, (n,)).astype(dtype) if dtype != np.bool_ else rng.rand(n) > 0.5
        w = _rand(rng, (n,), weights) if weights else None
        yield Case(
            "testBincount",
            _label(_dname(dtype), n, weights and _dname(weights), minlength, length),
            lambda m, ml=minlength, ln=length: (
                lambda x, w: m.bincount(x, w, minlength=ml, length=ln)
            ),
            (x, w),
            jit=length is not None,
        )


def _calculus(rng):
    for dtype, shape, varargs, axis, edge in itertools.product(
        [np.float32, np.int32, np.float16, np.complex64, np.bool_],
        [(5,), (3, 4), (2, 3, 4)],
        [(), (0.5,), ("coords",)],
        [None, 0, -1, (0, 1)],
        [1, 2],
    ):
        if isinstance(axis, tuple) and (len(shape) < 2 or varargs):
            continue
        if axis is None and len(shape) > 1 and varargs:
            continue
        x = _rand(rng, shape, dtype)
        n = shape[axis if isinstance(axis, int) else 0]
        va = (
            (np.cumsum(rng.rand(n) + 0.5).astype(np.float32),)
            if varargs == ("coords",)
            else varargs
        )
        yield Case(
            "testGradient",
            _label(_dname(dtype), shape, varargs, axis, edge),
            lambda m, va=va, a=axis, e=edge: lambda x: m.gradient(x, *va, axis=a, edge_order=e),
            (x,),
        )
    for dtype, shape, to_end, to_begin in itertools.product(
        [np.float32, np.int8, np.bool_, np.uint8],
        [(), (5,), (2, 3)],
        [None, 3, (1, 2)],
        [None, -1.5, [7]],
    ):
        x = _rand(rng, shape, dtype)
        yield Case(
            "testEdiff1d",
            _label(_dname(dtype), shape, to_end, to_begin),
            lambda m, te=to_end, tb=to_begin: lambda x: m.ediff1d(x, te, tb),
            (x,),
        )
    for dtype, shape, n, axis, prepend in itertools.product(
        [np.float32, np.int8, np.bool_, np.uint8],
        [(5,), (3, 4)],
        [0, 1, 2, 6],
        [0, -1],
        [None, 1, "arr"],
    ):
        x = _rand(rng, shape, dtype)
        pp = _rand(rng, shape, dtype) if prepend == "arr" else prepend
        yield Case(
            "testDiff",
            _label(_dname(dtype), shape, n, axis, prepend),
            lambda m, n=n, a=axis, p=pp: lambda x: m.diff(x, n, a, prepend=p),
            (x,),
        )
    for name, ldt, rdt, ls, rs, mode in itertools.product(
        ["convolve", "correlate"],
        [np.float32, np.int32, np.bool_, np.complex64],
        [np.float16, np.int8],
        [(5,), (1,)],
        [(3,), (7,)],
        ["full", "same", "valid"],
    ):
        a, b = _rand(rng, ls, ldt), _rand(rng, rs, rdt)
        yield Case(
            f"test{name.capitalize()}",
            _label(_dname(ldt), _dname(rdt), ls, rs, mode),
            lambda m, name=name, mode=mode: lambda a, b: getattr(m, name)(a, b, mode=mode),
            (a, b),
        )
    for dtype, shape, axis in itertools.product(
        [np.float32, np.float16, np.complex64], [(5,), (3, 4)], [0, -1]
    ):
        y = _rand(rng, shape, dtype)
        yield Case(
            "testTrapezoid",
            _label(_dname(dtype), shape, axis),
            lambda m, a=axis: lambda y: m.trapezoid(y, dx=0.5, axis=a),
            (y,),
        )


def _polys(rng):
    for dtype, n, xshape in itertools.product(
        [np.float32, np.int32, np.complex64, np.float16], [0, 1, 4], [(), (3,), (2, 2)]
    ):
        p, x = _rand(rng, (n,), dtype), _rand(rng, xshape, dtype)
        yield Case("testPolyval", _label(_dname(dtype), n, xshape), lambda m: m.polyval, (p, x))
    for dtype, n in itertools.product([np.float32, np.int32], [1, 3, 5]):
        p = _rand(rng, (n,), dtype)
        p[0] = 1 + abs(p[0])
        yield Case(
            "testRoots",
            _label(_dname(dtype), n),
            lambda m: lambda p: m.sort_complex(m.roots(p, strip_zeros=False)),
            (p,),
            jit=True,
        )
        yield Case(
            "testRootsNoStrip",
            _label(_dname(dtype), n),
            lambda m: lambda p: m.sort_complex(m.roots(p)),
            (p,),
            jit=False,
        )
    for dtype, shape in itertools.product(
        [np.float32, np.int32, np.complex64], [(0,), (3,), (3, 3)]
    ):
        a = _rand(rng, shape, dtype)
        yield Case("testPoly", _label(_dname(dtype), shape), lambda m: m.poly, (a,), jit=True)
    for name, ldt, rdt, ln, rn in itertools.product(
        ["polyadd", "polysub", "polymul"],
        [np.float32, np.int32, np.bool_],
        [np.int8, np.float16, np.complex64],
        [1, 3],
        [0, 2, 4],
    ):
        a, b = _rand(rng, (ln,), ldt), _rand(rng, (rn,), rdt)
        yield Case(
            f"test{name.capitalize()}",
            _label(_dname(ldt), _dname(rdt), ln, rn),
            lambda m, name=name: lambda a, b: getattr(m, name)(a, b),
            (a, b),
        )
    for ldt, rdt, ln, rn in itertools.product(
        [np.float32, np.int32], [np.float32, np.int8], [2, 4], [1, 2]
    ):
        a, b = _rand(rng, (ln,), ldt), _rand(rng, (rn,), rdt)
        b[0] = 2
        yield Case(
            "testPolydiv",
            _label(_dname(ldt), _dname(rdt), ln, rn),
            lambda m: m.polydiv,
            (a, b),
            jit=False,
        )
    for dtype, n, order, k in itertools.product(
        [np.float32, np.int32, np.complex64], [1, 4], [0, 1, 3], [None, 2.0, [1.0, 2.0, 3.0]]
    ):
        p = _rand(rng, (n,), dtype)
        yield Case(
            "testPolyder",
            _label(_dname(dtype), n, order),
            lambda m, o=order: lambda p: m.polyder(p, o),
            (p,),
        )
        if isinstance(k, list) and order != 3:
            continue
        yield Case(
            "testPolyint",
            _label(_dname(dtype), n, order, k),
            lambda m, o=order, k=k: lambda p: m.polyint(p, o, k),
            (p,),
        )


def _creation(rng):
    for start, stop, step, dtype in itertools.product(
        [0, 2, -1.5, 3],
        [None, 7, 0.5],
        [None, 2, -1, 0.25],
        [None, np.int32, np.float32, np.float16, np.uint8],
    ):
        if step is not None and stop is None:
            continue
        args = tuple(a for a in (start, stop, step) if a is not None)
        yield Case(
            "testArange",
            _label(args, dtype and _dname(dtype)),
            lambda m, a=args, d=dtype: lambda: m.arange(*a, dtype=d),
            (),
            jit=False,
        )
    for name, start, stop, num, endpoint, dtype, axis in itertools.product(
        ["linspace", "logspace", "geomspace"],
        [0, 1.0, (1.0, 2.0)],
        [4, (3.0, 8.0)],
        [0, 1, 5],
        [True, False],
        [None, np.int32, np.float16, np.complex64],
        [0, -1],
    ):
        s = np.array(start, np.float32) if isinstance(start, tuple) else start
        e = np.array(stop, np.float32) if isinstance(stop, tuple) else stop
        if name == "geomspace" and not isinstance(start, tuple) and start == 0:
            s = 2
        yield Case(
            f"test{name.capitalize()}",
            _label(start, stop, num, endpoint, dtype and _dname(dtype), axis),
            lambda m, name=name, n=num, ep=endpoint, d=dtype, ax=axis: (
                lambda s, e: getattr(m, name)(s, e, n, endpoint=ep, dtype=d, axis=ax)
            ),
            (s, e),
        )
    for shapes, indexing, sparse, dtype in itertools.product(
        [[(3,)], [(3,), (4,)], [(), (2,), (3,)], [(2, 2), (3,)]],
        ["xy", "ij"],
        [False, True],
        [np.float32, np.int8],
    ):
        arrs = tuple(_rand(rng, s, dtype) for s in shapes)
        yield Case(
            "testMeshgrid",
            _label(shapes, indexing, sparse, _dname(dtype)),
            lambda m, i=indexing, s=sparse: lambda *a: m.meshgrid(*a, indexing=i, sparse=s),
            arrs,
        )
    for dims, dtype, sparse in itertools.product(
        [(), (3,), (2, 3), (0, 2)], [None, np.int8, np.float32], [False, True]
    ):
        yield Case(
            "testIndices",
            _label(dims, dtype and _dname(dtype), sparse),
            lambda m, d=dims, t=dtype, s=sparse: lambda: m.indices(d, dtype=t, sparse=s),
            (),
            jit=False,
        )
    for shapes in [[(3,)], [(3,), (4,)], [(2,), (0,), (3,)]]:
        arrs = tuple(_rand(rng, s, np.int32) for s in shapes)
        yield Case("testIx_", _label(shapes), lambda m: lambda *a: m.ix_(*a), arrs)
    for name, value, dtype in itertools.product(
        ["full", "zeros", "ones", "empty"],
        [None, 2, 1.5, True],
        [None, np.int8, np.float16, np.bool_],
    ):
        if (name == "full") != (value is not None):
            continue
        shape = (2, 3)
        if name == "full":
            yield Case(
                "testFull",
                _label(value, dtype and _dname(dtype)),
                lambda m, v=value, d=dtype: lambda: m.full(shape, v, dtype=d),
                (),
                jit=False,
            )
        elif name != "empty":
            yield Case(
                "testZerosOnes",
                _label(name, dtype and _dname(dtype)),
                lambda m, name=name, d=dtype: lambda: getattr(m, name)(shape, dtype=d),
                (),
                jit=False,
            )
    for name, dtype, like, shape in itertools.product(
        ["full_like", "zeros_like", "ones_like"],
        [None, np.int8, np.float16],
        [np.float32, np.int32, np.bool_],
        [None, (2,), ()],
    ):
        x = _rand(rng, (3,), like)
        if name == "full_like":
            fn = lambda m, d=dtype, s=shape: lambda x: m.full_like(x, 2, dtype=d, shape=s)  # noqa: E731
        else:
            fn = lambda m, name=name, d=dtype, s=shape: (
                lambda x: getattr(m, name)(x, dtype=d, shape=s)
            )  # noqa: E731
        yield Case(
            "testFullLike", _label(name, dtype and _dname(dtype), _dname(like), shape), fn, (x,)
        )


def _types(rng):
    values = [
        1,
        1.5,
        1j,
        True,
        np.float32(1),
        np.int8(1),
        np.array([1.0], np.float16),
        np.array([1], np.uint8),
        np.array([True]),
    ]
    for value, name in itertools.product(
        values,
        ["iscomplexobj", "isrealobj", "isreal", "iscomplex", "isscalar", "ndim", "shape", "size"],
    ):
        yield Case(
            "testIscomplexobj",
            _label(name, repr(value)),
            lambda m, name=name, v=value: lambda: getattr(m, name)(v),
            (),
            jit=False,
        )
    pairs = list(
        itertools.product(
            [
                np.bool_,
                np.int8,
                np.uint8,
                np.int32,
                np.uint32,
                np.float16,
                ml_dtypes.bfloat16,
                np.float32,
                np.complex64,
                np.int64,
                np.float64,
            ],
            repeat=2,
        )
    )
    for a, b in pairs:
        yield Case(
            "testResultType",
            _label(_dname(a), _dname(b)),
            lambda m, a=a, b=b: lambda: m.result_type(a, b),
            (),
            jit=False,
        )
        yield Case(
            "testPromoteTypes",
            _label(_dname(a), _dname(b)),
            lambda m, a=a, b=b: lambda: m.promote_types(a, b),
            (),
            jit=False,
        )
        for casting in ["no", "equiv", "safe", "same_kind", "unsafe"]:
            yield Case(
                "testCanCast",
                _label(_dname(a), _dname(b), casting),
                lambda m, a=a, b=b, c=casting: lambda: m.can_cast(a, b, casting=c),
                (),
                jit=False,
            )
    for v in [1, 1.5, 1j, True]:
        for d in [np.int8, np.float16, np.bool_]:
            yield Case(
                "testResultTypeWeak",
                _label(repr(v), _dname(d)),
                lambda m, v=v, d=d: lambda: m.result_type(v, d),
                (),
                jit=False,
            )
    for src, dst in itertools.product(ALL, ALL + [int, float, complex, bool]):
        x = _rand(rng, (4,), src)
        yield Case(
            "testAstype",
            _label(_dname(src), getattr(dst, "__name__", dst)),
            lambda m, d=dst: lambda x: m.astype(x, d),
            (x,),
        )
    for src, dst in itertools.product(
        [np.float32, np.int32, np.uint8, np.int8, np.bool_, np.float16, np.uint32],
        [
            np.float32,
            np.int32,
            np.uint8,
            np.int8,
            np.int16,
            np.bool_,
            ml_dtypes.bfloat16,
            np.uint32,
        ],
    ):
        x = _rand(rng, (4, 4), src)
        if src == np.float32 or src == np.float16:
            x = np.abs(x)
        if dst == np.bool_:
            x = (x != 0).astype(src) if src != np.bool_ else x
        yield Case(
            "testView",
            _label(_dname(src), _dname(dst)),
            lambda m, d=dst: (
                lambda x: (
                    x.view(d)
                    if hasattr(x, "view") and m.__name__ != "numpy"
                    else m.asarray(x).view(d)
                )
            ),
            (x,),
            jit=False,
        )
    for dtype, count, offset in itertools.product(
        [np.float32, np.int8, np.uint8, np.int32], [-1, 2], [0, 4]
    ):
        buf = np.arange(16, dtype=np.uint8).tobytes()
        yield Case(
            "testFrombuffer",
            _label(_dname(dtype), count, offset),
            lambda m, d=dtype, c=count, o=offset: (
                lambda: m.frombuffer(buf, dtype=d, count=c, offset=o)
            ),
            (),
            jit=False,
        )
    for obj, copy, dtype, ndmin in itertools.product(
        ["np", "list", "scalar", "nested"], [True, False, None], [None, np.int8, np.float32], [0, 2]
    ):
        src = {
            "np": np.arange(3, dtype=np.int32),
            "list": [1, 2.5, 3],
            "scalar": 3,
            "nested": [[1, 2], [3, True]],
        }[obj]
        yield Case(
            "testArrayCopy",
            _label(obj, copy, dtype and _dname(dtype), ndmin),
            lambda m, s=src, c=copy, d=dtype, n=ndmin: lambda: m.array(s, copy=c, dtype=d, ndmin=n),
            (),
            jit=False,
        )
        yield Case(
            "testAsarrayCopy",
            _label(obj, copy, dtype and _dname(dtype)),
            lambda m, s=src, c=copy, d=dtype: lambda: m.asarray(s, copy=c, dtype=d),
            (),
            jit=False,
        )


def _editing(rng):
    for dtype, shape, obj, axis in itertools.product(
        [np.float32, np.int8, np.bool_],
        [(5,), (3, 4)],
        [0, -1, slice(1, 3), slice(None, None, 2), [0, 2], [], np.array([True, False, True])],
        [None, 0, -1],
    ):
        x = _rand(rng, shape, dtype)
        n = x.size if axis is None else shape[axis]
        if isinstance(obj, np.ndarray) and len(obj) != n:
            continue
        yield Case(
            "testDelete",
            _label(_dname(dtype), shape, obj, axis),
            lambda m, o=obj, a=axis: lambda x: m.delete(x, o, a),
            (x,),
            jit=False,
        )
    for dtype, shape, obj, vshape, axis in itertools.product(
        [np.float32, np.int8, np.bool_],
        [(5,), (3, 4)],
        [0, -1, 2, slice(1, 3), [0, 2]],
        [(), (1,), (2,)],
        [None, 0, -1],
    ):
        x = _rand(rng, shape, dtype)
        v = _rand(rng, vshape, np.float32)
        yield Case(
            "testInsert",
            _label(_dname(dtype), shape, obj, vshape, axis),
            lambda m, o=obj, a=axis: lambda x, v: m.insert(x, o, v, a),
            (x, v),
            jit=False,
        )
    for dtype, data, trim in itertools.product(
        [np.float32, np.int32, np.bool_],
        [[0, 0, 1, 2, 0], [0, 0], [], [3, 0, 4]],
        ["fb", "f", "b", "F", "B"],
    ):
        x = np.array(data, dtype)
        yield Case(
            "testTrimZeros",
            _label(_dname(dtype), data, trim),
            lambda m, t=trim: lambda x: m.trim_zeros(x, t),
            (x,),
            jit=False,
        )
    for dtype, shape, size, fill in itertools.product(
        [np.float32, np.int8, np.bool_, np.complex64], [(5,), (3, 4)], [None, 3, 20], [None, 7]
    ):
        if size is None and fill is not None:
            continue
        x = _rand(rng, shape, dtype)
        c = rng.rand(*shape) > 0.5
        yield Case(
            "testExtract",
            _label(_dname(dtype), shape, size, fill),
            lambda m, s=size, f=fill: lambda c, x: m.extract(c, x, size=s, fill_value=f),
            (c, x),
            jit=size is not None,
        )
    for dtype, shape, clen, axis, size in itertools.product(
        [np.float32, np.int8, np.bool_], [(5,), (3, 4)], [0, 2, 3], [None, 0, -1], [None, 4]
    ):
        x = _rand(rng, shape, dtype)
        c = rng.rand(clen) > 0.4
        yield Case(
            "testCompress",
            _label(_dname(dtype), shape, clen, axis, size),
            lambda m, a=axis, s=size: lambda c, x: m.compress(c, x, axis=a, size=s),
            (c, x),
            jit=size is not None,
        )
    for dtype, shape, vlen in itertools.product([np.float32, np.int32], [(5,), (3, 4)], [1, 2, 5]):
        x = _rand(rng, shape, dtype)
        mask = rng.rand(*shape) > 0.5
        v = _rand(rng, (vlen,), dtype)
        yield Case(
            "testPlace",
            _label(_dname(dtype), shape, vlen),
            lambda m: lambda x, mask, v: m.place(x, mask, v, inplace=False),
            (x, mask, v),
            jit=False,
        )


def _apply(rng):
    for shape, axis, func in itertools.product(
        [(3,), (2, 3), (2, 3, 4)], [0, -1, 1], ["sum", "vector", "scalar_pair"]
    ):
        if axis == 1 and len(shape) < 2:
            continue
        x = _rand(rng, shape, np.float32)

        def fn(m, axis=axis, func=func):
            f = {
                "sum": lambda v: m.sum(v),
                "vector": lambda v: v[::-1] * 2,
                "scalar_pair": lambda v: m.outer(v, v),
            }[func]
            return lambda x: m.apply_along_axis(f, axis, x)

        yield Case("testApplyAlongAxis", _label(shape, axis, func), fn, (x,))
    for shape, axes, dtype in itertools.product(
        [(2, 3, 4)], [0, [0], [0, 2], [], (1, -1)], [np.float32, np.int32]
    ):
        x = _rand(rng, shape, dtype)
        yield Case(
            "testApplyOverAxes",
            _label(shape, axes, _dname(dtype)),
            lambda m, a=axes: lambda x: m.apply_over_axes(m.sum, x, a),
            (x,),
        )
    for sig, shapes in [
        (None, [(3,), (2, 3)]),
        ("(n)->()", [(4,), (2, 4)]),
        ("(n),(n)->()", [(2, 4), (4,)]),
        ("(m,n),(n)->(m)", [(3, 4), (2, 4)]),
        ("()->(2)", [(3,), ()]),
        ("(n)->(),(n)", [(2, 3), ()]),
    ]:
        args = tuple(_rand(rng, s, np.float32) for s in shapes if s != ())

        def fn(m, sig=sig):
            def body(*a):
                if sig is None:
                    return a[0] * 2 + a[1]
                if sig == "(n)->()":
                    return m.sum(a[0] ** 2)
                if sig == "(n),(n)->()":
                    return m.dot(a[0], a[1])
                if sig == "(m,n),(n)->(m)":
                    return m.matmul(a[0], a[1])
                if sig == "()->(2)":
                    return m.stack([a[0], a[0] + 1])
                return m.sum(a[0]), a[0] * 3

            return m.vectorize(body, signature=sig)

        yield Case("testVectorize", _label(sig, shapes), fn, args)
    for nin, nout, dtype in itertools.product([1, 2], [1, 2], [np.float32, np.int32]):
        args = tuple(_rand(rng, (3,), dtype) for _ in range(nin))

        def fn(m, nin=nin, nout=nout):
            def body(*a):
                s = a[0] + a[-1]
                return (s, s * 2) if nout == 2 else s

            return m.frompyfunc(body, nin, nout)

        yield Case("testFrompyfunc", _label(nin, nout, _dname(dtype)), fn, args)


GENERATORS = [
    _sort,
    _search,
    _take,
    _where,
    _stacking,
    _shape_ops,
    _diag,
    _products,
    _rounding,
    _sets,
    _histograms,
    _calculus,
    _polys,
    _creation,
    _types,
    _editing,
    _apply,
]


def cases(limit: int = 300) -> list[Case]:
    """The whole sweep: per test method at most ``limit`` cases spread evenly."""
    by_method: dict[str, list[Case]] = {}
    for gen in GENERATORS:
        rng = np.random.RandomState(0)
        for case in gen(rng):
            by_method.setdefault(case.method, []).append(case)
    out = []
    for method in by_method:
        out.extend(_even(by_method[method], limit))
    return out


# --- running and comparing --------------------------------------------------------------------


def run(case: Case, module, jit=None):
    """``case`` on ``module`` (``jax.numpy`` or ``refimpl.numpy``); ``jit`` is
    that library's jit to compile with, or None for eager. Returns
    ("ok", result) or ("raise", exception class)."""
    try:
        f = case.fn(module)
        if jit is not None:
            f = jit(f)
        return "ok", f(*case.args)
    except Exception as err:  # noqa: BLE001 - the class is what is compared
        return "raise", type(err)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)] + (
            [type(tree).__name__] if isinstance(tree, list) else []
        )
    if hasattr(tree, "_asdict"):
        return _leaves(tuple(tree))
    return [tree]


def _tol(dtype):
    dtype = np.dtype(dtype)
    if dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        return 2e-2
    if dtype.kind in "fc":
        return 2e-5
    return 0


def _describe(leaf):
    if isinstance(leaf, str):
        return ("container", leaf)
    if isinstance(leaf, (bool, int, float, complex, np.dtype, type)) or leaf is None:
        return ("python", type(leaf).__name__, leaf)
    if isinstance(leaf, tuple):
        return ("tuple", leaf)
    aval = getattr(leaf, "aval", None)
    weak = getattr(aval, "weak_type", getattr(leaf, "weak_type", None))
    return ("array", tuple(np.shape(leaf)), np.dtype(leaf.dtype).name, weak)


def compare(got, want) -> str | None:
    """None when ``got`` (refimpl's run) matches ``want`` (JAX's), else a short
    class of the difference."""
    if got[0] != want[0]:
        w = want[1].__name__ if want[0] == "raise" else "-"
        g = got[1].__name__ if got[0] == "raise" else "-"
        return f"raises:{w}/{g}"
    if got[0] == "raise":
        # a subclass passes JAX's assertRaises (NumPy's AxisError is a ValueError and an IndexError)
        return (
            None if issubclass(got[1], want[1]) else f"class:{want[1].__name__}/{got[1].__name__}"
        )
    gl, wl = _leaves(got[1]), _leaves(want[1])
    if len(gl) != len(wl):
        return f"tree:{len(wl)}/{len(gl)}"
    for g, w in zip(gl, wl, strict=True):
        dg, dw = _describe(g), _describe(w)
        if dg[0] != dw[0]:
            if {dg[0], dw[0]} <= {"python", "array"}:
                return f"kind:{dw[0]}/{dg[0]}"
            return f"kind:{dw}/{dg}"
        if dw[0] in ("container", "tuple"):
            if dg != dw:
                return f"container:{dw}/{dg}"
            continue
        if dw[0] == "python":
            if dg[1] != dw[1] or not (dg[2] == dw[2] or (dg[2] != dg[2] and dw[2] != dw[2])):
                return f"python:{dw[1:]}/{dg[1:]}"
            continue
        if dg[1] != dw[1]:
            return "shape"
        if dg[2] != dw[2]:
            return f"dtype:{dw[2]}/{dg[2]}"
        if dg[3] != dw[3]:
            return f"weak:{dw[3]}/{dg[3]}"
        gv, wv = np.asarray(g), np.asarray(w)
        tol = _tol(wv.dtype)
        if wv.dtype.kind in "fcV" or wv.dtype == np.dtype(ml_dtypes.bfloat16):
            gv, wv = gv.astype(np.complex128), wv.astype(np.complex128)
            ok = np.allclose(gv, wv, rtol=tol, atol=tol, equal_nan=True)
        else:
            ok = np.array_equal(gv, wv)
        if not ok:
            return "values"
    return None
