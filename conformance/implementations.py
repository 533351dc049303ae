"""Implementations: how the suite reaches one JAX-like system.

An ``Implementation`` builds the ``Namespace`` cases are written against and
answers the questions the comparison needs about its arrays (value, weak
type, deleted or not, buffer address) and its jitted functions (how many
traces). The three built in:

* ``ref``  -- refimpl with the reference interpreter (``backend="ref"``),
* ``pjrt`` -- refimpl with ``jit(..., backend="pjrt")``; available once
  ``refimpl.backends.pjrt.backend`` can run a tiny program,
* ``jax``  -- ``jax.numpy`` / ``jax.lax`` / ``jax.jit``; available when jax
  is installed.

A third party adds one by subclassing ``Implementation`` and registering it
(see conformance/README.md for a worked example).
"""

from __future__ import annotations

import abc
import contextlib
import functools
import importlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.namespace import Namespace, Unsupported, resolve


class Implementation(abc.ABC):
    """One JAX-like system under test.

    Subclasses must set ``name`` and implement ``available``, ``namespace``,
    ``is_array`` and ``trace_count``; the other methods have defaults that
    follow the ``jax.Array`` protocol (``.weak_type``, ``.is_deleted()``,
    ``.unsafe_buffer_pointer()``, ``np.asarray``).
    """

    name: str = "?"
    description: str = ""
    # Whether donation follows SPEC exactly (every donated input deleted); the fuzzer
    # compares deletion only between implementations that do.
    spec_donation: bool = True

    def __init__(self) -> None:
        self._namespace: Namespace | None = None
        self._probes: dict[str, str | None] = {}
        self.unavailable_reason = ""

    def __repr__(self) -> str:
        return f"<Implementation {self.name}>"

    # -- required --

    @abc.abstractmethod
    def available(self) -> bool:
        """Whether this implementation can run here (set ``unavailable_reason`` if not)."""

    @abc.abstractmethod
    def make_namespace(self) -> Namespace:
        """Build the Namespace (called once, lazily, after ``available()``)."""

    @abc.abstractmethod
    def is_array(self, x: Any) -> bool:
        """Whether ``x`` is an array of this implementation (not a NumPy array)."""

    @abc.abstractmethod
    def trace_count(self, jitted: Any) -> int:
        """How many signatures ``jitted`` has traced and cached so far."""

    # -- with defaults --

    def is_available(self) -> bool:
        """``available()``, asked once."""
        if not hasattr(self, "_available"):
            self._available = bool(self.available())
        return self._available

    def namespace(self) -> Namespace:
        if self._namespace is None:
            self._namespace = self.make_namespace()
        return self._namespace

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.array(x, copy=True)

    def weak_type(self, x: Any) -> bool:
        return bool(x.weak_type)

    def is_deleted(self, x: Any) -> bool:
        return bool(x.is_deleted())

    def buffer_pointer(self, x: Any) -> int:
        return int(x.unsafe_buffer_pointer())

    def from_numpy(self, x: np.ndarray) -> Any:
        """An array of this implementation with the value of ``x``."""
        return self.namespace().device_put(x)

    @contextlib.contextmanager
    def session(self, *, x64: bool = False) -> Iterator[None]:
        """Context for running one case (global flags set and restored)."""
        if x64:
            raise NotImplementedError(f"{self.name} cannot run x64 cases")
        yield

    def missing_feature(self, feature: str) -> str | None:
        """Why ``feature`` is unsupported, or None if it is supported.

        A feature is a dotted path on the Namespace (``"lax_.scan"``,
        ``"np_.einsum"``, ``"mask"``) or the name of a behaviour probed by a
        ``probe_<name>`` method (``"donation"``). Results are cached.
        """
        if feature not in self._probes:
            self._probes[feature] = self._find_missing(feature)
        return self._probes[feature]

    def probe_donation(self) -> str | None:
        """Behaviour probes default to "supported"; an implementation overrides them."""
        return None

    def saved_residuals(self, fun: Callable[..., Any], *args: Any) -> list[tuple[Any, str]]:
        """``(aval, source)`` per value reverse mode saves from ``fun(*args)``'s
        forward pass for its backward pass, as ``jax.ad_checkpoint.saved_residuals``
        reports them: the aval has ``.shape``, ``.dtype``, ``.weak_type``; the
        source is its words (``from the argument x``, ``from a literal``, ``output
        of sin``...; ``""`` when the implementation does not say). ``Unsupported``
        when the implementation cannot tell."""
        api = self.namespace().api
        try:
            module = importlib.import_module(f"{api.__name__}.ad_checkpoint")
        except ImportError as exc:
            raise Unsupported(f"{self.name} has no ad_checkpoint") from exc
        if hasattr(module, "residual_sources"):  # refimpl
            return list(module.residual_sources(fun, *args))
        if not hasattr(module, "saved_residuals"):
            raise Unsupported(f"{self.name} has no ad_checkpoint.saved_residuals")
        return [r if isinstance(r, tuple) else (r, "") for r in module.saved_residuals(fun, *args)]

    def _find_missing(self, feature: str) -> str | None:
        probe = getattr(self, "probe_" + feature, None)
        if probe is not None:
            return probe()
        try:
            resolve(self.namespace(), feature)
        except Exception as exc:  # AttributeError, Unsupported, ImportError ...
            return f"{self.name} has no {feature} ({type(exc).__name__}: {exc})"
        return None


