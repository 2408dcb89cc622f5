"""The orchestration: history into each design's topic, the designs one after the other.

Each design runs in a child process (:mod:`compare.design`) that this process samples
for CPU and memory. Both designs read byte-identical logs: the same seeded history, and
the same seeded live records (only the times differ: event time is the send time). Each
has a topic and a storage root of its own, on the same broker, so the second design does
not see the first one's live phase as history.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from compare.options import CompareOptions
from compare.summary import assemble
from config.settings import Settings, with_sections
from event_log.topics import ensure_topics
from infra.processes import stop_child
from measure.machine import machine
from measure.resources import TreeSampler
from workload.generator import WorkloadSpec, generate, generate_ahead
from workload.producer import produce

REPO = Path(__file__).resolve().parents[1]
Narrate = Callable[[str, dict[str, Any]], None]


def design_settings(
    base: Settings, design: str, seed: int, work: Path, name: str | None = None
) -> Settings:
    """Settings of one design's run: its mode, its topics, its storage root.

    ``name``: what the run's topics and folder are called, if not the design (the floor).
    """
    label = f"{name or design}_{seed}_{datetime.now(UTC).strftime('%H%M%S')}"
    settings = with_sections(
        base,
        kafka={
            "events_topic": f"events_{label}",
            "catalog_topic": f"catalog_{label}",
            "alerts_topic": f"alerts_{label}",
        },
        storage={"root": str(work / label)},
    )
    return settings.model_copy(update={"mode": design})


def history_spec(opts: CompareOptions, seed: int, anchor: datetime) -> WorkloadSpec:
    """The seeded history, placed so that its last event time lies just before ``anchor``.

    A user's timeline runs past the spec's span (sessions go on after they start), so
    the history is generated once to measure how far, then shifted: live events (event
    time = now) must come after the history, or a streaming lane's clock would stand
    hours ahead of them and make every live event late.
    """
    probe = WorkloadSpec(
        events=opts.events,
        seed=seed,
        users=opts.users,
        products=opts.products,
        start=datetime(2000, 1, 1),
        span=opts.history_span,
        late_fraction=opts.late_fraction,
    )
    last = max(
        orjson.loads(r.value)["event_time"]
        for r in generate(probe)
        if r.topic == "events" and r.kind in ("event", "late", "duplicate") and r.value is not None
    )
    extent = datetime.fromisoformat(last.removesuffix("Z")) - probe.start
    start = anchor.replace(tzinfo=None, microsecond=0) - extent - timedelta(minutes=1)
    return replace(probe, start=start)


def run_design(
    settings: Settings,
    opts: CompareOptions,
    seed: int,
    work: Path,
    narrate: Narrate,
    **extra: Any,
) -> dict[str, Any]:
    """One design's child process, sampled; its figures with the cost added."""
    name = "floor" if extra.get("floor") else settings.mode
    job_dir = work / f"{name}_{seed}_{extra.get('events', 'scenario')}"
    job_dir.mkdir(parents=True, exist_ok=True)
    job = {
        **extra,
        "settings": settings.model_dump(mode="json"),
        "options": opts.model_dump(mode="json"),
        "seed": seed,
        "workdir": str(job_dir),
        "out": str(job_dir / "result.json"),
    }
    (job_dir / "job.json").write_text(json.dumps(job, default=str))
    # your own files run their scenario (compare.own_design), the shop its own, the floor its
    module = (
        "compare.own_design"
        if extra.get("files")
        else "compare.floor_design"
        if extra.get("floor")
        else "compare.design"
    )
    scenario_cost: dict[str, Any] | None = None  # before the sustainable search, if one runs
    with (job_dir / "design.log").open("w") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", module, str(job_dir / "job.json")],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        try:
            with TreeSampler(child.pid, exclude_cmdline=("measure.generator",)) as sampler:
                assert child.stdout is not None
                for line in child.stdout:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if event.get("event") == "sustainable" and scenario_cost is None:
                        scenario_cost = sampler.snapshot()
                    narrate(name, event)
                code = child.wait()
        finally:
            _stop(child)
    if code != 0:
        tail = "".join((job_dir / "design.log").read_text().splitlines(keepends=True)[-30:])
        raise RuntimeError(f"the {name} run failed (exit {code}):\n{tail}")
    result = json.loads((job_dir / "result.json").read_text())
    result["cost"] = scenario_cost or sampler.usage.as_dict()
    result["cost"]["scope"] = "the scenario; a sustainable-rate search after it is not counted"
    return result


