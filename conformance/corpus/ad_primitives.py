"""Derivatives of every differentiable primitive: ``jvp`` (under ``jit``) and
``vjp`` (eager) of a one-primitive ``lax`` program, on fixed random inputs,
compared across implementations (``AGREE``: ref, pjrt and jax must match in
values, dtypes, weak types and tree structure).

A row is ``(name, fn(lax, *args), [(shape, domain), ...])``; ``fn`` is written
once against ``ns.lax_`` (``refimpl.lax`` or ``jax.lax``). ``jvp`` and ``vjp``
come from the implementation's top-level module (``refimpl`` or ``jax``); an
implementation without them skips. Integer-valued primitives (argmax,
comparisons) appear through their float0 tangents.

Tolerances: derivative formulas chain several roundings, and XLA may fuse
them (computing in a different order), so values agree within a few dozen
ulps rather than the default few; the row can widen it further.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.compare import Tolerance
from conformance.namespace import Unsupported

AD_TOLERANCE = Tolerance(ulps={"float32": 64, "float16": 8, "bfloat16": 8}, atol_eps=16)


def _api(ns: Any) -> Any:
    """The implementation's top-level module (where jvp and vjp live)."""
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "jvp") or not hasattr(module, "vjp"):
        raise Unsupported(f"{ns.name} has no jvp/vjp")
    return module


def _sample(rng: np.random.Generator, shape: tuple, dtype: Any, domain: str) -> np.ndarray:
    if domain == "pos":
        x = rng.uniform(0.5, 2.0, shape)
    elif domain == "unit":
        x = rng.uniform(-0.9, 0.9, shape)
    elif domain == "away":
        x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)
    else:
        x = rng.normal(size=shape)
    return np.asarray(x).astype(dtype)


def _spd(ns: Any, x: Any) -> Any:
    """A symmetric positive definite matrix made from ``x``: ``x x^T + 3 I``."""
    return ns.np_.matmul(x, ns.np_.swapaxes(x, -1, -2)) + 3 * ns.np_.eye(x.shape[-1], dtype=x.dtype)


def _take(ns: Any, x: Any, axis: int, mode: str) -> Any:
    return ns.np_.take(x, _IDX, axis=axis, mode=mode)


_IDX = np.array([[3, 0], [1, 6]], np.int32)
_DOT_DIMS = (((2,), (1,)), ((0,), (0,)))
_CONV = dict(window_strides=(2, 1), padding=((1, 0), (1, 1)), rhs_dilation=(1, 2))

