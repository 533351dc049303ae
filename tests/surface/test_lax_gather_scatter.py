"""``lax.gather`` / ``lax.scatter*`` with XLA dimension numbers, against ``jax.lax``.

A seeded generator draws random *valid* dimension numbers (batching dims,
collapsed/inserted dims, permuted start_index_map, empty index vectors, zero
slice sizes, empty batches) and indices up to 2 past either end of their
range (so every mode meets out-of-bounds starts). Each case runs on the
reference backend and on PJRT (under ``jit``) and must equal ``jax.lax``;
so must the derivatives (jvp and vjp), ``vmap`` with random in_axes, and
the errors for inconsistent dimension numbers (class and JAX's message).

Two places where JAX is not the oracle, each with its own test:

* a combining scatter with an EMPTY index vector and several updates:
  XLA applies only the last one, the spec (and refimpl) combines them all;
* the derivative of scatter_min/max with ``mode="clip"`` and a clamped
  index: JAX's rule scatters with the default (drop) mode and yields inf/NaN;
  refimpl is checked against central finite differences there.
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
from refimpl import lax

KINDS = ("scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max")
GATHER_MODES = ("clip", "fill", None, "promise_in_bounds")
# the first seed runs by default (a few seconds); more under -m slow
SEEDS = [0, *(pytest.param(s, marks=pytest.mark.slow) for s in range(1, 6))]
SCATTER_MODES = ("clip", "drop", None, "promise_in_bounds")


# --- random valid dimension numbers ------------------------------------------------------


def random_case(rng: np.random.Generator) -> dict:
    """A random valid gather (its mirror image is a valid scatter): operand
    shape, the five dimension-number tuples, slice sizes and indices."""
    rank = int(rng.integers(1, 5))
    shape = tuple(int(n) for n in rng.integers(1, 5, size=rank))
    dims = list(range(rank))
    n_batching = int(rng.integers(0, min(2, rank) + 1)) if rng.random() < 0.4 else 0
    obd = sorted(rng.choice(dims, size=n_batching, replace=False).tolist()) if n_batching else []
    rest = [d for d in dims if d not in obd]
    k = int(rng.integers(0, len(rest) + 1))
    index_map = [int(d) for d in rng.permutation(rest)[:k]]
    n_collapsed = int(rng.integers(0, len(rest) + 1))
    collapsed = sorted(rng.choice(rest, size=n_collapsed, replace=False).tolist())
    sizes = []
    for d in dims:
        if d in obd or d in collapsed:
            sizes.append(1)
        else:
            sizes.append(int(rng.integers(0 if rng.random() < 0.1 else 1, shape[d] + 1)))
    n_batch = n_batching + int(rng.integers(0, 3))
    low = 0 if rng.random() < 0.05 else 1
    batch_shape = [int(n) for n in rng.integers(low, 4, size=n_batch)]
    positions = [int(p) for p in rng.permutation(n_batch)[:n_batching]]
    for p, d in zip(positions, obd, strict=True):
        batch_shape[p] = shape[d]
    n_window = rank - len(obd) - len(collapsed)
    out_rank = n_window + n_batch
    offset = sorted(rng.choice(out_rank, size=n_window, replace=False).tolist())
    columns = [rng.integers(-2, shape[d] - sizes[d] + 3, size=batch_shape) for d in index_map]
    indices = np.stack(columns, -1) if k else np.zeros((*batch_shape, 0), np.int64)
    index_dtype = [np.int32, np.int32, np.int8, np.uint8, np.int64][int(rng.integers(0, 5))]
    if index_dtype == np.uint8:
        indices = np.where(indices < 0, 255, indices)  # huge, out of bounds
    return {
        "shape": shape,
        "dn": (tuple(offset), tuple(collapsed), tuple(index_map), tuple(obd), tuple(positions)),
        "sizes": tuple(sizes),
        "indices": indices.astype(index_dtype),
    }


def cases(seed: int, count: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [random_case(rng) for _ in range(count)]


def gather_fns(case: dict, mode, **kw):
    dn, sizes = case["dn"], case["sizes"]

    def ours(x, i):
        return lax.gather(x, i, lax.GatherDimensionNumbers(*dn), sizes, mode=mode, **kw)

    def theirs(x, i):
        return jlax.gather(x, i, jlax.GatherDimensionNumbers(*dn), sizes, mode=mode, **kw)

    return ours, theirs


def scatter_fns(kind: str, case: dict, mode, **kw):
    dn = case["dn"]

    def ours(x, i, u):
        return getattr(lax, kind)(x, i, u, lax.ScatterDimensionNumbers(*dn), mode=mode, **kw)

    def theirs(x, i, u):
        return getattr(jlax, kind)(x, i, u, jlax.ScatterDimensionNumbers(*dn), mode=mode, **kw)

    return ours, theirs


def updates_shape(case: dict) -> tuple[int, ...]:
    x = jax.ShapeDtypeStruct(case["shape"], np.float32)
    i = jax.ShapeDtypeStruct(case["indices"].shape, case["indices"].dtype)
    return jax.eval_shape(gather_fns(case, None)[1], x, i).shape


def values(rng, shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, size=shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def assert_same(got, want, tol=0.0, where=""):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{where}: {got.dtype}{got.shape} != jax {want.dtype}{want.shape}"
    )
    if tol:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def _combines_empty_vector(kind: str, case: dict) -> bool:
    """The XLA difference (module docstring): not an oracle case."""
    batch = case["indices"].shape[:-1]
    return kind != "scatter" and case["indices"].shape[-1] == 0 and int(np.prod(batch)) > 1


# --- values ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_matches_jax(seed):
    rng = np.random.default_rng(100 + seed)
    for n, case in enumerate(cases(seed, 8 if seed == 0 else 12)):
        mode = GATHER_MODES[n % 4]
        dtype = [np.float32, np.int32, np.bool_, np.float16][n % 4]
        x = values(rng, case["shape"], dtype)
        i = case["indices"]
        fill = {} if n % 3 else {"fill_value": 7}
        ours, theirs = gather_fns(case, mode, **fill)
        want = theirs(x, i)
        where = f"seed {seed} case {n} mode {mode} {case}"
        assert_same(ours(x, i), want, where=where)  # eager, reference backend
        for backend in ("ref", "pjrt"):
            assert_same(ri.jit(ours, backend=backend)(x, i), want, where=f"{backend} {where}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_scatter_matches_jax(kind, seed):
    rng = np.random.default_rng(200 + seed)
    checked = 0
    for n, case in enumerate(cases(10 + seed, 6 if seed == 0 else 12)):
        if _combines_empty_vector(kind, case):
            continue
        mode = SCATTER_MODES[n % 4]
        dtype = [np.float32, np.int32, np.float32, np.bool_][n % 4]
        if dtype == np.bool_ and kind in ("scatter_add", "scatter_sub", "scatter_mul"):
            dtype = np.int8
        x = values(rng, case["shape"], dtype)
        u = values(rng, updates_shape(case), dtype)
        i = case["indices"]
        ours, theirs = scatter_fns(kind, case, mode)
        want = theirs(x, i, u)
        # float sums and products may round differently in another order
        tol = (
            1e-5
            if kind in ("scatter_add", "scatter_sub", "scatter_mul") and dtype == np.float32
            else 0.0
        )
        where = f"{kind} seed {seed} case {n} mode {mode} {case}"
        assert_same(ours(x, i, u), want, tol, where)
        for backend in ("ref", "pjrt"):
            got = ri.jit(ours, backend=backend)(x, i, u)
            assert_same(got, want, tol, f"{backend} {where}")
        checked += 1
    assert checked >= (3 if seed == 0 else 6)


@pytest.mark.parametrize("kind", ["scatter_add", "scatter_mul", "scatter_max"])
def test_empty_index_vector_combines_every_update(kind):
    """Every batch element's window starts at 0 (the spec): all of them are
    combined, on both backends. XLA (so JAX) applies only the last one."""
    x = np.array([10.0, 1.0], np.float32)
    i = np.zeros((3, 0), np.int32)
    u = np.array([2.0, 3.0, 4.0], np.float32)
    dn = lax.ScatterDimensionNumbers((), (0,), ())
    expected = {"scatter_add": 19.0, "scatter_mul": 240.0, "scatter_max": 10.0}[kind]
    for backend in ("ref", "pjrt"):
        out = ri.jit(lambda x, i, u: getattr(lax, kind)(x, i, u, dn), backend=backend)(x, i, u)
        np.testing.assert_array_equal(np.asarray(out), [expected, 1.0])
    jax_out = getattr(jlax, kind)(x, i, u, jlax.ScatterDimensionNumbers((), (0,), ()))
    jax_last = {"scatter_add": 14.0, "scatter_mul": 40.0, "scatter_max": 10.0}[kind]
    np.testing.assert_array_equal(np.asarray(jax_out), [jax_last, 1.0])


def test_jax_docstring_examples():
    x = np.array([10, 11, 12], np.int32)
    idx = np.array([0, 1, 1, 2, 2, 2], np.int32)[:, None]
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    out = lax.gather(x, idx, slice_sizes=(1,), dimension_numbers=dn,
                     mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)  # fmt: skip
    np.testing.assert_array_equal(np.asarray(out), [10, 11, 11, 12, 12, 12])
    sdn = lax.ScatterDimensionNumbers((), (0,), (0,))
    ones = np.ones(5, np.float32)
    added = lax.scatter_add(ones, np.array([[1], [2], [4]]), np.array([2.0, 3.0, 4.0]), sdn)
    np.testing.assert_array_equal(np.asarray(added), [1, 3, 4, 1, 5])


def test_default_fill_values_and_weak_types_match_jax():
    dn = (1,), (0,), (0,)
    i = np.array([[5]], np.int32)
    for dtype in (np.float32, np.float16, np.int8, np.int32, np.uint8, np.uint32, np.bool_):
        x = np.ones((2, 3), dtype)
        want = jlax.gather(x, i, jlax.GatherDimensionNumbers(*dn), (1, 3), mode="fill")
        got = lax.gather(x, i, lax.GatherDimensionNumbers(*dn), (1, 3), mode="fill")
        assert_same(got, want, where=str(dtype))
    # a weak operand gives a weak result, the (strong) indices notwithstanding
    ours = ri.jit(lambda i: lax.gather(ri.numpy.zeros(3) + 1.0, i, lax.GatherDimensionNumbers(
        (), (0,), (0,)), (1,)))(np.array([[1]]))  # fmt: skip
    theirs = jax.jit(lambda i: jlax.gather(jax.numpy.zeros(3) + 1.0, i, jlax.GatherDimensionNumbers(
        (), (0,), (0,)), (1,)))(np.array([[1]]))  # fmt: skip
    assert ours.weak_type == theirs.weak_type


def test_modes_parse_as_jax():
    for mode in ("clip", "fill", "drop", "promise_in_bounds", None):
        assert (
            lax.GatherScatterMode.from_any(mode).name == jlax.GatherScatterMode.from_any(mode).name
        )
    # a jax.lax.GatherScatterMode member and jax's dimension numbers are accepted
    x, i = np.arange(4.0, dtype=np.float32), np.array([[7]], np.int32)
    dn = jlax.GatherDimensionNumbers((), (0,), (0,))
    out = lax.gather(x, i, dn, (1,), mode=jlax.GatherScatterMode.FILL_OR_DROP, fill_value=-1.0)
    np.testing.assert_array_equal(np.asarray(out), [-1.0])
    with pytest.raises(ValueError, match=re.escape('Unknown gather mode "wrap"')):
        lax.gather(x, i, dn, (1,), mode="wrap")
    with pytest.raises(ValueError, match=re.escape('Unknown gather mode "wrap"')):
        jlax.gather(x, i, dn, (1,), mode="wrap")


# --- derivatives --------------------------------------------------------------------------


def _float_case(rng, case):
    x = rng.normal(size=case["shape"]).astype(np.float32)
    u = rng.normal(size=updates_shape(case)).astype(np.float32)
    return x, case["indices"], u


def _unique_case(case):
    """The first batch element only: overlapping windows are impossible."""
    i = case["indices"]
    if i.ndim > 1 and i.size:
        i = i[(0,) * (i.ndim - 1)][(None,) * (i.ndim - 1)]
    return {**case, "indices": i}


@pytest.mark.parametrize("kind", ["gather", *KINDS])
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_jvp_and_vjp_match_jax(kind, seed):
    rng = np.random.default_rng(300 + seed)
    checked = 0
    for n, case in enumerate(cases(20 + seed, 3 if seed == 0 else 10)):
        modes = GATHER_MODES if kind == "gather" else SCATTER_MODES
        mode = modes[n % 3]  # clip, fill/drop, None
        # JAX differentiates scatter_mul in the updates only with unique indices
        unique = kind == "scatter_mul" or (kind == "scatter" and n % 2 == 0)
        if unique or kind == "scatter_mul":
            if case["dn"][4]:
                continue  # batching dims index every batch element: keep it general
            case = _unique_case(case)
        if _combines_empty_vector("scatter_add", case):
            continue  # the XLA difference again (a gather's transpose is a scatter_add)
        if kind in ("scatter_min", "scatter_max") and mode == "clip":
            continue  # JAX is wrong there: test_extremal_clip_matches_finite_differences
        x, i, u = _float_case(rng, case)
        if kind == "gather":
            ours_f, theirs_f = gather_fns(case, mode)
            primals = (x,)
        else:
            ours_f, theirs_f = scatter_fns(kind, case, mode, unique_indices=unique)
            primals = (x, u)

        def ours(*p, _f=ours_f, _i=i):
            return _f(p[0], _i, *p[1:])

        def theirs(*p, _f=theirs_f, _i=i):
            return _f(p[0], _i, *p[1:])

        tangents = tuple(rng.normal(size=p.shape).astype(np.float32) for p in primals)
        want_out, want_t = jax.jvp(theirs, primals, tangents)
        ct = rng.normal(size=want_out.shape).astype(np.float32)
        want_ct = jax.vjp(theirs, *primals)[1](ct)
        where = f"{kind} seed {seed} case {n} mode {mode} unique {unique} {case}"
        for backend in ("ref", "pjrt"):
            # the indices are an argument: an empty constant does not lower
            def jvp(p, t, idx, _f=ours_f):
                return ri.jvp(lambda *q: _f(q[0], idx, *q[1:]), p, t)

            def vjp(p, c, idx, _f=ours_f):
                return ri.vjp(lambda *q: _f(q[0], idx, *q[1:]), *p)[1](c)

            _, got_t = ri.jit(jvp, backend=backend)(primals, tangents, i)
            assert_same(got_t, want_t, 1e-5, f"jvp {backend} {where}")
            got_ct = ri.jit(vjp, backend=backend)(primals, ct, i)
            for g, w in zip(got_ct, want_ct, strict=True):
                assert_same(g, w, 1e-5, f"vjp {backend} {where}")
        checked += 1
    assert checked >= (1 if seed == 0 else 3)


@pytest.mark.parametrize("kind", ["scatter_min", "scatter_max"])
def test_extremal_clip_matches_finite_differences(kind):
    rng = np.random.default_rng(7)
    dn = lax.ScatterDimensionNumbers((0,), (0,), (0, 1))
    x = rng.normal(size=(4, 4)).astype(np.float32)
    u = rng.normal(size=(2,)).astype(np.float32) * 3
    i = np.array([[5, -2], [1, 1]], np.int32)  # the first is clamped to (3, 0)
    u = np.stack([u, u + 1])

    def f(x, u):
        return getattr(lax, kind)(x, i, u, dn, mode="clip")

    tx = rng.normal(size=x.shape).astype(np.float32)
    tu = rng.normal(size=u.shape).astype(np.float32)
    eps = 1e-3
    fd = np.asarray(f(x + eps * tx, u + eps * tu)) - np.asarray(f(x - eps * tx, u - eps * tu))
    fd /= 2 * eps
    for backend in ("ref", "pjrt"):
        _, t = ri.jit(lambda x, u, tx, tu: ri.jvp(f, (x, u), (tx, tu)), backend=backend)(
            x, u, tx, tu
        )
        np.testing.assert_allclose(np.asarray(t), fd, atol=2e-3)
    jdn = jlax.ScatterDimensionNumbers((0,), (0,), (0, 1))
    _, jt = jax.jvp(lambda x, u: getattr(jlax, kind)(x, i, u, jdn, mode="clip"), (x, u), (tx, tu))
    assert not np.all(np.isfinite(np.asarray(jt)))  # JAX's rule: see the module docstring


def test_non_unique_scatter_mul_update_gradient_is_not_implemented_as_in_jax():
    dn = (), (0,), (0,)
    x, i, u = np.ones(3, np.float32), np.array([[0], [0]]), np.ones(2, np.float32)
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        jax.grad(lambda u: jlax.scatter_mul(x, i, u, jlax.ScatterDimensionNumbers(*dn)).sum())(u)
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        ri.grad(lambda u: lax.scatter_mul(x, i, u, lax.ScatterDimensionNumbers(*dn)).sum())(u)
    # in the operand it is fine: product of the updates landing at each place
    g = ri.grad(lambda x: lax.scatter_mul(x, i, u * 3, lax.ScatterDimensionNumbers(*dn)).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), [9, 1, 1])


# --- vmap ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gather", *KINDS])
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_vmap_matches_jax(kind, seed):
    rng = np.random.default_rng(400 + seed)
    checked = 0
    for n, case in enumerate(cases(30 + len(kind) + 7 * seed, 4 if seed == 0 else 8)):
        if kind != "gather" and _combines_empty_vector(kind, case):
            continue
        mode = (GATHER_MODES if kind == "gather" else SCATTER_MODES)[n % 4]
        x, i, u = _float_case(rng, case)
        i = i.astype(np.int32)
        args = [x, i] if kind == "gather" else [x, i, u]
        axes = [int(rng.integers(-a.ndim - 1, a.ndim + 1)) if rng.random() < 0.7 else None
                for a in args]  # fmt: skip
        if all(a is None for a in axes):
            axes[0] = 0
        batched = []
        for a, axis in zip(args, axes, strict=True):
            if axis is None:
                batched.append(a)
            elif a is i:  # nearby indices, some pushed out of bounds
                batched.append(np.stack([a + int(rng.integers(-1, 2)) for _ in range(3)], axis))
            else:
                batched.append(np.stack([values(rng, a.shape, a.dtype) for _ in range(3)], axis))
        if kind == "gather":
            ours, theirs = gather_fns(case, mode)
        else:
            ours, theirs = scatter_fns(kind, case, mode)
        want = jax.vmap(theirs, in_axes=tuple(axes))(*batched)
        tol = 1e-5 if kind in ("scatter_add", "scatter_sub", "scatter_mul") else 0.0
        where = f"{kind} case {n} mode {mode} axes {axes} {case}"
        for backend in ("ref", "pjrt"):
            got = ri.jit(ri.vmap(ours, in_axes=tuple(axes)), backend=backend)(*batched)
            assert_same(got, want, tol, f"{backend} {where}")
        checked += 1
    assert checked >= (2 if seed == 0 else 5)


# --- errors -------------------------------------------------------------------------------

X = np.zeros((3, 4, 5), np.float32)
I2 = np.zeros((2, 2), np.int32)  # two starts of two components

GATHER_ERRORS = [
    # (dimension numbers, slice sizes, indices)
    (((1, 0), (0,), (0, 1)), (1, 4, 5), I2),  # offset_dims not sorted
    (((1, 1), (0,), (0, 1)), (1, 1, 5), I2),  # offset_dims repeated
    (((1, 5), (0,), (0, 1)), (1, 4, 5), I2),  # offset dim out of bounds
    (((1, 2), (0,), (0,)), (1, 4, 5), I2),  # start_index_map too short
    (((1, 2), (0,), (0, 3)), (1, 4, 5), I2),  # start_index_map out of range
    (((1, 2), (0,), (0, 0)), (1, 4, 5), I2),  # start_index_map repeated
    (((1,), (1, 0), (0, 1)), (1, 1, 5), I2),  # collapsed not sorted
    (((1,), (0, 4), (0, 1)), (1, 1, 5), I2),  # collapsed out of range
    (((1, 2), (0,), (0, 1)), (2, 4, 5), I2),  # collapsing a dim of size 2
    (((1, 2), (0,), (0, 1)), (1, 4), I2),  # one slice size missing
    (((1,), (0,), (0, 1)), (1, 4, 5), I2),  # a dim neither offset nor collapsed
    (((1, 2), (0,), (0, 1)), (1, 9, 5), I2),  # slice larger than the operand
    (((1, 2), (), (0, 1), (0,), (0,)), (1, 4, 5), I2),  # batching dim in start_index_map
    (((1,), (1,), (2,), (0,), (1,)), (1, 1, 5), np.zeros((3, 1), np.int32)),  # index vector dim
    (((2,), (1,), (1,), (0,), (0,)), (1, 1, 5), np.zeros((2, 3, 1), np.int32)),  # batch shapes
    (((1,), (1,), (1,), (0,), ()), (1, 1, 5), np.zeros((3, 1), np.int32)),  # unequal counts
    (((1, 2), (0,), ()), (1, 4, 5), np.int32(0)),  # rank-0 indices
    (((1, 2), (), (1,), (0, 0), (0, 0)), (1, 1, 5), np.zeros((3, 1), np.int32)),  # repeated
    (((1, 2), (0,), (1,), (0,), (0,)), (1, 1, 5), np.zeros((3, 1), np.int32)),  # not disjoint
    (((1, 2), (), (1,), (0,), ()), (1, 1, 5), np.zeros((3, 1), np.int32)),  # unequal counts
]


@pytest.mark.parametrize("dn, sizes, indices", GATHER_ERRORS)
def test_gather_errors_match_jax(dn, sizes, indices):
    with pytest.raises(Exception) as theirs:
        jlax.gather(X, indices, jlax.GatherDimensionNumbers(*dn), sizes)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))) as ours:
        lax.gather(X, indices, lax.GatherDimensionNumbers(*dn), sizes)
    assert str(ours.value).startswith("gather: ")


U = np.zeros((2, 4, 5), np.float32)
SCATTER_ERRORS = [
    # (kind, dimension numbers, indices, updates)
    ("scatter_add", ((1, 2), (0,), (0, 1)), I2, U[0]),  # updates of the wrong rank
    ("scatter", ((2, 1), (0,), (0, 1)), I2, U),  # update_window_dims not sorted
    ("scatter", ((1, 2), (3,), (0, 1)), I2, U),  # inserted dim out of range
    ("scatter", ((1, 2), (0,), (0,)), I2, U),  # scatter_dims_to_operand_dims too short
    ("scatter", ((1, 2), (0,), (0, 7)), I2, U),  # scatter_dims_to_operand_dims out of range
    ("scatter_max", ((1, 2), (0,), (0, 1)), I2, np.zeros((2, 9, 5), np.float32)),  # too wide
    ("scatter_min", ((1, 2), (0,), (0, 1)), np.zeros((3, 2), np.int32), U),  # batch bound
    ("scatter", ((1,), (0,), (0, 1)), I2, U[:, 0]),  # window of the wrong size
    ("scatter_add", ((1, 2), (0,), (0, 1)), I2, U.astype(np.int32)),  # dtypes differ
    ("scatter_add", ((1, 2), (0,), (0, 1)), I2.astype(np.float32), U),  # float indices
    ("scatter_mul", ((1, 2), (0,), (0, 1)), I2, U),  # fine, in bounds: no error
    (
        "scatter",
        ((2,), (1,), (1,), (2, 0), (0, 1)),
        np.zeros((3, 5, 1), np.int32),
        np.zeros((3, 5, 4), np.float32),
    ),  # operand_batching_dims not sorted
    (
        "scatter",
        ((1,), (1,), (1,), (0,), ()),
        np.zeros((3, 1), np.int32),
        np.zeros((3, 5), np.float32),
    ),  # unequal counts
    (
        "scatter_add",
        ((1,), (1,), (1,), (0,), (0,)),
        np.zeros((2, 1), np.int32),
        np.zeros((2, 5), np.float32),
    ),  # batch shapes differ
]


@pytest.mark.parametrize("kind, dn, indices, updates", SCATTER_ERRORS)
def test_scatter_errors_match_jax(kind, dn, indices, updates):
    try:
        want = getattr(jlax, kind)(X, indices, updates, jlax.ScatterDimensionNumbers(*dn))
    except Exception as error:  # noqa: BLE001
        with pytest.raises(type(error), match=re.escape(str(error))) as ours:
            getattr(lax, kind)(X, indices, updates, lax.ScatterDimensionNumbers(*dn))
        assert str(ours.value).startswith(f"{kind}: ")
    else:
        got = getattr(lax, kind)(X, indices, updates, lax.ScatterDimensionNumbers(*dn))
        assert_same(got, want)


def test_bool_scatter_add_is_rejected_as_in_jax():
    b = np.zeros(3, bool)
    dn = (), (0,), (0,)
    i = np.array([[0]])
    with pytest.raises(TypeError, match="add does not accept dtype bool"):
        jlax.scatter_add(b, i, b[:1], jlax.ScatterDimensionNumbers(*dn))
    with pytest.raises(TypeError, match="scatter_add: add does not accept dtype bool"):
        lax.scatter_add(b, i, b[:1], lax.ScatterDimensionNumbers(*dn))


def test_bad_dimension_numbers_object_names_the_function():
    with pytest.raises(TypeError, match="gather: dimension_numbers must be a lax.Gather"):
        lax.gather(X, I2, ((1, 2), (0,), (0, 1)), (1, 4, 5))
    with pytest.raises(TypeError, match="scatter: update_window_dims must be a sequence"):
        lax.scatter(X, I2, U, lax.ScatterDimensionNumbers(1.5, (0,), (0, 1)))


def test_fill_value_is_a_static_scalar():
    x, i = np.arange(4.0, dtype=np.float32), np.array([[9], [1]])
    dn = (), (0,), (0,)
    for fill in (np.float32(-2), -2):  # (jax rejects a 0-d array: unhashable; refimpl takes it)
        want = jlax.gather(
            x, i, jlax.GatherDimensionNumbers(*dn), (1,), mode="fill", fill_value=fill
        )
        got = lax.gather(x, i, lax.GatherDimensionNumbers(*dn), (1,), mode="fill", fill_value=fill)
        assert_same(got, want)
    got = lax.gather(
        x, i, lax.GatherDimensionNumbers(*dn), (1,), mode="fill", fill_value=np.array(-2)
    )
    np.testing.assert_array_equal(np.asarray(got), [-2.0, 1.0])
    with pytest.raises(TypeError, match="gather: fill_value must be a scalar"):
        lax.gather(x, i, lax.GatherDimensionNumbers(*dn), (1,), mode="fill", fill_value=[1, 2])


@pytest.mark.parametrize("mode", ["clip", "drop"])
def test_scatter_apply_matches_jax(mode):
    rng = np.random.default_rng(500)
    checked = 0
    for case in cases(40, 6):
        if _combines_empty_vector("scatter_apply", case):
            continue
        x = values(rng, case["shape"], np.float32)
        i = case["indices"]
        shape = updates_shape(case)
        dn = case["dn"]

        def ours(x, i, _dn=dn, _shape=shape):
            sdn = lax.ScatterDimensionNumbers(*_dn)
            return lax.scatter_apply(x, i, lambda v: v * 2 + 1, sdn, update_shape=_shape, mode=mode)

        sdn = jlax.ScatterDimensionNumbers(*dn)
        want = jlax.scatter_apply(x, i, lambda v: v * 2 + 1, sdn, update_shape=shape, mode=mode)
        for backend in ("ref", "pjrt"):
            assert_same(ri.jit(ours, backend=backend)(x, i), want, where=f"{backend} {case}")
        checked += 1
    assert checked >= 3
    with pytest.raises(NotImplementedError, match="general_scatter_apply"):
        ri.jvp(lambda x: ours(x, i), (x,), (x,))