def _stop(child: subprocess.Popen[str]) -> None:
    """Stop a design process left running (the caller was interrupted); its JVM follows."""
    stop_child(child)


def run_compare(
    base: Settings, opts: CompareOptions, out: Path, narrate: Narrate | None = None
) -> dict[str, Any]:
    """Run the comparison; write ``results.json``, ``summary.md``, ``report.html`` to ``out``."""
    from compare.report import write_reports

    tell = narrate or (lambda design, event: None)
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    info = machine(base)
    runs: list[dict[str, Any]] = []
    if opts.own_data:
        return _own_compare(base, opts, out, work, info, tell)
    floors: list[dict[str, Any]] = []
    for seed in opts.seeds():
        spec = history_spec(opts, seed, datetime.now(UTC))
        for design in opts.order:
            settings = _with_history(design_settings(base, design, seed, work), spec, tell)
            runs.append(run_design(settings, opts, seed, work, tell))
        if opts.floor:
            settings = design_settings(base, opts.order[0], seed, work, name="floor")
            settings = _with_history(settings, spec, tell, "floor")
            floors.append(run_design(settings, opts, seed, work, tell, floor=True))
    results = assemble(runs, opts, info, floors)
    if opts.scaling:
        results["scaling"] = scaling(base, opts, work, tell)
        from compare.verdict import scaling_sentences

        results["verdict"] += scaling_sentences(results["scaling"])
    results["data_set"] = data_set(base, opts, None)
    write_reports(results, out)
    return results


def _with_history(
    settings: Settings, spec: WorkloadSpec, tell: Narrate, name: str | None = None
) -> Settings:
    """``settings`` once its topics exist and hold the seeded history, acknowledged."""
    ensure_topics(settings)
    report = produce(settings, generate_ahead(spec))
    if report.failed or report.acknowledged != report.sent:
        raise RuntimeError(f"history not fully acknowledged: {report.as_dict()}")
    message = f"history: {report.sent:,} records (seed {spec.seed})"
    tell(name or settings.mode, {"event": "produced", "message": message})
    return settings


def own_settings(base: Settings) -> Settings:
    """``base`` with its schema file and view module as absolute paths (children run elsewhere)."""
    events, views = base.events, base.views
    if events.schema_file is not None:
        events = events.model_copy(update={"schema_file": Path(events.schema_file).resolve()})
    if views.module.endswith(".py"):
        views = views.model_copy(update={"module": str(Path(views.module).resolve())})
    return base.model_copy(update={"events": events, "views": views})


def data_set(settings: Settings, opts: CompareOptions, files: tuple[Path, Path] | None) -> dict:
    """What the comparison ran on: the data, the contract, the views, the change."""
    from designs.platform import build

    platform = build(settings)
    contract = platform.contract
    schema = settings.events.schema_file
    if files is None:
        name = f"the built-in shop generator ({opts.events:,} events of history, seed {opts.seed})"
        live = f"the shop generator at {opts.rate:g} events/s for {opts.live_seconds:g} s"
    else:
        name = str(opts.history)
        live = str(opts.live) if opts.live else (
            f"the last {opts.live_fraction:.0%} of the history's rows, in file order"
        )  # fmt: skip
    return {
        "name": name,
        "history": name,
        "live": live,
        "contract": {
            "schema": _shown(schema) if schema else settings.events.ddl or "built-in",
            "fields": [f.name for f in contract.fields],
            "id_field": contract.id_field,
            "time_field": contract.time_field,
            "key_field": contract.key_field,
            "rules": [r.reason for r in contract.rules],
        },
        "views": {
            "module": _shown(settings.views.module),
            "names": platform.registry.names(),
            "count_columns": opts.counts,
        },
        "change": opts.change,
    }


