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
             in the tree, or named in a program's or script's source (a
             file it writes, as bench/gpu-check.sh writes ratios.txt). Files of other projects the text cites
             (FOREIGN) and build outputs (build/...) are not looked for.

  figures    every text of every chapters/figures/*.svg stays inside its
             canvas (the <svg>'s width and height). A text's width is
             estimated as 0.6 em a character (sans-serif averages about
             0.5 em; digits and capitals are wider), its height from 0.8 em
             above the baseline to 0.2 em below; its anchor (start, middle,
             end), its font size (its own, or the <svg>'s), its <tspan>
             lines and a rotate() transform are taken into account.

Each failure is a line "FILE:LINE: what", then a count line
"lint: N passed, N failed" (one check per file and kind).
  tests/chapters/lint.py [--root DIR]
"""

import argparse
import math
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
        """A file of that name anywhere in the tree (but build/ and .git),
        or one a program or script of the tree writes: named in its source."""
        named = []
        for dp, ds, fs in os.walk(self.root):
            ds[:] = [d for d in ds if d not in (".git", "build")]
            if name in fs:
                return True
            if os.path.relpath(dp, self.root).split(os.sep)[0] in ("bench", "tools", "lib", "labs", "solutions"):
                named += [os.path.join(dp, f) for f in fs if f.endswith((".c", ".h", ".sh", ".py", ".cu"))]
        for f in named:
            with open(f, encoding="utf-8", errors="replace") as fh:
                if name in fh.read():
                    return True
        return False


EM_WIDTH = 0.6  # a character's estimated width, in em
ATTR_RE = re.compile(r'([\w:-]+)="([^"]*)"')


def attrs(tag):
    return dict(ATTR_RE.findall(tag))


def unescape(t):
    t = re.sub(r"<[^>]*>", "", t)
    for a, b in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&")):
        t = t.replace(a, b)
    return t


def text_boxes(svg):
    """(line, text, x0, y0, x1, y1) of every line of every <text> of an SVG
    as this project's writer makes them: one element a line, or <tspan x y>
    lines within one."""
    root = attrs(re.search(r"<svg\b[^>]*>", svg).group(0))
    base = float(root.get("font-size", "16"))
    for m in re.finditer(r"<text\b([^>]*)>(.*?)</text>", svg, re.S):
        line = svg.count("\n", 0, m.start()) + 1
        a = attrs(m.group(1))
        size = float(a.get("font-size", base))
        anchor = a.get("text-anchor", "start")
        x, y = float(a.get("x", 0)), float(a.get("y", 0))
        spans = [(attrs(t.group(1)), t.group(2)) for t in re.finditer(r"<tspan\b([^>]*)>(.*?)</tspan>", m.group(2), re.S)]
        if not spans:
            spans = [({}, m.group(2))]
        rot = re.search(r"rotate\(\s*([-\d.]+)(?:[ ,]+([-\d.]+)[ ,]+([-\d.]+))?\s*\)", a.get("transform", ""))
        for sa, body in spans:
            t = unescape(body)
            sx = float(sa.get("x", x))
            sy = float(sa.get("y", y)) + float(sa.get("dy", 0))
            ssize = float(sa.get("font-size", size))
            w = EM_WIDTH * ssize * len(t)
            x0 = {"start": sx, "middle": sx - w / 2, "end": sx - w}.get(anchor, sx)
            box = [(x0, sy - 0.8 * ssize), (x0 + w, sy + 0.2 * ssize)]
            if rot:
                ang = math.radians(float(rot.group(1)))
                cx, cy = float(rot.group(2) or 0), float(rot.group(3) or 0)
                pts = [(px, py) for px in (box[0][0], box[1][0]) for py in (box[0][1], box[1][1])]
                pts = [(cx + (px - cx) * math.cos(ang) - (py - cy) * math.sin(ang),
                        cy + (px - cx) * math.sin(ang) + (py - cy) * math.cos(ang)) for px, py in pts]
                box = [(min(p[0] for p in pts), min(p[1] for p in pts)),
                       (max(p[0] for p in pts), max(p[1] for p in pts))]
            yield line, t, box[0][0], box[0][1], box[1][0], box[1][1]
            y = sy


def svg_canvas(svg):
    a = attrs(re.search(r"<svg\b[^>]*>", svg).group(0))
    return float(a["width"]), float(a["height"])


def figure_problems(svg):
    """The texts of an SVG that leave its canvas: (line, what)."""
    W, H = svg_canvas(svg)
    probs = []
    for line, t, x0, y0, x1, y1 in text_boxes(svg):
        out = []
        if x0 < 0:
            out.append("%.0f px past the left edge" % -x0)
        if x1 > W:
            out.append("%.0f px past the right edge" % (x1 - W))
        if y0 < 0:
            out.append("%.0f px above the top" % -y0)
        if y1 > H:
            out.append("%.0f px below the bottom" % (y1 - H))
        if out:
            probs.append((line, "text '%s' (about %.0f px wide at 0.6 em a character) runs %s of the %gx%g canvas"
                          % (t if len(t) < 60 else t[:57] + "...", x1 - x0, " and ".join(out), W, H)))
    return probs


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
    ap.add_argument("--svg", nargs="+", metavar="FILE",
                    help="only the figures check, on these SVG files")
    ap.add_argument("files", nargs="*", help="only these chapters or hints (NN-*.md, hints/NN.md), "
                    "wherever they are; default: every one, the figures, and the labs' and tests' sources")
    a = ap.parse_args()
    if a.svg:
        L = Lint(os.path.abspath(a.root))
        for f in a.svg:
            with open(f, encoding="utf-8", errors="replace") as fh:
                L.check(f, "figures", figure_problems(fh.read()))
        for msg in L.fails:
            print(msg)
        print("lint: %d passed, %d failed" % (L.passed, len(L.fails)))
        return 1 if L.fails else 0
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
    figs = os.path.join(root, "chapters", "figures")
    for f in [] if a.files else sorted(os.listdir(figs)) if os.path.isdir(figs) else []:
        if f.endswith(".svg"):
            with open(os.path.join(figs, f), encoding="utf-8", errors="replace") as fh:
                L.check(os.path.join("chapters", "figures", f), "figures", figure_problems(fh.read()))
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
