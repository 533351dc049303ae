"""Errors raised inside a user's function under a transformation show the
user's frames, not refimpl's (config ``traceback_filtering``, as JAX's
``jax_traceback_filtering``); with the flag ``"off"`` every frame is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

REFIMPL_DIR = os.path.dirname(os.path.abspath(ri.__file__)) + os.sep


def _inner(x):
    return lax.add(x, np.int32(1))  # float32 + int32: a TypeError


def _user_fn(x):
    return _inner(x) * 2


CALLS = {
    "jit": lambda: ri.jit(_user_fn)(np.float32(1)),
    "jit-pjrt": lambda: ri.jit(_user_fn, backend="pjrt")(np.float32(1)),
    "grad": lambda: ri.grad(_user_fn)(1.0),
    "value_and_grad": lambda: ri.value_and_grad(_user_fn)(1.0),
    "vmap": lambda: ri.vmap(_user_fn)(np.ones(3, np.float32)),
    "jvp": lambda: ri.jvp(_user_fn, (1.0,), (1.0,)),
    "vjp": lambda: ri.vjp(_user_fn, 1.0),
    "jacrev": lambda: ri.jacrev(_user_fn)(1.0),
    "hessian": lambda: ri.hessian(_user_fn)(1.0),
    "jit(grad)": lambda: ri.jit(ri.grad(_user_fn))(1.0),
    "eval_shape": lambda: ri.eval_shape(_user_fn, 1.0),
    "while_loop": lambda: lax.while_loop(lambda c: c < 3, _user_fn, np.float32(0)),
    "cond": lambda: lax.cond(True, _user_fn, _user_fn, np.float32(0)),
}


def _frames(call):
    with pytest.raises(TypeError, match="lax.add requires") as info:
        call()
    return [
        (frame.filename, frame.name) for frame in traceback.extract_tb(info.value.__traceback__)
    ]


@pytest.fixture
def filtering():
    def set_mode(mode):
        ri.config.update("traceback_filtering", mode)

    yield set_mode
    ri.config.update("traceback_filtering", "auto")


def _skip_pjrt(name):
    if name.endswith("pjrt"):
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_filtered_traceback_has_only_user_frames(name, filtering):
    _skip_pjrt(name)
    filtering("auto")
    frames = _frames(CALLS[name])
    assert [f for f, _ in frames if f.startswith(REFIMPL_DIR)] == []
    names = [n for _, n in frames]
    # the user's own frames survive, innermost last
    assert names[-2:] == ["_user_fn", "_inner"]


@pytest.mark.parametrize("name", ["jit", "grad", "vmap", "jit-pjrt"])
def test_off_keeps_refimpl_frames(name, filtering):
    _skip_pjrt(name)
    filtering("off")
    frames = _frames(CALLS[name])
    refimpl_frames = [f for f, _ in frames if f.startswith(REFIMPL_DIR)]
    assert len(refimpl_frames) >= 3
    assert [n for _, n in frames][-2:] != ["_user_fn", "_inner"]  # refimpl's frames are below


def test_note_and_unfiltered_traceback(filtering):
    filtering("auto")
    with pytest.raises(TypeError) as info:
        ri.jit(_user_fn)(np.float32(1))
    error = info.value
    assert any("REFIMPL_TRACEBACK_FILTERING=off" in note for note in error.__notes__)
    full = traceback.extract_tb(error.__refimpl_unfiltered_tb__)
    assert any(frame.filename.startswith(REFIMPL_DIR) for frame in full)


def test_an_error_caught_inside_a_transformation_is_untouched(filtering):
    """Only the outermost boundary filters: a user's try/except inside a
    jitted function sees the exception as raised."""
    filtering("auto")
    seen = []

    def f(x):
        try:
            ri.grad(_user_fn)(x)
        except TypeError as error:
            seen.append(error)
        return x

    ri.jit(f)(1.0)
    (error,) = seen
    assert not getattr(error, "__notes__", None)
    assert any(
        frame.filename.startswith(REFIMPL_DIR)
        for frame in traceback.extract_tb(error.__traceback__)
    )


def test_bad_mode_is_an_error():
    with pytest.raises(ValueError, match="traceback_filtering must be 'auto', 'remove_frames'"):
        ri.config.update("traceback_filtering", "sometimes")


def test_environment_variable_turns_it_off():
    code = (
        "import numpy as np, traceback, refimpl as ri\n"
        "from refimpl import lax\n"
        "try:\n"
        "    ri.jit(lambda x: lax.add(x, np.int32(1)))(np.float32(1))\n"
        "except TypeError as e:\n"
        "    print(ri.config.traceback_filtering, len(traceback.extract_tb(e.__traceback__)))\n"
    )
    env = dict(os.environ, REFIMPL_TRACEBACK_FILTERING="off")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(REFIMPL_DIR.rstrip(os.sep))] + [env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    mode, count = done.stdout.split()
    assert mode == "off" and int(count) > 5, done.stderr
