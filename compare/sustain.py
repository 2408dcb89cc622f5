"""A design's sustainable rate: its own streaming job under the one shared search.

Sustainable rate (``measuring.md``): the search and the trial are
:mod:`measure.sustain`'s (the benchmarks run the same); here the contender is the
design's own streaming job, run in a thread of the design's process.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from designs.platform import Platform
from event_log.topics import end_offsets
from measure import sustain
from measure.generator import SteadyPlan
from measure.sustain import TrialWindow
from speed_layer.lane import lane_root
from speed_layer.metrics import processed_offsets, read_metrics


def lane_processed(spark: Any, platform: Platform) -> dict[int, int] | None:
    """The events offsets the serving lane has processed (None before its first batch)."""
    root = lane_root(platform.tables, platform.streaming_lane_name(spark))
    return processed_offsets(read_metrics(spark, root), platform.settings.kafka.events_topic)


def trial(
    spark: Any, platform: Platform, rate: int, window: TrialWindow, workdir: Path
) -> dict[str, Any]:
    """The design's streaming job (in a thread) under ``rate`` events/s for one window."""
    errors: list[BaseException] = []

    def stream() -> None:
        try:
            platform.run_streaming(spark, until_caught_up=False)
        except BaseException as error:
            errors.append(error)

    settings = platform.settings
    plan = SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=rate,
        seconds=window.seconds,
        source_args={"seed": int(rate), "probe_every": 0, "late_fraction": 0.0},
    )
    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        return sustain.trial(
            plan,
            window,
            lambda: lane_processed(spark, platform),
            lambda: end_offsets(settings, settings.kafka.events_topic),
            workdir,
        )
    finally:
        for query in spark.streams.active:
            query.stop()
        thread.join(timeout=120)
        if errors:
            raise RuntimeError(f"the streaming job failed: {errors[0]}") from errors[0]


def search(
    spark: Any, platform: Platform, start: int, trials: int, window: TrialWindow, workdir: Path
) -> dict[str, Any]:
    """``measure.sustain.search`` over this design's streaming job."""
    found = sustain.search(
        lambda rate: trial(spark, platform, rate, window, workdir), start, trials
    )
    return found | {"warm_up_seconds": window.warm_up_s, "measured_seconds": window.measure_s}
