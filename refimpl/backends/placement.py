"""Devices and ``device_put`` (see docs/semantics.md, "Donation").

The reference backend has ``config.ref_num_devices`` virtual CPU devices
(default 1; ``ri.config.update("ref_num_devices", n)``). They all keep their
buffers in host memory; what they model is *placement*: which device an
array is on, whether it is committed there, and where a computation on
several arrays runs (see ``refimpl.backends.ref.arrays.placement``).
"""

from __future__ import annotations

from typing import Any

from refimpl import backends, pytree, tracing
from refimpl.config import config
from refimpl.sharding import PartitionSpec, Sharding
from refimpl.transforms import sharded


def default_backend() -> str:
    """The name of the backend that runs what does not name its own.

    ``"ref"`` (the NumPy reference interpreter) unless ``REFIMPL_BACKEND``
    was set in the environment when refimpl was imported, or
    ``config.update("backend", "pjrt")`` (or a ``default_device`` block)
    changed it. Eager operations, ``jit`` without ``backend=``, and
    ``device_put`` without a device use it. JAX's ``jax.default_backend()``
    names a platform (``"cpu"``, ``"gpu"``); refimpl's names a backend,
    ``"ref"`` or ``"pjrt"`` (pjrt runs on its CPU plugin).

    Args: none.

    Returns:
        ``config.backend``: ``"ref"`` or ``"pjrt"``.

    Raises: nothing (it reads ``config.backend``, which ``config.update``
    only sets to a known backend).

    Example:
        >>> import refimpl as ri
        >>> ri.default_backend() == ri.config.backend
        True
    """
    return config.backend


def devices(backend: str | None = None) -> list[Any]:
    """The devices of ``backend`` (default: ``config.backend``), as ``jax.devices``.

    The reference backend has ``config.ref_num_devices`` simulated devices
    (default 1; ``Device(id=i, platform='ref')``), which keep their buffers
    in host memory and model placement only: which device an array is on,
    whether it is committed there. pjrt has its CPU client's devices. The
    first device is where uncommitted values go. JAX's argument is a
    platform name; refimpl's is a backend name, or ``"cpu"`` (JAX's name of
    the host platform, on which both backends run): the default backend's
    devices when it runs on the host CPU (``ref``; ``pjrt`` on its CPU
    plugin), else ``ref``'s.

    Args:
        backend: ``"ref"``, ``"pjrt"``, ``"cpu"`` or None (the default backend).

    Returns:
        A list of the backend's devices, in id order (the targets of
        ``device_put`` and ``pmap``).

    Raises:
        ValueError: An unknown ``backend``.

    Example:
        >>> import refimpl as ri
        >>> ri.devices("ref")[0]
        Device(id=0, platform='ref')
    """
    name = backend or config.backend
    if name == "cpu":
        name = backends.host_backend(config.backend)
    if name not in backends.names():
        raise ValueError(f"devices: unknown backend {name!r}; use 'ref', 'pjrt' or 'cpu'")
    return backends.get(name).devices()


def device_put(
    x: Any, device: Any = None, *, donate: bool = False, may_alias: bool | None = None
) -> Any:
    """Place every leaf of the pytree ``x`` on ``device``, like ``jax.device_put``.

    With a ``device``, the results are committed to it. Without one, an
    ``Array`` keeps its device and commitment, and NumPy arrays and Python
    scalars go to the default device, uncommitted (a Python scalar stays
    weakly typed). Inside a trace, ``device_put`` returns tracers unchanged.

    ``donate`` and ``may_alias`` decide about buffers (SPEC table), for an
    ``Array`` leaf:

    | may_alias | donate | result |
    |---|---|---|
    | True | True | ``ValueError`` |
    | True | False | ``x`` itself if already placed there, else a copy |
    | False | True | ``x``'s buffer moved (or copied to another device); ``x`` deleted |
    | False | False | always a fresh buffer; ``x`` not deleted |
    | None | True | as (False, True) |
    | None | False | as (True, False) |

    NumPy arrays and Python scalars are always copied and never changed; an
    array of another backend is copied over (and deleted when donated).
    (JAX 0.10.2 on CPU differs: with ``donate=True`` it leaves an array
    already on the device alive; conformance/known.py.)

    Args:
        x: A pytree of arrays, NumPy arrays and Python scalars.
        device: A ``Device`` (``ri.devices("pjrt")[0]``, ...), a ``Sharding``
            (``NamedSharding(mesh, P('x'))``: each leaf is laid out over the
            mesh's devices, docs/semantics.md "Sharding"; a ``PartitionSpec``
            means one over the current mesh), or None.
        donate: Whether ``x``'s buffers may be taken over (``x`` is deleted).
        may_alias: Whether the result may share ``x``'s buffer (None: the
            default for ``donate``, see the table).

    Returns:
        A pytree of ``Array``s with ``x``'s structure.

    Raises:
        ValueError: ``may_alias=True`` with ``donate=True``.
        TypeError: ``may_alias`` or ``donate`` is not a bool (or None), or a
            leaf is not array-like.
        RuntimeError: a leaf is a deleted array.

    Example:
        >>> import numpy as np, refimpl as ri
        >>> x = ri.device_put(np.arange(3, dtype=np.float32), ri.devices("ref")[0])
        >>> y = ri.device_put(x, donate=True)
        >>> x.is_deleted(), y
        (True, Array([0., 1., 2.], dtype=float32))
    """
    if may_alias is not None and not isinstance(may_alias, bool):
        raise TypeError(f"device_put: may_alias must be True, False or None, got {may_alias!r}")
    if not isinstance(donate, bool):
        raise TypeError(f"device_put: donate must be a bool, got {donate!r}")
    if may_alias and donate:
        # JAX 0.10.2's words
        raise ValueError("device_put: may_alias and donate cannot be True at the same time.")
    if _is_device_tree(device):
        return _put_per_prefix(x, device, donate, may_alias)
    if isinstance(device, (Sharding, PartitionSpec)):
        sharding = sharded.as_sharding(device, "device_put", "device")
        leaves, tree = pytree.tree_flatten(x)
        for i, leaf in enumerate(leaves):  # check every leaf before changing any
            aval = tracing.get_aval(leaf, "device_put", f"{i} of x")
            sharded.check_against(sharding, aval.shape, "device_put")
        if donate:
            _check_donated_once(leaves)
        alias = may_alias is None or may_alias
        return pytree.tree_unflatten(
            tree,
            [sharded.put_sharded(leaf, sharding, donate=donate, alias=alias) for leaf in leaves],
        )
    target = _target_backend(device)
    leaves, tree = pytree.tree_flatten(x)
    for i, leaf in enumerate(leaves):  # check every leaf before changing any
        tracing.get_aval(leaf, "device_put", f"{i} of x")  # the deleted-array error comes here
    if donate:
        _check_donated_once(leaves)
    alias = may_alias is None or may_alias
    return pytree.tree_unflatten(
        tree, [_put_leaf(leaf, device, target, donate, alias) for leaf in leaves]
    )


