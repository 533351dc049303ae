"""``jax.example_libraries.optimizers``: first-order optimizers as
``(init_fun, update_fun, get_params)`` triples over pytrees.

An optimizer is written for one array: ``init(x0) -> state``,
``update(step, g, state) -> state``, ``get_params(state) -> x``. The
:func:`optimizer` decorator lifts it to pytrees of parameters: the state of a
whole tree is an :class:`OptimizerState` (a pytree node) holding each leaf's
state flattened, the parameter treedef and each leaf state's treedef.
``step_size`` is a number or a schedule ``step -> step size``.

The update formulas, per leaf (``i`` the step, ``g`` the gradient)::

    sgd:       x <- x - lr(i) g
    momentum:  v <- mass v + g;             x <- x - lr(i) v
    nesterov:  v <- mass v + g;             x <- x - lr(i) (mass v + g)
    adagrad:   s <- s + g^2; m <- (1-mom) g/sqrt(s) [0 where s=0] + mom m; x <- x - lr(i) m
    rmsprop:   a <- gamma a + (1-gamma) g^2; x <- x - lr(i) g / sqrt(a + eps)
    rmsprop_momentum: a as rmsprop; m <- mom m + lr(i) g / sqrt(a + eps); x <- x - m
    adam:      m <- (1-b1) g + b1 m; v <- (1-b2) g^2 + b2 v;
               x <- x - lr(i) (m / (1-b1^(i+1))) / (sqrt(v / (1-b2^(i+1))) + eps)
    adamax:    m as adam; u <- max(b2 u, |g|); x <- x - lr(i)/(1-b1^(i+1)) m / (u + eps)
    sm3:       per-axis accumulators (Anil et al. 2019), as JAX's

(the same operations in the same order as JAX's, so the same float results).
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

import refimpl.numpy as jnp
from refimpl import tree_util

__all__ = [
    "JoinPoint",
    "Optimizer",
    "OptimizerState",
    "adagrad",
    "adam",
    "adamax",
    "clip_grads",
    "constant",
    "exponential_decay",
    "inverse_time_decay",
    "l2_norm",
    "make_schedule",
    "momentum",
    "nesterov",
    "optimizer",
    "pack_optimizer_state",
    "piecewise_constant",
    "polynomial_decay",
    "rmsprop",
    "rmsprop_momentum",
    "sgd",
    "sm3",
    "unpack_optimizer_state",
]

Params = Any
Schedule = Callable[[int], Any]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# the leaf states are the children; the treedefs are node data (static under jit)
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda data, children: OptimizerState(list(children)[0], *data),
)


class Optimizer(NamedTuple):
    init_fn: Callable[[Params], OptimizerState]
    update_fn: Callable[[int, Params, OptimizerState], OptimizerState]
    params_fn: Callable[[OptimizerState], Params]


def _flatten_states(states: list[Any]) -> tuple[tuple[list[Any], ...], tuple[Any, ...]]:
    pairs = [tree_util.tree_flatten(s) for s in states]
    return tuple(leaves for leaves, _ in pairs), tuple(treedef for _, treedef in pairs)


def optimizer(opt_maker: Callable[..., Any]) -> Callable[..., Optimizer]:
    """Lift a maker of one-array ``(init, update, get_params)`` to pytrees."""

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree: Params) -> OptimizerState:
            x0_flat, tree = tree_util.tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_states([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i: int, grad_tree: Params, opt_state: OptimizerState) -> OptimizerState:
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_util.tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match "
                    f"the parameter tree structure with which it was initialized: parameter "
                    f"tree {tree} and grad tree {grad_tree_def}."
                )
            states = [tree_util.tree_unflatten(t, s) for t, s in zip(subtrees, states_flat)]
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states, strict=True)]
            new_flat, new_subtrees = _flatten_states(new_states)
            for before, after in zip(subtrees, new_subtrees):
                if before != after:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not "
                        f"match its input structure: input {before} and output {after}."
                    )
            return OptimizerState(new_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Params:
            states_flat, tree, subtrees = opt_state
            states = [tree_util.tree_unflatten(t, s) for t, s in zip(subtrees, states_flat)]
            return tree_util.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# --- the optimizers ---------------------------------------------------------------------


def _first(state: tuple) -> Any:
    return state[0]


@optimizer
def sgd(step_size: float | Schedule) -> tuple:
    """Stochastic gradient descent."""
    lr = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - lr(i) * g), (lambda x: x)


@optimizer
def momentum(step_size: float | Schedule, mass: float) -> tuple:
    """SGD with momentum ``mass``."""
    lr = make_schedule(step_size)

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - lr(i) * velocity, velocity

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def nesterov(step_size: float | Schedule, mass: float) -> tuple:
    """SGD with Nesterov momentum."""
    lr = make_schedule(step_size)

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - lr(i) * (mass * velocity + g), velocity

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def adagrad(step_size: float | Schedule, momentum: float = 0.9) -> tuple:
    """Adagrad (Duchi et al. 2011), with momentum."""
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, g_sq, m = state
        g_sq += jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - lr(i) * m, g_sq, m

    return init, update, _first


@optimizer
def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8) -> tuple:
    """RMSProp (Tieleman and Hinton 2012)."""
    lr = make_schedule(step_size)

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - lr(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop_momentum(
    step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8, momentum: float = 0.9
) -> tuple:
    """RMSProp with momentum."""
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + lr(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _first


@optimizer
def adam(
    step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> tuple:
    """Adam (Kingma and Ba 2014)."""
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - lr(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    return init, update, _first


@optimizer
def adamax(
    step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> tuple:
    """AdaMax, Adam's infinity-norm variant."""
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (lr(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, _first


@optimizer
def sm3(step_size: float | Schedule, momentum: float = 0.9) -> tuple:
    """SM3 (Anil et al. 2019): one accumulator per axis."""
    lr = make_schedule(step_size)

    def along(ndim: int, v: Any, axis: int) -> Any:
        index: list[Any] = [None] * ndim
        index[axis : axis + 1] = [slice(None)]  # (a 0-d gradient still indexes v whole)
        return v[tuple(index)]

    def init(x0: Any) -> tuple:
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        accumulators = [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, jnp.zeros_like(x0), accumulators, shape

    def update(i: int, g: Any, state: tuple) -> tuple:
        x, m, vs, shape = state
        vs = [along(g.ndim, v, axis) for axis, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - lr(i) * m
        others = [tuple(a for a in range(x.ndim) if a != j) for j in range(x.ndim)]
        return x, m, [accum.max(axes) for axes in others], shape

    def get_params(state: tuple) -> Any:
        x, _, _, shape = state
        return x.reshape(shape)

    return init, update, get_params


# --- schedules ----------------------------------------------------------------------------


def constant(step_size: float) -> Schedule:
    """``i -> step_size``."""
    return lambda i: step_size


def exponential_decay(step_size: float, decay_steps: float, decay_rate: float) -> Schedule:
    """``i -> step_size * decay_rate ** (i / decay_steps)``."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(
    step_size: float, decay_steps: float, decay_rate: float, staircase: bool = False
) -> Schedule:
    """``i -> step_size / (1 + decay_rate * i / decay_steps)`` (``floor`` of the
    quotient with ``staircase``)."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(
    step_size: float, decay_steps: float, final_step_size: float, power: float = 1.0
) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps``, as
    ``(1 - i / decay_steps) ** power``."""

    def schedule(step_num: Any) -> Any:
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` for steps past ``k`` of the ``boundaries``."""
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule as given, or a constant one for a scalar."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# --- utilities ----------------------------------------------------------------------------


def l2_norm(tree: Any) -> Any:
    """The l2 norm of all the leaves together."""
    leaves = tree_util.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: float) -> Any:
    """Scale the gradients down to global norm ``max_norm`` when above it."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(
        lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree
    )


class JoinPoint:
    """A leaf state kept whole inside the unpacked parameter tree."""

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree

    def __iter__(self) -> Any:
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """The state as the parameter tree with a :class:`JoinPoint` per leaf
    (picklable, for checkpoints)."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [tree_util.tree_unflatten(t, s) for t, s in zip(subtree_defs, states_flat)]
    return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of :func:`unpack_optimizer_state`."""
    sentinels, tree_def = tree_util.tree_flatten(marked_pytree)
    assert all(isinstance(s, JoinPoint) for s in sentinels)
    states_flat, subtree_defs = _flatten_states([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
