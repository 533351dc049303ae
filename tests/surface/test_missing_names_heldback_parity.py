"""Issue 29, lane NAMES2: public JAX 0.10.2 names refimpl lacked, now
provided under ``refimpl.as_jax`` and compared with JAX live.

* ``jax.experimental.io_callback``: eager, ``jit`` (kept when its results
  are unused, in order), ``vmap`` (unordered: per element; ordered: JAX's
  ValueError), ``grad``/``jvp`` (JAX's ValueError unless no tangent reaches
  it), loops and branches, pytrees and keyword arguments, cast results.

Each program runs on JAX and, with ``jax`` aliased to refimpl, on the ref
and pjrt backends; a program's summary is per leaf (dtype, weak type,
shape, values) or the exception's class and message start, with the values
the callback saw.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

from refimpl import as_jax

# --- io_callback ------------------------------------------------------------------------------


_PHRASES = (
    "IO callbacks do not support JVP.",
    "Cannot `vmap` ordered IO callback.",
    "result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled",
    "IO effect not supported in vmap-of-cond.",
    "IO callbacks do not support transpose.",
    "Pure callbacks do not support transpose.",
    "Unordered IO effects not supported in while_loop with batched predicate",
    "Effects not supported in partial-eval of `checkpoint`/`remat`",
)


def _summary(api: Any, thunk: Callable[[], Any], seen: list) -> tuple:
    seen.clear()
    try:
        out = thunk()
        result: Any = [
            (str(x.dtype), bool(x.aval.weak_type), x.shape, np.asarray(x).tolist())
            for x in api.tree_util.tree_leaves(out)
        ]
    except Exception as error:  # JAX's exceptions for these programs
        # the class and which of JAX's phrases the message has (refimpl prefixes its API name)
        result = (type(error).__name__, [p for p in _PHRASES if p in str(error)])
    api.effects_barrier()
    return result, list(seen)


def _io_programs(api: Any) -> dict[str, Callable[[], Any]]:
    """io_callback programs of python_callback_test/api_test's kinds."""
    io_callback = importlib.import_module(api.__name__ + ".experimental").io_callback
    lax, jnp = api.lax, api.numpy
    f32, i32 = api.ShapeDtypeStruct((), jnp.float32), api.ShapeDtypeStruct((), jnp.int32)
    seen = _SEEN

    def record(x):
        seen.append(np.asarray(x).tolist())
        return np.asarray(x) * 2

    def io(x, spec=f32, **kw):
        return io_callback(record, spec, x, **kw)

    def five(x):
        for i in range(5):
            io(x + i, ordered=True)
        return x

    def nested(x):
        inner = api.jit(lambda y: (io(y, ordered=True), y)[1])
        return inner(x) + io(x + 10, ordered=True)

    def scan_sum(xs):
        return lax.scan(lambda c, x: (c + io(x, ordered=True), None), 0.0, xs)[0]

    def branch(p, x):
        return lax.cond(p, io, lambda x: x, x)

    def note(x):  # an effect with no results
        seen.append(np.asarray(x).tolist())

    def two(x):
        io_callback(note, None, x)
        io_callback(note, None, 2 * x)

    def no_operands(pred):
        return lax.cond(pred, lambda: io_callback(note, None, 1.0), lambda: None)

    def loop_effects(x):
        def body(i):
            io_callback(note, None, x)
            return i + 1

        return lax.while_loop(lambda i: i < 2, body, 0)

    def tree(x):
        def cb(a, b):
            return {"s": a + b["c"], "t": a * 0}

        return io_callback(cb, {"s": f32, "t": f32}, x, {"c": x})

    return {
        "eager": lambda: io(1.0),
        "eager_int": lambda: io(3, i32),
        "jit": lambda: api.jit(lambda x: io(x) + 1)(1.0),
        "jit_unused": lambda: api.jit(lambda x: (io(x), x + 1)[1])(2.0),
        "jit_unused_ordered": lambda: api.jit(lambda x: (io(x, ordered=True), x + 1)[1])(2.0),
        "ordered_five": lambda: api.jit(five)(0.0),
        "nested_jit": lambda: api.jit(nested)(1.0),
        "jit_twice": lambda: [api.jit(io)(v) for v in (1.0, 2.0)],
        "vmap": lambda: api.vmap(io)(jnp.arange(3.0)),
        "jit_vmap": lambda: api.jit(api.vmap(io))(jnp.arange(3.0)),
        "vmap_ordered": lambda: api.vmap(lambda x: io(x, ordered=True))(jnp.arange(3.0)),
        "grad": lambda: api.grad(io)(1.0),
        "jit_grad": lambda: api.jit(api.grad(io))(1.0),
        "jvp": lambda: api.jvp(io, (1.0,), (1.0,)),
        "grad_no_tangent": lambda: api.grad(lambda x: io(1.0) * x)(2.0),
        "jvp_no_tangent": lambda: api.jvp(lambda x: io(2.0) + x, (1.0,), (1.0,)),
        "scan": lambda: scan_sum(jnp.arange(3.0)),
        "jit_scan": lambda: api.jit(scan_sum)(jnp.arange(3.0)),
        "fori_loop": lambda: api.jit(
            lambda: lax.fori_loop(0, 3, lambda i, c: c + io(i, i32, ordered=True), 0)
        )(),
        "fori_loop_unused": lambda: api.jit(
            lambda: lax.fori_loop(0, 3, lambda i, c: (io(i, i32), c + 1)[1], 0)
        )(),
        "cond_true": lambda: api.jit(branch)(True, 3.0),
        "cond_false": lambda: api.jit(branch)(False, 3.0),
        "checkpoint": lambda: api.jit(api.checkpoint(io))(1.0),
        "tree": lambda: api.jit(tree)(1.5),
        "kwargs": lambda: io_callback(lambda a, *, k: a + k, f32, 1.0, k=np.float32(2)),
        "cast_result": lambda: api.jit(lambda x: io_callback(np.float64, f32, x))(1.0),
        "no_results": lambda: api.jit(lambda x: io_callback(lambda a: record(a) and None, None, x))(
            4.0
        ),
        "x64_result_dtype": lambda: io(1.0, api.ShapeDtypeStruct((), np.float64)),
        # vmap of control flow holding one, checkpoint under grad, custom_jvp (JAX's refusals)
        "vmap_cond": lambda: api.vmap(branch)(jnp.array([True, False]), jnp.arange(2.0)),
        "vmap_cond_unbatched_index": lambda: api.vmap(lambda x: branch(True, x))(jnp.arange(2.0)),
        "vmap_while": lambda: api.vmap(
            lambda x: lax.while_loop(lambda c: c < 3, lambda c: io(c) * 0 + c + 1, x)
        )(jnp.arange(2.0)),
        "vmap_scan": lambda: api.vmap(scan_sum)(jnp.ones((2, 3))),
        "grad_checkpoint": lambda: api.grad(api.checkpoint(lambda x: io(2.0) * x))(3.0),
        "grad_custom_jvp": lambda: api.grad(_custom_jvp_io(api, io))(1.0),
        "vmap_unbatched_operand": lambda: api.vmap(lambda x, y: io(y) + x, in_axes=(0, None))(
            jnp.arange(2.0), 5.0
        ),
        # python_callback_test's IOCallbackTest: transpose, linearize, two effects
        # under vmap (all members' first, then all members' second), a cond of
        # operand-less callbacks, a while whose predicate vmap leaves unbatched
        "linear_transpose": lambda: api.linear_transpose(io, jnp.array(1.0))(jnp.array(1.0)),
        "linearize": lambda: api.linearize(io, 0.0),
        "vmap_two_effects": lambda: api.vmap(api.jit(two))(jnp.arange(3.0)),
        "vmap_cond_no_operands": lambda: api.vmap(no_operands)(jnp.array([True, True])),
        "vmap_while_unbatched_predicate": lambda: api.vmap(api.jit(loop_effects))(jnp.arange(3.0)),
        "pure_callback_transpose": lambda: api.linear_transpose(
            lambda x: api.pure_callback(np.negative, f32, x), jnp.array(1.0)
        )(jnp.array(1.0)),
        # pmap runs an ordered one per device (JAX's process has one device here)
        "pmap_ordered": lambda: api.pmap(lambda x: io(x, ordered=True))(jnp.arange(1.0)),
        "pmap": lambda: api.pmap(io)(jnp.arange(1.0)),
    }


