"""The branches of the rules the rest of the corpus leaves untaken (issue 36).

``tools/conformance_coverage.py`` measures which branches of
``refimpl/primitives`` and ``refimpl/transforms`` the main job takes; each
row here reaches rules (evaluation, lowering, derivative, transpose, batch)
of a primitive in configurations the other families do not use (window
padding and dilation, multi-operand sorts, FFT types, special functions,
collectives under vmap ...). A row gives up to three ``AGREE`` cases:

* ``rules/<row>/jit``: the function under ``jit``;
* ``rules/<row>/grad``: ``grad`` of the sum of its float outputs w.r.t. its
  float arguments (derivative and transpose rules);
* ``rules/<row>/vmap``: ``vmap`` with the operands stacked on different axes
  (operand ``k`` on axis ``-1 - k``, wrapped to its rank).

``AGREE`` cases: judged by JAX (live or recorded), never by ``ref`` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for, script_case
from conformance.compare import Tolerance
from conformance.corpus.vmap_axes import _wrap
from conformance.namespace import Unsupported

TOL = Tolerance(ulps={"float32": 256, "float16": 8, "bfloat16": 8}, atol_eps=64)
B = 3


@dataclass(frozen=True)
class Row:
    name: str
    fn: Callable[..., Any]  # fn(ns, *args)
    makers: tuple[Callable[[np.random.Generator], Any], ...]
    grad: bool = True
    diff: tuple[int, ...] | None = None  # the arguments grad differentiates (default: floats)
    vmap: bool = True
    jit: bool = True
    tolerance: Tolerance = TOL


def f32(shape: tuple, lo: float = -2.0, hi: float = 2.0) -> Callable[[Any], np.ndarray]:
    return lambda r: r.uniform(lo, hi, shape).astype(np.float32)


def i32(shape: tuple, lo: int, hi: int) -> Callable[[Any], np.ndarray]:
    return lambda r: r.integers(lo, hi, shape).astype(np.int32)


def _api(ns: Any) -> Any:
    api = ns.api
    if not hasattr(api, "vmap") or not hasattr(api, "grad"):
        raise Unsupported(f"{ns.name} has no vmap/grad")
    return api


def _float_leaves(ns: Any, tree: Any) -> list[Any]:
    """The float leaves, complex ones by their real and imaginary parts."""
    out = []
    for x in _api(ns).tree_util.tree_leaves(tree):
        if np.issubdtype(np.dtype(x.dtype), np.complexfloating):
            out += [ns.np_.real(x), ns.np_.imag(x) * 0.5]
        elif np.issubdtype(np.dtype(x.dtype), np.floating):
            out.append(x)
    return out


def _grad_fn(row: Row, float_args: tuple[int, ...]) -> Callable[..., Any]:
    def run(ns: Any, *args: Any) -> Any:
        def loss(*diff: Any) -> Any:
            full = list(args)
            for k, d in zip(float_args, diff, strict=True):
                full[k] = d
            return sum(ns.np_.sum(o) for o in _float_leaves(ns, row.fn(ns, *full)))

        return _api(ns).grad(loss, argnums=tuple(range(len(float_args))))(
            *[args[k] for k in float_args]
        )

    return run


def _vmap_fn(row: Row, in_axes: tuple) -> Callable[..., Any]:
    def run(ns: Any, *args: Any) -> Any:
        return _api(ns).vmap(lambda *a: row.fn(ns, *a), in_axes=in_axes)(*args)

    return run


def row_cases(row: Row, group: str = "rules") -> Iterator[Case]:
    rng = rng_for(f"{group}/{row.name}")
    args = [make(rng) for make in row.makers]
    if row.jit:
        yield fn_case(f"{group}/{row.name}/jit", row.fn, args, expect=AGREE,
                      tolerance=row.tolerance)  # fmt: skip
    floats = (
        row.diff
        if row.diff is not None
        else tuple(
            k for k, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype == np.float32
        )
    )
    if row.grad and floats:
        yield fn_case(f"{group}/{row.name}/grad", _grad_fn(row, floats), args, expect=AGREE,
                      tolerance=row.tolerance)  # fmt: skip
    if row.vmap:
        in_axes = tuple(_wrap(-1 - k, np.ndim(a)) for k, a in enumerate(args))
        samples = [[make(rng) for make in row.makers] for _ in range(B)]
        stacked = [np.stack([np.asarray(s[k]) for s in samples], axis=a)
                   for k, a in enumerate(in_axes)]  # fmt: skip
        yield fn_case(f"{group}/{row.name}/vmap", _vmap_fn(row, in_axes), stacked, expect=AGREE,
                      tolerance=row.tolerance, notes=f"in_axes={in_axes}")  # fmt: skip


# --- rows -----------------------------------------------------------------------------------


def _rw(op: str, dims: tuple, strides: tuple, padding: Any, **kw: Any) -> Callable[..., Any]:
    def fn(ns: Any, x: Any) -> Any:
        L = ns.lax_
        init, comp = {"sum": (0.0, L.add), "max": (-np.inf, L.max), "min": (np.inf, L.min)}[op]
        return L.reduce_window(x, np.float32(init), comp, dims, strides, padding, **kw)

    return fn


ROWS: list[Row] = [
    Row("reduce_window_sum/valid", _rw("sum", (2, 2), (1, 1), "VALID"), (f32((4, 5)),)),
    Row("reduce_window_sum/same_strided", _rw("sum", (3, 2), (2, 1), "SAME"), (f32((5, 4)),)),
    Row("reduce_window_sum/padded_dilated",
        _rw("sum", (2, 2), (1, 2), ((1, 0), (2, 1)), window_dilation=(2, 1)), (f32((5, 6)),)),
    Row("reduce_window_sum/base_dilation",
        _rw("sum", (2, 2), (1, 1), "VALID", base_dilation=(2, 1)), (f32((3, 4)),)),
    Row("reduce_window_max/valid", _rw("max", (2, 3), (1, 1), "VALID"), (f32((4, 5)),)),
    Row("reduce_window_max/same_strided", _rw("max", (3, 3), (2, 2), "SAME"), (f32((5, 6)),)),
    Row("reduce_window_min/padded", _rw("min", (2, 2), (1, 1), ((1, 1), (0, 1))),
        (f32((4, 4)),)),
    # no grad: JAX has no VJP of a max window with window dilation (refimpl has one)
    Row("reduce_window_max/dilated",
        _rw("max", (2, 2), (1, 1), "VALID", window_dilation=(1, 2)), (f32((4, 6)),),
        grad=False),
]  # fmt: skip


def _L(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A row function written against lax: fn(lax, *args)."""
    return lambda ns, *args: fn(ns.lax_, *args)


def _sp(name: str) -> Callable[..., Any]:
    return lambda ns, *args: getattr(ns.api.scipy.special, name)(*args)


