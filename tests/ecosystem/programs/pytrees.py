"""Working with pytrees: containers of arrays, mapped, flattened and given key paths."""

from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

example_trees = [
    [1, "a", object()],
    (1, (2, 3), ()),
    [1, {"k1": 2, "k2": (3, 4)}, 5],
    {"a": 2, "b": (2, 3)},
    jnp.array([1, 2, 3]),
]
for pytree in example_trees:
    leaves = jax.tree.leaves(pytree)
    print(f"{len(leaves)} leaves")

list_of_lists = [[1, 2, 3], [1, 2], [1, 2, 3, 4]]
print(jax.tree.map(lambda x: x * 2, list_of_lists))
print(jax.tree.map(lambda x, y: x + y, list_of_lists, list_of_lists))


def init_mlp_params(layer_widths):
    params = []
    for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
        params.append(
            dict(
                weights=jnp.linspace(-1.0, 1.0, n_in * n_out).reshape(n_in, n_out) / n_in,
                biases=jnp.ones(shape=(n_out,)),
            )
        )
    return params


params = init_mlp_params([1, 16, 16, 1])
print(jax.tree.map(lambda x: x.shape, params))


def forward(params, x):
    *hidden, last = params
    for layer in hidden:
        x = jax.nn.relu(x @ layer["weights"] + layer["biases"])
    return x @ last["weights"] + last["biases"]


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def update(params, x, y):
    grads = jax.grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


xs = jnp.linspace(-1.0, 1.0, 32).reshape(32, 1)
ys = xs**2
for _ in range(20):
    params = update(params, xs, ys)
print("loss", loss_fn(params, xs, ys))


class MyContainer:
    def __init__(self, name, a, b, c):
        self.name, self.a, self.b, self.c = name, a, b, c


def flatten_my_container(container):
    return [container.a, container.b, container.c], container.name


def unflatten_my_container(name, children):
    return MyContainer(name, *children)


jax.tree_util.register_pytree_node(MyContainer, flatten_my_container, unflatten_my_container)
print(jax.tree.leaves([MyContainer("Alice", 1, 2, 3), MyContainer("Bob", 4, 5, 6)]))


@partial(jax.tree_util.register_dataclass, data_fields=["x", "y"], meta_fields=["op"])
@dataclass
class MyDataclass:
    x: jax.Array
    y: jax.Array
    op: str = field(default="add")


m = MyDataclass(x=jnp.ones(3), y=jnp.arange(3.0), op="add")
print(jax.tree.leaves(m), jax.jit(lambda m: m.x + m.y if m.op == "add" else m.x - m.y)(m))

tree = [1, {"k1": 2, "k2": (3, 4)}, MyDataclass(jnp.float32(5.0), jnp.float32(6.0))]
for key_path, value in jax.tree_util.tree_flatten_with_path(tree)[0]:
    print(f"Value of tree{jax.tree_util.keystr(key_path)}: {value}")
print(jax.tree_util.tree_map_with_path(lambda p, v: len(p) * v, tree)[1])

flat, unravel = ravel_pytree(params)
print(
    flat.shape,
    float(flat.sum()),
    jax.tree.map(jnp.shape, unravel(flat)) == jax.tree.map(jnp.shape, params),
)

x, y = jax.tree.transpose(jax.tree.structure([0, 0]), jax.tree.structure((0, 0)), [(1, 2), (3, 4)])
print(x, y, jax.tree.reduce(lambda a, b: a + b, [1, 2, 3]), jax.tree.all([True, 1]))
