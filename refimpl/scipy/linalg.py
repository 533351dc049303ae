"""``refimpl.scipy.linalg``: ``jax.scipy.linalg`` over the decomposition primitives.

SciPy's conventions, as JAX keeps them: ``cholesky`` returns the *upper*
factor unless ``lower=True``; ``solve_triangular`` reads the upper triangle
unless ``lower=True`` and ``trans`` is 0/"N", 1/"T" or 2/"C"; ``lu`` returns
``(p, l, u)`` with ``a = p @ l @ u``; ``lu_factor`` returns LAPACK's
``(lu, piv)``.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np

from refimpl import lax
from refimpl import numpy as rnp
from refimpl.numpy import linalg as _nla
from refimpl.numpy._construct import tril, triu
from refimpl.numpy._creation import eye
from refimpl.numpy._promote import aval_of, checked_array, promote_dtypes_inexact
from refimpl.numpy._search import argsort, take_along_axis
from refimpl.numpy._shape import broadcast_to, swapaxes
from refimpl.numpy._ufuncs import conj, where
from refimpl.numpy.linalg import _lu_solve
from refimpl.primitives import decompositions as _dec
from refimpl.transforms.ad import jvp

Array = Any
ArrayLike = Any

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}  # fmt: skip


def _matrix(name: str, a: ArrayLike, square: bool = True) -> Any:
    a = checked_array(name, a)
    (a,) = promote_dtypes_inexact(name, a)
    shape = aval_of(a, name, 0).shape
    if len(shape) < 2 or (square and shape[-1] != shape[-2]):
        raise ValueError(f"{name}: expected a (batch of) square matrices, got shape {shape}")
    return a


def cholesky(
    a: ArrayLike, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True
) -> Array:
    """The Cholesky factor: upper ``U`` with ``a = U^H U`` (lower ``L`` with
    ``lower=True``); NaNs if ``a`` is not positive definite."""
    del overwrite_a, check_finite
    a = _matrix("cholesky", a)
    # as JAX: only the triangle asked for is read (no symmetrization)
    factor = _dec.cholesky(a if lower else conj(swapaxes(a, -1, -2)), symmetrize_input=False)
    return factor if lower else conj(swapaxes(factor, -1, -2))


def cho_factor(
    a: ArrayLike, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True
) -> tuple[Array, bool]:
    """``(c, lower)`` for :func:`cho_solve` (``c`` holds the factor in one triangle)."""
    return cholesky(a, lower=lower), lower


def cho_solve(
    c_and_lower: tuple[ArrayLike, bool],
    b: ArrayLike,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Array:
    """``x`` with ``a x = b`` from ``cho_factor(a)``: two triangular solves."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c = _matrix("cho_solve", c)
    b = checked_array("cho_solve", b, 1)
    c, b = promote_dtypes_inexact("cho_solve", c, b)
    vector = aval_of(b, "cho_solve", 1).ndim == aval_of(c, "cho_solve", 0).ndim - 1
    if vector:
        b = b[..., None]
    if lower:  # L L^H x = b
        y = _dec.triangular_solve(c, b, left_side=True, lower=True)
        x = _dec.triangular_solve(
            c, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True
        )
    else:  # U^H U x = b
        y = _dec.triangular_solve(
            c, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True
        )
        x = _dec.triangular_solve(c, y, left_side=True, lower=False)
    return x[..., 0] if vector else x


def solve_triangular(
    a: ArrayLike,
    b: ArrayLike,
    trans: int | str = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    debug: Any = None,
    check_finite: bool = True,
) -> Array:
    """``x`` with ``op(a) x = b``, ``op`` the identity, transpose or conjugate
    transpose (``trans``); only the ``lower`` (else upper) triangle is read."""
    del overwrite_b, debug, check_finite
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: invalid trans {trans!r}; use 0, 1, 2, 'N', 'T' or 'C'")
    transpose_a, conjugate_a = _TRANS[trans]
    a = _matrix("solve_triangular", a)
    b = checked_array("solve_triangular", b, 1)
    a, b = promote_dtypes_inexact("solve_triangular", a, b)
    a_ndim, b_ndim = aval_of(a, "solve_triangular", 0).ndim, aval_of(b, "solve_triangular", 1).ndim
    vector = b_ndim == a_ndim - 1
    if vector:
        b = b[..., None]
    x = _dec.triangular_solve(
        a, b, left_side=True, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )  # fmt: skip
    return x[..., 0] if vector else x


