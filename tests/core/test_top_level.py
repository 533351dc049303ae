"""refimpl's top-level utilities against JAX 0.10.2 (refimpl.device_queries, contexts,
caches, introspection, gradient_utils, callbacks)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def test_device_get_structure_and_values(backend):
    tree = {"a": rnp.arange(3.0), "b": (rnp.ones((2, 2), "int32"), 1.5, None), "c": "s"}
    jtree = {"a": jnp.arange(3.0), "b": (jnp.ones((2, 2), "int32"), 1.5, None), "c": "s"}
    got, want = ri.device_get(tree), jax.device_get(jtree)
    assert ri.tree_structure(got) == ri.tree_structure(want)
    for g, w in zip(ri.tree_leaves(got), jax.tree.leaves(want), strict=True):
        assert type(g) is type(w)
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
        else:
            assert g == w


def test_device_get_of_tracer_is_an_error():
    with pytest.raises(ri.ConcretizationTypeError, match="device_get"):
        ri.jit(lambda x: ri.device_get(x), backend="ref")(1.0)


def test_block_until_ready_returns_its_argument(backend):
    x = ri.jit(lambda a: (a * 2, [a]))(np.ones(3, np.float32))
    assert ri.block_until_ready(x) is x
    tree = (np.ones(2), 3, None)
    assert ri.block_until_ready(tree) is tree
    assert jax.block_until_ready(tree) is tree


def test_device_counts():
    assert ri.process_index() == jax.process_index() == 0
    assert ri.process_count() == jax.process_count() == 1
    for name in ("ref", "pjrt"):
        assert ri.device_count(name) == len(ri.devices(name))
        assert ri.local_device_count(name) == ri.device_count(name)
        assert ri.local_devices(backend=name) == ri.devices(name)
    # (refimpl's PJRT client may be made with more virtual CPU devices than JAX's)
    assert ri.device_count("pjrt") >= jax.device_count("cpu")
    assert ri.device_count() == len(ri.devices())


def test_device_errors():
    with pytest.raises(ValueError, match="device_count: unknown backend 'tpu'"):
        ri.device_count("tpu")
    with pytest.raises(ValueError, match="local_devices: process_index 1"):
        ri.local_devices(1)


def test_cpu_names_the_host_backend_in_every_device_query(backend):
    # JAX's "cpu" is the host platform, on which both refimpl backends run:
    # the default backend's devices, as jax.devices("cpu") is jax.devices()
    # on a host without accelerators
    assert jax.devices("cpu") == jax.devices()
    assert jax.local_devices(backend="cpu") == jax.devices()
    assert jax.device_count("cpu") == jax.device_count()
    assert ri.devices("cpu") == ri.devices() == ri.devices(ri.default_backend())
    assert ri.local_devices(backend="cpu") == ri.devices()
    assert ri.device_count("cpu") == ri.device_count() == ri.local_device_count("cpu")
    assert ri.process_index("cpu") == jax.process_index("cpu") == 0
    assert ri.process_count("cpu") == jax.process_count("cpu") == 1


def test_default_device_switches_backend():
    saved = ri.config.backend
    with ri.default_device(ri.devices("pjrt")[0]):
        assert ri.config.backend == "pjrt"
        assert ri.default_backend() == "pjrt"
    with ri.default_device(ri.devices("ref")[0]):
        assert ri.config.backend == "ref"
    assert ri.config.backend == saved
    with (
        pytest.raises(TypeError, match="default_device: expected a device"),
        ri.default_device(3),
    ):
        pass
    with ri.default_device("pjrt"):  # a platform name, as JAX 0.10.2 takes one
        assert ri.config.backend == "pjrt"
    assert ri.config.backend == saved


def test_make_jaxpr_static_and_return_shape():
    def f(x, n):
        return rnp.sin(x) * n, {"k": x.sum()}

    def jf(x, n):
        return jnp.sin(x) * n, {"k": x.sum()}

    x = np.ones((2, 3), np.float32)
    program, shapes = ri.make_jaxpr(f, static_argnums=1, return_shape=True)(x, 3)
    jprogram, jshapes = jax.make_jaxpr(jf, static_argnums=1, return_shape=True)(x, 3)
    assert isinstance(program, ri.Program)
    assert ri.tree_structure(shapes) == ri.tree_structure(jshapes)
    for s, js in zip(ri.tree_leaves(shapes), jax.tree.leaves(jshapes), strict=True):
        assert (s.shape, s.dtype) == (js.shape, js.dtype)
    assert len(program.in_vars) == len(jprogram.jaxpr.invars) == 1
    assert "sin" in str(program)


def test_typeof_matches_jax():
    for rv, jv in [(1.0, 1.0), (np.ones(3, np.int32), np.ones(3, np.int32))]:
        got, want = ri.typeof(rv), jax.typeof(jv)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.weak_type == want.weak_type
    seen = []
    ri.jit(lambda x: seen.append(ri.typeof(x)) or x, backend="ref")(np.ones(2, np.float32))
    assert seen[0].shape == (2,)
    with pytest.raises(TypeError, match="typeof"):
        ri.typeof("text")


def test_float0_and_enable_x64():
    assert ri.float0 == jax.dtypes.float0
    assert not ri.config.enable_x64
    with ri.enable_x64(True):
        assert rnp.arange(3.0).dtype == np.float64
    assert rnp.arange(3.0).dtype == np.float32


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_disable_jit_runs_python_each_call(jit_backend):
    calls = []

    def f(x):
        calls.append(type(x).__name__)
        return x * 2

    g = ri.jit(f, backend=jit_backend)
    x = ri.device_put(np.ones(3, np.float32), ri.devices(jit_backend)[0])
    g(x)
    g(x)
    assert len(calls) == 1  # traced once
    with ri.disable_jit():
        np.testing.assert_array_equal(g(x), 2 * np.ones(3))
        g(x)
    assert len(calls) == 3 and "Tracer" not in calls[1] + calls[2]
    np.testing.assert_array_equal(g(x), 2 * np.ones(3))


def test_clear_caches_retraces(backend):
    calls = []

    @ri.jit
    def f(x):
        calls.append(1)
        return x + 1

    f(np.ones(2, np.float32))
    f(np.ones(2, np.float32))
    assert len(calls) == 1
    ri.clear_caches()
    np.testing.assert_array_equal(f(np.ones(2, np.float32)), [2, 2])
    assert len(calls) == 2


def test_clear_caches_forgets_pjrt_eager_programs_as_jax_forgets_its_primitive_callables():
    from refimpl import test_events

    ri.config.update("backend", "pjrt")
    x = ri.device_put(np.ones(3, np.float32))
    with test_events.count(test_events.PJRT_EAGER_PRIMITIVE) as made:
        ri.lax.sin_p.bind(x)  # (a primitive bound eagerly: pjrt's eager dispatch)
        ri.lax.sin_p.bind(x)  # kept: the same (primitive, params)
        assert made() <= 1
        before = made()
        ri.clear_caches()
        out = ri.lax.sin_p.bind(x)
        np.testing.assert_allclose(out, np.sin(np.ones(3, np.float32)), rtol=1e-6)
        assert made() == before + 1  # made again after clear_caches


def test_ensure_compile_time_eval_is_concrete(backend):
    seen = []

    @ri.jit
    def f(x):
        with ri.ensure_compile_time_eval():
            y = rnp.arange(3.0) * 2
            seen.append(float(y.sum()))  # concrete: no ConcretizationTypeError
        return x + y

    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [1, 3, 5])
    assert seen == [6.0]


def test_named_scope_and_named_call():
    with ri.named_scope("layer"):
        y = rnp.sin(1.0)
    assert float(y) == pytest.approx(np.sin(1.0))
    f = ri.named_call(lambda x: x * 3, name="triple")
    assert float(f(2.0)) == 6.0
    with pytest.raises(TypeError, match="named_scope: name must be a str"), ri.named_scope(3):
        pass
    # refused when called, before any block is entered, as JAX's
    with pytest.raises(TypeError):
        jax.named_scope(3)
    with pytest.raises(TypeError, match="named_scope: name must be a str"):
        ri.named_scope(3)


def test_jacobian_is_jacrev():
    def f(x):
        return rnp.stack([x[0] * x[1], rnp.sin(x[1])])

    def jf(x):
        return jnp.stack([x[0] * x[1], jnp.sin(x[1])])

    x = np.array([1.5, -0.5], np.float32)
    np.testing.assert_allclose(ri.jacobian(f)(x), jax.jacobian(jf)(x), rtol=1e-6)


def _gradient_pair(np_mod, custom_gradient):
    @custom_gradient
    def clip_grad(x, y):
        def vjp(g):
            return (np_mod.clip(g * y, -1.0, 1.0), g * 10.0)

        return x * y, vjp

    return clip_grad


def test_custom_gradient_against_jax(backend):
    f = _gradient_pair(rnp, ri.custom_gradient)
    jf = _gradient_pair(jnp, jax.custom_gradient)
    x, y = np.float32(3.0), np.float32(0.5)
    assert float(f(x, y)) == float(jf(x, y))
    for argnums in (0, 1, (0, 1)):
        got = ri.grad(lambda a, b: f(a, b) * 4.0, argnums)(x, y)
        want = jax.grad(lambda a, b: jf(a, b) * 4.0, argnums)(x, y)
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)
    got = ri.jit(ri.grad(lambda a, b: f(a, b) * 4.0))(x, y)
    assert float(got) == float(jax.grad(lambda a, b: jf(a, b) * 4.0)(x, y))


def test_custom_gradient_single_argument():
    @ri.custom_gradient
    def f(x):
        return rnp.sin(x), lambda g: g * 100.0

    @jax.custom_gradient
    def jf(x):
        return jnp.sin(x), lambda g: g * 100.0

    assert float(ri.grad(f)(1.0)) == float(jax.grad(jf)(1.0)) == 100.0


def test_custom_gradient_errors():
    bad = ri.custom_gradient(lambda x: x * 2)
    with pytest.raises(TypeError, match="custom_gradient.*pair"):
        bad(1.0)
    wrong = ri.custom_gradient(lambda x, y: (x * y, lambda g: (g,)))
    with pytest.raises(TypeError, match="2 cotangent"):
        ri.grad(wrong)(1.0, 2.0)


def test_closure_convert_hoists_outer_tracers():
    def outer(w, x):
        def inner(v):
            return rnp.sin(v) * w

        converted, consts = ri.closure_convert(inner, x)
        assert len(consts) == 1
        return converted(x, *consts)

    def jouter(w, x):
        def inner(v):
            return jnp.sin(v) * w

        converted, consts = jax.closure_convert(inner, x)
        return converted(x, *consts)

    w, x = np.float32(2.0), np.float32(0.3)
    np.testing.assert_allclose(ri.grad(outer)(w, x), jax.grad(jouter)(w, x), rtol=1e-6)
    converted, consts = ri.closure_convert(lambda v: v * 3.0, x)
    assert consts == [] and float(converted(x)) == pytest.approx(0.9)


def test_disable_jit_through_config_update():
    g = ri.jit(lambda x: x + 1, backend="pjrt")
    x = ri.device_put(np.ones(2, np.float32), ri.devices("pjrt")[0])
    g(x)
    assert g._fast_cache_size() == 1
    ri.config.update("disable_jit", True)
    try:
        assert g._fast_cache_size() == 0  # a hit would skip the flag
        np.testing.assert_array_equal(g(x), [2, 2])
        assert g.trace_count == 1
    finally:
        ri.config.update("disable_jit", False)


def _host_sin(a):
    return np.sin(a).astype(np.float64)  # a different dtype: cast to the declared one


def _pc(mod, np_mod, **kw):
    def f(x):
        spec = mod.ShapeDtypeStruct(x.shape, x.dtype)
        return mod.pure_callback(_host_sin, spec, x, **kw) * 2

    return f


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_pure_callback_against_jax(mode):
    x = np.array([0.5, 1.0, -2.0], np.float32)
    rf, jf = _pc(ri, rnp), _pc(jax, jnp)
    if mode == "jit":
        rf, jf = ri.jit(rf, backend="ref"), jax.jit(jf)
    got, want = rf(x), jf(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_vmap_methods(method):
    seen, jseen = [], []

    def make(mod, log):
        def host(a, b):
            log.append(a.shape)
            return (a * b).astype(np.float32)

        def f(x, y):
            spec = mod.ShapeDtypeStruct(np.broadcast_shapes(x.shape, y.shape), np.float32)
            return mod.pure_callback(host, spec, x, y, vmap_method=method)

        return f

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.float32(3.0) * np.ones(3, np.float32)
    got = ri.vmap(make(ri, seen), in_axes=(0, None))(x, y)
    want = jax.vmap(make(jax, jseen), in_axes=(0, None))(x, y)
    np.testing.assert_array_equal(got, want)
    assert seen == jseen  # the operand shapes the callback saw


def test_pure_callback_errors():
    spec = ri.ShapeDtypeStruct((3,), np.float32)
    f = _pc(ri, rnp)
    with pytest.raises(NotImplementedError, match="vmap_method=None"):
        ri.vmap(f)(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        ri.grad(lambda x: f(x).sum())(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"pure_callback: result 0 .* shape \(2,\)"):
        ri.pure_callback(lambda a: a[:2], spec, np.ones(3, np.float32))
    short = ri.jit(lambda x: ri.pure_callback(lambda a: a[:2], spec, x), backend="pjrt")
    with pytest.raises(RuntimeError, match=r"pure_callback: .*result 0 .* shape \(2,\)"):
        short(np.ones(3, np.float32))  # a host callback in the compiled program
    with pytest.raises(TypeError, match="result_shape_dtypes must be"):
        ri.pure_callback(np.sin, 3, np.ones(3))
    ri.effects_barrier()


TOP_LEVEL_SCRIPT = """
import numpy as np
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def scale(x: ArrayLike, n: int) -> jax.Array:
    return jnp.asarray(x) * n


