"""pmap cases run unchanged on JAX (the oracle) and on refimpl.

Each case is ``name -> (build, args)``: ``build(lib)`` returns the function
to call on ``args`` (NumPy arrays), where ``lib`` is ``jax`` or ``refimpl``
(both have ``pmap``, ``grad``, ``value_and_grad``, ``lax``, ``numpy``).
Run as a script (``python tests/helpers/pmap_cases.py OUT.pkl``) it computes JAX's
results on 4 host devices and pickles them (name -> list of leaves, or
the error class name); XLA_FLAGS is set before jax is imported.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np

R = np.random.default_rng(18)
X44 = R.standard_normal((4, 4)).astype(np.float32)
X4 = R.standard_normal(4).astype(np.float32)
X48 = R.standard_normal((4, 8)).astype(np.float32)
X423 = R.standard_normal((4, 2, 3)).astype(np.float32)
I4 = np.array([3, -1, 7, 2], np.int32)
B4 = np.array([True, False, False, False])
G_ADJ = [[0, 1], [2, 3]]
G_SPREAD = [[0, 2], [1, 3]]


def _p(fun, **kw):
    return lambda lib: lib.pmap(fun(lib), "i", **kw)


def _collective(op, **params):
    return lambda lib: lambda x: getattr(lib.lax, op)(x, "i", **params)


CASES = {}
for _op in ("psum", "pmean", "pmax", "pmin"):
    CASES[f"{_op}"] = (_p(_collective(_op)), (X423,))
    CASES[f"{_op}_groups_adjacent"] = (_p(_collective(_op, axis_index_groups=G_ADJ)), (X423,))
    CASES[f"{_op}_groups_spread"] = (_p(_collective(_op, axis_index_groups=G_SPREAD)), (X423,))
# groups of different sizes: JAX 0.10.2's pmap all-reduces within each
# (pmean divides by the first group's size, for every group)
G_UNEVEN = [[0, 1, 2], [3]]
G_UNEVEN_MIXED = [[0, 3], [1], [2]]
for _op in ("psum", "pmean", "pmax", "pmin"):
    CASES[f"{_op}_groups_uneven"] = (_p(_collective(_op, axis_index_groups=G_UNEVEN)), (X423,))
    CASES[f"{_op}_groups_uneven_mixed"] = (
        _p(_collective(_op, axis_index_groups=G_UNEVEN_MIXED)),
        (X423,),
    )
CASES["psum_bool_groups_uneven"] = (_p(_collective("psum", axis_index_groups=G_UNEVEN)), (B4,))
CASES["pmax_int_groups_uneven"] = (_p(_collective("pmax", axis_index_groups=G_UNEVEN)), (I4,))
CASES["grad_psum_groups_uneven"] = (
    lambda lib: lib.pmap(
        lib.grad(lambda x: lib.lax.psum(x**3, "i", axis_index_groups=G_UNEVEN_MIXED).sum()), "i"
    ),
    (X423,),
)
CASES["psum_int"] = (_p(_collective("psum")), (I4,))
CASES["pmax_int_groups"] = (_p(_collective("pmax", axis_index_groups=G_SPREAD)), (I4,))
CASES["psum_tuple_tree"] = (
    lambda lib: lib.pmap(lambda x, y: lib.lax.psum((x, {"y": y}), "i"), "i"),
    (X4, X44),
)
# collectives over trees of mixed leaves: on pjrt, small same-dtype leaves are
# all-reduced as one flat buffer, large ones by a variadic all_reduce
XBIG = R.standard_normal((4, 70000)).astype(np.float32)  # > the combining limit alone
XZ = np.zeros((4, 0), np.float32)
for _op in ("psum", "pmax", "pmin", "pmean"):
    for _g, _groups in (("", None), ("_groups", G_SPREAD)):
        CASES[f"{_op}_mixed_tree{_g}"] = (
            lambda lib, op=_op, groups=_groups: lib.pmap(
                lambda a, b, c, i, z, s: getattr(lib.lax, op)(
                    {"a": a, "b": (b, c), "i": i, "z": z, "s": s}, "i", axis_index_groups=groups
                ),
                "i",
            ),
            (X423, X44, X4, I4, XZ, X48),
        )
CASES["psum_tree_with_a_large_leaf"] = (
    lambda lib: lib.pmap(lambda a, big, i: lib.lax.psum((a, big, i, a * 2), "i"), "i"),
    (X423, XBIG, I4),
)
CASES["grad_psum_of_a_tree"] = (
    lambda lib: lib.pmap(
        lib.grad(
            lambda x, y: sum(
                v.sum() for v in lib.tree_util.tree_leaves(lib.lax.psum((x**2, {"y": y**3}), "i"))
            ),
            argnums=(0, 1),
        ),
        "i",
    ),
    (X423, X44),
)
for _axis in (0, 1, -1):
    CASES[f"all_gather_axis{_axis}"] = (_p(_collective("all_gather", axis=_axis)), (X423,))
    CASES[f"all_gather_tiled_axis{_axis}"] = (
        _p(_collective("all_gather", axis=_axis, tiled=True)),
        (X423,),
    )
CASES["all_gather_groups"] = (
    _p(_collective("all_gather", axis_index_groups=G_SPREAD)),
    (X423,),
)
CASES["all_gather_tiled_groups"] = (
    _p(_collective("all_gather", axis=1, tiled=True, axis_index_groups=G_ADJ)),
    (X423,),
)
CASES["ppermute_cycle"] = (
    _p(_collective("ppermute", perm=[(0, 1), (1, 2), (2, 3), (3, 0)])),
    (X423,),
)
CASES["ppermute_partial"] = (_p(_collective("ppermute", perm=[(0, 3), (2, 1)])), (X423,))
CASES["psum_scatter"] = (_p(_collective("psum_scatter")), (X44,))
CASES["psum_scatter_dim1_tiled"] = (
    _p(_collective("psum_scatter", scatter_dimension=1, tiled=True)),
    (X48.reshape(4, 1, 8) + np.zeros((1, 2, 1), np.float32),),
)
CASES["psum_scatter_groups"] = (
    _p(_collective("psum_scatter", axis_index_groups=G_SPREAD)),
    (X48[:, :2],),
)
CASES["psum_scatter_tiled_groups"] = (
    _p(_collective("psum_scatter", tiled=True, axis_index_groups=G_ADJ)),
    (X48,),
)
CASES["axis_index"] = (
    lambda lib: lib.pmap(lambda x: x + lib.lax.axis_index("i"), "i"),
    (X4,),
)
CASES["in_axes_none"] = (
    lambda lib: lib.pmap(
        lambda x, w, b: lib.numpy.dot(x, w) + b + lib.lax.psum(b, "i"), "i", in_axes=(0, None, None)
    ),
    (X423[:, 0], X44[:3], X4),
)
CASES["in_axes_1_out_axes_1"] = (
    lambda lib: lib.pmap(lambda x: x * 2 + lib.lax.pmean(x, "i"), "i", in_axes=1, out_axes=1),
    (X44.T[:3],),
)
CASES["out_axes_none"] = (
    lambda lib: lib.pmap(lambda x: (lib.lax.psum(x, "i"), x), "i", out_axes=(None, 0)),
    (X44,),
)
CASES["static_broadcasted"] = (
    lambda lib: lib.pmap(lambda x, k: x * k, "i", static_broadcasted_argnums=1),
    (X4, 3),
)
CASES["grad_psum_square"] = (
    lambda lib: lib.pmap(lib.grad(lambda x: lib.lax.psum(x**2, "i")), "i"),
    (np.arange(4.0, dtype=np.float32),),
)
CASES["grad_in_axes_none"] = (
    lambda lib: lib.pmap(
        lib.grad(lambda w, x: lib.lax.psum(lib.numpy.sum(lib.numpy.sin(x * w)), "i")),
        "i",
        in_axes=(None, 0),
    ),
    (X4[:3], X423[:, 0]),
)
CASES["grad_psum_groups"] = (
    lambda lib: lib.pmap(
        lib.grad(lambda x: lib.lax.psum(x**3, "i", axis_index_groups=G_SPREAD).sum()), "i"
    ),
    (X423,),
)
CASES["grad_all_gather"] = (
    lambda lib: lib.pmap(
        lib.grad(lambda x: (lib.lax.all_gather(x, "i") * np.arange(4.0, dtype=np.float32)).sum()),
        "i",
    ),
    (X4,),
)
CASES["grad_ppermute"] = (
    lambda lib: lib.pmap(
        lib.grad(lambda x: (lib.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]) ** 2).sum()), "i"
    ),
    (X423,),
)

# A collective over the pmap's axis inside an unnamed vmap: its batch rule
# meets vmap's axis first and must pass the collective on to the pmap (the
# vmapped axis an ordinary one of the operand), not apply it across vmap's
# members (found by the conformance coverage work: wrong shapes and errors).
X434 = R.standard_normal((4, 3, 4)).astype(np.float32)
for _label, _fun, _vmap in (
    ("all_gather", lambda L: lambda v: L.all_gather(v, "i"), {"in_axes": 1, "out_axes": 1}),
    ("all_gather_tiled", lambda L: lambda v: L.all_gather(v, "i", tiled=True), {"in_axes": 1}),
    ("psum_scatter_tiled", lambda L: lambda v: L.psum_scatter(v, "i", tiled=True), {}),
    ("psum_scatter", lambda L: lambda v: L.psum_scatter(v, "i"), {}),
    ("ppermute", lambda L: lambda v: L.ppermute(v, "i", [(0, 1), (1, 2), (2, 3)]),
     {"in_axes": 1, "out_axes": 1}),
    ("all_to_all", lambda L: lambda v: L.all_to_all(v, "i", 0, 0, tiled=True), {}),
):  # fmt: skip
    CASES[f"{_label}_under_vmap"] = (
        lambda lib, fun=_fun, kw=_vmap: lib.pmap(lib.vmap(fun(lib.lax), **kw), "i"),
        (X434,),
    )


def _scan_closure(lib):
    def body(x, w):
        def step(carry, t):
            return carry * w + t, carry.sum()

        return lib.lax.scan(step, x, lib.numpy.arange(3.0, dtype=np.float32))

    return lib.pmap(body, "i", in_axes=(0, None))


CASES["scan_closed_over_unmapped"] = (_scan_closure, (X423, np.float32(0.5)))
CASES["pmap_of_jit_cond"] = (
    lambda lib: lib.pmap(
        # the predicate is the same on every device: a collective in a branch
        # that only some devices take would wait forever on real devices
        lib.jit(
            lambda x: lib.lax.cond(
                lib.lax.psum(x.sum(), "i") > 0, lambda v: lib.lax.psum(v, "i"), lambda v: -v, x
            )
        ),
        "i",
    ),
    (X44,),
)
CASES["grad_of_pmap_in_axes_none"] = (
    lambda lib: lib.grad(
        lambda w, x: lib.pmap(
            lambda w, x: lib.lax.psum(lib.numpy.sin(w * x), "i"), "i", in_axes=(None, 0)
        )(w, x).sum(),
        argnums=(0, 1),
    ),
    (np.float32(0.7), X4),
)


def _pmap_in_scan(lib):
    def run(xs, c0):
        def step(c, t):
            # the pmap closes over the carry c and the scanned t (unmapped inside)
            y = lib.pmap(lambda x: lib.lax.psum(x * c, "i") + t, "i")(xs)
            return c * 0.5 + y.sum() * 0.01, y

        return lib.lax.scan(step, c0, lib.numpy.arange(3.0, dtype=np.float32))

    return lambda xs, c0: (run(xs, c0), lib.grad(lambda c: run(xs, c)[0])(c0))


CASES["pmap_in_scan_closure_and_grad"] = (_pmap_in_scan, (X4, np.float32(1.5)))
CASES["bool_psum"] = (_p(_collective("pmax")), (B4,))


def _train_step(lib):
    def loss(params, x, y):
        w, b = params
        pred = lib.numpy.tanh(x @ w + b)
        return lib.numpy.mean((pred - y) ** 2)

    def step(params, x, y):
        value, grads = lib.value_and_grad(loss)(params, x, y)
        grads = lib.lax.pmean(grads, "i")
        value = lib.lax.pmean(value, "i")
        new = lib.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        return new, value

    return lib.pmap(step, "i", in_axes=(None, 0, 0), out_axes=(None, None))


TRAIN_PARAMS = (R.standard_normal((3, 2)).astype(np.float32), np.zeros(2, np.float32))
TRAIN_X = R.standard_normal((4, 5, 3)).astype(np.float32)
TRAIN_Y = R.standard_normal((4, 5, 2)).astype(np.float32)
CASES["train_step"] = (_train_step, (TRAIN_PARAMS, TRAIN_X, TRAIN_Y))


def nested_body(lib):
    """The per-device body of the 2 x 2 nested pmap (axes 'i' outer, 'j' inner)."""
    lax = lib.lax

    def body(x):
        return (
            lax.psum(x, "j") * 10
            + lax.psum(x, "i")
            + lax.axis_index("i") * 100.0
            + lax.pmax(x, ("i", "j")) * 1000.0
        )

    return body


NESTED_X = R.standard_normal((2, 2, 3)).astype(np.float32)


def _jax_results() -> dict:
    import jax
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    out = {}
    for name, (build, args) in CASES.items():
        try:
            value = build(jax)(*args)
            out[name] = [np.asarray(v) for v in jax.tree_util.tree_leaves(value)]
        except Exception as error:  # noqa: BLE001 - the oracle records what JAX raised
            out[name] = type(error).__name__ + ": " + str(error).splitlines()[0]
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("i", "j"))
    body = nested_body(jax)

    def blockwise(x):  # blocks are (1, 1, 3): the per-device value with two unit axes
        return body(x[0, 0])[None, None]

    sharded = jax.shard_map(blockwise, mesh=mesh, in_specs=P("i", "j"), out_specs=P("i", "j"))
    out["nested_2x2"] = [np.asarray(sharded(NESTED_X))]
    return out


if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    with open(sys.argv[1], "wb") as f:
        pickle.dump(_jax_results(), f)
