"""The report opened in headless Chromium (Playwright): the verdict comes first and is short.

The figures are a committed ``results.json`` of three seeds (tests/compare/data); a second
copy with slower Kappa freshness shows that the verdict on the page follows the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compare.report import write_reports
from compare.screenshot import browser, executable

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(executable() is None, reason="no system Chromium"),
]

RESULTS = Path(__file__).parent / "data" / "results_three_seeds.json"

#: What the page shows first: where the verdict sits, how many lines it takes, what it says.
LAYOUT = """() => {
  const verdict = document.querySelector('#verdict ul');
  const height = verdict.getBoundingClientRect().height;
  const lines = height / parseFloat(getComputedStyle(verdict).lineHeight);
  const top = el => el.getBoundingClientRect().top;
  return {
    first: document.body.firstElementChild.id,
    lines: Math.round(lines),
    sentences: [...verdict.querySelectorAll('li')].map(li => li.textContent),
    plot_top: top(document.querySelector('.plotly-graph-div')),
    table_top: top(document.querySelector('table')),
  };
}"""


def open_report(results: dict, folder: Path) -> dict:
    folder.mkdir()
    paths = write_reports(results, folder)
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1200, "height": 900})
        page.goto(paths["html"].as_uri())
        page.screenshot(path=str(folder / "top.png"))
        return page.evaluate(LAYOUT)


def test_the_verdict_comes_first_in_under_ten_lines_and_follows_the_numbers(
    tmp_path: Path,
) -> None:
    sample = json.loads(RESULTS.read_text())
    before = open_report(sample, tmp_path / "sample")
    assert before["first"] == "verdict"
    assert 5 <= before["lines"] < 10, before["lines"]
    assert before["plot_top"] < before["table_top"]  # plots before tables
    assert before["sentences"][1].startswith("Freshness: kappa ahead, p50 23 [22-24.1] vs 31.8")

    slower = json.loads(RESULTS.read_text())
    for row in slower["table"]:
        if row["metric"].startswith("freshness p"):
            row["kappa"].update(median=60.0, min=55.0, max=65.0)
    after = open_report(slower, tmp_path / "slower_kappa")
    assert len(after["sentences"]) == len(before["sentences"])
    pairs = zip(before["sentences"], after["sentences"], strict=True)
    changed = [i for i, (a, b) in enumerate(pairs) if a != b]
    assert changed == [1]
    assert after["sentences"][1] == (
        "Freshness: lambda ahead, p50 31.8 [29.6-32.4] vs 60 [55-65] s, p99 37.4 [35.6-40] vs "
        "60 [55-65] s (medians [ranges] of 3 seeds)."
    )
    assert after["lines"] < 10
