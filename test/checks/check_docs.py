#!/usr/bin/env python3
"""Checks the documentation: README.md stays a short entry page, and every
relative link in README.md, docs/*.md and the READMEs of test/, bench/ and
examples/ points to a file that exists and, with #anchor, to a heading (or
an explicit id) of that file, with GitHub's heading anchors. Sections that
the sources and pages name in words (`docs/internals.md, "Timeline"`,
`README, "Latency"`) and by anchor (`internals.md#timeline`) must exist too.

usage: check_docs.py REPOSITORY_ROOT
Prints each broken link and exits 1 if there is any.
"""
import pathlib
import re
import sys

README_LIMIT_BYTES = 15_000

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")  # may span lines, as in Markdown


def prose_lines(text):
    """The lines outside fenced code blocks, with their line numbers."""
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            yield number, line


def prose(text):
    """The text with code blocks and inline code blanked out, line breaks
    kept (so offsets give line numbers, and link text may span lines)."""
    kept = dict(prose_lines(text))
    lines = [kept.get(n, "") for n in range(1, len(text.splitlines()) + 1)]

    def blank(match):
        return re.sub(r"[^\n]", " ", match.group())

    return INLINE_CODE.sub(blank, "\n".join(lines))


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped
    (letters, digits, '_', '-' and spaces stay), spaces become '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in " _-")
    return text.replace(" ", "-")


def anchors(path):
    found = set()
    seen = {}
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        found.update(EXPLICIT_ID.findall(line))
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path, root):
    problems = []
    text = prose(path.read_text(encoding="utf-8"))
    for match in LINK.finditer(text):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        number = text.count("\n", 0, match.start(1)) + 1
        where = f"{path.relative_to(root)}:{number}: {target}"
        if not linked.exists():
            problems.append(f"{where}: {file_part} does not exist")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{where}: no heading with anchor #{anchor} in {file_part or path.name}")
    return problems


# A page's section named in a comment or text: docs/internals.md, "Timeline"
# (README alone: the nearest README.md up from the file), or page.md#anchor.
SECTION_BY_NAME = re.compile(r"\b((?:docs/)?[A-Za-z_-]+\.md|README)\)?,\s+\"([^\"]+)\"")
SECTION_BY_ANCHOR = re.compile(r"\b((?:docs/)?[a-z_-]+\.md)#([a-z0-9_-]+)")
SOURCE_FOLDERS = ("horovodcpp", "runner", "bindings", "test", "bench", "scripts", "examples",
                  "cmake", "docs")
SOURCE_SUFFIXES = {".cc", ".h", ".cu", ".py", ".sh", ".cmake", ".txt", ".md", ".in"}


def named_page(name, source, root):
    """The page a source names: README -> the nearest README.md above it,
    docs/x.md or x.md -> docs/x.md, else x.md beside the source."""
    if name in ("README", "README.md"):
        for folder in [source.parent, *source.parent.parents]:
            if folder == root or not str(folder).startswith(str(root)):
                break
            if (folder / "README.md").exists():
                return folder / "README.md"
        return root / "README.md"
    if (root / "docs" / pathlib.Path(name).name).exists():
        return root / "docs" / pathlib.Path(name).name
    return source.parent / name


def missing_sections(root):
    problems = []
    sources = [p for folder in SOURCE_FOLDERS for p in sorted((root / folder).rglob("*"))
               if p.suffix in SOURCE_SUFFIXES and p.is_file() and p.name != "check_docs.py"]
    for source in sources:
        text = source.read_text(encoding="utf-8", errors="replace")
        for pattern, by_name in ((SECTION_BY_NAME, True), (SECTION_BY_ANCHOR, False)):
            for match in pattern.finditer(text):
                page = named_page(match.group(1), source, root)
                # A name that wraps onto the next comment line: without the marker.
                name = re.sub(r"\n\s*(?:#|//|\*)?", " ", match.group(2))
                anchor = slug(" ".join(name.split())) if by_name else match.group(2)
                if (match.group(1) in ("README", "README.md") and page.exists()
                        and anchor not in anchors(page)):
                    page = root / "README.md"  # "README" may also mean the project's
                number = text.count("\n", 0, match.start()) + 1
                where = f"{source.relative_to(root)}:{number}: {match.group(0)}"
                if not page.exists():
                    problems.append(f"{where}: {page.relative_to(root)} does not exist")
                elif anchor not in anchors(page):
                    problems.append(f"{where}: {page.relative_to(root)} has no such section")
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1]).resolve()
    readme = root / "README.md"
    problems = []
    size = readme.stat().st_size
    if size >= README_LIMIT_BYTES:
        problems.append(f"README.md is {size} bytes; keep it under {README_LIMIT_BYTES} "
                        "(details belong in docs/)")
    pages = [readme, *sorted((root / "docs").glob("*.md"))]
    pages += [p for p in (root / "test/README.md", root / "bench/README.md",
                          root / "examples/cpp/README.md") if p.exists()]
    for page in pages:
        problems += broken_links(page, root)
    problems += missing_sections(root)
    for problem in problems:
        print(problem)
    print(f"checked {len(pages)} pages: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