SPECIAL_ROWS: list[Row] = [
    Row("igamma", _L(lambda L, a, x: L.igamma(a, x)), (f32((5,), 0.5, 3), f32((5,), 0.1, 4))),
    Row("igammac", _L(lambda L, a, x: L.igammac(a, x)), (f32((5,), 0.5, 3), f32((5,), 0.1, 4))),
    Row("lgamma", _L(lambda L, x: L.lgamma(x)), (f32((2, 3), 0.2, 5),)),
    Row("digamma", _L(lambda L, x: L.digamma(x)), (f32((2, 3), 0.2, 5),)),
    Row("polygamma", _L(lambda L, n, x: L.polygamma(n, x)),
        (lambda r: np.array([1.0, 2.0, 1.0], np.float32), f32((3,), 0.5, 3)), diff=(1,)),
    # no grad: JAX 0.10.2 has no derivative of zeta
    Row("zeta", _L(lambda L, x, q: L.zeta(x, q)), (f32((4,), 1.5, 4), f32((4,), 0.5, 3)),
        grad=False),
    Row("betainc", _L(lambda L, a, b, x: L.betainc(a, b, x)),
        (f32((4,), 0.5, 3), f32((4,), 0.5, 3), f32((4,), 0.05, 0.95)), diff=(2,)),
    Row("bessel_i0e", _L(lambda L, x: L.bessel_i0e(x)), (f32((2, 3), -3, 3),)),
    Row("bessel_i1e", _L(lambda L, x: L.bessel_i1e(x)), (f32((2, 3), -3, 3),)),
    Row("erf_inv", _L(lambda L, x: L.erf_inv(x)), (f32((2, 3), -0.9, 0.9),)),
    Row("erfc", _L(lambda L, x: L.erfc(x)), (f32((2, 3)),)),
    Row("random_gamma_grad", _L(lambda L, a, x: L.random_gamma_grad(a, x)),
        (f32((4,), 0.5, 3), f32((4,), 0.2, 3)), grad=False),
    Row("igamma_grad_a", _L(lambda L, a, x: L.igamma_grad_a(a, x)),
        (f32((4,), 0.5, 3), f32((4,), 0.2, 3)), grad=False),
    Row("sp.gammainc", _sp("gammainc"), (f32((4,), 0.5, 3), f32((4,), 0.2, 3))),
    Row("sp.i0", _sp("i0"), (f32((4,), -3, 3),)),
    Row("sp.i1", _sp("i1"), (f32((4,), -3, 3),)),
    Row("sp.ndtri", _sp("ndtri"), (f32((4,), 0.05, 0.95),)),
    Row("sp.log_ndtr", _sp("log_ndtr"), (f32((4,), -6, 3),)),
    Row("sp.xlogy", _sp("xlogy"), (f32((4,), 0.1, 2), f32((4,), 0.1, 2))),
    Row("sp.xlog1py", _sp("xlog1py"), (f32((4,), 0.1, 2), f32((4,), 0.1, 2))),
    Row("sp.entr", _sp("entr"), (f32((4,), 0.1, 2),)),
    Row("sp.logit", _sp("logit"), (f32((4,), 0.1, 0.9),)),
    Row("sp.expit", _sp("expit"), (f32((4,)),)),
    Row("sp.multigammaln", lambda ns, a: ns.api.scipy.special.multigammaln(a, 2),
        (f32((4,), 1.5, 4),)),
]  # fmt: skip


def _fft(kind: str, lengths: tuple) -> Callable[..., Any]:
    return lambda ns, x: ns.lax_.fft(x, kind, lengths)


FFT_ROWS: list[Row] = [
    Row("fft/fft", _fft("FFT", (4,)),
        (lambda r: (r.normal(size=(3, 4)) + 1j * r.normal(size=(3, 4))).astype(np.complex64),)),
    Row("fft/ifft_2d", _fft("IFFT", (3, 4)),
        (lambda r: (r.normal(size=(3, 4)) + 1j * r.normal(size=(3, 4))).astype(np.complex64),)),
    Row("fft/rfft", _fft("RFFT", (6,)), (f32((2, 6)),)),
    Row("fft/irfft", _fft("IRFFT", (6,)),
        (lambda r: (r.normal(size=(2, 4)) + 1j * r.normal(size=(2, 4))).astype(np.complex64),)),
    Row("fft/np_rfft2", lambda ns, x: ns.np_.abs(ns.np_.fft.rfft2(x)), (f32((4, 6)),)),
    Row("fft/np_irfftn", lambda ns, x: ns.np_.fft.irfftn(ns.np_.fft.rfftn(x)), (f32((4, 6)),)),
]  # fmt: skip

SORT_ROWS: list[Row] = [
    Row("sort/two_keys", lambda ns, a, b, c: ns.lax_.sort((a, b, c), dimension=0, num_keys=2),
        (i32((6, 2), 0, 3), f32((6, 2)), f32((6, 2))), diff=(2,)),
    Row("sort/unstable_last_axis", lambda ns, a: ns.lax_.sort(a, dimension=-1, is_stable=False),
        (f32((3, 5)),)),
    Row("sort/np_argsort", lambda ns, a: ns.np_.argsort(a, axis=0), (f32((4, 3)),), grad=False),
    Row("top_k/k3", lambda ns, a: tuple(ns.lax_.top_k(a, 3)), (f32((2, 6)),)),
    Row("cumlogsumexp/reverse", lambda ns, a: ns.lax_.cumlogsumexp(a, 0, reverse=True),
        (f32((5, 2)),)),
    Row("cummax/reverse", lambda ns, a: ns.lax_.cummax(a, 1, reverse=True), (f32((2, 5)),)),
    Row("cumprod/reverse", lambda ns, a: ns.lax_.cumprod(a, 0, reverse=True),
        (f32((4, 2), 0.5, 1.5),)),
    Row("argmin/int", lambda ns, a: ns.lax_.argmin(a, 1, np.int32), (i32((3, 4), -5, 5),)),
    Row("reduce_xor", lambda ns, a: ns.lax_.reduce_xor(a, (0,)), (i32((4, 3), 0, 64),)),
]  # fmt: skip

ELEMENTWISE_ROWS: list[Row] = [
    Row("clamp/array_bounds", _L(lambda L, lo, x, hi: L.clamp(lo, x, hi)),
        (f32((3, 2), -2, 0), f32((3, 2)), f32((3, 2), 0, 2))),
    Row("clamp/scalar_lo", _L(lambda L, x, hi: L.clamp(np.float32(-0.5), x, hi)),
        (f32((3, 2)), f32((3, 2), 0, 2))),
    Row("rem", _L(lambda L, x, y: L.rem(x, y)), (f32((3, 2), -3, 3), f32((3, 2), 0.5, 2))),
    # not float ** int32: JAX 0.10.2's lax.pow takes it, refimpl raises TypeError (open)
    Row("atan2", _L(lambda L, y, x: L.atan2(y, x)), (f32((4,)), f32((4,), 0.5, 2))),
    Row("complex_parts", lambda ns, x, y: ns.lax_.real(ns.lax_.complex(x, y) * (1 + 2j))
        + ns.lax_.imag(ns.lax_.conj(ns.lax_.complex(x, y))), (f32((3,)), f32((3,)))),
    Row("abs_complex", lambda ns, x, y: ns.lax_.abs(ns.lax_.complex(x, y)),
        (f32((3,), 0.5, 2), f32((3,), 0.5, 2))),
    Row("reduce_precision", _L(lambda L, x: L.reduce_precision(x, 4, 3)), (f32((5,)),)),
    Row("exp2", _L(lambda L, x: L.exp2(x)), (f32((5,)),)),
    Row("population_count", _L(lambda L, x: L.population_count(x)), (i32((5,), 0, 1000),)),
    Row("clz", _L(lambda L, x: L.clz(x)), (i32((5,), 1, 1000),)),
    Row("shift_right", _L(lambda L, x, s: (L.shift_right_logical(x, s),
                                           L.shift_right_arithmetic(x, s))),
        (i32((5,), -100, 100), i32((5,), 0, 33))),
    Row("bitcast_convert", _L(lambda L, x: L.bitcast_convert_type(x, np.int32)), (f32((4,)),),
        grad=False),
    Row("is_finite", _L(lambda L, x: L.is_finite(L.div(x, x - x))), (f32((4,)),), grad=False),
    Row("nextafter_down", _L(lambda L, x: L.nextafter(x, L.full_like(x, -np.inf))),
        (f32((4,)),), grad=False),
]  # fmt: skip


def _scatter(op: str, mode: str = "fill", **kw: Any) -> Callable[..., Any]:
    def fn(ns: Any, x: Any, u: Any) -> Any:
        L = ns.lax_
        dn = L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))  # fmt: skip
        idx = np.array([[3], [0], [5], [1]], np.int32)
        return getattr(L, op)(x, idx, u, dn, mode=mode, **kw)

    return fn


