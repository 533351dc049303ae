"""Random parameters for the rules with the most index arithmetic (conv,
dot_general, pad, slice): the transpose rules against ``jax.vjp`` and the
jvp rules against ``jax.jvp``, applied eagerly (hypothesis; a few examples
by default, many under ``-m slow``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax as jlax

from refimpl.primitives import linalg as L
from refimpl.primitives import structural as S
from refimpl.transforms.jit import make_program
from tests.transforms.test_ad_rules import F32, check_jvp, check_transpose

FEW = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
MANY = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def conv_configs(draw):
    nspatial = draw(st.integers(1, 2))
    groups_kind = draw(st.sampled_from(["none", "feature", "batch"]))
    groups = draw(st.integers(2, 3)) if groups_kind != "none" else 1
    batch = draw(st.integers(1, 2)) * (groups if groups_kind == "batch" else 1)
    in_features = draw(st.integers(1, 2))
    out_features = draw(st.integers(1, 2)) * groups
    lhs_features = in_features * (groups if groups_kind == "feature" else 1)
    kernel = [draw(st.integers(1, 3)) for _ in range(nspatial)]
    rhs_dilation = [draw(st.integers(1, 2)) for _ in range(nspatial)]
    lhs_dilation = [draw(st.integers(1, 2)) for _ in range(nspatial)]
    strides = [draw(st.integers(1, 3)) for _ in range(nspatial)]
    spatial, padding = [], []
    for k, rd, ld in zip(kernel, rhs_dilation, lhs_dilation, strict=True):
        window = (k - 1) * rd + 1
        n = draw(st.integers(max(1, window - 2), window + 4))
        dilated = (n - 1) * ld + 1
        lo = draw(st.integers(-1, 2))
        hi = draw(st.integers(-1, 2))
        # the padded input must hold at least one window
        while dilated + lo + hi < window:
            hi += 1
        spatial.append(n)
        padding.append((lo, hi))
    lhs_perm = draw(st.permutations(range(nspatial + 2)))
    rhs_perm = draw(st.permutations(range(nspatial + 2)))
    out_perm = draw(st.permutations(range(nspatial + 2)))
    logical_lhs = [batch, lhs_features, *spatial]
    logical_rhs = [out_features, in_features, *kernel]
    lhs_shape = [0] * (nspatial + 2)
    rhs_shape = [0] * (nspatial + 2)
    for logical, dim in enumerate(lhs_perm):
        lhs_shape[dim] = logical_lhs[logical]
    for logical, dim in enumerate(rhs_perm):
        rhs_shape[dim] = logical_rhs[logical]
    return dict(
        lhs_shape=tuple(lhs_shape),
        rhs_shape=tuple(rhs_shape),
        window_strides=tuple(strides),
        padding=tuple(padding),
        lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=(tuple(lhs_perm), tuple(rhs_perm), tuple(out_perm)),
        feature_group_count=groups if groups_kind == "feature" else 1,
        batch_group_count=groups if groups_kind == "batch" else 1,
    )


def _conv_by_explicit_pad(a, b, dims, config):
    """The spec's convolution with negative padding, in JAX: lax.pad (dilation
    as interior padding, negative edges crop) then a convolution without
    padding. XLA CPU's convolution with a negative low padding computes
    something else (see tests/surface/test_linalg.py)."""
    edges = [(0, 0, 0)] * a.ndim
    for axis, (lo, hi), d in zip(dims.lhs_spec[2:], config["padding"], config["lhs_dilation"]):
        edges[axis] = (lo, hi, d - 1)
    nspatial = len(config["padding"])
    rest = dict(config, padding=((0, 0),) * nspatial, lhs_dilation=(1,) * nspatial)
    padded = jlax.pad(a, np.zeros((), a.dtype), edges)
    return jlax.conv_general_dilated(
        padded, b, dimension_numbers=dims, precision=jlax.Precision.HIGHEST, **rest
    )


def _conv_check(config, seed):
    rng = np.random.default_rng(seed)
    config = dict(config)
    lhs_shape, rhs_shape = config.pop("lhs_shape"), config.pop("rhs_shape")
    lhs = rng.normal(size=lhs_shape).astype(F32)
    rhs = rng.normal(size=rhs_shape).astype(F32)
    dims = jlax.ConvDimensionNumbers(*config.pop("dimension_numbers"))

    def jax_fn(a, b):
        if any(lo < 0 or hi < 0 for lo, hi in config["padding"]):
            return _conv_by_explicit_pad(a, b, dims, config)
        return jlax.conv_general_dilated(
            a, b, dimension_numbers=dims, precision=jlax.Precision.HIGHEST, **config
        )

    out_shape = np.shape(jax_fn(lhs, rhs))
    if 0 in out_shape:
        return
    program = make_program(
        lambda a, b: L.conv_general_dilated(a, b, dimension_numbers=tuple(dims), **config)
    )(lhs, rhs)
    (eqn,) = program.eqns
    params = eqn.params
    tl, tr = rng.normal(size=lhs_shape).astype(F32), rng.normal(size=rhs_shape).astype(F32)
    check_jvp(L.conv_general_dilated_p, [lhs, rhs], [tl, tr], jax_fn, F32, **params)
    ct = rng.normal(size=out_shape).astype(F32)
    check_transpose(L.conv_general_dilated_p, [lhs, rhs], [0], jax_fn, ct, F32, **params)
    check_transpose(L.conv_general_dilated_p, [lhs, rhs], [1], jax_fn, ct, F32, **params)


@FEW
@given(conv_configs(), st.integers(0, 2**16))
def test_conv_rules_random(config, seed):
    _conv_check(config, seed)


@pytest.mark.slow
@MANY
@given(conv_configs(), st.integers(0, 2**16))
def test_conv_rules_random_many(config, seed):
    _conv_check(config, seed)


@st.composite
def dot_configs(draw):
    nbatch, ncontract = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    lfree, rfree = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    sizes = st.integers(1, 3)
    batch = [draw(sizes) for _ in range(nbatch)]
    contract = [draw(sizes) for _ in range(ncontract)]
    lhs_dims = draw(st.permutations(range(nbatch + ncontract + lfree)))
    rhs_dims = draw(st.permutations(range(nbatch + ncontract + rfree)))
    lhs_shape = [0] * len(lhs_dims)
    rhs_shape = [0] * len(rhs_dims)
    lb, lc = lhs_dims[:nbatch], lhs_dims[nbatch : nbatch + ncontract]
    rb, rc = rhs_dims[:nbatch], rhs_dims[nbatch : nbatch + ncontract]
    for d, n in zip(lb, batch, strict=True):
        lhs_shape[d] = n
    for d, n in zip(rb, batch, strict=True):
        rhs_shape[d] = n
    for d, n in zip(lc, contract, strict=True):
        lhs_shape[d] = n
    for d, n in zip(rc, contract, strict=True):
        rhs_shape[d] = n
    for d in lhs_dims[nbatch + ncontract :]:
        lhs_shape[d] = draw(sizes)
    for d in rhs_dims[nbatch + ncontract :]:
        rhs_shape[d] = draw(sizes)
    dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    return tuple(lhs_shape), tuple(rhs_shape), dims


@FEW
@given(dot_configs(), st.integers(0, 2**16))
def test_dot_general_rules_random(config, seed):
    lhs_shape, rhs_shape, dims = config
    rng = np.random.default_rng(seed)
    lhs = rng.normal(size=lhs_shape).astype(F32)
    rhs = rng.normal(size=rhs_shape).astype(F32)
    params = dict(dimension_numbers=dims, precision=None, preferred_element_type=None)

    def jax_fn(a, b):
        return jlax.dot_general(a, b, dims, precision=jlax.Precision.HIGHEST)

    tl, tr = rng.normal(size=lhs_shape).astype(F32), rng.normal(size=rhs_shape).astype(F32)
    check_jvp(L.dot_general_p, [lhs, rhs], [tl, tr], jax_fn, F32, **params)
    ct = np.asarray(rng.normal(size=np.shape(jax_fn(lhs, rhs)))).astype(F32)
    check_transpose(L.dot_general_p, [lhs, rhs], [0], jax_fn, ct, F32, **params)
    check_transpose(L.dot_general_p, [lhs, rhs], [1], jax_fn, ct, F32, **params)


@st.composite
def pad_and_slice_configs(draw):
    ndim = draw(st.integers(1, 3))
    shape = [draw(st.integers(0, 4)) for _ in range(ndim)]
    padding = []
    for n in shape:
        interior = draw(st.integers(0, 2))
        core = n + max(n - 1, 0) * interior
        lo = draw(st.integers(-min(core, 2), 2))
        hi = draw(st.integers(-min(core + lo, 2) if core + lo > 0 else 0, 2))
        padding.append((lo, hi, interior))
    starts, limits, strides = [], [], []
    for n in shape:
        start = draw(st.integers(0, n))
        limits.append(draw(st.integers(start, n)))
        starts.append(start)
        strides.append(draw(st.integers(1, 3)))
    return tuple(shape), tuple(padding), (tuple(starts), tuple(limits), tuple(strides))


@FEW
@given(pad_and_slice_configs(), st.integers(0, 2**16))
def test_pad_and_slice_rules_random(config, seed):
    shape, padding, (starts, limits, strides) = config
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype(F32)
    pv = np.float32(rng.normal())

    def jax_pad(a, b):
        return jlax.pad(a, b, padding)

    out = jax_pad(x, pv)
    ct = rng.normal(size=np.shape(out)).astype(F32)
    check_transpose(S.pad_p, [x, pv], [0, 1], jax_pad, ct, F32, padding_config=padding)

    def jax_slice(a):
        return jlax.slice(a, starts, limits, strides)

    params = dict(start_indices=starts, limit_indices=limits, strides=strides)
    ct = rng.normal(size=np.shape(jax_slice(x))).astype(F32)
    check_transpose(S.slice_p, [x], [0], jax_slice, ct, F32, **params)
    check_jvp(S.slice_p, [x], [ct.sum() + x], jax_slice, F32, **params)


@pytest.mark.slow
@MANY
@given(pad_and_slice_configs(), st.integers(0, 2**16))
def test_pad_and_slice_rules_random_many(config, seed):
    test_pad_and_slice_rules_random.hypothesis.inner_test(config, seed)
