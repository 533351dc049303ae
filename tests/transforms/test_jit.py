"""The jit signature cache (SPEC "Tracing and the signature cache").

Trace counts are compared with real JAX's ``_cache_size()`` where both have
the behaviour, so the expectation is not one we computed ourselves.
"""

from __future__ import annotations

import functools
import logging
import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from tests.helpers.jax_oracle import in_fresh_jax


def both(fun, **kwargs):
    """The same function jitted by refimpl and by JAX."""
    return ri.jit(fun, **kwargs), jax.jit(fun, **kwargs)


def call_sequence(calls, fun, **kwargs):
    """Run the same argument sequence through both; return (ours, jax) cache sizes."""
    ours, theirs = both(fun, **kwargs)
    for args, kw in calls:
        ours(*args, **kw)
        theirs(*args, **kw)
    return ours._cache_size(), theirs._cache_size()


# The same call sequences in a fresh JAX (tests/helpers/jax_oracle.in_fresh_jax:
# JAX's C++ cache is process-wide state that earlier tests can disturb).
_FRESH_JAX_SIZES = """
import jax, numpy as np
f32 = np.float32
sequences = {
    "weak-vs-strong": [(1.0,), (f32(1.0),)],
    "int-vs-float": [(1,), (1.0,)],
    "shape": [(np.ones(3, f32),), (np.ones(4, f32),)],
    "dtype": [(np.ones(3, f32),), (np.ones(3, np.int32),)],
    "values": [(np.ones(3, f32),), (np.zeros(3, f32),)],
    "f64-canonical": [(np.ones(3),), (np.ones(3, f32),)],
}
result = {}
for name, calls in sequences.items():
    f = jax.jit(lambda x: x * 2)
    for args in calls:
        f(*args)
    result[name] = f._cache_size()
g = jax.jit(lambda t: sum(jax.tree_util.tree_leaves(t)))
two = np.ones(2, f32)
for tree in [(two, two), [two, two], {"a": two, "b": two}, {"b": two, "a": two}]:
    g(tree)
result["tree-structure"] = g._cache_size()
"""


@functools.cache
def _fresh_jax_cache_sizes() -> dict:
    return in_fresh_jax(_FRESH_JAX_SIZES)


def test_same_signature_traces_once():
    f = ri.jit(lambda x, y: x * y + 1.0)
    for value in range(5):
        f(np.full(3, value, np.float32), np.float32(value))
    assert f.trace_count == 1 and f._cache_size() == 1


@pytest.mark.parametrize(
    "calls",
    [
        # weak vs strong scalar of the same dtype are different entries
        [((1.0,), {}), ((np.float32(1.0),), {})],
        # Python int vs float
        [((1,), {}), ((1.0,), {})],
        # shape change
        [((np.ones(3, np.float32),), {}), ((np.ones(4, np.float32),), {})],
        # dtype change
        [((np.ones(3, np.float32),), {}), ((np.ones(3, np.int32),), {})],
        # same signature, different values
        [((np.ones(3, np.float32),), {}), ((np.zeros(3, np.float32),), {})],
        # numpy float64 is canonicalized to float32 (x64 off) -> same entry as float32
        [((np.ones(3),), {}), ((np.ones(3, np.float32),), {})],
    ],
    ids=["weak-vs-strong", "int-vs-float", "shape", "dtype", "values", "f64-canonical"],
)
def test_cache_entries_match_jax(request, calls):
    ours, _ = call_sequence(calls, lambda x: x * 2)
    assert ours == _fresh_jax_cache_sizes()[request.node.callspec.id]


def test_tree_structure_is_part_of_the_signature():
    calls = [
        (((np.ones(2, np.float32), np.ones(2, np.float32)),), {}),
        (([np.ones(2, np.float32), np.ones(2, np.float32)],), {}),
        (({"a": np.ones(2, np.float32), "b": np.ones(2, np.float32)},), {}),
        (({"b": np.ones(2, np.float32), "a": np.ones(2, np.float32)},), {}),  # same as above
    ]
    ours, _ = call_sequence(calls, lambda t: jax_or_ri_sum(t))
    assert ours == _fresh_jax_cache_sizes()["tree-structure"] == 3


