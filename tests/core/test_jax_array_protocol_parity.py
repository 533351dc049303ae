"""Objects defining ``__jax_array__`` in jnp, jnp.linalg, jnp.fft and lax
functions, eagerly and under jit, compared with JAX 0.10.2 live on both
backends (api_test.py's test_dunder_jax_array_bug; refimpl/jax_array_protocol.py).

A registered pytree class is converted by every jnp function; a plain class
is refused (JAX's ValueError) where the jnp function is a jit in JAX, and
converted where it is not; a lax function refuses both, but
convert_element_type and full_like."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _classes(tree_util):
    class Plain:
        def __init__(self, x):
            self.x = x

        def __jax_array__(self):
            return self.x

        ndim = property(operator.attrgetter("x.ndim"))
        dtype = property(operator.attrgetter("x.dtype"))
        shape = property(operator.attrgetter("x.shape"))

    @tree_util.register_pytree_node_class
    class Tree(Plain):
        def tree_flatten(self):
            return (self.x,), None

        @classmethod
        def tree_unflatten(cls, _, children):
            return cls(*children)

    return {"tree": Tree, "plain": Plain}


_M = np.arange(9.0, dtype=np.float32).reshape(3, 3) / 4
_V = np.array([0.5, 1.5, 2.5], np.float32)
_I = np.array([0, 2], np.int32)

# name -> program(lib, np module, W): W wraps an array in the class under test
PROGRAMS = {
    "matmul": lambda lib, np_, W: np_.matmul(W(np_.asarray(_M)), W(np_.asarray(_M))),
    "jit_matmul": lambda lib, np_, W: lib.jit(np_.matmul)(W(np_.asarray(_M)), W(np_.asarray(_M))),
    "sin": lambda lib, np_, W: np_.sin(W(np_.asarray(_V))),
    "jit_sin": lambda lib, np_, W: lib.jit(np_.sin)(W(np_.asarray(_V))),
    "grad_of_jit": lambda lib, np_, W: lib.grad(lib.jit(lambda x: np_.sin(x).sum()))(
        W(np_.asarray(_V))
    ),
    "vmap_sin": lambda lib, np_, W: lib.vmap(np_.sin)(W(np_.asarray(_M))),
    "sum_where": lambda lib, np_, W: np_.sum(np_.asarray(_M), where=W(np_.asarray(_M > 1))),
    "argmax": lambda lib, np_, W: np_.argmax(W(np_.asarray(_M))),
    "reshape": lambda lib, np_, W: np_.reshape(W(np_.asarray(_M)), (9,)),
    "einsum": lambda lib, np_, W: np_.einsum("ii->i", W(np_.asarray(_M))),
    "take_indices": lambda lib, np_, W: np_.take(np_.asarray(_V), W(np_.asarray(_I))),
    "concatenate_list": lambda lib, np_, W: np_.concatenate([W(np_.asarray(_V))] * 2),
    "concatenate_object": lambda lib, np_, W: np_.concatenate(W(np_.asarray(_M))),
    "hstack_list": lambda lib, np_, W: np_.hstack([W(np_.asarray(_V))] * 2),
    "block": lambda lib, np_, W: np_.block([[W(np_.asarray(_M))] * 2]),
    "ufunc_reduce": lambda lib, np_, W: np_.add.reduce(W(np_.asarray(_M))),
    "linalg_solve": lambda lib, np_, W: np_.linalg.solve(W(np_.asarray(_M + 3 * np.eye(3))), _V),
    "linalg_matmul": lambda lib, np_, W: np_.linalg.matmul(W(np_.asarray(_M)), _M),
    "fft": lambda lib, np_, W: np_.fft.fft(W(np_.asarray(_V))),
    "lax_sin": lambda lib, np_, W: lib.lax.sin(W(np_.asarray(_V))),
    "lax_convert": lambda lib, np_, W: lib.lax.convert_element_type(W(np_.asarray(_V)), np.int32),
    "index_by_it": lambda lib, np_, W: np_.asarray(_V)[W(np_.asarray(_I))],
    "operator": lambda lib, np_, W: np_.asarray(_V) * W(np_.asarray(_V)),
}


def _outcome(lib, np_, kind, program):
    W = _classes(lib.tree_util)[kind]
    try:
        out = program(lib, np_, W)  # (grad gives a Tree back)
        return "ok", [np.asarray(leaf).tolist() for leaf in lib.tree_util.tree_leaves(out)]
    except Exception as e:  # noqa: BLE001 - the class is compared
        return type(e).__name__, None


@pytest.mark.parametrize("kind", ["tree", "plain"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jax_array_operands_as_jax(backend, name, kind):
    want = _outcome(jax, jnp, kind, PROGRAMS[name])
    got = _outcome(ri, rnp, kind, PROGRAMS[name])
    assert got[0] == want[0]
    if want[0] == "ok":
        for g, w in zip(got[1], want[1], strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_the_refusal_in_jaxs_words(backend):
    W = _classes(ri.tree_util)["plain"]
    with pytest.raises(ValueError, match=r"Triggering __jax_array__\(\) during abstractification"):
        rnp.sin(W(rnp.asarray(_V)))
