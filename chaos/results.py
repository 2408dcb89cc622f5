"""One row per scenario run, and the table of them written to ``benchmarks/results/``."""

from __future__ import annotations

import json
import os
import platform
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from config.errors import LkError


@dataclass
class Outcome:
    """What one scenario run injected and what the check against the oracle found.

    Attributes:
        scenario: the scenario's name.
        seed: the seed its random moments were drawn from.
        faults: faults injected (SIGKILLs, broker kills, retention runs, bad requests).
        events_checked: events whose fate was checked (counted back, or served and compared).
        lost: acknowledged events missing from the log, or from what readers are served.
        duplicated: events counted more often than they were sent (log or views).
        unexplained: served rows (or records) that differ from the oracle with no contract
            rule to explain them, plus any broken promise of the scenario (a 5xx, a silent
            data loss, a replay called complete on a truncated log).
        seconds: wall time of the run.
        notes: where the faults landed, what recovered, the figures of the scenario.
    """

    scenario: str
    seed: int
    faults: int = 0
    events_checked: int = 0
    lost: int = 0
    duplicated: int = 0
    unexplained: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def clean(self) -> bool:
        """Nothing lost, doubled or unexplained, and the scenario ran to its end."""
        return not (self.lost or self.duplicated or self.unexplained or self.error)


COLUMNS = ("runs", "faults", "events_checked", "lost", "duplicated", "unexplained", "errors")


def summarize(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Totals per scenario."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COLUMNS, 0))
    for o in outcomes:
        row = table[o.scenario]
        row["runs"] += 1
        row["faults"] += o.faults
        row["events_checked"] += o.events_checked
        row["lost"] += o.lost
        row["duplicated"] += o.duplicated
        row["unexplained"] += o.unexplained
        row["errors"] += o.error is not None
    return dict(table)


def markdown(outcomes: list[Outcome]) -> str:
    """The results table in Markdown (what the README shows)."""
    rows = summarize(outcomes)
    lines = [
        "| scenario | " + " | ".join(c.replace("_", " ") for c in COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    lines += [
        f"| `{name}` | " + " | ".join(f"{row[c]:,}" for c in COLUMNS) + " |"
        for name, row in rows.items()
    ]
    total = {c: sum(r[c] for r in rows.values()) for c in COLUMNS}
    lines.append("| **all** | " + " | ".join(f"**{total[c]:,}**" for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def machine() -> dict[str, Any]:
    """The machine the figures come from."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "system": platform.platform(),
    }


class ResumeError(LkError, ValueError):
    """``lk chaos --resume`` found results of another pass (seed, runs or workload size)."""

    exit_code = 2


def resumed(out: Path, *, seed: int, runs: int, events: int) -> list[Outcome]:
    """The outcomes an earlier, cut-off ``lk chaos`` left in ``out/chaos.json``.

    Resuming continues the same pass, so its seed, runs and workload size must match
    what the file says; a missing file resumes nothing.
    """
    path = out / "chaos.json"
    if not path.exists():
        return []
    doc = json.loads(path.read_text())
    wanted = {"seed": seed, "runs": runs, "events": events}
    found = {key: doc.get(key) for key in wanted}
    if found != wanted:
        raise ResumeError(f"{path} holds a pass with {found}, not {wanted}; choose another --out")
    return [Outcome(**o) for o in doc["outcomes"]]


def write(
    outcomes: list[Outcome],
    out: Path,
    *,
    seed: int,
    runs: int,
    events: int | None = None,
    complete: bool = True,
) -> tuple[Path, Path]:
    """Write ``chaos.json`` (every run) and ``chaos.md`` (the table) into ``out``.

    ``lk chaos`` writes after every scenario (``complete=False`` until the last), so a
    long pass that is cut off still leaves what it saw (and ``--resume`` goes on from it).
    """
    out.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": "chaos",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "seed": seed,
        "runs": runs,
        "events": events,
        "complete": complete,
        "outcomes_recorded": len(outcomes),
        "machine": machine(),
        "summary": summarize(outcomes),
        "outcomes": [asdict(o) for o in outcomes],
    }
    json_path, md_path = out / "chaos.json", out / "chaos.md"
    json_path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    md_path.write_text(markdown(outcomes))
    return json_path, md_path