def _gather(mode: str) -> Callable[..., Any]:
    def fn(ns: Any, x: Any) -> Any:
        L = ns.lax_
        dn = L.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                      start_index_map=(0,))  # fmt: skip
        idx = np.array([[3], [0], [5], [-1]], np.int32)
        return L.gather(x, idx, dn, (1, 2), mode=mode, fill_value=-1.0 if mode == "fill" else None)

    return fn


INDEXING_ROWS: list[Row] = [
    Row("scatter/set", _scatter("scatter"), (f32((5, 2)), f32((4, 2)))),
    Row("scatter/add", _scatter("scatter_add"), (f32((5, 2)), f32((4, 2)))),
    Row("scatter/add_clip", _scatter("scatter_add", "clip"), (f32((5, 2)), f32((4, 2)))),
    Row("scatter/sub", _scatter("scatter_sub"), (f32((5, 2)), f32((4, 2)))),
    Row("scatter/mul_unique", _scatter("scatter_mul", unique_indices=True),
        (f32((6, 2)), f32((4, 2)))),
    Row("scatter/min", _scatter("scatter_min"), (f32((5, 2)), f32((4, 2)))),
    Row("scatter/max", _scatter("scatter_max"), (f32((5, 2)), f32((4, 2)))),
    Row("gather/fill", _gather("fill"), (f32((5, 2)),)),
    Row("gather/clip", _gather("clip"), (f32((5, 2)),)),
    Row("np/at_mul", lambda ns, x, u: x.at[np.array([1, 3])].multiply(u), (f32((4, 2)),
                                                                            f32((2, 2))),
        grad=False),
    Row("np/at_min_max", lambda ns, x, u: (x.at[np.array([1, 3])].min(u),
                                           x.at[np.array([0, 2])].max(u)),
        (f32((4, 2)), f32((2, 2)))),
    Row("np/take_along_axis_fill", lambda ns, x, i: ns.np_.take_along_axis(x, i, 1, mode="fill"),
        (f32((3, 4)), i32((3, 2), -1, 6))),
    Row("dynamic_update_slice/clamped",
        lambda ns, x, u, i: ns.lax_.dynamic_update_slice(x, u, (i, np.int32(1))),
        (f32((4, 5)), f32((2, 3)), lambda r: np.int32(r.integers(-3, 6)))),
    Row("dynamic_slice/in_dim", lambda ns, x, i: ns.lax_.dynamic_slice_in_dim(x, i, 2, axis=1),
        (f32((3, 5)), lambda r: np.int32(r.integers(-2, 6)))),
]  # fmt: skip


def _named(body: Callable[..., Any], size: int = 4) -> Callable[..., Any]:
    """body(lax, v) under vmap with axis_name "i" over the leading axis (size 4)."""

    def fn(ns: Any, x: Any) -> Any:
        return _api(ns).vmap(lambda v: body(ns.lax_, v), axis_name="i")(x)

    return fn


COLLECTIVE_ROWS: list[Row] = [
    Row("collective/all_gather_axis1", _named(lambda L, v: L.all_gather(v, "i", axis=1)),
        (f32((4, 3)),)),
    Row("collective/all_gather_tiled", _named(lambda L, v: L.all_gather(v, "i", tiled=True)),
        (f32((4, 2, 3)),)),
    Row("collective/psum_scatter",
        _named(lambda L, v: L.psum_scatter(v, "i", scatter_dimension=0)), (f32((4, 4, 2)),)),
    Row("collective/psum_scatter_tiled",
        _named(lambda L, v: L.psum_scatter(v, "i", scatter_dimension=1, tiled=True)),
        (f32((4, 3, 8)),)),
    Row("collective/all_to_all",
        _named(lambda L, v: L.all_to_all(v, "i", split_axis=0, concat_axis=1)),
        (f32((4, 4, 2)),)),
    Row("collective/all_to_all_tiled",
        _named(lambda L, v: L.all_to_all(v, "i", split_axis=1, concat_axis=0, tiled=True)),
        (f32((4, 2, 8)),)),
    Row("collective/pmean_pmax",
        _named(lambda L, v: (L.pmean(v, "i"), L.pmax(v, "i") + L.pmin(v, "i"))),
        (f32((4, 3)),), grad=False),
    Row("collective/ppermute", _named(lambda L, v: L.ppermute(v, "i", [(0, 2), (2, 0), (1, 3),
                                                                        (3, 1)])),
        (f32((4, 3)),)),
    Row("collective/psum_tuple", _named(lambda L, v: L.psum((v, v * 2.0), "i")),
        (f32((4, 3)),)),
    Row("collective/axis_index", _named(lambda L, v: v * L.axis_index("i")), (f32((4, 3)),)),
]  # fmt: skip


def _spd(ns: Any, x: Any) -> Any:
    return x @ x.T + 3.0 * ns.np_.eye(x.shape[0], dtype=np.float32)


def _tri(ns: Any, **kw: Any) -> Callable[..., Any]:
    def fn(ns: Any, a: Any, b: Any) -> Any:
        a = ns.np_.tril(a) + 3.0 * ns.np_.eye(3, dtype=np.float32)
        if not kw.get("lower", True):
            a = a.T
        return ns.lax_.linalg.triangular_solve(a, b, **kw)

    return fn


DECOMPOSITION_ROWS: list[Row] = [
    Row("linalg/svd_reduced", lambda ns, x: ns.np_.linalg.svd(x, full_matrices=False)[1],
        (f32((4, 3)),)),
    Row("linalg/svd_vectors", lambda ns, x: ns.np_.abs(
        ns.np_.linalg.svd(x, full_matrices=False)[0][:, 0]), (f32((3, 3)),)),
    Row("linalg/qr_reduced", lambda ns, x: ns.np_.abs(ns.np_.linalg.qr(x)[1]), (f32((4, 3)),)),
    Row("linalg/lu", lambda ns, x: ns.lax_.linalg.lu(_spd(ns, x))[0], (f32((3, 3)),)),
    Row("linalg/eigh_vals", lambda ns, x: ns.np_.linalg.eigh(_spd(ns, x))[0], (f32((3, 3)),)),
    Row("linalg/slogdet", lambda ns, x: ns.np_.linalg.slogdet(_spd(ns, x))[1], (f32((3, 3)),)),
    Row("linalg/triangular_right", _tri(None, left_side=False, lower=True),
        (f32((3, 3)), f32((2, 3)))),
    Row("linalg/triangular_upper_transpose_a", _tri(None, left_side=True, lower=False,
                                                    transpose_a=True), (f32((3, 3)), f32((3, 2)))),
    Row("linalg/triangular_unit_diagonal", _tri(None, left_side=True, lower=True,
                                                unit_diagonal=True), (f32((3, 3)), f32((3, 2)))),
    Row("linalg/pinv", lambda ns, x: ns.np_.linalg.pinv(x), (f32((4, 3)),)),
    Row("linalg/matrix_power", lambda ns, x: ns.np_.linalg.matrix_power(x * 0.5, 3),
        (f32((3, 3)),)),
]  # fmt: skip


def _reduce(ns: Any, x: Any) -> Any:
    return ns.lax_.reduce(x, np.float32(1.0), lambda a, b: a * b + 0.0, (1,))


def _reduce_pair(ns: Any, x: Any, i: Any) -> Any:
    """A variadic reduce: (max value, its index) along axis 0."""

    def pick(a: Any, b: Any) -> Any:
        (av, ai), (bv, bi) = a, b
        take = ns.lax_.gt(bv, av)
        return ns.lax_.select(take, bv, av), ns.lax_.select(take, bi, ai)

    return ns.lax_.reduce((x, i), (np.float32(-np.inf), np.int32(0)), pick, (0,))


