"""python -m refimpl.as_jax: JAX programs run on refimpl with `import jax`
aliased, the real JAX modules restored afterwards, and missing names named."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import refimpl as ri
from refimpl import as_jax

PROGRAM = """
import sys
import jax
import jax.numpy as jnp
from jax import lax, random, nn
from jax.scipy.special import logsumexp
import jax.tree_util as tu

key = random.PRNGKey(int(sys.argv[1]))
x = random.normal(key, (4,))
y = jax.jit(lambda v: nn.softmax(v) * jnp.float32(2))(x)
total = lax.fori_loop(0, 3, lambda i, acc: acc + i, 0)
print(type(jnp.zeros(1)).__module__.split(".")[0], float(logsumexp(x)), int(total),
      tu.tree_leaves({"a": 1}))
result = {"x": x, "y": y}
"""


def write(tmp_path, text: str, name: str = "prog.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_run_in_process_matches_jax(tmp_path, capsys):
    script = write(tmp_path, PROGRAM)
    real_jax = sys.modules["jax"]
    for backend in ["ref", "pjrt"]:
        if backend == "pjrt":
            from tests.helpers.pjrt_helpers import skip_without_pjrt

            skip_without_pjrt()
        got = as_jax.run(script, ["3"], backend=backend)["result"]
        assert sys.modules["jax"] is real_jax  # restored
        assert ri.config.backend == "ref"
        out = capsys.readouterr().out
        assert out.startswith("refimpl "), out
        key = jax.random.PRNGKey(3)
        x = jax.random.normal(key, (4,))
        np.testing.assert_allclose(np.asarray(got["x"]), np.asarray(x), rtol=1e-6)
        want_y = jax.nn.softmax(x) * 2
        np.testing.assert_allclose(np.asarray(got["y"]), np.asarray(want_y), rtol=1e-6)


def test_missing_names_point_at_the_docs(tmp_path):
    script = write(tmp_path, "import jax.numpy as jnp\njnp.definitely_not_a_function(1)\n")
    with pytest.raises(AttributeError, match=r"jax\.numpy\.definitely_not_a_function is not "
                       r"provided by refimpl .*docs/numpy\.md"):  # fmt: skip
        as_jax.run(script)
    script = write(tmp_path, "import jax.experimental.sparse\n", "prog2.py")
    with pytest.raises(ModuleNotFoundError, match=r"jax\.experimental.*docs/numpy\.md"):
        as_jax.run(script)
    script = write(tmp_path, "import jax\njax.no_such_transform\n", "prog3.py")
    with pytest.raises(AttributeError, match=r"jax\.no_such_transform is not provided"):
        as_jax.run(script)
    assert sys.modules["jax"] is jax


def test_config_update_translates_jax_names(tmp_path):
    script = write(tmp_path, """
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        dtype = jnp.arange(3).dtype
    """)  # fmt: skip
    assert str(as_jax.run(script)["dtype"]) == "int64"


def test_command_line(tmp_path):
    script = write(tmp_path, PROGRAM)
    out = subprocess.run(
        [sys.executable, "-m", "refimpl.as_jax", "--backend", "ref", script, "5"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    assert out.stdout.startswith("refimpl ")
    bad = write(tmp_path, "import jax.numpy as jnp\njnp.nope\n", "bad.py")
    out = subprocess.run(
        [sys.executable, "-m", "refimpl.as_jax", bad], capture_output=True, text=True, timeout=300
    )
    assert out.returncode != 0
    assert "jax.numpy.nope is not provided by refimpl" in out.stderr


def test_jax_ref_module_is_refimpls(tmp_path):
    # mutable-array programs import JAX's public jax.ref module
    program = "import jax.ref\nr = jax.ref.new_ref(1.0)\njax.ref.addupdate(r, (), 2.0)\n"
    program += "print(float(jax.ref.freeze(r)), jax.ref.Ref.__module__)\n"
    for backend in ("ref", "pjrt"):
        out = subprocess.run(
            [sys.executable, "-m", "refimpl.as_jax", "--backend", backend,
             str(write(tmp_path, program, "refs.py"))],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert out.split() == ["3.0", "refimpl.ref"]
