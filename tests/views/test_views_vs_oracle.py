"""Every view over a generated workload equals the independent oracle; merge rules are exact."""

from __future__ import annotations

from functools import reduce

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from config.settings import ViewSettings
from event_log.decode import decode_events, quarantined
from tests.support.workload import assert_view_matches, kafka_frame, oracle_views, view_inputs
from views import default_registry
from views.base import ViewContext
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def workload(spark):
    return view_inputs(spark, WorkloadSpec(events=4_000, users=60, products=40, seed=7))


@pytest.mark.parametrize("name", default_registry().names())
def test_view_equals_oracle(workload, name):
    events, catalog, frame, ctx = workload
    expected = oracle_views(events, catalog, ViewSettings())[name]
    view = default_registry().get(name)
    assert_view_matches(view.evaluate(frame, ctx), expected, name)


@pytest.mark.parametrize(("size", "slide"), [("6m", "2m"), ("5m", "5m"), ("1h", "15m")])
def test_hopping_windows_of_other_sizes_equal_the_oracle(workload, size, slide):
    """Panes of one slide make up every window, whatever the window and the slide."""
    events, catalog, frame, ctx = workload
    settings = ViewSettings(hop_window=size, hop_slide=slide)
    expected = oracle_views(events, catalog, settings)["events_by_type"]
    view = default_registry().get("events_by_type")
    actual = view.evaluate(frame, ViewContext(settings, ctx.catalog))
    assert_view_matches(actual, expected, "events_by_type")


@pytest.mark.parametrize("name", default_registry().names())
def test_merge_of_parts_equals_the_whole(workload, name):
    """The law every layer relies on: merge(compute(a) + compute(b)) == compute(a + b).

    A join view computes each part with the earlier parts' events its ``partners`` keep
    (as a micro-batch joins the events it retained), so the parts, out of event-time
    order, also check that nothing it leaves out could have changed a result.
    """
    events, catalog, frame, ctx = workload
    view = default_registry().get(name)
    parts = [frame.where(F.col("offset") % 3 == k) for k in range(3)]
    partial = None
    for k, part in enumerate(parts):
        if view.context_lookback is not None and k:
            earlier = reduce(DataFrame.unionByName, parts[:k])
            if view.partners is not None:
                earlier = view.partners(part, earlier, ctx.settings)
            part = part.unionByName(earlier)
        state = view.compute(part, ctx)
        partial = state if partial is None else partial.unionByName(state)
    expected = oracle_views(events, catalog, ViewSettings())[name]
    assert_view_matches(view.serve(partial), expected, name)


@pytest.mark.parametrize("name", default_registry().names())
def test_merge_is_idempotent_so_compaction_changes_no_answer(workload, name):
    """Readers see ``serve(state)`` whether the state was compacted (merged) or not."""
    _, _, frame, ctx = workload
    view = default_registry().get(name)
    halves = [frame.where(F.col("offset") % 2 == k) for k in range(2)]
    appended = view.compute(halves[0], ctx).unionByName(view.compute(halves[1], ctx))
    compacted = view.merge(appended)
    assertDataFrameEqual(view.serve(view.merge(compacted)), view.serve(appended))
    assert compacted.count() == view.merge(compacted).count()


def test_quarantine_reasons_equal_the_oracle(spark, workload):
    events, *_ = workload
    import oracle

    _, expected = oracle.decode(events)
    actual = quarantined(decode_events(kafka_frame(spark, events)))
    got = sorted((r.partition, r.offset, r.reason) for r in actual.collect())
    assert got == sorted((q.record.partition, q.record.offset, q.reason) for q in expected)
    assert len(got) > 10