def jax_or_ri_sum(tree):
    leaves = jax.tree_util.tree_leaves(tree)
    total = leaves[0]
    for leaf in leaves[1:]:
        total = total + leaf
    return total


def test_static_argument_change_retraces():
    def f(x, n):
        return x * n

    calls = [((np.ones(2, np.float32), 2), {}), ((np.ones(2, np.float32), 2), {})]
    calls += [((np.ones(2, np.float32), 3), {}), ((np.ones(2, np.float32),), {"n": 3})]
    ours, theirs = call_sequence(calls, f, static_argnums=1)
    assert ours == theirs == 3


def test_static_argnames_mirror_positions():
    f = ri.jit(lambda x, n: x * n, static_argnames="n")
    f(np.ones(2, np.float32), 2)  # n passed positionally is still static
    f(np.ones(2, np.float32), n=2)
    assert f.trace_count == 2  # positional vs keyword: a different tree, as in JAX
    f(np.ones(2, np.float32), n=2)
    assert f.trace_count == 2


def test_unhashable_static_argument_names_it():
    f = ri.jit(lambda x, opts: x, static_argnums=1)
    with pytest.raises(TypeError, match=r"static argument opts has unhashable type list"):
        f(1.0, [1, 2])
    g = ri.jit(lambda x, *, cfg: x, static_argnames="cfg")
    with pytest.raises(TypeError, match=r"static argument cfg has unhashable type dict"):
        g(1.0, cfg={})


def _unhashable_static_calls(api):
    return {
        "jit static_argnums": lambda: api.jit(lambda x, s: x, static_argnums=1)(1.0, [1, 2]),
        "jit static_argnames": lambda: api.jit(lambda x, s: x, static_argnames="s")(1.0, s=[1]),
        "pmap static_broadcasted_argnums": lambda: api.pmap(
            lambda x, s: x, static_broadcasted_argnums=1
        )(np.ones((1, 2), np.float32), [2]),
    }


def test_unhashable_static_argument_is_jax_value_error(backend):
    # JAX 0.10.2 raises ValueError "Non-hashable static arguments are not supported"
    # (pmap in its own words); refimpl's error is that ValueError and the SPEC's TypeError
    want = {}
    for name, call in _unhashable_static_calls(jax).items():
        with pytest.raises(ValueError) as jax_err:
            call()
        want[name] = (type(jax_err.value), str(jax_err.value).split(".")[0])
    for name, call in _unhashable_static_calls(ri).items():
        with pytest.raises(want[name][0], match=want[name][1]) as err:
            call()
        assert isinstance(err.value, TypeError), name


def test_negative_static_argnums():
    f = ri.jit(lambda x, n: x * n, static_argnums=-1)
    assert float(f(np.float32(2), 3)) == 6.0
    f(np.float32(2), 4)
    assert f.trace_count == 2


def test_x64_flag_is_part_of_the_signature():
    f = ri.jit(lambda x: x + 1)
    f(np.ones(2))
    ri.config.update("enable_x64", True)
    out = f(np.ones(2))
    assert out.dtype == np.float64
    assert f.trace_count == 2
    ri.config.update("enable_x64", False)
    f(np.ones(2))
    assert f.trace_count == 2


def test_eval_shape_output_fed_back_hits_the_cache():
    step = lambda x: x * 2 + 1  # noqa: E731
    shape = ri.eval_shape(step, 1.0)
    assert shape.weak_type is True and shape.dtype == np.float32 and shape.shape == ()
    assert jax.eval_shape(step, 1.0).weak_type is True  # the oracle agrees
    f = ri.jit(lambda x: x * 3)
    f(ri.jit(step)(1.0))  # a real weakly typed value
    assert f.trace_count == 1
    f.trace(shape)  # the abstract description of the same value
    assert f.trace_count == 1
    f.trace(ri.ShapeDtypeStruct((), np.float32))  # strong: a new entry
    assert f.trace_count == 2


