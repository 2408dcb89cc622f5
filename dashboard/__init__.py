"""``lk dashboard``: a live page over the running designs, read-only.

* :mod:`dashboard.targets` - what is watched: the configured platform, or the designs of
  an ``lk compare`` run as they start;
* :mod:`dashboard.record_times` - when the broker acknowledged a record (for freshness);
* :mod:`dashboard.sample` - one reading of one design, each part guarded on its own;
* :mod:`dashboard.history` - the readings over time, kept in memory;
* :mod:`dashboard.app` - the FastAPI app: the page, its JSON, plotly's bundle.

It sits on the floor of ``compare`` and ``chaos``: it reads what ``designs`` and the
layers below publish, and never writes.
"""
