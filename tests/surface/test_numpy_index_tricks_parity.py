"""jnp's index objects as JAX's tests/lax_numpy_test.py uses them: ``r_`` and
``c_`` with a leading string directive (``"axis,ndmin,trans1d"``, ``"r"``,
``"c"``, and the ValueError for one it cannot read), ``mgrid``/``ogrid``
promoting their ranges to one dtype, and the empty ``mgrid[()]``. Compared
with JAX 0.10.2 on both backends."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import refimpl.numpy as rnp


def _same(got, want):
    got, want = (
        list(got) if isinstance(got, list) else [got],
        list(want) if isinstance(want, list) else [want],
    )
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.aval.weak_type == w.aval.weak_type
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


_A = np.arange(6).reshape(2, 3)
_CASES = [
    ("-1", _A, _A),
    ("1", _A, _A),
    ("0", [1, 2], [3]),
    ("0,2", [1, 2, 3], [4, 5, 6]),
    ("0,2,0", [1, 2, 3], [4, 5, 6]),
    ("1,2,0", [1, 2, 3], [4, 5, 6]),
    ("0,4,-1", [1, 2, 3], [4, 5, 6]),
    ("0,4,-2", [1, 2, 3], [4, 5, 6]),
    ("0,2", slice(0, 3), [4, 5, 6]),
    ("r", [1, 2, 3], [4, 5, 6]),
    ("c", [1, 2, 3], [4, 5, 6]),
]


@pytest.mark.parametrize("name", ["r_", "c_"])
@pytest.mark.parametrize("case", _CASES, ids=lambda c: repr(c[0]))
def test_concatenator_directives(backend, name, case):
    _same(getattr(rnp, name)[case], getattr(jnp, name)[case])


@pytest.mark.parametrize("name", ["r_", "c_"])
def test_concatenator_bad_directive(backend, name):
    with pytest.raises(ValueError, match="could not understand directive"):
        getattr(jnp, name)["asdfgh", [1, 2, 3]]
    with pytest.raises(ValueError, match="could not understand directive"):
        getattr(rnp, name)["asdfgh", [1, 2, 3]]


@pytest.mark.parametrize("name", ["mgrid", "ogrid"])
@pytest.mark.parametrize(
    "key",
    [
        (slice(0, 2), slice(0.5, 1.5)),
        (slice(1, 6, 8j), slice(2, 4)),
        (slice(0, 3), slice(0, 1, 3j)),
    ],
    ids=str,
)
def test_grids_promote_their_ranges(backend, name, key):
    _same(getattr(rnp, name)[key], getattr(jnp, name)[key])


def test_empty_grids(backend):
    _same(rnp.mgrid[()], jnp.mgrid[()])
    assert rnp.ogrid[()] == [] == jnp.ogrid[()]
