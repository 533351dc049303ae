"""Issue 31: pad, dot_general, psum, gather and scan each read as ONE block.

A block opens with ``# === <name>`` and a header holding the formula, the
labelled constraints (C1..Cn) and a worked example; then one sub-section per
rule, in the fixed order abstract_eval, impl, jvp, transpose, batch, mask,
lowering, and the public binder. Nothing of the primitive is elsewhere in its
module: every registration of one of its rules, and every rule function the
module defines for it, lies inside the block (the few helpers shared with
sibling primitives are listed below). The errors a violated constraint raises
cite the label.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from refimpl.primitives import collectives, control_flow, gather_scatter, linalg, structural

ORDER = ("abstract_eval", "impl", "jvp", "transpose", "batch", "mask", "lowering", "binder")
RULE_ATTRS = {
    "abstract_eval": "_abstract_eval",
    "impl": "_impl",
    "jvp": "jvp_rule",
    "linearize": "linearize_rule",
    "transpose": "transpose_rule",
    "batch": "batch_rule",
    "mask": "mask_rule",
    "lowering": "lowering",
}


@dataclass(frozen=True)
class Block:
    module: object
    title: str  # the name after "# ===" and in the "# --- <name>: <rule>" headings
    prim_var: str  # the primitive's module-level name
    binder: str  # the public function the block ends with
    n_constraints: int
    # rule functions defined in the module but outside the block: helpers
    # shared with sibling primitives, each with the reason
    shared: dict[str, str] = field(default_factory=dict)
    no_rule: tuple[str, ...] = ()  # sub-sections the primitive has no rule for


BLOCKS = [
    Block(structural, "pad", "pad_p", "pad", 5),
    Block(
        linalg,
        "dot_general",
        "dot_general_p",
        "dot_general",
        6,
        shared={"jvp": "_bilinear_jvp serves conv_general_dilated too"},
    ),  # fmt: skip
    Block(
        collectives,
        "psum",
        "psum_p",
        "psum",
        2,
        shared={"impl": "_unbound_impl: every collective's impl"},
        no_rule=("mask",),
    ),  # fmt: skip
    Block(gather_scatter, "gather", "general_gather_p", "gather", 8),
    Block(control_flow, "scan", "scan_p", "scan", 6),
]


def _span(block: Block) -> tuple[list[str], int, int]:
    """The module's lines and the block's [start, end) line numbers (1-based)."""
    lines = Path(inspect.getsourcefile(block.module)).read_text().splitlines()
    starts = [i for i, s in enumerate(lines, 1) if s.startswith(f"# === {block.title}")]
    assert len(starts) == 1, f"{block.title}: expected one '# === {block.title}' line"
    start = starts[0]
    # the block ends at the first top-level section heading not its own
    end = next(
        (
            i
            for i, s in enumerate(lines[start:], start + 1)
            if re.match(r"# (---|===) ", s) and not s.startswith(f"# --- {block.title}: ")
        ),
        len(lines) + 1,
    )
    return lines, start, end


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.title)
def test_header_has_formula_constraints_and_example(block):
    lines, start, end = _span(block)
    header = []
    for s in lines[start - 1 : end - 1]:
        if not s.startswith("#"):
            break
        header.append(s)
    text = "\n".join(header)
    for n in range(1, block.n_constraints + 1):
        assert f"(C{n})" in text, f"{block.title}: constraint (C{n}) missing from the header"
    assert f"(C{block.n_constraints + 1})" not in text
    assert "Example" in text, f"{block.title}: no worked example in the header"
    assert len(header) >= 15, f"{block.title}: the header is too short to hold the formula"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.title)
def test_sub_sections_follow_the_fixed_order(block):
    lines, start, end = _span(block)
    found = []
    for s in lines[start - 1 : end - 1]:
        m = re.match(rf"# --- {re.escape(block.title)}: (\w+)", s)
        if m:
            found.append("binder" if m.group(1) == "the" else m.group(1))
    want = [r for r in ORDER if r not in block.no_rule]
    assert found == want, f"{block.title}: sub-sections {found}, want {want}"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.title)
def test_every_rule_is_inside_the_block(block):
    lines, start, end = _span(block)
    path = inspect.getsourcefile(block.module)
    # registrations: ``pad_p.def_jvp(...)``, ``@scan_p.def_batch``, ``scan_p.linearize_rule = ``
    pattern = re.compile(rf"\b{block.prim_var}\.(def_\w+|linearize_rule)\b")
    outside = [i for i, s in enumerate(lines, 1) if pattern.search(s) and not start <= i < end]
    assert not outside, f"{block.title}: rules registered outside its block at lines {outside}"
    prim = getattr(block.module, block.prim_var)
    for rule, attr in RULE_ATTRS.items():
        fn = getattr(prim, attr, None)
        if fn is None or rule in block.shared:
            continue
        code = getattr(fn, "__code__", None)
        if code is None or code.co_filename != path:
            continue  # a generic rule built elsewhere (ad_helpers.linear_jvp, ...)
        assert start <= code.co_firstlineno < end, (
            f"{block.title}: its {rule} rule {fn.__qualname__} is defined at line "
            f"{code.co_firstlineno}, outside its block (lines {start}-{end - 1})"
        )
    binder = getattr(block.module, block.binder)
    binder = inspect.unwrap(binder)
    assert start <= binder.__code__.co_firstlineno < end, f"{block.title}: binder outside"


# --- the errors cite the labels ------------------------------------------------------------


def _raises(fn, exc, label):
    with pytest.raises(exc, match=re.escape(f"({label})")):
        fn()


def test_pad_errors_cite_their_label():
    from refimpl import lax

    x = np.zeros((2, 3), np.float32)
    _raises(lambda: lax.pad(x, np.zeros(2, np.float32), [(0, 0, 0)] * 2), ValueError, "C1")
    _raises(lambda: lax.pad(x, np.int32(0), [(0, 0, 0)] * 2), TypeError, "C2")
    # pairs instead of triples: JAX 0.10.2's ValueError (it unpacks each entry into three)
    _raises(lambda: lax.pad(x, np.float32(0), [(0, 0)] * 2), ValueError, "C3")
    _raises(lambda: lax.pad(x, np.float32(0), [(0, 0, 0)]), ValueError, "C3")
    _raises(lambda: lax.pad(x, np.float32(0), [(0, 0, -1)] * 2), ValueError, "C4")
    _raises(lambda: lax.pad(x, np.float32(0), [(-2, -1, 0)] * 2), ValueError, "C5")


def test_dot_general_errors_cite_their_label():
    from refimpl import lax

    a, b = np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32)
    _raises(lambda: lax.dot_general(a, b, ((1,), (1,))), TypeError, "C1")
    _raises(lambda: lax.dot_general(a, b, (((2,), (1,)), ((), ()))), TypeError, "C2")
    _raises(lambda: lax.dot_general(a, a, (((1, 1), (1, 1)), ((), ()))), TypeError, "C3")
    _raises(lambda: lax.dot_general(a, b, (((1,), ()), ((), ()))), TypeError, "C4")
    _raises(lambda: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), TypeError, "C5")
    i = np.zeros((4, 3), np.int32)
    _raises(
        lambda: lax.dot_general(i, i, (((1,), (1,)), ((), ())), preferred_element_type=np.int8),
        TypeError,
        "C6",
    )


def test_psum_errors_cite_their_label():
    import refimpl as ri
    from refimpl import lax

    x = np.zeros(4, np.float32)
    _raises(lambda: ri.vmap(lambda v: lax.psum(v, "j"), axis_name="i")(x), NameError, "C1")
    bad_groups = lambda v: lax.psum(v, "i", axis_index_groups=((0, 1), (2,)))  # noqa: E731
    _raises(lambda: ri.vmap(bad_groups, axis_name="i")(x), ValueError, "C2")


def test_gather_errors_cite_their_label():
    from refimpl import lax

    x = np.zeros((3, 3), np.float32)
    dn = lax.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    i = np.array([[2]], np.int32)
    _raises(lambda: lax.gather(x, i.astype(np.float32), dn, (1, 3)), ValueError, "C1")
    _raises(lambda: lax.gather(x, i, dn._replace(offset_dims=(1, 0)), (1, 3)), TypeError, "C2")
    _raises(lambda: lax.gather(x, i, dn._replace(start_index_map=(0, 1)), (1, 3)), TypeError, "C3")
    _raises(lambda: lax.gather(x, i, dn, (1, 3, 1)), TypeError, "C6")
    _raises(lambda: lax.gather(x, i, dn, (1, 4)), TypeError, "C7")
    _raises(lambda: lax.gather(x, i, dn, (2, 3)), TypeError, "C8")


def test_scan_errors_cite_their_label():
    import refimpl as ri
    from refimpl import lax
    from refimpl.primitives.control_flow import scan_p

    carry, xs = np.float32(0), np.zeros(3, np.float32)
    program = ri.make_program(lambda c, x: (c + x, c))(carry, np.float32(0))
    params = dict(body=program, num_consts=0, num_carry=1, length=3, reverse=False, unroll=1)
    _raises(lambda: scan_p.bind(carry, xs, **{**params, "reverse": 1}), TypeError, "C1")
    _raises(lambda: scan_p.bind(carry, xs, **{**params, "num_carry": 3}), TypeError, "C2")
    _raises(lambda: scan_p.bind(carry, xs, **{**params, "length": 4}), TypeError, "C4")
    _raises(lambda: scan_p.bind(carry, xs.astype(np.int32), **params), TypeError, "C5")
    assert lax.scan(lambda c, x: (c + x, c * x), 0.0, np.array([1, 2, 3], np.float32))[0] == 6
