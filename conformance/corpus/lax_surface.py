"""The rest of ``jax.lax``: stop_gradient, optimization_barrier, the bit
counts, reduce_precision, cumlogsumexp and the thin wrappers (full, dot,
tile, split, conv_transpose, reduce, map, associative_scan, ...).

Exact results have NumPy oracles; those where the question is what XLA does
(reduce_precision's rounding and flushing, cumlogsumexp, conv_transpose's
padding) are ``AGREE`` cases judged by JAX.
"""

from __future__ import annotations

from collections.abc import Iterator

import ml_dtypes
import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for, script_case
from conformance.compare import Tolerance
from conformance.observe import Weak


def _bits(rng: np.random.Generator, dtype, n: int = 64) -> np.ndarray:
    """Random bit patterns of a float dtype (denormals, inf, NaN among them)."""
    utype = np.dtype(f"u{np.dtype(dtype).itemsize}")
    return rng.integers(0, np.iinfo(utype).max, size=n, dtype=utype, endpoint=True).view(dtype)


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x.view(f"u{x.dtype.itemsize}")).astype(x.dtype)


def _clz(x: np.ndarray) -> np.ndarray:
    bits = 8 * x.dtype.itemsize
    u = x.view(f"u{x.dtype.itemsize}").astype(np.uint64)
    lengths = np.array([int(v).bit_length() for v in u.ravel()], np.int64).reshape(x.shape)
    return (bits - lengths).astype(x.dtype)


def _tile(x: np.ndarray, reps) -> np.ndarray:
    return np.tile(x, reps)


# a sum of 18 products, summed in another order by XLA than by the reference:
# cancellation near zero costs ulps of the result but not of the terms
_CONV = Tolerance(ulps=64, atol_eps=32)


