"""refimpl.debug (print, callback) against jax.debug's printed output, on both backends."""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp


def _program(debug, np_mod):
    def f(x):
        debug.print("x={x} s={} n={} k={k}", x.sum(), 7, x=x, k="a")
        return np_mod.sin(x) * 2

    return f


def _jax_output(capsys, fn):
    capsys.readouterr()
    out = fn()
    jax.block_until_ready(out)
    jax.effects_barrier()
    return capsys.readouterr().out


def _ri_output(capsys, fn):
    capsys.readouterr()
    out = fn()
    ri.block_until_ready(out)
    return capsys.readouterr().out, out


X = np.array([[0.5, 1.0], [2.0, -3.0]], np.float32)


def test_eager_print_matches_jax(capsys):
    want = _jax_output(capsys, lambda: _program(jax.debug, jnp)(X[0]))
    got, _ = _ri_output(capsys, lambda: _program(ri.debug, rnp)(X[0]))
    assert got == want and "x=[0.5 1. ]" in got


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_jit_prints_each_call(capsys, jit_backend):
    jf = jax.jit(_program(jax.debug, jnp))
    rf = ri.jit(_program(ri.debug, rnp), backend=jit_backend)
    want = _jax_output(capsys, lambda: [jf(X[0]), jf(X[1]), jf(X[0])])
    got, outs = _ri_output(capsys, lambda: [rf(X[0]), rf(X[1]), rf(X[0])])
    assert got == want and got.count("\n") == 3
    np.testing.assert_allclose(outs[1], jf(X[1]), rtol=1e-6)


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_vmap_prints_each_element(capsys, jit_backend):
    want = _jax_output(capsys, lambda: jax.jit(jax.vmap(_program(jax.debug, jnp)))(X))
    got, _ = _ri_output(
        capsys, lambda: ri.jit(ri.vmap(_program(ri.debug, rnp)), backend=jit_backend)(X)
    )
    assert got == want and got.count("\n") == 2


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_grad_and_jvp_print_primals(capsys, jit_backend):
    def loss(debug, np_mod):
        f = _program(debug, np_mod)
        return lambda x: (f(x) ** 2).sum()

    want = _jax_output(capsys, lambda: jax.jit(jax.grad(loss(jax.debug, jnp)))(X[1]))
    got, g = _ri_output(
        capsys, lambda: ri.jit(ri.grad(loss(ri.debug, rnp)), backend=jit_backend)(X[1])
    )
    assert got == want and got.count("\n") == 1
    np.testing.assert_allclose(g, jax.grad(loss(jax.debug, jnp))(X[1]), rtol=1e-5)
    capsys.readouterr()
    want = _jax_output(
        capsys, lambda: jax.jvp(_program(jax.debug, jnp), (X[0],), (np.ones(2, np.float32),))
    )
    got, _ = _ri_output(
        capsys, lambda: ri.jvp(_program(ri.debug, rnp), (X[0],), (np.ones(2, np.float32),))
    )
    assert got == want


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_callback_gets_numpy_values_in_order(jit_backend):
    seen = []

    def f(x):
        ri.debug.callback(lambda a, b=None: seen.append(("first", a, b)), x, b=2.0)
        y = x + 1
        ri.debug.callback(lambda a: seen.append(("second", a, None)), y)
        return y

    ri.jit(f, backend=jit_backend)(np.arange(3, dtype=np.float32))
    assert [s[0] for s in seen] == ["first", "second"]
    assert isinstance(seen[0][1], np.ndarray) and seen[0][2] == 2.0
    np.testing.assert_array_equal(seen[1][1], [1, 2, 3])


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_nested_jit_prints_each_call(capsys, jit_backend):
    def make(jit, debug, **kw):
        @functools.partial(jit, **kw)
        def inner(x):
            debug.print("inner {} {}", x, np.arange(2.0, dtype=np.float32))
            return x + 1

        return jit(lambda x: inner(inner(x) * 2), **kw)

    want = _jax_output(capsys, lambda: make(jax.jit, jax.debug)(1.0))
    got, out = _ri_output(capsys, lambda: make(ri.jit, ri.debug, backend=jit_backend)(1.0))
    assert got == want and got.count("inner") == 2
    assert float(out) == 5.0


