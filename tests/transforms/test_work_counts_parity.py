"""How often refimpl traces and compiles, against JAX 0.10.2's own counts.

JAX's harness counts its work (``jax._src.test_util.count_jit_tracing_cache_miss``,
``count_jit_and_pmap_lowerings``); refimpl records the same events where its
own work happens (``refimpl.test_events``) and ``refimpl.test_util`` reads
them. Each case runs one scenario of JAX's ``api_test.py`` on both: JAX's
count is asked of a fresh JAX process (its caches hold nothing of this
process's tests), refimpl's is measured here.
"""

from __future__ import annotations

import functools
import pickle
import textwrap

import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import test_util as rtu
from refimpl.backends.pjrt import runtime as pjrt_runtime
from tests.helpers.jax_oracle import in_fresh_jax


def jax_counts(body: str) -> object:
    """``result`` of ``body`` run in a fresh JAX (``jax``, ``jnp``, ``np``, ``jtu`` imported)."""
    prelude = (
        "import jax, numpy as np\nimport jax.numpy as jnp\nfrom jax._src import test_util as jtu\n"
    )
    return in_fresh_jax(prelude + textwrap.dedent(body))


@pytest.fixture(scope="module")
def jax_answers() -> dict:
    """Every scenario's counts from one fresh JAX process."""
    return jax_counts(
        """
        result = {}

        def f(x):
            return x

        inp = np.arange(8)
        with jtu.count_jit_tracing_cache_miss() as count:
            jax.eval_shape(f, inp)
            jax.jit(f)(inp)
        result["eval_shape_then_jit"] = count()

        def g(x):
            return jnp.array(x)

        with jtu.count_jit_tracing_cache_miss() as count:
            jax.eval_shape(g, 1)
            out = jax.eval_shape(g, 1)
        result["eval_shape_twice"] = [count(), out.weak_type]

        jax.grad(jax.jit(lambda x: x))(1.0)

        @jax.jit
        def s(x):
            return jnp.sin(x)

        with jtu.count_jit_and_pmap_lowerings() as count:
            jax.grad(s)(3.0)
        first = count()
        with jtu.count_jit_and_pmap_lowerings() as count:
            jax.grad(s)(3.0)
            jax.grad(s)(4.0)
        result["grad_of_jit"] = [first, count()]

        jf = jax.jit(lambda x: jnp.square(x).mean())
        x = jnp.asarray(np.linspace(0.0, 1.0, 32, dtype=np.float32).reshape(8, 4))
        for _ in range(3):
            jax.hessian(jf)(x).block_until_ready()
        with jtu.count_jit_and_pmap_lowerings() as count:
            for _ in range(3):
                jax.hessian(jf)(x).block_until_ready()
        result["hessian_after_warmup"] = count()

        with jtu.count_jit_and_pmap_lowerings() as count:
            for _ in range(3):
                jax.vmap(jf)(x).block_until_ready()
        first = count()
        with jtu.count_jit_and_pmap_lowerings() as count:
            for _ in range(3):
                jax.vmap(jf)(x).block_until_ready()
        result["vmap_of_jit"] = [first > 0, count()]

        def inc(v):
            return v + 1

        def add2(v):
            return v + 2

        x0 = jax.device_put(np.float32(1.0))
        for _ in range(2):
            with jtu.count_jit_and_pmap_lowerings() as count:
                for i in range(6):
                    jax.lax.cond(i % 2, inc, add2, x0)
                    jax.lax.switch(i % 3, [inc, add2, inc], x0)
        result["cond_warm"] = count()
        with jtu.count_jit_and_pmap_lowerings() as count:
            for i in range(10):
                jax.lax.cond(i, inc, add2, i)
        result["cond_python_ints"] = count()

        puts = {}
        with jtu.count_device_put() as count:
            jax.make_jaxpr(lambda: jnp.array(3))()
        puts["make_jaxpr_of_jnp_array"] = count()
        with jtu.count_device_put() as count:
            on_device = jax.device_put(np.ones(3, np.float32))
        puts["device_put_of_host_array"] = count()
        double = jax.jit(lambda a: a * 2)
        double(on_device)
        with jtu.count_device_put() as count:
            double(on_device)
            double(on_device)
        puts["jit_of_device_arrays"] = count()
        with jtu.count_device_put() as count:
            double(np.full(3, 5.0, np.float32))
        puts["jit_of_a_host_array"] = count()
        result["device_puts"] = puts

        with jtu.count_primitive_compiles() as count:
            jax.lax.add(1, 2)
            jax.lax.add(2, 3)
            jax.lax.mul(2.0, 3.0)
        result["primitive_compiles"] = count()

        p = jax.pmap(lambda v: v * 2)
        with jtu.count_jit_and_pmap_lowerings() as count:
            for _ in range(2):
                p(np.ones((1, 3), np.float32)).block_until_ready()
        result["pmap_twice"] = count()

        from functools import partial

        def my_function(x, y):
            return x

        named = partial(my_function)
        named.__name__ = "my_partial"
        states = [
            jax.jit(fun, static_argnums=1).__getstate__()
            for fun in (my_function, partial(partial(my_function)), named, lambda x, y: x)
        ]
        result["getstate"] = [
            [s["function_name"], s["static_argnums"], s["static_argnames"]] for s in states
        ]
        """
    )


