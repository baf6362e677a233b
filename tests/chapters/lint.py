#!/usr/bin/env python3
"""lint.py - the chapters' text lint, run by `make check-chapters` (and by
`make test`, through tests/tools/check-chapters.sh):

  control    no control character (but the line break) in chapters/*.md
             and chapters/hints/*.md: a formula's `\\b` or `\\r` once
             became a backspace byte and a line break.
  chapters   every "chapter NN" in the chapters, their hints, the labs'
             headers and fences (labs/, solutions/) and the tests'
             messages (tests/) names a chapter that exists
             (chapters/NN-*.md), or one the README's table of chapters
             lists as planned: the reference is then reported, not failed.
  sections   every "chapter NN, section M" (and "chapter NN's section M",
             "(see chapter NN, section M)") there names a heading
             "## M. ..." of that chapter; in a chapter, its hints, and the
             files of its lab (labs/NN-*, solutions/NN-*, tests/NN-*), a
             bare "section M" names a heading of that chapter.
  links      every relative Markdown link of a chapter or hint resolves to
             a file (the #anchor aside).
  files      every file a chapter or hint names in backticks (`dt/net.h`,
             `labs/00-setup/cost.c`, `zero.h`) exists: a path from the
             repository's root, lib/include/, lib/, chapters/, or the
             chapter's lab, test or solution folder; a bare name anywhere
             in those folders. Files of other projects the text cites
             (FOREIGN) and build outputs (build/...) are not looked for.


Each failure is a line "FILE:LINE: what", then a count line
"lint: N passed, N failed" (one check per file and kind).
  tests/chapters/lint.py [--root DIR]
"""

import argparse
import os
import re
import sys

# Files of other projects that the chapters cite by their path there.
FOREIGN = {
    "megatron/core/optimizer/grad_scaler.py",
    "deepspeed/runtime/fp16/onebit/adam.py",
}

CHAPTER_RE = re.compile(r"\b[Cc]hapters? (\d{1,2})\b")
# "chapter 02, section 5", "chapter 02's section 5", "chapter 02 section 5"
SECTION_RE = re.compile(r"\b[Cc]hapter (\d{1,2})(?:,|'s|’s)?\s+[Ss]ections? (\d+)\b")
# "section 3", "sections 3 and 5", "sections 2, 4 and 6", "sections 3-5"
# (a singular "section 1, 30 ms" lists nothing)
BARE_SECTION_RE = re.compile(r"\b(?:[Ss]ection (\d+)((?:(?: and | or |-|–)\d+)?)|[Ss]ections (\d+)((?:(?:, | and | or |-|–)\d+)*))\b")
LINK_RE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FILE_RE = re.compile(r"`([A-Za-z0-9_.][A-Za-z0-9_./-]*\.(?:c|h|md|sh|py|svg|json|txt|patch|cu))`")
CONTROL_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