MORE_ROWS: list[Row] = [
    Row("reduce/custom_product", _reduce, (f32((3, 4), 0.5, 1.5),)),
    Row("reduce/custom_sum_monoid", lambda ns, x: ns.lax_.reduce(
        x, np.float32(0.0), ns.lax_.add, (0, 1)), (f32((3, 4)),)),
    Row("reduce/variadic_argmax", _reduce_pair, (f32((4, 3)), i32((4, 3), 0, 9)), diff=(0,)),
    Row("reduce_window/custom", lambda ns, x: ns.lax_.reduce_window(
        x, np.float32(1.0), lambda a, b: a * b, (2, 1), (1, 1), "VALID"), (f32((4, 3), 0.5, 1.5),),
        grad=False),  # refimpl: no transpose of a general reduce_window
    Row("pad/batched_value", lambda ns, x, v: ns.lax_.pad(x, v, ((1, 2, 1), (0, -1, 0))),
        (f32((3, 4)), lambda r: np.float32(r.uniform(-1, 1)))),
    Row("select_n/three_way", lambda ns, p, x, y, z: ns.lax_.select_n(p, x, y, z),
        (i32((3, 2), 0, 3), f32((3, 2)), f32((3, 2)), f32((3, 2)))),
    Row("mul_div/linear_side", lambda ns, x, c: (x * np.float32(3.0)) / c + c * x,
        (f32((3,)), f32((3,), 0.5, 2))),
    Row("integer_pow/zero_and_one", lambda ns, x: ns.lax_.integer_pow(x, 0)
        + ns.lax_.integer_pow(x, 1) + ns.lax_.integer_pow(x, -3), (f32((4,), 0.5, 2),)),
    Row("convert/float_to_float16_and_back", lambda ns, x: ns.lax_.convert_element_type(
        ns.lax_.convert_element_type(x, np.float16) * 2, np.float32), (f32((4,)),)),
    Row("conv/rhs_batched_groups", lambda ns, x, w: ns.lax_.conv_general_dilated(
        x, w, (1,), "SAME", feature_group_count=2, precision="highest"),
        (f32((2, 4, 5)), f32((4, 2, 3)))),
    Row("conv/batch_group_count", lambda ns, x, w: ns.lax_.conv_general_dilated(
        x, w, (1,), "VALID", batch_group_count=2, precision="highest"),
        (f32((4, 2, 5)), f32((4, 2, 2)))),
    Row("conv/lhs_dilation_nhwc", lambda ns, x, w: ns.lax_.conv_general_dilated(
        x, w, (1, 1), ((1, 1), (0, 1)), lhs_dilation=(2, 1),
        dimension_numbers=("NHWC", "HWIO", "NHWC"), precision="highest"),
        (f32((1, 3, 4, 2)), f32((2, 2, 2, 3)))),
    Row("dot_general/preferred_f32", lambda ns, a, b: ns.lax_.dot_general(
        a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32), (f32((2, 3)),
                                                                             f32((3, 2)))),
    Row("iota/broadcasted_dim1", lambda ns, x: x * ns.lax_.broadcasted_iota(np.int32, (3, 4), 1),
        (f32((3, 4)),)),
    Row("index_in_dim", lambda ns, x: ns.lax_.index_in_dim(x, -1, axis=1, keepdims=False)
        + ns.lax_.index_in_dim(x, 0, axis=1)[:, 0], (f32((3, 4)),)),
]  # fmt: skip


def cases() -> Iterator[Case]:
    for row in (
        ROWS
        + SPECIAL_ROWS
        + FFT_ROWS
        + SORT_ROWS
        + ELEMENTWISE_ROWS
        + INDEXING_ROWS
        + COLLECTIVE_ROWS
        + DECOMPOSITION_ROWS
        + MORE_ROWS
        + LAST_ROWS
    ):
        yield from row_cases(row)
    yield from error_cases()
    yield from transform_error_cases()
    yield from _pmap_cases()
    yield from more_error_cases()
    for name, build in PMAP_ROWS:
        yield _pmap_agree(name, build)
    for name, script in JIT_SCRIPTS:
        yield script_case(f"rules/{name}", script, expect=AGREE)


# --- errors every implementation raises (same built-in class): the rules' checks ------------

_A = np.ones((2, 3), np.float32)
_I = np.ones((2, 3), np.int32)


