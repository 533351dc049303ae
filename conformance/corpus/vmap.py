"""vmap (SPEC section 3 "vmap"): every primitive under ``vmap`` with in_axes
variants, control flow, collectives over a named axis, compositions with
jit and grad, and the argument errors -- compared across implementations
(``AGREE``: ref, pjrt and jax must match in values, dtypes, weak types and
structure) or against JAX's error class and words.

The per-primitive rows are those of ``ad_primitives`` (every differentiable
primitive, written once against ``ns.lax_``) plus integer, bitwise and
indexing rows whose operands are indices. For each row two in_axes variants
are drawn from the row's name (fixed across runs): per argument None or an
axis (negative ones too), with at least one argument mapped; a mapped
argument stacks ``B = 3`` fresh samples along its axis.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for, script_case
from conformance.compare import Tolerance
from conformance.corpus.ad_primitives import ROWS as AD_ROWS
from conformance.corpus.ad_primitives import _bound, _sample
from conformance.namespace import Unsupported
from conformance.observe import Raises

B = 3
VMAP_TOLERANCE = Tolerance(ulps={"float32": 64, "float16": 8, "bfloat16": 8}, atol_eps=16)


def _api(ns: Any) -> Any:
    """The implementation's top-level module (where vmap, grad live)."""
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "vmap"):
        raise Unsupported(f"{ns.name} has no vmap")
    return module


def _ints(rng: np.random.Generator, shape: tuple, lo: int, hi: int) -> np.ndarray:
    return rng.integers(lo, hi, size=shape).astype(np.int32)


# name, fn(lax, *args) (or fn(ns, *args) for "np:" names), arg makers rng -> array
EXTRA_ROWS: list[tuple[str, Any, list[Any]]] = [
    ("div_int", lambda L, x, y: L.div(x, y),
     [lambda r: _ints(r, (4,), -9, 9), lambda r: _ints(r, (4,), 1, 5)]),
    ("bitwise_xor", lambda L, x, y: L.bitwise_xor(x, y),
     [lambda r: _ints(r, (2, 3), 0, 64), lambda r: _ints(r, (2, 3), 0, 64)]),
    ("shift_left", lambda L, x, y: L.shift_left(x, y),
     [lambda r: _ints(r, (3,), -4, 4), lambda r: _ints(r, (3,), 0, 40)]),
    ("select_n_bool", lambda L, p, x, y: L.select_n(p, x, y),
     [lambda r: r.random((2, 3)) > 0.5, lambda r: _sample(r, (2, 3), np.float32, "any"),
      lambda r: _sample(r, (2, 3), np.float32, "any")]),
    ("dynamic_slice_traced_starts",
     lambda L, x, i, j: L.dynamic_slice(x, (i, j), (2, 3)),
     [lambda r: _sample(r, (4, 5), np.float32, "any"), lambda r: np.int32(r.integers(-6, 6)),
      lambda r: np.int32(r.integers(-6, 6))]),
    ("dynamic_update_slice_traced_starts",
     lambda L, x, u, i: L.dynamic_update_slice(x, u, (i, np.int32(1))),
     [lambda r: _sample(r, (4, 5), np.float32, "any"),
      lambda r: _sample(r, (2, 2), np.float32, "any"), lambda r: np.int32(r.integers(-6, 6))]),
    ("np:take_traced_indices", lambda ns, x, i: ns.np_.take(x, i, axis=1, mode="clip"),
     [lambda r: _sample(r, (2, 5), np.float32, "any"), lambda r: _ints(r, (3,), 0, 7)]),
    ("np:at_add_traced_indices", lambda ns, x, i, u: x.at[i].add(u, mode="drop"),
     [lambda r: _sample(r, (4, 2), np.float32, "any"), lambda r: _ints(r, (3,), 0, 6),
      lambda r: _sample(r, (3, 2), np.float32, "any")]),
    ("iota_add", lambda L, x: L.add(x, L.iota(np.int32, 4)), [lambda r: _ints(r, (4,), -3, 3)]),
]  # fmt: skip


def _makers(specs: list) -> list[Any]:
    return [
        (lambda r, shape=shape, domain=domain: _sample(r, shape, np.float32, domain))
        for shape, domain in specs
    ]


ROWS: list[tuple[str, Any, list[Any]]] = [
    (name, fn, _makers(specs)) for name, fn, specs in AD_ROWS
] + EXTRA_ROWS