@pytest.mark.parametrize(
    "make",
    [
        lambda m, x: m.ShapeDtypeStruct((2, 3), np.float32),
        lambda m, x: (x * 2, m.ShapeDtypeStruct((2,), np.int8, weak_type=True)),
        lambda m, x: {"a": m.ShapeDtypeStruct((0,), jnp.bfloat16), "b": [x]},
    ],
)
def test_eval_shape_of_a_function_returning_shape_dtype_structs(backend, make):
    # JAX reports a returned ShapeDtypeStruct as its own shape; computing with it still fails
    ours = ri.eval_shape(lambda x: make(ri, x), ri.ShapeDtypeStruct((4,), np.float32))
    theirs = jax.eval_shape(lambda x: make(jax, x), jax.ShapeDtypeStruct((4,), np.float32))
    as_tuples = lambda t, m: m.tree_util.tree_map(lambda s: (s.shape, s.dtype, s.weak_type), t)  # noqa: E731
    assert as_tuples(ours, ri) == as_tuples(theirs, jax)
    with pytest.raises(TypeError, match="ShapeDtypeStruct"):
        ri.jit(lambda x: make(ri, x))(np.ones(4, np.float32))


def test_abstract_arguments_cannot_be_executed():
    f = ri.jit(lambda x: x)
    with pytest.raises(TypeError, match="ShapeDtypeStruct"):
        f(ri.ShapeDtypeStruct((2,), np.float32))


def test_explain_cache_misses_names_argument_and_change(caplog):
    ri.config.update("explain_cache_misses", True)

    def scale(x, factor):
        return x * factor

    f = ri.jit(scale, static_argnames="factor")
    with caplog.at_level(logging.WARNING, logger="refimpl.jit"):
        f(np.ones(3, np.float32), factor=2)
        (first,) = caplog.records  # the first trace: a function never seen, as JAX
        assert "never seen function: scale" in first.getMessage()
        f(np.ones(4, np.float32), factor=2)
        f(np.ones(4, np.int32), factor=2)
        f(np.ones(4, np.int32), factor=5)
        f(1, factor=5)
    messages = [r.getMessage() for r in caplog.records][1:]
    assert len(messages) == 4
    assert "jit(scale)" in messages[0] and "x: shape changed from (3,) to (4,)" in messages[0]
    assert "x: dtype changed from float32 to int32" in messages[1]
    assert "static argument factor changed from 2 to 5" in messages[2]
    assert "x: shape changed from (4,) to ()" in messages[3] or "weak_type" in messages[3]


def test_explain_weak_type_change(caplog):
    ri.config.update("explain_cache_misses", True)
    f = ri.jit(lambda x: x + 1)
    with caplog.at_level(logging.WARNING, logger="refimpl.jit"):
        f(np.float32(1))
        f(1.0)
    _, record = caplog.records
    assert "weak_type changed from False to True" in record.getMessage()


def test_explain_tree_change(caplog):
    ri.config.update("explain_cache_misses", True)
    f = ri.jit(lambda t: t[0])
    with caplog.at_level(logging.WARNING, logger="refimpl.jit"):
        f((1.0, 2.0))
        f((1.0, 2.0, 3.0))
    _, record = caplog.records
    assert "tree structure" in record.getMessage()


def _first_trace_logs(api, make_jit, caplog):
    """The warnings the first traces of ``make_jit``'s functions log, each
    function made anew on one line (JAX's test_cache_miss_explanations_new_function_in_loop)."""
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            make_jit()(3)
        api.jit(operator.add)(42, 24)  # no source: named without a place
    return [r.getMessage() for r in caplog.records]