def _custom_jvp_io(api: Any, io: Callable) -> Callable:
    f = api.custom_jvp(io)
    f.defjvp(lambda p, t: (f(p[0]), t[0] * 3))
    return f


_SEEN: list = []  # the values the callbacks saw, in order
_IO_NAMES = list(_io_programs(jax))


def _io_on(api: Any, name: str) -> tuple:
    return _summary(api, _io_programs(api)[name], _SEEN)


@pytest.mark.parametrize("name", _IO_NAMES)
def test_io_callback_as_jax(backend, name):
    want = _io_on(jax, name)
    with as_jax.aliased_jax(backend):
        import jax as aliased

        got = _io_on(aliased, name)
    assert got == want


def test_io_callback_errors_name_io_callback(backend):
    """A wrong result or a raising callback: refimpl's classes (JAX raises
    JaxRuntimeError for all: docs/semantics.md 15.7), named io_callback."""
    import refimpl as ri
    from refimpl.experimental import io_callback

    f32 = ri.ShapeDtypeStruct((), np.float32)
    with pytest.raises(TypeError, match=r"io_callback: result 0 .* shape \(2,\)"):
        io_callback(lambda a: np.zeros(2, np.float32), f32, 1.0)
    with pytest.raises(TypeError, match="io_callback: callback must be callable"):
        io_callback(3, f32, 1.0)
    with pytest.raises(NotImplementedError, match="only supports SingleDeviceSharding"):
        io_callback(np.sin, f32, 1.0, sharding=ri.devices()[0])  # (a device, not a sharding)
    bad = ri.jit(lambda x: io_callback(lambda a: 1 / 0, f32, x), backend=backend)
    raised = ZeroDivisionError if backend == "ref" else RuntimeError
    with pytest.raises(raised, match="division by zero"):
        bad(1.0)