def _err(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda ns: fn(ns.lax_, ns)


ERRORS: list[tuple[str, Callable[..., Any]]] = [
    ("cond/branch_shapes_differ",
     lambda L, ns: L.cond(True, lambda x: x, lambda x: x[0], _A)),
    ("cond/branch_dtypes_differ",
     lambda L, ns: L.cond(True, lambda x: x, lambda x: x.astype(np.int32), _A)),
    ("cond/predicate_not_scalar", lambda L, ns: L.cond(_A > 0, lambda x: x, lambda x: x, _A)),
    ("switch/no_branches", lambda L, ns: L.switch(0, [], _A)),
    ("switch/float_index", lambda L, ns: L.switch(np.float32(1.0), [lambda x: x] * 2, _A)),
    ("switch/branch_outputs_differ",
     lambda L, ns: L.switch(1, [lambda x: x, lambda x: (x, x)], _A)),
    ("while/body_changes_dtype",
     lambda L, ns: L.while_loop(lambda c: c < 3, lambda c: c + 1.5, np.int32(0))),
    ("while/body_changes_shape",
     lambda L, ns: L.while_loop(lambda c: c.sum() < 3, lambda c: c[0], _A)),
    ("while/cond_not_scalar", lambda L, ns: L.while_loop(lambda c: c < 3, lambda c: c + 1, _A)),
    ("scan/carry_shape_changes",
     lambda L, ns: L.scan(lambda c, x: (c[None], x), np.float32(0), _A)),
    ("scan/length_mismatch", lambda L, ns: L.scan(lambda c, x: (c, x), 0.0, _A, length=5)),
    ("scan/xs_leading_sizes_differ",
     lambda L, ns: L.scan(lambda c, x: (c, x), 0.0, (_A, np.ones(3, np.float32)))),
    ("scan/no_length", lambda L, ns: L.scan(lambda c, x: (c, x), 0.0, None)),
    ("fori_loop/float_bounds",
     lambda L, ns: L.fori_loop(np.float32(0.5), np.float32(3.0), lambda i, v: v, _A)),
    ("concatenate/rank_mismatch", lambda L, ns: L.concatenate([_A, _A[0]], 0)),
    ("concatenate/dtype_mismatch", lambda L, ns: L.concatenate([_A, _I], 0)),
    ("concatenate/axis_out_of_range", lambda L, ns: L.concatenate([_A, _A], 2)),
    ("concatenate/nothing", lambda L, ns: L.concatenate([], 0)),
    ("pad/config_length", lambda L, ns: L.pad(_A, np.float32(0), [(1, 1, 0)])),
    ("pad/negative_interior", lambda L, ns: L.pad(_A, np.float32(0), [(0, 0, -1), (0, 0, 0)])),
    ("pad/value_not_scalar", lambda L, ns: L.pad(_A, _A, [(0, 0, 0), (0, 0, 0)])),
    ("iota/dimension_out_of_range", lambda L, ns: L.broadcasted_iota(np.int32, (2, 3), 2)),
    ("broadcast_in_dim/bad_dims", lambda L, ns: L.broadcast_in_dim(_A, (2, 3, 4), (0, 2))),
    ("squeeze/not_one", lambda L, ns: L.squeeze(_A, (0,))),
    ("transpose/bad_permutation", lambda L, ns: L.transpose(_A, (0, 0))),
    ("slice/out_of_bounds", lambda L, ns: L.slice(_A, (0, 0), (3, 3))),
    ("dynamic_slice/too_large", lambda L, ns: L.dynamic_slice(_A, (0, 0), (3, 1))),
    ("rev/bad_dimension", lambda L, ns: L.rev(_A, (2,))),
    ("dot_general/contracting_sizes", lambda L, ns: L.dot_general(_A, _A, (((1,), (1,)), ((), ())))
     + L.dot_general(_A, _A, (((0,), (1,)), ((), ())))),
    ("dot_general/batch_and_contract_overlap",
     lambda L, ns: L.dot_general(_A, _A, (((0,), (0,)), ((0,), (0,))))),
    ("dot_general/dtype_mismatch", lambda L, ns: L.dot_general(_A, _I.T, (((1,), (0,)), ((), ())))),
    ("conv/feature_groups_do_not_divide", lambda L, ns: L.conv_general_dilated(
        np.ones((1, 3, 5), np.float32), np.ones((2, 1, 2), np.float32), (1,), "VALID",
        feature_group_count=2)),
    ("select_n/predicate_dtype", lambda L, ns: L.select_n(_A, _A, _A)),
    ("select_n/shape_mismatch", lambda L, ns: L.select_n(_A > 0, _A, _A[0])),
    ("clamp/shape_mismatch", lambda L, ns: L.clamp(_A, np.ones(3, np.float32), _A)),
    ("add/dtype_mismatch", lambda L, ns: L.add(_A, _I)),
    ("sort/num_keys_too_large", lambda L, ns: L.sort((_A, _A), num_keys=3)),
    ("sort/shapes_differ", lambda L, ns: L.sort((_A, _A[0]), num_keys=1)),
    ("reduce/init_count", lambda L, ns: L.reduce((_A, _A), (np.float32(0),), L.add, (0,))),
    ("argmax/axis_out_of_range", lambda L, ns: L.argmax(_A, 2, np.int32)),
    ("cumsum/axis_out_of_range", lambda L, ns: L.cumsum(_A, 3)),
    ("reduce_sum/axis_out_of_range", lambda L, ns: L.reduce_sum(_A, (2,))),
    ("cholesky/not_square", lambda L, ns: L.linalg.cholesky(_A)),
    ("gather/bad_index_vector", lambda L, ns: L.gather(
        _A, np.zeros((2, 3), np.int32), L.GatherDimensionNumbers((1,), (0,), (0,)), (1, 3))),
    ("scatter/updates_shape", lambda L, ns: L.scatter_add(
        _A, np.zeros((2, 1), np.int32), np.ones((2, 4), np.float32),
        L.ScatterDimensionNumbers((1,), (0,), (0,)))),
    ("reduce_window/dims_length", lambda L, ns: L.reduce_window(
        _A, np.float32(0), L.add, (2,), (1, 1), "VALID")),
    ("reshape/other_size", lambda L, ns: L.reshape(_A, (4,))),
    # not here (refimpl and JAX 0.10.2 differ, open): broadcast_in_dim with decreasing dims
    # (JAX accepts)
]  # fmt: skip


def error_cases() -> Iterator[Case]:
    for name, fn in ERRORS:
        yield script_case(f"rules.errors/{name}", _err(fn), expect=AGREE)


# --- transformation API errors every implementation raises alike ----------------------------

_X = np.array([0.5, -1.0, 2.0], np.float32)


def _t(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda ns: fn(ns.api, ns.np_)


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, x: Any) -> Any:
        return x


def _custom_vmap_grad(api: Any) -> Any:
    f = api.custom_batching.custom_vmap(lambda x: x * 2)
    f.def_vmap(lambda axis_size, in_batched, x: (x * 2, in_batched[0]))
    return api.grad(f)(np.float32(1.0))


# not here (refimpl raises TypeError, JAX 0.10.2 ValueError; open): jit with an
# unhashable static argument, jit with static_argnames the function lacks, a vjp
# cotangent of another tree structure; and linear_transpose of a function that is not linear
# (refimpl raises NotImplementedError, so the case would be a skip)
TRANSFORM_ERRORS: list[tuple[str, Callable[..., Any]]] = [
    ("grad/non_scalar_output", lambda api, np_: api.grad(lambda x: x * 2)(_X)),
    ("grad/int_input", lambda api, np_: api.grad(lambda x: (x * 2).sum())(np.arange(3))),
    ("grad/argnums_out_of_range", lambda api, np_: api.grad(lambda x: x.sum(), argnums=2)(_X)),
    ("grad/has_aux_not_a_pair",
     lambda api, np_: api.grad(lambda x: x.sum(), has_aux=True)(_X)),
    ("grad/complex_output", lambda api, np_: api.grad(lambda x: (x * 1j).sum())(_X)),
    ("jacfwd/int_input", lambda api, np_: api.jacfwd(lambda x: x * 2)(np.arange(3))),
    ("jacrev/int_input", lambda api, np_: api.jacrev(lambda x: x * 2)(np.arange(3))),
    ("jacrev/complex_output_not_holomorphic",
     lambda api, np_: api.jacrev(lambda x: x * 1j)(_X)),
    ("jvp/tangent_shape", lambda api, np_: api.jvp(lambda x: x * 2, (_X,), (_X[:2],))),
    ("jvp/tangent_dtype",
     lambda api, np_: api.jvp(lambda x: x * 2, (_X,), (_X.astype(np.float16),))),
    ("jvp/primals_not_a_tuple", lambda api, np_: api.jvp(lambda x: x * 2, _X, _X)),
    ("vjp/cotangent_shape", lambda api, np_: api.vjp(lambda x: x * 2, _X)[1](_X[:2])),
    ("linearize/tangent_shape", lambda api, np_: api.linearize(lambda x: x * 2, _X)[1](_X[:1])),
    ("vmap/out_axes_out_of_range",
     lambda api, np_: api.vmap(lambda x: x * 2, out_axes=3)(np.ones((2, 3), np.float32))),
    ("vmap/in_axes_float", lambda api, np_: api.vmap(lambda x: x, in_axes=0.5)(_X)),
    ("vmap/empty_arguments", lambda api, np_: api.vmap(lambda: 1.0)()),
    ("jit/returns_a_function", lambda api, np_: api.jit(lambda x: (lambda: x))(_X)),
    ("jit/non_array_argument", lambda api, np_: api.jit(lambda x: x)("text")),
    ("jacfwd/holomorphic_real_input",
     lambda api, np_: api.jacfwd(lambda x: x * 2, holomorphic=True)(_X)),
    ("jacrev/holomorphic_real_output",
     lambda api, np_: api.jacrev(lambda x: (x * 2).real, holomorphic=True)(_X * (1 + 1j))),
    ("jacfwd/complex_input_not_holomorphic",
     lambda api, np_: api.jacfwd(lambda x: x * 2)(_X * (1 + 1j))),
    ("grad/int_output", lambda api, np_: api.grad(lambda x: (x > 0).sum())(_X)),
    ("grad/holomorphic_real_input",
     lambda api, np_: api.grad(lambda x: (x * x).sum(), holomorphic=True)(_X)),
    ("vjp/int_output_cotangent", lambda api, np_: api.vjp(lambda x: (x > 0).astype(np.int32),
                                                          _X)[1](np.ones(3, np.int32))),
    ("jvp/int_primal_float_tangent",
     lambda api, np_: api.jvp(lambda x: x * 2, (np.arange(3),), (np.ones(3, np.float32),))),
    ("jvp/tangent_tree", lambda api, np_: api.jvp(lambda x: x * 2, (_X,), ((_X, _X),))),
    ("value_and_grad/non_scalar", lambda api, np_: api.value_and_grad(lambda x: x)(_X)),
    ("hessian/int_input", lambda api, np_: api.hessian(lambda x: (x * x).sum())(np.arange(3))),
    ("vmap/axis_size_mismatch",
     lambda api, np_: api.vmap(lambda x: x, axis_size=4)(np.ones((3, 2), np.float32))),
    ("vmap/no_axis_size_all_unmapped",
     lambda api, np_: api.vmap(lambda x: x, in_axes=None)(_X)),
    ("vmap/out_axes_tree_mismatch",
     lambda api, np_: api.vmap(lambda x: (x, x), out_axes=(0, 0, 0))(np.ones((3, 2)))),
    ("vmap/in_axes_negative_out_of_range",
     lambda api, np_: api.vmap(lambda x: x, in_axes=-3)(np.ones((3, 2), np.float32))),
    ("vmap/in_axes_tuple_for_dict",
     lambda api, np_: api.vmap(lambda d: d["a"], in_axes=((0, 1),))({"a": _X})),
    ("jit/static_argnums_true_out_of_range",
     lambda api, np_: api.jit(lambda x: x, static_argnums=True)(_X)),
    ("jit/unhashable_callable", lambda api, np_: api.jit(_Unhashable())(_X)),
    ("custom_vmap/grad", lambda api, np_: _custom_vmap_grad(api)),
    ("pmap/in_axes_list",
     lambda api, np_: api.pmap(lambda x: x, in_axes=[0])(np.ones((1, 3), np.float32))),
    ("ref/too_many_indices", lambda api, np_: api.new_ref(_X)[0, 1]),
    ("checkpoint/static_argnums_unhashable", lambda api, np_: api.checkpoint(
        lambda x, s: x * 2, static_argnums=(1,))(_X, [1])),
]  # fmt: skip


def transform_error_cases() -> Iterator[Case]:
    for name, fn in TRANSFORM_ERRORS:
        yield script_case(f"rules.errors/{name}", _t(fn), expect=AGREE)


# --- pmap's options (4 devices; NumPy oracles, as the pmap family) --------------------------


def _pmap_cases() -> Iterator[Case]:
    from conformance.corpus.pmap import X, _pmap_case

    # a pmap nested in a pmap and in_axes=-1 (which JAX 0.10.2 on CPU rejects): in
    # pmap_paths.py, against NumPy
    yield _pmap_case(
        "options/static_broadcasted",
        lambda api, L: api.pmap(lambda x, s: x * s, "i", static_broadcasted_argnums=1),
        (X, 3.0),
        lambda: [X * 3],
    )
    yield _pmap_case(
        "options/out_axes_1",
        lambda api, L: api.pmap(lambda x: x * 2, "i", out_axes=1),
        (X,),
        lambda: [np.moveaxis(X * 2, 0, 1)],
    )
    yield _pmap_case(
        "options/in_axes_1",
        lambda api, L: api.pmap(lambda x: x + 1, "i", in_axes=1),
        (np.moveaxis(X, 0, 1),),
        lambda: [X + 1],
    )
    yield _pmap_case(
        "options/donated",
        lambda api, L: api.pmap(lambda x: x + 1, "i", donate_argnums=0),
        (X.copy(),),
        lambda: [X + 1],
    )
    yield _pmap_case(
        "options/jit_of_pmap",
        lambda api, L: api.jit(api.pmap(lambda x: L.pmean(x, "i"), "i")),
        (X,),
        lambda: [np.broadcast_to(X.mean(0), X.shape)],
    )
    yield _pmap_case(
        "options/pmap_of_jit",
        lambda api, L: api.pmap(api.jit(lambda x: x * x), "i"),
        (X,),
        lambda: [X * X],
    )
    yield _pmap_case(
        "options/grad_of_pmap",
        lambda api, L: api.grad(lambda x: api.pmap(lambda v: L.sin(v), "i")(x).sum()),
        (X,),
        lambda: [np.cos(X)],
    )
    yield _pmap_case(
        "options/vmap_of_pmap",
        lambda api, L: api.vmap(api.pmap(lambda v: L.psum(v, "i"), "i"), in_axes=1),
        (X,),
        lambda: [np.broadcast_to(X.sum(0)[:, None, :], (2, 4, 3))],
    )
    yield _pmap_case(
        "options/pmap_of_vmap",
        lambda api, L: api.pmap(api.vmap(lambda v: v * 2, in_axes=1, out_axes=1), "i"),
        (X,),
        lambda: [X * 2],
    )
    yield _pmap_case(
        "options/out_axes_none_replicated",
        lambda api, L: api.pmap(lambda x: (L.psum(x, "i"), x), "i", out_axes=(None, 0)),
        (X,),
        lambda: [X.sum(0), X],
    )
    yield _pmap_case(
        "options/pytree_in_axes",
        lambda api, L: api.pmap(lambda d: d["a"] * d["b"], "i", in_axes=({"a": 0, "b": None},)),
        ({"a": X, "b": np.float32(2.0)},),
        lambda: [X * 2],
    )
    for label, build, key in [
        ("static_and_donated",
         lambda api: api.pmap(lambda x, s: x, static_broadcasted_argnums=1, donate_argnums=1),
         "static and donated|cannot intersect"),
        ("sizes_differ", lambda api: api.pmap(lambda x, y: x + y), "sizes|partitioned"),
        ("too_many_replicas", lambda api: api.pmap(lambda x: x), "devices|available|squeeze"),
    ]:  # fmt: skip
        yield _pmap_error(label, build, key)


def _pmap_error(label: str, build: Callable[..., Any], key: str) -> Case:
    from conformance.corpus.pmap import X, _api, _four_devices
    from conformance.observe import Raises

    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            f = build(api)
            if label == "sizes_differ":
                return f(X, X[:2])
            if label == "too_many_replicas":
                return f(np.ones((64, 2), np.float32))
            return f(X, 2)

    return script_case(f"pmap/errors/{label}", script, expect=Raises(ValueError, key),
                       tags=("pmap",))  # fmt: skip


# --- more checks of the rules (AGREE errors), found untaken by the coverage run -------------

_C = np.ones((1, 2, 5), np.float32)
_K = np.ones((3, 2, 2), np.float32)

MORE_ERRORS: list[tuple[str, Callable[..., Any]]] = [
    ("scan/body_not_a_pair", lambda L, ns: L.scan(lambda c, x: c, 0.0, _A)),
    ("cond/operand_count", lambda L, ns: L.cond(True, lambda x, y: x, lambda x: x, _A, _A)),
    ("cond/tree_differs", lambda L, ns: L.cond(True, lambda x: (x, x), lambda x: [x, x], _A)),
    ("while/cond_returns_float",
     lambda L, ns: L.while_loop(lambda c: c * 1.0, lambda c: c + 1, np.float32(0))),
    ("while/body_tree_changes",
     lambda L, ns: L.while_loop(lambda c: c[0] < 3, lambda c: c[0] + 1, (0, _A))),
    ("fori_loop/body_changes_carry",
     lambda L, ns: L.fori_loop(0, 3, lambda i, v: v.astype(np.int32), _A)),
    ("iota/negative_size", lambda L, ns: L.iota(np.int32, -1)),
    ("broadcast_in_dim/operand_size", lambda L, ns: L.broadcast_in_dim(_A, (4, 3), (0, 1))),
    ("broadcast_in_dim/dims_length", lambda L, ns: L.broadcast_in_dim(_A, (2, 3), (0,))),
    ("pad/value_dtype", lambda L, ns: L.pad(_A, np.int32(0), [(0, 0, 0), (0, 0, 0)])),
    ("pad/negative_too_large", lambda L, ns: L.pad(_A, np.float32(0), [(-3, 0, 0), (0, 0, 0)])),
    ("dynamic_slice/index_count", lambda L, ns: L.dynamic_slice(_A, (0,), (1, 1))),
    ("dynamic_update_slice/update_larger",
     lambda L, ns: L.dynamic_update_slice(_A, np.ones((3, 3), np.float32), (0, 0))),
    ("dynamic_update_slice/dtype", lambda L, ns: L.dynamic_update_slice(_A, _I[:1], (0, 0))),
    ("dynamic_slice/float_index", lambda L, ns: L.dynamic_slice(_A, (0.5, 0), (1, 1))),
    ("gather/offset_dims_unsorted", lambda L, ns: L.gather(
        np.ones((3, 4, 5), np.float32), np.zeros((2, 1), np.int32),
        L.GatherDimensionNumbers((2, 1), (0,), (0,)), (1, 4, 5))),
    ("gather/collapsed_slice_not_one", lambda L, ns: L.gather(
        _A, np.zeros((2, 1), np.int32), L.GatherDimensionNumbers((1,), (0,), (0,)), (2, 3))),
    ("gather/slice_sizes_length", lambda L, ns: L.gather(
        _A, np.zeros((2, 1), np.int32), L.GatherDimensionNumbers((1,), (0,), (0,)), (1,))),
    ("scatter/inserted_dims_window", lambda L, ns: L.scatter(
        _A, np.zeros((2, 1), np.int32), np.ones((2, 3), np.float32),
        L.ScatterDimensionNumbers((0,), (0,), (0,)))),
    ("scatter/updates_dtype", lambda L, ns: L.scatter(
        _A, np.zeros((2, 1), np.int32), np.ones((2, 3), np.int32),
        L.ScatterDimensionNumbers((1,), (0,), (0,)))),
    ("dot_general/batch_sizes", lambda L, ns: L.dot_general(
        np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32),
        (((2,), (1,)), ((0,), (0,))))),
    ("dot_general/dims_out_of_range",
     lambda L, ns: L.dot_general(_A, _A.T, (((2,), (0,)), ((), ())))),
    ("dot_general/batch_count_differs", lambda L, ns: L.dot_general(
        np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32),
        (((2,), (1,)), ((0,), ())))),
    ("conv/window_strides_length", lambda L, ns: L.conv_general_dilated(_C, _K, (1, 1), "VALID")),
    ("conv/input_features", lambda L, ns: L.conv_general_dilated(
        np.ones((1, 3, 5), np.float32), _K, (1,), "VALID")),
    ("conv/batch_group_count", lambda L, ns: L.conv_general_dilated(
        _C, np.ones((3, 2, 2), np.float32), (1,), "VALID", batch_group_count=2)),
    ("conv/zero_stride", lambda L, ns: L.conv_general_dilated(_C, _K, (0,), "VALID")),
    ("conv/dimension_numbers_strings", lambda L, ns: L.conv_general_dilated(
        _C, _K, (1,), "VALID", dimension_numbers=("NCH", "OIW", "NCH"))),
    ("sort/no_operands", lambda L, ns: L.sort(())),
    ("sort/dimension_out_of_range", lambda L, ns: L.sort(_A, dimension=2)),
    ("top_k/k_too_large", lambda L, ns: L.top_k(_A, 4)),
    ("top_k/k_negative", lambda L, ns: L.top_k(_A, -1)),
    ("argmax/bool_operand", lambda L, ns: L.argmax(_A > 0, 0, np.int32)),
    ("cumsum/bool_operand", lambda L, ns: L.cumsum(_A > 0, 0)),
    ("reduce_precision/bad_bits", lambda L, ns: L.reduce_precision(_A, 0, -1)),
    ("reduce_max/bool_operand_ok_axes_repeat", lambda L, ns: L.reduce_max(_A, (0, 0))),
    ("select_n/case_dtypes_differ", lambda L, ns: L.select_n(_A > 0, _A, _I)),
    ("clamp/dtype_mismatch", lambda L, ns: L.clamp(_I, _A, _A)),
    ("convert/unknown_dtype", lambda L, ns: L.convert_element_type(_A, "not-a-dtype")),
    ("transpose/permutation_length", lambda L, ns: L.transpose(_A, (0,))),
    ("squeeze/dimension_out_of_range", lambda L, ns: L.squeeze(_A, (3,))),
    ("expand_dims/out_of_range", lambda L, ns: L.expand_dims(_A, (5,))),
    ("slice/start_after_limit", lambda L, ns: L.slice(_A, (1, 0), (0, 3))),
    ("rev/duplicate_dimensions", lambda L, ns: L.rev(_A, (0, 0))),
    ("eigh/not_square", lambda L, ns: L.linalg.eigh(_A)),
    # issue 29: the class JAX 0.10.2 raises (refimpl raised another before)
    ("scan/scalar_xs", lambda L, ns: L.scan(lambda c, x: (c, x), 0.0, np.float32(1))),
    ("conv/rank1", lambda L, ns: L.conv_general_dilated(
        np.ones(5, np.float32), np.ones(2, np.float32), (), "VALID")),
    ("select_n/no_cases", lambda L, ns: L.select_n(np.bool_(True))),
    ("integer_pow/negative_int", lambda L, ns: L.integer_pow(np.int32(2), -1)),
    ("cholesky/vector", lambda L, ns: L.linalg.cholesky(np.ones(3, np.float32))),
    ("eigh/vector", lambda L, ns: L.linalg.eigh(np.ones(3, np.float32))),
    ("triangular_solve/vector", lambda L, ns: L.linalg.triangular_solve(
        np.ones(3, np.float32), np.ones(3, np.float32))),
    ("qr/vector", lambda L, ns: L.linalg.qr(np.ones(3, np.float32))),
    ("fft/lengths_mismatch", lambda L, ns: L.fft(_A.astype(np.complex64), "FFT", (4,))),
    ("triangular_solve/shapes", lambda L, ns: L.linalg.triangular_solve(
        np.eye(3, dtype=np.float32), np.ones((2, 2), np.float32), left_side=True)),
    ("top_k/rank0_operand", lambda L, ns: L.top_k(np.float32(1.0), 1)),
    ("conv/ranks_differ", lambda L, ns: L.conv_general_dilated(
        _C, np.ones((3, 2, 2, 2), np.float32), (1,), "VALID")),
    ("pad/config_pairs", lambda L, ns: L.pad(_A, np.float32(0), [(1, 1), (0, 0)])),
    ("reduce/operand_shapes_differ", lambda L, ns: L.reduce(
        (_A, _A[0]), (np.float32(0), np.float32(0)), lambda a, b: (a[0] + b[0], a[1] + b[1]),
        (0,))),
    ("fft/unknown_type", lambda L, ns: L.fft(_A.astype(np.complex64), "DCT", (3,))),
    ("custom_linear_solve/matvec_tree", lambda L, ns: L.custom_linear_solve(
        lambda x: (x, x), np.ones(3, np.float32), lambda mv, b: b)),
    # not here (refimpl and JAX 0.10.2 differ, open): scan with unroll=0 or length=-1 (JAX
    # runs them), FFT/IRFFT of a real operand (JAX converts it), and another built-in class
    # for conv padding "BOTH", slice stride 0
]  # fmt: skip