def test_first_trace_of_a_function_is_explained_as_jax(backend, caplog):
    import jax

    ri.clear_caches()  # jit(operator.add) of an earlier case: a cache hit, or a retrace
    jax.clear_caches()
    ri.config.update("explain_cache_misses", True)
    ours = _first_trace_logs(ri, lambda: ri.jit(lambda x: 2 * x), caplog)
    with jax.explain_cache_misses(True):
        theirs = _first_trace_logs(jax, lambda: jax.jit(lambda x: 2 * x), caplog)
    assert len(ours) == len(theirs) == 3
    for mine, jaxs in zip(ours, theirs, strict=True):
        assert ("never seen function" in mine) == ("never seen function" in jaxs)
        hint = "another function defined on the same line"
        assert (hint in mine) == (hint in jaxs)
    assert "another function defined on the same line" in ours[1]
    assert "never seen function: add" in ours[2] and "defined at" not in ours[2]


def test_refimpls_own_functions_are_not_explained(backend, caplog):
    ri.config.update("explain_cache_misses", True)
    with caplog.at_level(logging.WARNING, logger="refimpl.jit"):
        rnp.cumsum(rnp.sin(np.ones(3, np.float32)) + 1)
        ri.random.normal(ri.random.key(0), (3,))
    assert caplog.records == []


def test_nested_jit_is_one_equation_with_its_own_cache():
    inner = ri.jit(lambda x: rnp.sin(x) * 2)
    outer = ri.jit(lambda x, y: inner(x) + inner(y))
    program = ri.make_program(outer)(np.ones(3, np.float32), np.ones(3, np.float32))
    ri.check_program(program)
    assert [e.primitive.name for e in program.eqns] == ["jit", "jit", "add"]
    assert inner.trace_count == 1  # both calls share one signature
    outer(np.ones(3, np.float32), np.ones(3, np.float32))
    outer(np.ones(5, np.float32), np.ones(5, np.float32))
    assert inner.trace_count == 2
    expected = np.sin(np.ones(5, np.float32)) * 2 * 2
    np.testing.assert_allclose(np.asarray(outer(np.ones(5), np.ones(5))), expected, rtol=1e-6)


def test_tracing_the_outer_function_twice_does_not_retrace_inner():
    inner = ri.jit(lambda x: x + 1)
    outer1 = ri.jit(lambda x: inner(x) * 2)
    outer2 = ri.jit(lambda x: inner(x) * 3)
    outer1(np.ones(2, np.float32))
    outer2(np.ones(2, np.float32))
    assert inner.trace_count == 1


def test_nested_jit_closing_over_an_outer_tracer():
    def outer(x, y):
        inner = ri.jit(lambda a: a * y)  # y is a tracer of the outer trace
        return inner(x)

    out = ri.jit(outer)(np.float32(3), np.float32(4))
    assert float(out) == 12.0


def test_output_weak_types_match_jax():
    pairs = [
        (lambda x: x * 2, lambda x: x * 2),
        (lambda x: x + np.float32(1), lambda x: x + np.float32(1)),
        (lambda x: lax.sin(x), lambda x: jax.lax.sin(x)),
    ]
    for fun, jax_fun in pairs:
        for arg in (1.0, np.float32(1.0)):
            ours = ri.jit(fun)(arg)
            theirs = jax.jit(jax_fun)(arg)
            assert ours.weak_type == theirs.weak_type, (fun, arg)
            assert ours.dtype == theirs.dtype


def test_kwargs_and_pytree_outputs():
    f = ri.jit(lambda x, *, scale: {"y": x * scale, "pair": (x, scale)})
    out = f(np.ones(2, np.float32), scale=np.float32(3))
    assert set(out) == {"pair", "y"}
    np.testing.assert_array_equal(np.asarray(out["y"]), [3, 3])
    np.testing.assert_array_equal(np.asarray(out["pair"][1]), 3)


def test_non_array_output_is_a_clear_error():
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): output leaf 0 is a str"):
        ri.jit(lambda x: "hello")(1.0)