# name, fn(lax, *args) -- or fn(ns, *args) when the name starts with "np:" --, arg specs
ROWS: list[tuple[str, Any, list[tuple[tuple[int, ...], str]]]] = [
    ("neg", lambda L, x: L.neg(x), [((3, 4), "any")]),
    ("exp", lambda L, x: L.exp(x), [((3, 4), "any")]),
    ("log", lambda L, x: L.log(x), [((3, 4), "pos")]),
    ("log1p", lambda L, x: L.log1p(x), [((3, 4), "pos")]),
    ("expm1", lambda L, x: L.expm1(x), [((3, 4), "any")]),
    ("tanh", lambda L, x: L.tanh(x), [((3, 4), "any")]),
    ("sin", lambda L, x: L.sin(x), [((3, 4), "any")]),
    ("cos", lambda L, x: L.cos(x), [((3, 4), "any")]),
    ("tan", lambda L, x: L.tan(x), [((3, 4), "unit")]),
    ("asin", lambda L, x: L.asin(x), [((3, 4), "unit")]),
    ("acos", lambda L, x: L.acos(x), [((3, 4), "unit")]),
    ("atan", lambda L, x: L.atan(x), [((3, 4), "any")]),
    ("sinh", lambda L, x: L.sinh(x), [((3, 4), "any")]),
    ("cosh", lambda L, x: L.cosh(x), [((3, 4), "any")]),
    ("sqrt", lambda L, x: L.sqrt(x), [((3, 4), "pos")]),
    ("rsqrt", lambda L, x: L.rsqrt(x), [((3, 4), "pos")]),
    ("cbrt", lambda L, x: L.cbrt(x), [((3, 4), "away")]),
    ("logistic", lambda L, x: L.logistic(x), [((3, 4), "any")]),
    ("erf", lambda L, x: L.erf(x), [((3, 4), "any")]),
    ("abs", lambda L, x: L.abs(x), [((3, 4), "away")]),
    ("sign", lambda L, x: L.sign(x), [((3, 4), "away")]),
    ("floor", lambda L, x: L.floor(x), [((3, 4), "any")]),
    ("ceil", lambda L, x: L.ceil(x), [((3, 4), "any")]),
    ("round", lambda L, x: L.round(x), [((3, 4), "any")]),
    ("integer_pow", lambda L, x: L.integer_pow(x, 3), [((3, 4), "any")]),
    ("integer_pow_neg", lambda L, x: L.integer_pow(x, -2), [((3, 4), "away")]),
    ("add", lambda L, x, y: L.add(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("add_rank0", lambda L, x, y: L.add(x, y), [((3, 4), "any"), ((), "any")]),
    ("sub", lambda L, x, y: L.sub(x, y), [((), "any"), ((3, 4), "any")]),
    ("mul", lambda L, x, y: L.mul(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("div", lambda L, x, y: L.div(x, y), [((3, 4), "any"), ((3, 4), "away")]),
    ("rem", lambda L, x, y: L.rem(x, y), [((3, 4), "any"), ((3, 4), "away")]),
    ("pow", lambda L, x, y: L.pow(x, y), [((3, 4), "pos"), ((3, 4), "any")]),
    ("max", lambda L, x, y: L.max(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("max_ties", lambda L, x: L.max(x, L.rev(x, (0,))), [((3, 4), "any")]),
    ("min", lambda L, x, y: L.min(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("atan2", lambda L, x, y: L.atan2(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("lt", lambda L, x, y: L.lt(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("select_n",
     lambda L, x, y, z: L.select_n(L.convert_element_type(L.gt(x, z), np.int32), x, y),
     [((3, 4), "any")] * 3),
    ("clamp", lambda L, a, x, b: L.clamp(a, x, b), [((3, 4), "any")] * 3),
    ("convert_element_type",
     lambda L, x: L.convert_element_type(L.convert_element_type(x, np.float16), np.float32),
     [((3, 4), "any")]),
    ("convert_to_int", lambda L, x: L.convert_element_type(x, np.int32), [((3, 4), "any")]),
    ("reduce_sum", lambda L, x: L.reduce_sum(x, (0, 2)), [((3, 4, 2), "any")]),
    ("reduce_prod", lambda L, x: L.reduce_prod(x, (1,)), [((3, 4, 2), "away")]),
    ("reduce_max", lambda L, x: L.reduce_max(x, (0, 2)), [((3, 4, 2), "any")]),
    ("reduce_max_ties", lambda L, x: L.reduce_max(L.round(x), (1,)), [((3, 8), "any")]),
    ("reduce_min", lambda L, x: L.reduce_min(x, (1,)), [((3, 4, 2), "any")]),
    ("argmax", lambda L, x: L.argmax(x, 1, np.int32), [((3, 4), "any")]),
    ("cumsum", lambda L, x: L.cumsum(x, 1, reverse=True), [((3, 5), "any")]),
    ("cumprod", lambda L, x: L.cumprod(x, 1), [((3, 5), "away")]),
    ("cummax", lambda L, x: L.cummax(x, 0), [((5, 3), "any")]),
    ("cummin", lambda L, x: L.cummin(x, 1, reverse=True), [((3, 5), "any")]),
    ("sort", lambda L, x: L.sort(x, dimension=0), [((5, 3), "any")]),
    ("sort_key_val", lambda L, k, v: L.sort_key_val(k, v, 1), [((3, 5), "any")] * 2),
    ("broadcast_in_dim", lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
     [((3, 1), "any")]),
    ("reshape", lambda L, x: L.reshape(x, (2, 6)), [((3, 4), "any")]),
    ("squeeze_expand_dims", lambda L, x: L.expand_dims(L.squeeze(x, (1,)), (0,)),
     [((3, 1, 4), "any")]),
    ("transpose", lambda L, x: L.transpose(x, (2, 0, 1)), [((2, 3, 4), "any")]),
    ("rev", lambda L, x: L.rev(x, (0, 1)), [((3, 4), "any")]),
    ("slice", lambda L, x: L.slice(x, (1, 0), (6, 5), (2, 3)), [((7, 5), "any")]),
    ("pad", lambda L, x, v: L.pad(x, v, ((1, -1, 1), (-2, 2, 0))),
     [((4, 5), "any"), ((), "any")]),
    ("concatenate", lambda L, x, y: L.concatenate([x, y, x], 1),
     [((2, 3), "any"), ((2, 1), "any")]),
    ("dynamic_slice", lambda L, x: L.dynamic_slice(x, (np.int32(1), np.int32(4)), (3, 3)),
     [((5, 6), "any")]),
    ("dynamic_update_slice",
     lambda L, x, u: L.dynamic_update_slice(x, u, (np.int32(4), np.int32(1))),
     [((5, 6), "any"), ((2, 3), "any")]),
    ("np:take_clip", lambda ns, x: _take(ns, x, 1, "clip"), [((3, 5), "any")]),
    ("np:take_fill", lambda ns, x: _take(ns, x, 0, "fill"), [((5, 3), "any")]),
    ("np:at_add", lambda ns, x, u: x.at[:, _IDX].add(u, mode="drop"),
     [((3, 5), "any"), ((3, 2, 2), "any")]),
    ("np:at_set", lambda ns, x, u: x.at[_IDX].set(u, mode="drop"),
     [((5, 3), "any"), ((2, 2, 3), "any")]),
    # matrix decompositions, through the numpy layer (jnp.linalg / rnp.linalg)
    ("np:cholesky", lambda ns, x: ns.np_.linalg.cholesky(_spd(ns, x)), [((3, 3), "any")]),
    ("np:eigvalsh", lambda ns, x: ns.np_.linalg.eigvalsh(_spd(ns, x)), [((3, 3), "any")]),
    ("np:svd_values", lambda ns, x: ns.np_.linalg.svd(x, compute_uv=False), [((4, 3), "any")]),
    ("np:qr_r", lambda ns, x: ns.np_.abs(ns.np_.linalg.qr(x, mode="r")), [((4, 3), "any")]),
    ("np:det", lambda ns, x: ns.np_.linalg.det(_spd(ns, x)), [((3, 3), "any")]),
    ("np:inv", lambda ns, x: ns.np_.linalg.inv(_spd(ns, x)), [((3, 3), "any")]),
    ("np:solve", lambda ns, x, b: ns.np_.linalg.solve(_spd(ns, x), b),
     [((3, 3), "any"), ((3, 2), "any")]),
    ("dot_general", lambda L, a, b: L.dot_general(a, b, _DOT_DIMS, precision="highest"),
     [((2, 3, 4), "any"), ((2, 4, 5), "any")]),
    ("conv_general_dilated",
     lambda L, a, b: L.conv_general_dilated(a, b, precision="highest", **_CONV),
     [((2, 3, 7, 6), "any"), ((4, 3, 3, 2), "any")]),
    ("conv_feature_groups",
     lambda L, a, b: L.conv_general_dilated(a, b, (1,), ((1, 1),), feature_group_count=2,
                                            precision="highest"),
     [((2, 4, 6), "any"), ((6, 2, 3), "any")]),
]  # fmt: skip

# 16-bit float rows: elementwise math only (long sums and products there
# depend on the accumulation order more than on the derivative)
LOW_PRECISION_ROWS = ("exp", "log", "tanh", "sin", "sqrt", "logistic", "erf", "mul", "div",
                      "max", "pow", "atan2")  # fmt: skip


def _bound(ns: Any, name: str, fn: Any) -> Any:
    if name.startswith("np:"):
        return functools.partial(fn, ns)
    return functools.partial(fn, ns.lax_)


def _jvp_case(name: str, fn: Any, primals: list, tangents: list, dtype_name: str) -> Case:
    n = len(primals)

    def run(ns: Any, *args: Any) -> Any:
        return _api(ns).jvp(_bound(ns, name, fn), tuple(args[:n]), tuple(args[n:]))

    return fn_case(
        f"ad_primitives.jvp/{name.removeprefix('np:')}/{dtype_name}",
        run,
        [*primals, *tangents],
        expect=AGREE,
        mode="jit",
        tolerance=AD_TOLERANCE,
        tags=("quick",) if name in ("sin", "pad", "dot_general") else (),
    )


def _cotangent(ns: Any, leaf: Any, position: int) -> Any:
    """A cotangent for an output leaf: fixed random values of its shape and
    dtype (the same for every implementation)."""
    shape, dtype = np.shape(leaf), np.dtype(leaf.dtype)
    rng = np.random.default_rng(1000 + position)
    return ns.asarray(_sample(rng, shape, dtype, "any"))


def _vjp_case(name: str, fn: Any, primals: list, dtype_name: str) -> Case:
    def run(ns: Any, *args: Any) -> Any:
        api = _api(ns)
        out, pullback = api.vjp(_bound(ns, name, fn), *args)
        leaves, tree = api.tree_util.tree_flatten(out)
        cts = [_cotangent(ns, leaf, i) for i, leaf in enumerate(leaves)]
        return out, pullback(api.tree_util.tree_unflatten(tree, cts))

    return fn_case(
        f"ad_primitives.vjp/{name.removeprefix('np:')}/{dtype_name}",
        run,
        primals,
        expect=AGREE,
        mode="eager",
        tolerance=AD_TOLERANCE,
    )


# Integer-valued outputs have no cotangent to pull back: jvp only.
_JVP_ONLY = {"lt", "argmax", "convert_to_int"}


def cases() -> Iterator[Case]:
    for name, fn, specs in ROWS:
        rng = rng_for(f"ad_primitives/{name}")
        primals = [_sample(rng, shape, np.float32, domain) for shape, domain in specs]
        tangents = [_sample(rng, shape, np.float32, "any") for shape, _ in specs]
        yield _jvp_case(name, fn, primals, tangents, "f32")
        if name not in _JVP_ONLY:
            yield _vjp_case(name, fn, primals, "f32")
    for dtype, dtype_name in ((np.float16, "f16"), (np.dtype(ml_dtypes.bfloat16), "bf16")):
        for name, fn, specs in ROWS:
            if name not in LOW_PRECISION_ROWS:
                continue
            rng = rng_for(f"ad_primitives/{name}/{dtype_name}")
            primals = [_sample(rng, shape, dtype, domain) for shape, domain in specs]
            tangents = [_sample(rng, shape, dtype, "any") for shape, _ in specs]
            yield _jvp_case(name, fn, primals, tangents, dtype_name)
            yield _vjp_case(name, fn, primals, dtype_name)
