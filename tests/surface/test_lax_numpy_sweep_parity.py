"""The functions JAX 0.10.2's tests/lax_numpy_test.py sweeps (sort, take,
where, split, trace, products, unique, histograms, polynomials, creation,
promotion, delete/insert ...; not the operator and reducer records), each
case run on ``jax.numpy`` and ``refimpl.numpy`` on both backends, eager and
under jit where JAX's test compiles: shape, dtype, weak type, values and the
exception class (tests/helpers/lax_numpy_sweep_cases.py builds the table).
The default run takes a few cases per test method; ``-m slow`` the sweep."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.lax_numpy_sweep_cases import Case, cases, compare, run

# (test method, difference prefix): the differences refimpl keeps on purpose
# (docs/semantics.md) or that the table's own comparison cannot judge
_LEFT_DIFFERENT = {
    # split at explicit indices follows NumPy's slicing rules
    ("testSplit", "raises:ValueError/-"),
    # gradient accepts edge_order (1 or 2, as NumPy)
    ("testGradient", "raises:NotImplementedError/-"),
    ("testGradient", "class:NotImplementedError/"),  # edge_order=2 on a short axis
    # sort_complex orders near-real roots by float32 noise
    ("testRoots", "values"),
    ("testRootsNoStrip", "values"),
    # integer results truncate values that NumPy's and XLA's log and pow kernels
    # may put one ulp apart on another CPU (none differ on the reference machine)
    ("testGeomspace", "values"),
}


def _left_different(case: Case, difference: str) -> bool:
    return any(
        case.method == method and difference.startswith(prefix)
        for method, prefix in _LEFT_DIFFERENT
    )


def _check(case: Case, backend: str) -> None:
    modes = [("eager", None, None)] + ([("jit", jax.jit, ri.jit)] if case.jit else [])
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode, jax_jit, ri_jit in modes:
            want = run(case, jnp, jax_jit)
            got = run(case, rnp, ri_jit)
            difference = compare(got, want)
            if difference and not _left_different(case, difference):
                failures.append(f"{mode}: {difference}")
    assert not failures, (case.name, failures)


_QUICK = cases(limit=2)
_ALL = cases(limit=300)


@pytest.mark.parametrize("case", _QUICK, ids=[c.name for c in _QUICK])
def test_lax_numpy_sweep_subset(backend, case):
    _check(case, backend)


@pytest.mark.slow
@pytest.mark.parametrize("case", _ALL, ids=[c.name for c in _ALL])
def test_lax_numpy_sweep(backend, case):
    _check(case, backend)


# --- the classes the sweep found, each as JAX 0.10.2 -------------------------------------------

_F = np.arange(5.0, dtype=np.float32)
_FIXED = [
    Case("delete", "list_obj", lambda m: lambda x: m.delete(x, [0, 2]), (_F,)),
    Case("delete", "empty_list_obj", lambda m: lambda x: m.delete(x, [], -1), (_F,)),
    Case("extract", "fill_none", lambda m: lambda x: m.extract(x > 1, x, fill_value=None), (_F,)),
    Case(
        "extract",
        "size_fill_none",
        lambda m: lambda x: m.extract(x > 1, x, size=3, fill_value=None),
        (_F,),
    ),
    Case(
        "vecdot",
        "axes_differ",
        lambda m: m.vecdot,
        (np.ones((2, 3, 4), np.float32), np.ones((3, 2), np.int32)),
    ),
    Case(
        "promote_types",
        "int32_float64",
        lambda m: lambda: m.promote_types(np.int32, np.float64),
        (),
        jit=False,
    ),
    Case(
        "promote_types",
        "int64_uint64",
        lambda m: lambda: m.promote_types(np.int64, np.uint64),
        (),
        jit=False,
    ),
    Case("promote_types", "int_int", lambda m: lambda: m.promote_types(int, int), (), jit=False),
    Case(
        "promote_types",
        "float_int8",
        lambda m: lambda: m.promote_types(float, np.int8),
        (),
        jit=False,
    ),
    Case(
        "promote_types",
        "uint32_int8",
        lambda m: lambda: m.promote_types(np.uint32, np.int8),
        (),
        jit=False,
    ),
    Case("polyint", "k_list", lambda m: lambda p: m.polyint(p, 3, [1.0, 2.0, 3.0]), (_F[:2],)),
    Case("polyint", "weak_k_m0", lambda m: lambda p: m.polyint(p, 0, 2.0), (np.ones(2, np.int32),)),
    Case("polyint", "weak_k_m2", lambda m: lambda p: m.polyint(p, 2, 2.0), (np.ones(2, np.int32),)),
    Case(
        "polyint",
        "k_length",
        lambda m: lambda p: m.polyint(p, 3, np.ones(2, np.float32)),
        (_F[:2],),
    ),
    Case("polyadd", "one_empty", lambda m: m.polyadd, (_F[:1], np.zeros(0, np.int8))),
    Case("polysub", "one_empty", lambda m: m.polysub, (np.zeros(0, np.int8), _F[:2])),
    Case("polyadd", "both_empty", lambda m: m.polyadd, (_F[:0], np.zeros(0, np.int8))),
    Case("polymul", "one_empty", lambda m: m.polymul, (_F[:2], np.zeros(0, np.int8))),
    Case(
        "polymul",
        "empty_float16",
        lambda m: m.polymul,
        (np.ones(2, np.int8), np.zeros(0, np.float16)),
    ),
    Case(
        "vsplit", "one_d", lambda m: lambda x: m.vsplit(x, 2), (np.arange(12.0, dtype=np.float32),)
    ),
    Case("dsplit", "two_d", lambda m: lambda x: m.dsplit(x, 2), (np.ones((2, 4), np.float32),)),
    Case("hsplit", "zero_d", lambda m: lambda x: m.hsplit(x, 1), (np.float32(1),)),
    Case(
        "dot",
        "scalar_preferred",
        lambda m: lambda a, b: m.dot(a, b, preferred_element_type=np.float32),
        (np.int8(3), np.array([[2.7246094, 1.0], [0.5, -1.1]], np.float16)),
    ),
    Case(
        "dot",
        "preferred_scalar",
        lambda m: lambda a, b: m.dot(a, b, preferred_element_type=np.float32),
        (np.array([2.7246094, -4.3], np.float16), np.array(3, np.int8)),
    ),
]


@pytest.mark.parametrize("case", _FIXED, ids=[c.name for c in _FIXED])
def test_found_classes_as_jax(backend, case):
    _check(case, backend)
