"""Every AGREE case of the conformance corpus has a current JAX recording.

Without one, a run without jax (``python -m conformance --impl ref,pjrt``, as
CI's main job is) judges the case by ``ref`` alone. Fix a failure with
``python -m conformance.recorded --update`` (needs jax; records only the new
and changed cases) and commit ``conformance/jax_recorded.json``.
"""

from __future__ import annotations

from conformance import recorded
from conformance.case import AGREE
from conformance.corpus import all_cases


def test_every_agree_case_has_a_current_recording():
    cases = all_cases()
    recordings = recorded.load()
    todo = recorded.missing_or_stale(cases, recordings)
    names = [c.name for c in todo]
    assert not names, (
        f"{len(names)} AGREE case(s) without a current JAX recording (run "
        f"`python -m conformance.recorded --update`): {', '.join(names[:20])}"
    )
    assert any(c.expect is AGREE for c in cases)


def test_missing_or_stale_finds_new_and_changed_cases():
    agree = [c for c in all_cases() if c.expect is AGREE][:3]
    entries = {c.name: {"fingerprint": recorded.case_fingerprint(c)} for c in agree}
    fresh = recorded.Recordings("0.10.2", entries, "<test>")
    assert recorded.missing_or_stale(agree, fresh) == []
    del entries[agree[0].name]  # a new case
    entries[agree[1].name] = {"fingerprint": "0" * 16}  # a changed case
    assert [c.name for c in recorded.missing_or_stale(agree, fresh)] == [
        agree[0].name,
        agree[1].name,
    ]


def test_agree_case_sources_hold_no_object_addresses():
    # a fingerprint hashes the case's source text: an address in it (a partial's
    # or a function object's repr) changes per process, and the recording is
    # stale in every other process (12 custom.api cases were, until their
    # functools.partial sources showed the function's text instead)
    import re

    addressed = [
        c.name
        for c in all_cases()
        if c.expect is AGREE and re.search(r" at 0x[0-9a-fA-F]+", c.source or "")
    ]
    assert not addressed, f"source text with an object address: {addressed[:10]}"
