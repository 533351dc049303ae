"""JAX's results for the ``AGREE`` cases, recorded in the repository.

An ``AGREE`` case takes the reference implementation's (``ref``'s) result as
its expectation. Run without jax -- as ``python -m conformance --impl
ref,pjrt`` is -- that would make ``ref`` judge itself: a bug shared by ``ref``
and ``pjrt`` (a wrong promotion rule, say) could never fail. So the results
real JAX gives for every ``AGREE`` case are recorded in
``conformance/jax_recorded.json`` (with JAX's version), and when jax is not
part of a run, ``ref``'s result is compared with the recording instead of
being taken on trust. A difference is reported on ``ref`` (``differ``), or as
``known`` when ``conformance/known.py`` lists a difference from ``jax`` for
that case.

A recording is tied to the case's source text (a hash): when a case changes,
its recording is *stale* and not used until regenerated with::

    python -m conformance.recorded --update  # needs jax; new and changed cases only
    python -m conformance.recorded           # every case (a new JAX version)

``tests/conformance/test_conformance_recorded.py`` fails while an ``AGREE`` case has no
current recording.

Cases without a usable recording are judged by ``ref`` alone; the summary
names them.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from conformance.case import AGREE, Case
from conformance.observe import ArrayObs, AvalObs, DeletedObs, ErrorObs, Observation

DEFAULT_PATH = os.path.join(os.path.dirname(__file__), "jax_recorded.json")
FORMAT = 1


def case_fingerprint(case: Case) -> str:
    """A hash of what determines the case's result: its source text, x64 and name."""
    text = f"{case.name}\n{case.x64}\n{case.source}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- leaves to JSON and back -----------------------------------------------------------


FLOAT0 = np.dtype([("float0", np.void, 0)])  # JAX's dtype of integer-input tangents


def _dtype(name: str) -> np.dtype:
    if name == "float0":
        return FLOAT0
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


class Unrecordable(TypeError):
    """An observation leaf that has no JSON form."""


def encode_leaf(leaf: Any) -> dict[str, Any]:
    if isinstance(leaf, ArrayObs):
        value = np.asarray(leaf.value)
        return {
            "array": "float0" if value.dtype == FLOAT0 else value.dtype.name,
            "shape": list(value.shape),  # (ascontiguousarray would make a 0-d array 1-d)
            "weak": leaf.weak_type,
            "bytes": base64.b64encode(value.tobytes(order="C")).decode("ascii"),
        }
    if isinstance(leaf, AvalObs):
        return {
            "aval": np.dtype(leaf.dtype).name,
            "shape": list(leaf.shape),
            "weak": leaf.weak_type,
        }
    if isinstance(leaf, DeletedObs):
        return {"deleted": True}
    if isinstance(leaf, ErrorObs):
        return {"error": leaf.kind, "type": leaf.type_name, "message": leaf.message,
                "mro": list(leaf.mro)}  # fmt: skip
    if leaf is None or type(leaf) in (bool, int, float, str):
        if isinstance(leaf, float) and not np.isfinite(leaf):
            return {"py": "float", "value": repr(leaf)}
        return {"py": type(leaf).__name__, "value": leaf}
    raise Unrecordable(f"cannot record a leaf of type {type(leaf).__name__}")


def decode_leaf(data: dict[str, Any]) -> Any:
    if "array" in data:
        dtype = _dtype(data["array"])
        raw = base64.b64decode(data["bytes"])
        if dtype.itemsize == 0:
            return ArrayObs(np.zeros(tuple(data["shape"]), dtype), data["weak"])
        value = np.frombuffer(raw, dtype=dtype).reshape(tuple(data["shape"])).copy()
        return ArrayObs(value, data["weak"])
    if "aval" in data:
        return AvalObs(tuple(data["shape"]), _dtype(data["aval"]), data["weak"])
    if "deleted" in data:
        return DeletedObs()
    if "error" in data:
        return ErrorObs(data["error"], data["type"], data["message"], tuple(data["mro"]))
    kind, value = data["py"], data["value"]
    if kind == "float":
        return float(value)
    return value


# --- the recordings ---------------------------------------------------------------------


@dataclass
class Recordings:
    """Recorded JAX observations by case name, with the JAX version they came from."""

    jax_version: str = ""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: str = ""

    def lookup(self, case: Case) -> tuple[Observation | None, str]:
        """(the recorded observation, "") or (None, why there is none)."""
        entry = self.entries.get(case.name)
        if entry is None:
            return None, "no recorded JAX result"
        if entry.get("skip"):
            return None, f"JAX skipped it when recorded ({entry['skip']})"
        if entry["fingerprint"] != case_fingerprint(case):
            return None, "recorded JAX result is stale (the case changed)"
        leaves = [(path, decode_leaf(leaf)) for path, leaf in entry["leaves"]]
        return Observation(entry["structure"], leaves), ""

    @property
    def label(self) -> str:
        return f"JAX {self.jax_version} (recorded)"


