"""One PJRT array type and the C++ boundary's crash/data-loss cases (
items 1, 2, 4, 5).

Oracles: the SPEC's rules (a deleted input is the deleted-array RuntimeError, a
repeated donated array is a ValueError that deletes nothing), JAX's behaviour
for `isinstance(x, jax.Array)` and weak references, NumPy for values.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re
import sys
import threading
import weakref

import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.backends.ref.arrays import RefArray

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
_helpers.skip_without_pjrt()

pytestmark = pytest.mark.pjrt


@pytest.fixture
def device():
    return ri.devices("pjrt")[0]


def _x(device, n=4):
    return ri.device_put(np.arange(n, dtype=np.float32), device)


def test_one_pjrt_array_type(device):
    x = _x(device)
    f = ri.jit(lambda v: v * 2, backend="pjrt")
    assert type(ri.device_put(np.ones(3), device)) is type(f(x)) is type(x + 1)
    assert type(rnp.sin(x)) is type(x)
    for a in (x, f(x), x + 1, RefArray(np.ones(2))):
        assert isinstance(a, ri.Array)
        assert weakref.ref(a)() is a
    np.testing.assert_allclose(np.asarray(rnp.sin(x)), np.sin(np.arange(4, dtype=np.float32)))


def test_import_refimpl_starts_no_pjrt_client():
    """``import refimpl`` loads the PJRT backend's modules (its native entries
    must be the exported functions from the start: refimpl/__init__.py) but
    starts no client: no plugin is loaded until a program asks for pjrt."""
    import subprocess

    code = (
        "import sys, refimpl\n"
        "from refimpl.backends.pjrt import runtime\n"
        "print(runtime._client is None and not runtime._clients,"
        " 'refimpl.backends.pjrt.backend' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_fast_path_hits_on_device_put_eager_and_previous_outputs(device):
    f = ri.jit(lambda v: v * 2 + 1, backend="pjrt")
    x = _x(device)
    f(x)  # compile for this signature
    before = f._fast_stats()
    y = f(x)  # a device_put input
    z = f(x + 1)  # an eager result
    w = f(y)  # a previous output
    after = f._fast_stats()
    assert after["hits"] - before["hits"] == 3
    assert after["misses"] == before["misses"] and after["slow"] == before["slow"]
    np.testing.assert_allclose(np.asarray(w), (np.arange(4) * 2 + 1) * 2 + 1)
    np.testing.assert_allclose(np.asarray(z), (np.arange(4) + 1) * 2 + 1)


def test_eager_ops_hit_one_cached_executable(device):
    from refimpl.backends.pjrt import backend
    from refimpl.primitives.elementwise import sin_p

    x = _x(device)
    sin_p.bind(x)  # a primitive applied eagerly: one fast-path jit per (primitive, params)
    (sin,) = [j for (p, _), j in backend._eager_jitted.items() if p.name == "sin"]
    add = backend._operator_jitted["__add__"]  # an operator: one fast-path jit of rnp.add
    x + 1
    before = sin._fast_stats(), add._fast_stats()
    np.testing.assert_allclose(np.asarray(sin_p.bind(x)), np.sin(np.arange(4, dtype=np.float32)))
    np.testing.assert_allclose(np.asarray(x + 1), np.arange(4) + 1)
    for fast, old in zip((sin, add), before, strict=True):
        new = fast._fast_stats()
        # Counters are per process: compare with the values before these calls
        # (earlier tests may have sent other calls of the same jit down the slow path).
        delta = tuple(new[k] - old[k] for k in ("hits", "misses", "slow"))
        assert delta == (1, 0, 0)


def test_operators_match_the_reference_backend(device):
    """The fast operators give what the numpy layer gives on reference arrays
    (dtype, weak type, values), for scalars of every Python type on both sides."""
    with np.errstate(invalid="ignore"):  # 0 ** 1j on the reference side
        _compare_operators(device)
    deleted = _x(device)
    deleted.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        deleted + 1


def _compare_operators(device):
    for dtype in (np.float32, np.int32, np.bool_):
        host = np.arange(4).astype(dtype)
        p, r = ri.device_put(host, device), RefArray(host)
        for other in (2, 2.5, True, 1j):
            for op in ("__add__", "__radd__", "__mul__", "__rsub__", "__lt__", "__pow__"):
                try:
                    want = getattr(r, op)(other)
                except TypeError as error:  # the same error on both
                    with pytest.raises(TypeError, match=re.escape(str(error)[:20])):
                        getattr(p, op)(other)
                    continue
                got = getattr(p, op)(other)
                where = (dtype, other, op)
                assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), where
                np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# --- an input deleted between signature and execute ------------------------


class _Deleter:
    """A static argument whose __hash__ deletes an array (Python code inside the
    fast path's signature computation)."""

    def __init__(self, victim):
        self.victim = victim

    def __hash__(self):
        self.victim.delete()
        return 7

    def __eq__(self, other):
        return isinstance(other, _Deleter)


@pytest.mark.parametrize("backend", ["pjrt", "ref"])
def test_input_deleted_by_a_static_hash_is_the_deleted_error(backend, device):
    f = ri.jit(lambda v, s: v + 1, static_argnums=1, backend=backend)
    place = device if backend == "pjrt" else None
    warm = ri.device_put(np.arange(3, dtype=np.float32), place)
    f(warm, _Deleter(ri.device_put(np.ones(1), place)))  # compile: the victim is another array
    for _ in range(2):  # the miss, then the hit
        x = ri.device_put(np.arange(3, dtype=np.float32), place)
        with pytest.raises(RuntimeError, match="has been deleted"):
            f(x, _Deleter(x))


def test_input_deleted_by_another_thread_during_compile(device):
    """The first (compiling) call runs Python: another thread deletes the input."""
    started = threading.Event()

    def slow_fun(v):
        started.set()
        threading.Event().wait(0.05)  # let the other thread run while tracing
        return v * 3

    f = ri.jit(slow_fun, backend="pjrt")
    x = _x(device)
    deleter = threading.Thread(target=lambda: (started.wait(5), x.delete()))
    deleter.start()
    with pytest.raises(RuntimeError, match="has been deleted"):
        f(x)
    deleter.join()
    assert x.is_deleted()
    np.testing.assert_allclose(np.asarray(f(_x(device))), np.arange(4) * 3)


def test_reference_input_deleted_by_a_static_hash_on_pjrt():
    """A reference array copied in by the pjrt fast path: not NaN, the deleted error."""
    f = ri.jit(lambda v, s: v + 1, static_argnums=1, backend="pjrt")
    for shape in [(), (3,)]:
        f(RefArray(np.zeros(shape, np.float32)), _Deleter(RefArray(np.zeros(1))))  # the entry
        x = RefArray(np.zeros(shape, np.float32))
        with pytest.raises(RuntimeError, match="has been deleted"):
            f(x, _Deleter(x))  # a C++ hit whose reference input is deleted by the hash


# --- deep pytrees ------------------------------------------------------------


@pytest.mark.parametrize("backend", ["pjrt", "ref"])
def test_deep_pytree_is_a_recursion_error(backend, device):
    deep: list = [np.float32(1.0)]
    for _ in range(50_000):
        deep = [deep]
    f = ri.jit(lambda t: 0.0, backend=backend)
    with pytest.raises(RecursionError):
        f(deep)
    assert float(f([[1.0]])) == 0.0  # the process and the function still work


# --- device_put of a PJRT array -------------------------------------


def _arrays(device):
    f = ri.jit(lambda v: v + 0, backend="pjrt")
    x = _x(device)
    return {
        "device_put": _x(device),
        "fast_output": f(x),
        "eager": x + 1,
        "ref": RefArray(np.arange(4, dtype=np.float32)),
    }


@pytest.mark.parametrize("kind", ["device_put", "fast_output", "eager", "ref"])
def test_device_put_repeated_donation_deletes_nothing(kind, device):
    a = _arrays(device)[kind]
    for target in (device, None, ri.devices("ref")[0]):
        with pytest.raises(ValueError, match="twice"):
            ri.device_put((a, a), target, donate=True)
        assert not a.is_deleted()
    np.testing.assert_allclose(np.asarray(a), np.asarray(_arrays(device)[kind]))


@pytest.mark.parametrize("kind", ["device_put", "fast_output", "eager"])
def test_device_put_keeps_a_pjrt_array_on_its_device(kind, device):
    a = _arrays(device)[kind]
    value = np.asarray(a).copy()
    b = ri.device_put(a)
    assert type(b) is type(a) and b.device == a.device and b.committed == a.committed
    where = a.device
    c = ri.device_put(a, donate=True)
    assert type(c) is type(a) and c.device == where and a.is_deleted()
    np.testing.assert_array_equal(np.asarray(c), value)


# --- a failed call deletes no donated input ------------------------


class _Box:
    fail = False

    def __init__(self, value):
        self.value = value


def _unflatten_box(data, children):
    if _Box.fail:
        raise ValueError("unflatten refused")
    return _Box(children[0])


ri.register_pytree_node(_Box, lambda b: ((b.value,), None), _unflatten_box)


def test_failed_output_unflatten_deletes_no_donated_input(device):
    f = ri.jit(lambda v: _Box(v * 2), backend="pjrt", donate_argnums=0)
    np.testing.assert_allclose(np.asarray(f(_x(device)).value), np.arange(4) * 2)
    x = _x(device)
    _Box.fail = True
    try:
        with pytest.raises(ValueError, match="unflatten refused"):
            f(x)
    finally:
        _Box.fail = False
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.arange(4))
    out = f(x)  # a successful call still donates
    assert x.is_deleted()
    np.testing.assert_allclose(np.asarray(out.value), np.arange(4) * 2)


def test_without_the_extension_ref_works_and_pjrt_says_what_to_run():
    """``refimpl._pjrt`` made unimportable: the reference backend is unaffected,
    and asking for pjrt is an ImportError naming the build command."""
    import subprocess

    code = """
import sys
sys.modules["refimpl._pjrt"] = None  # import refimpl._pjrt now raises ImportError
import numpy as np
import refimpl as ri
import refimpl.numpy as rnp
assert float(ri.jit(lambda x: rnp.sin(x) + 1)(np.float32(0.0))) == 1.0
assert float(ri.device_put(np.float32(2.0)) * 3) == 6.0
try:
    ri.jit(lambda x: x, backend="pjrt")(np.float32(0.0))
except ImportError as err:
    print(err)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "pip install" in out.stdout and "backend='ref'" in out.stdout
