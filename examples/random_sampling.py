"""A tour of refimpl.random: a Monte Carlo estimate of pi, shuffled minibatches,
weighted sampling, a categorical draw and truncated normals, all from split
and folded keys."""

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import random

key = random.key(2024)
k_pi, k_perm, k_choice, k_cat, k_tn = random.split(key, 5)

points = random.uniform(k_pi, (4000, 2), minval=-1.0, maxval=1.0)
pi_estimate = 4.0 * rnp.mean(rnp.sum(points**2, axis=1) <= 1.0)

order = random.permutation(k_perm, 12)
batches = [order[i : i + 4] for i in range(0, 12, 4)]

weights = rnp.array([0.1, 0.2, 0.3, 0.4])
draws = random.choice(k_choice, 4, (20,), p=weights)
without = random.choice(random.fold_in(k_choice, 1), rnp.arange(10, 20), (5,), replace=False)

logits = rnp.log(rnp.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]))
categories = random.categorical(k_cat, logits, shape=(6, 2))

bits = random.bits(random.fold_in(key, 7), (4,))
ints = random.randint(random.fold_in(key, 8), (6,), -3, 9)
coins = random.bernoulli(random.fold_in(key, 9), 0.25, (10,))
tn = ri.jit(lambda k: random.truncated_normal(k, -1.0, 1.0, (5,)))(k_tn)

results = {
    "pi": pi_estimate,
    "batches": batches,
    "draws": draws,
    "without": without,
    "categories": categories,
    "bits": bits,
    "ints": ints,
    "coins": coins,
    "tn": tn,
    "key_data": random.key_data(random.split(key, 3)),
}
print("pi ~", float(pi_estimate), "batches", [b.tolist() for b in batches])
