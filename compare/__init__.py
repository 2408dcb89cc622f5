"""``lk compare``: one seeded workload through Lambda, Kappa and the oracle, measured side by side.

* :mod:`compare.options` - what a comparison runs (workload, rate, change, repeats);
* :mod:`compare.design` - one design's scenario, in a process of its own;
* :mod:`compare.expected` / :mod:`compare.correctness` - rows against the oracle;
* :mod:`compare.run` - the orchestration (topics, history, designs one after the other);
* :mod:`compare.verdict` - the written verdict, generated from the numbers;
* :mod:`compare.report` - ``results.json``, ``summary.md``, ``report.html``.
"""
