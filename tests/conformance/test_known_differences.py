"""Every entry of conformance/known.py, checked against JAX's actual behaviour.

Two checks per entry:

* the cases its pattern matches all differ on jax, and only by what its
  ``differs`` regexes excuse: run on ``ref`` and ``jax``, each one is
  reported ``known`` with this entry's reason (a pass means the pattern is
  broader than the difference; a ``differ`` means something else differs);
* what its reason says JAX does is what JAX 0.10.2 does: a small direct
  program per entry (``JAX_CLAIMS``), written against jax alone.
"""

from __future__ import annotations

import fnmatch
import warnings

import numpy as np
import pytest

import conformance
from conformance import recorded
from conformance.case import AGREE
from conformance.known import KNOWN_DIFFERENCES, KnownDifference
from conformance.runner import run_cases
from tests.helpers.jax_oracle import clear_jax_jit_cache, in_fresh_jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _cases(entry: KnownDifference) -> list[conformance.Case]:
    return [c for c in conformance.select_cases() if fnmatch.fnmatchcase(c.name, entry.pattern)]


@pytest.mark.slow  # ~25 s in all; .ci/run runs this file with -m "slow or not slow"
@pytest.mark.parametrize("entry", KNOWN_DIFFERENCES, ids=lambda e: e.pattern)
def test_pattern_matches_only_cases_that_differ_by_what_it_excuses(entry):
    cases = _cases(entry)
    assert cases, f"{entry.pattern} matches no case"
    suite = run_cases(cases, ["ref", entry.impl], recordings=None)
    for case in cases:
        assert suite.result(case.name, "ref").status == "pass", conformance.summary_text(suite)
        result = suite.result(case.name, entry.impl)
        if result.status == "skip" and "devices, the cases need" in result.detail:
            # (.ci/run gives JAX 4 host devices, as the main job does)
            pytest.skip(f"{case.name}: {result.detail}")
        assert result.status == "known" and result.known_reason == entry.reason, (
            f"{case.name} on {entry.impl}: {result.status}\n{result.detail}"
        )
    # without jax, ref is judged by JAX's recorded result: the same entry excuses it
    recordings = recorded.load()
    agree = [c for c in cases if c.expect is AGREE and recordings.lookup(c)[0] is not None]
    if entry.impl == "jax" and agree:
        suite = run_cases(agree, ["ref"], recordings=recordings)
        for case in agree:
            result = suite.result(case.name, "ref")
            assert result.status == "known" and result.known_reason == entry.reason, (
                f"{case.name} on ref vs the recording: {result.status}\n{result.detail}"
            )


def _raises(exc_type, fn, *args, match: str | None = None, **kwargs):
    with pytest.raises(exc_type, match=match) as info:
        fn(*args, **kwargs)
    return info.value


def _f32(*values):
    return jnp.array(np.array(values, np.float32), copy=True)


def _claim_broadcast_error():
    _raises(ValueError, jnp.add, jnp.ones((2, 3)), jnp.ones(4), match="Incompatible shapes")


def _claim_percentile_position_folded_by_xla():
    # XLA multiplies a float16 q by fl(fl(1/100) * 328) = 3.28125 (one rounding):
    # position 94.0, so the lower element is 94; per operation it is 93.9375
    a = np.arange(329, dtype=np.float16)
    q = np.float16(28.640625)
    assert float(jnp.percentile(a, q, method="lower")) == 94.0
    assert float(np.float16(np.float16(q / np.float16(100)) * np.float16(328))) == 93.9375
    assert float(np.float16(q * np.float16(np.float16(0.01) * np.float16(328)))) == 94.0


def _claim_int_of_a_numpy_constant():
    f = jax.jit(lambda x: x + int(jnp.asarray(np.int32(3))))
    _raises(jax.errors.ConcretizationTypeError, f, 1, match="Abstract tracer value")


def _claim_cache_size_keyed_on_python_type():
    clear_jax_jit_cache()  # a full C++ cache (thousands of tests in) keeps no entry
    f = jax.jit(lambda x: x * 2)
    f(np.ones(2, np.float32))
    f(jnp.ones(2, jnp.float32))
    assert f._cache_size() == 2
    traces = []
    g = jax.jit(lambda x: traces.append(1) or x * 2)
    g(np.ones(2, np.float32))
    g(jnp.ones(2, jnp.float32))
    assert len(traces) == 1


def _claim_cache_size_weak_output():
    clear_jax_jit_cache()
    traces = []
    f = jax.jit(lambda x: traces.append(1) or x * 2)
    f(f(2.0))
    assert len(traces) == 1 and f._cache_size() == 2


