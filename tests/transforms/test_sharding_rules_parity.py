"""``sharding_rules.output_shardings`` against JAX 0.10.2 (issue 33).

Each program of tests/helpers/sharding_rules_cases.py is traced by refimpl
(``make_program``) and typed by ``output_shardings`` from its inputs'
shardings; JAX runs ``jax.jit(f)(*sharded_args)`` on 4 CPU devices (in a
subprocess) and reports its outputs' ``.sharding.spec`` or the exception.
On Explicit axes the specs must be equal as written (``P('x', None)`` is not
``P('x')``), an exception must be a ``ShardingTypeError`` with JAX's leading
words. On Auto axes XLA's propagation chooses; the cases where refimpl's
rules choose otherwise are listed in ``AUTO_DIFFERENT`` with the reason.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import refimpl as ri
from refimpl.errors import ShardingTypeError
from refimpl.sharding import AxisType, NamedSharding, PartitionSpec
from refimpl.transforms import sharding_rules
from tests.helpers import sharding_rules_cases as cases
from tests.helpers.jax_oracle import results_on_four_devices

#: Auto-axis cases where XLA's propagation picks another layout than refimpl's
#: rules (which replicate where an Explicit mesh would raise): the reason each.
AUTO_DIFFERENT = {
    "cond_branches_differ": "XLA lays the result out as one branch's (here the operand's "
    "own, P('x', None)); refimpl's rules replicate where the branches disagree",
    "ravel_2d": "merging f32[4@x,4@y] into f32[16], XLA keeps only 'x'; the Explicit rule "
    "(and refimpl) joins both, P(('x', 'y'))",
    "roll": "refimpl's roll is two uneven slices (refused on Explicit axes, so replicated) "
    "and a concatenate; XLA keeps P('x') through them",
    "tuple_vs_single": "P(('x', 'y')) + P('x') on one axis: Explicit raises, so the rules "
    "replicate; XLA keeps P(('x', 'y'))",
}

#: Cases whose refimpl Program is not JAX's jaxpr, so that the rules meet other
#: primitives (both axis types): the reason each.
PROGRAM_DIFFERENT = {
    "at_set_row": "refimpl's x.at[1].set(v) flattens x (reshape f32[4,8@x] -> f32[32]) and "
    "scatters along the flat axis; JAX scatters into f32[4,8@x] (P(None, 'x')); on Explicit "
    "axes that reshape raises",
    "take_along": "refimpl's take_along_axis flattens x (reshape f32[8@x,4] -> f32[32]) and "
    "gathers along the flat axis; JAX gathers with x's axis 0 as a batching axis (P('x', None))",
}

#: Explicit-axis errors whose words refimpl cannot reproduce from its Program.
MESSAGE_DIFFERENT = {
    "outer_product": "refimpl broadcasts x[:, None] to (8, 8) before mul; JAX's mul takes "
    "f32[8@x,1] and f32[1,8@x], so the operand types in the message differ",
    "cumsum_sharded_axis": "JAX's jnp.cumsum refuses a sharded input before any primitive "
    "(its own words); refimpl's cumsum primitive raises the cumulative rule's",
}


#: Explicit-axis cases where JAX 0.10.2's rule fails an internal assert
#: (AssertionError) and refimpl refuses with the rule's ShardingTypeError.
JAX_ASSERTS = {
    "gather_narrow_window": "JAX checks only the start_index_map axes for whole-or-unsplit, "
    "then asserts it of the offset axes; a window of 1 of f32[4@x,1] fails that assert",
    "gather_narrow_window_2": "as gather_narrow_window, a window of 2",
}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    return results_on_four_devices(
        "sharding_rules_cases.py", tmp_path_factory.mktemp("sharding_rules") / "jax.pkl"
    )


def _refimpl_result(name: str, kind: str):
    shape, names, specs, build, args = cases.CASES[name]
    mesh = ri.make_mesh(shape, names, axis_types=(getattr(AxisType, kind),) * len(names))
    program = ri.make_program(build(ri))(*args)
    shardings = [None if s is None else NamedSharding(mesh, PartitionSpec(*s)) for s in specs]
    try:
        out = sharding_rules.output_shardings(program, shardings, f"jit({name})")
    except (ShardingTypeError, TypeError, ValueError) as e:
        return ("error", type(e).__name__, str(e))
    return ("specs", [cases.as_written(s.spec) for s in out])


def _head(message: str) -> str:
    """A message's leading words: up to the first ':', line break or ' Got '."""
    return re.split(r":|\n| Got ", message, maxsplit=1)[0]


@pytest.mark.parametrize("kind", cases.AXIS_TYPES)
@pytest.mark.parametrize("name", list(cases.CASES))
def test_output_shardings_as_jax(oracle, name, kind, four_ref_devices):
    expected = oracle[name, kind]
    got = _refimpl_result(name, kind)
    if name in PROGRAM_DIFFERENT or (kind == "Auto" and name in AUTO_DIFFERENT):
        assert got != expected, "agrees with XLA now: drop it from AUTO_DIFFERENT"
        assert got[0] == "specs" or kind == "Explicit"  # Auto never raises
        return
    if kind == "Explicit" and name in JAX_ASSERTS:
        assert expected[:2] == ("error", "AssertionError"), expected
        assert got[:2] == ("error", "ShardingTypeError"), got
        return
    assert got[0] == expected[0], (got, expected)
    if got[0] == "specs":
        assert got[1] == expected[1]
        return
    assert got[1] == expected[1]
    if name not in MESSAGE_DIFFERENT:
        assert _head(got[2]) == _head(expected[2]), (got[2], expected[2])


def test_the_table_covers_both_mesh_ranks_and_enough_programs():
    ranks = {len(shape) for shape, *_ in cases.CASES.values()}
    assert ranks == {1, 2} and len(cases.CASES) >= 40


def test_no_sharded_input_gives_none(four_ref_devices):
    program = ri.make_program(lambda x: (x * 2, x.sum()))(np.ones(4))
    assert sharding_rules.output_shardings(program, [None], "f") == [None, None]


def test_sharding_type_error_is_jaxs_class_and_names_the_computation(four_ref_devices):
    from refimpl.as_jax import aliased_jax

    mesh = ri.make_mesh((4,), ("x",))
    program = ri.make_program(lambda x: x[:, None] * x[None, :])(np.ones(8))
    with pytest.raises(ShardingTypeError, match="illegally sharded result") as info:
        sharding_rules.output_shardings(program, [NamedSharding(mesh, PartitionSpec("x"))], "f")
    assert not isinstance(info.value, TypeError)  # an Exception, as JAX's
    assert info.value.__notes__ == ["(while typing the outputs of f)"]
    with aliased_jax():
        from jax._src.core import ShardingTypeError as aliased

    assert aliased is ShardingTypeError