def _shown(path: Path | str) -> str:
    """A path relative to the working directory when it lies below it (as the user typed it)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def replay_history(settings: Settings, path: Path) -> dict[str, Any]:
    """The history into the design's topic as ``lk replay`` sends it (event-time order)."""
    from event_log.configured import load_contract
    from workload.replay import ReplayStats, replay_records

    stats = ReplayStats()
    report = produce(settings, replay_records(path, load_contract(settings.events), stats))
    if report.failed or report.acknowledged != report.sent:
        raise RuntimeError(f"history not fully acknowledged: {report.as_dict()}")
    return {**stats.as_dict(), "sent": report.sent}


def _own_compare(
    base: Settings,
    opts: CompareOptions,
    out: Path,
    work: Path,
    info: dict[str, Any],
    tell: Narrate,
) -> dict[str, Any]:
    """The comparison over your files and views (``--history``)."""
    from compare.own_check import disagreements
    from compare.own_files import split_tail
    from compare.report import write_reports
    from designs.platform import build

    assert opts.history is not None
    history = opts.history.resolve()
    base = own_settings(base)
    # count columns: views.options' count_column, then --count
    names = build(base).registry.names()
    counts = {n: c for n in names if (c := base.views.option(n, "count_column", None))}
    opts = opts.model_copy(update={"counts": counts | opts.counts})
    if opts.live is not None:
        files = (history, opts.live.resolve())
    else:
        files = split_tail(history, opts.live_fraction, work / "files")
    runs: list[dict[str, Any]] = []
    served: dict[str, dict[str, Any]] = {}
    for seed in opts.seeds():
        for design in opts.order:
            settings = design_settings(base, design, seed, work)
            ensure_topics(settings)
            replayed = replay_history(settings, files[0])
            tell(design, {"event": "produced", "message": f"history: {replayed['sent']:,} rows"})
            run = run_design(settings, opts, seed, work, tell, files=[str(files[0]), str(files[1])])
            run["history_replay"] = replayed
            runs.append(run)
            job_dir = work / f"{design}_{seed}_scenario"
            served.setdefault(str(seed), {})[design] = json.loads(
                (job_dir / "served.json").read_text()
            )
    # the report's workload line: the history's rows and the live phase's length, as run
    shown = opts.model_copy(
        update={
            "events": runs[0]["history_replay"]["sent"],
            "live_seconds": round(runs[0]["live"]["generator"]["seconds_target"], 1),
        }
    )
    results = assemble(runs, shown, info)
    results["data_set"] = data_set(base, opts, files)
    results["designs_disagree"] = {
        seed: {
            phase: disagreements(
                {d: s[phase] for d, s in by_design.items()},
                next(iter(by_design.values()))["keys"],
                {d: s["late_windows"][phase] for d, s in by_design.items()},
            )
            for phase in ("end_of_live", "after_change")
        }
        for seed, by_design in served.items()
        if len(by_design) > 1
    }
    write_reports(results, out)
    return results


def scaling(base: Settings, opts: CompareOptions, work: Path, tell: Narrate) -> dict[str, Any]:
    """Time to serve new logic per design and history length, and how it grows."""
    from compare.summary import growth

    points: dict[str, list[dict[str, Any]]] = {d: [] for d in opts.order}
    for events in opts.scaling:
        sized = opts.model_copy(update={"events": events})
        spec = history_spec(sized, opts.seed, datetime.now(UTC))
        for design in opts.order:
            settings = design_settings(base, design, opts.seed, work / f"scaling_{events}")
            ensure_topics(settings)
            produce(settings, generate_ahead(spec))
            tell(design, {"event": "scaling", "message": f"history of {events:,} events"})
            point = run_design(
                settings, sized, opts.seed, work, tell, kind="scaling", events=events
            )
            points[design].append(point)
    return {
        "measured": True,
        "points": points,
        "growth": {d: growth(p) for d, p in points.items()},
    }