_LOADED: dict[str, Recordings] = {}


def load(path: str = DEFAULT_PATH) -> Recordings:
    """The recordings in ``path`` (empty when the file does not exist)."""
    if path not in _LOADED:
        if not os.path.exists(path):
            _LOADED[path] = Recordings(path=path)
        else:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("format") != FORMAT:
                raise ValueError(f"{path}: unknown recording format {data.get('format')!r}")
            _LOADED[path] = Recordings(data["jax_version"], data["cases"], path)
    return _LOADED[path]


def missing_or_stale(cases: Sequence[Case], recordings: Recordings) -> list[Case]:
    """The ``AGREE`` cases of ``cases`` without a recording, or whose recording
    is stale (the case changed since)."""
    out = []
    for case in cases:
        if case.expect is not AGREE:
            continue
        entry = recordings.entries.get(case.name)
        if entry is None or entry.get("fingerprint") != case_fingerprint(case):
            out.append(case)
    return out


def record(
    cases: Sequence[Case], path: str = DEFAULT_PATH, stream=sys.stderr, update: bool = False
) -> Recordings:
    """Run every ``AGREE`` case on jax and write what it observed to ``path``.

    With ``update``, only the cases without a current recording run; the other
    recordings of ``path`` are kept as they are (and recordings of cases no
    longer in the corpus dropped)."""
    import jax
    import jaxlib

    from conformance import implementations
    from conformance.runner import execute

    impl = implementations.get("jax")
    if not impl.is_available():
        raise RuntimeError(f"jax is unavailable: {impl.unavailable_reason}")
    entries: dict[str, dict[str, Any]] = {}
    agree = [c for c in cases if c.expect is AGREE]
    if update:
        existing = load(path)
        if existing.entries and existing.jax_version != jax.__version__:
            raise RuntimeError(
                f"--update: {path} holds JAX {existing.jax_version}'s results, this is JAX "
                f"{jax.__version__}: record every case (without --update)"
            )
        todo = {c.name for c in missing_or_stale(agree, existing)}
        entries = {c.name: existing.entries[c.name] for c in agree if c.name not in todo}
        agree = [c for c in agree if c.name in todo]
    for index, case in enumerate(agree):
        outcome = execute(case, impl)
        entry: dict[str, Any] = {"fingerprint": case_fingerprint(case)}
        if outcome.skip_reason:
            entry["skip"] = outcome.skip_reason
        else:
            assert outcome.observation is not None
            try:
                entry["structure"] = outcome.observation.structure
                entry["leaves"] = [[p, encode_leaf(v)] for p, v in outcome.observation.leaves]
            except Unrecordable as exc:
                entry = {"fingerprint": entry["fingerprint"], "skip": str(exc)}
        entries[case.name] = entry
        if stream is not None and (index + 1) % 50 == 0:
            print(f"recorded {index + 1}/{len(agree)}", file=stream)
    header = {
        "format": FORMAT,
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "generated_by": "python -m conformance.recorded",
    }
    # one line per case: a re-recording shows in a diff as the cases that changed
    lines = [f"{json.dumps(k)}: {json.dumps(v)}," for k, v in header.items()]
    compact = [f"{json.dumps(name)}: {json.dumps(entry, separators=(',', ':'))}"
               for name, entry in sorted(entries.items())]  # fmt: skip
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n" + "\n".join(lines) + '\n"cases": {\n' + ",\n".join(compact) + "\n}}\n")
    _LOADED.pop(path, None)
    return load(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.recorded",
        description="Record JAX's results for the AGREE cases of the corpus (needs jax).",
    )
    parser.add_argument("--output", default=DEFAULT_PATH)
    parser.add_argument(
        "--update",
        action="store_true",
        help="record only the AGREE cases without a current recording (new or changed "
        "cases); keep the others as they are",
    )
    args = parser.parse_args(argv)
    from conformance import implementations

    implementations.prepare_jax_flags()  # before the corpus or refimpl loads XLA
    from conformance.corpus import all_cases

    recordings = record(all_cases(), args.output, update=args.update)
    skipped = sum(1 for e in recordings.entries.values() if e.get("skip"))
    print(
        f"recorded {len(recordings.entries)} AGREE cases with JAX {recordings.jax_version} "
        f"({skipped} skipped on jax) to {args.output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
