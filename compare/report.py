"""``results.json``, ``summary.md`` and a self-contained ``report.html`` (plotly inlined)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from compare.headline import headline, ties
from compare.verdict import MARGIN

COLORS = {"lambda": "#1f77b4", "kappa": "#d62728"}


def cell(stat: dict[str, Any] | None) -> str:
    """``median`` or ``median (min-max)`` for one design's metric."""
    if not stat:
        return "-"
    fmt = (lambda v: f"{v:,.0f}") if abs(stat["median"]) >= 100 else (lambda v: f"{v:.3g}")
    if stat["n"] > 1:
        return f"{fmt(stat['median'])} ({fmt(stat['min'])}-{fmt(stat['max'])})"
    return fmt(stat["median"])


def markdown(results: dict[str, Any]) -> str:
    """The verdict, then the tables, as Markdown (the README's table comes from here)."""
    designs = results["designs"]
    lines = [
        "Verdict:",
        "",
        *[f"- {s}" for s in headline(results)],
        "",
        "| metric | unit | " + " | ".join(designs) + " |",
        "|---|---|" + "---:|" * len(designs),
    ]
    for row in results["table"]:
        lines.append(
            f"| {row['metric']} | {row['unit']} | "
            + " | ".join(cell(row.get(d)) for d in designs)
            + " |"
        )
    lines += [
        "",
        "| allowed lateness | "
        + " | ".join(f"{d}: excluded for good (absorbed later)" for d in designs)
        + " |",
    ]
    lines.append("|---|" + "---:|" * len(designs))
    late = results["late_data"]
    for i, first in enumerate(late[designs[0]]):
        lines.append(
            f"| {first['allowed_lateness']} | "
            + " | ".join(
                f"{late[d][i]['excluded_for_good']:g} ({late[d][i]['absorbed_later']:g})"
                for d in designs
            )
            + " |"
        )
    m = results["machine"]
    opts = results["options"]
    code = results.get("lines_of_code") or {}
    if "shared_lines" in code:
        own = ", ".join(f"{d}-only {n:,}" for d, n in code["own_lines"].items())
        lines += ["", f"Code run ({code['note']}): shared {code['shared_lines']:,} lines; {own}."]
    ds = results.get("data_set") or {}
    if ds:  # what ran: the data set, its contract, its views
        c, v = ds["contract"], ds["views"]
        lines += ["", f"Data set: {ds['name']}; live: {ds['live']}; contract {c['schema']} "
                  f"(id {c['id_field']}, time {c['time_field']}); views {', '.join(v['names'])} "
                  f"({v['module']})."]  # fmt: skip
    for seed, phases in (results.get("designs_disagree") or {}).items():  # your own views
        lines += [f"Lambda and Kappa disagree (seed {seed}, {phase}): " + "; ".join(
            f"{view} {d['differing']} of {d['rows']} rows ({d['explained_by_counted_late_events']} "
            f"in windows with counted late events, {d.get('differing_only_in_the_last_digit', 0)} "
            "one unit apart in the last digit)" for view, d in views.items()) + "."
            for phase, views in phases.items()]  # fmt: skip
    lines += [
        "",
        f"Workload: {opts['events']:,} history events, live {opts['rate']:g} events/s for "
        f"{opts['live_seconds']:g} s, change {opts['change']}, "
        f"seeds {opts['seed']}..{opts['seed'] + opts['repeat'] - 1}; "
        f"{results['ran_first']} ran first.",
        f"Machine: {m['cpu_count']} cores, {m['memory_gib']} GiB, {m['cpu_model']}, "
        f"load {m['load_average_at_start']}, "
        f"{m['date']}; versions {m['versions']}.",
        "",
        "Every figure, judged on its own:",
        "",
        *[f"- {s}" for s in results["verdict"]],
    ]
    return "\n".join(lines) + "\n"


def _when(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)


