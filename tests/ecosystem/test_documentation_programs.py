"""Documentation-style programs (``programs/*.py``, written in the style of
JAX's tutorials) print the same under ``python -m refimpl.as_jax`` on both
backends as under JAX 0.10.2.

Each program runs three times as a subprocess: under JAX, and under as_jax
with ``--backend ref`` and ``--backend pjrt``. Their standard outputs must
agree: the same text once the numbers are taken out (whitespace runs count
as one space, since NumPy pads columns to the widest number), and the
numbers equal within float32 tolerances (the backends may differ from XLA
by an ulp in a transcendental function, and a training loop carries that).
One documented difference is normalized away: ``print_saved_residuals`` in
JAX ends each "output of ..." line with the source line of the operation,
which refimpl's programs do not record.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = sorted((Path(__file__).resolve().parent / "programs").glob("*.py"))

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
SOURCE_LINE = re.compile(r"^(.*(?:output of|named) .*?) from \S+:\d+:\d+ \(.*\)$", re.M)


def _run(impl: str, program: Path) -> str:
    if impl == "jax":
        command = [sys.executable, str(program)]
    else:
        command = [sys.executable, "-m", "refimpl.as_jax", "--backend", impl, str(program)]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, cwd=program.parent, env=env
    )
    assert done.returncode == 0, f"{impl} {program.name}:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done.stdout


def split_numbers(text: str) -> tuple[str, list[float]]:
    """(the text with each number replaced by ``#`` and whitespace runs by one
    space, the numbers in order)."""
    text = SOURCE_LINE.sub(r"\1", text)
    numbers = [float(m) for m in NUMBER.findall(text)]
    skeleton = " ".join(NUMBER.sub("#", text).split())
    return re.sub(r" ?([\[\]]) ?", r"\1", skeleton), numbers


def assert_same_output(got: str, want: str, where: str) -> None:
    got_text, got_numbers = split_numbers(got)
    want_text, want_numbers = split_numbers(want)
    assert got_text == want_text, f"{where}: the text differs\n--- got\n{got}\n--- JAX\n{want}"
    np.testing.assert_allclose(
        got_numbers, want_numbers, rtol=2e-4, atol=2e-5, err_msg=f"{where}: numbers differ"
    )


def _skip_without_pjrt() -> None:
    from tests.helpers.pjrt_helpers import skip_without_pjrt

    skip_without_pjrt()


def test_the_comparison_takes_numbers_apart():
    text, numbers = split_numbers("[ 0.992  -2.1384  0.4262] loss 1e-3\nf32[5] output of sin "
                                  "from /x/y.py:10:11 (g)\n")  # fmt: skip
    assert text == "[# # #]loss # f#[#]output of sin"
    assert numbers == [0.992, -2.1384, 0.4262, 1e-3, 32.0, 5.0]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_prints_what_jax_prints(program):
    if program.stem == "optax_training":
        pytest.importorskip("optax")
    want = _run("jax", program)
    assert want.strip(), f"{program.name} printed nothing under JAX"
    assert_same_output(_run("ref", program), want, f"{program.name} on ref")
    _skip_without_pjrt()
    assert_same_output(_run("pjrt", program), want, f"{program.name} on pjrt")
