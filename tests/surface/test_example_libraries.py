"""refimpl.example_libraries (``jax.example_libraries``): stax layers initialize
the same parameters from the same key as JAX's, apply to the same outputs, and
the optimizers produce the same update sequences."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.example_libraries import optimizers as jax_optimizers
from jax.example_libraries import stax as jax_stax

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.example_libraries import optimizers, stax


def _close(got, want, rtol=1e-6, atol=1e-6):
    got_leaves, got_tree = ri.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert len(got_leaves) == len(want_leaves), (got_tree, want_tree)
    for g, w in zip(got_leaves, want_leaves):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _model(lib):
    return lib.serial(
        lib.Conv(4, (3, 3), padding="SAME"), lib.BatchNorm(), lib.Relu,
        lib.MaxPool((2, 2), strides=(2, 2)), lib.AvgPool((2, 2), padding="SAME"),
        lib.Flatten, lib.Dense(8), lib.Gelu,
        lib.FanOut(2), lib.parallel(lib.Dense(3), lib.Dense(3)), lib.FanInSum,
        lib.LogSoftmax,
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_stax_same_params_and_outputs_as_jax(backend):
    ri.config.update("backend", backend)
    init, apply = _model(stax)
    jinit, japply = _model(jax_stax)
    shape, params = init(ri.random.PRNGKey(0), (2, 8, 8, 3))
    jshape, jparams = jinit(jax.random.PRNGKey(0), (2, 8, 8, 3))
    assert tuple(shape) == tuple(jshape)
    _close(params, jparams, rtol=0, atol=0)  # the same random streams: bit for bit
    x = np.random.default_rng(0).normal(size=(2, 8, 8, 3)).astype(np.float32)
    _close(ri.jit(apply)(params, x), japply(jparams, x), rtol=2e-5, atol=2e-5)


def test_stax_dropout_conv_transpose_and_shape_dependent():
    layers = lambda lib: lib.serial(  # noqa: E731
        lib.ConvTranspose(2, (2, 2), strides=(2, 2)), lib.Flatten,
        lib.shape_dependent(lambda s: lib.Dense(s[-1] // 2)), lib.Dropout(0.5),
        lib.FanOut(2), lib.FanInConcat(), lib.Tanh,
    )  # fmt: skip
    (init, apply), (jinit, japply) = layers(stax), layers(jax_stax)
    shape, params = init(ri.random.PRNGKey(1), (1, 3, 3, 2))
    jshape, jparams = jinit(jax.random.PRNGKey(1), (1, 3, 3, 2))
    assert tuple(shape) == tuple(jshape)
    _close(params, jparams, rtol=0, atol=0)
    x = np.ones((1, 3, 3, 2), np.float32)
    got = apply(params, x, rng=ri.random.PRNGKey(2))
    _close(got, japply(jparams, x, rng=jax.random.PRNGKey(2)), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="PRNG key"):
        apply(params, x)


OPTIMIZERS = [
    ("sgd", (0.1,)),
    ("momentum", (0.1, 0.9)),
    ("nesterov", (0.1, 0.9)),
    ("adagrad", (0.1,)),
    ("rmsprop", (0.05,)),
    ("rmsprop_momentum", (0.05,)),
    ("adam", (0.05,)),
    ("adamax", (0.05,)),
    ("sm3", (0.1,)),
]


@pytest.mark.parametrize("name, args", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
def test_optimizer_update_sequences_match_jax(name, args):
    params = {"w": np.array([[1.0, -2.0], [0.5, 3.0]], np.float32), "b": np.float32(0.25)}

    def loss(p, lib_np):
        return lib_np.sum(lib_np.tanh(p["w"]) ** 2) + p["b"] ** 2

    def run(lib, api, np_lib):
        init, update, get_params = getattr(lib, name)(*args)
        state = init(params)
        step = lambda i, s: update(i, api.grad(loss)(get_params(s), np_lib), s)  # noqa: E731
        if name != "sm3":  # sm3's state holds the parameter's shape: not traceable
            step = api.jit(step)
        history = []
        for i in range(4):
            state = step(i, state)
            history.append(get_params(state))
        return history

    got = run(optimizers, ri, rnp)
    want = run(jax_optimizers, jax, jnp)
    _close(got, want, rtol=2e-6, atol=1e-7)


def test_schedules_and_utilities_match_jax():
    schedules = [
        ("constant", (0.1,)),
        ("exponential_decay", (0.1, 10, 0.5)),
        ("inverse_time_decay", (0.1, 10, 0.5)),
        ("polynomial_decay", (0.1, 10, 0.01, 2.0)),
        ("piecewise_constant", ([2, 5], [1.0, 0.5, 0.1])),
    ]
    for name, args in schedules:
        ours, theirs = getattr(optimizers, name)(*args), getattr(jax_optimizers, name)(*args)
        for i in (0, 3, 7, 12):
            np.testing.assert_allclose(np.asarray(ours(i)), np.asarray(theirs(i)), rtol=1e-6)
    staircase = optimizers.inverse_time_decay(0.1, 4, 1.0, staircase=True)
    assert float(staircase(7)) == pytest.approx(0.1 / 2)
    grads = {"a": np.array([3.0, 4.0], np.float32), "b": np.array([12.0], np.float32)}
    np.testing.assert_allclose(float(optimizers.l2_norm(grads)), 13.0)
    _close(optimizers.clip_grads(grads, 1.0), jax_optimizers.clip_grads(grads, 1.0))
    init, update, get_params = optimizers.adam(0.1)
    state = init({"x": np.ones(2, np.float32)})
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    _close(get_params(packed), get_params(state))
    with pytest.raises(TypeError, match="gradient tree"):
        update(0, [np.ones(2, np.float32)], state)
