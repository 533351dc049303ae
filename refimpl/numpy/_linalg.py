"""Products: dot, matmul and einsum, all as ``dot_general`` (plus transposes,
reshapes, reductions and broadcasts).

As JAX 0.10.2's: the operands are not converted first. Each product is one
``dot_general`` taking both operand dtypes, whose ``preferred_element_type``
is the operands' promoted type (JAX's rules, weak types included) or the
given ``preferred_element_type``: ``dot(int8[5], float32[5])`` is
``dot_general[preferred_element_type=float32] a b``. The result has that
dtype and is weak only if every operand is (a ``convert_element_type`` after
the product sets the weak flag where it differs). bool products are logical
(or of ands), as in JAX.
"""

from __future__ import annotations

import operator
import string
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy._construct import strided_positions
from refimpl.numpy._creation import canonical_dtype
from refimpl.numpy._promote import as_array, aval_of, result_type
from refimpl.numpy._shape import broadcast_to
from refimpl.primitives import linalg

Array = Any
ArrayLike = Any


def product_type(fn_name: str, operands: Any, preferred_element_type: Any) -> tuple[Any, bool]:
    """The ``(dtype, weak)`` of a product, as JAX 0.10.2's jnp products: the
    operands' promoted type and weak flag, or ``preferred_element_type``
    (strong). Every ``dot_general`` of the product takes this dtype as its
    ``preferred_element_type`` and the operands as they are."""
    if preferred_element_type is None:
        return result_type(fn_name, *operands)
    return canonical_dtype(fn_name, preferred_element_type), False


def with_type(x: Any, dtype: Any, weak: bool) -> Any:
    """``x`` as ``dtype`` with weak flag ``weak``; no equation when it already is
    (JAX's ``_convert_element_type`` at the end of each jnp product)."""
    aval = aval_of(x, "convert_element_type", 0)
    if aval.dtype == dtype and aval.weak_type == weak:
        return x
    return lax.convert_element_type(x, dtype, weak_type=weak)


def _contract(
    fn_name: str,
    a: Any,
    b: Any,
    dims: Any,
    precision: Any,
    preferred: Any,
    out_sharding: Any = None,
) -> Any:
    """``dot_general`` with a ``fn_name``-level error for mismatched
    contractions; ``preferred`` is the product's dtype (``product_type``)."""
    (a_contract, b_contract), _ = dims
    a_shape, b_shape = aval_of(a, fn_name, 0).shape, aval_of(b, fn_name, 1).shape
    a_sizes = tuple(a_shape[d] for d in a_contract)
    b_sizes = tuple(b_shape[d] for d in b_contract)
    if a_sizes != b_sizes:  # JAX 0.10.2's words (its dot_general's), then the operands
        raise TypeError(
            f"{fn_name}: dot_general requires contracting dimensions to have the same shape, "
            f"got {a_sizes} and {b_sizes}. (operand shapes {a_shape} and {b_shape})"
        )
    return lax.dot_general(
        a, b, dims, precision=precision, preferred_element_type=preferred, out_sharding=out_sharding
    )


# --- dot and matmul --------------------------------------------------------------------