def quiet_native_logs() -> None:
    """Keep XLA's log lines (``I1124 ... PjRt-IFRT device count``, ``E1124 ...
    previously donated``) off stderr: jaxlib and the PJRT plugin both read
    ``TF_CPP_MIN_LOG_LEVEL`` before they first log. A level the user set is
    kept; ``REFIMPL_PJRT_LOG=1`` (``--native-logs``) shows everything."""
    if os.environ.get("REFIMPL_PJRT_LOG", "0") in ("", "0"):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


EXACT_16BIT_FLAG = "--xla_allow_excess_precision=false"


def exact_16bit_oracle() -> None:
    """Make JAX round 16-bit floats after every operation, as refimpl defines
    them (StableHLO's semantics; docs/semantics.md, "16-bit floats").

    By default XLA may keep float16/bfloat16 intermediates in float32 inside a
    fusion and round once, depending on the host CPU: an oracle that changes
    with the machine cannot judge bits. The flag goes last in ``XLA_FLAGS`` (the
    last occurrence wins, so a user's ``=true`` is overridden for the oracle),
    and only takes effect before jaxlib starts its backend; refimpl's pjrt
    backend sets the same option per compile (``compile_overrides``).
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if not flags.rstrip().endswith(EXACT_16BIT_FLAG):
        os.environ["XLA_FLAGS"] = f"{flags} {EXACT_16BIT_FLAG}".strip()


# --- refimpl ---------------------------------------------------------------------


class RefImplementation(Implementation):
    """refimpl, every jit on the reference interpreter."""

    name = "ref"
    backend = "ref"
    description = "refimpl, reference interpreter (backend='ref')"

    def available(self) -> bool:
        try:
            import refimpl  # noqa: F401
        except Exception as exc:
            self.unavailable_reason = f"refimpl does not import: {exc}"
            return False
        return True

    def make_namespace(self) -> Namespace:
        import refimpl as ri
        import refimpl.numpy as rnp

        return Namespace(
            self,
            np_=rnp,
            lax_=ri.lax,
            jit=functools.partial(_jit_with_backend, ri.jit, self.backend),
            device_put=ri.device_put,
            mask=getattr(ri, "mask", None),
            eval_shape=ri.eval_shape,
        )

    def is_array(self, x: Any) -> bool:
        import refimpl as ri

        return isinstance(x, ri.Array)

    def trace_count(self, jitted: Any) -> int:
        return int(jitted._cache_size())

    @contextlib.contextmanager
    def session(self, *, x64: bool = False) -> Iterator[None]:
        import refimpl as ri

        saved = ri.config.snapshot()
        ri.config.update("backend", self.backend)
        ri.config.update("enable_x64", x64)
        try:
            yield
        finally:
            ri.config.update("backend", saved["backend"])
            ri.config.update("enable_x64", saved["enable_x64"])

    def probe_donation(self) -> str | None:
        """Donation is implemented when a donated input ends up deleted."""
        with self.session():
            ns = self.namespace()
            try:
                x = ns.asarray(np.ones(3, np.float32))
                ns.jit(lambda a: a + 1, donate_argnums=0)(x)
                deleted = ns.is_deleted(x)
            except Exception as exc:
                return f"{self.name}: donation fails ({type(exc).__name__}: {exc})"
        return None if deleted else f"{self.name}: donation not implemented (input not deleted)"


def _jit_with_backend(jit: Callable[..., Any], backend: str, fun: Any = None, **kw: Any) -> Any:
    kw.setdefault("backend", backend)
    if fun is None:
        return lambda f: jit(f, **kw)
    return jit(fun, **kw)


class PjrtImplementation(RefImplementation):
    """refimpl with every jit compiled and run through PJRT."""

    name = "pjrt"
    backend = "pjrt"
    description = "refimpl, PJRT fast path (backend='pjrt')"

    def available(self) -> bool:
        if not super().available():
            return False
        try:
            import refimpl as ri

            with self.session():
                out = ri.jit(lambda x: x + 1, backend="pjrt")(np.arange(3, dtype=np.float32))
                ok = np.array_equal(np.asarray(out), np.arange(1, 4, dtype=np.float32))
        except Exception as exc:
            self.unavailable_reason = "jit(backend='pjrt') fails: " + _brief(exc)
            return False
        if not ok:
            self.unavailable_reason = "jit(backend='pjrt') computes a wrong x + 1"
        return ok

    def from_numpy(self, x: np.ndarray) -> Any:
        import refimpl as ri

        return ri.device_put(x, ri.devices("pjrt")[0])

    def is_array(self, x: Any) -> bool:
        import refimpl as ri

        if isinstance(x, ri.Array):
            return True
        return hasattr(x, "unsafe_buffer_pointer") and hasattr(x, "weak_type")


# --- jax -------------------------------------------------------------------------------

HOST_DEVICES = 4  # what the pmap, collective and sharding cases are written for


def want_host_devices(count: int = HOST_DEVICES) -> None:
    """Ask XLA's CPU client for ``count`` host devices by adding
    ``--xla_force_host_platform_device_count`` to ``XLA_FLAGS``, so that JAX runs the
    cases written for several devices instead of skipping them. XLA reads the flag
    once, when jaxlib starts its backend: so this is done only when jax is not
    imported yet and the flag is not set already (a user's own setting wins)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if _jax_backend_started() or "xla_force_host_platform_device_count" in flags:
        return
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()


def prepare_jax_flags() -> None:
    """Put the jax oracle's XLA flags (exact 16-bit rounding, 4 host devices) in
    ``XLA_FLAGS`` at the start of a process that may run jax: XLA may read them
    as soon as any XLA library is loaded, the PJRT plugin of the pjrt
    implementation included (checked: with the plugin loaded first, a flag added
    afterwards no longer gave JAX its 4 devices)."""
    exact_16bit_oracle()
    want_host_devices()


def _jax_backend_started() -> bool:
    """Whether jaxlib has made its backends (after which XLA_FLAGS is read no more):
    importing jax does not start them, its first device query or computation does."""
    import sys

    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge  # private: JAX has no public "started" query

        return bool(xla_bridge._backends)
    except Exception:
        return True  # cannot tell: leave the flags alone


class JaxImplementation(Implementation):
    """Real JAX on its CPU backend: the behaviour refimpl follows."""

    name = "jax"
    description = "jax.numpy / jax.lax / jax.jit"
    spec_donation = False  # unusable donated inputs stay alive (conformance/known.py)

    def available(self) -> bool:
        quiet_native_logs()  # before jaxlib loads
        exact_16bit_oracle()
        want_host_devices()  # the pmap and sharding cases run on 4 devices
        try:
            import jax  # noqa: F401
        except Exception as exc:
            self.unavailable_reason = f"jax is not installed ({_brief(exc)})"
            return False
        return True

    def make_namespace(self) -> Namespace:
        import jax
        import jax.numpy as jnp

        return Namespace(
            self,
            np_=jnp,
            lax_=jax.lax,
            jit=jax.jit,
            device_put=jax.device_put,
            mask=None,  # jax.mask was removed in 2021
            eval_shape=jax.eval_shape,
        )

    def is_array(self, x: Any) -> bool:
        import jax

        return isinstance(x, jax.Array)

    def from_numpy(self, x: np.ndarray) -> Any:
        import jax.numpy as jnp

        # a buffer owned by the runtime (device_put may alias NumPy's memory on CPU,
        # and such a buffer cannot be donated), complete before it is used
        return jnp.array(x, copy=True).block_until_ready()

    def trace_count(self, jitted: Any) -> int:
        return int(jitted._cache_size())

    def saved_residuals(self, fun: Callable[..., Any], *args: Any) -> list[tuple[Any, str]]:
        # JAX 0.10.2 keeps it private: jax._src.ad_checkpoint.saved_residuals gives
        # (aval, "from the argument x" / "output of cos from file:line") pairs
        from jax._src.ad_checkpoint import saved_residuals

        return list(saved_residuals(fun, *args))

    @contextlib.contextmanager
    def session(self, *, x64: bool = False) -> Iterator[None]:
        import jax

        saved = bool(jax.config.jax_enable_x64)
        jax.config.update("jax_enable_x64", x64)
        try:
            yield
        finally:
            jax.config.update("jax_enable_x64", saved)


def _brief(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}"


# --- the registry ---------------------------------------------------------------------

_REGISTRY: dict[str, Callable[[], Implementation]] = {
    "ref": RefImplementation,
    "pjrt": PjrtImplementation,
    "jax": JaxImplementation,
}
_INSTANCES: dict[str, Implementation] = {}


def register(name: str, factory: Callable[[], Implementation]) -> None:
    """Make ``--impl NAME`` (and ``run(impls=[NAME])``) use ``factory()``."""
    _REGISTRY[name] = factory
    _INSTANCES.pop(name, None)


def registered_names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Implementation:
    """The (shared) instance of a registered implementation."""
    if name not in _REGISTRY:
        known = ", ".join(_REGISTRY)
        raise KeyError(f"unknown implementation {name!r} (known: {known})")
    if name not in _INSTANCES:
        impl = _REGISTRY[name]()
        if impl.name != name:
            impl.name = name
        _INSTANCES[name] = impl
    return _INSTANCES[name]