def _batched(rng: np.random.Generator, makers: list[Any]) -> tuple[list[Any], tuple]:
    """Random in_axes and the arguments (mapped ones stack B fresh samples)."""
    examples = [[make(rng) for make in makers] for _ in range(B)]
    axes: list[int | None] = []
    for value in examples[0]:
        rank = np.ndim(value)
        pick = int(rng.integers(-1, rank + 1))
        if pick < 0:
            axes.append(None)
        else:
            axes.append(pick - (rank + 1) * int(rng.integers(0, 2)))
    if all(a is None for a in axes):
        axes[0] = 0
    args = [
        examples[0][k] if a is None else np.stack([np.asarray(e[k]) for e in examples], axis=a)
        for k, a in enumerate(axes)
    ]
    return args, tuple(axes)


def _primitive_case(name: str, fn: Any, args: list, in_axes: tuple, variant: int) -> Case:
    def run(ns: Any, *values: Any) -> Any:
        return _api(ns).vmap(_bound(ns, name, fn), in_axes=in_axes)(*values)

    return fn_case(
        f"vmap.primitive/{name.removeprefix('np:')}/{variant}",
        run,
        args,
        expect=AGREE,
        tolerance=VMAP_TOLERANCE,
        tags=("quick",) if name in ("sin", "dot_general", "pad") and variant == 0 else (),
        notes=f"in_axes={in_axes}",
    )


# --- control flow, collectives, compositions -----------------------------------------------


def _cond(ns: Any, p: Any, x: Any) -> Any:
    return ns.lax_.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)


def _switch(ns: Any, i: Any, x: Any) -> Any:
    return ns.lax_.switch(i, [lambda v: v, lambda v: v * 10.0, lambda v: -v], x)


def _while(ns: Any, limit: Any, x: Any) -> Any:
    return ns.lax_.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))


def _scan(ns: Any, init: Any, xs: Any, w: Any) -> Any:
    def step(c: Any, x: Any) -> Any:
        c = c * w + x
        return c, ns.np_.sum(c)

    return ns.lax_.scan(step, init, xs)


def _fori(ns: Any, n: Any, x: Any) -> Any:
    return ns.lax_.fori_loop(0, n, lambda i, v: v + i, x)


def _loss(ns: Any, params: Any, x: Any, y: Any) -> Any:
    (w1, b1), (w2, b2) = params
    h = ns.np_.tanh(x @ w1 + b1)
    return ns.np_.sum((h @ w2 + b2 - y) ** 2)


def _per_example_grads(ns: Any, params: Any, xs: Any, ys: Any) -> Any:
    api = _api(ns)
    if not hasattr(api, "grad"):
        raise Unsupported(f"{ns.name} has no grad")
    return api.vmap(api.grad(functools.partial(_loss, ns)), in_axes=(None, 0, 0))(params, xs, ys)


def _grad_of_vmap(ns: Any, params: Any, xs: Any, ys: Any) -> Any:
    api = _api(ns)
    if not hasattr(api, "grad"):
        raise Unsupported(f"{ns.name} has no grad")

    def total(p: Any) -> Any:
        return ns.np_.sum(api.vmap(functools.partial(_loss, ns), in_axes=(None, 0, 0))(p, xs, ys))

    return api.grad(total)(params)


def _named(body: Any) -> Any:
    def run(ns: Any, x: Any) -> Any:
        return _api(ns).vmap(lambda v: body(ns.lax_, v), axis_name="i")(x)

    return run


COLLECTIVES = [
    ("psum", lambda L, v: L.psum(v, "i")),
    ("pmean", lambda L, v: L.pmean(v, "i")),
    ("pmax", lambda L, v: L.pmax(v, "i")),
    ("pmin", lambda L, v: L.pmin(v, "i")),
    ("psum_unbatched", lambda L, v: L.psum(2.0, "i") * v),
    ("all_gather", lambda L, v: L.all_gather(v, "i", axis=1)),
    ("all_gather_tiled", lambda L, v: L.all_gather(v, "i", tiled=True)),
    ("ppermute", lambda L, v: L.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)])),
    ("axis_index", lambda L, v: v * L.axis_index("i")),
    ("psum_scatter", lambda L, v: L.psum_scatter(L.concatenate([v] * 4, 0), "i", tiled=True)),
]


def _vmapped(fn: Any, in_axes: Any) -> Any:
    def run(ns: Any, *args: Any) -> Any:
        return _api(ns).vmap(functools.partial(fn, ns), in_axes=in_axes)(*args)

    return run


