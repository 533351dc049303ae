"""Invalid calls raise the built-in exception class JAX 0.10.2 raises (issue 29),
so a JAX test's ``assertRaises`` holds for refimpl; the expected class is read
from JAX itself, and refimpl's message names the function."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri
import refimpl.lax  # noqa: F401

jax.config.update("jax_platforms", "cpu")

_A = np.ones((2, 3), np.float32)
_B = np.ones(3, np.float32)


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, x):
        return x


# (label, call(api, lax), a word refimpl's message must contain)
CASES = [
    ("top_k_rank0", lambda api, L: L.top_k(np.float32(1.0), 1), "top_k"),
    (
        "conv_ranks_differ",
        lambda api, L: L.conv_general_dilated(
            np.ones((1, 2, 5), np.float32), np.ones((3, 2, 2, 2), np.float32), (1,), "VALID"
        ),
        "conv_general_dilated",
    ),
    ("pad_pairs", lambda api, L: L.pad(_A, np.float32(0), [(1, 1), (0, 0)]), "padding_config"),
    (
        "reduce_shapes_differ",
        lambda api, L: L.reduce(
            (_A, _A[0]),
            (np.float32(0), np.float32(0)),
            lambda a, b: (a[0] + b[0], a[1] + b[1]),
            (0,),
        ),
        "reduce",
    ),
    ("fft_unknown_type", lambda api, L: L.fft(_A.astype(np.complex64), "DCT", (3,)), "fft_type"),
    (
        "jit_static_argnums_true",
        lambda api, L: api.jit(lambda x: x, static_argnums=True)(1.0),
        "static_argnums",
    ),
    (
        "pmap_in_axes_list",
        lambda api, L: api.pmap(lambda x: x, in_axes=[0])(np.ones((1, 3), np.float32)),
        "in_axes",
    ),
    ("jit_unhashable_callable", lambda api, L: api.jit(_Unhashable())(_B), "hashable"),
    ("scan_scalar_xs", lambda api, L: L.scan(lambda c, x: (c, x), 0.0, np.float32(1)), "scalar"),
    (
        "conv_rank1",
        lambda api, L: L.conv_general_dilated(_B, _B[:2], (), "VALID"),
        "conv_general_dilated",
    ),
    ("select_n_no_cases", lambda api, L: L.select_n(np.bool_(True)), "select_n"),
    ("integer_pow_negative_int", lambda api, L: L.integer_pow(np.int32(2), -1), "integer_pow"),
    ("qr_vector", lambda api, L: L.linalg.qr(_B), "qr"),
    ("cholesky_vector", lambda api, L: L.linalg.cholesky(_B), "cholesky"),
    ("eigh_vector", lambda api, L: L.linalg.eigh(_B), "eigh"),
    ("reshape_other_size", lambda api, L: L.reshape(_A, (4,)), "reshape"),
    ("svd_vector", lambda api, L: L.linalg.svd(_B), "svd"),
    ("fft_lengths_mismatch", lambda api, L: L.fft(_A.astype(np.complex64), "FFT", (4,)), "fft"),
    ("rfft_lengths_mismatch", lambda api, L: L.fft(_A, "RFFT", (4,)), "fft"),
    (
        "triangular_solve_shapes",
        lambda api, L: L.linalg.triangular_solve(
            np.eye(3, dtype=np.float32), np.ones((2, 2), np.float32), left_side=True
        ),
        "triangular_solve",
    ),
    ("ref_too_many_indices", lambda api, L: api.new_ref(_B)[0, 1], "Ref indexing"),
    (
        "custom_linear_solve_matvec_tree",
        lambda api, L: L.custom_linear_solve(lambda x: (x, x), _B, lambda mv, b: b),
        "matvec",
    ),
]


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return e
    return None


@pytest.mark.parametrize("label, call, word", CASES, ids=[c[0] for c in CASES])
def test_same_class_as_jax(label, call, word):
    expected = _raised(lambda: call(jax, jax.lax))
    assert expected is not None, f"JAX 0.10.2 accepts {label}"
    got = _raised(lambda: call(ri, ri.lax))
    # refimpl may raise a subclass (ShapeIndexError: an IndexError that is also a ValueError)
    assert isinstance(got, type(expected)), (label, got, expected)
    assert word in str(got)


def test_jit_static_argnums_true_is_argument_one():
    # JAX takes True as static_argnums=1 (bool is an int): the second argument is static
    f = ri.jit(lambda x, n: x * n, static_argnums=True)
    assert float(f(np.float32(2.0), 3)) == float(
        jax.jit(lambda x, n: x * n, static_argnums=True)(np.float32(2.0), 3)
    )


@pytest.mark.parametrize("dimension", [1.0, np.float32(0.0)])
def test_broadcasted_iota_integral_float_dimension(dimension):
    # JAX 0.10.2 takes an integral float dimension as that axis
    np.testing.assert_array_equal(
        ri.lax.broadcasted_iota(np.int32, (2, 3), dimension),
        jax.lax.broadcasted_iota(np.int32, (2, 3), dimension),
    )
    with pytest.raises(TypeError, match="broadcasted_iota: dimension must be an int"):
        ri.lax.broadcasted_iota(np.int32, (2, 3), 0.5)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_reduce_window_larger_than_operand_is_empty(backend):
    # JAX 0.10.2 (XLA's shape rule): a window that fits nowhere gives an empty result
    if backend == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()

    def f(L, a):
        return L.reduce_window(a, np.float32(0), L.add, (3, 1), (1, 1), "VALID")

    want = f(jax.lax, _A)
    got = ri.jit(lambda a: f(ri.lax, a), backend=backend)(_A)
    assert got.shape == want.shape == (0, 3)
    np.testing.assert_array_equal(ri.grad(lambda a: f(ri.lax, a).sum())(_A), np.zeros_like(_A))
