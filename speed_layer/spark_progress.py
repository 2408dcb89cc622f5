"""What Spark reports after each of a lane's micro-batches, as plain data.

Spark's ``StreamingQueryProgress`` (rates, durations, the source's end offsets, the
de-duplication state's operator) arrives as nested dicts, a source's offsets as a dict,
JSON text or a repr; this reads the few fields the lane keeps (:mod:`speed_layer.metrics`)
in one place.
"""

from __future__ import annotations

import ast
import json


def source_offsets(value: object) -> dict:
    """Spark reports a source offset as a dict, its JSON text, or (PySpark 4) its repr."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return ast.literal_eval(value)
    return value if isinstance(value, dict) else {}


def progress_metrics(progress: dict) -> dict:
    """One micro-batch's progress from Spark: rates, durations, end offsets, dedup state."""
    return {
        "batch_id": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "input_rows": progress.get("numInputRows"),
        "input_rows_per_second": progress.get("inputRowsPerSecond"),
        "processed_rows_per_second": progress.get("processedRowsPerSecond"),
        "batch_duration_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
        "duration_ms": dict(progress.get("durationMs") or {}),
        "end_offsets": source_offsets((progress.get("sources") or [{}])[0].get("endOffset")),
        "dedup_state": dedup_state(progress),
    }


#: Spark's timings of the de-duplication state (``stateOperators``) as lane phases.
STATE_PHASES = {
    "allUpdatesTimeMs": "stateUpdates",
    "allRemovalsTimeMs": "stateRemovals",
    "commitTimeMs": "stateCommit",
}


def dedup_state(progress: dict) -> dict | None:
    """The de-duplication state after a micro-batch: ids held, what it dropped, its cost.

    ``duplicates``: re-sends it dropped in this micro-batch; ``dropped_by_watermark``:
    records behind the watermark it dropped unseen (only with ``stream.dedup_horizon``
    set; Spark then also scans the whole state for expired ids every micro-batch).
    """
    operators = progress.get("stateOperators") or []
    if not operators:
        return None
    state = operators[0]
    return {
        "rows": state.get("numRowsTotal"),
        "rows_updated": state.get("numRowsUpdated"),
        "rows_removed": state.get("numRowsRemoved"),
        "memory_bytes": state.get("memoryUsedBytes"),
        "duplicates": (state.get("customMetrics") or {}).get("numDroppedDuplicateRows"),
        "dropped_by_watermark": state.get("numRowsDroppedByWatermark") or 0,
        **{phase: state.get(key) for key, phase in STATE_PHASES.items()},
    }
