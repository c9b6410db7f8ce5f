"""The documentation's Python examples run, and print what the docs say they print.

Every ```python block in README.md and docs/*.md is run in a fresh process
(``examples/`` importable). When a ```text block follows it directly, the
program's output must equal that block. A block that is a fragment of a larger
program (it uses names it does not define, or a top-level ``await``) says so on
the line before it: ``<!-- fragment -->``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```(\w*)[^\n]*\n(.*?)```", re.DOTALL)
FRAGMENT = "<!-- fragment -->"


def _examples() -> list[pytest.param]:
    params = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = list(BLOCK.finditer(text))
        for i, block in enumerate(blocks):
            if block.group(1) != "python":
                continue
            before = text[: block.start()].rstrip().splitlines()[-1:]
            if before == [FRAGMENT]:
                continue
            expected = None
            if i + 1 < len(blocks):
                following = blocks[i + 1]
                between = text[block.end() : following.start()]
                if following.group(1) == "text" and not between.strip():
                    expected = following.group(2)
            line = text.count("\n", 0, block.start()) + 1
            name = f"{page.relative_to(ROOT)}:{line}"
            params.append(pytest.param(block.group(2), expected, id=name))
    return params


@pytest.mark.parametrize(("code", "expected"), _examples())
def test_example_runs(code: str, expected: str | None, tmp_path: Path) -> None:
    """The example exits 0, and prints exactly the text block that follows it."""
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "examples"), "PYTHONHASHSEED": "0"}
    env.pop("OPENAI_API_KEY", None)
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    if expected is not None:
        assert done.stdout == expected


def test_every_page_is_checked() -> None:
    """Each page with Python examples contributes at least one that runs."""
    checked = {param.id.split(":")[0] for param in _examples()}
    assert "README.md" in checked
    assert "docs/worker.md" in checked


LINKED_PAGES = [*PAGES, ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md"]
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The page without its code blocks (a `#` line in a block is no heading)."""
    return BLOCK.sub("", text)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation but `-` and `_`
    dropped, spaces as `-`; a repeated one gets `-1`, `-2`..."""
    anchors: set[str] = set()
    for heading in HEADING.findall(_prose(page.read_text(encoding="utf-8"))):
        anchor = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        unique, n = anchor, 0
        while unique in anchors:
            n += 1
            unique = f"{anchor}-{n}"
        anchors.add(unique)
    return anchors


def test_every_link_between_pages_and_to_a_heading_resolves() -> None:
    """Each relative link names a file that exists and, with `#...`, a heading in it."""
    broken = []
    for page in LINKED_PAGES:
        for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def _section(page: Path, anchor: str) -> str:
    """The page's prose (code blocks too) from the heading of ``anchor`` to the next
    heading of the same or a higher level; the whole page for no anchor."""
    text = page.read_text(encoding="utf-8")
    if not anchor:
        return text
    prose = BLOCK.sub(lambda block: " " * len(block.group(0)), text)  # offsets kept
    headings = list(re.finditer(r"^(#{1,6}) +(.+?) *#*$", prose, re.MULTILINE))
    for i, heading in enumerate(headings):
        if re.sub(r"[^\w\- ]", "", heading.group(2).lower()).replace(" ", "-") == anchor:
            level = len(heading.group(1))
            ends = [h.start() for h in headings[i + 1 :] if len(h.group(1)) <= level]
            return text[heading.start() : ends[0] if ends else len(text)]
    raise AssertionError(f"{page.name} has no heading #{anchor}")


def test_each_name_of_the_index_is_on_the_section_its_row_links() -> None:
    """docs/index.md's "Where each name is documented": every name of a row is on a page
    (and in the section) the row links to."""
    index = ROOT / "docs" / "index.md"
    misplaced = []
    for line in index.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        names = re.findall(r"`(\w+)`", line.split("|")[1])
        sections = [
            _section(index.parent / path, anchor)
            for path, _, anchor in (t.partition("#") for t in LINK.findall(line))
        ]
        misplaced += [
            f"{name} (row links {LINK.findall(line)})"
            for name in names
            if not any(re.search(rf"\b{name}\b", section) for section in sections)
        ]
    assert misplaced == []


OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*[a-z])")


@pytest.mark.parametrize(
    ("page", "synopsis", "command"),
    [
        ("ci.md", "llm-worker schema TARGET...", ("schema",)),
        ("mcp.md", "llm-worker mcp serve FACTORY", ("mcp", "serve")),
    ],
)
def test_each_cli_synopsis_lists_every_option_of_its_help(
    page: str, synopsis: str, command: tuple[str, ...]
) -> None:
    """The synopsis a page gives of a command names every option its --help lists."""
    done = subprocess.run(
        [sys.executable, "-m", "llm_worker", *command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "COLUMNS": "200"},  # one option a line: none split at a '-'
    )
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    start = text.index(synopsis)
    block = text[start : text.index("```", start)].replace("-o FILE", "--output FILE")
    assert set(OPTION.findall(done.stdout)) - {"--help"} - set(OPTION.findall(block)) == set()
