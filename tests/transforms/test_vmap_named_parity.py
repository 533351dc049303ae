"""Named-axis programs under vmap and the batch rules of composite-lowered
elementwise primitives, compared with JAX 0.10.2 on both backends: all_to_all
over a tuple of axis names (members numbered row-major over the names, in
every order of the names and the vmaps, with grad), and betainc / igamma /
random_gamma_grad under vmap with an unbatched operand of lower rank (the
pjrt lowering's program gets operands of different shapes)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
import refimpl.scipy.special as rsp
from refimpl import lax

SIZES = {"i": 2, "j": 3, "k": 2}


def _nested(vmap, f, out_axes):
    """``f`` under vmaps named i (outer), j, k (inner), each over axis 0."""
    inner = vmap(f, axis_name="k")
    middle = vmap(inner, axis_name="j", out_axes=out_axes)
    return vmap(middle, axis_name="i", out_axes=out_axes)


def _all_to_all_case(api, vmap, grad, x, names, split, concat, tiled):
    out_axes = 1 if split == concat else 0
    f = _nested(vmap, lambda v: api.all_to_all(v, names, split, concat, tiled=tiled), out_axes)
    y = f(x)
    weights = np.arange(y.size, dtype=np.float32).reshape(y.shape)
    return y, grad(lambda v: (f(v) * weights).sum())(x)


@pytest.mark.parametrize(
    "names,split,concat,tiled",
    [
        (("j", "i"), 0, 0, True),
        (("i", "j", "k"), 0, 1, True),
        (("k", "i"), 1, 0, True),
        (("i", "j", "k"), 1, 0, False),
        (("k", "j", "i"), 0, 0, False),
    ],
)
def test_all_to_all_over_several_names_matches_jax(backend, names, split, concat, tiled):
    n = int(np.prod([SIZES[a] for a in names]))
    block = 2 if tiled else 1
    member = (n * block, 5) if split == 0 else (5, n * block)
    x = np.arange(12 * n * block * 5, dtype=np.float32).reshape(2, 3, 2, *member)
    want = _all_to_all_case(jax.lax, jax.vmap, jax.grad, x, names, split, concat, tiled)
    got = _all_to_all_case(lax, ri.vmap, ri.grad, x, names, split, concat, tiled)
    for w, g in zip(want, got, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("vmap_axis,split,concat", [(0, 0, 0), (1, 1, 0), (2, 0, 1), (1, 1, 1)])
def test_all_to_all_split_over_two_vmaps_matches_jax(backend, vmap_axis, split, concat):
    x = np.arange(64).reshape(4, 4, 4)
    shape = list(x.shape)
    shape[vmap_axis : vmap_axis + 1] = (2, 2)
    x = x.reshape(shape)

    def run(api, vmap, v):
        f = lambda u: api.all_to_all(u, ("i", "j"), split, concat)  # noqa: E731
        inner = vmap(f, in_axes=vmap_axis, axis_name="j")
        return vmap(inner, in_axes=vmap_axis, axis_name="i")(v)

    want = np.asarray(run(jax.lax, jax.vmap, x))
    for got in (run(lax, ri.vmap, x), ri.jit(lambda v: run(lax, ri.vmap, v))(x)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)


def test_all_to_all_over_names_needs_a_divisible_split_axis():
    x = np.ones((2, 3, 5), np.float32)
    f = lambda v: lax.all_to_all(v, ("i", "j"), 0, 0, tiled=True)  # noqa: E731
    with pytest.raises(ValueError, match="divisible"):
        ri.vmap(ri.vmap(f, axis_name="j"), axis_name="i")(np.ones((2, 3, 5), np.float32))
    with pytest.raises(ValueError):
        jax.vmap(jax.vmap(lambda v: jax.lax.all_to_all(v, ("i", "j"), 0, 0, tiled=True),
                          axis_name="j"), axis_name="i")(x)  # fmt: skip


X23 = np.random.RandomState(0).uniform(0.1, 0.9, (2, 3)).astype(np.float32)

SPECIAL_CASES = {
    # a and b unbatched of rank 1 and 0, x batched
    "betainc": (
        lambda x: jsp.betainc(jnp.ones(3), 1.0, x),
        lambda x: rsp.betainc(rnp.ones(3), 1.0, x),
    ),
    "betainc_scalars": (
        lambda x: jax.lax.betainc(np.float32(2), np.float32(3), x),
        lambda x: lax.betainc(np.float32(2), np.float32(3), x),
    ),
    "igamma": (
        lambda x: jax.lax.igamma(np.float32(2), x),
        lambda x: lax.igamma(np.float32(2), x),
    ),
    "igammac_size1_dims": (
        lambda x: jax.lax.igammac(np.ones((1,), np.float32) * 2, x),
        lambda x: lax.igammac(np.ones((1,), np.float32) * 2, x),
    ),
    "random_gamma_grad": (
        lambda x: jax.lax.random_gamma_grad(np.float32(2), x),
        lambda x: lax.random_gamma_grad(np.float32(2), x),
    ),
}


@pytest.mark.parametrize("case", sorted(SPECIAL_CASES))
def test_composite_special_functions_under_vmap_match_jax(backend, case):
    jf, rf = SPECIAL_CASES[case]
    want = jax.vmap(jf)(X23)
    for got in (ri.vmap(rf)(X23), ri.jit(ri.vmap(rf))(X23)):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("axes", [(1, None), (None, 0), (1, 0)])
def test_conv_with_batch_groups_over_an_empty_batch_matches_jax(backend, axes):
    """batch_group_count > 1 batches by a loop over the members; with none, the
    result is empty of the members' type (it indexed an empty list)."""
    lhs = np.ones((2, 0, 1, 6, 7) if axes[0] == 1 else (2, 1, 6, 7), np.float32)
    rhs = np.ones((0, 4, 1, 1, 2) if axes[1] == 0 else (4, 1, 1, 2), np.float32)

    def conv(api):
        return lambda a, b: api.conv_general_dilated(
            a, b, (1, 2), ((1, 0), (0, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"),
            batch_group_count=2,
        )  # fmt: skip

    want = jax.vmap(conv(jax.lax), axes)(lhs, rhs)
    f = ri.vmap(conv(lax), axes)
    for got in (f(lhs, rhs), ri.jit(f)(lhs, rhs)):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.weak_type == want.weak_type


@pytest.mark.parametrize("spmd", ["x", ("x", "y")])
def test_spmd_axis_name_is_accepted_as_jax(backend, spmd):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = jax.vmap(lambda v: jax.lax.psum(v, "i"), axis_name="i", spmd_axis_name=spmd)(x)
    f = ri.vmap(lambda v: lax.psum(v, "i"), axis_name="i", spmd_axis_name=spmd)
    for got in (f(x), ri.jit(f)(x)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_spmd_axis_name_unhashable_is_a_type_error():
    with pytest.raises(TypeError):
        jax.vmap(lambda v: v, spmd_axis_name=["x"])(np.ones(2))
    with pytest.raises(TypeError, match="spmd_axis_name"):
        ri.vmap(lambda v: v, spmd_axis_name=["x"])(np.ones(2))


OUT_AXES_ERRORS = {
    "out_axes_past_the_rank": (lambda v: v, 0, -4, np.ones((3, 4, 5), np.float32)),
    "out_axes_of_an_unmapped_scalar": (lambda *v: v, (0, None), (0, -2), None),
}


@pytest.mark.parametrize("case", sorted(OUT_AXES_ERRORS))
def test_out_axes_out_of_bounds_says_what_jax_says(case):
    fun, in_axes, out_axes, x = OUT_AXES_ERRORS[case]
    args = (x,) if x is not None else (np.arange(5), 7)
    with pytest.raises(ValueError) as want:
        jax.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*args)
    with pytest.raises(ValueError) as got:
        ri.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*args)
    assert str(got.value).startswith(str(want.value))


def test_a_non_array_output_says_what_jax_says():
    x = np.arange(5)
    with pytest.raises(TypeError) as want:
        jax.vmap(lambda v: "hello")(x)
    with pytest.raises(TypeError) as got:
        ri.vmap(lambda v: "hello")(x)
    assert str(got.value).startswith(str(want.value))


AXIS_INDEX_NAMES = [("i", "j"), ("j", "i"), ["j", "i"], ("j",), ()]


@pytest.mark.parametrize("names", AXIS_INDEX_NAMES, ids=str)
def test_axis_index_of_several_names_matches_jax(backend, names):
    """Members numbered row-major over the names, the first the slowest."""
    x = np.zeros((2, 3), np.int32)

    def run(api, vmap):
        inner = vmap(lambda v: v + api.axis_index(names), axis_name="j")
        return vmap(inner, axis_name="i")

    want = run(jax.lax, jax.vmap)(x)
    for got in (run(lax, ri.vmap)(x), ri.jit(run(lax, ri.vmap))(x)):
        assert got.dtype == want.dtype and got.weak_type == want.weak_type
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("collective", ["psum", "pmax", "pmean"])
def test_collectives_under_vmap_of_a_device_array_match_jax(backend, collective):
    # The operand lives on the backend (rnp.asarray), so the batch rule's eager
    # reduction runs there under the bound axis: on pjrt its one-primitive jit must
    # not be handed back to itself as an equation (it recursed without end).
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    want = jax.vmap(lambda v: getattr(jax.lax, collective)(v, "i"), axis_name="i")(x)
    f = ri.vmap(lambda v: getattr(lax, collective)(v, "i"), axis_name="i")
    for got in (f(rnp.asarray(x)), ri.jit(f)(rnp.asarray(x))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