def more_error_cases() -> Iterator[Case]:
    for name, fn in MORE_ERRORS:
        yield script_case(f"rules.errors/{name}", _err(fn), expect=AGREE)


# --- collectives inside pmap: groups, derivatives, batching (AGREE; 4 devices) --------------


def _pmap_agree(name: str, build: Callable[..., Any]) -> Case:
    from conformance.corpus.pmap import X, _api, _four_devices

    def script(ns: Any) -> Any:
        api = _api(ns)
        with _four_devices(api):
            out = build(api, ns.lax_)(X)
            return [np.asarray(leaf) for leaf in api.tree_util.tree_leaves(out)]

    return script_case(f"rules.pmap/{name}", script, expect=AGREE, tolerance=TOL,
                       tags=("pmap",))  # fmt: skip


_G = [[0, 1], [2, 3]]
_PERM = [(0, 1), (1, 2), (2, 3), (3, 0)]

PMAP_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("all_gather_grad", lambda api, L: api.pmap(api.grad(
        lambda v: (L.all_gather(v, "i") * L.axis_index("i")).sum()), "i")),
    ("all_gather_tiled_grad", lambda api, L: api.pmap(api.grad(
        lambda v: (L.all_gather(v, "i", axis=1, tiled=True) ** 2).sum()), "i")),
    ("all_gather_grouped", lambda api, L: api.pmap(
        lambda v: L.all_gather(v, "i", axis_index_groups=_G), "i")),
    # collectives under an unnamed vmap inside pmap (all_gather, psum_scatter, ...):
    # in pmap_paths.py (their batch rules handed nothing on to the pmap: fixed)
    ("psum_scatter_grouped", lambda api, L: api.pmap(
        lambda v: L.psum_scatter(v, "i", scatter_dimension=0, axis_index_groups=_G, tiled=True),
        "i")),
    ("psum_scatter_grad", lambda api, L: api.pmap(api.grad(
        lambda v: (L.psum_scatter(L.concatenate([v, v * 2.0], 0), "i", tiled=True) ** 2).sum()),
        "i")),
    ("ppermute_grad", lambda api, L: api.pmap(api.grad(
        lambda v: (L.ppermute(v, "i", _PERM) * v).sum()), "i")),
    ("all_to_all_grad", lambda api, L: api.pmap(api.grad(
        lambda v: (L.all_to_all(v[None] * v[:, :, None][:1], "i", 0, 0, tiled=True)
                   ** 2).sum()), "i")),
    ("psum_grad_grouped", lambda api, L: api.pmap(api.grad(
        lambda v: (L.psum(v, "i", axis_index_groups=_G) * v).sum()), "i")),
    ("pmean_jvp", lambda api, L: api.pmap(
        lambda v: api.jvp(lambda u: L.pmean(u * u, "i"), (v,), (v,)), "i")),
    ("axis_index_under_vmap", lambda api, L: api.pmap(api.vmap(
        lambda v: v * L.axis_index("i")), "i")),
]  # fmt: skip