class Lint:
    def __init__(self, root):
        self.root = root
        self.fails = []
        self.passed = 0
        self.planned_refs = {}
        self.chapters = {}
        for f in os.listdir(os.path.join(root, "chapters")):
            m = re.match(r"^(\d\d)-.*\.md$", f)
            if m:
                self.chapters[int(m.group(1))] = os.path.join("chapters", f)
        self.planned = set()
        readme = os.path.join(root, "README.md")
        if os.path.exists(readme):
            for line in open(readme, encoding="utf-8"):
                m = re.match(r"^\|\s*(\d\d)\s*\|.*\|\s*planned\s*\|\s*$", line)
                if m:
                    self.planned.add(int(m.group(1)))
        self.sections = {n: self.headings(p) for n, p in self.chapters.items()}

    def headings(self, path):
        out = set()
        for line in open(os.path.join(self.root, path), encoding="utf-8", errors="replace"):
            m = re.match(r"^## (\d+)\. ", line)
            if m:
                out.add(int(m.group(1)))
        return out

    def check(self, path, kind, problems):
        if problems:
            self.fails.extend("%s:%d: %s" % (path, line, what) for line, what in problems)
        else:
            self.passed += 1

    # ---------------------------------------------------------- the checks

    def control(self, path, text):
        probs = []
        for i, line in enumerate(text.split("\n"), 1):
            for m in CONTROL_RE.finditer(line):
                probs.append((i, "control character %r at column %d" % (m.group(0), m.start() + 1)))
        self.check(path, "control", probs)

    def chapter_refs(self, path, text):
        probs = []
        for i, line in enumerate(text.split("\n"), 1):
            for m in CHAPTER_RE.finditer(line):
                n = int(m.group(1))
                if n in self.chapters:
                    continue
                if n in self.planned:
                    self.planned_refs.setdefault(n, []).append("%s:%d" % (path, i))
                    continue
                probs.append((i, "'%s': there is no chapters/%02d-*.md, and the README does not plan it"
                              % (m.group(0), n)))
            for m in SECTION_RE.finditer(line):
                n, s = int(m.group(1)), int(m.group(2))
                if n in self.chapters and s not in self.sections[n]:
                    probs.append((i, "'%s': %s has no '## %d.' heading (its sections: %s)"
                                  % (m.group(0), self.chapters[n], s,
                                     " ".join(str(k) for k in sorted(self.sections[n])))))
        self.check(path, "chapters", probs)

    def own_sections(self, path, text, n):
        probs = []
        for i, line in enumerate(text.split("\n"), 1):
            # a "section M" of another chapter or of another text is not ours
            scrub = SECTION_RE.sub("", line)
            scrub = re.sub(r"\b[Cc]hapters? \d\d(?:,|'s|’s)?\s+[Ss]ections? [\d, and–-]+", "", scrub)
            for m in BARE_SECTION_RE.finditer(scrub):
                nums = [int(x) for x in re.findall(r"\d+", m.group(0))]
                for s in nums:
                    if s not in self.sections[n]:
                        probs.append((i, "'%s': this chapter has no '## %d.' heading (its sections: %s)"
                                      % (m.group(0).strip(), s,
                                         " ".join(str(k) for k in sorted(self.sections[n])))))
        self.check(path, "sections", probs)

    def links(self, path, text):
        probs = []
        here = os.path.dirname(os.path.join(self.root, path))
        for i, line in enumerate(text.split("\n"), 1):
            for m in LINK_RE.finditer(line):
                target = m.group(1).split("#")[0]
                if not target or re.match(r"^[a-z]+:", target):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(here, target))):
                    probs.append((i, "link '%s' resolves to no file" % m.group(1)))
        self.check(path, "links", probs)

    def files(self, path, text, n):
        probs = []
        lab = [d for top in ("labs", "tests", "solutions")
               for d in self.dirs(top, n)] if n is not None else []
        bases = ["", "lib/include", "lib", "chapters"] + lab
        for i, line in enumerate(text.split("\n"), 1):
            for m in FILE_RE.finditer(line):
                f = m.group(1)
                if f in FOREIGN or f.startswith(("build/", "/")):
                    continue
                if any(os.path.exists(os.path.join(self.root, b, f)) for b in bases):
                    continue
                if "/" not in f and self.anywhere(f, lab):
                    continue
                probs.append((i, "file `%s` is none of: %s" % (f, ", ".join(b or "." for b in bases))))
        self.check(path, "files", probs)

    def dirs(self, top, n):
        d = os.path.join(self.root, top)
        if not os.path.isdir(d):
            return []
        return [os.path.join(top, e) for e in sorted(os.listdir(d)) if e.startswith("%02d-" % n)]

    def anywhere(self, name, lab):
        for top in ["lib", "tools", "bench"] + lab:
            for dp, _, fs in os.walk(os.path.join(self.root, top)):
                if name in fs:
                    return True
        return False


def sources(root):
    """The labs' headers and fences, the solutions' and the tests' sources."""
    for top in ("labs", "solutions", "tests"):
        for dp, _, fs in os.walk(os.path.join(root, top)):
            for f in sorted(fs):
                if f.endswith((".c", ".h", ".sh", ".py", ".cu", ".md")):
                    yield os.path.relpath(os.path.join(dp, f), root)


def main():
    ap = argparse.ArgumentParser(description="the chapters' text lint")
    ap.add_argument("--root", default=".", help="the repository")
    ap.add_argument("files", nargs="*", help="only these chapters or hints (NN-*.md, hints/NN.md), "
                    "wherever they are; default: every one, and the labs' and tests' sources")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    L = Lint(root)
    texts = list(a.files)
    if not texts:
        for sub in ("chapters", "chapters/hints"):
            d = os.path.join(root, sub)
            if os.path.isdir(d):
                texts += [os.path.join(sub, f) for f in sorted(os.listdir(d)) if f.endswith(".md")]
    for path in texts:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        m = re.match(r"^(?:(\d\d)-.*\.md|(\d\d)\.md)$", os.path.basename(path))
        n = int(m.group(1) or m.group(2)) if m else None
        L.control(path, text)
        L.chapter_refs(path, text)
        if n is not None and n in L.sections:
            L.own_sections(path, text, n)
        L.links(path, text)
        L.files(path, text, n)
    for path in [] if a.files else sources(root):
        if path.startswith("tests/chapters/"):
            continue  # the lint's own tests plant what it refuses
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        L.chapter_refs(path, text)
        # a lab's fences and headers, its tests' messages: a bare "section M"
        # is one of the lab's chapter
        m = re.match(r"^(?:labs|solutions|tests)/(\d\d)-", path)
        if m and int(m.group(1)) in L.sections:
            L.own_sections(path, text, int(m.group(1)))
    for msg in L.fails:
        print(msg)
    for n, where in sorted(L.planned_refs.items()):
        print("lint: %d reference(s) to chapter %02d, planned in the README, not yet written: %s"
              % (len(where), n, " ".join(where[:6]) + (" ..." if len(where) > 6 else "")))
    print("lint: %d passed, %d failed" % (L.passed, len(L.fails)))
    return 1 if L.fails else 0


if __name__ == "__main__":
    sys.exit(main())