def _structured_cases() -> Iterator[Case]:
    rng = rng_for("vmap/structured")
    x = rng.normal(size=(3, 2)).astype(np.float32)
    pred = np.array([1.0, -1.0, 2.0], np.float32)
    yield fn_case("vmap.control/cond_batched_predicate", _vmapped(_cond, 0), [pred, x])
    yield fn_case(
        "vmap.control/cond_unbatched_predicate", _vmapped(_cond, (None, 0)), [np.float32(-1), x]
    )
    yield fn_case(
        "vmap.control/switch_batched_index_out_of_range",
        _vmapped(_switch, 0),
        [np.array([-3, 1, 7], np.int32), x],
    )
    yield fn_case(
        "vmap.control/while_batched_predicate",
        _vmapped(_while, 0),
        [np.array([0, 3, 1], np.int32), x],
    )
    yield fn_case(
        "vmap.control/while_batched_predicate_eager",
        _vmapped(_while, 0),
        [np.array([2, 0, 1], np.int32), x],
        mode="eager",
    )
    xs = rng.normal(size=(4, 3, 2)).astype(np.float32)
    w = rng.normal(size=(3, 2)).astype(np.float32)
    yield fn_case(
        "vmap.control/scan_carry_becomes_batched",
        _vmapped(_scan, (None, 1, 0)),
        [np.zeros(2, np.float32), xs, w],
        tolerance=VMAP_TOLERANCE,
    )
    yield fn_case(
        "vmap.control/fori_loop_batched_bound",
        _vmapped(_fori, 0),
        [np.array([0, 2, 5], np.int32), np.zeros(3, np.int32)],
    )
    m = rng.normal(size=(4, 3)).astype(np.float32)
    for name, body in COLLECTIVES:
        yield fn_case(
            f"vmap.collective/{name}", _named(body), [m], tolerance=VMAP_TOLERANCE,
            tags=("quick",) if name == "psum" else (),
        )  # fmt: skip
    params = [
        (rng.normal(size=(3, 8)).astype(np.float32), np.zeros(8, np.float32)),
        (rng.normal(size=(8, 2)).astype(np.float32) * 0.3, np.zeros(2, np.float32)),
    ]
    batch = [rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 2)).astype(np.float32)]
    for mode in ("jit", "eager"):
        yield fn_case(
            f"vmap.compose/per_example_grads_{mode}",
            _per_example_grads,
            [params, *batch],
            mode=mode,
            tolerance=VMAP_TOLERANCE,
            tags=("quick",) if mode == "jit" else (),
        )
    yield fn_case(
        "vmap.compose/grad_of_vmap", _grad_of_vmap, [params, *batch], tolerance=VMAP_TOLERANCE
    )
    yield fn_case(
        "vmap.compose/nested_vmap_dot",
        lambda ns, a, b: _api(ns).vmap(
            _api(ns).vmap(lambda u, v: u @ v, in_axes=(0, None)), in_axes=(None, 1)
        )(a, b),
        [rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(4, 5)).astype(np.float32)],
        tolerance=VMAP_TOLERANCE,
    )
    yield fn_case(
        "vmap.compose/nested_jit",
        lambda ns, a: _api(ns).vmap(lambda v: ns.jit(lambda u: ns.np_.sin(u) * 2.0)(v) + 1.0)(a),
        [x],
        tolerance=VMAP_TOLERANCE,
    )
    yield from _axes_cases(rng)
    yield from _error_cases()


def _axes_cases(rng: np.random.Generator) -> Iterator[Case]:
    x = rng.normal(size=(3, 2)).astype(np.float32)
    tree = {"a": rng.normal(size=(2, 3)).astype(np.float32), "b": x}

    def prefix(ns: Any, t: Any, s: Any) -> Any:
        return _api(ns).vmap(lambda t, s: t["a"].T * s + t["b"], in_axes=({"a": 1, "b": 0}, None))(
            t, s
        )

    yield fn_case("vmap.axes/tree_prefix_and_unmapped", prefix, [tree, 2.5])
    for out_axes in (1, -1, (0, None)):

        def outs(ns: Any, a: Any, out_axes: Any = out_axes) -> Any:
            f = lambda v: (v * 2.0, 3.0)  # noqa: E731
            if not isinstance(out_axes, tuple):
                f = lambda v: v * 2.0  # noqa: E731
            return _api(ns).vmap(f, out_axes=out_axes)(a)

        yield fn_case(f"vmap.axes/out_axes_{out_axes}", outs, [x])
    yield fn_case(
        "vmap.axes/kwargs_mapped_over_axis_0",
        lambda ns, a, b: _api(ns).vmap(lambda u, *, v: u - v)(a, v=b),
        [x, x * 2],
    )
    yield fn_case(
        "vmap.axes/axis_size_no_mapped_argument",
        lambda ns, a: _api(ns).vmap(lambda u: u + 1.0, in_axes=None, axis_size=2)(a),
        [x],
    )