def test_ref_backend_prints_inside_scan(capsys):
    def body(c, _):
        ri.debug.print("c={}", c)
        return c * 2, None

    def jbody(c, _):
        jax.debug.print("c={}", c)
        return c * 2, None

    want = _jax_output(capsys, lambda: jax.jit(lambda c: jax.lax.scan(jbody, c, None, 3))(1.0))
    got, _ = _ri_output(
        capsys, lambda: ri.jit(lambda c: ri.lax.scan(body, c, None, 3), backend="ref")(1.0)
    )
    assert got == want


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_while_body_prints_each_iteration(capsys, jit_backend):
    """On pjrt the print is a host callback inside the compiled while loop."""

    def body(api):
        def step(c):
            api.debug.print("c={}", c)
            return c * 2

        return lambda c: api.lax.while_loop(lambda c: c < 10, step, c)

    want = _jax_output(capsys, lambda: jax.jit(body(jax))(1.0))
    got, _ = _ri_output(capsys, lambda: ri.jit(body(ri), backend=jit_backend)(1.0))
    assert got == want
    assert want.splitlines() == ["c=1.0", "c=2.0", "c=4.0", "c=8.0"]


def _branches(api, np_mod):
    def b1(c):
        api.debug.print("b1 {}", c, ordered=True)
        return c * 2

    def b2(c):
        api.debug.print("b2 {} {}", c, np_mod.arange(2), ordered=True)
        return c - 1

    def step(c, y):
        return api.lax.cond(y > 0, b1, b2, c), None

    def f(x):
        a = api.lax.cond(x > 0, b1, b2, x) + api.lax.switch(2, [b1, b2], x)
        return a, api.lax.scan(step, x, np_mod.arange(3.0) - 1)[0]

    return f


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_cond_branches_print_the_chosen_one(capsys, jit_backend):
    """On pjrt each branch returns every branch's callback operands (zeros in
    the others' slots); after the call the chosen branch's callbacks run."""
    jf, rf = jax.jit(_branches(jax, jnp)), ri.jit(_branches(ri, rnp), backend=jit_backend)
    want = _jax_output(capsys, lambda: [jf(1.0), jf(-1.0)])
    got, outs = _ri_output(capsys, lambda: [rf(1.0), rf(-1.0)])
    assert got == want and got.count("\n") == 2 * 5
    for g, w in zip(ri.tree_leaves(outs), jax.tree.leaves([jf(1.0), jf(-1.0)]), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def _loops(api, np_mod):
    def body(i, c):
        api.debug.print("i {} c {}", i, c, ordered=True)
        return c * 2

    def step(c, y):
        api.debug.print("c {} y {}", c, y, ordered=True)
        return c + y, c * y

    def outer(c, y):
        api.debug.print("outer {}", c, ordered=True)
        return api.lax.scan(step, c, np_mod.arange(2.0) + y)[0], None

    def f(x):
        a = api.lax.fori_loop(0, 3, body, x)
        b = api.lax.scan(step, x, np_mod.arange(3.0), reverse=True)
        c = api.lax.scan(outer, x, np_mod.arange(2.0))
        return a, b, c

    return f


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_scan_bodies_print_each_iteration(capsys, jit_backend):
    """On pjrt the body's callback operands become stacked scan outputs and the
    callbacks run per iteration after the call, in iteration order."""
    want = _jax_output(capsys, lambda: jax.jit(_loops(jax, jnp))(1.0))
    got, out = _ri_output(capsys, lambda: ri.jit(_loops(ri, rnp), backend=jit_backend)(1.0))
    assert got == want and got.count("\n") == 3 + 3 + 2 * 3
    jax_out = jax.jit(_loops(jax, jnp))(1.0)
    for g, w in zip(ri.tree_leaves(out), jax.tree.leaves(jax_out), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_programs_without_callbacks_keep_the_fast_path():
    f = ri.jit(lambda x: x * 2, backend="pjrt")
    x = ri.device_put(np.ones(3, np.float32), ri.devices("pjrt")[0])
    f(x)
    f(x)
    assert f._fast_cache_size() == 1
    g = ri.jit(lambda x: ri.debug.print("{}", x) or x * 2, backend="pjrt")
    g(x)
    assert g._fast_cache_size() == 0 or g._fast_stats()  # served by the Python path


def test_errors():
    with pytest.raises(TypeError, match="debug.print: fmt must be a str"):
        ri.debug.print(3)
    with pytest.raises(ValueError, match="debug.print: invalid format string"):
        ri.debug.print("{", 1)
    with pytest.raises(TypeError, match="debug.callback: callback must be callable"):
        ri.debug.callback(3, 1)
    with pytest.raises(ValueError, match="Unused positional arguments to `debug.print`: \\[2\\]"):
        ri.debug.print("{}", 1.0, 2)
    with pytest.raises(TypeError, match="ordered must be a bool"):
        ri.debug.print("{}", 1, ordered="yes")


SCRIPT = """
import jax
import jax.numpy as jnp

def f(x):
    jax.debug.print("x = {x}", x=x)
    return jnp.tanh(x) * x.sum()

step = jax.jit(f)
x = jnp.array([0.5, -1.0, 2.0], dtype=jnp.float32)
y = jax.block_until_ready(step(x))
jac = jax.jacobian(f)(x)
host = jax.device_get({"y": y, "jac": jac})
print(type(host["y"]).__name__, host["y"].round(5).tolist())
print(host["jac"].round(5).tolist())
"""


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_script_under_as_jax_matches_jax(tmp_path, jit_backend):
    path = tmp_path / "debug_script.py"
    path.write_text(textwrap.dedent(SCRIPT))
    want = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, check=True
    ).stdout
    got = subprocess.run(
        [sys.executable, "-m", "refimpl.as_jax", "--backend", jit_backend, str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert got == want and got.count("x = ") == 2


def test_pjrt_aot_compiled_prints_after_the_call(capsys):
    compiled = ri.jit(_program(ri.debug, rnp), backend="pjrt").lower(X[0]).compile()
    want = _jax_output(
        capsys, lambda: jax.jit(_program(jax.debug, jnp)).lower(X[1]).compile()(X[1])
    )
    got, _ = _ri_output(capsys, lambda: compiled(X[1]))
    assert got == want


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_checkpoint_under_grad_prints_forward_and_recompute(capsys, jit_backend):
    def make(api, np_mod):
        def f(x):
            api.debug.print("v {}", x)
            return np_mod.sin(x) * 2

        return api.grad(api.checkpoint(f))

    want = _jax_output(capsys, lambda: jax.jit(make(jax, jnp))(1.0))
    got, g = _ri_output(capsys, lambda: ri.jit(make(ri, rnp), backend=jit_backend)(1.0))
    assert got == want and got.count("v 1.0") == 2
    assert float(g) == pytest.approx(2 * np.cos(1.0), rel=1e-6)


@pytest.mark.parametrize("jit_backend", ["ref", "pjrt"])
def test_custom_derivative_functions_print(capsys, jit_backend):
    def make(api, np_mod):
        @api.custom_jvp
        def f(x):
            api.debug.print("f {}", x)
            return np_mod.sin(x)

        f.defjvp(lambda p, t: (f(p[0]), t[0]))

        @api.custom_vjp
        def g(x):
            api.debug.print("g {}", x)
            return np_mod.sin(x)

        g.defvjp(lambda x: (g(x), x), lambda r, c: (c,))
        h = lambda x: f(x) + g(x)  # noqa: E731
        return lambda x: (h(x), api.grad(h)(x))

    want = _jax_output(capsys, lambda: jax.jit(make(jax, jnp))(1.0))
    got, _ = _ri_output(capsys, lambda: ri.jit(make(ri, rnp), backend=jit_backend)(1.0))
    assert got == want and got.count("f 1.0") == 2
