"""A checkpoint policy may answer with ``jax.ad_checkpoint``'s ``Saveable``,
``Recompute`` or ``Offloadable(src, dst)`` instead of a bool, as JAX 0.10.2's
(names refimpl lacked, issue 29; both answers are truthy, so refimpl must
tell them apart by identity). Residuals (as print_saved_residuals lists them)
and gradients against JAX, on both backends."""

from __future__ import annotations

import contextlib
import io

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
from refimpl import ad_checkpoint

_POLICIES = {
    "saveable": lambda m: lambda prim, *_, **__: m.Saveable,
    "recompute": lambda m: lambda prim, *_, **__: m.Recompute,
    "offloadable": lambda m: lambda prim, *_, **__: m.Offloadable("device", "pinned_host"),
    "sin_only": lambda m: lambda prim, *_, **__: m.Saveable if prim.name == "sin" else m.Recompute,
    "bool": lambda m: lambda prim, *_, **__: prim.name == "sin",
}


def _residuals(module, checkpointed, x):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        module.print_saved_residuals(checkpointed, x)
    # the type of each residual (JAX marks an offloaded one's memory: f32<host>[3])
    return [line.split()[0].replace("<host>", "") for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("policy", sorted(_POLICIES))
def test_policy_answers(backend, policy):
    x = np.linspace(0.1, 1.0, 3, dtype=np.float32)
    want_f = jax.checkpoint(
        lambda v: jnp.sin(jnp.sin(v) * 2.0).sum(), policy=_POLICIES[policy](jax.ad_checkpoint)
    )
    got_f = ri.checkpoint(
        lambda v: ri.numpy.sin(ri.numpy.sin(v) * 2.0).sum(),
        policy=_POLICIES[policy](ad_checkpoint),
    )
    assert _residuals(ad_checkpoint, got_f, x) == _residuals(jax.ad_checkpoint, want_f, x)
    np.testing.assert_allclose(ri.grad(got_f)(x), jax.grad(want_f)(x), rtol=1e-5)


def test_answers_are_jax_shaped():
    assert bool(ad_checkpoint.Saveable) is bool(jax.ad_checkpoint.Saveable) is True
    assert bool(ad_checkpoint.Recompute) is bool(jax.ad_checkpoint.Recompute) is True
    ours = ad_checkpoint.Offloadable("device", "pinned_host")
    theirs = jax.ad_checkpoint.Offloadable("device", "pinned_host")
    assert ours._fields == theirs._fields and tuple(ours) == tuple(theirs)