# --- jit's rarer calls: Refs passed again and again, float0 tangents ------------------------


def _ref_calls(ns: Any) -> Any:
    api = ns.api
    if not hasattr(api, "new_ref"):
        raise Unsupported(f"{ns.name} has no new_ref")
    r = api.new_ref(ns.asarray(_X))
    f = ns.jit(lambda r, y: r[...] * y)
    outs = [f(r, ns.asarray(_X + k)) for k in range(3)]

    def bump(r: Any) -> None:
        r[...] = r[...] + 1.0

    g = ns.jit(bump)
    for _ in range(3):
        g(r)
    return outs, api.freeze(r)


def _float0_jvp(ns: Any) -> Any:
    api = ns.api
    f = ns.jit(lambda x, n: x * n)
    n = np.int32(3)
    zero = np.zeros((), api.dtypes.float0)
    return api.jvp(f, (ns.asarray(_X), n), (ns.asarray(np.ones(3, np.float32)), zero))


def _float0_grad(ns: Any) -> Any:
    api = ns.api
    f = ns.jit(lambda x, n: (x * n).sum())
    return api.grad(f, argnums=(0, 1), allow_int=True)(ns.asarray(_X), np.int32(2))


JIT_SCRIPTS = [("jit/ref_argument_repeated", _ref_calls), ("jit/float0_tangent", _float0_jvp),
               ("jit/grad_allow_int", _float0_grad)]  # fmt: skip