def lu_factor(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """``(lu, piv)``: LAPACK's packed LU and its row swaps (int32)."""
    del overwrite_a, check_finite
    lu, pivots, _ = _dec.lu(_matrix("lu_factor", a, square=False))
    return lu, pivots


def lu_solve(
    lu_and_piv: tuple[ArrayLike, ArrayLike],
    b: ArrayLike,
    trans: int = 0,
    overwrite_b: bool = False,
    check_finite: bool = True,
):
    """``x`` with ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b``
    (2) from ``lu_factor(a)``.

    As JAX 0.10.2: ``b`` is a vector when it is 1-d, or when it has one
    dimension less than ``lu`` and its last axis is ``lu``'s (a batch of
    vectors, with JAX's FutureWarning); otherwise a (batch of) ``(n, k)``
    matrices. The batch dimensions of ``lu``, the pivots and ``b`` broadcast.
    """
    del overwrite_b, check_finite
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    lu, piv = lu_and_piv
    lu = _matrix("lu_solve", lu)
    b = checked_array("lu_solve", b, 1)
    lu, b = promote_dtypes_inexact("lu_solve", lu, b)
    lu_shape = aval_of(lu, "lu_solve", 0).shape
    b_shape = aval_of(b, "lu_solve", 1).shape
    n = lu_shape[-1]
    vector = len(b_shape) == 1
    if not vector and len(lu_shape) == len(b_shape) + 1 and b_shape[-1] == n:
        warnings.warn(
            "jax.scipy.linalg.lu_solve: batched 1D solves with b.ndim > 1 are "
            "deprecated, and in the future will be treated as a batched 2D solve. "
            "Use lu_solve(lu_and_piv, b[..., None]).squeeze(-1) to avoid this warning.",
            FutureWarning,
            stacklevel=2,
        )
        vector = True
    if vector:
        b = b[..., None]
        b_shape = (*b_shape, 1)
    if b_shape[-2] != n:
        raise ValueError(
            f"lu_solve: b of shape {tuple(aval_of(b, 'lu_solve', 1).shape)} does not match "
            f"the LU decomposition's {n} rows"
        )
    piv_shape = aval_of(piv, "lu_solve", 0).shape
    batch = np.broadcast_shapes(lu_shape[:-2], piv_shape[:-1], b_shape[:-2])
    lu = broadcast_to(lu, (*batch, *lu_shape[-2:]))
    piv = broadcast_to(piv, (*batch, piv_shape[-1]))
    b = broadcast_to(b, (*batch, *b_shape[-2:]))
    permutation = _permutation_from_pivots(piv, n)

    if trans == 0:
        x = _lu_solve(lu, permutation, b)
    else:
        conj = trans == 2
        y = _dec.triangular_solve(
            lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj
        )
        y = _dec.triangular_solve(
            lu, y, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
            conjugate_a=conj,
        )  # fmt: skip
        # row i of the solution of the permuted system is row perm[i] of x
        inverse = argsort(permutation, axis=-1)
        x = take_along_axis(y, inverse[..., :, None], axis=-2)
    return x[..., 0] if vector else x


def _permutation_from_pivots(pivots: Any, n: int) -> Any:
    """The row order the swaps ``i <-> pivots[i]`` (in turn) produce."""

    rows = lax.iota(np.int32, n)
    shape = aval_of(pivots, "lu_solve", 1).shape
    perm = broadcast_to(rows, (*shape[:-1], n))
    for i in range(shape[-1]):
        p = pivots[..., i : i + 1]
        order = where(rows == i, p, where(rows == p, i, rows))
        perm = take_along_axis(perm, order, axis=-1)
    return perm


def lu(a: ArrayLike, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (``(p @ l, u)`` with ``permute_l``)."""
    del overwrite_a, check_finite
    a = _matrix("lu", a, square=False)
    m, n = aval_of(a, "lu", 0).shape[-2:]
    k = min(m, n)
    packed, _, permutation = _dec.lu(a)

    dtype = aval_of(a, "lu", 0).dtype
    lower = tril(packed[..., :, :k], -1) + eye(m, k, dtype=dtype)
    upper = triu(packed[..., :k, :])
    # p[permutation[i], i] = 1 so that p @ (l @ u) = a; real for complex a, as JAX's
    p_dtype = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
    p = (permutation[..., :, None] == lax.iota(np.int32, m)).astype(p_dtype.get(dtype, dtype))
    p = swapaxes(p, -1, -2)
    if permute_l:
        return _nla.matmul(p, lower), upper
    return p, lower, upper


def det(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The determinant."""
    return _nla.det(a)


def inv(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The inverse."""
    return _nla.inv(a)


def solve(
    a: ArrayLike,
    b: ArrayLike,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    debug: bool = False,
    check_finite: bool = True,
    assume_a: str = "gen",
) -> Array:
    """``x`` with ``a x = b`` (``assume_a="pos"`` uses Cholesky)."""
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return _nla.solve(a, b)


def qr(
    a: ArrayLike,
    overwrite_a: bool = False,
    lwork: Any = None,
    mode: str = "full",
    pivoting: bool = False,
    check_finite: bool = True,
):
    """``(q, r)``: ``mode`` "full", "economic" or "r" (``(r,)``)."""
    if pivoting:
        raise NotImplementedError("qr: pivoting is not supported")
    a = _matrix("qr", a, square=False)
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r}")
    q, r = _dec.qr(a, full_matrices=mode == "full")
    return (r,) if mode == "r" else (q, r)


def eigh(
    a: ArrayLike, b: Any = None, lower: bool = True, eigvals_only: bool = False, **kwargs: Any
):
    """``(w, v)`` (``w`` only with ``eigvals_only``) of a Hermitian matrix."""
    if b is not None:
        raise NotImplementedError("eigh: the generalized problem (b) is not supported")
    a = _matrix("eigh", a)
    v, w = _dec.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, **kwargs: Any):
    """``(u, s, vh)``, or ``s``."""
    result = _nla.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(result) if compute_uv else result


# Pade coefficients b_0..b_m of degree m (Higham 2005, as JAX and SciPy use).
_PADE_B = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}  # fmt: skip

# (theta_m thresholds on the L1 norm choosing the degree, the degrees, the
# largest norm before scaling): JAX's float64 and float32 tables.
_EXPM_TABLE = {
    True: ((1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
            2.097847961257068e000), (3, 5, 7, 9, 13), 5.371920351148152),
    False: ((4.258730016922831e-001, 1.880152677804762e000), (3, 5, 7), 3.925724783138660),
}  # fmt: skip


def _mm(a: Any, b: Any) -> Any:
    return rnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def _pade(m: int, a: Any) -> tuple[Any, Any]:
    """``(U, V)``: the odd and even parts of the degree-``m`` Pade numerator."""
    b = _PADE_B[m]
    ident = eye(a.shape[-1], dtype=a.dtype)
    a2 = _mm(a, a)
    if m == 13:
        a4 = _mm(a2, a2)
        a6 = _mm(a4, a2)
        u = _mm(a, _mm(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)  # fmt: skip
        v = _mm(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2
        return u, v + b[0] * ident
    powers = [ident, a2]
    for _ in range(2, m // 2 + 1):
        powers.append(_mm(powers[-1], a2))
    odd = sum((b[2 * k + 1] * p for k, p in enumerate(powers)), start=rnp.zeros_like(a))
    even = sum((b[2 * k] * p for k, p in enumerate(powers)), start=rnp.zeros_like(a))
    return _mm(a, odd), even


def expm(A: ArrayLike, *, upper_triangular: bool = False, max_squarings: int = 16) -> Array:
    """The matrix exponential of a (batch of) square matrices, as JAX 0.10.2.

    Scaling and squaring with a Pade approximant (Higham 2005): ``A`` is
    divided by ``2**s``, ``s = max(0, floor(log2(|A|_1 / maxnorm)))``, the
    degree (3-13 for float64/complex128, 3-7 for float32/complex64) chosen by
    the scaled norm, and the result squared ``s`` times. When ``s`` exceeds
    ``max_squarings`` (an infinite entry) the result is all NaN; a NaN entry
    gives all NaN too. ``upper_triangular`` solves ``Q R = P`` triangularly.
    """
    a = _matrix("expm", A)
    if aval_of(a, "expm", 0).ndim > 2:
        return rnp.vectorize(
            partial(expm, upper_triangular=upper_triangular, max_squarings=max_squarings),
            signature="(n,n)->(n,n)",
        )(a)
    dtype = np.dtype(aval_of(a, "expm", 0).dtype)
    if dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"expm: A.dtype={dtype} is not supported")
    conds, degrees, maxnorm = _EXPM_TABLE[dtype in (np.float64, np.complex128)]
    a_l1 = _nla.norm(a, 1)
    n_squarings = rnp.maximum(0, rnp.floor(rnp.log2(a_l1 / maxnorm)))
    scaled = a / rnp.power(rnp.asarray(2, a_l1.dtype), n_squarings).astype(dtype)
    idx = rnp.digitize(a_l1, rnp.asarray(conds, a_l1.dtype))
    u, v = lax.switch(idx, [partial(_pade, m) for m in degrees], scaled)
    p, q = u + v, v - u

    def _nan(args: Any) -> Any:
        return rnp.full_like(args[0], np.nan)

    def _compute(args: Any) -> Any:
        _, p, q = args
        r = solve_triangular(q, p) if upper_triangular else _nla.solve(q, p)

        def step(c: Any, i: Any) -> Any:
            return lax.cond(i < n_squarings, lambda x: _mm(x, x), lambda x: x, c), None

        r, _ = lax.scan(step, r, rnp.arange(max_squarings, dtype=n_squarings.dtype))
        return r

    return lax.cond(n_squarings > max_squarings, _nan, _compute, (a, p, q))


def expm_frechet(
    A: ArrayLike, E: ArrayLike, *, method: str | None = None, compute_expm: bool = True
) -> Any:
    """The Frechet derivative of :func:`expm` at ``A`` in direction ``E`` (its
    JVP), with ``expm(A)`` first when ``compute_expm``; ``method`` is ignored."""
    del method
    a = _matrix("expm_frechet", A)
    e = checked_array("expm_frechet", E, 1)
    e_shape, a_shape = aval_of(e, "expm_frechet", 1).shape, aval_of(a, "expm_frechet", 0).shape
    if len(e_shape) < 2 or e_shape[-1] != e_shape[-2]:
        raise ValueError(f"expm_frechet: expected E to be a (batch of) square matrices, "
                         f"got shape {e_shape}")  # fmt: skip
    if a_shape != e_shape:
        raise ValueError(f"expm_frechet: expected A and E of the same shape, got A.shape="
                         f"{a_shape} and E.shape={e_shape}")  # fmt: skip
    # one inexact dtype for both, since a JVP's tangent must match its primal
    a, e = promote_dtypes_inexact("expm_frechet", a, e)
    expm_a, frechet = jvp(expm, (a,), (e,))
    return (expm_a, frechet) if compute_expm else frechet


__all__ = [
    "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "expm_frechet", "inv", "lu",
    "lu_factor", "lu_solve", "qr", "solve", "solve_triangular", "svd",
]  # fmt: skip
