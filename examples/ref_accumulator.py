"""A mutable accumulator with refimpl's new_ref: a jitted function adds each batch's
sum of squares into a Ref in place; a scan body does the same internally."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax


@ri.jit
def accumulate(acc_ref, batch):
    acc_ref[...] += rnp.sum(batch**2, axis=0)


acc = ri.new_ref(rnp.zeros(3))
for i in range(4):
    accumulate(acc, rnp.arange(6.0).reshape(2, 3) + i)


@ri.jit
def running_max(xs):
    best = ri.new_ref(rnp.float32(-rnp.inf))

    def body(carry, x):
        best[...] = rnp.maximum(best[...], x)
        return carry + x, best[...]

    total, maxima = lax.scan(body, rnp.float32(0.0), xs)
    return total, maxima, best[...]


total, maxima, best = running_max(rnp.array([0.5, 2.0, -1.0, 3.0, 1.0]))
results = {"accumulated": acc[...], "total": total, "maxima": maxima, "best": best}
print("accumulated", acc[...], "running maxima", maxima)