def dot(
    a: ArrayLike,
    b: ArrayLike,
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Array:
    """The dot product of ``a`` and ``b``.

    NumPy's ``dot``: a product with a scalar; the inner product of vectors;
    otherwise the sum over ``a``'s last axis and ``b``'s second-to-last (its
    only, if ``b`` is a vector). Result shape ``a.shape[:-1] + b.shape[:-2] +
    b.shape[-1:]``. ``out_sharding``: the result's sharding over a mesh (see
    ``lax.dot_general``). One ``dot_general`` takes both operands' dtypes
    (the result is their promoted type).

    Args:
        a: The first array or scalar.
        b: The second array or scalar.
        precision: The ``lax`` precision of the contraction (keyword-only).
        preferred_element_type: The dtype to accumulate and return in, or None
            for the promoted one (keyword-only).
        out_sharding: The result's sharding over a mesh, or None
            (keyword-only).

    Returns:
        The product, of the shape described above.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.dot(rnp.array([1, 2, 3]), rnp.array([4, 5, 6]))
        Array(32, dtype=int32)
        >>> rnp.dot(rnp.array([[1, 2], [3, 4]]), rnp.array([[5], [6]]))
        Array([[17],
               [39]], dtype=int32)
    """
    dtype, weak = product_type("dot", (a, b), preferred_element_type)
    a_ndim, b_ndim = aval_of(a, "dot", 0).ndim, aval_of(b, "dot", 1).ndim
    if a_ndim == 0 or b_ndim == 0:
        if out_sharding is not None:
            raise NotImplementedError("dot: out_sharding with a scalar operand")
        # as JAX 0.10.2, a dot_general contracting nothing: the product is
        # formed in the result type (int8 * float16 -> exact float32), not
        # rounded to the operands' type first
        dims: Any = (((), ()), ((), ()))
    else:
        b_axis = 0 if b_ndim == 1 else b_ndim - 2
        dims = (((a_ndim - 1,), (b_axis,)), ((), ()))
    return with_type(_contract("dot", a, b, dims, precision, dtype, out_sharding), dtype, weak)


def matmul(
    a: ArrayLike,
    b: ArrayLike,
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Array:
    """The matrix product of ``a`` and ``b``: ``a @ b``.

    NumPy's ``matmul`` (``a @ b``): matrix products over the last two axes,
    with the leading (batch) axes broadcast. A 1-D ``a`` is a row vector and a
    1-D ``b`` a column vector; their added axis is removed again.
    ``out_sharding``: the result's sharding over a mesh (see
    ``lax.dot_general``), of the result's rank; matmul of a vector takes
    none (NotImplementedError). Scalars are a ValueError.

    Args:
        a: The first array, of at least one dimension.
        b: The second array, of at least one dimension.
        precision: The ``lax`` precision of the contraction (keyword-only).
        preferred_element_type: The dtype to accumulate and return in, or None
            for the promoted one (keyword-only).
        out_sharding: The result's sharding over a mesh, or None
            (keyword-only).

    Returns:
        The product: the broadcast batch shape, then ``a``'s rows and ``b``'s
        columns (less a vector operand's added axis).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.matmul(rnp.array([[1, 2], [3, 4]]), rnp.array([[5, 6], [7, 8]]))
        Array([[19, 22],
               [43, 50]], dtype=int32)
        >>> rnp.matmul(rnp.ones((3, 2, 4)), rnp.ones((4, 5))).shape
        (3, 2, 5)
    """
    a_shape, b_shape = aval_of(a, "matmul", 0).shape, aval_of(b, "matmul", 1).shape
    for position, shape in enumerate((a_shape, b_shape)):
        if len(shape) == 0:
            raise ValueError(f"matmul: operand {position} must have at least 1 dimension")
    dtype, weak = product_type("matmul", (a, b), preferred_element_type)
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    if a_vector:
        a, a_shape = lax.expand_dims(a, (0,)), (1, *a_shape)
    if b_vector:
        b, b_shape = lax.expand_dims(b, (1,)), (*b_shape, 1)
    try:
        batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions of the operand shapes {a_shape} and {b_shape} "
            "do not broadcast"
        ) from None
    a = broadcast_to(a, batch + a_shape[-2:])
    b = broadcast_to(b, batch + b_shape[-2:])
    nb = len(batch)
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    if out_sharding is not None and (a_vector or b_vector):
        raise NotImplementedError("matmul: out_sharding with a vector operand")
    result = _contract("matmul", a, b, dims, precision, dtype, out_sharding)
    squeezed = ((nb,) if a_vector else ()) + ((nb + 1,) if b_vector else ())
    return with_type(lax.squeeze(result, squeezed) if squeezed else result, dtype, weak)


# --- einsum -------------------------------------------------------------------------------

# Labels standing for ellipsis dims: characters that are never user labels.
_ELLIPSIS_LABELS = "0123456789" + "".join(chr(c) for c in range(0x100, 0x200))


_SUBLIST_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _subscripts(name: str, subscripts: Any, operands: tuple) -> tuple[str, tuple]:
    """``(subscripts, operands)`` as the string form, from either that form or
    NumPy's interleaved one, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``: operands
    each followed by its list of axis labels (ints 0-51, or ``...``), then
    optionally the output's list."""
    if isinstance(subscripts, str):
        return subscripts, operands
    items = (subscripts, *operands)

    def letters(sublist: Any) -> str:
        if isinstance(sublist, (str, bytes)) or not hasattr(sublist, "__iter__"):
            raise TypeError(
                f"{name}: subscripts must be a string like 'ij,jk->ik' or, interleaved "
                f"with the operands, lists of axis labels; got {sublist!r}"
            )
        out = []
        for label in sublist:
            if label is Ellipsis:
                out.append("...")
                continue
            if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer)):
                raise TypeError(
                    f"{name}: subscripts in the interleaved form are ints or ..., got {label!r}"
                )
            if not 0 <= int(label) < len(_SUBLIST_LETTERS):
                raise ValueError(
                    f"{name}: subscripts in the interleaved form are in "
                    f"[0, {len(_SUBLIST_LETTERS)}), got {label}"
                )
            out.append(_SUBLIST_LETTERS[int(label)])
        return "".join(out)

    arrays = items[0::2]
    inputs = [letters(sublist) for sublist in items[1::2]]
    spec = ",".join(inputs[: len(arrays)])
    if len(items) % 2:
        # an odd count: the last item is the output's sublist, not an operand
        arrays, spec = arrays[:-1], ",".join(inputs)
        spec += "->" + letters(items[-1])
    return spec, tuple(arrays)


