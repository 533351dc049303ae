"""linear_transpose's cotangent checks in JAX 0.10.2's words (its tests
match them): a cotangent tree or type other than the output's is a
TypeError naming it, on both backends."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import refimpl as ri


@pytest.mark.parametrize(
    ("ct", "words"),
    [
        ([1.0, 2.0], "cotangent tree does not match function output"),
        ((np.ones(2, np.float32), 1.0), "cotangent type does not match function output"),
    ],
)
def test_cotangent_mismatch_words(backend, ct, words):
    def f(x):
        return x, x * 2.0

    with pytest.raises(TypeError, match=words):
        ri.linear_transpose(f, 1.0)(ct)
    with pytest.raises(TypeError, match=words):
        jax.linear_transpose(f, 1.0)(ct)