@pytest.mark.parametrize("ordered", [False, True])
def test_io_callback_per_device_under_pmap(backend, four_ref_devices, ordered):
    """Once per device, ordered or not (JAX on 4 devices: [0, 2, 4, 6], each
    device's value seen once); a vmap inside refuses an ordered one."""
    import refimpl as ri
    from refimpl.experimental import io_callback

    seen = []

    def record(x):
        seen.append(float(x))
        return np.asarray(x) * 2

    f32 = ri.ShapeDtypeStruct((), np.float32)
    out = ri.pmap(lambda x: io_callback(record, f32, x, ordered=ordered))(
        np.arange(4.0, dtype=np.float32)
    )
    assert np.asarray(out).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert sorted(seen) == [0.0, 1.0, 2.0, 3.0]
    if ordered:
        inner = ri.vmap(lambda x: io_callback(record, f32, x, ordered=True))
        with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
            ri.pmap(inner)(np.ones((4, 2), np.float32))


# --- jax.monitoring ---------------------------------------------------------------------------

_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def _listen(monitoring: Any, kinds: tuple[str, ...]) -> tuple[list, Callable[[], None]]:
    """Listeners of the three kinds log_elapsed_time records, for JAX's
    compile events of the functions named f and g -> (the log, unregister)."""
    log: list = []

    def keep(kind: str, event: str, fun_name: Any) -> None:
        short = event.rsplit("/", 1)[1]
        if (
            event in _COMPILE_EVENTS
            and short in kinds
            and fun_name in ("f", "g", "jit(f)", "jit(g)")
        ):
            log.append((kind, short, fun_name))

    def duration(event, secs, **kw):
        assert isinstance(secs, float) and secs >= 0
        keep("duration", event, kw.get("fun_name"))

    def span(event, start, end, **kw):
        assert end >= start
        keep("span", event, kw.get("fun_name"))

    def scalar(event, value, **kw):
        keep("scalar", event, kw.get("fun_name"))

    monitoring.register_event_duration_secs_listener(duration)
    monitoring.register_event_time_span_listener(span)
    monitoring.register_scalar_listener(scalar)

    def unregister() -> None:
        monitoring.unregister_event_duration_listener(duration)
        monitoring.unregister_event_time_span_listener(span)
        monitoring.unregister_scalar_listener(scalar)

    return log, unregister


