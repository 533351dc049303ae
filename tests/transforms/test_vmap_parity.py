"""vmap and named axes behave as in JAX 0.10.2 (issue 29, class 7): empty
batches, transforms over no axes, JAX's errors for out_axes=None and unbound
axis names. Each case runs on both backends and is compared with JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax

BACKENDS = ["ref", "pjrt"]


def _conv(lax_, lhs, rhs):
    return lax_.conv(lhs, rhs, (1,), "VALID")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axes", [(0, 0), (0, None), (None, 0)])
def test_conv_batching_with_batch_size_zero(backend, axes):
    lhs = np.zeros((0, 1, 1, 4) if axes[0] == 0 else (1, 1, 4), np.float32)
    rhs = np.zeros((0, 1, 1, 2) if axes[1] == 0 else (1, 1, 2), np.float32)
    want = jax.vmap(lambda a, b: _conv(jlax, a, b), in_axes=axes)(lhs, rhs)
    f = ri.vmap(lambda a, b: _conv(lax, a, b), in_axes=axes)
    for got in (f(lhs, rhs), ri.jit(f, backend=backend)(lhs, rhs)):
        assert got.shape == want.shape and got.dtype == want.dtype


@pytest.mark.parametrize("backend", BACKENDS)
def test_fft_with_empty_fft_lengths_is_the_identity(backend):
    x = (np.arange(6.0) + 1j).reshape(2, 3).astype(np.complex64)
    want = jlax.fft(x, "FFT", ())
    for got in (
        lax.fft(x, "FFT", ()),
        ri.jit(lambda v: lax.fft(v, "FFT", ()), backend=backend)(x),
        ri.vmap(lambda v: lax.fft(v, "FFT", ()))(x),
    ):
        assert isinstance(got, ri.Array)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert got.dtype == want.dtype


def test_out_axes_none_with_a_batched_output_is_jaxs_value_error():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="got axis spec None but output was batched"):
        jax.vmap(lambda v: v * 2, out_axes=None)(x)
    with pytest.raises(ValueError, match="got axis spec None but output was batched"):
        ri.vmap(lambda v: v * 2, out_axes=None)(x)
    # an unbatched output is returned once
    assert float(ri.vmap(lambda v: 3.0, out_axes=None)(x)) == 3.0


def test_all_none_in_axes_needs_axis_size():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        ri.vmap(lambda v: v, in_axes=None)(x)
    got = ri.vmap(lambda v: v * 2, in_axes=None, axis_size=3)(x)
    want = jax.vmap(lambda v: v * 2, in_axes=None, axis_size=3)(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("backend", BACKENDS)
def test_axis_index_outside_a_named_axis_is_a_name_error(backend):
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.axis_index("i")
    with pytest.raises(NameError, match="unbound axis name: i"):
        ri.jit(lambda: lax.axis_index("i"), backend=backend)()
    # the axis environment is not kept from an earlier call under vmap
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(
        np.asarray(ri.vmap(lambda v: lax.axis_index("i"), axis_name="i")(x)), [0, 1]
    )
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.axis_index("i")


def _types(tree, leaves):
    return [(a.shape, np.dtype(a.dtype), bool(a.weak_type)) for a in leaves(tree)]


def test_batched_programs_keep_weak_constants_weak(backend):
    """A program's weakly typed constant stays weak when vmap batches the
    program (it was read back as a strong NumPy array): vmap(jit(f)) with a
    closed-over weak scalar, and the nested Jacobians of a cond, whose
    batched branches then disagreed in weak type (a TypeError)."""

    def run(m, np_, lax_):
        c0 = np_.asarray(2.0)
        f = lambda x: lax_.cond(x > 0, np_.sin, np_.cos, x)  # noqa: E731
        outs = [
            m.vmap(m.jit(lambda x: (x, c0 + 1)))(np_.ones(3, np_.float32)),
            m.hessian(f)(1.0),
            m.jacfwd(m.jacrev(f))(1.0),
            m.jit(m.jacrev(m.jacrev(f)))(1.0),
            m.vmap(lambda t: m.jvp(m.grad(f), (1.0,), (t,)))(np_.ones(2, np_.float32)),
        ]
        return [(_types(o, m.tree_util.tree_leaves), np.asarray(o).round(5).tolist())
                for o in (m.tree_util.tree_leaves(outs))]  # fmt: skip

    assert run(ri, rnp, lax) == run(jax, jnp, jlax)


# ids by hand: object()'s repr holds its address, which differs between xdist workers
@pytest.mark.parametrize(
    "value",
    ["a", object(), [1.0], np.float32(1), 1.0],
    ids=["str", "object", "list", "np_float32", "float"],
)
def test_a_mapped_non_array_is_a_type_error_before_the_rank(value):
    """vmap checks a mapped argument's type before its rank, as JAX: a string
    or an object is the TypeError 'not a valid JAX type' (refimpl raised the
    rank-0 ValueError); a scalar stays the ValueError."""

    def raised(m):
        try:
            m.vmap(lambda x: x)(value)
        except Exception as error:  # noqa: BLE001 - the class is compared
            return type(error)
        return None

    assert raised(ri) is raised(jax) is not None