def _claim_device_put_donate_on_device_keeps_input():
    for may_alias in (None, False):
        x = _f32(1, 2, 3)
        y = jax.device_put(x, donate=True, may_alias=may_alias)
        assert not x.is_deleted()
        assert y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    _raises(ValueError, jax.device_put, _f32(1), donate=True, may_alias=True)


def _claim_device_put_pytree_keeps_leaves():
    tree = {"a": _f32(1), "b": (_f32(2), _f32(3))}
    jax.device_put(tree, donate=True)
    assert not any(x.is_deleted() for x in jax.tree_util.tree_leaves(tree))


def _claim_device_put_deleted_input():
    x = _f32(1)
    x.delete()
    y = jax.device_put(x)  # no error here
    assert y.is_deleted()
    _raises(RuntimeError, lambda: np.asarray(y))


def _claim_same_array_twice():
    x = _f32(1, 2)
    f = jax.jit(lambda a, b: a + b, donate_argnums=0)
    err = _raises(RuntimeError, f, x, x, match="previously donated")
    assert type(err).__name__ == "JaxRuntimeError"


def _claim_chained_calls():
    f = jax.jit(lambda a: a + 1, donate_argnums=0)
    x = _f32(1, 2)
    f(x)
    _raises(ValueError, f, x, match="Buffer has been deleted or donated")  # warm C++ path
    cold = jax.jit(lambda a: a + 2, donate_argnums=0)
    y = _f32(1, 2)
    jax.jit(lambda a: a * 1, donate_argnums=0)(y)
    _raises(RuntimeError, cold, y, match="deleted")


def _claim_negative_donate_argnum():
    x, y = _f32(1), _f32(2)
    jax.jit(lambda a, b: a + b, donate_argnums=-1)(x, y)
    assert not x.is_deleted() and not y.is_deleted()


def _claim_unread_donated_argument_kept():
    # jax prunes an argument its program does not read before donating
    w = _f32(1, 2)
    out = jax.jit(lambda u, v: u + 1, donate_argnums=1)(_f32(3, 4), w)
    assert not w.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), np.array([4, 5], np.float32))


def _claim_unroll_float():
    out = jax.lax.scan(lambda c, x: (c, x), jnp.float32(0), jnp.arange(3.0), unroll=2.0)
    assert out[1].shape == (3,)
    computing = (lambda c, x: (c + x, x * 2), jnp.float32(0), jnp.arange(3.0))
    _raises(TypeError, jax.lax.scan, *computing, unroll=2.0, match="interpreted as an integer")


def _claim_unroll_string():
    err = _raises(TypeError, jax.lax.scan, lambda c, x: (c, x), 0.0, jnp.arange(3.0), unroll="2")
    assert "unroll" not in str(err) and "'<' not supported" in str(err)


