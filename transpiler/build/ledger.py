"""The signature ledger's build side: what a built module recorded at run time, and what the next build compiles.

A built module appends a line to its ledger (``transpiler.cachedir.ledger_path``, keyed by its source) for
each signature it traced at run time (``kind: "trace"``) and, when the process ends, for each shape its
shape-generic native code ran most (``kind: "call"``, with the number of calls). ``select`` turns the
records into the signatures ``build --from-ledger`` adds to each Function: every traced one, then the shapes
called at least ``MIN_CALLS`` times, most called first, at most ``MAX_PER_FUNCTION`` per Function. The build
hash covers the selection (``digest``), so a new signature in the ledger rebuilds the module and more calls
of known ones do not.

``python -m transpiler ledger [PATH]`` prints the ledgers (``show``); ``--clear`` empties them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import TextIO

from transpiler.cachedir import LEDGER_MAX_BYTES, cache_root, read_ledger

MIN_CALLS = 2               # a shape called once (the last, partial batch) is not worth its code
MAX_PER_FUNCTION = 8        # specialisations of one Function at most


@dataclasses.dataclass
class Recorded:
    """One signature of one Function, over every line that recorded it."""
    function: str           # the ledger key (``models:scale#0``, ``models:Model.__call__#0@model``)
    label: str              # how the user names the Function (``scale``, ``model.__call__``)
    signature: list         # encoded (``runtime.aot.encode_signature``)
    traces: int = 0
    calls: int = 0
    last: float = 0.0

    @property
    def text(self) -> str:
        """``(x: float32[4096], n=3)``."""
        return "(" + ", ".join(_item_text(item) for item in self.signature) + ")"


def _item_text(item) -> str:
    if not isinstance(item, dict):
        return repr(item)
    if "dtype" in item:
        dims = item["spec"]
        return f"{item['dtype']}[*]" if dims is None else \
            f"{item['dtype']}[{','.join('None' if d is None else str(d) for d in dims)}]"
    if "type" in item:
        return repr(item["value"])
    for kind, (left, right) in (("list", "[]"), ("tuple", "()")):
        if kind in item:
            return left + ", ".join(_item_text(v) for v in item[kind]) + right
    if "dict" in item:
        return "{" + ", ".join(f"{k!r}: {_item_text(v)}" for k, v in item["dict"]) + "}"
    return repr(item)


def summarize(records: list[dict]) -> list[Recorded]:
    """The records grouped by Function and signature, in order of first appearance."""
    found: dict[tuple, Recorded] = {}
    for record in records:
        signature = record.get("signature")
        if not isinstance(signature, list):
            continue
        key = (record["function"], json.dumps(signature, sort_keys=True))
        entry = found.get(key)
        if entry is None:
            entry = found[key] = Recorded(record["function"], str(record.get("label") or record["function"]),
                                          signature)
        count = record.get("count", 1)
        count = count if isinstance(count, int) and count > 0 else 1
        if record.get("kind") == "call":
            entry.calls += count
        else:
            entry.traces += count
        if isinstance(record.get("time"), (int, float)):
            entry.last = max(entry.last, float(record["time"]))
    return list(found.values())


def select(records: list[dict]) -> dict[str, list]:
    """Function's ledger key -> the encoded signatures the next ``--from-ledger`` build compiles for it."""
    chosen: dict[str, list] = {}
    recorded = summarize(records)
    traced = [r for r in recorded if r.traces]
    called = sorted((r for r in recorded if not r.traces and r.calls >= MIN_CALLS), key=lambda r: -r.calls)
    for entry in traced + called:
        signatures = chosen.setdefault(entry.function, [])
        if len(signatures) < MAX_PER_FUNCTION:
            signatures.append(entry.signature)
    return chosen


def digest(selection: dict[str, list]) -> str:
    """A hash of a selection (which signatures, not how often): part of the module's build hash."""
    canonical = sorted((key, sorted(json.dumps(s, sort_keys=True) for s in signatures))
                       for key, signatures in selection.items())
    return hashlib.sha256(json.dumps(canonical).encode("utf-8")).hexdigest()


def show(ledgers: list[tuple[str, Path]], out: TextIO) -> int:
    """Print each module's ledger (``(module name, path)``): per Function, its signatures with their traces
    and calls, those the next ``--from-ledger`` build compiles marked ``*``. Returns the exit status."""
    shown = 0
    for name, path in ledgers:
        records = read_ledger(path)
        if not records:
            continue
        shown += 1
        selected = {(k, json.dumps(s, sort_keys=True)) for k, signatures in select(records).items()
                    for s in signatures}
        full = path.stat().st_size >= LEDGER_MAX_BYTES if path.exists() else False
        print(f"{name}  ({path}{', full: it records nothing more; --clear empties it' if full else ''})", file=out)
        by_function: dict[str, list[Recorded]] = {}
        for entry in summarize(records):
            by_function.setdefault(entry.function, []).append(entry)
        for key, entries in by_function.items():
            print(f"  {entries[0].label}  [{key}]", file=out)
            for entry in entries:
                mark = "*" if (key, json.dumps(entry.signature, sort_keys=True)) in selected else " "
                counts = []
                if entry.traces:
                    counts.append(f"traced {entry.traces}x")
                if entry.calls:
                    counts.append(f"{entry.calls} calls")
                print(f"   {mark} {entry.text}  {', '.join(counts)}", file=out)
    if not shown:
        print("no signatures recorded (a built module records the signatures it traces at run time, and the "
              "shapes its shape-generic code runs most)", file=out)
    else:
        print("* compiled by the next `python -m transpiler build --from-ledger`", file=out)
    return 0


def all_ledgers() -> list[tuple[str, Path]]:
    """Every ledger in rt's cache directory: ``(module name, path)``."""
    return [(path.stem.rpartition("-")[0], path) for path in sorted((cache_root() / "ledger").glob("*.jsonl"))]