def _error_cases() -> Iterator[Case]:
    x = np.ones((3, 2), np.float32)

    def vmap_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        return lambda ns: _api(ns).vmap(fn, **kwargs)(*args)

    rank = "vmap was requested to map its argument along axis 0, which implies that its rank"
    yield script_case(
        "vmap.errors/python_scalar_mapped",
        vmap_call(lambda a: a, 2.0),
        expect=Raises(ValueError, rank),
    )
    yield script_case(
        "vmap.errors/axis_out_of_range",
        vmap_call(lambda a: a, np.ones(3, np.float32), in_axes=1),
        expect=Raises(ValueError, "rank should be at least 2, but is only 1"),
    )
    yield script_case(
        "vmap.errors/inconsistent_sizes",
        vmap_call(lambda a, b: a, x, np.ones((4, 2), np.float32)),
        expect=Raises(
            ValueError,
            r"vmap got inconsistent sizes for array axes to be mapped:\n  \* one axis had "
            r"size 3: axis 0 of argument a of type float32\[3,2\];\n  \* one axis had size 4: "
            r"axis 0 of argument b of type float32\[4,2\]",
        ),
    )
    yield script_case(
        "vmap.errors/in_axes_not_a_prefix",
        vmap_call(lambda a: a, (x,), in_axes=((0, 1),)),
        expect=Raises(ValueError, "vmap in_axes specification must be a tree prefix"),
    )
    yield script_case(
        "vmap.errors/in_axes_length",
        vmap_call(lambda a, b: a, x, x, in_axes=(0,)),
        expect=Raises(ValueError, r"len\(in_axes\)=1, len\(args\)=2"),
    )
    yield script_case(
        "vmap.errors/batched_output_out_axes_none",
        vmap_call(lambda a: a, x, out_axes=None),
        expect=Raises(ValueError, "got axis spec None but output was batched on axis 0"),
    )
    yield script_case(
        "vmap.errors/axis_index_groups",
        lambda ns: _api(ns).vmap(
            lambda v: ns.lax_.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]), axis_name="i"
        )(np.ones((4, 2), np.float32)),
        expect=Raises(NotImplementedError, "axis_index_groups not supported in vmap"),
    )
    yield script_case(
        "vmap.errors/unbound_axis_name",
        lambda ns: _api(ns).vmap(lambda v: ns.lax_.psum(v, "j"), axis_name="i")(x),
        expect=Raises(NameError, "unbound axis name: j"),
    )


def cases() -> Iterator[Case]:
    for name, fn, makers in ROWS:
        rng = rng_for(f"vmap/{name}")
        for variant in range(2):
            args, in_axes = _batched(rng, makers)
            yield _primitive_case(name, fn, args, in_axes, variant)
    yield from _structured_cases()
    yield from _custom_vmap_differentiated_cases()


def _custom_vmap_differentiated_cases() -> Iterator[Case]:
    """issue 29: jvp of a custom_vmap function (outside vmap the body, under
    vmap the rule, differentiated), also through jit and custom_jvp."""

    def sin_with_cos_rule(ns: Any) -> Any:
        api = _api(ns)
        cv = importlib.import_module(api.__name__ + ".custom_batching")

        @cv.custom_vmap
        def f(x):
            return ns.np_.sin(x)

        @f.def_vmap
        def rule(axis_size, in_batched, xs):
            return ns.np_.cos(xs), in_batched[0]

        return f

    xs, ts = np.float32([0.5, 1.0, 2.0]), np.float32([1.0, 2.0, -1.0])

    def jvp_outside(ns):
        return _api(ns).jvp(sin_with_cos_rule(ns), (np.float32(2.0),), (np.float32(1.0),))

    def jvp_of_vmap(ns):
        api = _api(ns)
        return api.jvp(api.vmap(sin_with_cos_rule(ns)), (xs,), (ts,))

    def vmap_of_jvp_unbatched_tangent(ns):
        api, f = _api(ns), sin_with_cos_rule(ns)
        return ns.jit(api.vmap(lambda x: api.jvp(f, (x,), (np.float32(1.0),))))(xs)

    def custom_jvp_around_custom_vmap(ns):
        api = _api(ns)
        g = api.custom_jvp(sin_with_cos_rule(ns))
        g.defjvp(lambda p, t: (g(p[0]), 5.0 * t[0]))
        return api.vmap(g)(xs), api.vmap(lambda x: api.jvp(g, (x,), (np.float32(1.0),)))(xs)

    for name, script in (
        ("jvp_outside_vmap", jvp_outside),
        ("jvp_of_vmap", jvp_of_vmap),
        ("jit_vmap_of_jvp_unbatched_tangent", vmap_of_jvp_unbatched_tangent),
        ("custom_jvp_around_custom_vmap", custom_jvp_around_custom_vmap),
    ):
        yield script_case(f"vmap.custom_vmap/{name}", script, tolerance=VMAP_TOLERANCE)
