"""vmap's paths the other families leave untaken (found with
``tools/conformance_coverage.py``), each against JAX (recorded): lists as
``in_axes``, collectives in sub-programs whose operands are all unbatched,
float0 outputs (tangents of integers) at any ``out_axes``, a mapped Ref
returned, ``spmd_axis_name`` (accepted; values as without it), and vmap's
argument and output checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.namespace import Unsupported
from conformance.observe import Raises

_R = np.random.default_rng(3638)
X = _R.standard_normal((3, 2)).astype(np.float32)
N = np.array([1, -2, 3], np.int32)


def _case(name: str, script: Callable[[Any], Any]) -> Case:
    return script_case(f"vmap.paths/{name}", script, expect=AGREE)


def _in_axes_list(ns: Any) -> Any:
    return ns.api.vmap(lambda x, w: x * w, in_axes=[1, None])(ns.asarray(X), ns.asarray(X[0, :1]))


def _collective_in_loop_body(ns: Any) -> Any:
    """Loops whose operands are all unbatched, their bodies using the axis
    (psum of a constant, axis_index): the loop must still be batched."""
    api, L = ns.api, ns.lax_

    def f(x: Any) -> Any:
        total = L.fori_loop(0, 3, lambda i, c: c + L.psum(1.0, "i"), 0.0)
        idx = L.fori_loop(0, 2, lambda i, c: c + L.axis_index("i"), 0)
        _, ys = L.scan(lambda c, t: (c, c * L.axis_index("i") + t), 1, np.arange(2, dtype=np.int32))
        return x * total + idx, ys

    return api.vmap(f, axis_name="i")(ns.asarray(X))


def _grad_int(api: Any) -> Callable[..., Any]:
    return api.grad(lambda x, n: (x * n).sum(), argnums=(0, 1), allow_int=True)


def _float0_outputs(ns: Any) -> Any:
    """Gradients w.r.t. an int input are float0: unmapped (in_axes None) and
    mapped, stacked at out_axes 0 and 1."""
    api = ns.api
    g = _grad_int(api)
    x = ns.asarray(X)
    outs = [
        api.vmap(g, in_axes=(0, None))(x, np.int32(2)),
        api.vmap(g, in_axes=(0, 0))(x, N),
        api.vmap(g, in_axes=(0, None), out_axes=1)(x, np.int32(2)),
        api.vmap(g, in_axes=(0, 0), out_axes=(1, 0))(x, N),
    ]
    return [[(np.shape(t), str(np.asarray(t).dtype)) for t in api.tree_util.tree_leaves(o)]
            for o in outs]  # fmt: skip


def _float0_out_of_bounds(ns: Any) -> Any:
    api = ns.api
    return api.vmap(_grad_int(api), in_axes=(0, None), out_axes=(0, 3))(ns.asarray(X), np.int32(2))


def _refs(ns: Any) -> Any:
    if not hasattr(ns.api, "new_ref"):
        raise Unsupported(f"{ns.name} has no new_ref")
    return ns.api


def _ref_returned(ns: Any) -> Any:
    """A mapped Ref argument returned is the ref itself (written through)."""
    api = _refs(ns)
    r = api.new_ref(ns.asarray(X))

    def f(r: Any) -> Any:
        r[...] = r[...] * 2
        return r, r[...].sum()

    out, s = api.vmap(f)(r)
    return out is r, s, api.freeze(r)


def _ref_returned_other_axis(ns: Any) -> Any:
    api = _refs(ns)
    if ns.name == "jax":  # (an internal AttributeError: 'Ref' object has no attribute 'transpose')
        raise Unsupported("JAX 0.10.2 fails inside vmap on a Ref returned at another axis")
    r = api.new_ref(ns.asarray(X))
    return api.vmap(lambda r: r, out_axes=1)(r)


# Not here: a Ref made inside the vmapped function and returned (JAX 0.10.2
# returns it; refimpl refuses it as it refuses one returned from jit: open).


def _sizes(ns: Any) -> Any:
    """Inconsistent sizes over positional, keyword and several groups of axes."""
    api = ns.api
    a3, b4, c5 = (ns.asarray(np.ones((k, 2), np.float32)) for k in (3, 4, 5))
    return api.vmap(lambda a, b, c, d, e=None: a)(a3, a3, b4, c5, e=b4)


def _bool_collectives(ns: Any) -> Any:
    """psum counts booleans (summed as int32, JAX's psum), so pmean of bools is
    the fraction that is true; a Python bool and a tree with a float too."""
    api, L = ns.api, ns.lax_
    flags = ns.asarray(np.array([True, True, False, True]))

    def f(v: Any) -> Any:
        return L.psum(v, "i"), L.pmean(v, "i"), L.psum((True, v, 1.0), "i"), L.pmax(v, "i")

    return api.vmap(f, axis_name="i")(flags)


def _spmd_axis_name(ns: Any) -> Any:
    """spmd_axis_name names mesh axes for sharding; without a mesh the values
    are vmap's (a name or a tuple of names)."""
    api, L = ns.api, ns.lax_
    x = ns.asarray(X)
    one = api.vmap(lambda v: v * 2.0, spmd_axis_name="x")(x)
    return one, api.vmap(lambda v: L.psum(v, "i"), axis_name="i", spmd_axis_name=("x", "y"))(x)


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("not_callable", lambda ns: ns.api.vmap(3)),
    ("out_axes_str", lambda ns: ns.api.vmap(lambda x: x, out_axes="a")),
    ("in_axes_str", lambda ns: ns.api.vmap(lambda x: x, in_axes="a")),
    ("out_axes_out_of_bounds", lambda ns: ns.api.vmap(lambda x: x, out_axes=5)(ns.asarray(X))),
    ("axis_size_disagrees", lambda ns: ns.api.vmap(lambda x: x, axis_size=2)(ns.asarray(X))),
    ("axis_size_float", lambda ns: ns.api.vmap(lambda: 1.0, axis_size=1.5)()),
    ("output_string", lambda ns: ns.api.vmap(lambda x: (x, "s"))(ns.asarray(X))),
    ("inconsistent_sizes", _sizes),
    ("spmd_axis_name_list",
     lambda ns: ns.api.vmap(lambda x: x, spmd_axis_name=["x"])(ns.asarray(X))),
    ("inconsistent_sizes_ufunc", lambda ns: ns.api.vmap(np.add)(
        ns.asarray(X), ns.asarray(np.ones((4, 2), np.float32)))),
]  # fmt: skip


