"""The docs' pointers hold: every relative link in README.md and docs/**/*.md reaches a file (and, into a
Markdown file, a heading); every result file the docs name is in ``benchmarks/results/`` (or, where a doc
names a removed run as a git object, ``<commit>:benchmarks/results/<file>``, in git at that commit); and
``benchmarks/results/`` holds at most 40 files, each listed in its README."""

import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from conftest import ROOT

RESULTS = ROOT / "benchmarks" / "results"
MAX_RESULT_FILES = 40  # issue 39: the current result of each benchmark and the runs the docs cite
LINKED_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CITING_DOCS = [*LINKED_DOCS, ROOT / "config" / "README.md", RESULTS / "README.md"]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
# a result file as the benchmarks name them: <benchmark>[-<host>]-<yyyymmdd>[-<tag>].json|.log
RESULT_FILE = re.compile(
    r"(?:(?P<commit>[0-9a-f]{7,40}\^?):)?(?:benchmarks/results/)?"
    r"(?P<name>[a-z0-9][a-z0-9-]*-20\d{6}(?:-[A-Za-z0-9-]+)?\.(?:json|log))\b"
)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    found, seen = set(), {}
    in_code = False
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#{1,6} ", line):
            continue
        slug = _slug(line.lstrip("#"))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def relative_links(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)  # code blocks hold no links
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", a or b)]


@pytest.mark.parametrize("doc", LINKED_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    broken = []
    for link in relative_links(doc):
        path, _, anchor = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        if not target.exists():
            broken.append(f"{link}: no {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_link_checker_sees_links_and_headings():
    readme = ROOT / "docs" / "experiments" / "README.md"
    assert "detection.md" in relative_links(readme)
    assert "1-benchmarks" in anchors(ROOT / "docs" / "experiments" / "benchmarks.md")
    assert _slug("## 9. The Holter summary's thresholds, as measured (issue 28)".lstrip("#")) == (
        "9-the-holter-summarys-thresholds-as-measured-issue-28"
    )


def cited_results() -> dict[str, set[tuple[str, str]]]:
    """Each doc's result-file citations: (commit or "", file name)."""
    return {
        str(doc.relative_to(ROOT)): {(m["commit"] or "", m["name"]) for m in RESULT_FILE.finditer(doc.read_text())}
        for doc in CITING_DOCS
    }


def test_every_cited_result_file_exists():
    missing = [
        f"{doc}: {name}"
        for doc, cited in cited_results().items()
        for commit, name in cited
        if not commit and not (RESULTS / name).is_file()
    ]
    assert not missing, (
        "cited but not in benchmarks/results/ (cite a removed run as <commit>:benchmarks/results/<file>):\n"
        + "\n".join(sorted(missing))
    )


def test_removed_runs_are_cited_at_a_commit_that_has_them():
    cited = sorted({(c, n) for refs in cited_results().values() for c, n in refs if c})
    assert cited, "the experiments log cites removed runs as git objects"
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the removed runs cannot be looked up")
    absent = [
        f"{commit}:benchmarks/results/{name}"
        for commit, name in cited
        if subprocess.run(
            ["git", "cat-file", "-e", f"{commit}:benchmarks/results/{name}"], cwd=ROOT, capture_output=True
        ).returncode
    ]
    assert not absent, "not in git:\n" + "\n".join(absent)


def test_the_results_folder_is_small_and_indexed():
    files = sorted(p.name for p in RESULTS.iterdir() if not p.name.startswith("."))
    assert len(files) <= MAX_RESULT_FILES, f"{len(files)} files in benchmarks/results/ (at most {MAX_RESULT_FILES})"
    index = (RESULTS / "README.md").read_text()
    unlisted = [name for name in files if name != "README.md" and f"`{name}`" not in index]
    assert not unlisted, "in benchmarks/results/ but not in its README:\n" + "\n".join(unlisted)
    listed = {m["name"] for m in RESULT_FILE.finditer(index) if not m["commit"]}
    assert listed <= set(files), f"listed in the README but absent: {sorted(listed - set(files))}"
