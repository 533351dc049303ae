"""The public JAX names libraries such as optax and chex use, against JAX
0.10.2: jax.flatten_util, jax.dtypes, jax.sharding, jax.core.Tracer,
jax.experimental.checkify, key paths and dataclass nodes of jax.tree_util,
custom_jvp/custom_vjp under eager differentiation, ad_checkpoint's residuals,
and what ``python -m refimpl.as_jax`` maps."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import jax
import jax.flatten_util
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import core_api, dtypes_api, flatten_util, sharding, tree_util
from refimpl.experimental import checkify

# --- jax.flatten_util ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "tree",
    [
        {"a": np.arange(3.0, dtype=np.float32), "b": (np.ones((2, 2), np.float32), 2.0)},
        [np.arange(4, dtype=np.int32), np.ones(2, np.float32)],  # mixed: promoted
        (),
    ],
    ids=["same-dtype", "mixed", "empty"],
)
def test_ravel_pytree_matches_jax(tree, backend):
    flat, unravel = flatten_util.ravel_pytree(tree)
    jflat, junravel = jax.flatten_util.ravel_pytree(tree)
    assert (flat.shape, flat.dtype) == (jflat.shape, jflat.dtype)
    np.testing.assert_array_equal(np.asarray(flat), np.asarray(jflat))
    back = unravel(flat)
    jback = junravel(jflat)
    assert tree_util.tree_structure(back) == tree_util.tree_structure(tree)
    for got, want in zip(tree_util.tree_leaves(back), jax.tree_util.tree_leaves(jback)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # under grad and jit: the flat vector is differentiable
    if isinstance(tree, dict):
        g = ri.grad(lambda v: rnp.sum(unravel(v)["a"] ** 2))(flat)
        np.testing.assert_allclose(np.asarray(g)[:3], 2 * np.arange(3.0))


def test_unravel_checks_the_dtype_when_it_converted():
    _, unravel = flatten_util.ravel_pytree([np.int32(1), np.float32(2.0)])
    with pytest.raises(TypeError, match="expected dtype float32"):
        unravel(np.zeros(2, np.int32))


# --- jax.dtypes ------------------------------------------------------------------------------

BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize(
    "args",
    [
        (1.0,),
        (1,),
        (BF16, 1.0),
        (np.float32,),
        (np.uint8, int),
        (np.int8, np.uint8),
        (np.zeros(2, BF16), 2.0),
        (True, 1),
    ],  # fmt: skip
    ids=repr,
)
def test_dtypes_result_type_matches_jax(args):
    assert dtypes_api.result_type(*args) == jax.dtypes.result_type(*args)
    got = dtypes_api.result_type(*args, return_weak_type_flag=True)
    assert got == jax.dtypes.result_type(*args, return_weak_type_flag=True)


def test_dtypes_issubdtype_canonicalize_and_friends_match_jax():
    pairs = [
        (BF16, np.floating), (np.float32, np.inexact), (np.int8, np.integer),
        (np.uint32, np.signedinteger), (np.complex64, np.floating), (np.bool_, np.number),
    ]  # fmt: skip
    for a, b in pairs:
        assert dtypes_api.issubdtype(a, b) == jax.dtypes.issubdtype(a, b), (a, b)
    key = ri.random.key(0)
    assert dtypes_api.issubdtype(key.dtype, dtypes_api.prng_key)
    assert dtypes_api.issubdtype(key.dtype, dtypes_api.extended)
    assert not dtypes_api.issubdtype(np.float32, dtypes_api.prng_key)
    for dt in (np.float64, np.int64, BF16, np.uint16):
        assert dtypes_api.canonicalize_dtype(dt) == jax.dtypes.canonicalize_dtype(dt)
    for x in (np.zeros(2, np.int8), np.float32(1), True, 1j):
        assert dtypes_api.scalar_type_of(x) is jax.dtypes.scalar_type_of(x)
    assert dtypes_api.itemsize_bits(np.int16) == jax.dtypes.itemsize_bits(np.int16) == 16
    assert dtypes_api.float0 == jax.dtypes.float0


# --- jax.sharding, jax.core ----------------------------------------------------------------


def test_arrays_have_a_single_device_sharding(backend):
    x = rnp.arange(6.0).reshape(2, 3)
    s = x.sharding
    assert isinstance(s, sharding.Sharding) and isinstance(s, sharding.SingleDeviceSharding)
    assert s.device_set == {x.device} and s.is_fully_replicated
    assert s.devices_indices_map((2, 3)) == {x.device: (slice(None), slice(None))}
    assert s.shard_shape((2, 3)) == (2, 3)


def test_partition_spec_mesh_and_named_sharding():
    spec = sharding.PartitionSpec("data", None)
    assert tuple(spec) == ("data", None) and repr(spec) == "P('data', None)"
    mesh = sharding.Mesh(np.array(ri.devices()[:1]), ("data",))
    named = sharding.NamedSharding(mesh, spec)
    assert named.shard_shape((4, 3)) == (4, 3) and named.is_fully_replicated
    assert sharding.single_device_of(named) == ri.devices()[0]
    with pytest.raises(ValueError, match="not found in mesh"):
        sharding.NamedSharding(mesh, sharding.PartitionSpec("model"))


def test_core_tracer_is_every_transformations_tracer():
    seen = []

    def f(x):
        seen.append(isinstance(x, core_api.Tracer))
        return x * 2

    f(1.0)
    ri.jit(f)(1.0)
    ri.grad(f)(1.0)
    ri.vmap(f)(np.ones(2, np.float32))
    ri.jvp(f, (1.0,), (1.0,))
    assert seen == [False, True, True, True, True]


# --- jax.experimental.checkify -------------------------------------------------------------


def test_checkify_concrete_checks():
    def f(x):
        checkify.check(x > 0, "x must be positive, got {x}", x=x)
        return x + 1

    assert float(f(np.float32(1))) == 2.0
    with pytest.raises(checkify.JaxRuntimeError, match="x must be positive, got -1"):
        f(np.float32(-1))
    err, out = checkify.checkify(f)(np.float32(-1))
    assert "got -1" in err.get() and float(out) == 0.0
    with pytest.raises(checkify.JaxRuntimeError):
        checkify.check_error(err)
    err, _ = checkify.checkify(f)(np.float32(2))
    assert err.get() is None
    with pytest.raises(NotImplementedError, match="traced predicate"):
        ri.jit(f)(np.float32(1))
    assert checkify.all_checks == checkify.user_checks | checkify.automatic_checks


# --- jax.tree_util: key paths, dataclasses, keyed nodes ------------------------------------


@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = dataclasses.field(default="p", metadata=dict(static=True))


tree_util.register_dataclass(Params)
jax.tree_util.register_dataclass(Params)


class Keyed:
    def __init__(self, x, y):
        self.x, self.y = x, y


def _keyed_flatten(k):
    return ((jax.tree_util.GetAttrKey("x"), k.x), (jax.tree_util.GetAttrKey("y"), k.y)), None


def _keyed_flatten_ri(k):
    return ((tree_util.GetAttrKey("x"), k.x), (tree_util.GetAttrKey("y"), k.y)), None


tree_util.register_pytree_with_keys(Keyed, _keyed_flatten_ri, lambda _, c: Keyed(*c))
jax.tree_util.register_pytree_with_keys(Keyed, _keyed_flatten, lambda _, c: Keyed(*c))


def _paths(mod, tree):
    return [mod.keystr(path) for path, _ in mod.tree_flatten_with_path(tree)[0]]


def test_key_paths_match_jax():
    tree = {"p": Params(1.0, [2.0, (3.0,)]), "k": Keyed(4.0, {"z": 5.0}), "t": (None, 6.0)}
    assert _paths(tree_util, tree) == _paths(jax.tree_util, tree)
    got = tree_util.tree_map_with_path(
        lambda p, x: tree_util.keystr(p, simple=True, separator="/"), tree
    )
    want = jax.tree_util.tree_map_with_path(
        lambda p, x: jax.tree_util.keystr(p, simple=True, separator="/"), tree
    )
    assert tree_util.tree_leaves(got) == jax.tree_util.tree_leaves(want)
    leaves = [leaf for _, leaf in tree_util.tree_leaves_with_path(tree)]
    assert leaves == jax.tree_util.tree_leaves(tree)
    assert tree_util.tree_flatten_with_path(tree)[0][0][0] == (
        tree_util.DictKey("k"), tree_util.GetAttrKey("x"),
    )  # fmt: skip


def test_register_dataclass_static_fields_and_jit():
    p = Params(np.float32(1.0), np.float32(2.0), name="q")
    leaves, treedef = tree_util.tree_flatten(p)
    assert leaves == [1.0, 2.0]
    assert tree_util.tree_unflatten(treedef, [3.0, 4.0]) == Params(3.0, 4.0, name="q")
    out = ri.jit(lambda p: Params(p.w * 2, p.b if p.name == "q" else -p.b, p.name))(p)
    assert (float(out.w), float(out.b), out.name) == (2.0, 2.0, "q")
    with pytest.raises(ValueError, match="Missing fields"):
        tree_util.register_dataclass(Params, data_fields=["w"], meta_fields=[])


def test_partial_and_treedef_helpers():
    part = tree_util.Partial(lambda a, b: a + b, np.float32(1))
    assert float(ri.jit(lambda f: f(np.float32(2)))(part)) == 3.0
    td = tree_util.treedef_tuple([tree_util.tree_structure([1, 2]), tree_util.tree_structure(3)])
    assert td == tree_util.tree_structure(([1, 2], 3))
    assert tree_util.all_leaves([1, 2.0]) and not tree_util.all_leaves([[1]])
    assert tree_util.tree_reduce_associative(lambda a, b: a + b, [1, 2, 3, 4]) == 10


# --- custom derivatives under eager differentiation ----------------------------------------


def test_custom_rules_see_concrete_values_under_eager_differentiation():
    @ri.custom_jvp
    def f(x):
        return rnp.sin(x) if x > 0 else x  # Python branching on the value

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), (rnp.cos(x) if x > 0 else 1.0) * t

    @ri.custom_vjp
    def g(x):
        return x * 2.0 if x > 0 else x

    g.defvjp(lambda x: (g(x), x), lambda x, ct: (3.0 * ct,))

    np.testing.assert_allclose(float(ri.grad(f)(1.0)), np.cos(1.0), rtol=1e-6)
    assert float(ri.grad(f)(-1.0)) == 1.0
    out, tangent = ri.jvp(f, (2.0,), (1.0,))
    np.testing.assert_allclose([float(out), float(tangent)], [np.sin(2.0), np.cos(2.0)], 1e-6)
    assert float(ri.grad(g)(1.0)) == 3.0
    value, grad = ri.value_and_grad(g)(-1.0)
    assert (float(value), float(grad)) == (-1.0, 3.0)
    assert float(ri.grad(ri.grad(f))(1.0)) == pytest.approx(-np.sin(1.0), rel=1e-5)
    with pytest.raises(TypeError, match="forward-mode"):
        ri.jvp(g, (1.0,), (1.0,))
    # under jit the value is abstract, as in JAX
    with pytest.raises(ri.ConcretizationTypeError):
        ri.jit(ri.grad(f))(1.0)


# --- ad_checkpoint.print_saved_residuals ---------------------------------------------------


def test_print_saved_residuals(capsys):
    from refimpl import ad_checkpoint

    def f(W, x):  # noqa: N803
        y = ad_checkpoint.checkpoint_name(rnp.sin(rnp.dot(W, x)), "h")
        return rnp.sum(rnp.tanh(y) * x)

    W, x = np.ones((3, 3), np.float32), np.ones(3, np.float32)  # noqa: N806
    ad_checkpoint.print_saved_residuals(f, W, x)
    policy = ri.checkpoint_policies.save_only_these_names("h")
    ad_checkpoint.print_saved_residuals(ri.checkpoint(f, policy=policy), W, x)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["f32[3,3] from the argument W", "f32[3] from the argument x",
                         "f32[3] output of cos"]  # fmt: skip
    assert lines[-3:] == ["f32[3,3] from the argument W", "f32[3] from the argument x",
                          "f32[3] named 'h'"]  # fmt: skip


# --- what as_jax maps ----------------------------------------------------------------------


PROGRAM = """
import jax, jax.numpy as jnp
import jax.flatten_util, jax.test_util, jax.sharding, jax.core, jax.dtypes
from jax.example_libraries import stax, optimizers
from jax.experimental import checkify
from jax.ad_checkpoint import checkpoint_name, print_saved_residuals
jax.config.update("jax_num_cpu_devices", 2)
jax.config.update("jax_debug_nans", False)
jax.test_util.check_grads(lambda x: jnp.sin(x) * x, (1.5,), order=2, modes=["fwd", "rev"])
flat, _ = jax.flatten_util.ravel_pytree({"a": jnp.ones(2)})
f = jax.jit(lambda x: x + 1, inline=True, static_argnums=None, backend="cpu")
assert jax.default_backend() == "cpu" and jax.device_count("cpu") == jax.device_count()
assert jax.jit(lambda x: x * 2, device=jax.devices()[0])(2) == 4
try:
    jax.devices("gpu")
