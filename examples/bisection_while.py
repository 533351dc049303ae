"""Root finding by bisection inside lax.while_loop, vectorized over several
cubics at once and compiled with jit."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


def bisect(f, lo, hi, tol=1e-6):
    def cond(state):
        lo, hi, _ = state
        return rnp.max(hi - lo) > tol

    def body(state):
        lo, hi, n = state
        mid = 0.5 * (lo + hi)
        same_sign = rnp.sign(f(mid)) == rnp.sign(f(lo))
        return rnp.where(same_sign, mid, lo), rnp.where(same_sign, hi, mid), n + 1

    lo, hi, n = lax.while_loop(cond, body, (lo, hi, 0))
    return 0.5 * (lo + hi), n


coefficients = rnp.array([1.0, 2.0, 3.0, 5.0])


def cubic(x):
    return x**3 - coefficients  # roots: cube roots of the coefficients


root, iterations = ri.jit(lambda: bisect(cubic, rnp.zeros(4), rnp.full(4, 2.0)))()
results = {"roots": root, "iterations": iterations, "residual": cubic(root)}
print("roots", root, "after", int(iterations), "iterations")
