"""Your own files in a comparison: the split into history and live, and the live phase's rows.

The history goes into the log as ``lk replay`` sends it (:func:`workload.replay.replay_records`
then :func:`workload.producer.produce`, event-time order). The live phase sends the live
file in its own order (late and re-sent rows where the file has them) from the load
generator's process, at a steady rate, with *probes* added: after every ``probe_every``
valid row, a copy of that row through your contract with a new id and every marker field
(a string field some view is keyed by) set to ``lk-probe-N``. A probe keeps the event time
of the row it copies, so it is on the file's clock: neither late nor moving the lanes'
watermarks ahead; its marker gives it rows of its own in the views keyed by those fields.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from config.settings import EventSettings
from event_log.configured import load_contract
from event_log.contract import EventContract
from measure.generator import Outgoing
from workload.replay import ReplayError, ReplayStats, RowEncoder, file_format, replay_records

PROBE = "lk-probe-"


def split_tail(path: Path, fraction: float, folder: Path) -> tuple[Path, Path]:
    """The file's rows cut in two in file order: the first ones, and the last ``fraction``."""
    kind = file_format(path)
    folder.mkdir(parents=True, exist_ok=True)
    head, tail = folder / f"history-{path.name}", folder / f"live-{path.name}"
    if kind == "csv":
        with path.open(newline="") as source:
            rows = list(csv.reader(source))
        header, body = rows[0], rows[1:]
        cut = len(body) - max(1, round(len(body) * fraction))
        for target, part in ((head, body[:cut]), (tail, body[cut:])):
            with target.open("w", newline="") as out:
                csv.writer(out).writerows([header, *part])
    elif kind == "jsonl":
        lines = path.read_bytes().splitlines(keepends=True)
        cut = len(lines) - max(1, round(len(lines) * fraction))
        head.write_bytes(b"".join(lines[:cut]))
        tail.write_bytes(b"".join(lines[cut:]))
    else:
        raise ReplayError(f"{path}: a {kind} history needs --live (only CSV and JSON Lines split)")
    return head, tail


@dataclass(frozen=True)
class LiveRows:
    """What the live phase sends, in order, and the probes among it."""

    records: list[Outgoing]
    probes: list[dict[str, Any]]  # id, event id, the row as sent
    stats: ReplayStats


def marker_fields(contract: EventContract, view_keys: Sequence[Sequence[str]]) -> list[str]:
    """String fields of the contract that some view is keyed by (not the id, not the time)."""
    names = {f.name for f in contract.fields if f.type == "STRING"}
    names -= {contract.id_field, contract.time_field}
    return sorted({c for key in view_keys for c in key if c in names})


def live_rows(
    path: Path, contract: EventContract, probe_every: int, markers: Sequence[str]
) -> LiveRows:
    """The live file in file order, with a probe after every ``probe_every`` valid rows."""
    stats = ReplayStats()
    encoder = RowEncoder(contract)
    out: list[Outgoing] = []
    probes: list[dict[str, Any]] = []
    valid = 0
    for record in replay_records(path, contract, stats, keep_file_order=True, ahead=False):
        assert record.value is not None  # a replayed row always has one (no tombstones)
        out.append(Outgoing(record.key, record.value))
        if record.kind != "event" or not markers:
            continue
        valid += 1
        if valid % probe_every:
            continue
        n = len(probes)
        row = orjson.loads(record.value)
        row[contract.id_field] = f"{PROBE}{n}"
        for name in markers:
            row[name] = f"{PROBE}{n}"
        _, _, key, value, problem = encoder.encode(0, row)
        if problem is None:
            out.append(Outgoing(key, value, probe=str(n)))
            probes.append({"id": n, "event_id": f"{PROBE}{n}", "row": row})
    return LiveRows(out, probes, stats)


def seconds_for(records: int, rate: float) -> float:
    """The live phase's length: the generator sends ``int(rate * seconds)`` records."""
    seconds = records / rate
    while int(rate * seconds) < records:
        seconds = math.nextafter(seconds, math.inf)
    return seconds


def file_source(
    path: str, events: dict[str, Any], probe_every: int, markers: list[str]
) -> Callable[[int, float], Outgoing]:
    """The generator's source (``compare.own_files:file_source``): record ``i`` of the live rows.

    Runs in the generator's process; it builds the same rows as the design process does
    from the same file and contract.
    """
    contract = load_contract(EventSettings.model_validate(events))
    records = live_rows(Path(path), contract, probe_every, markers).records
    return lambda i, _due: records[i]