def i8(shape: tuple) -> Callable[[Any], np.ndarray]:
    return lambda r: r.integers(-5, 5, shape).astype(np.int8)


def f16(shape: tuple) -> Callable[[Any], np.ndarray]:
    return lambda r: r.uniform(-2, 2, shape).astype(np.float16)


LAST_ROWS: list[Row] = [
    # no grad of a wide qr nor of a rectangular lu: refimpl has none (JAX has; open)
    Row("linalg/qr_wide", lambda ns, x: ns.np_.abs(ns.np_.linalg.qr(x)[1]), (f32((3, 4)),),
        grad=False),
    Row("linalg/qr_complete", lambda ns, x: ns.np_.abs(ns.np_.linalg.qr(x, mode="complete")[1]),
        (f32((4, 3)),), grad=False),
    Row("linalg/lu_rectangular", lambda ns, x: ns.lax_.linalg.lu(x)[0], (f32((4, 3)),),
        grad=False),
    Row("linalg/svd_wide", lambda ns, x: ns.np_.linalg.svd(x, full_matrices=False)[1],
        (f32((3, 5)),)),
    Row("linalg/svd_full_values", lambda ns, x: ns.np_.linalg.svd(x, full_matrices=True)[1],
        (f32((4, 3)),), grad=False),
    Row("dot_general/int8_preferred_int32", lambda ns, a, b: ns.lax_.dot_general(
        a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.int32),
        (i8((2, 3)), i8((3, 2)))),
    Row("dot_general/f16_preferred_f32", lambda ns, a, b: ns.lax_.dot_general(
        a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32),
        (f16((2, 3)), f16((3, 2))), grad=False),
    Row("conv/int8_preferred_int32", lambda ns, x, w: ns.lax_.conv_general_dilated(
        x, w, (1,), "VALID", preferred_element_type=np.int32), (i8((1, 2, 5)), i8((3, 2, 2)))),
    Row("conv/f16_preferred_f32", lambda ns, x, w: ns.lax_.conv_general_dilated(
        x, w, (1,), "SAME", preferred_element_type=np.float32), (f16((1, 2, 5)), f16((3, 2, 2))),
        grad=False),
    Row("indexing/dynamic_update_index_in_dim",
        lambda ns, x, u, i: ns.lax_.dynamic_update_index_in_dim(x, u, i, 0),
        (f32((4, 3)), f32((3,)), lambda r: np.int32(r.integers(-2, 5)))),
    Row("indexing/dynamic_index_in_dim", lambda ns, x, i: ns.lax_.dynamic_index_in_dim(
        x, i, 1, keepdims=False), (f32((3, 4)), lambda r: np.int32(r.integers(-2, 5)))),
    Row("indexing/np_take_wrap", lambda ns, x: ns.np_.take(x, np.array([-1, 5, 2]), axis=1,
                                                           mode="wrap"), (f32((2, 4)),)),
    Row("indexing/np_take_flat", lambda ns, x: ns.np_.take(x, np.array([[0, 7], [3, 1]])),
        (f32((2, 4)),)),
    Row("indexing/np_put_along", lambda ns, x: ns.np_.put_along_axis(
        x, np.array([[1], [0]]), 9.0, axis=1, inplace=False), (f32((2, 3)),)),
    Row("concatenate/transpose_three", lambda ns, a, b, c: ns.lax_.concatenate([a, b, c], 1)
        * 2.0, (f32((2, 1)), f32((2, 3)), f32((2, 2)))),
    # issue 29: pow with an integer exponent; broadcast_in_dim with dims out of
    # order (no grad: JAX 0.10.2's transpose rule fails there); ufunc methods
    Row("pow/int_exponent", lambda ns, x, y: ns.lax_.pow(x, y),
        (f32((3, 4), 0.5, 2.0), i32((3, 4), -3, 4)), diff=(0,)),
    Row("broadcast_in_dim/out_of_order", lambda ns, x: ns.lax_.broadcast_in_dim(
        x, (3, 4, 2), (2, 0)), (f32((2, 3)),), grad=False),
    Row("np/ufunc_reduce_accumulate", lambda ns, x: (
        ns.np_.add.reduce(x, axis=1), ns.np_.maximum.accumulate(x, axis=0),
        ns.np_.logaddexp.reduce(x, axis=(0, 1)), ns.np_.multiply.outer(x[0], x[1])),
        (f32((3, 4)),), vmap=False),
]  # fmt: skip
