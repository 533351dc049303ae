"""What a checkpoint's reverse-mode split saves, logged at DEBUG as JAX 0.10.2
logs it (api_test's test_remat_residual_logging): the inputs the
recomputation reads, the intermediates the policy saved and the primitive
that made each; against JAX live, on ref and pjrt."""

from __future__ import annotations

import logging
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

_POLICIES = {
    "nothing_saveable": None,
    "everything_saveable": lambda *_, **__: True,
    "save_cos": lambda p, *_, **__: str(p) == "cos",
    "save_sin": lambda p, *_, **__: str(p) == "sin",
}


def _logged(api, np_, policy, caplog):
    def f(x):
        x = np_.sin(x)
        return np_.cos(x.sum())

    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        api.grad(api.remat(f, policy=_POLICIES[policy]))(np_.arange(3.0))
    text = "\n".join(r.getMessage() for r in caplog.records if "remat-decorated" in r.getMessage())
    return {
        "inputs": re.findall(r"^  (\S+)$", text.split("intermediates")[0], re.M),
        "intermediates": sorted(re.findall(r"^  (\S+) from output of (\w+) ", text, re.M)),
        "saving inputs": "saving inputs with shapes:" in text,
        "and saving": "and saving these intermediates:" in text,
    }


@pytest.mark.parametrize("policy", sorted(_POLICIES))
def test_checkpoint_logs_what_it_saves_as_jax(backend, policy, caplog):
    ours = _logged(ri, rnp, policy, caplog)
    theirs = _logged(jax, jnp, policy, caplog)
    assert ours == theirs
    assert ours["inputs"] or ours["intermediates"]


def test_nothing_is_logged_above_debug(backend, caplog):
    with caplog.at_level(logging.INFO):
        out = ri.grad(ri.remat(lambda x: rnp.sin(x).sum()))(np.ones(3, np.float32))
    np.testing.assert_allclose(out, np.cos(np.ones(3)), rtol=1e-6)
    assert not [r for r in caplog.records if "remat-decorated" in r.getMessage()]