def _jvp_of_while_made_strong(ns: Any) -> Any:
    """jvp and linearize of a vmapped while loop whose carry a cond on a
    batched predicate makes strong (taken weak, returned strong)."""
    api, lax = ns.api, ns.api.lax
    preds = ns.asarray(np.float32([0.0, 3.0]))

    def while_(p: Any, init: Any) -> Any:
        def step(c: Any) -> Any:
            return lax.cond(p > 1.0, lambda v: v + np.float32(1.0), lambda v: v * 2.0, c)

        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, step(c[1])), (0, init))[1]

    def mapped(s: Any) -> Any:
        return api.vmap(lambda p: while_(p, s))(preds)

    return api.jvp(mapped, (1.0,), (1.0,)), api.linearize(mapped, 1.0)[1](1.0)


def _grad_of_scan_made_strong(ns: Any) -> Any:
    """grad of a vmapped fori_loop (a scan) whose carry a cond on a batched
    predicate makes strong, the branches in both orders (known: the weak type
    of the init's cotangent, see conformance/known.py)."""
    api, lax = ns.api, ns.api.lax
    preds = ns.asarray(np.float32([0.0, 3.0]))

    def grad_of(add_first: bool) -> Any:
        def step(p: Any, c: Any, x: Any) -> Any:
            add, mul = (lambda v: v + x), (lambda v: v * 2.0)
            return lax.cond(p > x, *((add, mul) if add_first else (mul, add)), c)

        def loop(p: Any, s: Any) -> Any:
            return lax.fori_loop(0, 3, lambda i, c: step(p, c, np.float32(1.0) * i), s)

        return api.grad(lambda s: api.vmap(lambda p: loop(p, s))(preds).sum())(1.0)

    return grad_of(True), grad_of(False)


def _jnp_no_op_of_numpy(ns: Any) -> Any:
    """jax.numpy functions that compute nothing, vmapped over float64/int64
    NumPy data: JAX's are jits (a new float32/int32 array), but asarray and
    reshape hand the NumPy argument back (its own dtype)."""
    api, jnp = ns.api, ns.np_
    f64, i64 = np.ones((2, 3)), np.arange(6).reshape(2, 3)
    jitted = [jnp.ravel, jnp.squeeze, jnp.positive, jnp.real, jnp.round, jnp.atleast_1d]
    passed = [jnp.asarray, lambda v: jnp.reshape(v, (3,))]
    return [api.vmap(f)(a) for f in jitted + passed for a in (f64, i64)]


def _lax_no_op_of_numpy(ns: Any) -> Any:
    """lax functions that change nothing (reshape to the same shape, squeeze
    of no dims, the identity transpose, concatenate of one operand,
    broadcast with no sizes) return their operand itself: under vmap the
    float64 NumPy argument comes back float64, as in JAX."""
    api, lax = ns.api, ns.lax_
    f64 = np.ones((2, 3, 4))
    fns = [
        lambda v: lax.reshape(v, v.shape),
        lambda v: lax.squeeze(v, ()),
        lambda v: lax.transpose(v, (0, 1)),
        lambda v: lax.concatenate([v], 1),
        lambda v: lax.broadcast(v, ()),
    ]
    return [api.vmap(f)(f64) for f in fns]


def cases() -> Iterator[Case]:
    yield _case("jnp_no_op_of_numpy_argument", _jnp_no_op_of_numpy)
    yield _case("lax_no_op_of_numpy_argument", _lax_no_op_of_numpy)
    yield _case("jvp_of_while_carry_made_strong_by_batched_cond", _jvp_of_while_made_strong)
    yield _case("grad_of_scan_carry_made_strong_by_batched_cond", _grad_of_scan_made_strong)
    yield _case("in_axes_list", _in_axes_list)
    yield _case("collective_in_loop_body", _collective_in_loop_body)
    yield _case("bool_collectives", _bool_collectives)
    yield _case("spmd_axis_name", _spmd_axis_name)
    yield _case("float0_outputs", _float0_outputs)
    yield _case("float0_out_of_bounds", _float0_out_of_bounds)
    yield _case("ref/returned", _ref_returned)
    yield script_case("vmap.paths/ref/returned_other_axis", _ref_returned_other_axis,
                      expect=Raises(ValueError, "only be returned with out_axes 0"))  # fmt: skip
    for name, build in ERRORS:
        yield _case(f"errors/{name}", build)
