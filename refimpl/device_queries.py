"""Host transfer and device queries of JAX's top-level namespace:
``block_until_ready``, ``device_get``, ``local_devices``, ``device_count``,
``local_device_count``, ``live_arrays``, ``process_index``, ``process_count``,
``print_environment_info`` and the ``default_device`` context (each with
``jax.<name>``'s signature in JAX 0.10.2; docs/api.md, "Top-level
utilities").
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from refimpl import backends, pytree, tracing
from refimpl.array import Array
from refimpl.config import config

# --- host transfer -----------------------------------------------------------------------


def block_until_ready(x: Any) -> Any:
    """Wait until every array leaf of the pytree ``x`` is computed; returns ``x``.

    Leaves without ``block_until_ready`` (NumPy arrays, Python scalars, None)
    are passed over, as in JAX. On the reference backend every array is
    computed when the operation returns, so there is nothing to wait for; on
    pjrt it waits for the device's buffers (to time a computation, or to
    see a failure where it happens). Tracer leaves are passed over.

    Args:
        x: A pytree (any leaves).

    Returns:
        ``x`` itself.

    Raises:
        RuntimeError: An array leaf has been deleted (donated), or its
            computation failed on the device.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> ri.block_until_ready({"a": rnp.arange(3), "b": 1})
        {'a': Array([0, 1, 2], dtype=int32), 'b': 1}
    """
    for leaf in pytree.tree_leaves(x):
        wait = getattr(leaf, "block_until_ready", None)
        if wait is not None and not isinstance(leaf, tracing.Tracer):
            wait()
    return x


def device_get(x: Any) -> Any:
    """The pytree ``x`` with every refimpl array leaf copied to a NumPy array.

    Other leaves (NumPy arrays, Python scalars, strings) are returned as they
    are, as ``jax.device_get``. A tracer leaf is a ``ConcretizationTypeError``
    (its value does not exist yet); a deleted array raises its usual error.
    The copies are the caller's: writing to them never changes the arrays.

    Args:
        x: A pytree of refimpl arrays and other values.

    Returns:
        ``x``'s structure with ``np.ndarray`` leaves in place of the arrays.

    Raises:
        ConcretizationTypeError: A leaf is a tracer (inside ``jit``,
            ``vmap``, ``grad``, ...).
        RuntimeError: An array leaf has been deleted (donated).

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> ri.device_get((rnp.arange(2), "s", 3))
        (array([0, 1], dtype=int32), 's', 3)
    """

    def get(leaf: Any) -> Any:
        if isinstance(leaf, tracing.Tracer):
            raise tracing.ConcretizationTypeError(
                "device_get: a leaf is a traced value (inside jit/vmap/grad); its value is "
                "only known when the computation runs"
            )
        if isinstance(leaf, Array):
            return np.asarray(leaf)
        return leaf

    return pytree.tree_map(get, x)


# --- devices -----------------------------------------------------------------------------


def _check_backend(name: str, backend: Any) -> str:
    chosen = backend if backend is not None else config.backend
    if chosen == "cpu":  # JAX's host platform: both backends run on it (devices())
        chosen = backends.host_backend(config.backend)
    if chosen not in backends.names():
        raise ValueError(
            f"{name}: unknown backend {chosen!r}; use 'ref', 'pjrt' or 'cpu' (or None)"
        )
    return chosen


def local_devices(
    process_index: int | None = None, backend: str | None = None, host_id: int | None = None
) -> list[Any]:
    """The devices of ``backend`` (default: ``config.backend``) in this process.

    refimpl runs in one process: this is ``devices(backend)``, unless
    ``ref_num_processes`` splits the reference devices among simulated
    processes (docs/semantics.md "Beyond one process"); then
    ``process_index`` (or the older ``host_id``) picks whose devices, None
    meaning this process's (0).
    The reference backend has ``config.ref_num_devices`` simulated devices
    (default 1); pjrt's CPU client has its own count, which may differ
    from JAX's.

    Args:
        process_index: The process whose devices are asked for (None: this one).
        backend: ``"ref"``, ``"pjrt"``, ``"cpu"`` (as ``devices``) or None (the
            default backend).
        host_id: The older name of ``process_index``.

    Returns:
        A list of the backend's devices, in id order.

    Raises:
        ValueError: An unknown ``backend``, or a process index that does not exist.

    Example:
        >>> import refimpl as ri
        >>> ri.local_devices(backend="ref")[0]
        Device(id=0, platform='ref')
    """
    chosen = _check_backend("local_devices", backend)
    index = process_index if process_index is not None else host_id
    devices = list(backends.get(chosen).devices())
    count = _process_count(devices)
    if index is not None and not (isinstance(index, int) and 0 <= index < count):
        raise ValueError(
            f"local_devices: process_index {index!r} does not exist; there are {count} "
            "process(es) (0 is this one)"
        )
    wanted = 0 if index is None else index
    return [d for d in devices if getattr(d, "process_index", 0) == wanted]


def live_arrays(platform: str | None = None) -> list[Any]:
    """The arrays alive on ``platform``'s devices, as ``jax.live_arrays``.

    Every array of that backend that is referenced (not yet garbage) and not
    deleted or donated; an array over several devices (a sharded array, a
    pmap output) is one entry, its blocks none. Constants a compiled program
    keeps are not arrays and are not listed (JAX's are not either). The
    order is unspecified. Counting them finds leaks: after a function runs
    and its results are dropped, the count is back where it was.

    Args:
        platform: ``"ref"``, ``"pjrt"``, ``"cpu"`` (the host backend, as
            ``local_devices``) or None (the default backend).

    Returns:
        A list of ``refimpl.Array``.

    Raises:
        ValueError: An unknown ``platform``.

    Example:
        >>> import refimpl as ri, refimpl.numpy as rnp
        >>> before = len(ri.live_arrays())
        >>> x = rnp.ones(3)
        >>> len(ri.live_arrays()) - before
        1
        >>> del x
        >>> len(ri.live_arrays()) - before
        0
    """
    chosen = _check_backend("live_arrays", platform)
    return list(backends.get(chosen).live_arrays())


def _process_count(devices: list[Any]) -> int:
    # one process, unless ref_num_processes simulates others (their devices listed too)
    return 1 + max((getattr(d, "process_index", 0) for d in devices), default=0)


def device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` (default: ``config.backend``) has.

    ``len(ri.devices(backend))``: all devices are local, since refimpl runs
    one process. On the reference backend it is ``config.ref_num_devices``
    (default 1); refimpl's pjrt CPU client may have more virtual devices
    than JAX's.

    Args:
        backend: ``"ref"``, ``"pjrt"``, ``"cpu"`` (as ``devices``) or None (the
            default backend).

    Returns:
        The number of devices, an int >= 1.

    Raises:
        ValueError: An unknown ``backend``.

    Example:
        >>> import refimpl as ri
        >>> ri.device_count("ref") == len(ri.devices("ref"))
        True
    """
    return len(backends.get(_check_backend("device_count", backend)).devices())


def local_device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` has in this process (all of them: one process).

    Always equal to :func:`device_count`, since refimpl runs one process;
    the number of devices ``pmap`` can map over.

    Args:
        backend: ``"ref"``, ``"pjrt"``, ``"cpu"`` (as ``devices``) or None (the
            default backend).

    Returns:
        The number of devices, an int >= 1.

    Raises:
        ValueError: An unknown ``backend``.

    Example:
        >>> import refimpl as ri
        >>> ri.local_device_count("ref") == ri.device_count("ref")
        True
    """
    return len(local_devices(backend=_check_backend("local_device_count", backend)))


def process_index(backend: str | None = None) -> int:
    """This process's index among the processes: always 0.

    JAX numbers the processes of a multi-host run (``jax.distributed``);
    refimpl's runs have one process (``ri.distributed.initialize`` works with
    ``num_processes=1`` only on the installed plugins), or several simulated
    ones of which this is process 0 (``ref_num_processes``).

    Args:
        backend: ``"ref"``, ``"pjrt"``, ``"cpu"`` (as ``devices``) or None (the
            default backend); only checked.

    Returns:
        0.

    Raises:
        ValueError: An unknown ``backend``.

    Example:
        >>> import refimpl as ri
        >>> ri.process_index()
        0
    """
    _check_backend("process_index", backend)
    return 0


def process_count(backend: str | None = None) -> int:
    """How many processes take part: 1, or ``ref_num_processes`` on the reference backend.

    JAX counts the processes of a multi-host run (``jax.distributed``);
    refimpl runs one process and can simulate others' devices on the
    reference backend (docs/semantics.md "Beyond one process").

    Args:
        backend: ``"ref"``, ``"pjrt"``, ``"cpu"`` (as ``devices``) or None (the
            default backend); only checked.

    Returns:
        The number of processes that hold ``backend``'s devices.

    Raises:
        ValueError: An unknown ``backend``.

    Example:
        >>> import refimpl as ri
        >>> ri.process_count()
        1
    """
    chosen = _check_backend("process_count", backend)
    return _process_count(list(backends.get(chosen).devices()))


def _backend_of_device(device: Any) -> str:
    # a device exists only once its backend is loaded (the registry made it)
    name = backends.name_of_device(device)
    if name is not None:
        return name
    raise TypeError(f"default_device: expected a device or None, got {type(device).__name__}")


@contextlib.contextmanager
def default_device(device: Any) -> Iterator[None]:
    """Context manager: computations without placed arguments run on ``device``.

    refimpl places uncommitted values on the first device of the default
    backend, so ``device`` must be the first device of its backend; within
    the block that backend is ``config.backend`` (``None`` leaves it as it
    is). Another device is a ``NotImplementedError``: commit the inputs to
    it with ``device_put`` instead. (JAX accepts any device and places
    uncommitted values on it.) The previous backend comes back when the
    block exits.

    Args:
        device: The first device of a backend (``ri.devices("pjrt")[0]``),
            a platform name (``"cpu"``, ``"pjrt"``: its first device), or None.

    Returns:
        A context manager (use it in a ``with`` statement).

    Raises:
        TypeError: ``device`` is neither a device nor None.
        NotImplementedError: ``device`` is not the first of its backend.

    Example:
        >>> import refimpl as ri
        >>> with ri.default_device(ri.devices("ref")[0]):
        ...     ri.default_backend()
        'ref'
    """
    if device is None:
        yield
        return
    if isinstance(device, str):
        # a platform name, as JAX 0.10.2 takes one ("cpu"): its first device
        # (refimpl.devices resolves "cpu" to the default backend's devices)
        device = backends.devices(device)[0]
    backend = _backend_of_device(device)
    if device != backends.get(backend).devices()[0]:
        raise NotImplementedError(
            f"default_device: refimpl only makes the first device of a backend the default "
            f"(got {device!r}); commit the inputs to it with device_put instead"
        )
    saved = config.backend
    config.update("backend", backend)
    try:
        yield
    finally:
        config.update("backend", saved)


__all__ = [
    "block_until_ready",
    "default_device",
    "device_count",
    "device_get",
    "local_device_count",
    "local_devices",
    "process_count",
    "process_index",
]


# --- environment --------------------------------------------------------------------------

#: The version of JAX whose semantics refimpl follows (``jax.__version__`` under
#: ``refimpl.as_jax``).
JAX_VERSION = "0.10.2"


def print_environment_info(return_string: bool = False) -> str | None:
    """Print (or return) versions and devices, as ``jax.print_environment_info``.

    The lines are JAX's (``jax:    0.10.2``, ``numpy:  ...``, ``python: ...``,
    ``device info: ...``, ``process_count: 1``, ``platform: ...``, then the
    ``JAX_*``/``XLA_*`` environment variables); the
    ``jax`` line is the JAX version whose semantics refimpl follows, the
    ``jaxlib`` line names refimpl instead (it has no jaxlib), and the
    devices are those of the default backend (``config.backend``).

    Args:
        return_string: Return the text instead of printing it.

    Returns:
        The text if ``return_string`` is true, else None (it is printed).

    Raises:
        TypeError: ``return_string`` is not a bool.

    Example:
        >>> import refimpl as ri
        >>> ri.print_environment_info(return_string=True).splitlines()[0]
        'jax:    0.10.2'
    """
    if not isinstance(return_string, bool):
        raise TypeError(
            f"print_environment_info: return_string must be a bool, got {return_string!r}"
        )
    devices = backends.get(config.backend).devices()
    python = sys.version.replace("\n", " ")
    lines = [
        f"jax:    {JAX_VERSION}",
        f"jaxlib: none (refimpl, the {config.backend} backend)",
        f"numpy:  {np.__version__}",
        f"python: {python}",
        f"device info: {config.backend}-{len(devices)}, {len(devices)} local devices",
        "process_count: 1",
        f"platform: {platform.uname()}",
    ]
    # as JAX, the settings it reads from the environment
    lines += [f"{k}={v}" for k, v in os.environ.items() if k.startswith(("JAX_", "XLA_"))]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None