def einsum(
    subscripts: str,
    /,
    *operands: ArrayLike,
    out: None = None,
    optimize: Any = "auto",
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Array:
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` is ``a @ b``.

    Supported: any number of operands, implicit output (the labels that occur
    once, sorted, after any ellipsis dims) and explicit ``->`` output,
    ``...`` (broadcast right-aligned across operands), repeated labels within
    one operand (a diagonal), and labels summed away. Operands are contracted
    pairwise with ``dot_general`` in a greedy order (each time the pair with
    the smallest result); a label is summed as soon as no remaining operand
    and not the output uses it. ``optimize`` may be a contraction path as
    :func:`einsum_path` (or opt_einsum) gives it, a list of tuples of
    positions in the current operand list, each contracted (left to right)
    into one operand appended at the end; any other value (``"auto"``,
    ``True``, ``"greedy"``...) means the greedy order. ``out_sharding``
    (as ``lax.dot_general``'s) is the result's sharding over a mesh, given
    to the one ``dot_general`` of a two-operand einsum (its axes in that
    product's order, as JAX 0.10.2); other einsums take none
    (NotImplementedError: JAX types them in Auto mode, not modelled).

    Args:
        subscripts: The labels, as a string (``"ij,jk->ik"``), or the first
            operand in NumPy's interleaved form
            (``einsum(a, [0, 1], b, [1, 2], [0, 2])``).
        *operands: The arrays (and, in the interleaved form, their label
            lists and the output's).
        out: Must be None (NotImplementedError otherwise; keyword-only).
        optimize: A contraction path, or anything else for the greedy order
            (keyword-only).
        precision: The ``lax`` precision of the contraction (keyword-only).
        preferred_element_type: The dtype to accumulate and return in, or None
            for the promoted one (keyword-only).
        out_sharding: The result's sharding over a mesh, or None
            (keyword-only).

    Returns:
        An array of the output labels' shape, in the operands' promoted dtype
        (or ``preferred_element_type``).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.einsum("ii->", rnp.array([[1, 2], [3, 4]]))
        Array(5, dtype=int32)
        >>> rnp.einsum("i,j->ij", rnp.array([1, 2]), rnp.array([3, 4, 5]))
        Array([[ 3,  4,  5],
               [ 6,  8, 10]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("einsum: the out argument is not supported")
    subscripts, operands = _subscripts("einsum", subscripts, operands)
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    for position, operand in enumerate(operands):
        aval_of(operand, "einsum", position + 1)

    ndims = [aval_of(x, "einsum", i + 1).ndim for i, x in enumerate(operands)]
    inputs, output = _parse(subscripts, ndims)
    preferred, weak = product_type("einsum", operands, preferred_element_type)
    arrays = _broadcast_ellipsis(list(operands), inputs)
    terms = []
    for x, labels in zip(arrays, inputs, strict=True):
        x, labels = _take_diagonals(x, labels)
        terms.append((x, labels))
    sizes = _check_sizes(terms)
    path = _given_path(optimize, len(terms))
    if out_sharding is not None:
        if len(terms) != 2:
            raise NotImplementedError("einsum: out_sharding with other than two operands")
        out_sharding = (linalg.canonical_out_sharding(out_sharding), output)
    result, labels = _contract_greedily(
        terms, output, sizes, precision, preferred, path, out_sharding
    )
    permutation = tuple(labels.index(label) for label in output)
    if permutation != tuple(range(len(permutation))):
        result = lax.transpose(result, permutation)
    return as_array(with_type(result, preferred, weak))


def _parse(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """The label string of each operand and of the output; ``...`` becomes
    internal labels (right-aligned, shared across operands)."""
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    left, arrow, right = text.partition("->")
    terms = left.split(",")
    if len(terms) != len(ndims):
        raise ValueError(
            f"einsum: {len(terms)} subscript terms in {subscripts!r} for {len(ndims)} operands"
        )
    ellipsis_ndim = 0
    for term, ndim in zip(terms, ndims, strict=True):
        _check_term(subscripts, term)
        if "..." in term:
            ellipsis_ndim = max(ellipsis_ndim, ndim - len(term.replace("...", "")))
    ellipsis = _ELLIPSIS_LABELS[:ellipsis_ndim]
    inputs = []
    for position, (term, ndim) in enumerate(zip(terms, ndims, strict=True)):
        letters = len(term.replace("...", ""))
        if "..." in term:
            covered = ndim - letters
            if covered < 0:
                raise ValueError(f"einsum: operand {position} has too few dims for {term!r}")
            term = term.replace("...", ellipsis[ellipsis_ndim - covered :])
        elif letters != ndim:
            raise ValueError(
                f"einsum: operand {position} has {ndim} dims but subscripts {term!r} name {letters}"
            )
        inputs.append(term)
    if arrow:
        _check_term(subscripts, right)
        output = right.replace("...", ellipsis)
        used = set("".join(inputs))
        for label in output:
            if label not in used:
                raise ValueError(f"einsum: output label {label!r} does not occur in the inputs")
            if output.count(label) > 1:
                raise ValueError(f"einsum: output label {label!r} is repeated")
    else:
        counts = "".join(inputs)
        single = sorted(
            c for c in set(counts) if c in string.ascii_letters and counts.count(c) == 1
        )
        output = ellipsis + "".join(single)
    return inputs, output


def _check_term(subscripts: str, term: str) -> None:
    if term.count("...") > 1 or any(c not in string.ascii_letters for c in term.replace("...", "")):
        raise ValueError(f"einsum: invalid subscripts {subscripts!r} (term {term!r})")


def _broadcast_ellipsis(arrays: list[Any], inputs: list[str]) -> list[Any]:
    """Size-1 ellipsis dims broadcast against the other operands' (NumPy's rule)."""
    sizes: dict[str, int] = {}
    for x, labels in zip(arrays, inputs, strict=True):
        for label, size in zip(labels, aval_of(x, "einsum", 0).shape, strict=True):
            if label in _ELLIPSIS_LABELS and size != 1:
                if sizes.get(label, size) != size:
                    raise ValueError("einsum: operands could not be broadcast over '...'")
                sizes[label] = size
    result = []
    for x, labels in zip(arrays, inputs, strict=True):
        shape = aval_of(x, "einsum", 0).shape
        target = tuple(
            sizes.get(label, size) if label in _ELLIPSIS_LABELS else size
            for label, size in zip(labels, shape, strict=True)
        )
        result.append(x if target == shape else broadcast_to(x, target))
    return result


def _take_diagonals(x: Any, labels: str) -> tuple[Any, str]:
    """Each label repeated within one operand: keep only its diagonal."""
    for label in labels:
        while labels.count(label) > 1:
            first = labels.index(label)
            second = labels.index(label, first + 1)
            x = _diagonal(x, first, second)
            labels = labels[:second] + labels[second + 1 :]
    return x, labels


def _diagonal(x: Any, first: int, second: int) -> Any:
    """Elements where dims ``first`` and ``second`` have equal indices, in place of
    dim ``first``: move both dims last, flatten them, and gather every
    ``(n + 1)``-th element."""
    shape = aval_of(x, "einsum", 0).shape
    n = shape[first]
    if shape[second] != n:
        raise ValueError(
            f"einsum: a repeated label indexes dims of different sizes {n} and {shape[second]}"
        )
    others = [d for d in range(len(shape)) if d not in (first, second)]
    x = lax.transpose(x, (*others, first, second))
    x = lax.reshape(x, tuple(shape[d] for d in others) + (n * n,))
    if n:  # (a size-0 diagonal is already the flattened size-0 dim)
        positions = strided_positions(n, n + 1, 0)
        x = lax.gather_along_axis(x, positions, len(others), mode="clip")
    last = len(others)
    order = [*range(first), last, *range(first, last)]
    return lax.transpose(x, tuple(order)) if order != list(range(last + 1)) else x


def _given_path(optimize: Any, count: int) -> list[tuple[int, ...]] | None:
    """``optimize`` as an explicit contraction path, or ``None`` (greedy)."""
    if not isinstance(optimize, (list, tuple)):
        return None
    steps = [step for step in optimize if step != "einsum_path"]  # NumPy's marker
    remaining = count
    for step in steps:
        positions = tuple(operator.index(k) for k in step)
        if (
            not positions
            or len(set(positions)) != len(positions)
            or not all(0 <= k < remaining for k in positions)
        ):
            raise ValueError(f"einsum: invalid contraction path step {step!r} in {optimize!r}")
        remaining -= len(positions) - 1
    return [tuple(operator.index(k) for k in step) for step in steps]


def _greedy_pair(labels: list[str], output: str, sizes: dict[str, int]) -> tuple[int, int]:
    """The pair of operands whose contraction is smallest (the leftmost of equals)."""
    best = None
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            needed = set(output).union(*(set(x) for k, x in enumerate(labels) if k not in (i, j)))
            kept = (set(labels[i]) | set(labels[j])) & needed
            cost = int(np.prod([sizes[label] for label in kept], dtype=np.int64))
            if best is None or cost < best[0]:
                best = (cost, i, j)
    assert best is not None  # callers pass two or more operands
    return best[1], best[2]


def _needed(labels: list[str], output: str, skip: tuple[int, ...]) -> set[str]:
    """The labels the output or any operand outside ``skip`` still uses."""
    return set(output).union(*(set(x) for k, x in enumerate(labels) if k not in skip))


def _greedy_path(labels: list[str], output: str, sizes: dict[str, int]) -> list[tuple[int, int]]:
    """The pairs :func:`_contract_greedily` contracts, from the labels alone."""
    labels = [
        "".join(c for c in x if c in _needed(labels, output, (k,))) for k, x in enumerate(labels)
    ]
    path = []
    while len(labels) > 1:
        i, j = _greedy_pair(labels, output, sizes)
        kept = set(labels[i] + labels[j]) & _needed(labels, output, (i, j))
        labels = [x for k, x in enumerate(labels) if k not in (i, j)] + ["".join(sorted(kept))]
        path.append((i, j))
    return path


def _contract_greedily(
    terms: list[tuple[Any, str]],
    output: str,
    sizes: dict[str, int],
    precision: Any,
    preferred: Any,
    path: list[tuple[int, ...]] | None = None,
    out_sharding: Any = None,
) -> tuple[Any, str]:
    """Contract the operands along ``path`` (steps as :func:`einsum_path`'s),
    then pairwise, each time the pair whose result is smallest (ties: the
    leftmost pair), summing every label as soon as no remaining operand nor
    the output uses it (opt_einsum's "greedy" idea)."""
    terms = list(terms)
    steps = list(path or ())

    def labels_of() -> list[str]:
        return [labels for _, labels in terms]

    terms = [
        _sum_unused(x, labels, _needed(labels_of(), output, (k,)), preferred)
        for k, (x, labels) in enumerate(terms)
    ]
    while len(terms) > 1 or steps:
        step = steps.pop(0) if steps else _greedy_pair(labels_of(), output, sizes)
        needed = _needed(labels_of(), output, step)
        picked = [terms[k] for k in step]
        terms = [t for k, t in enumerate(terms) if k not in step]
        combined = picked[0]
        for n, other in enumerate(picked[1:], start=2):
            needed_now = needed.union(*(set(labels) for _, labels in picked[n:]))
            combined = _contract_pair(
                combined, other, needed_now, precision, preferred, out_sharding
            )
        terms.append(_sum_unused(*combined, needed, preferred))
    return _sum_unused(*terms[0], set(output), preferred)


def einsum_path(subscripts: str, /, *operands: ArrayLike, optimize: Any = "auto") -> tuple:
    """The contraction order :func:`einsum` uses for these operands.

    The contraction order :func:`einsum` uses for these operands, without
    computing: ``(path, description)``. ``path`` lists the pairs (positions in
    the current operand list; the result goes last), the greedy order
    (smallest intermediate first); JAX's comes from opt_einsum and may differ
    for three or more operands, while either path gives the same einsum.
    ``description`` is a text listing each contraction. An explicit path as
    ``optimize`` is returned as it is (after checking). (NumPy's path starts
    with the string ``"einsum_path"`` and its description is another text.)

    Args:
        subscripts: The labels, as for :func:`einsum`.
        *operands: The arrays (only their shapes are used).
        optimize: An explicit path, or anything else for the greedy order
            (keyword-only).

    Returns:
        A pair ``(path, description)``: a list of tuples of positions, and a
        string.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> a, b, c = rnp.ones((2, 3)), rnp.ones((3, 4)), rnp.ones((4, 5))
        >>> path, description = rnp.einsum_path("ij,jk,kl->il", a, b, c)
        >>> path
        [(0, 1), (0, 1)]
    """
    subscripts, operands = _subscripts("einsum_path", subscripts, operands)
    if not operands:
        raise ValueError("einsum_path: at least one operand is required")
    shapes = [tuple(aval_of(x, "einsum_path", i + 1).shape) for i, x in enumerate(operands)]
    inputs, output = _parse(subscripts, [len(shape) for shape in shapes])
    sizes: dict[str, int] = {}
    labels = []
    for position, (term, shape) in enumerate(zip(inputs, shapes, strict=True)):
        for label, size in zip(term, shape, strict=True):
            known = sizes.get(label, size)
            if label in _ELLIPSIS_LABELS and 1 in (known, size):
                sizes[label] = max(known, size)
            elif known != size:
                raise ValueError(
                    f"einsum_path: size of label {label!r} for operand {position} ({size}) "
                    f"does not match previous terms ({known})"
                )
            else:
                sizes[label] = size
        labels.append("".join(dict.fromkeys(term)))  # a repeated label is its diagonal
    given = _given_path(optimize, len(labels))
    path = given if given is not None else _greedy_path(labels, output, sizes)
    lines = [f"Complete contraction: {subscripts}", "Contractions (greedy order):"]
    current = [
        term.replace("...", "") for term in subscripts.replace(" ", "").split("->")[0].split(",")
    ]
    for step in path:
        picked = [current[k] for k in step]
        rest = [x for k, x in enumerate(current) if k not in step]
        needed = set(output).union(*(set(x) for x in rest))
        result = "".join(dict.fromkeys(c for x in picked for c in x if c in needed))
        lines.append(f"  {step}: {','.join(picked)}->{result}")
        current = rest + [result]
    return [tuple(step) for step in path], "\n".join(lines)


def _check_sizes(terms: list[tuple[Any, str]]) -> dict[str, int]:
    """Each label's size (equal wherever it occurs)."""
    sizes: dict[str, int] = {}
    for position, (x, labels) in enumerate(terms):
        for label, size in zip(labels, aval_of(x, "einsum", 0).shape, strict=True):
            if sizes.setdefault(label, size) != size:
                raise ValueError(
                    f"einsum: size of label {label!r} for operand {position} ({size}) does "
                    f"not match previous terms ({sizes[label]})"
                )
    return sizes


def _sum_unused(x: Any, labels: str, needed: set[str], dtype: Any) -> tuple[Any, str]:
    """Sum away the dims whose labels are no longer needed (or-reduce for
    bool), in the einsum's result ``dtype`` where that promotes ``x``'s (as
    JAX 0.10.2: an int8 operand is summed as the float32 of an int8 x
    float32 einsum, not in int8)."""
    axes = tuple(i for i, label in enumerate(labels) if label not in needed)
    if not axes:
        return x, labels
    aval = aval_of(x, "einsum", 0)
    if dtypes.result_type((aval.dtype, aval.weak_type), (dtype, False))[0] != aval.dtype:
        x = lax.convert_element_type(x, dtype)
    is_bool = dtypes.is_bool(aval_of(x, "einsum", 0).dtype)
    x = (lax.reduce_or if is_bool else lax.reduce_sum)(x, axes)
    return x, "".join(label for label in labels if label in needed)


def _contract_pair(
    left: tuple[Any, str],
    right: tuple[Any, str],
    needed: set[str],
    precision: Any,
    preferred: Any,
    out_sharding: Any = None,
) -> tuple[Any, str]:
    """One ``dot_general``: shared labels still needed later are batch dims, the
    other shared labels are contracted."""
    (a, a_labels), (b, b_labels) = left, right
    b, b_labels = _sum_unused(b, b_labels, needed | set(a_labels), preferred)
    shared = [label for label in a_labels if label in b_labels]
    batch = [label for label in shared if label in needed]
    contracted = [label for label in shared if label not in needed]
    dims = (
        (
            tuple(a_labels.index(c) for c in contracted),
            tuple(b_labels.index(c) for c in contracted),
        ),
        (tuple(a_labels.index(c) for c in batch), tuple(b_labels.index(c) for c in batch)),
    )
    free_a = [label for label in a_labels if label not in shared]
    free_b = [label for label in b_labels if label not in shared]
    labels = "".join(batch + free_a + free_b)
    sharding = None
    if out_sharding is not None:
        given, output = out_sharding
        sharding = _product_sharding(given, output, labels)
    result = _contract("einsum", a, b, dims, precision, preferred, sharding)
    return result, labels


def _product_sharding(out_sharding: Any, output: str, labels: str) -> Any:
    """The einsum's ``out_sharding`` (its entries in ``output`` order) in the
    order of the product's axes (``labels``), as JAX's ``_get_inverse_sharding``."""
    if any(label not in output for label in labels):
        raise NotImplementedError("einsum: out_sharding with a label summed after the product")
    spec = tuple(out_sharding.spec) + (None,) * (len(output) - len(out_sharding.spec))
    entries = [spec[output.index(label)] for label in labels]
    return type(out_sharding)(out_sharding.mesh, type(out_sharding.spec)(*entries))


__all__ = ["dot", "einsum", "einsum_path", "matmul"]