def _is_one_target(d: Any) -> bool:
    """None, a Sharding, a PartitionSpec or a device: one target for a subtree."""
    return (
        d is None
        or isinstance(d, (Sharding, PartitionSpec))
        or backends.backend_of_device(d) is not None
    )


def _is_device_tree(device: Any) -> bool:
    """A pytree of targets (``(s1, (s2, s3))``), not one target."""
    return not _is_one_target(device) and not pytree.treedef_is_leaf(
        pytree.tree_structure(device, is_leaf=_is_one_target)
    )


def _put_per_prefix(x: Any, device: Any, donate: bool, may_alias: bool | None) -> Any:
    """``device_put(x, device)`` where ``device`` is a pytree of targets: as
    JAX 0.10.2, a tree prefix of ``x`` whose every target places the subtree
    of ``x`` at its position (``device_put((a, (b, c)), (s1, s2))`` puts ``b``
    and ``c`` by ``s2``)."""
    targets, spec = pytree.tree_flatten(device, is_leaf=_is_one_target)
    try:
        subtrees = spec.flatten_up_to(x)
    except ValueError:
        raise ValueError(  # JAX 0.10.2's words
            "device_put device specification must be a tree prefix of the corresponding "
            f"value; got specification {device!r} for value tree "
            f"{pytree.tree_structure(x)!r}."
        ) from None
    if donate:  # one array donated twice would be gone before its second use
        _check_donated_once(pytree.tree_leaves(x))
    return spec.unflatten(
        [
            device_put(sub, target, donate=donate, may_alias=may_alias)
            for sub, target in zip(subtrees, targets, strict=True)
        ]
    )


def _target_backend(device: Any) -> Any | None:
    """The backend owning ``device`` (None for ``device=None``), the device checked."""
    if device is None:
        return None
    backend = backends.backend_of_device(device)
    if backend is None:
        # JAX 0.10.2's class and words, then the value's type
        raise ValueError(
            "device_put: `jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
            "`jax.Device`, `Format`, `jax.memory.Space` or a pytree of these values. Received "
            f"invalid value: {device} (of type {type(device).__name__})"
        )
    check = getattr(backend, "check_device", None)
    if check is not None:
        check(device)
    return backend


def _check_donated_once(leaves: list[Any]) -> None:
    """Donating one array twice would delete it before its second use."""
    seen: set[int] = set()
    for i, leaf in enumerate(leaves):
        if backends.backend_of_array(leaf) is not None or hasattr(leaf, "_storage_keys"):
            # two arrays over one storage (a sharded array and one of its
            # addressable_shards) are the same array here
            keys = getattr(leaf, "_storage_keys", None)
            keys = (tuple(keys()) if callable(keys) else ()) or (id(leaf),)
            if seen.intersection(keys):
                raise ValueError(
                    f"device_put: the same array appears twice in x (again at leaf {i}) with "
                    "donate=True; an array can be donated only once"
                )
            seen.update(keys)


def _put_leaf(x: Any, device: Any, target: Any, donate: bool, alias: bool) -> Any:
    """One leaf: onto ``device`` (of backend ``target``), or with ``device=None``
    where it is (an array keeps its backend and device; anything else goes to
    the default backend's default device)."""
    if isinstance(x, tracing.Tracer):
        return x  # placement and donation only concern concrete buffers
    if device is None and isinstance(x, sharded.MeshArray):
        # an array laid out over a mesh keeps its layout (as JAX 0.10.2's
        # device_put(x)): by the SPEC table over its own sharding
        return sharded.put_sharded(x, x.sharding, donate=donate, alias=alias)
    if target is None:
        target = backends.backend_of_array(x) or backends.get(config.backend)
    return target.put_leaf(x, device, donate, alias)


# the modules below the backends place values through the registry
backends.install_placement(device_put, devices)

# The reference backend is always there (it needs no extension): loading it
# now lets device_put and jit recognise its arrays from the first call.
backends.get("ref")