@jax.custom_gradient
def clipped(x):
    return jnp.sin(x), lambda g: (jnp.clip(g, -0.5, 0.5),)


try:
    jax.jit(lambda x: bool(x > 0))(1.0)
    caught = "no"
except jax.errors.TracerBoolConversionError:
    caught = "yes"
with jax.disable_jit():
    eager = jax.jit(lambda x: scale(x, 2))(np.float32(1.5))
shapes = jax.make_jaxpr(scale, static_argnums=1, return_shape=True)(np.ones(3, np.float32), 2)[1]
result = {
    "jac": jax.device_get(jax.jacobian(lambda v: v * v.sum())(np.arange(3.0, dtype=np.float32))),
    "clip": float(jax.grad(lambda x: clipped(x) * 4.0)(np.float32(1.0))),
    "caught": caught,
    "eager": float(eager),
    "shape": (shapes.shape, str(shapes.dtype)),
    "counts": (jax.process_index(), jax.process_count(), jax.local_device_count() >= 1),
    "typeof": str(jax.typeof(np.ones((2, 2), np.int32)).dtype),
}
"""


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_top_level_script_under_as_jax(tmp_path, jit_backend):
    import runpy

    from refimpl import as_jax

    path = tmp_path / "top_level_script.py"
    path.write_text(TOP_LEVEL_SCRIPT)
    want = runpy.run_path(str(path))["result"]
    got = as_jax.run(str(path), backend=jit_backend)["result"]
    assert sorted(got) == sorted(want)
    np.testing.assert_allclose(got.pop("jac"), want.pop("jac"), rtol=1e-6)
    assert got == want and got["caught"] == "yes"


def test_custom_gradient_runs_forward_once_and_uses_its_intermediates(capsys, backend):
    def make(api, np_mod):
        @api.custom_gradient
        def f(x):
            api.debug.print("fwd {}", x)
            y = np_mod.exp(x)
            return y, lambda g: (g * y * 3.0,)  # closes over a forward intermediate

        return f

    x = np.array([0.5, -1.0], np.float32)
    loss = lambda api, np_mod: lambda v: make(api, np_mod)(v).sum()  # noqa: E731
    capsys.readouterr()
    want = jax.jit(jax.grad(loss(jax, jnp)))(x)
    jax.effects_barrier()
    want_out = capsys.readouterr().out
    got = ri.jit(ri.grad(loss(ri, rnp)))(x)
    assert capsys.readouterr().out == want_out and want_out.count("fwd") == 1
    np.testing.assert_allclose(got, want, rtol=1e-6)
    batched = ri.vmap(ri.grad(loss(ri, rnp)))(np.stack([x, 2 * x]))
    jbatched = jax.vmap(jax.grad(loss(jax, jnp)))(np.stack([x, 2 * x]))
    np.testing.assert_allclose(batched, jbatched, rtol=1e-6)