def _event_programs(api: Any) -> dict[str, Callable[[], Any]]:
    """Programs of fresh functions (so that each traces and compiles anew)."""

    def f(x):
        return x * 2

    def g(x):
        return api.jit(f)(x) + 1

    def twice():
        api.jit(f)(1.0)
        return api.jit(f)(2.0)  # a cache hit: no events

    def bad(x):
        return x.no_such_attribute

    return {
        "jit": lambda: api.jit(f)(1.0),
        "jit_twice": twice,
        "jit_two_shapes": lambda: [api.jit(f)(np.ones(n, np.float32)) for n in (2, 3)],
        "nested": lambda: api.jit(g)(1.0),
        "lower": lambda: api.jit(f).lower(1.0),
        "lower_compile": lambda: api.jit(f).lower(1.0).compile(),
        "trace_error": lambda: api.jit(_named(bad, "f"))(1.0),
    }


def _named(fun: Callable, name: str) -> Callable:
    fun.__name__ = fun.__qualname__ = name
    return fun


def _events_on(api: Any, name: str, kinds: tuple[str, ...]) -> list:
    monitoring = importlib.import_module(api.__name__ + ".monitoring")
    program = _event_programs(api)[name]
    log, unregister = _listen(monitoring, kinds)
    try:
        program()
    except AttributeError:
        pass
    finally:
        unregister()
    return log


@pytest.mark.parametrize("name", list(_event_programs(jax)))
def test_monitoring_compile_events_as_jax(backend, name):
    """JAX's trace event on both backends; pjrt also lowers and compiles, with
    JAX's two events (the ref backend interprets: a jit call records only its
    trace; ``lower``/``compile`` lower and compile on pjrt there too)."""
    kinds = ("jaxpr_trace_duration",)
    if backend == "pjrt" or name.startswith("lower"):
        kinds += ("jaxpr_to_mlir_module_duration", "backend_compile_duration")
    want = _events_on(jax, name, kinds)
    with as_jax.aliased_jax(backend):
        import jax as aliased

        got = _events_on(aliased, name, kinds)
    assert got == want
    assert name == "jit_twice" or want  # (the check has something to compare)


def test_monitoring_listener_api_as_jax():
    """Every kind of listener gets its events with their metadata; an
    unregistered one no more; unregistering twice is JAX's AssertionError."""

    def run(monitoring: Any) -> list:
        log: list = []
        listeners = {
            "event": lambda e, **kw: log.append(("event", e, kw)),
            "duration": lambda e, d, **kw: log.append(("duration", e, d, kw)),
            "span": lambda e, s, t, **kw: log.append(("span", e, s, t, kw)),
            "scalar": lambda e, v, **kw: log.append(("scalar", e, v, kw)),
        }
        register = {
            "event": (monitoring.register_event_listener, monitoring.unregister_event_listener),
            "duration": (
                monitoring.register_event_duration_secs_listener,
                monitoring.unregister_event_duration_listener,
            ),
            "span": (
                monitoring.register_event_time_span_listener,
                monitoring.unregister_event_time_span_listener,
            ),
            "scalar": (monitoring.register_scalar_listener, monitoring.unregister_scalar_listener),
        }
        for kind, (add, _) in register.items():
            add(listeners[kind])
        try:
            monitoring.record_event("/test/a", step=1, tag="x")
            monitoring.record_event_duration_secs("/test/b", 0.25, step=2)
            monitoring.record_event_time_span("/test/c", 1.0, 3.0)
            monitoring.record_scalar("/test/d", 7, unit="n")
        finally:
            for kind, (_, remove) in register.items():
                remove(listeners[kind])
        monitoring.record_event("/test/after")
        with pytest.raises(AssertionError):
            monitoring.unregister_event_listener(listeners["event"])
        return log

    want = run(jax.monitoring)
    with as_jax.aliased_jax("ref"):
        import jax as aliased

        got = run(aliased.monitoring)
    assert got == want and len(want) == 4


def test_monitoring_clear_event_listeners():
    """refimpl clears the four kinds (JAX 0.10.2 keeps its scalar listeners:
    its function rebinds a local name; docs/api.md)."""
    from refimpl import monitoring

    seen: list = []
    monitoring.register_event_listener(lambda e, **kw: seen.append(e))
    monitoring.register_scalar_listener(lambda e, v, **kw: seen.append(e))
    monitoring.clear_event_listeners()
    monitoring.record_event("/test/a")
    monitoring.record_scalar("/test/b", 1)
    assert seen == []


# --- jax.config: JAX 0.10.2's flags refimpl had no entry for ----------------------------------

# JAX's values are enums of its own (ExplicitX64Mode, RuntimeTracebackMode): not modelled
_CONFIG_UNREAD = {"jax_explicit_x64_dtypes", "jax_send_traceback_to_runtime"}


