"""The README and the guide in ``docs/`` point at files that exist: every relative link,
and every result file the benchmark report names (``benchmarks/results/``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
RESULT_NAME = re.compile(r"`([a-z0-9_*]+\.(?:json|md))`")


def pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def broken_links(page: Path) -> list[str]:
    """Relative link targets in ``page`` (outside fenced code) that name no file or folder."""
    text = FENCE.sub("", page.read_text())
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor on the same page
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    return broken


def missing_results(page: Path, results: Path) -> list[str]:
    """Result files named in backticks (``freshness.json``, ``first_micro_batch_*.json``)
    that match nothing in ``results``."""
    return [n for n in RESULT_NAME.findall(page.read_text()) if not list(results.glob(n))]


def test_every_relative_link_of_the_readme_and_the_guide_resolves() -> None:
    found = {str(p.relative_to(REPO)): broken_links(p) for p in pages(REPO)}
    assert {page: links for page, links in found.items() if links} == {}


def test_every_result_file_the_benchmark_report_names_exists() -> None:
    page = REPO / "docs" / "benchmarks.md"
    assert missing_results(page, REPO / "benchmarks" / "results") == []


def test_the_readme_stays_a_page_for_people() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 250
    top = "\n".join(lines[:10])  # the two commands a newcomer types first
    assert "make demo" in top and "make test" in top


def test_the_link_check_finds_a_broken_link_and_skips_code_urls_and_anchors(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("x")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/there.md#a) [gone](docs/gone.md) ![img](img/none.png)\n"
        "[web](https://example.org/x) [here](#section)\n"
        "```\n[in code](nowhere.md)\n```\n"
    )
    assert broken_links(page) == ["docs/gone.md", "img/none.png"]


def test_the_result_check_finds_a_missing_file_and_accepts_a_pattern(tmp_path: Path) -> None:
    (tmp_path / "first_micro_batch_lk.json").write_text("{}")
    page = tmp_path / "report.md"
    page.write_text("`first_micro_batch_*.json`, `freshness_old.json`, `lk compare`")
    assert missing_results(page, tmp_path) == ["freshness_old.json"]
