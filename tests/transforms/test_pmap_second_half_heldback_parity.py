"""The held-back run of JAX's tests/pmap_test.py, second half (PythonPmapTest
from testArrayBlockUntilReady to the end, the Cpp/VmapOfPmap/collectives/
WithDevices/Array classes and their eager variants; lane PMAPB of issue 29):
the programs that differed on refimpl, run on JAX 0.10.2 and on refimpl (ref
and pjrt) and compared.

The eager variants (PythonPmapEagerTest and the others) run every test under
``disable_jit``; there an eager operation on a sharded array (a pmap's output)
must keep running as JAX's, a jit over the array's mesh that the flag does not
reach: it hung on pjrt (the one-primitive jit ran its function op by op and
dispatched to itself again) and came out on one device on ref.

Each case is the source of a function ``case(jax, jnp, np, P)`` returning
JSON-able facts (``summary``: arrays as dtype, weak type, shape and values; an
exception as its class name). JAX answers every case once, in a fresh
interpreter with 4 host devices; refimpl runs the same source with ``import
jax`` aliased to it, over 4 devices on both backends.
"""

from __future__ import annotations

import pytest

from tests.helpers.case_summary import jax_facts, refimpl_facts

# name -> source of ``case(jax, jnp, np, P)``
CASES = {
    # test_array_with_pmap_sharding_copy, testNoCopyIndexing1D and
    # test_jnp_stack under EagerPmapMixin: eager operations on a pmap's
    # output keep its mesh (a NamedSharding over the 4 devices; a reduction
    # replicated), as without disable_jit
    "disable_jit_eager_ops_on_pmap_output": """
def case(jax, jnp, np, P):
    with jax.disable_jit():
        x = jax.pmap(lambda v: v)(np.arange(8, dtype=np.float32).reshape(4, 2))
        outs = [jax.lax.neg(x), jnp.copy(x), x[1], x + 1, jnp.square(x), x.sum()]
        return [[o, type(o.sharding).__name__, len(o.devices()),
                 sorted(d.id for d in o.devices())] for o in outs]
""",
    # the same for an array put with a NamedSharding (the same eager path)
    "disable_jit_eager_ops_on_named_sharding": """
def case(jax, jnp, np, P):
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("i",))
    y = jax.device_put(np.arange(8, dtype=np.float32), jax.sharding.NamedSharding(mesh, P("i")))
    with jax.disable_jit():
        outs = [y * 2, jnp.floor(y / 3), y.sum()]
        return [[o, type(o.sharding).__name__, str(o.sharding.spec)] for o in outs]
""",
    # test_array_with_pmap_sharding_copy's second half: a pmap with
    # in_axes=1/out_axes=1, then jnp.copy (on pjrt: a hang, then RecursionError)
    "disable_jit_copy_of_non_leading_pmap_output": """
def case(jax, jnp, np, P):
    with jax.disable_jit():
        out = jax.pmap(lambda v: v, in_axes=1, out_axes=1)(np.arange(4).reshape(1, 4))
        c = jnp.copy(out)
        return [out, c, type(c.sharding).__name__, c.sharding == out.sharding,
                [str(s.index) for s in c.addressable_shards]]
""",
    # test_amap / test_device_put_sharded_transfer_guard, adapted (JAX 0.10.2
    # has no device_put_sharded): stacking rows committed to different devices
    # is a ValueError, under disable_jit too (pjrt: RecursionError)
    "disable_jit_stack_of_rows_on_different_devices": """
def case(jax, jnp, np, P):
    rows = [jax.device_put(np.float32(i), d) for i, d in enumerate(jax.devices())]
    with jax.disable_jit():
        try:
            jnp.stack(rows)
        except ValueError:
            return "ValueError"
        return "ran"
""",
    # PythonPmapEagerTest's test_custom_jvp and test_custom_vjp: custom rules
    # under an eager pmap equal vmap's
    "disable_jit_pmap_custom_rules": """
def case(jax, jnp, np, P):
    @jax.custom_vjp
    def foo(x):
        return jnp.exp(x)
    foo.defvjp(lambda x: (foo(x), x), lambda _, g: (g * 5.0,))

    @jax.custom_jvp
    def bar(x):
        return jnp.exp(x)

    @bar.defjvp
    def bar_jvp(xs, ts):
        return bar(xs[0]), ts[0] * 4.0

    x = jnp.arange(4, dtype=jnp.float32)
    jv = lambda a, t: jax.jvp(bar, (a,), (t,))
    with jax.disable_jit():
        return [jax.pmap(jax.grad(foo))(x), jax.pmap(jv)(x, x)[1]]
""",
    # testNestedPmapsError: an inner pmap naming its own devices is a
    # ValueError (JAX 0.10.2 raises one for any nested pmap; refimpl runs the
    # others, docs/semantics.md), eager and under jit, as JAX's
    "nested_pmap_with_explicit_devices": """
def case(jax, jnp, np, P):
    def foo(x):
        return jax.pmap(lambda y: jax.lax.psum(y, "j"), axis_name="j", devices=jax.devices())(x)
    out = []
    for eager in (False, True):
        with jax.disable_jit(eager):
            try:
                jax.pmap(foo, axis_name="i")(jnp.ones((4, 1)))
                out.append("ran")
            except ValueError:
                out.append("ValueError")
    return out
""",
}


def _jax_results() -> dict:
    return jax_facts(CASES)


@pytest.fixture(scope="module")
def jax_results() -> dict:
    return _jax_results()


def _refimpl_result(name: str) -> object:
    return refimpl_facts(CASES[name])


@pytest.mark.usefixtures("four_ref_devices")
@pytest.mark.parametrize("name", list(CASES))
def test_pmap_second_half_as_jax(jax_results, backend, name):
    assert _refimpl_result(name) == jax_results[name]
