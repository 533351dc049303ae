"""random (SPEC section 3 "The rest of the JAX surface"): ``jax.random``'s
threefry2x32 PRNG -- the same key gives the same bits on every
implementation.

Keys are passed as raw ``uint32[2]`` data (``PRNGKey(seed)`` is ``[0, seed]``
for a seed below 2**32 with x64 off, which the ``key`` rows check). Rows
whose samplers are integer or exact float computations (keys, bits,
uniform, randint, bernoulli, permutation, choice, categorical) and the
ones through ``log``/``log1p``/``erf_inv``/``tan``/``pow`` (the reference's
are XLA CPU's, ``refimpl.primitives.xla_math``) must agree exactly too.
Only ``truncated_normal`` with literal bounds is compared within a few ulps:
under ``jit`` XLA folds ``erf(bound / sqrt2)`` at compile time with other code
than it runs, the reference never folds (docs/semantics.md 15.1).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case
from conformance.compare import Tolerance
from conformance.namespace import Unsupported
from conformance.observe import Raises

FOLDED = Tolerance(ulps={"float32": 8, "float16": 2, "bfloat16": 2}, atol_eps=8)


def _random(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "random"):
        raise Unsupported(f"{ns.name} has no random module")
    return module.random


def _key(seed: int) -> np.ndarray:
    return np.array([0, seed], np.uint32)


# name, fn(random, key), compared within FOLDED?
ROWS: list[tuple[str, Any, bool]] = [
    ("split_2", lambda R, k: R.split(k), False),
    ("split_shape", lambda R, k: R.split(k, (2, 3)), False),
    ("fold_in", lambda R, k: R.fold_in(k, 12345), False),
    ("bits_u32", lambda R, k: R.bits(k, (3, 4)), False),
    ("bits_u8", lambda R, k: R.bits(k, (7,), np.uint8), False),
    ("bits_u16", lambda R, k: R.bits(k, (2, 5), np.uint16), False),
    ("uniform_f32", lambda R, k: R.uniform(k, (4, 3)), False),
    ("uniform_bounds", lambda R, k: R.uniform(k, (6,), minval=-2.5, maxval=4.0), False),
    ("uniform_f16", lambda R, k: R.uniform(k, (5,), np.float16, -1.0, 1.0), False),
    ("uniform_bf16", lambda R, k: R.uniform(k, (5,), "bfloat16", -1.0, 3.0), False),
    ("randint", lambda R, k: R.randint(k, (10,), -5, 17), False),
    ("randint_uint8_wide", lambda R, k: R.randint(k, (10,), -3, 300, np.uint8), False),
    ("bernoulli", lambda R, k: R.bernoulli(k, 0.3, (12,)), False),
    ("permutation_int", lambda R, k: R.permutation(k, 9), False),
    ("permutation_axis1", lambda R, k: R.permutation(k, np.arange(12.0).reshape(3, 4), 1), False),
    ("choice_replace", lambda R, k: R.choice(k, 7, (5,)), False),
    ("choice_no_replace", lambda R, k: R.choice(k, 7, (4,), replace=False), False),
    ("choice_p", lambda R, k: R.choice(k, 4, (8,), p=np.array([0.1, 0.2, 0.3, 0.4], np.float32)),
     False),
    ("categorical", lambda R, k: R.categorical(k, np.log(np.array([[0.2, 0.5, 0.3]] * 2,
                                                                  np.float32))), False),
    ("key_typed_data", lambda R, k: R.key_data(R.split(R.wrap_key_data(k), 3)), False),
    ("normal", lambda R, k: R.normal(k, (50,)), False),
    ("normal_1", lambda R, k: R.normal(k, (1,)), False),
    ("normal_f16", lambda R, k: R.normal(k, (8,), np.float16), False),
    ("truncated_normal", lambda R, k: R.truncated_normal(k, -1.0, 2.0, (20,)), True),
    ("gumbel", lambda R, k: R.gumbel(k, (20,)), False),
    ("gumbel_f16", lambda R, k: R.gumbel(k, (40,), np.float16), False),
    ("exponential", lambda R, k: R.exponential(k, (20,)), False),
    ("laplace", lambda R, k: R.laplace(k, (20,)), False),
    ("logistic", lambda R, k: R.logistic(k, (20,)), False),
    ("logistic_f16", lambda R, k: R.logistic(k, (40,), np.float16), False),
    ("cauchy_bf16", lambda R, k: R.cauchy(k, (30,), "bfloat16"), False),
    ("weibull_min", lambda R, k: R.weibull_min(k, np.float32(2.0), np.float32(0.7), (20,)),
     False),
]  # fmt: skip


QUICK = {"split_2", "fold_in", "uniform_bounds", "randint", "normal"}


def cases() -> Iterator[Case]:
    for seed in (0, 42):
        yield fn_case(
            f"random/key_{seed}",
            lambda ns, seed=seed: _random(ns).PRNGKey(seed),
            (),
            oracle=lambda seed=seed: _key(seed),
            mode="eager",
        )
        for name, fn, folded in ROWS:
            for mode in ("jit", "eager"):
                yield fn_case(
                    f"random/{name}_{seed}_{mode}",
                    lambda ns, k, fn=fn: fn(_random(ns), k),
                    (_key(seed),),
                    expect=AGREE,
                    mode=mode,
                    tolerance=FOLDED if folded else None,
                    tags=("quick",) if (seed, mode) == (0, "jit") and name in QUICK else (),
                )
    # issue 29: any Python int seed in int64's range, negative ones folded to
    # 64 bits (x64 off: to 32); a Python bool is a Python int (seed 1), a
    # NumPy bool is not an integer (TypeError) -- as JAX 0.10.2
    for label, seed in (
        ("2_31", 2**31),
        ("2_63_minus_1", 2**63 - 1),
        ("minus_1", -1),
        ("true", True),
    ):
        yield fn_case(
            f"random/key_seed_{label}",
            lambda ns, seed=seed: _random(ns).key_data(_random(ns).key(seed)),
            (),
            expect=AGREE,
            mode="eager",
        )
    yield fn_case(
        "random/key_seed_numpy_bool",
        lambda ns: _random(ns).key(np.bool_(True)),
        (),
        expect=Raises(TypeError),
        mode="eager",
    )
