"""Comparing refimpl's results with JAX's, leaf by leaf."""

from __future__ import annotations

import jax
import numpy as np


def assert_same_as_jax(got, want, rtol=1e-6, atol=0.0):
    """Same tree length, and per leaf the same shape, dtype, weak type and
    values within ``rtol``/``atol``."""
    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.aval.weak_type == w.aval.weak_type
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def assert_modes_same_as_jax(got, want, rtol=1e-6, atol=0.0):
    """``got`` and ``want`` map a mode name (eager, jit, vjp, ...) to its
    result: the same modes, each ``assert_same_as_jax``; a failure names
    its mode."""
    assert got.keys() == want.keys(), (sorted(got), sorted(want))
    for mode in want:
        try:
            assert_same_as_jax(got[mode], want[mode], rtol=rtol, atol=atol)
        except AssertionError as err:
            raise AssertionError(f"mode {mode!r}") from err
