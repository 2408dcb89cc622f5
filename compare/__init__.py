"""``lk compare``: one seeded workload through Lambda, Kappa and the oracle, measured side by side.

* :mod:`compare.options` - what a comparison runs (workload, rate, change, repeats);
* :mod:`compare.design` - one design's scenario, in a process of its own;
* :mod:`compare.expected` / :mod:`compare.correctness` - rows against the oracle;
* :mod:`compare.run` - the orchestration (topics, history, designs one after the other);
* :mod:`compare.verdict` - every metric judged on its own, generated from the numbers;
* :mod:`compare.headline` - the verdict a person reads first: one sentence per decision;
* :mod:`compare.report` - ``results.json``, ``summary.md``, ``report.html``;
* :mod:`compare.screenshot` - pages opened in headless Chromium (Playwright).
"""
