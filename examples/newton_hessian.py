"""Newton's method with an exact Hessian: minimize the Rosenbrock function."""

import jax
import jax.numpy as jnp


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1.0 - x) ** 2 + 100.0 * (y - x**2) ** 2


@jax.jit
def newton_step(p):
    g = jax.grad(rosenbrock)(p)
    h = jax.hessian(rosenbrock)(p)
    return p - jnp.linalg.solve(h, g)


p = jnp.array([-1.2, 1.0])
path = [p]
for _ in range(8):
    p = newton_step(p)
    path.append(p)

results = {
    "path": jnp.stack(path),
    "minimum": p,
    "value": rosenbrock(p),
    "hessian_at_start": jax.hessian(rosenbrock)(path[0]),
}
print("minimum", p, "f", float(results["value"]))