def _flag_names() -> list[str]:
    from refimpl.as_jax import _AT_DEFAULT, _NO_EFFECT

    names = {n: n for n in jax.config.values}
    return [names.get(f"jax_{n}", n) for n in sorted({*_AT_DEFAULT, *_NO_EFFECT})]


def test_every_jax_config_flag_reads_under_as_jax():
    """Each of JAX 0.10.2's flags reads under as_jax, but for its two enum
    flags (docs/api.md)."""
    with as_jax.aliased_jax("ref"):
        import jax as aliased

        unread = set()
        for name in jax.config.values:
            try:
                getattr(aliased.config, name)
            except AttributeError:
                unread.add(name)
    assert unread == _CONFIG_UNREAD


@pytest.mark.parametrize("name", _flag_names())
def test_config_flag_reads_jax_default_and_updates(name):
    """Read: JAX's default. Update to it: accepted. Another value: recorded
    without effect (diagnostics, performance, other platforms) or
    NotImplementedError (a mode refimpl does not have)."""
    from refimpl.as_jax import _AT_DEFAULT

    default = jax.config.values[name]
    short = name[4:] if name.startswith("jax_") else name
    with as_jax.aliased_jax("ref"):
        import jax as aliased

        config = aliased.config
        assert getattr(config, name) == default
        config.update(name, default)
        other = _another_value(default)
        if short == "platform_name":  # device selection: refimpl's backend, the update ignored
            config.update(name, "cpu")
        elif short in _AT_DEFAULT:
            with pytest.raises(NotImplementedError, match="default"):
                config.update(name, other)
            assert getattr(config, name) == default
        else:
            config.update(name, other)
            try:
                assert getattr(config, name) == other
            finally:
                config.update(name, default)


def _another_value(default: Any) -> Any:
    if isinstance(default, bool):
        return not default
    if isinstance(default, (int, float)):
        return default + 1
    if default is None:
        return "set"
    return f"{default}-other"


@pytest.mark.parametrize("api_name", ["io_callback", "pure_callback"])
@pytest.mark.parametrize("kind", ["single_device", "named"])
def test_callback_sharding_as_jax(backend, api_name, kind):
    """A SingleDeviceSharding (the device a callback runs from) is accepted,
    eager and under jit; a NamedSharding is JAX's NotImplementedError."""

    def run(api: Any) -> list:
        f32 = api.ShapeDtypeStruct((), np.float32)
        device = api.devices()[0]
        mesh = api.sharding.Mesh(np.array([device]), ("x",))
        sharding = {
            "single_device": api.sharding.SingleDeviceSharding(device),
            "named": api.sharding.NamedSharding(mesh, api.sharding.PartitionSpec()),
        }[kind]
        call = (
            importlib.import_module(api.__name__ + ".experimental").io_callback
            if api_name == "io_callback"
            else api.pure_callback
        )

        def f(x):
            return call(lambda v: np.asarray(v) * 2, f32, x, sharding=sharding)

        out: list[Any] = []
        for g in (f, api.jit(f)):
            try:
                out.append(float(g(1.5)))
            except NotImplementedError as error:
                out.append(str(error).split(", but")[0])
        return out

    want = run(jax)
    with as_jax.aliased_jax(backend):
        import jax as aliased

        got = run(aliased)
    assert got == want


# --- jax.extend.random.define_prng_impl -------------------------------------------------------


def _user_impl(api: Any) -> Any:
    """A small counter hash as a user PRNG implementation (key_shape (2,))."""
    jnp = api.numpy
    u32 = np.uint32

    def mix(a, b):
        a = a ^ (b * u32(0x9E3779B9))
        a = a ^ (a >> u32(16))
        a = a * u32(0x85EBCA6B)
        return a ^ (a >> u32(13))

    def seed(s):
        s = jnp.asarray(s).astype(jnp.uint32)
        one, two = jnp.asarray(1, jnp.uint32), jnp.asarray(2, jnp.uint32)  # (arrays: they wrap)
        return jnp.stack([mix(s, one), mix(s, two)])

    def split(k, shape):
        c = jnp.arange(int(np.prod(shape)), dtype=jnp.uint32)
        return jnp.stack([mix(k[0] + c, k[1]), mix(k[1] + c, k[0])], axis=-1).reshape((*shape, 2))

    def fold_in(k, d):
        return jnp.stack([mix(k[0], d), mix(k[1], d + u32(7))])

    def random_bits(k, bit_width, shape):
        c = jnp.arange(int(np.prod(shape)), dtype=jnp.uint32)
        dtype = {8: jnp.uint8, 16: jnp.uint16, 32: jnp.uint32}[bit_width]
        return mix(k[0] ^ c, k[1]).astype(dtype).reshape(shape)

    define = importlib.import_module(api.__name__ + ".extend.random").define_prng_impl
    return define(
        key_shape=(2,), seed=seed, split=split, fold_in=fold_in, random_bits=random_bits,
        name="counter_hash", tag="ch",
    )  # fmt: skip


