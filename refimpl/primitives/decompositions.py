"""Matrix decompositions: cholesky, triangular_solve, lu, qr, eigh, svd.

Each acts on the last two axes of its operand (leading axes are a batch) and
has a NumPy reference ``impl`` (LAPACK through ``numpy.linalg``, or a direct
loop where NumPy has no routine). StableHLO has no operation for any of them
(XLA's CPU backend calls LAPACK through custom calls that a plain PJRT
program cannot name), so each *lowering is a program of primitives*: the
algorithm below, traced once for the operand's type and inlined
(:func:`composite_lowering`). The two agree to rounding, not bit for bit;
where a result is not unique (signs of eigen- and singular vectors), both
follow LAPACK's conventions as far as the algorithm allows and the tests
compare what is unique (values, reconstructions, subspaces).

Algorithms of the lowerings (real and complex floating types):

* cholesky: column by column, ``L[:, j] = (A[:, j] - L L[j, :]^H) / L[j, j]``
  with ``L[j, j] = sqrt(re(A[j, j] - |L[j, :j]|^2))`` (lower triangle of ``A``;
  the diagonal's imaginary part is not read, as LAPACK's ``potrf``).
* triangular_solve: forward/back substitution, one row of ``X`` per step.
* lu: Gaussian elimination with partial pivoting (the first row of largest
  ``|value|`` is the pivot, as LAPACK's ``getrf``; for complex values that
  magnitude is ``|re| + |im|``, BLAS's ``i?amax``, in the reference too).
* qr: Householder reflections ``H = I - tau v v^H`` with LAPACK's ``larfg``
  choice ``beta = -sign(re(alpha)) ||x||`` (so R's diagonal is real, with the
  signs of LAPACK's), applied as ``H^H`` to ``R`` as ``geqrf`` does.
* eigh: cyclic Jacobi rotations until the off-diagonal part is below
  ``eps * ||A||`` (at most 30 sweeps), eigenvalues sorted ascending; a complex
  pair ``(p, q)`` is rotated by the real rotation of ``|A[p, q]|`` with the
  phase of ``A[p, q]`` on its off-diagonal entries.
* svd: one-sided Jacobi (Hestenes) on the columns (the same complex rotation
  on the Gram matrix's pair), singular values sorted descending; a full ``U``
  is completed by a QR of the thin one.

Failure, as JAX on CPU: a matrix that is not positive definite (a pivot
``<= 0``) gives a Cholesky factor whose lower triangle is all NaN, while NaN
in the operand only propagates (the columns before it keep their values); a
singular matrix gives an LU with a zero pivot (and ``inf``/``nan`` in later
solves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from refimpl import dtypes, tracing
from refimpl.config import library_promotion
from refimpl.core import ShapedArray
from refimpl.primitives import ad_helpers, batch_rules, complex_parts, control_flow, structural
from refimpl.primitives import composite_ops as ops
from refimpl.primitives import elementwise as ew
from refimpl.primitives.base import Primitive

# --- shared checks and the composite lowering ---------------------------------------------


def _check_matrix(name: str, a: ShapedArray, square: bool = True) -> None:
    if a.ndim < 2:  # TypeError as JAX 0.10.2's shape rules
        raise TypeError(f"{name}: the operand must have at least 2 dimensions, got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{name}: the operand must be a batch of square matrices, got shape {a.shape}"
        )
    if not dtypes.is_inexact(a.dtype):
        raise TypeError(f"{name}: the operand must be floating or complex, got {a.dtype.name}")


def composite_lowering(
    name: str, fn: Callable[..., Any], *, complex_ok: bool = False
) -> Callable[..., Any]:
    """A lowering rule that traces ``fn(*operands, **params)`` (written with
    primitives: their binders and :mod:`~refimpl.primitives.composite_ops`) at
    the equation's input types and inlines the resulting program. Unless
    ``complex_ok``, a complex operand is a NotImplementedError naming ``name``."""

    def rule(ctx: Any, *args: Any, **params: Any) -> list[Any]:
        for aval in ctx.avals_in:
            if not complex_ok and dtypes.is_complex(aval.dtype):
                raise NotImplementedError(
                    f"{name}: complex operands ({aval.dtype.name}) are not supported on the "
                    "pjrt backend (the lowering is a real-arithmetic algorithm)"
                )

        def flat(*tracers: Any) -> list[Any]:
            out = fn(*tracers, **params)
            return list(out) if isinstance(out, (tuple, list)) else [out]

        with library_promotion():  # the user's numpy modes do not reach it
            program, captured, _ = tracing.trace_to_program(
                flat, ctx.avals_in, f"{name} lowering", [f"{name} operand"] * len(args)
            )
        assert not captured, f"{name}: its lowering must not capture outer values"
        return ctx.lower_program(program, args)

    return rule


def _per_matrix(fn: Callable[..., Any], *arrays: np.ndarray) -> list[np.ndarray]:
    """Apply ``fn`` (matrices -> tuple of arrays) to every matrix of a batch."""
    batch = arrays[0].shape[:-2]
    results = None
    for index in np.ndindex(*batch):
        outs = fn(*(a[index] for a in arrays))
        if results is None:
            results = [np.empty(batch + np.shape(o), np.asarray(o).dtype) for o in outs]
        for r, o in zip(results, outs, strict=True):
            r[index] = o
    if results is None:  # an empty batch: run once on zeros for the output shapes
        outs = fn(*(np.eye(*a.shape[-2:], dtype=a.dtype) for a in arrays))
        results = [np.empty(batch + np.shape(o), np.asarray(o).dtype) for o in outs]
    return results


# --- cholesky --------------------------------------------------------------------------------

cholesky_p = Primitive("cholesky")


@cholesky_p.def_abstract_eval
def _cholesky_abstract_eval(a: ShapedArray) -> ShapedArray:
    """``L`` lower triangular with ``L @ L^H == A`` (only A's lower triangle is read)."""
    _check_matrix("cholesky", a)
    return ShapedArray(a.shape, a.dtype)


@cholesky_p.def_impl
def _cholesky_impl(a: np.ndarray) -> np.ndarray:
    def one(m: np.ndarray) -> tuple[np.ndarray]:
        lower = np.tril(m) + np.conj(np.tril(m, -1)).T  # read the lower triangle only
        try:
            with np.errstate(all="ignore"):
                return (np.linalg.cholesky(lower.astype(_wide(m.dtype))).astype(m.dtype),)
        except np.linalg.LinAlgError:  # NaN in the lower triangle, as JAX
            return (np.tril(np.full(m.shape, np.nan, m.dtype)),)

    return _per_matrix(one, a)[0]


def _wide(dtype: np.dtype) -> np.dtype:
    """LAPACK computes float16/bfloat16 in float32."""
    return np.dtype(np.float32) if dtype in (np.float16, dtypes.bfloat16) else dtype


def _cholesky_program(a: Any) -> Any:
    n = a.shape[-1]
    rows = ops.broadcasted_iota(np.int32, a.shape, a.ndim - 2)
    cols = ops.broadcasted_iota(np.int32, a.shape, a.ndim - 1)

    def column(j: Any, carry: tuple[Any, Any]) -> tuple[Any, Any]:
        factor, failed = carry
        a_col = ops.dynamic_slice_in_dim(a, j, 1, a.ndim - 1)  # (..., n, 1)
        l_row = ops.dynamic_slice_in_dim(factor, j, 1, a.ndim - 2)  # (..., 1, n)
        col = a_col - ops.matmul(factor, _h(l_row))
        square = ops.real(ops.dynamic_slice_in_dim(col, j, 1, a.ndim - 2))  # (..., 1, 1)
        # LAPACK's potrf fails only on a pivot <= 0: a NaN pivot is no failure,
        # it propagates (JAX keeps the columns before it), so NaN is no signal.
        failed = failed | (square <= 0)
        pivot = ops.sqrt(square)
        new = ops.where(rows == j, pivot, col / pivot)
        return ops.where((cols == j) & (rows >= j), new, factor), failed

    no_failure = ops.zeros(a.shape[:-2] + (1, 1), np.bool_)
    factor, failed = ops.fori_loop(0, n, column, (ops.zeros_like(a), no_failure))
    return ops.where(failed, ops.where(rows >= cols, np.nan, 0), factor)


cholesky_p.def_lowering(composite_lowering("cholesky", _cholesky_program, complex_ok=True))


# --- triangular_solve --------------------------------------------------------------------------

triangular_solve_p = Primitive("triangular_solve")


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract_eval(
    a: ShapedArray, b: ShapedArray, *, left_side: bool, lower: bool, transpose_a: bool,
    conjugate_a: bool, unit_diagonal: bool,
) -> ShapedArray:  # fmt: skip
    """``X`` with ``op(A) X = B`` (``left_side``) or ``X op(A) = B``, where
    ``op(A)`` is ``A``, ``A^T`` or ``A^H`` and only the ``lower`` (or upper)
    triangle of ``A`` is read (its diagonal taken as ones with ``unit_diagonal``).
    (C1) ``A`` square; (C2) ``B``'s rows (left) or columns (right) match;
    (C3) equal dtypes and batch dims."""
    _check_matrix("triangular_solve", a)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise TypeError(
            f"triangular_solve: a and b must have the same batch dims (C3), got {a.shape} and "
            f"{b.shape}"
        )
    n = a.shape[-1]
    if (b.shape[-2] if left_side else b.shape[-1]) != n:  # ValueError as JAX 0.10.2
        raise ValueError(
            f"triangular_solve: b of shape {b.shape} does not match a of shape {a.shape} (C2)"
        )
    if a.dtype != b.dtype:
        raise TypeError(
            f"triangular_solve: a and b must have one dtype (C3), got {a.dtype} and {b.dtype}"
        )
    return ShapedArray(b.shape, b.dtype)


def _op_matrix(a: np.ndarray, lower: bool, transpose_a: bool, conjugate_a: bool, unit: bool):
    m = np.tril(a) if lower else np.triu(a)
    if unit:
        m = m - np.diag(np.diag(m)) + np.eye(m.shape[-1], dtype=m.dtype)
    if conjugate_a:
        m = np.conj(m)
    if transpose_a:
        m = m.T
    return m


@triangular_solve_p.def_impl
def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    def one(m: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray]:
        op = _op_matrix(m, lower, transpose_a, conjugate_a, unit_diagonal).astype(_wide(m.dtype))
        rhs = rhs.astype(_wide(m.dtype))
        with np.errstate(all="ignore"):
            x = _substitute(op, rhs) if left_side else _substitute(op.T, rhs.T).T
        return (x.astype(m.dtype),)

    return _per_matrix(one, a, b)[0]


def _substitute(t: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``t x = b`` for triangular ``t`` row by row (forward if lower)."""
    n = t.shape[0]
    is_lower = np.allclose(t, np.tril(t))
    x = np.zeros_like(b)
    order = range(n) if is_lower else range(n - 1, -1, -1)
    for i in order:
        x[i] = (b[i] - t[i] @ x) / t[i, i]
    return x


def _triangular_solve_program(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    op = ops.tril(a) if lower else ops.triu(a)
    n = a.shape[-1]
    if unit_diagonal:
        op = ops.where(ops.eye(n, dtype=bool), ops.ones_like(op), op)
    if conjugate_a:
        op = ops.conj(op)
    forward = lower
    if transpose_a:
        op, forward = ops.swapaxes(op, -1, -2), not forward
    if not left_side:  # X op = B  <=>  op^T X^T = B^T
        op, forward, b = ops.swapaxes(op, -1, -2), not forward, ops.swapaxes(b, -1, -2)
    axis = b.ndim - 2

    def row(step: Any, x: Any) -> Any:
        i = step if forward else n - 1 - step
        a_row = ops.dynamic_slice_in_dim(op, i, 1, axis)  # (..., 1, n)
        b_row = ops.dynamic_slice_in_dim(b, i, 1, axis)  # (..., 1, k)
        pivot = ops.dynamic_slice_in_dim(a_row, i, 1, axis + 1)  # (..., 1, 1)
        value = (b_row - ops.matmul(a_row, x)) / pivot
        return ops.dynamic_update_slice_in_dim(x, value, i, axis)

    x = ops.fori_loop(0, n, row, ops.zeros_like(b))
    return x if left_side else ops.swapaxes(x, -1, -2)


triangular_solve_p.def_lowering(
    composite_lowering("triangular_solve", _triangular_solve_program, complex_ok=True)
)


# --- lu ---------------------------------------------------------------------------------------

lu_p = Primitive("lu", multiple_results=True)


@lu_p.def_abstract_eval
def _lu_abstract_eval(a: ShapedArray) -> tuple[ShapedArray, ShapedArray, ShapedArray]:
    """``(lu, pivots, permutation)`` with ``A[permutation] == L @ U`` (``L`` unit
    lower, below ``lu``'s diagonal; ``U`` upper, on and above it); row ``i`` was
    swapped with row ``pivots[i]`` at step ``i`` (LAPACK's ``getrf``, 0-based)."""
    _check_matrix("lu", a, square=False)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    int32 = np.dtype(np.int32)
    return (
        ShapedArray(a.shape, a.dtype),
        ShapedArray((*batch, min(m, n)), int32),
        ShapedArray((*batch, m), int32),
    )


def _lu_one(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lu = a.astype(_wide(a.dtype)).copy()
    m, n = lu.shape
    pivots = np.zeros(min(m, n), np.int32)
    perm = np.arange(m, dtype=np.int32)
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            p = j + int(np.argmax(_pivot_magnitude(lu[j:, j])))
            pivots[j] = p
            lu[[j, p]] = lu[[p, j]]
            perm[[j, p]] = perm[[p, j]]
            if lu[j, j] != 0:
                lu[j + 1 :, j] /= lu[j, j]
            lu[j + 1 :, j + 1 :] -= np.outer(lu[j + 1 :, j], lu[j, j + 1 :])
    return lu.astype(a.dtype), pivots, perm


def _pivot_magnitude(column: np.ndarray) -> np.ndarray:
    """The size ``getrf`` pivots on: BLAS's ``i?amax`` compares ``|re| + |im|``
    of complex values (JAX on CPU picks ``2+2j`` over ``3``)."""
    if np.iscomplexobj(column):
        return np.abs(column.real) + np.abs(column.imag)
    return np.abs(column)


@lu_p.def_impl
def _lu_impl(a: np.ndarray) -> list[np.ndarray]:
    return _per_matrix(_lu_one, a)


def _lu_program(a: Any) -> tuple[Any, Any, Any]:
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    rows = ops.broadcasted_iota(np.int32, (m,), 0)
    row_grid = ops.broadcasted_iota(np.int32, a.shape, a.ndim - 2)
    col_grid = ops.broadcasted_iota(np.int32, a.shape, a.ndim - 1)

    def step(j: Any, carry: Any) -> Any:
        lu, pivots, perm = carry
        column = ops.dynamic_slice_in_dim(lu, j, 1, a.ndim - 1)[..., 0]  # (..., m)
        if dtypes.is_complex(a.dtype):  # i?amax's |re| + |im|, as _pivot_magnitude
            size = ops.abs(ops.real(column)) + ops.abs(complex_parts.imag(column))
        else:
            size = ops.abs(column)
        p = ops.argmax(ops.where(rows >= j, size, -1.0), axis=-1)  # (...,)
        pivots = ops.dynamic_update_slice_in_dim(
            pivots, p[..., None].astype(np.int32), j, pivots.ndim - 1
        )
        # the row order with j and p exchanged
        p_col = p[..., None]
        order = ops.where(rows == j, p_col, ops.where(rows == p_col, j, rows))
        lu = ops.take_along_axis(lu, order[..., :, None], axis=-2)
        perm = ops.take_along_axis(perm, order, axis=-1)
        pivot_row = ops.dynamic_slice_in_dim(lu, j, 1, a.ndim - 2)  # (..., 1, n)
        pivot = ops.dynamic_slice_in_dim(pivot_row, j, 1, a.ndim - 1)  # (..., 1, 1)
        column = ops.dynamic_slice_in_dim(lu, j, 1, a.ndim - 1)  # (..., m, 1)
        scaled = ops.where(pivot != 0, column / ops.where(pivot != 0, pivot, 1), column)
        multipliers = ops.where(row_grid[..., :1] > j, scaled, 0)  # (..., m, 1)
        update = multipliers * ops.where(col_grid[..., :1, :] > j, pivot_row, 0)
        lu = lu - update
        return ops.where((col_grid == j) & (row_grid > j), multipliers, lu), pivots, perm

    k = min(m, n)
    init = (
        a,
        ops.zeros((*batch, k), np.int32),
        ops.broadcast_to(ops.arange(m, dtype=np.int32), (*batch, m)),
    )
    return ops.fori_loop(0, k, step, init)


lu_p.def_lowering(composite_lowering("lu", _lu_program, complex_ok=True))


# --- qr --------------------------------------------------------------------------------------

qr_p = Primitive("qr", multiple_results=True)


@qr_p.def_abstract_eval
def _qr_abstract_eval(a: ShapedArray, *, full_matrices: bool) -> tuple[ShapedArray, ShapedArray]:
    """``(Q, R)`` with ``A == Q R``, ``Q`` orthonormal columns, ``R`` upper
    triangular: ``Q`` is ``(m, m)`` and ``R`` ``(m, n)`` with ``full_matrices``,
    else ``(m, k)`` and ``(k, n)``, ``k = min(m, n)``."""
    _check_matrix("qr", a, square=False)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    batch = a.shape[:-2]
    return ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k, n), a.dtype)


@qr_p.def_impl
def _qr_impl(a: np.ndarray, *, full_matrices: bool) -> list[np.ndarray]:
    mode: Literal["complete", "reduced"] = "complete" if full_matrices else "reduced"

    def one(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q, r = np.linalg.qr(m.astype(_wide(m.dtype)), mode=mode)
        return q.astype(m.dtype), r.astype(m.dtype)

    return _per_matrix(one, a)


def _householder_qr(a: Any) -> tuple[Any, Any]:
    """Full ``(Q, R)`` by Householder reflections (LAPACK's sign choice)."""
    m, n = a.shape[-2:]
    is_complex = dtypes.is_complex(a.dtype)
    rows = ops.broadcasted_iota(np.int32, (m,), 0)
    row_grid = ops.broadcasted_iota(np.int32, (m, n), 0)
    col_grid = ops.broadcasted_iota(np.int32, (m, n), 1)
    q0 = ops.broadcast_to(ops.eye(m, dtype=a.dtype), (*a.shape[:-2], m, m))

    def reflect(j: Any, carry: Any) -> Any:
        q, r = carry
        x = ops.dynamic_slice_in_dim(r, j, 1, a.ndim - 1)[..., 0]  # column j, (..., m)
        x = ops.where(rows >= j, x, 0)
        alpha = ops.sum(ops.where(rows == j, x, 0), axis=-1, keepdims=True)
        squares = ops.real(x * ops.conj(x))
        below = ops.sqrt(ops.sum(ops.where(rows > j, squares, 0), axis=-1, keepdims=True))
        if is_complex:  # zlarfg: beta real, tau = 0 only if x is already real beta e_j
            alpha_re = ops.real(alpha)
            norm = ops.hypot(ops.abs(alpha), below)
            beta = ops.where(alpha_re >= 0, -norm, norm)
            skip = (below == 0) & (complex_parts.imag(alpha) == 0)
        else:
            norm = ops.hypot(alpha, below)
            beta = ops.where(alpha >= 0, -norm, norm)
            skip = below == 0  # H = I (tau = 0), as LAPACK's larfg
        safe_beta = ops.where(skip, 1, beta)
        tau = ops.where(skip, 0, (safe_beta - alpha) / safe_beta)
        scale = ops.where(skip, 1, alpha - safe_beta)
        v = ops.where(rows == j, 1, ops.where(rows > j, x / scale, 0))  # (..., m)
        # R <- H^H R and Q <- Q H, H = I - tau v v^H (geqrf applies conj(tau)), only
        # where LAPACK applies them: R's trailing block and Q's columns from j on
        # (elsewhere v or v^H R is zero, and 0 * a NaN tau would spread NaN)
        vr = ops.matmul(ops.conj(v)[..., None, :], r)  # (..., 1, n)
        update = ops.conj(tau)[..., None] * v[..., :, None] * vr
        r = ops.where((row_grid >= j) & (col_grid > j), r - update, r)
        # column j becomes beta e_j (alpha e_j when H = I), R's diagonal exactly real
        head = ops.where(skip, alpha, beta)[..., None]  # (..., 1, 1)
        column = ops.where(row_grid == j, head, 0)
        r = ops.where((col_grid == j) & (row_grid >= j), column, r)
        qv = ops.matmul(q, v[..., :, None])  # (..., m, 1)
        q = ops.where(rows >= j, q - tau[..., None] * qv * ops.conj(v)[..., None, :], q)
        return q, r

    q, r = ops.fori_loop(0, min(m, n), reflect, (q0, a))
    return q, ops.triu(r)


def _qr_program(a: Any, *, full_matrices: bool) -> tuple[Any, Any]:
    m, n = a.shape[-2:]
    q, r = _householder_qr(a)
    if full_matrices:
        return q, r
    k = min(m, n)
    return q[..., :, :k], r[..., :k, :]


qr_p.def_lowering(composite_lowering("qr", _qr_program, complex_ok=True))


# --- eigh -------------------------------------------------------------------------------------

eigh_p = Primitive("eigh", multiple_results=True)


@eigh_p.def_abstract_eval
def _eigh_abstract_eval(a: ShapedArray, *, lower: bool) -> tuple[ShapedArray, ShapedArray]:
    """``(V, w)``: eigenvectors (columns of ``V``) and ascending eigenvalues of
    the Hermitian matrix whose ``lower`` (or upper) triangle ``A`` holds:
    ``A V == V diag(w)``. ``w`` is real."""
    _check_matrix("eigh", a)
    real = np.dtype(np.float32) if a.dtype == np.complex64 else a.dtype
    real = np.dtype(np.float64) if a.dtype == np.complex128 else real
    return ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-1], real)


@eigh_p.def_impl
def _eigh_impl(a: np.ndarray, *, lower: bool) -> list[np.ndarray]:
    def one(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w, v = np.linalg.eigh(m.astype(_wide(m.dtype)), UPLO="L" if lower else "U")
        return v.astype(m.dtype), w.astype(np.real(np.zeros((), m.dtype)).dtype)

    return _per_matrix(one, a)


def _symmetric_from(a: Any, lower: bool) -> Any:
    """The Hermitian matrix that ``a``'s ``lower`` (or upper) triangle holds:
    the other triangle mirrored and conjugated; a complex diagonal's imaginary
    part is not read (LAPACK's ``heevd``)."""
    half = ops.tril(a) if lower else ops.triu(a)
    strict = ops.tril(a, -1) if lower else ops.triu(a, 1)
    if dtypes.is_complex(ad_helpers.aval_of(a).dtype):
        n = ad_helpers.aval_of(a).shape[-1]
        half = ops.where(ops.eye(n, dtype=bool), ops.real(half), half)
    return half + _h(strict)


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    p, q = np.triu_indices(n, 1)
    return p.astype(np.int32), q.astype(np.int32)


def _abs2(x: Any) -> Any:
    """``|x|^2``, real (``x * x`` for real ``x``)."""
    return ops.real(x * ops.conj(x))


def _rotation(eye: Any, e_p: Any, e_q: Any, c: Any, sn: Any, phase: Any = None) -> Any:
    """The Jacobi rotation of the pair ``(p, q)``: ``c`` at ``[p, p]`` and
    ``[q, q]``, ``sn`` at ``[p, q]`` and ``-sn`` at ``[q, p]``; a complex
    rotation carries ``phase`` (``|phase| = 1``) there as ``sn * phase`` and
    ``-sn * conj(phase)``: it is ``D R D^H`` with ``D = diag(1, conj(phase))``
    on the pair, which makes the pair's entry real for the real ``R``."""
    c_, s_ = c[..., None, None], sn[..., None, None]
    pp = ops.outer(e_p, e_p) + ops.outer(e_q, e_q)
    if phase is None:
        pq = ops.outer(e_p, e_q) - ops.outer(e_q, e_p)
    else:
        ph = phase[..., None, None]
        pq = ph * ops.outer(e_p, e_q) - ops.conj(ph) * ops.outer(e_q, e_p)
    return eye + (c_ - 1) * pp + s_ * pq


def _split_phase(x: Any) -> tuple[Any, Any]:
    """``(|x|, x / |x|)`` of complex ``x`` (phase 1 where ``x == 0``)."""
    size = ops.abs(x)
    nonzero = size != 0
    return size, ops.where(nonzero, x / ops.where(nonzero, size, 1), 1)


def _jacobi_eigh(s: Any) -> tuple[Any, Any]:
    """Cyclic Jacobi: rotate away ``s[p, q]`` for every pair, sweep after
    sweep, until the off-diagonal norm is tiny. Returns (V, w) unsorted."""
    n = s.shape[-1]
    eye = ops.eye(n, dtype=s.dtype)
    p_of, q_of = _pairs(n)
    index = ops.broadcasted_iota(np.int32, (n,), 0)
    eps = float(np.finfo(np.dtype(s.dtype)).eps) if s.dtype != dtypes.bfloat16 else 2.0**-7
    is_complex = dtypes.is_complex(s.dtype)

    def rotate(k: Any, carry: Any) -> Any:
        mat, vecs = carry
        p, q = ops.index_at(p_of, k), ops.index_at(q_of, k)
        e_p = (index == p).astype(s.dtype)
        e_q = (index == q).astype(s.dtype)
        app = ops.real(ops.quadratic_form(mat, e_p, e_p))
        aqq = ops.real(ops.quadratic_form(mat, e_q, e_q))
        apq = ops.quadratic_form(mat, e_p, e_q)
        phase = None
        if is_complex:  # rotate the real |apq|, the phase goes into the rotation
            apq, phase = _split_phase(apq)
        nonzero = apq != 0
        theta = (aqq - app) / ops.where(nonzero, 2 * apq, 1)
        t = ops.where(theta >= 0, 1.0, -1.0) / (ops.abs(theta) + ops.sqrt(theta * theta + 1))
        t = ops.where(nonzero, t, 0)
        c = 1 / ops.sqrt(t * t + 1)
        sn = t * c
        rot = _rotation(eye, e_p, e_q, c, sn, phase)
        mat = ops.matmul(_h(rot), ops.matmul(mat, rot))
        return mat, ops.matmul(vecs, rot)

    def off_norm(mat: Any) -> Any:
        return ops.sqrt(ops.sum(ops.where(ops.eye(n, dtype=bool), 0, _abs2(mat))))

    scale = ops.sqrt(ops.sum(_abs2(s))) * eps

    def sweep(carry: Any) -> Any:
        mat, vecs, count = carry
        mat, vecs = ops.fori_loop(0, len(p_of), rotate, (mat, vecs))
        return mat, vecs, count + 1

    def going(carry: Any) -> Any:
        mat, _, count = carry
        return (off_norm(mat) > scale) & (count < 30)

    vecs0 = ops.broadcast_to(eye, s.shape)
    if n < 2:
        return vecs0, ops.real(ops.diagonal(s))
    mat, vecs, _ = ops.while_loop(going, sweep, (s, vecs0, ops.asarray(0, dtype=np.int32)))
    return vecs, ops.real(ops.diagonal(mat))


def _eigh_program(a: Any, *, lower: bool) -> tuple[Any, Any]:
    vecs, w = _jacobi_eigh(_symmetric_from(a, lower))
    order = ops.argsort(w, axis=-1)
    w = ops.take_along_axis(w, order, axis=-1)
    vecs = ops.take_along_axis(vecs, order[..., None, :], axis=-1)
    return vecs, w


eigh_p.def_lowering(composite_lowering("eigh", _eigh_program, complex_ok=True))


# --- svd --------------------------------------------------------------------------------------

svd_p = Primitive("svd", multiple_results=True)


@svd_p.def_abstract_eval
def _svd_abstract_eval(a: ShapedArray, *, full_matrices: bool, compute_uv: bool):
    """``(s, U, Vh)`` with ``A == U diag(s) Vh``, ``s`` descending and real;
    ``U`` is ``(m, m)`` and ``Vh`` ``(n, n)`` with ``full_matrices``, else
    ``(m, k)`` and ``(k, n)``; only ``(s,)`` without ``compute_uv``."""
    _check_matrix("svd", a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    real = np.dtype(np.float32) if a.dtype == np.complex64 else a.dtype
    real = np.dtype(np.float64) if a.dtype == np.complex128 else real
    s = ShapedArray((*batch, k), real)
    if not compute_uv:
        return (s,)
    u_cols, v_rows = (m, n) if full_matrices else (k, k)
    return s, ShapedArray((*batch, m, u_cols), a.dtype), ShapedArray((*batch, v_rows, n), a.dtype)


@svd_p.def_impl
def _svd_impl(a: np.ndarray, *, full_matrices: bool, compute_uv: bool) -> list[np.ndarray]:
    def one(m: np.ndarray) -> tuple[np.ndarray, ...]:
        real = np.real(np.zeros((), m.dtype)).dtype
        if not compute_uv:
            return (np.linalg.svd(m.astype(_wide(m.dtype)), compute_uv=False).astype(real),)
        u, s, vh = np.linalg.svd(m.astype(_wide(m.dtype)), full_matrices=full_matrices)
        return s.astype(real), u.astype(m.dtype), vh.astype(m.dtype)

    return _per_matrix(one, a)


def _jacobi_svd(a: Any) -> tuple[Any, Any, Any]:
    """One-sided Jacobi on the columns of ``a`` (m >= n): (U thin, s, V), unsorted."""
    m, n = a.shape[-2:]
    p_of, q_of = _pairs(n)
    index = ops.broadcasted_iota(np.int32, (n,), 0)
    eye = ops.eye(n, dtype=a.dtype)
    eps = float(np.finfo(np.dtype(a.dtype)).eps) if a.dtype != dtypes.bfloat16 else 2.0**-7
    is_complex = dtypes.is_complex(a.dtype)

    def rotate(k: Any, carry: Any) -> Any:
        u, v, worst = carry
        p, q = ops.index_at(p_of, k), ops.index_at(q_of, k)
        e_p = (index == p).astype(a.dtype)
        e_q = (index == q).astype(a.dtype)
        up, uq = ops.matmul(u, e_p), ops.matmul(u, e_q)  # (..., m)
        alpha, beta = ops.sum(_abs2(up), -1), ops.sum(_abs2(uq), -1)
        gamma = ops.sum(ops.conj(up) * uq, -1)  # (U^H U)[p, q]
        phase = None
        if is_complex:  # as eigh's rotation of the Gram matrix U^H U
            gamma, phase = _split_phase(gamma)
        active = ops.abs(gamma) > eps * ops.sqrt(alpha * beta)
        zeta = (beta - alpha) / ops.where(active, 2 * gamma, 1)
        t = ops.where(zeta >= 0, 1.0, -1.0) / (ops.abs(zeta) + ops.sqrt(1 + zeta * zeta))
        t = ops.where(active, t, 0)
        c = 1 / ops.sqrt(1 + t * t)
        sn = c * t
        rot = _rotation(eye, e_p, e_q, c, sn, phase)
        worst = worst | ops.any(active)
        return ops.matmul(u, rot), ops.matmul(v, rot), worst

    def sweep(carry: Any) -> Any:
        u, v, _, count = carry
        u, v, active = ops.fori_loop(0, len(p_of), rotate, (u, v, ops.asarray(False)))
        return u, v, active, count + 1

    def going(carry: Any) -> Any:
        return carry[2] & (carry[3] < 30)

    v0 = ops.broadcast_to(eye, (*a.shape[:-2], n, n))
    if n < 2:
        u, v = a, v0
    else:
        init = (a, v0, ops.asarray(True), ops.asarray(0, dtype=np.int32))
        u, v, _, _ = ops.while_loop(going, sweep, init)
    s = ops.sqrt(ops.sum(_abs2(u), axis=-2))  # (..., n)
    u = u / ops.where(s > 0, s, 1)[..., None, :]
    return u, s, v


def _svd_program(a: Any, *, full_matrices: bool, compute_uv: bool) -> tuple[Any, ...]:
    m, n = a.shape[-2:]
    wide = m >= n
    u, s, v = _jacobi_svd(a if wide else _h(a))
    order = ops.argsort(s, axis=-1, descending=True)
    s = ops.take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return (s,)
    u = ops.take_along_axis(u, order[..., None, :], axis=-1)
    v = ops.take_along_axis(v, order[..., None, :], axis=-1)
    if full_matrices:
        u = _complete_basis(u)
        v = _complete_basis(v)
    if not wide:  # A^H = U S V^H  =>  A = V S U^H
        u, v = v, u
    return s, u, _h(v)


def _complete_basis(u: Any) -> Any:
    """``u`` (orthonormal columns, m x k) extended to an m x m orthogonal matrix:
    Q of a QR of ``u`` spans the same first k columns (up to their signs, which
    R's diagonal gives back: real, as the Householder betas, also for complex
    ``u``) and completes them."""
    m, k = u.shape[-2:]
    if m == k:
        return u
    q, r = _householder_qr(u)
    signs = ops.where(ops.real(ops.diagonal(r)) < 0, -1.0, 1.0).astype(u.dtype)
    return ops.concatenate([q[..., :, :k] * signs[..., None, :], q[..., :, k:]], axis=-1)


svd_p.def_lowering(composite_lowering("svd", _svd_program, complex_ok=True))


# --- differentiation rules (refimpl.transforms.ad): svd ---------------------------------
#
# JAX's formula, real and complex dtypes. The other decompositions' rules are
# in the "differentiation" section below.


def _eye_like(x: Any, n: int) -> Any:
    return ops.eye(n, dtype=ad_helpers.aval_of(x).dtype)


@svd_p.def_jvp
def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    """With ``dS = U^H dA V``: ``ds = re(diag(dS))``; ``dU``/``dV`` from ``F[i, j] =
    1 / (s[j]^2 - s[i]^2)`` (0 on the diagonal), plus the parts of ``dA``
    outside the thin factors' spans when ``m != n`` (JAX's formula; the
    full_matrices case of a non-square ``A`` is not implemented, as in JAX)."""

    (a,), (da,) = primals, tangents
    outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=compute_uv)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if ad_helpers.is_zero(da):  # pragma: no cover
        return outs, [ad_helpers.zero_tangent(ad_helpers.aval_of(x)) for x in outs]
    m, n = ad_helpers.aval_of(a).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "svd: the derivative is not implemented for full_matrices=True of a non-square "
            "matrix (as in JAX)"
        )
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    v = _h(vt)
    ds_matrix = ops.matmul(ops.matmul(_h(u), da), v)
    ds = ops.real(ops.diagonal(ds_matrix))
    if not compute_uv:
        return outs, [ds]
    k = ad_helpers.aval_of(s).shape[-1]
    eye = _eye_like(a, k)
    row = ops.expand_dims(s, -2)
    col = ops.expand_dims(s, -1)
    f = 1 / ((row + col) * (row - col) + eye) - eye
    ds_s = row * ds_matrix
    s_ds = col * ds_matrix
    zero_s = (s == 0).astype(ad_helpers.aval_of(s).dtype)
    s_inv = 1 / (s + zero_s) - zero_s
    du_dv_diag = 0.5 * (ds_matrix - _h(ds_matrix)) * (eye * ops.expand_dims(s_inv, -2))
    du = ops.matmul(u, f * (ds_s + _h(ds_s)) + du_dv_diag)
    dv = ops.matmul(v, f * (s_ds + _h(s_ds)))
    if m > n:
        dav = ops.matmul(da, v)
        du = du + (dav - ops.matmul(u, ops.matmul(_h(u), dav))) / row
    if n > m:
        dahu = ops.matmul(_h(da), u)
        dv = dv + (dahu - ops.matmul(v, ops.matmul(vt, dahu))) / row
    return [s, u, vt], [ds, du, _h(dv)]


# --- batching: every decomposition maps over leading axes ----------------------------------------


def _leading_batch_rule(prim: Primitive):
    """Move each operand's batch axis to the front (broadcasting unbatched
    operands) and apply the primitive: leading axes are already a batch."""

    def rule(args, dims, **params):
        size = batch_rules.axis_size_of(args, dims)
        moved = [batch_rules.bdim_to(x, d, size, 0) for x, d in zip(args, dims, strict=True)]
        out = prim.bind(*moved, **params)
        if prim.multiple_results:
            return list(out), [0] * len(out)
        return out, 0

    return rule


for _prim in (cholesky_p, triangular_solve_p, lu_p, qr_p, eigh_p, svd_p):
    _prim.def_batch(_leading_batch_rule(_prim))


# --- differentiation ---------------------------------------------------------------------------
# The standard matrix-calculus rules (as JAX's), written with the primitives
# and composite_ops so they run eagerly and inside any trace.


def _tangent(t: Any, like: Any) -> Any:
    return ad_helpers.instantiate(t, ad_helpers.tangent_aval(ad_helpers.aval_of(like)))


def _zero_like(value: Any) -> Any:
    return ad_helpers.zero_tangent(ad_helpers.aval_of(value))


def _is_zero(t: Any) -> bool:
    return ad_helpers.is_zero(t)


def _h(x: Any) -> Any:
    """The conjugate transpose of the last two axes."""
    return ops.conj(ops.swapaxes(x, -1, -2))


@cholesky_p.def_jvp
def _cholesky_jvp(primals, tangents):
    """``dL = L Phi(L^-1 dA L^-H)``, ``Phi`` the lower triangle with half the
    diagonal, applied to the whole tangent ``dA`` as JAX does (exact for a
    Hermitian ``dA``; ``cholesky(x, symmetrize_input=True)`` makes it one)."""
    (a,), (da,) = primals, tangents
    factor = cholesky_p.bind(a)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if _is_zero(da):  # pragma: no cover
        return factor, _zero_like(factor)
    da = _tangent(da, a)
    y = triangular_solve(factor, da, left_side=True, lower=True)
    x = triangular_solve(factor, y, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    phi = ops.tril(x, -1) + ops.tril(ops.triu(x)) / 2
    return factor, ops.matmul(factor, phi)


def _op(a: Any, lower: bool, transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> Any:
    """``op(A)`` as the primitive reads it (one triangle; ones on the diagonal)."""
    m = ops.tril(a) if lower else ops.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        m = ops.where(ops.eye(n, dtype=bool), ops.zeros_like(m), m)
    if conjugate_a:
        m = ops.conj(m)
    return ops.swapaxes(m, -1, -2) if transpose_a else m


@triangular_solve_p.def_jvp
def _triangular_solve_jvp(primals, tangents, **params):
    """Linear in ``b``; in ``A``: ``dX = -op(A)^-1 op(dA) X`` (left side) or
    ``-X op(dA) op(A)^-1`` (right side); the diagonal of a unit-diagonal
    ``A`` is not read, so it has no tangent."""
    (a, b), (da, db) = primals, tangents
    x = triangular_solve_p.bind(a, b, **params)
    out = None
    if not _is_zero(db):
        out = triangular_solve_p.bind(a, _tangent(db, b), **params)
    if not _is_zero(da):
        op_da = _op(_tangent(da, a), params["lower"], params["transpose_a"],
                    params["conjugate_a"], params["unit_diagonal"])  # fmt: skip
        rhs = ops.matmul(op_da, x) if params["left_side"] else ops.matmul(x, op_da)
        term = -triangular_solve_p.bind(a, rhs, **params)
        out = term if out is None else out + term
    return x, (_zero_like(x) if out is None else out)


@triangular_solve_p.def_transpose
def _triangular_solve_transpose(ct, a, b, **params):
    """``X = op(A)^-1 B`` is linear in ``B``; its transpose applies
    ``op(A)^-T``: the same solve with ``transpose_a`` flipped."""

    if isinstance(a, ad_helpers.UndefinedPrimal):
        raise NotImplementedError("triangular_solve: transposing in the matrix a is not supported")
    # unreachable from the public API: the backward pass skips an equation whose one output has
    # no cotangent and never passes a symbolic Zero to a single-output rule (ad.backward_pass)
    if isinstance(ct, ad_helpers.Zero):  # pragma: no cover
        return [None, ad_helpers.Zero(b.aval)]
    flipped = dict(params, transpose_a=not params["transpose_a"])
    return [None, triangular_solve_p.bind(a, ct, **flipped)]


@lu_p.def_jvp
def _lu_jvp(primals, tangents):
    """For square ``A[perm] = L U``: with ``M = L^-1 dA[perm] U^-1``,
    ``dL = L tril(M, -1)`` and ``dU = triu(M) U``; ``d lu = dL + dU``. The
    pivots and permutation are integers (no tangent)."""
    (a,), (da,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(a)
    zeros = [_zero_like(pivots), _zero_like(perm)]
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if _is_zero(da):  # pragma: no cover
        return [lu_, pivots, perm], [_zero_like(lu_), *zeros]
    m, n = a.shape[-2:]
    if m != n:
        raise NotImplementedError(
            "lu: differentiation of non-square factorizations is not supported"
        )
    da = ops.take_along_axis(_tangent(da, a), perm[..., :, None], axis=-2)
    lower = ops.tril(lu_, -1) + ops.eye(n, dtype=lu_.dtype)
    upper = ops.triu(lu_)
    la = triangular_solve(lower, da, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(upper, la, left_side=False, lower=False)
    d_lu = ops.matmul(lower, ops.tril(lau, -1)) + ops.matmul(ops.triu(lau), upper)
    return [lu_, pivots, perm], [d_lu, *zeros]


@qr_p.def_jvp
def _qr_jvp(primals, tangents, *, full_matrices):
    """For ``m >= n`` (thin ``Q``, or square): with ``C = Q^H dA R^-1`` and
    ``Omega = tril(C, -1) - tril(C, -1)^H`` (plus C's imaginary diagonal),
    ``dQ = Q (Omega - C) + dA R^-1`` and ``dR = (C - Omega) R``."""
    (a,), (da,) = primals, tangents
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if _is_zero(da):  # pragma: no cover
        return [q, r], [_zero_like(q), _zero_like(r)]
    m, n = a.shape[-2:]
    if m < n or (full_matrices and m > n):
        raise NotImplementedError(
            "qr: differentiation is supported for m >= n with the reduced Q (or square a)"
        )
    da = _tangent(da, a)
    dx_rinv = triangular_solve(r, da, left_side=False, lower=False)
    c = ops.matmul(_h(q), dx_rinv)
    lower = ops.tril(c, -1)
    omega = lower - _h(lower)
    if dtypes.is_complex(a.dtype):
        omega = omega + ops.eye(n, dtype=a.dtype) * (c - ops.real(c))
    dq = ops.matmul(q, omega - c) + dx_rinv
    dr = ops.matmul(c - omega, r)
    return [q, r], [dq, dr]


@eigh_p.def_jvp
def _eigh_jvp(primals, tangents, *, lower):
    """With ``S = V^H dA V`` (``dA`` symmetrized from the triangle read):
    ``dw = diag(S)``, ``dV = V (F * S)``, ``F[i, j] = 1 / (w[j] - w[i])`` off
    the diagonal and 0 on it (distinct eigenvalues assumed, as JAX)."""
    (a,), (da,) = primals, tangents
    v, w = eigh_p.bind(a, lower=lower)
    # unreachable from the public API: one differentiable operand, and the jvp trace calls a
    # rule only when some operand has a nonzero tangent (ad.JVPTrace.process_primitive)
    if _is_zero(da):  # pragma: no cover
        return [v, w], [_zero_like(v), _zero_like(w)]
    da = _tangent(da, a)
    da = _symmetric_from(da, lower)
    s = ops.matmul(_h(v), ops.matmul(da, v))
    n = a.shape[-1]
    gaps = w[..., None, :] - w[..., :, None]
    off = ~ops.eye(n, dtype=bool)
    f = ops.where(off, 1 / ops.where(off, gaps, 1), 0).astype(a.dtype)
    dv = ops.matmul(v, f * s)
    dw = ops.real(ops.diagonal(s))
    return [v, w], [dv, dw]


# --- the ops.linalg functions ------------------------------------------------------------------


def _symmetrized(name: str, x: Any) -> Any:
    """``(x + x^H) / 2``; a vector is the shape rule's TypeError (as JAX 0.10.2),
    not the swap's axis error."""
    _check_matrix(name, tracing.get_aval(x, name, 0), square=False)
    return (x + ops.conj(ops.swapaxes(x, -1, -2))) / 2


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """``jax.ops.linalg.cholesky``: the lower Cholesky factor (``(x + x^H) / 2``
    first with ``symmetrize_input``); NaNs if ``x`` is not positive definite."""
    if symmetrize_input:
        x = _symmetrized("cholesky", x)
    return cholesky_p.bind(x)


def triangular_solve(
    a: Any, b: Any, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
    conjugate_a: bool = False, unit_diagonal: bool = False,
) -> Any:  # fmt: skip
    """``jax.ops.linalg.triangular_solve``."""
    return triangular_solve_p.bind(
        a, b, left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
        conjugate_a=bool(conjugate_a), unit_diagonal=bool(unit_diagonal),
    )  # fmt: skip


def lu(x: Any) -> list[Any]:
    """``jax.ops.linalg.lu``: ``[lu, pivots, permutation]`` (a list, as JAX 0.10.2)."""
    return list(lu_p.bind(x))


def qr(x: Any, *, full_matrices: bool = True) -> tuple[Any, Any]:
    """``jax.ops.linalg.qr``: ``(q, r)``."""
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True) -> tuple[Any, Any]:
    """``jax.ops.linalg.eigh``: ``(v, w)``, eigenvalues ascending."""
    if symmetrize_input:
        x = _symmetrized("eigh", x)
    return tuple(eigh_p.bind(x, lower=bool(lower)))


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """``jax.ops.linalg.svd``: ``(u, s, vh)``, or ``s`` without ``compute_uv``."""
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False) -> Any:
    """``jax.lax.linalg.tridiagonal_solve``: ``x`` with ``A @ x = b`` for the
    tridiagonal ``A`` with ``A[i, i-1] = dl[i]``, ``A[i, i] = d[i]``,
    ``A[i, i+1] = du[i]`` (``dl[0]`` and ``du[m-1]`` unused).

    ``dl``, ``d``, ``du``: ``(..., m)``; ``b``: ``(..., m, n)``; one inexact
    dtype. Computed by the Thomas algorithm (a forward and a backward
    ``lax.scan`` over ``m``), so ``jit``, ``vmap`` and derivatives come from
    the primitives it is made of. Unlike LAPACK's ``gtsv`` (JAX on CPU) it
    does not pivot: a system that needs row exchanges (a zero pivot) gives
    inf/NaN. ``perturb_singular`` is accepted and changes nothing: JAX's
    perturbs tiny pivots of a (numerically) singular system only, where
    refimpl's result is inf/NaN.
    """
    name = "tridiagonal_solve"
    del perturb_singular  # see above
    avals = [tracing.get_aval(v, name, i) for i, v in enumerate((dl, d, du, b))]
    if not avals[0].shape == avals[1].shape == avals[2].shape:
        raise TypeError(f"{name} requires that all diagonal arguments have the same shape.")
    if avals[3].shape[:-1] != avals[0].shape:
        raise TypeError(
            f"{name} requires that the leading ndim-1 dimensions of b equal the dimensions of "
            "the diagonal arguments."
        )
    dtype = avals[3].dtype
    if any(a.dtype != dtype for a in avals) or not dtypes.is_inexact(dtype):
        raise TypeError(
            f"{name}: the operands must share one floating or complex dtype, got "
            f"{[a.dtype.name for a in avals]}"
        )
    rank = len(avals[0].shape)
    n = avals[3].shape[-1]
    # the system axis first: diagonals (m, ...), b (m, ..., n)
    dl, d, du = (batch_rules.moveaxis(v, rank - 1, 0) for v in (dl, d, du))
    b = batch_rules.moveaxis(b, rank - 1, 0)
    row_shape = avals[0].shape[:-1]

    def col(v: Any) -> Any:  # (...) -> (..., n)
        return structural.broadcast_in_dim(v, (*row_shape, n), tuple(range(len(row_shape))))

    def forward(carry: Any, row: Any) -> Any:
        c_prev, y_prev = carry
        lo, mid, up, rhs = row
        pivot = ew.sub(mid, ew.mul(lo, c_prev))
        c = ew.div(up, pivot)
        y = ew.div(ew.sub(rhs, ew.mul(col(lo), y_prev)), col(pivot))
        return (c, y), (c, y)

    zero = np.zeros((), dtype)
    start = (
        structural.broadcast_in_dim(zero, row_shape, ()),
        structural.broadcast_in_dim(zero, (*row_shape, n), ()),
    )
    _, (cs, ys) = control_flow.scan(forward, start, (dl, d, du, b))

    def backward(x_next: Any, row: Any) -> Any:
        c, y = row
        x = ew.sub(y, ew.mul(col(c), x_next))
        return x, x

    _, xs = control_flow.scan(backward, start[1], (cs, ys), reverse=True)
    return batch_rules.moveaxis(xs, 0, rank - 1)


__all__ = ["cholesky", "eigh", "lu", "qr", "svd", "triangular_solve", "tridiagonal_solve"]