except RuntimeError as e:
    assert "Unknown backend" in str(e)
print(jax.__version__, jax.device_count(), isinstance(jnp.ones(2).sharding, jax.sharding.Sharding),
      jax.dtypes.result_type(1.0), jnp.arange(10)[11], int(flat.sum()), int(f(1)),
      isinstance(jax.core.Tracer, type), jax.config.jax_debug_nans)
"""


@pytest.mark.parametrize("impl", ["ref", "pjrt"])
def test_as_jax_maps_the_ecosystem_modules(impl, tmp_path):
    if impl == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    run = subprocess.run(
        [sys.executable, "-m", "refimpl.as_jax", "--backend", impl, str(script)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    devices = "2" if impl == "ref" else str(len(ri.devices("pjrt")))  # PJRT CPU: its own count
    want = f"0.10.2 {devices} True float32 9 2 2 True False"
    assert run.stdout.split("\n")[-2] == want


def test_as_jax_runs_a_module_with_its_arguments(tmp_path):
    (tmp_path / "mod_under_test.py").write_text(
        "import sys, jax\nprint(jax.__name__, jax.numpy.zeros(1).__class__.__module__, "
        "sys.argv[1:])\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "refimpl.as_jax", "-m", "mod_under_test", "-q", "x"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split()[:2] == ["jax", "refimpl.backends.ref.arrays"]
    assert run.stdout.strip().endswith("['-q', 'x']")


# --- details optax's tests meet ------------------------------------------------------------


def test_complex_max_min_order_as_xla(backend):
    x = np.array([1 + 2j, 1 + 3j, 2, np.nan + 1j, 1 + np.nan * 1j, -1 - 1j], np.complex64)
    y = np.array([1 + 1j, 1 + 3j, 1 + 5j, 0, 1, -1 + 1j], np.complex64)
    for ours, theirs in ((ri.lax.max, jax.lax.max), (ri.lax.min, jax.lax.min)):
        np.testing.assert_array_equal(np.asarray(ri.jit(ours)(x, y)), np.asarray(theirs(x, y)))
    with pytest.raises(ValueError, match="cannot be clipped"):
        rnp.clip(x, 0, 1)


def test_cond_operand_keyword_round_and_out_sharding():
    assert float(ri.lax.cond(True, lambda v: v + 1, lambda v: v - 1, operand=1.0)) == 2.0
    assert float(ri.lax.switch(1, [lambda v: v, lambda v: v * 3], operand=2.0)) == 6.0
    with pytest.raises(TypeError, match="no positional operands"):
        ri.lax.cond(True, lambda v: v, lambda v: v, 1.0, operand=2.0)
    assert float(round(rnp.asarray(2.567), 2)) == pytest.approx(2.57)
    a = rnp.ones((2, 3))
    s = ri.typeof(a).sharding
    assert s.mesh.empty and not s.mesh.are_all_axes_explicit and tuple(s.spec) == (None, None)
    assert float(rnp.tensordot(a, a, 2, out_sharding=None)) == 6.0
    assert rnp.zeros(3, out_sharding=sharding.PartitionSpec()).shape == (3,)
    ri.config.update("ref_num_devices", 2)
    mesh = sharding.Mesh(np.array(ri.devices("ref")[:2]), ("d",))
    with pytest.raises(NotImplementedError, match="several devices"):
        rnp.zeros(4, out_sharding=sharding.NamedSharding(mesh, sharding.PartitionSpec("d")))