def test_eval_shape_shares_jits_trace(backend, jax_answers):
    """api_test's test_eval_shape_trace_cache_share: eval_shape(f) then jit(f)
    on the same argument types trace f once."""

    def f(x):
        return x

    inp = np.arange(8)
    with rtu.count_jit_tracing_cache_miss() as count:
        ri.eval_shape(f, inp)
        ri.jit(f)(inp)
    assert count() == jax_answers["eval_shape_then_jit"] == 1


def test_eval_shape_twice_traces_once(backend, jax_answers):
    """api_test's test_eval_shape_weak_type: a second eval_shape of the same
    function and types is a cache hit, and a Python int stays weak."""

    def g(x):
        return rnp.array(x)

    with rtu.count_jit_tracing_cache_miss() as count:
        ri.eval_shape(g, 1)
        out = ri.eval_shape(g, 1)
    assert [count(), out.weak_type] == jax_answers["eval_shape_twice"]


@pytest.fixture
def pjrt() -> None:
    """The pjrt backend (the only one that lowers programs) as jit's default."""
    try:
        pjrt_runtime.native_module()
    except ImportError as err:
        pytest.skip(f"native module unavailable: {err}")
    if not pjrt_runtime.plugin_available():
        pytest.skip("no PJRT plugin installed")
    ri.config.update("backend", "pjrt")


def test_grad_of_jit_lowers_fwd_and_bwd_once(pjrt, jax_answers):
    """api_test's test_grad_of_jit_compilation_caching2: grad of a jitted
    function lowers one forward and one backward program, then hits."""
    ri.grad(ri.jit(lambda x: x))(1.0)

    @ri.jit
    def s(x):
        return rnp.sin(x)

    with rtu.count_jit_and_pmap_lowerings() as count:
        ri.grad(s)(3.0)
    first = count()
    with rtu.count_jit_and_pmap_lowerings() as count:
        ri.grad(s)(3.0)
        ri.grad(s)(4.0)
    assert [first, count()] == jax_answers["grad_of_jit"] == [2, 0]


def test_pmap_lowers_once(pjrt, jax_answers):
    """A pmap called twice on the same types lowers its program once (the
    count covers pmap's lowering as well as jit's, as JAX's)."""
    p = ri.pmap(lambda v: v * 2)
    with rtu.count_jit_and_pmap_lowerings() as count:
        for _ in range(2):
            p(np.ones((1, 3), np.float32)).block_until_ready()
    assert count() == jax_answers["pmap_twice"] == 1


def _inc(v):
    return v + 1


def _add2(v):
    return v + 2


def test_warm_cond_lowers_nothing(pjrt, jax_answers):
    """An eager ``cond``/``switch`` of the same branch functions on the same
    types is one program, lowered once: refimpl rebuilt each branch program
    on every call (to take the captured values first, even with none), so
    every call was a new eager jit, traced and lowered again."""
    x0 = ri.device_put(np.float32(1.0))
    for _ in range(2):  # the second round is counted
        with rtu.count_jit_and_pmap_lowerings() as count:
            for i in range(6):
                ri.lax.cond(i % 2, _inc, _add2, x0)
                ri.lax.switch(i % 3, [_inc, _add2, _inc], x0)
    assert count() == jax_answers["cond_warm"] == 0


def test_cond_on_python_ints_compiles_a_few_programs(pjrt, jax_answers):
    """lax_control_flow_test's test_cond_excessive_compilation: ten conds on
    Python ints lower at most 4 programs (JAX: convert_element_type, the two
    branches, cond); refimpl lowered 11, one per call."""
    with rtu.count_jit_and_pmap_lowerings() as count:
        for i in range(10):
            ri.lax.cond(i, _inc, _add2, i)
    assert count() <= jax_answers["cond_python_ints"] < 5


