"""Newton's method with an exact Hessian: minimize the Rosenbrock function."""

import refimpl as ri
import refimpl.numpy as rnp


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1.0 - x) ** 2 + 100.0 * (y - x**2) ** 2


@ri.jit
def newton_step(p):
    g = ri.grad(rosenbrock)(p)
    h = ri.hessian(rosenbrock)(p)
    return p - rnp.linalg.solve(h, g)


p = rnp.array([-1.2, 1.0])
path = [p]
for _ in range(8):
    p = newton_step(p)
    path.append(p)

results = {
    "path": rnp.stack(path),
    "minimum": p,
    "value": rosenbrock(p),
    "hessian_at_start": ri.hessian(rosenbrock)(path[0]),
}
print("minimum", p, "f", float(results["value"]))