def test_bad_argument_names_its_path():
    f = ri.jit(lambda tree: tree)
    with pytest.raises(TypeError, match=r"argument at position 'tree\['a'\]\[1\]'.*str"):
        f({"a": [1.0, "oops"]})


def test_jit_result_matches_jax_values():
    fun = lambda x, y: rnp.sin(x) * y - x / 3  # noqa: E731
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    ours = ri.jit(fun)(x, 2.5)
    theirs = jax.jit(lambda a, b: jnp.sin(a) * b - a / 3)(x, 2.5)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6, atol=1e-6)


def test_jit_as_decorator_with_options():
    @ri.jit(static_argnums=(1,))
    def power(x, n):
        out = x
        for _ in range(n - 1):
            out = out * x
        return out

    assert float(power(np.float32(2), 3)) == 8.0


def test_jit_rejects_bad_options():
    with pytest.raises(TypeError, match="static_argnums must be ints"):
        ri.jit(lambda x: x, static_argnums="x")
    with pytest.raises(ValueError, match="backend"):
        ri.jit(lambda x: x, backend="tpu9")
    with pytest.raises(TypeError, match="Expected a callable value"):  # JAX's words
        ri.jit(3)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_static_argument_whose_eq_raises_is_jaxs_value_error(backend):
    """JAX 0.10.2: 'static arguments should be comparable using __eq__' (a
    ValueError) when a cache lookup compares two static values and __eq__
    raises; refimpl treated them as different and traced again."""

    class Incomparable:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            raise ValueError("cannot compare")

    f = ri.jit(lambda x, b: x * 2, static_argnums=1, backend=backend)
    f(np.ones(2, np.float32), Incomparable())
    with pytest.raises(ValueError, match="static arguments should be comparable using __eq__"):
        f(np.ones(2, np.float32), Incomparable())


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
@pytest.mark.parametrize("how", ["itself", "holder"])
def test_a_static_argument_reaching_its_own_jit_does_not_keep_it_alive(backend, how):
    # The shared cache is keyed weakly on the function: a cached static value
    # that reaches jit(f) (and so f) must not keep that key alive forever
    import gc
    import weakref

    class Holder:  # hashed and compared by identity
        pass

    def make():
        def f(x, s):
            return x + 1

        g = ri.jit(f, static_argnums=1, backend=backend)
        static = g if how == "itself" else Holder()
        if how == "holder":
            static.g = g
        np.testing.assert_array_equal(np.asarray(g(np.float32(1), static)), np.float32(2))
        before = g.trace_count
        g(np.float32(2), static)  # the same signature: cached
        assert g.trace_count == before
        return weakref.ref(f), weakref.ref(g)

    refs = make()
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_plain_static_values_are_still_shared_by_jit_objects_of_one_function():
    calls = []

    def f(x, n, dtype, names):
        calls.append(n)
        return (x * n).astype(dtype)

    def jitted():
        return ri.jit(f, static_argnums=(1, 2, 3))

    args = (np.ones(2, np.float32), 3, np.float32, ("a", (None, 1.5)))
    jitted()(*args)
    jitted()(*args)  # a new jit(f): its shared cache has the entry
    assert calls == [3]
    g = jitted()
    g(*args)
    ri.clear_caches()
    g(*args)
    assert calls == [3, 3]


def test_clear_caches_forgets_entries_of_other_static_values():
    calls = []

    class Config:  # another static value: cached on the jit object itself
        def __hash__(self):
            return 7

        def __eq__(self, other):
            return isinstance(other, Config)

    def f(x, c):
        calls.append(1)
        return x + 1

    g = ri.jit(f, static_argnums=1)
    g(np.float32(1), Config())
    g(np.float32(1), Config())  # an equal value: cached
    assert len(calls) == 1 and g._cache_size() == 1
    ri.clear_caches()
    g(np.float32(1), Config())
    assert len(calls) == 2
