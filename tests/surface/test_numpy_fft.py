"""``rnp.fft`` and the ``fft`` primitive against ``jax.numpy.fft`` / ``jax.lax.fft``:
every function, norms, ``n``/``s`` (cut and padded), axes, dtypes (float32,
complex64, int32, bfloat16 and float16 promoting), empty and rank-0 edges,
on the reference backend and under ``ri.jit(..., backend="pjrt")``; the
primitive's transposes against ``jax.grad``; ``vmap``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.primitives.fft import fft as lax_fft
from tests.helpers.pjrt_helpers import skip_without_pjrt
from tests.surface.test_numpy_surface import BF16, F16, I32, assert_same, rand

jax.config.update("jax_platforms", "cpu")

XR = rand((3, 4, 5), seed=1)
XC = (rand((3, 4, 5), seed=2) + 1j * rand((3, 4, 5), seed=3)).astype(np.complex64)
TOL = 2e-4


def run(fn, *arrays, tol=TOL):
    expected = fn(jnp.fft, *arrays)
    assert_same(fn(rnp.fft, *arrays), expected, tol, "ref")
    skip_without_pjrt()
    assert_same(ri.jit(lambda *a: fn(rnp.fft, *a), backend="pjrt")(*arrays), expected, tol, "pjrt")


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_one_axis(norm):
    run(
        lambda m, x, y: (
            m.fft(x, norm=norm),
            m.fft(x, n=7, axis=1, norm=norm),
            m.fft(x, n=3, norm=norm),
            m.ifft(x, n=6, axis=0, norm=norm),
            m.rfft(y, norm=norm),
            m.rfft(y, n=8, axis=1, norm=norm),
            m.irfft(x, norm=norm),
            m.irfft(x, n=7, axis=1, norm=norm),
            m.hfft(x, norm=norm),
            m.ihfft(y, norm=norm),
        ),
        XC,
        XR,
    )


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_several_axes(norm):
    run(
        lambda m, x, y: (
            m.fftn(x, norm=norm),
            m.ifftn(x, s=(2, 6), norm=norm),
            m.rfftn(y, norm=norm),
            m.irfftn(x, norm=norm),
            m.fft2(x, norm=norm),
            m.ifft2(x, axes=(0, 2), norm=norm),
            m.rfft2(y, s=(3, 6), norm=norm),
            m.irfft2(x, s=(5, 4), norm=norm),
            m.fftn(x, axes=(2, 0), norm=norm),
        ),
        XC,
        XR,
    )


def test_more_than_three_axes():
    x = rand((2, 3, 2, 3, 2), seed=4)
    run(lambda m, v: (m.fftn(v), m.rfftn(v), m.irfftn(m.rfftn(v), s=v.shape)), x, tol=1e-3)


def test_dtypes_and_edges():
    run(lambda m, x: (m.fft(x), m.rfft(x)), rand((6,), I32))
    run(lambda m, x: (m.fft(x), m.irfft(x)), rand((2, 6), BF16), tol=5e-2)
    run(lambda m, x: (m.fft(x), m.ifft(x)), rand((2, 6), F16), tol=2e-2)
    for module in (jnp.fft, rnp.fft):  # XLA's real transform takes float32/float64 only
        with pytest.raises(ValueError, match="float32 or float64"):
            module.rfft(rand((6,), F16))
    run(lambda m, x: m.fft(x, axis=0), XR[:, :0, 0])
    run(lambda m, x: m.fftn(x, axes=()), XC)


def test_freqs_and_shifts():
    run(
        lambda m: (m.fftfreq(7), m.fftfreq(8, 0.5), m.rfftfreq(7), m.rfftfreq(8, 2.0)),
    )
    run(
        lambda m, x: (
            m.fftshift(x),
            m.ifftshift(x),
            m.fftshift(x, axes=1),
            m.ifftshift(x, axes=(0, 2)),
        ),
        XR,
    )


PRIMITIVE = [
    ("FFT", XC, (5,)),
    ("IFFT", XC, (4, 5)),
    ("RFFT", XR, (4, 5)),
    ("RFFT", XR, (5,)),
    ("IRFFT", XC[..., :3], (4, 5)),
    ("IRFFT", XC[..., :3], (4,)),
    ("IRFFT", XC[..., :4], (3, 4, 7)),
]


@pytest.mark.parametrize("kind, x, lengths", PRIMITIVE)
def test_primitive_transposes_against_jax(kind, x, lengths):
    expected = jax.lax.fft(x, kind, lengths)
    assert_same(lax_fft(x, kind, lengths), expected, TOL, "value")
    rng = np.random.default_rng(0)
    weights = rng.standard_normal(expected.shape).astype(np.float32)
    if np.iscomplexobj(expected):
        weights = (weights + 1j * rng.standard_normal(expected.shape)).astype(expected.dtype)

    def loss(module, fft):
        return lambda v: module.real(module.sum(fft(v, kind, lengths) * weights))

    expected_grad = jax.grad(loss(jnp, jax.lax.fft))(x)
    assert_same(ri.grad(loss(rnp, lax_fft))(x), expected_grad, 1e-3, "grad")
    stacked = np.stack([x, x * 2])
    assert_same(
        ri.vmap(lambda v: lax_fft(v, kind, lengths))(stacked),
        jax.vmap(lambda v: jax.lax.fft(v, kind, lengths))(stacked),
        TOL,
        "vmap",
    )
    skip_without_pjrt()
    assert_same(
        ri.jit(ri.grad(loss(rnp, lax_fft)), backend="pjrt")(x), expected_grad, 1e-3, "pjrt grad"
    )


def test_grad_through_numpy_fft():
    def loss(m, x):
        return m.abs(m.fft.rfft2(x, norm="ortho")).sum() + m.fft.irfft(m.fft.fft(x)).sum()

    expected = jax.grad(lambda x: loss(jnp, x))(XR)
    assert_same(ri.grad(lambda x: loss(rnp, x))(XR), expected, 1e-3, "grad")


def test_lax_fft_and_fft_type():
    x = XC[0]
    for kind in ri.lax.FftType:
        assert int(kind) == int(getattr(jax.lax.FftType, kind.name))
    assert_same(
        ri.lax.fft(x, ri.lax.FftType.IFFT, (4, 5)),
        jax.lax.fft(x, jax.lax.FftType.IFFT, (4, 5)),
        TOL,
    )
    with pytest.raises(ValueError, match="fft: fft_type must be"):  # JAX 0.10.2: ValueError
        ri.lax.fft(x, "DCT", (5,))


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="fft: norm must be"):
        rnp.fft.fft(XC, norm="bogus")
    with pytest.raises(TypeError, match="rfft: the input must be real"):
        rnp.fft.rfft(XC)
    with pytest.raises(ValueError, match="fftn: s and axes must have one entry each"):
        rnp.fft.fftn(XC, s=(2, 3), axes=(0,))
    with pytest.raises(ValueError, match="fft: invalid number of data points"):
        rnp.fft.fft(XC, n=0)
    with pytest.raises(ValueError, match="fftn: repeated axes"):
        rnp.fft.fftn(XC, axes=(0, 0))
