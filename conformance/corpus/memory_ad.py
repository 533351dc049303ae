"""Memory-saving differentiation (issue 17): ``checkpoint`` with each policy
and ``custom_vjp(optimize_remat=True)``, gradients compared across
implementations (``AGREE``), eagerly and under jit. (``invertible`` has no
JAX counterpart since 2022; it is tested against plain ``grad`` in
tests/transforms/test_invertible.py.)
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, rng_for
from conformance.corpus.ad_primitives import AD_TOLERANCE
from conformance.namespace import Unsupported

POLICIES = (
    "nothing_saveable",
    "everything_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "checkpoint") or not hasattr(module, "checkpoint_policies"):
        raise Unsupported(f"{ns.name} has no checkpoint")
    return module


def _net(ns: Any, x: Any, w: Any) -> Any:
    np_ = ns.np_
    for _ in range(3):
        x = np_.sin(x @ w) + np_.exp(-x) * 0.5
    return np_.sum(x * x)


def _checkpoint_grad(policy: str | None):
    def fn(ns: Any, x: Any, w: Any) -> Any:
        api = _api(ns)
        pol = None if policy is None else getattr(api.checkpoint_policies, policy)
        return api.grad(api.checkpoint(lambda a, b: _net(ns, a, b), policy=pol), (0, 1))(x, w)

    return fn


def _named_grad(ns: Any, x: Any, w: Any) -> Any:
    api = _api(ns)
    name = importlib.import_module(f"{api.__name__}.ad_checkpoint").checkpoint_name

    def f(a: Any, b: Any) -> Any:
        h = name(a @ b, "h")
        return ns.np_.sum(ns.np_.tanh(h) * a)

    pol = api.checkpoint_policies.save_only_these_names("h")
    return api.grad(api.checkpoint(f, policy=pol), (0, 1))(x, w)


def _optimize_remat_grad(ns: Any, x: Any) -> Any:
    api = _api(ns)
    np_ = ns.np_
    f = api.custom_vjp(lambda a: np_.sin(a))
    f.defvjp(lambda a: (np_.sin(a), np_.cos(a)), lambda c, g: (g * c,), optimize_remat=True)
    return api.grad(lambda a: np_.sum(api.checkpoint(lambda b: f(b) * 2.0)(a)))(x)


def cases() -> Iterator[Case]:
    rng = rng_for("memory_ad")
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    w = (rng.uniform(-1, 1, (4, 4)) / 2).astype(np.float32)
    v = rng.uniform(0.1, 1.0, 6).astype(np.float32)
    for mode in ("eager", "jit"):
        for policy in (None, *POLICIES):
            yield fn_case(
                f"memory_ad/checkpoint/{policy or 'default'}/{mode}",
                _checkpoint_grad(policy),
                [x, w],
                mode=mode,
                expect=AGREE,
                tolerance=AD_TOLERANCE,
            )
        yield fn_case(
            f"memory_ad/checkpoint_name/{mode}",
            _named_grad,
            [x, w],
            mode=mode,
            expect=AGREE,
            tolerance=AD_TOLERANCE,
        )
        yield fn_case(
            f"memory_ad/optimize_remat/{mode}",
            _optimize_remat_grad,
            [v],
            mode=mode,
            expect=AGREE,
            tolerance=AD_TOLERANCE,
        )
