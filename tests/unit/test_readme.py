"""README.md reads in one sitting, CONTRIBUTING.md holds the rest, and every relative link
of either lands on a file of the repository (and on a heading of it, when the link names
one, by GitHub's anchors)."""

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
README_MAX_LINES = 300

# [text](target) and [text](target "title"), images too; not inside code.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown text outside its fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, punctuation dropped (but
    hyphens and underscores), spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    """Every heading's anchor in the file, repeated ones numbered as GitHub numbers them."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(markdown.read_text(encoding="utf-8")):
        heading = HEADING.match(line)
        if not heading:
            continue
        slug = github_slug(heading.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(markdown: Path) -> list[str]:
    """The file's links that are not to another site or an e-mail address."""
    links = []
    for line in prose_lines(markdown.read_text(encoding="utf-8")):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                links.append(target)
    return links


def test_the_slug_is_githubs() -> None:
    # Given headings with code, punctuation and parentheses
    # When they are made anchors
    # Then they are the anchors GitHub makes
    assert github_slug("Checking a board: make verify") == "checking-a-board-make-verify"
    assert github_slug("Per-caller limits (`CallerRateLimit`)") == "per-caller-limits-callerratelimit"
    assert github_slug("1. Each API method is throttled") == "1-each-api-method-is-throttled"
    assert github_slug("newLeader: each record judged once") == "newleader-each-record-judged-once"


def test_the_readme_reads_in_one_sitting() -> None:
    # Given the README
    lines = README.read_text(encoding="utf-8").splitlines()

    # Then it keeps to its length, and still opens on the two commands
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines, at most {README_MAX_LINES}"
    text = "\n".join(lines)
    assert "make run" in text
    assert "make test" in text


def test_contributing_states_the_commit_rule() -> None:
    # Given CONTRIBUTING.md
    assert CONTRIBUTING.is_file()
    text = CONTRIBUTING.read_text(encoding="utf-8")

    # Then it says how long a commit's subject may be
    assert re.search(r"subject of at most 72 characters", text), "the 72-character rule"


@pytest.mark.parametrize("markdown", [README, CONTRIBUTING], ids=lambda path: path.name)
def test_every_relative_link_resolves(markdown: Path) -> None:
    # Given the file's links to the repository's files, each with its anchor if any
    links = relative_links(markdown)
    assert links, f"{markdown.name} links to nothing: the parser is broken"

    # When each is looked up
    broken = []
    for link in links:
        path_part, _, anchor = link.partition("#")
        target = (markdown.parent / unquote(path_part)).resolve() if path_part else markdown
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link}: no such heading in {target.relative_to(ROOT)}")

    # Then none is broken
    assert broken == []