def _donate_with_warnings(f, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(*args)
    return out, [str(w.message) for w in caught]


def _claim_unusable_shape():
    x = _f32(1, 2, 3)
    _, caught = _donate_with_warnings(jax.jit(lambda a: a.sum(), donate_argnums=0), x)
    assert not x.is_deleted() and any("not usable" in w for w in caught)


def _claim_unusable_partial():
    a, b = _f32(1, 2, 3), _f32(4, 5, 6)
    _, caught = _donate_with_warnings(jax.jit(lambda a, b: a + b, donate_argnums=(0, 1)), a, b)
    assert a.is_deleted() and not b.is_deleted() and any("not usable" in w for w in caught)


def _claim_unusable_dtype():
    x = jnp.array(np.array([1, 2, 3], np.int32), copy=True)
    f = jax.jit(lambda a: a.astype(np.float32) / 2, donate_argnums=0)
    _, caught = _donate_with_warnings(f, x)
    assert x.is_deleted() and not any("not usable" in w for w in caught)


def _claim_acosh_jvp_other_root():
    jax.config.update("jax_enable_x64", True)
    try:
        z, h = -0.3 + 0.2j, 1e-7
        slope = (np.arccosh(z + h) - np.arccosh(z - h)) / (2 * h)
        # jax's value is the principal branch (its finite differences give slope) ...
        jax_slope = (complex(jnp.arccosh(z + h)) - complex(jnp.arccosh(z - h))) / (2 * h)
        assert abs(jax_slope - slope) < 1e-6
        # ... but its jvp rule gives the other root: the negated slope
        assert abs(complex(jax.grad(jnp.arccosh, holomorphic=True)(z)) + slope) < 1e-9
    finally:
        jax.config.update("jax_enable_x64", False)


def _claim_linearize_where_retypes_tangent():
    f = jax.linearize(lambda x: jnp.where(x > 0, x, 0.0), 2.0)[1]
    assert jax.typeof(f(np.float32(1))).weak_type  # the primal's type, not the tangent's
    f = jax.linearize(lambda x: x * 2.0, 2.0)[1]
    assert not jax.typeof(f(np.float32(1))).weak_type  # an inlined jit keeps the tangent's


def _claim_vjp_prod_keeps_weak_cotangent():
    (ct,) = jax.vjp(jnp.prod, np.float32(2))[1](0.5)
    assert jax.typeof(ct).weak_type
    (ct,) = jax.vjp(jnp.prod, np.float32(2))[1](np.float32(0.5))
    assert not jax.typeof(ct).weak_type


def _claim_narrow_start_clamped_in_its_type():
    x, update = jnp.arange(300.0, dtype=jnp.float32), jnp.float32([-7, -8])
    for start, jitted in ((jnp.uint8(127), False), (jnp.uint8(127), True), (jnp.int8(127), False)):
        dus = jax.jit(jax.lax.dynamic_update_slice) if jitted else jax.lax.dynamic_update_slice
        written = np.nonzero(np.asarray(dus(x, update, (start,))) < 0)[0]
        assert written.tolist() == [42, 43]  # not [127, 128]
    jitted = jax.jit(lambda x, i: jax.lax.dynamic_update_slice(x, update, (i,)))
    assert np.nonzero(np.asarray(jitted(x, jnp.int8(127))) < 0)[0].tolist() == [127, 128]


def _claim_custom_vmap_rule_output_without_batch_axis():
    @jax.custom_batching.custom_vmap
    def f(x):
        return jnp.sin(x)

    f.def_vmap(lambda size, batched, xs: (xs[:2], True))
    out = jax.vmap(f)(np.arange(3, dtype=np.float32))
    assert out.shape == (2,), out.shape  # not the mapped size 3: the rule's value as it is


def _claim_grad_of_constant_ref_write():
    def f(x):
        r = jax.new_ref(np.array([2.0, 3.0, 4.0, 5.0], np.float32))
        r[2] = np.float32(-1)
        r[0:2] += np.float32(10)
        return (jax.freeze(r) * x).sum()

    _raises(AttributeError, jax.grad(jax.jit(f)), np.ones(4, np.float32), match="accum")


def _claim_eager_ref_index_before_the_start_clamps():
    r = jax.new_ref(np.arange(3, dtype=np.float32))
    r[-5] = np.float32(9)  # clamped to r[0], no error
    np.testing.assert_array_equal(np.asarray(r[...]), [9.0, 1.0, 2.0])
    _raises(ValueError, lambda: r[3], match="Out of bound indexer")


def _claim_grad_of_scan_carry_weak_by_branch_order():
    preds = np.float32([0.0, 3.0])

    def weak(add_first):
        def step(p, c, x):
            add, mul = (lambda v: v + x), (lambda v: v * 2.0)
            return jax.lax.cond(p > x, *((add, mul) if add_first else (mul, add)), c)

        def loop(p, s):
            return jax.lax.fori_loop(0, 3, lambda i, c: step(p, c, np.float32(1.0) * i), s)

        g = jax.grad(lambda s: jax.vmap(lambda p: loop(p, s))(preds).sum())(1.0)
        return jax.typeof(g).weak_type

    # add_any types the sum as the later (first summed) branch's cotangent
    assert weak(True) and not weak(False)


def _claim_none_in_a_ref_index():
    vector = jax.new_ref(np.arange(4, dtype=np.float32))
    assert vector[None].shape == (4,)  # dropped, not a unit axis
    matrix = jax.new_ref(np.zeros((3, 4), np.float32))
    _raises(ValueError, lambda: matrix[None, 1], match="not enough values to unpack")
    _raises(ValueError, lambda: jax.jit(lambda: matrix[None, 1])())


def _claim_cost_analysis_is_a_dict_on_cpu():
    lowered = jax.jit(lambda x: x * 2).lower(np.arange(3, dtype=np.float32))
    for analysis in (lowered.cost_analysis(), lowered.compile().cost_analysis()):
        assert isinstance(analysis, dict) and "flops" in analysis and "bytes accessed" in analysis


def _claim_devices_on_the_host_are_cpu():
    assert jax.local_devices()[0].platform == "cpu" == jax.default_backend()


def _claim_multivariate_normal_factors_with_lapack():
    cov = np.eye(3, dtype=np.float32)
    assert "lapack_ssyevd_ffi" in jax.jit(jax.numpy.linalg.eigh).lower(cov).as_text()
    assert "lapack_sgesdd_ffi" in jax.jit(jax.numpy.linalg.svd).lower(cov).as_text()


def _claim_grad_of_jit_closure_over_the_mesh():
    # (in a fresh JAX with 4 CPU devices)
    spec = in_fresh_jax(
        "import os\n"
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "import jax, numpy as np\n"
        "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P\n"
        "m = jax.make_mesh((4,), ('x',), axis_types=(AxisType.Auto,))\n"
        "c = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(m, P('x')))\n"
        "g = jax.grad(jax.jit(lambda w: (w * c).sum()))(np.ones(8, np.float32))\n"
        "result = [str(g.sharding.spec), len(g.addressable_shards)]\n"
    )
    assert spec == ["P('x',)", 4]


def _claim_jit_under_set_mesh_is_over_the_mesh():
    result = in_fresh_jax(
        "import os\n"
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "import jax, jax.numpy as jnp, numpy as np\n"
        "m = jax.make_mesh((4,), ('x',))\n"
        "with jax.set_mesh(m):\n"
        "    y = jax.jit(lambda a: a * 2)(np.arange(8.0, dtype=np.float32))\n"
        "    z = jnp.ones(8)\n"
        "result = [[str(v.sharding.spec), len(v.addressable_shards)] for v in (y, z)]\n"
    )
    assert result == [["P(None,)", 4], ["P(None,)", 4]]


JAX_CLAIMS = {
    "random_more/multivariate_normal_[es][iv][gd]*": (
        _claim_multivariate_normal_factors_with_lapack
    ),
    "api.paths/cost_analysis_kinds": _claim_cost_analysis_is_a_dict_on_cpu,
    "api.paths/device_platform": _claim_devices_on_the_host_are_cpu,
    "ref.update_paths/none_in_index": _claim_none_in_a_ref_index,
    "ref.update_paths/eager_add_before_the_start": _claim_eager_ref_index_before_the_start_clamps,
    "errors.shapes/np-add-not-broadcastable": _claim_broadcast_error,
    "reductions.percentile/f16-q-position-xla-folds-constants": (
        _claim_percentile_position_folded_by_xla
    ),
    "ref.paths/grad_constant_write": _claim_grad_of_constant_ref_write,
    "jit.paths/numpy_constant/int_of_asarray": _claim_int_of_a_numpy_constant,
    "jit.cache/same-signature-numpy-and-array": _claim_cache_size_keyed_on_python_type,
    "jit.cache/weak-output-fed-back": _claim_cache_size_weak_output,
    "device_put/may_alias=[FN]*/donate=True": _claim_device_put_donate_on_device_keeps_input,
    "device_put/pytree-donated": _claim_device_put_pytree_keeps_leaves,
    "device_put/deleted-input": _claim_device_put_deleted_input,
    "donation/same-array-twice": _claim_same_array_twice,
    "donation/chained-calls": _claim_chained_calls,
    "donation/negative-argnum": _claim_negative_donate_argnum,
    "jit.paths/unread/donated_unread": _claim_unread_donated_argument_kept,
    "scan/errors/unroll-float": _claim_unroll_float,
    "scan/errors/unroll-string": _claim_unroll_string,
    "donation/unusable-shape-mismatch": _claim_unusable_shape,
    "donation/unusable-partial-two-donated-one-output": _claim_unusable_partial,
    "donation/unusable-dtype-mismatch": _claim_unusable_dtype,
    "np.complex-derivatives/arccosh": _claim_acosh_jvp_other_root,
    "ad/weak_tangent_at_jnp/linearize_where_strong_tangent": (
        _claim_linearize_where_retypes_tangent
    ),
    "ad/weak_tangent_at_jnp/vjp_prod_weak_cotangent": _claim_vjp_prod_keeps_weak_cotangent,
    "indexing.paths/dynamic_update_slice_uint8_start_past_its_range": (
        _claim_narrow_start_clamped_in_its_type
    ),
    "custom.api/custom_vmap_rule_output_without_batch_axis": (
        _claim_custom_vmap_rule_output_without_batch_axis
    ),
    "vmap.paths/grad_of_scan_carry_made_strong_by_batched_cond": (
        _claim_grad_of_scan_carry_weak_by_branch_order
    ),
    "sharding/plain_jit/grad_of_jit_closure_auto": _claim_grad_of_jit_closure_over_the_mesh,
    "sharding/plain_jit/under_set_mesh_unsharded": _claim_jit_under_set_mesh_is_over_the_mesh,
}


def test_every_known_entry_has_a_jax_check():
    # (a pattern may have an entry per implementation, with one claim)
    assert sorted(JAX_CLAIMS) == sorted({e.pattern for e in KNOWN_DIFFERENCES})


@pytest.mark.parametrize("pattern", sorted(JAX_CLAIMS))
def test_what_the_reason_says_jax_does(pattern):
    assert jax.__version__ == "0.10.2", "the reasons describe jax 0.10.2"
    JAX_CLAIMS[pattern]()
