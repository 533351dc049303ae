"""Shared test fixtures: a fresh config per test, and a JAX oracle that matches it."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl.config import config


@pytest.fixture(autouse=True)
def _restore_config():
    saved = config.snapshot()
    yield
    for name, value in saved.items():
        config.update(name, value)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