def _user_impl_programs(api: Any) -> dict[str, Any]:
    impl = _user_impl(api)
    random, jnp = api.random, api.numpy
    k = random.key(42, impl=impl)
    data = random.key_data
    return {
        "key": lambda: data(k),
        "key_impl": lambda: random.key_impl(k) == impl,
        "dtype": lambda: str(k.dtype),
        "split": lambda: data(random.split(k, 3)),
        "fold_in": lambda: data(random.fold_in(k, 5)),
        "bits": lambda: random.bits(k, (4,)),
        "bits8": lambda: random.bits(k, (3,), jnp.uint8),
        "uniform": lambda: random.uniform(k, (3,)),
        "normal": lambda: random.normal(k, (2,)),
        "randint": lambda: random.randint(k, (3,), 0, 10),
        "permutation": lambda: random.permutation(k, 5),
        "jit": lambda: api.jit(lambda k: random.uniform(random.split(k)[1], (2,)))(k),
        "vmap_fold_in": lambda: data(
            api.vmap(lambda d: random.fold_in(k, d))(jnp.arange(3, dtype=jnp.uint32))
        ),
        "vmap_uniform": lambda: api.vmap(lambda kk: random.uniform(kk, (2,)))(random.split(k, 3)),
        "wrap_key_data": lambda: (
            data(random.wrap_key_data(jnp.array([[1, 2], [3, 4]], jnp.uint32), impl=impl)),
            random.key_impl(random.wrap_key_data(jnp.array([1, 2], jnp.uint32), impl=impl)) == impl,
        ),
    }


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return (str(value.dtype), np.asarray(value).tolist())


@pytest.mark.parametrize("name", list(_user_impl_programs(jax)))
def test_define_prng_impl_as_jax(backend, name):
    """A user's PRNG implementation: keys, split, fold_in, bits and the
    samplers built on them, eager, under jit and vmap, as JAX computes them."""
    want = _plain(_user_impl_programs(jax)[name]())
    with as_jax.aliased_jax(backend):
        import jax as aliased

        got = _plain(_user_impl_programs(aliased)[name]())
    if name in ("uniform", "normal", "jit", "vmap_uniform"):
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)
        assert got[0] == want[0]
    else:
        assert got == want


def test_define_prng_impl_multi_dimensional_key_shape():
    """JAX's key data may have several axes; refimpl's keys hold one axis of
    words (NotImplementedError at definition; docs/api.md)."""
    from refimpl.extend.random import define_prng_impl

    with pytest.raises(NotImplementedError, match="one dimension"):
        define_prng_impl(
            key_shape=(4, 2, 7), seed=np.ones, split=None, fold_in=None, random_bits=None
        )


def test_compile_listeners_run_after_the_compile_lock():
    """A listener is user code: one that calls the function being compiled
    (on the pjrt backend) finds it compiled, not a second compile nested in
    the first under its executables' lock (which recursed, a compile per
    call, until the listener stopped)."""
    import refimpl as ri
    from refimpl import monitoring

    f = ri.jit(lambda x: x * 3.0, backend="pjrt")
    compiles: list = []

    def listener(event: str, duration: float, **kwargs: Any) -> None:
        if event != monitoring.BACKEND_COMPILE_EVENT:
            return
        compiles.append(kwargs.get("fun_name"))
        if len(compiles) < 5:
            assert float(f(np.float32(2.0))) == 6.0

    monitoring.register_event_duration_secs_listener(listener)
    try:
        assert float(f(np.float32(1.0))) == 3.0
    finally:
        monitoring.unregister_event_duration_listener(listener)
    assert compiles == ["jit(<lambda>)"]