def cases() -> Iterator[Case]:
    rng = rng_for("lax_surface")
    f32 = rng.standard_normal((3, 4)).astype(np.float32)
    i32 = rng.integers(-(2**31), 2**31 - 1, size=(3, 4), dtype=np.int32)
    u8 = rng.integers(0, 255, size=(5,), dtype=np.uint8)

    # stop_gradient: values pass through, the derivative is zero
    yield fn_case(
        "lax.stop_gradient/grad",
        lambda ns, x: ns.api.grad(lambda v: v * ns.lax_.stop_gradient(v))(x),
        [np.float32(3.0)],
        oracle=lambda x: np.float32(3.0),
        tags=("quick",),
        requires=("api.grad",),
    )
    yield fn_case(
        "lax.stop_gradient/tree",
        lambda ns, x, i: ns.lax_.stop_gradient({"x": x, "i": i, "w": 2.0}),
        [f32, i32],
        oracle=lambda x, i: {"x": x, "i": i, "w": Weak(np.float32(2.0))},
    )
    yield fn_case(
        "lax.stop_gradient/vmap_grad",
        lambda ns, x: ns.api.vmap(ns.api.grad(lambda v: v * ns.lax_.stop_gradient(v) ** 2))(x[0]),
        [f32],
        oracle=lambda x: (x[0] ** 2).astype(np.float32),
        requires=("api.grad", "api.vmap"),
    )

    # optimization_barrier: the identity on a pytree
    yield fn_case(
        "lax.optimization_barrier/tree",
        lambda ns, x, i: ns.lax_.optimization_barrier((x, {"i": i})),
        [f32, i32],
        oracle=lambda x, i: (x, {"i": i}),
    )

    # bit counts
    for dtype, x in [("i32", i32), ("u8", u8)]:
        yield fn_case(
            f"lax.population_count/{dtype}",
            lambda ns, v: ns.lax_.population_count(v),
            [x],
            oracle=_popcount,
        )
        yield fn_case(f"lax.clz/{dtype}", lambda ns, v: ns.lax_.clz(v), [x], oracle=_clz)
    yield fn_case(
        "lax.clz/zero", lambda ns, v: ns.lax_.clz(v), [np.zeros(2, np.int32)], oracle=_clz
    )

    # reduce_precision: XLA's rounding, flushing and NaN handling, bit for bit
    for dtype, label in [(np.float32, "f32"), (np.float16, "f16"), (ml_dtypes.bfloat16, "bf16")]:
        x = _bits(rng, dtype)
        for e, m in [(5, 10), (8, 7), (4, 3), (2, 1)]:
            yield fn_case(
                f"lax.reduce_precision/{label}/e{e}m{m}",
                lambda ns, v, e=e, m=m: ns.lax_.reduce_precision(v, e, m),
                [x],
                expect=AGREE,
            )

    # cumlogsumexp
    y = rng.standard_normal((4, 5)).astype(np.float32)
    for axis in (0, 1):
        for reverse in (False, True):
            yield fn_case(
                f"lax.cumlogsumexp/axis={axis}/reverse={reverse}",
                lambda ns, v, a=axis, r=reverse: ns.lax_.cumlogsumexp(v, a, r),
                [y],
                expect=AGREE,
            )
    yield fn_case(
        "lax.cumlogsumexp/grad",
        lambda ns, v: ns.api.grad(lambda w: ns.lax_.cumlogsumexp(w).sum())(v),
        [y[0]],
        expect=AGREE,
        requires=("api.grad",),
    )

    # thin wrappers
    yield fn_case(
        "lax.full/weak",
        lambda ns: ns.lax_.full((2, 3), 1.5),
        [],
        oracle=lambda: Weak(np.full((2, 3), 1.5, np.float32)),
    )
    yield fn_case(
        "lax.full_like/i32",
        lambda ns, v: ns.lax_.full_like(v, 7),
        [i32],
        oracle=lambda v: np.full_like(v, 7),
    )
    yield fn_case("lax.square/i32", lambda ns, v: ns.lax_.square(v), [i32], oracle=lambda v: v * v)
    yield fn_case("lax.reciprocal/f32", lambda ns, v: ns.lax_.reciprocal(v), [f32], expect=AGREE)
    yield fn_case("lax.exp2/f32", lambda ns, v: ns.lax_.exp2(v), [f32], expect=AGREE)
    yield fn_case("lax.dot/matvec", lambda ns, a, b: ns.lax_.dot(a, b), [f32, f32[0]], expect=AGREE)
    a3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b3 = rng.standard_normal((2, 4, 2)).astype(np.float32)
    yield fn_case(
        "lax.batch_matmul/f32",
        lambda ns, a, b: ns.lax_.batch_matmul(a, b),
        [a3, b3],
        expect=AGREE,
    )
    yield fn_case(
        "lax.broadcast/i32",
        lambda ns, v: ns.lax_.broadcast(v, (2,)),
        [i32],
        oracle=lambda v: np.broadcast_to(v, (2, *v.shape)),
    )
    yield fn_case(
        "lax.collapse/i32",
        lambda ns, v: ns.lax_.collapse(v, 1),
        [a3.astype(np.int32)],
        oracle=lambda v: v.reshape(2, 12),
    )
    yield fn_case(
        "lax.tile/i32",
        lambda ns, v: ns.lax_.tile(v, (2, 3)),
        [i32],
        oracle=lambda v: _tile(v, (2, 3)),
    )
    yield fn_case(
        "lax.split/i32",
        lambda ns, v: tuple(ns.lax_.split(v, (1, 0, 3), axis=1)),
        [i32],
        oracle=lambda v: (v[:, :1], v[:, 1:1], v[:, 1:]),
    )
    yield fn_case(
        "lax.complex/f32",
        lambda ns, a, b: ns.lax_.complex(a, b),
        [f32[0], f32[1]],
        oracle=lambda a, b: (a + 1j * b).astype(np.complex64),
        mode="eager",
    )
    yield fn_case(
        "lax.axis_size/vmap",
        lambda ns, v: ns.api.vmap(lambda w: w * ns.lax_.axis_size("i"), axis_name="i")(v),
        [f32],
        oracle=lambda v: v * np.float32(3),
        requires=("api.vmap",),
    )
    xc = rng.standard_normal((1, 5, 5, 2)).astype(np.float32)
    kc = rng.standard_normal((3, 3, 2, 3)).astype(np.float32)
    for padding in ("SAME", "VALID"):
        yield fn_case(
            f"lax.conv_transpose/{padding}",
            lambda ns, a, b, p=padding: ns.lax_.conv_transpose(a, b, (2, 2), p),
            [xc, kc],
            expect=AGREE,
            tolerance=_CONV,
        )
    yield fn_case(
        "lax.conv/SAME",
        lambda ns, a, b: ns.lax_.conv(a, b, (1, 1), "SAME"),
        [np.transpose(xc, (0, 3, 1, 2)), np.transpose(kc, (3, 2, 0, 1))],
        expect=AGREE,
        tolerance=_CONV,
    )
    yield fn_case(
        "lax.reduce/max",
        lambda ns, v: ns.lax_.reduce(v, np.float32(-np.inf), ns.lax_.max, (1,)),
        [f32],
        oracle=lambda v: v.max(axis=1),
    )
    yield fn_case(
        "lax.map/batch_size=2",
        lambda ns, v: ns.lax_.map(lambda w: w * 2, v, batch_size=2),
        [f32[:, 0].copy()],
        oracle=lambda v: v * 2,
    )
    yield fn_case(
        "lax.associative_scan/add",
        lambda ns, v: ns.lax_.associative_scan(ns.lax_.add, v),
        [np.arange(11, dtype=np.int32)],
        oracle=lambda v: np.cumsum(v).astype(np.int32),
        tags=("quick",),
    )
    yield fn_case(
        "lax.associative_scan/max_reverse",
        lambda ns, v: ns.lax_.associative_scan(ns.lax_.max, v, reverse=True, axis=1),
        [i32],
        oracle=lambda v: np.maximum.accumulate(v[:, ::-1], axis=1)[:, ::-1],
    )
    # mulhi broadcasts size-1 dims as the other binary ops (JAX 0.10.2)
    col = i32[:, :1].copy()
    for mode in ("jit", "eager"):
        yield fn_case(
            f"lax.mulhi/size_one_dims/{mode}",
            lambda ns, x, y: ns.lax_.mulhi(x, y),
            [i32, col],
            expect=AGREE,
            mode=mode,
        )
    yield fn_case(
        "lax.mulhi/size_one_dims/vmap",
        lambda ns, x, y: ns.api.vmap(ns.lax_.mulhi, (1, None))(x[:, None, :] ^ x[:, :, None], y),
        [i32[:, :3], col],
        expect=AGREE,
    )
    # shape_as_value of a non-empty static shape is a NumPy int32 vector, of
    # () an empty array of the implementation (JAX 0.10.2)
    yield script_case(
        "lax.shape_as_value/kinds",
        lambda ns: [
            (isinstance(v, np.ndarray), v)
            for v in (ns.lax_.shape_as_value(s) for s in [(), (2,), (2, 3)])
        ],
        expect=AGREE,
    )
    # a primitive's repr and str are its name (JAX 0.10.2: print(eqn.primitive) shows add)
    yield script_case(
        "lax.primitive_repr_is_its_name",
        lambda ns: [
            repr(e.primitive) + "|" + str(e.primitive)
            for e in ns.api.make_jaxpr(lambda x: ns.lax_.sin(x) + 1.0)(np.float32(1.0)).eqns
        ],
        expect=AGREE,
    )
    # convert_element_type to a NumPy value's own dtype under jvp gives arrays
    # (JAX 0.10.2 binds it for a concrete primal); vjp hands the cotangent back
    # as given (no equation on the tangent side)
    yield script_case(
        "lax.convert_element_type/own_dtype_under_jvp",
        lambda ns: [
            [isinstance(v, np.ndarray), v]
            for v in ns.api.tree_util.tree_leaves(
                [
                    ns.api.jvp(
                        lambda x: ns.lax_.convert_element_type(x, np.float32), (f32,), (f32,)
                    ),
                    ns.api.vjp(lambda x: ns.lax_.convert_element_type(x, np.float32), f32)[1](f32),
                ]
            )
        ],
        expect=AGREE,
    )
    # Precision: str is the name, repr Precision.NAME, built from an alias (JAX 0.10.2)
    yield script_case(
        "lax.Precision/names_and_aliases",
        lambda ns: [
            str(ns.lax_.Precision.HIGH),
            repr(ns.lax_.Precision.HIGHEST),
            repr(ns.lax_.Precision("float32")),
            repr(ns.lax_.Precision("tensorfloat32")),
            repr(ns.lax_.Precision("fastest")),
        ],
        expect=AGREE,
    )
    # jacfwd pushes real zero tangents for the other differentiated inputs
    # (JAX 0.10.2's one basis over all of them): d2 pow / dx2 at y = 0 is +0
    yield script_case(
        "lax.pow/jacfwd_second_derivative_sign_at_zero_exponent",
        lambda ns: [
            [bool(np.signbit(ns.to_numpy(v))), v]
            for v in ns.api.tree_util.tree_leaves(
                ns.api.jacfwd(ns.api.jacfwd(ns.lax_.pow, (0, 1)), (0, 1))(4.0, 0.0)
            )
        ],
        expect=AGREE,
    )
    # jacrev pulls back real zero cotangents for the other outputs (JAX 0.10.2's
    # one basis over all of them): their +0 terms count
    yield script_case(
        "lax.neg/jacrev_other_outputs_zero_signs",
        lambda ns: [
            [bool(np.signbit(ns.to_numpy(v))), v]
            for v in ns.api.jacrev(lambda x: (x * 0.0, -x * 0.0))(np.float32(1.0))
        ],
        expect=AGREE,
    )
    # a jit's transpose takes only the nonzero output cotangents (JAX 0.10.2
    # prunes symbolic zeros from the transposed call): the unused primal
    # output of jvp(jit(sin)) adds no 0 * cos(x) term, so the -0 survives
    yield script_case(
        "lax.sin/grad_of_jvp_of_jit_keeps_negative_zero",
        lambda ns: [
            [bool(np.signbit(ns.to_numpy(v))), v]
            for v in (
                ns.api.grad(lambda x: ns.api.jvp(ns.api.jit(ns.lax_.sin), (x,), (1.0,))[1])(
                    np.float32(0.0)
                ),
                ns.api.jit(
                    ns.api.grad(lambda x: ns.api.jvp(ns.api.jit(ns.lax_.sin), (x,), (1.0,))[1])
                )(np.float32(0.0)),
            )
        ],
        expect=AGREE,
    )