def test_host_to_device_copies(pjrt, jax_answers):
    """``count_device_put`` (api_test's test_jnp_array_doesnt_device_put and
    its kin): tracing ``jnp.array(3)`` copies nothing to a device, a
    ``device_put`` of host data and a jit call on a host array one copy each,
    a jit call on device arrays none."""
    puts = {}
    with rtu.count_device_put() as count:
        ri.make_jaxpr(lambda: rnp.array(3))()
    puts["make_jaxpr_of_jnp_array"] = count()
    with rtu.count_device_put() as count:
        on_device = ri.device_put(np.ones(3, np.float32))
    puts["device_put_of_host_array"] = count()
    double = ri.jit(lambda a: a * 2)
    double(on_device)
    with rtu.count_device_put() as count:
        double(on_device)
        double(on_device)
    puts["jit_of_device_arrays"] = count()
    with rtu.count_device_put() as count:
        double(np.full(3, 5.0, np.float32))
    puts["jit_of_a_host_array"] = count()
    assert puts == jax_answers["device_puts"]


def test_eager_primitives_compile_once_per_params(pjrt, jax_answers):
    """api_test's test_primitive_compilation_cache: an eager primitive
    compiles once per (primitive, params), whatever its values (the count
    starts from an empty cache, as JAX's)."""
    with rtu.count_primitive_compiles() as count:
        ri.lax.add(1, 2)
        ri.lax.add(2, 3)
        ri.lax.mul(2.0, 3.0)
    assert count() == jax_answers["primitive_compiles"] == 2


def _matrix() -> object:
    return ri.device_put(np.linspace(0.0, 1.0, 32, dtype=np.float32).reshape(8, 4))


def test_hessian_of_jit_stops_lowering_after_warmup(pjrt, jax_answers):
    """api_test's test_vmap_caching: hessian (vmap over jvp over vjp) of a
    jitted function lowers nothing new once warm. refimpl re-batched the
    nested jit's program on every call, so each call traced and lowered
    three new programs."""
    jf = ri.jit(lambda x: rnp.square(x).mean())
    x = _matrix()
    for _ in range(3):
        ri.hessian(jf)(x).block_until_ready()
    with rtu.count_jit_and_pmap_lowerings() as count:
        for _ in range(3):
            ri.hessian(jf)(x).block_until_ready()
    assert count() == jax_answers["hessian_after_warmup"] == 0


def test_vmap_of_jit_lowers_once(pjrt, jax_answers):
    """vmap of a jitted function: its batched program is lowered on the
    first calls only."""
    jf = ri.jit(lambda x: rnp.square(x).mean())
    x = _matrix()
    with rtu.count_jit_and_pmap_lowerings() as count:
        for _ in range(3):
            ri.vmap(jf)(x).block_until_ready()
    first = count()
    with rtu.count_jit_and_pmap_lowerings() as count:
        for _ in range(3):
            ri.vmap(jf)(x).block_until_ready()
    assert [first > 0, count()] == jax_answers["vmap_of_jit"] == [True, 0]


def test_jitted_getstate_names_the_function(backend, jax_answers):
    """api_test's test_fun_name: ``jit(f).__getstate__()["function_name"]``
    is f's name (a partial's is its function's unless it has its own), and
    the state holds the static arguments as JAX's does."""

    def my_function(x, y):
        return x

    named = functools.partial(my_function)
    named.__name__ = "my_partial"  # type: ignore[attr-defined]
    funs = (my_function, functools.partial(functools.partial(my_function)), named, lambda x, y: x)
    states = [ri.jit(fun, static_argnums=1).__getstate__() for fun in funs]
    got = [[s["function_name"], s["static_argnums"], s["static_argnames"]] for s in states]
    assert got == jax_answers["getstate"]


def test_jitted_pickles_by_its_state():
    """A reference Jitted of a module-level function pickles by that state
    and works after unpickling (its caches are not carried)."""
    jitted = ri.jit(_double, backend="ref", keep_unused=True)
    copy = pickle.loads(pickle.dumps(jitted))
    assert copy.__getstate__() == jitted.__getstate__()
    assert copy.keep_unused
    np.testing.assert_array_equal(np.asarray(copy(np.float32(2.0))), np.float32(4.0))


def _double(x):
    return 2 * x