def figures(results: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, HTML div) of every plot; the plotly JS is inlined once by the template."""
    runs = results["runs"]
    out = []
    fresh = go.Figure()
    for run in runs:
        t = run["freshness"]["timeline"]
        if t:
            t0 = t[0][0]
            fresh.add_scatter(
                x=[p[0] - t0 for p in t],
                y=[p[1] for p in t],
                mode="markers",
                name=f"{run['design']} (seed {run['seed']})",
                marker={"color": COLORS.get(run["design"])},
            )
    fresh.update_layout(
        xaxis_title="probe due (s into the live phase)", yaxis_title="ack -> visible (s)"
    )
    out.append(("Freshness over time: processing-time latency of each probe", fresh))
    windows = go.Figure()
    for run in runs:
        per = [w for w in run["correctness_over_time"]["per_window"] if w["first"] is not None]
        size = 60.0
        windows.add_scatter(
            x=[_when(w["start"]) for w in per],
            y=[w["first"] - w["start"] - size for w in per],
            mode="markers",
            name=f"{run['design']}: first answer",
            marker={"color": COLORS.get(run["design"]), "symbol": "circle-open"},
        )
        done = [w for w in per if w["correct"] is not None]
        windows.add_scatter(
            x=[_when(w["start"]) for w in done],
            y=[w["correct"] - w["start"] - size for w in done],
            mode="markers",
            name=f"{run['design']}: correct answer",
            marker={"color": COLORS.get(run["design"])},
        )
    windows.update_layout(xaxis_title="window start (UTC)", yaxis_title="s after the window's end")
    out.append(("Correctness over time: revenue_by_category windows", windows))
    late = go.Figure()
    for design, rows in results["late_data"].items():
        late.add_bar(
            x=[r["allowed_lateness"] for r in rows],
            y=[r["excluded_for_good"] for r in rows],
            name=f"{design}: excluded for good",
            marker_color=COLORS.get(design),
        )
    late.update_layout(barmode="group", yaxis_title="events")
    out.append(("Late data: events excluded for good, per allowed lateness", late))
    names = [
        "time to serve new logic",
        "CPU per million records",
        "peak memory (all processes)",
        "peak bytes kept",
    ]
    bars = make_subplots(rows=1, cols=len(names), subplot_titles=names)
    for design in results["designs"]:
        rows = [r for r in results["table"] if r["metric"] in names]
        for col, r in enumerate(rows, start=1):
            bars.add_bar(
                x=[design],
                y=[(r.get(design) or {}).get("median")],
                name=design,
                marker_color=COLORS.get(design),
                showlegend=col == 1,
                row=1,
                col=col,
            )
    bars.update_layout(barmode="group")
    out.append(("Cost and time to serve new logic (medians)", bars))
    if results["sustainable_rate"].get("measured"):
        out.append(("Sustainable rate: consumer lag after each commit, per trial", _lag(runs)))
    if results["scaling"].get("measured"):
        scale = go.Figure()
        for design, points in results["scaling"]["points"].items():
            scale.add_scatter(
                x=[p["events"] for p in points],
                y=[p["seconds"] for p in points],
                name=design,
                marker_color=COLORS.get(design),
            )
        scale.update_layout(xaxis_title="history events", yaxis_title="time to serve new logic (s)")
        out.append(("Scaling: time to serve new logic by history length", scale))
    return [
        (title, fig.to_html(full_html=False, include_plotlyjs=False, default_height=380))
        for title, fig in out
    ]


def _lag(runs: list[dict[str, Any]]) -> go.Figure:
    """Lag after each commit in every trial: flat lines held, rising ones did not."""
    fig = go.Figure()
    for run in runs:
        for t in run.get("sustainable_rate", {}).get("trials", []):
            points = t.get("lag_after_commit") or []
            verdict = "held" if t["sustainable"] else "failed" if t["valid"] else "generator behind"
            fig.add_scatter(
                x=[p[0] for p in points],
                y=[p[1] for p in points],
                name=f"{run['design']} {t['rate']:,} ev/s: {verdict}",
                line={
                    "color": COLORS.get(run["design"]),
                    "dash": None if t["sustainable"] else "dot",
                },
            )
    fig.update_layout(xaxis_title="s into the trial", yaxis_title="events behind the log end")
    return fig


def html(results: dict[str, Any]) -> str:
    """The self-contained report page."""
    env = Environment(loader=PackageLoader("compare"), autoescape=select_autoescape())
    template = env.get_template("report.html.j2")
    return template.render(
        results=results,
        headline=headline(results),
        ties=ties(results),
        margin=f"{MARGIN:.0%}",
        plotly_js=get_plotlyjs(),
        figures=figures(results),
        cell=cell,
    )


def write_reports(results: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write the three files (``results.json`` carries the verdict's sentences); their paths."""
    results["headline"] = headline(results)
    paths = {"json": out / "results.json", "md": out / "summary.md", "html": out / "report.html"}
    paths["json"].write_text(json.dumps(results, indent=2, default=str))
    paths["md"].write_text(markdown(results))
    paths["html"].write_text(html(results))
    return paths
