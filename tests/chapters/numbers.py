#!/usr/bin/env python3
"""numbers.py - `make check-chapters`: every number a chapter quotes from a
program's run, and every piece of worked arithmetic in its prose, checked
against the code.

A chapter marks what it checks with blocks, HTML comments that a Markdown
renderer drops (pandoc keeps them out of sight):

    <!-- check
    run: make -s --no-print-directory run-lab LAB=08 IMPL=solutions ARGS="--svg $FIGURES/08-memory.svg"
    deterministic
    figure: 08-memory.svg
    at: ^1\\. Memory per rank
    table: key=1
    "pads 1285 to {}" = ceil(1285 / 4) * 4
    -->

The block's text (its scope) runs from the block to the next block or the
next heading of level 1 or 2 (`scope: section`: the whole section). The
command runs once per check (commands are cached by their text and kernel
set), in the repository root, with $FIGURES an empty folder of its own.
One of three kinds says how its numbers may move:

  deterministic   modeled clock, bytes, memory: compared to the printed
                  digit, and the command runs again under a second BLAS
                  kernel set (OPENBLAS_CORETYPE): a number that changes
                  with the kernels is refused. A command that never used
                  the BLAS (no file at libdt's DT_BLAS_MARK) runs once:
                  the kernels cannot change its bits.
  kernels: NAME   computed through sgemm with the kernels NAME: runs under
                  OPENBLAS_CORETYPE=NAME and compares to the printed digit.
  varies          wall clock or a race: needs `tol:` (N%, an absolute N,
                  or xN, a factor).
                  Judged only with --wall (on a quiet machine): a wall
                  clock measures the machine's load too, and the suite's
                  verdict must not depend on it. Without --wall such a
                  block is not run at all (it could decide nothing).
A block without `run:` (or `from: FILE`, a file's text instead of a
command's output) checks arithmetic only.

Lines of a block:
  run: CMD | from: FILE            what produced the numbers
  deterministic | kernels: N | varies
  tol: exact | N% | N | xN         for the facts below it (default exact)
  at: RE [... [RE2]]               output region for the facts below: from
                                   the first line matching RE to the next
                                   blank line (`...`: to the end, or to RE2)
  scope: section                   the block's text is its whole section
  let NAME = EXPR                  a name for the expressions below
  table: [N] key=K cells=.. nums=.. map="a=b;c=d" skip="k;k" at=".."
        every row of the scope's N-th table (default 1) against the output
        line (in the region) that starts with the row's first K cells
        (cells: the text's cells to compare, 1-based, default the rest;
        nums: which numbers after the key on the output line, default all;
        map: replacements in the text's key; skip: rows not compared;
        at: the region of this table's lines, as `at:` writes it)
  verbatim: [N]                    every line of the scope's N-th fenced
                                   block (but `...`) is a line of the output
                                   region, numbers to the tolerance
  figure: NAME                     $FIGURES/NAME is chapters/figures/NAME,
                                   byte for byte
  row[(CELLS)][[NUMS]] LABEL = EXPR  the numbers of the table row whose
                                   first cell is LABEL (CELLS: of those cells,
                                   1-based; NUMS: those of its numbers)
  "TEXT {} TEXT" = EXPR            the number at {} in the scope's text
                                   (blanks match any blanks, line breaks too)
  (<= or >= instead of =: the text's number is a bound, at most or at
  least the program's: "never passes {}" >= max(...))
EXPR is Python arithmetic with ceil, floor, sqrt, log, log2, exp, min,
max, sum, sin, cos, and out(RE, col..., n=N, at=AT): the numbers on the output line
matching RE (one line in the region, or in the region `at: AT` sets; the
N-th with n), after the match or RE's groups, the col-th (1-based) if
given; within(X, TOL): X compared to the tolerance TOL (as tol: writes it).

"Exact" means to the printed digit: the text's number and the program's
agree within half a unit of the last digit of the less precise of the two
(a number worked out from printed ones carries their errors along).
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# ------------------------------------------------------------ numbers

SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_EXP = (r"(?:[eE][-+−]?\d+"
        r"|\s?(?:·|×|\\cdot|\\times)\s?10(?:\^\{?[-−]?\d+\}?|[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+))")
_START = r"(?<![\w.])(?<![A-Za-z][-−])"


def _num_re(groups):
    """A number: digits with optional thousands groups (commas, and the
    separators of `groups`), fraction, exponent; not part of a name (ib100,
    ZeRO-2, fp32) nor of a version (0.3.21)."""
    ints = r"\d{1,3}(?:,\d{3})+(?!\d)"
    if groups:
        ints += r"|\d{1,3}(?:[" + groups + r"]\d{3})+(?!\d)"
    return re.compile(_START + r"(?:" + ints + r"|\d+)(?:\.\d+)?" + _EXP + r"?(?!\.\d)(?![\d])")


TEXT_NUM = _num_re(" \u2009\u202f\u00a0")  # in tables: 8 558 632
PROSE_NUM = _num_re("\u2009\u202f\u00a0")
OUT_NUM = _num_re("")


class Num(float):
    """A number known to +-err: half a unit of its last printed digit. The
    operators carry the error along, so that arithmetic on printed figures
    is compared to what the figures allow."""

    def __new__(cls, v, err=0.0, derived=False):
        o = float.__new__(cls, v)
        o.err = abs(err)
        o.derived = derived and o.err > 0
        return o

    def __add__(a, b):
        b = num(b)
        return Num(float(a) + float(b), a.err + b.err, derived=True)

    __radd__ = __add__

    def __sub__(a, b):
        b = num(b)
        return Num(float(a) - float(b), a.err + b.err, derived=True)

    def __rsub__(a, b):
        return num(b) - a

    def __mul__(a, b):
        b = num(b)
        return Num(float(a) * float(b), abs(float(a)) * b.err + abs(float(b)) * a.err + a.err * b.err, derived=True)

    __rmul__ = __mul__

    def __truediv__(a, b):
        b = num(b)
        q = float(a) / float(b)
        low = abs(float(b)) - b.err
        return Num(q, (a.err + abs(q) * b.err) / low if low > 0 else math.inf, derived=True)

    def __rtruediv__(a, b):
        return num(b) / a

    def __neg__(a):
        return Num(-float(a), a.err, a.derived)

    def __pos__(a):
        return a

    def __pow__(a, k):
        v = float(a) ** float(k)
        return Num(v, abs(float(k) * float(a) ** (float(k) - 1)) * a.err if a.err else 0.0, derived=True)


def num(x):
    return x if isinstance(x, Num) else Num(float(x))


def within(x, spec):
    """x compared to its own tolerance (spec as tol: writes it), where
    one figure of a line moves with the machine and the others do not."""
    v = num(x)
    v = Num(float(v), v.err, v.derived)
    v.tol = parse_tol(spec)
    return v


def parse_num(s):
    """The value of a matched number and half a unit of its last digit."""
    s = s.replace("−", "-").replace("–", "-")
    # re.S: a figure of the text may break its line inside (1.270 \times
    # 10^{19} across two lines)
    m = re.match(r"([-+]?)([\d,\u2009\u202f\u00a0 ]+)(?:\.(\d+))?(.*)$", s, re.S)
    sign, ints, frac, rest = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    ints = re.sub(r"[,\u2009\u202f\u00a0 ]", "", ints)
    exp = 0
    rest = rest.strip()
    if rest:
        e = re.search(r"([-+]?\d+)\}?$", rest.translate(SUPER).replace("−", "-"))
        exp = int(e.group(1))
    v = float(sign + ints + ("." + frac if frac else "")) * 10.0 ** exp
    return Num(v, 0.5 * 10.0 ** (exp - len(frac)))


def numbers(s, rx=OUT_NUM):
    """The numbers of a string, in order, with a sign where a minus stands
    before one as a sign (not between two numbers: 2.35-2.56)."""
    out = []
    for m in rx.finditer(s):
        t = m.group(0)
        i = m.start()
        if i > 0 and s[i - 1] in "-−" and (i == 1 or not s[i - 2].isalnum()):
            t = "-" + t
        out.append(parse_num(t))
    return out


def fmt(x):
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    v = float(x)
    if v != 0 and (abs(v) >= 1e7 or abs(v) < 1e-3):
        return "%.6g" % v
    return ("%.6f" % v).rstrip("0").rstrip(".")


# ------------------------------------------------------------ markdown


def strip_markup(cell):
    cell = re.sub(r"\$[^$]*\$", " ", cell)  # inline math: formulas, not figures
    return cell.replace("**", "").replace("`", "").strip()


def split_row(line):
    cells = line.strip().strip("|").split("|")
    return [c.strip() for c in cells]


def tables(lines):
    """The pipe tables among (lineno, text) lines: lists of (lineno, cells)
    data rows (the header and the separator left out)."""
    out, cur, i = [], None, 0
    while i < len(lines):
        n, t = lines[i]
        if t.lstrip().startswith("|"):
            if cur is None:
                cur = []
                if i + 1 < len(lines) and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1][1]):
                    i += 2
                    continue
            cur.append((n, split_row(t)))
        elif cur is not None:
            out.append(cur)
            cur = None
        i += 1
    if cur is not None:
        out.append(cur)
    return out


def fences(lines):
    """The fenced code blocks among (lineno, text) lines: lists of
    (lineno, text)."""
    out, cur = [], None
    for n, t in lines:
        if t.lstrip().startswith("```"):
            if cur is None:
                cur = []
            else:
                out.append(cur)
                cur = None
        elif cur is not None:
            cur.append((n, t))
    return out


class Block:
    def __init__(self, path, start, end, body):
        self.path, self.start, self.end, self.body = path, start, end, body
        self.run = self.source = self.kernels = None
        self.kind = None
        self.scope = []
        self.count = 0  # numbers compared


def read_chapter(path):
    """The blocks of a chapter, each with its scope."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i, fence = [], 0, False
    heads = []  # line numbers (0-based) of headings of level 1 and 2
    while i < len(lines):
        t = lines[i]
        if t.lstrip().startswith("```"):
            fence = not fence
        elif not fence and re.match(r"^#{1,2} ", t):
            heads.append(i)
        elif not fence and t.strip().startswith("<!-- check"):
            j = i
            while "-->" not in lines[j]:
                j += 1
                if j == len(lines):
                    raise SystemExit("%s:%d: a check block that never ends (no -->)" % (path, i + 1))
            body = lines[i:j + 1]
            body[0] = body[0].strip()[len("<!-- check"):]
            body[-1] = body[-1][:body[-1].index("-->")]
            blocks.append(Block(path, i + 1, j + 1, [(i + 1 + k, b) for k, b in enumerate(body)]))
            i = j
        i += 1
    inside = set()  # the blocks' own lines are no text of the chapter
    for b in blocks:
        inside.update(range(b.start - 1, b.end))
    for k, b in enumerate(blocks):
        nxt = blocks[k + 1].start - 1 if k + 1 < len(blocks) else len(lines)
        head = min([h for h in heads if h >= b.end] + [len(lines)])
        b.scope = [(n + 1, lines[n]) for n in range(b.end, min(nxt, head))]
        sec0 = max([h for h in heads if h < b.start] + [0])
        b.section = [(n + 1, lines[n]) for n in range(sec0, head) if n not in inside]
    return blocks


# ------------------------------------------------------------ checking


class Fail(Exception):
    pass


class Ctx:
    """What a block's facts are evaluated against: an output (lines), the
    region set by `at:`, the names set by `let`."""

    def __init__(self, output):
        self.lines = output.split("\n") if output is not None else None
        self.region = list(range(len(self.lines))) if self.lines is not None else []
        self.names = {}

    def set_at(self, spec):
        if self.lines is None:
            raise Fail("at: without run: or from:")
        spec = spec.strip()
        if not spec:
            self.region = list(range(len(self.lines)))
            return
        to_end, until = False, None
        if "..." in spec:
            spec, until = [s.strip() for s in spec.split("...", 1)]
            to_end = True
        start = [i for i, t in enumerate(self.lines) if re.search(spec, t)]
        if not start:
            raise Fail("at: no output line matches /%s/" % spec)
        i = start[0]
        j = i + 1
        while j < len(self.lines):
            t = self.lines[j]
            if to_end and until and re.search(until, t):
                break
            if not to_end and not t.strip():
                break
            j += 1
        self.region = list(range(i, j))

    def out(self, rx, *cols, n=None, at=None):
        if self.lines is None:
            raise Fail("out() in a block without run: or from:")
        region = self.region
        if at is not None:
            self.set_at(at)
            region, self.region = self.region, region
        hits = [i for i in region if re.search(rx, self.lines[i])]
        if not hits:
            raise Fail("no output line in the region matches /%s/" % rx)
        if n is None and len(hits) > 1:
            raise Fail("/%s/ matches %d output lines (%s): make it match one, or give n="
                       % (rx, len(hits), ", ".join(self.lines[i].strip()[:40] for i in hits[:3])))
        if n is not None and n > len(hits):
            raise Fail("/%s/ matches %d output lines, not %d" % (rx, len(hits), n))
        line = self.lines[hits[(n or 1) - 1]]
        m = re.search(rx, line)
        if m.groups():
            vals = [numbers(g)[0] if numbers(g or "") else _nan(g, rx) for g in m.groups()]
        else:
            vals = numbers(line[m.end():])
        if cols:
            try:
                vals = [vals[c - 1] for c in cols]
            except IndexError:
                raise Fail("/%s/: the line has %d numbers after the match, not %d: %s"
                           % (rx, len(vals), max(cols), line.strip()))
        return vals[0] if len(vals) == 1 else vals

    def eval(self, expr):
        env = {"out": self.out, "ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt,
               "log": math.log, "log2": math.log2, "sin": math.sin, "cos": math.cos, "log10": math.log10, "exp": math.exp,
               "min": min, "max": max, "sum": sum, "abs": abs, "round": round, "pi": math.pi,
               "within": within}
        env.update(self.names)
        env["__builtins__"] = {"range": range, "len": len, "int": int, "float": float}
        try:
            return eval(expr, env)
        except Fail:
            raise
        except Exception as e:  # a wrong expression is the block's fault: say which
            raise Fail("cannot evaluate %s: %s" % (expr, e))


def _nan(g, rx):
    raise Fail("/%s/: the group matched '%s', not a number" % (rx, g))


def flat(x):
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(flat(v))
        return out
    return [num(x)]


def agree(t, v, tol, rel="="):
    """Is the text's t the program's v, to tol? A figure copied with the
    digits the program printed must be the same; one printed with fewer
    digits is the program's, rounded (either way at a half)."""
    # a number worked out from printed ones may round either way of the
    # text's: their errors add up
    slack = (t.err + v.err if getattr(v, "derived", False) else max(t.err, v.err)) * (1 + 1e-9)
    slack += 1e-12 * abs(float(v))
    if rel == "<=":
        return float(t) <= float(v) + slack
    if rel == ">=":
        return float(t) >= float(v) - slack
    kind, x = tol
    if kind == "exact":
        return abs(t - v) <= slack
    if kind == "rel":
        return abs(t - v) <= x * abs(float(v)) + slack
    if kind == "abs":
        return abs(t - v) <= x + slack
    if kind == "factor":
        lo, hi = sorted((float(v) / x, float(v) * x))
        return lo - slack <= float(t) <= hi + slack
    raise AssertionError(kind)


def parse_tol(s):
    s = s.strip()
    if s == "exact":
        return ("exact", 0.0)
    m = re.match(r"^([\d.]+)%$", s)
    if m:
        return ("rel", float(m.group(1)) / 100)
    m = re.match(r"^x([\d.]+)$", s)
    if m:
        return ("factor", float(m.group(1)))
    m = re.match(r"^([\d.eE+-]+)$", s)
    if m:
        return ("abs", float(m.group(1)))
    raise Fail("tol: '%s' is not exact, N%%, N or xN" % s)


def tol_str(tol):
    kind, x = tol
    return {"exact": "to the printed digit", "rel": "within %g%%" % (x * 100), "abs": "within %g" % x,
            "factor": "within a factor %g" % x}[kind]


def template_rx(tpl):
    """A template's regex: literal text, blanks that match any blanks,
    {} a number."""
    parts = tpl.split("{}")
    out = []
    for k, p in enumerate(parts):
        out.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", p)))
        if k + 1 < len(parts):
            out.append("(" + PROSE_NUM.pattern + ")")
    return re.compile("".join(out))


def find_template(tpl, lines):
    text = "\n".join(t for _, t in lines)
    starts = []
    pos = 0
    for _, t in lines:
        starts.append(pos)
        pos += len(t) + 1
    rx = template_rx(tpl)
    hits = list(rx.finditer(text))
    if not hits:
        raise Fail('"%s" is not in the text of the block' % tpl)
    if len(hits) > 1:
        where = [lines[max(k for k in range(len(starts)) if starts[k] <= h.start())][0] for h in hits]
        raise Fail('"%s" is in the text %d times (lines %s): make it match once'
                   % (tpl, len(hits), ", ".join(map(str, where))))
    h = hits[0]
    out = []
    for g in range(1, (rx.groups or 0) + 1):
        k = max(k for k in range(len(starts)) if starts[k] <= h.start(g))
        s = h.group(g)
        sign = ""
        i = h.start(g)
        if i > 0 and text[i - 1] in "-−" and (i == 1 or not text[i - 2].isalnum()):
            sign = "-"
        out.append((lines[k][0], parse_num(sign + s), s))
    return out


def cell_numbers(cells):
    """(number, as written) of table cells, in order."""
    vals = []
    for c in cells:
        c = strip_markup(c)
        vals.extend((v, m.group(0)) for v, m in zip(numbers(c, TEXT_NUM), TEXT_NUM.finditer(c)))
    return vals


def key_tokens(cells, mp):
    k = " ".join(strip_markup(c) for c in cells)
    for a, b in mp:
        k = k.replace(a, b)
    return k.split()


def tok_eq(a, b):
    if a == b:
        return True
    na, nb = numbers(a, TEXT_NUM), numbers(b)
    full = TEXT_NUM.fullmatch(a) and OUT_NUM.fullmatch(b)
    return bool(full and len(na) == 1 and len(nb) == 1 and float(na[0]) == float(nb[0]))


def out_key_match(line, keycells, kt, mp):
    """The rest of an output line whose key is the text row's (a line of
    blank-separated columns, or of a pipe table, cell by cell), else None."""
    if line.lstrip().startswith("|"):
        oc = split_row(line)
        k = len(keycells)
        if len(oc) < k:
            return None
        for tc, o in zip(keycells, oc):
            a, b = key_tokens([tc], mp), strip_markup(o).split()
            if len(a) != len(b) or not all(tok_eq(x, y) for x, y in zip(a, b)):
                return None
        return " | ".join(oc[k:])
    ot = line.split()
    if len(ot) < len(kt) or not all(tok_eq(a, o) for a, o in zip(kt, ot)):
        return None
    return line[re.match(r"\s*(?:\S+\s+){%d}\S+" % (len(kt) - 1), line).end():]


def parse_opts(s):
    opts = {}
    for m in re.finditer(r'(\w+)=("([^"]*)"|\S+)', s):
        opts[m.group(1)] = m.group(3) if m.group(3) is not None else m.group(2)
    pos = re.sub(r'(\w+)=("([^"]*)"|\S+)', "", s).split()
    return opts, pos


def ints(s):
    return [int(x) for x in s.split(",")] if s else None


class Checker:
    def __init__(self, root, build, alt, verbose):
        self.root, self.build, self.alt, self.verbose = root, build, alt, verbose
        self.cache = {}
        self.used_blas = {}  # (command, kernels): it used the BLAS (an sgemm, what the BLAS is)
        self.tmp = tempfile.mkdtemp(prefix="check-chapters.")
        self.fails = []
        self.unjudged = []  # wall-clock figures of a run the machine's other work slowed
        self.others = {}  # (command, kernels): the other processes' share of the CPUs during it
        self.strict_wall = False
        self.wall = False   # --wall: judge wall-clock figures (on a quiet machine)
        self.unwall = []    # wall-clock figures off the tolerance, without --wall
        self.unrun = []     # wall-clock blocks not run, without --wall
        self.runs = []  # (command, kernels, seconds)
        self.no_blas = 0  # deterministic blocks whose command never used the BLAS: run once

    def output(self, block, kernels):
        if block.source:
            p = os.path.join(self.root, block.source)
            if not os.path.exists(p):
                raise Fail("from: %s does not exist" % block.source)
            with open(p, encoding="utf-8") as f:
                return f.read(), None
        if not block.run:
            return None, None
        key = (block.run, kernels)
        if key not in self.cache:
            figs = os.path.join(self.tmp, "run%d" % len(self.cache))
            os.makedirs(figs)
            env = dict(os.environ)
            for v in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "OPENBLAS_CORETYPE", "DT_BLAS_KERNELS",
                      "DT_BLAS_REPLACED", "DT_BLAS_NOTED"):
                env.pop(v, None)
            env["DT_QUIET"] = "1"
            env["FIGURES"] = figs
            # libdt creates this file where the command first uses the BLAS
            # (lib/tensor/blas.c): one that never does computes the same
            # bits under any kernel set
            env["DT_BLAS_MARK"] = figs + ".blas"
            env.setdefault("BUILD", self.build)
            if kernels:
                env["OPENBLAS_CORETYPE"] = kernels
            t0 = time.time()
            if self.verbose:
                print("  running%s: %s" % (" (OPENBLAS_CORETYPE=%s)" % kernels if kernels else "", block.run),
                      flush=True)
            cpu0, mine0 = cpu_busy(), os.times()
            p = subprocess.run(["bash", "-c", block.run], cwd=self.root, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=900)
            dt = time.time() - t0
            cpu1, mine1 = cpu_busy(), os.times()
            if cpu0 is not None and cpu1 is not None and dt > 0:
                mine = (mine1.children_user + mine1.children_system) - (mine0.children_user + mine0.children_system)
                self.others[key] = max(0.0, (cpu1 - cpu0) - mine) / (dt * (os.cpu_count() or 1))
            self.runs.append((block.run, kernels, dt))
            text = p.stdout.decode("utf-8", "replace")
            if p.returncode != 0:
                tail = "\n".join(text.rstrip().split("\n")[-15:])
                self.cache[key] = (None, figs, "exit status %d:\n%s" % (p.returncode, tail))
            else:
                self.cache[key] = (text, figs, None)
            self.used_blas[key] = os.path.exists(figs + ".blas")
        text, figs, err = self.cache[key]
        if err:
            raise Fail("the command failed (%s): %s" % (block.run, err))
        return text, figs

    def fail(self, block, line, msg):
        src = block.run or block.source or "arithmetic"
        text = "%s:%d: %s\n    (block at line %d: %s)" % (block.path, line, msg, block.start, src)
        busy = self.others.get((block.run, None), 0.0) if block.kind == "varies" else 0.0
        if block.kind == "varies" and not self.wall:
            self.unwall.append(text)  # a verdict of make check-chapters never depends on load
        elif busy > BUSY and not self.strict_wall:
            self.unjudged.append(text)
        else:
            self.fails.append(text)

    def check_block(self, b):
        # the header: what produced the numbers, and how they may move
        facts = []
        for n, t in b.body:
            s = t.strip()
            if not s or s.startswith("#"):
                continue
            if s.startswith("run:"):
                b.run = s[4:].strip()
            elif s.startswith("from:"):
                b.source = s[5:].strip()
            elif s == "deterministic" or s == "varies":
                b.kind = s
            elif s.startswith("kernels:"):
                b.kind, b.kernels = "kernels", s[8:].strip()
            elif s == "scope: section":
                b.scope = b.section
            else:
                facts.append((n, s))
        if (b.run or b.source) and not (b.kind or b.source):
            return self.fail(b, b.start, "a block with run: must say deterministic, kernels: NAME or varies")
        if b.run and b.source:
            return self.fail(b, b.start, "run: and from: in one block")
        if not facts:
            return self.fail(b, b.start, "a block that compares nothing")
        if b.kind == "varies" and not self.wall:
            # never judged without --wall: its run would cost time and decide nothing
            self.unrun.append(b)
            return
        runs = [None]
        if b.kind == "kernels":
            runs = [b.kernels]
        elif b.kind == "deterministic" and self.alt:
            runs = [None, self.alt]
        results = []
        for k in runs:
            if k is not None and k is self.alt and b.run and not self.used_blas.get((b.run, None), True):
                self.no_blas += 1  # no sgemm, nothing the kernels could change
                break
            try:
                text, figs = self.output(b, k)
            except Fail as e:
                return self.fail(b, b.start, str(e))
            results.append(self.eval_facts(b, facts, Ctx(text), figs, compare=(k is runs[0])))
        if len(results) == 2:
            own, alt = results
            for (n, what, v1), (_, _, v2) in zip(own, alt):
                if v1 == v2:
                    continue
                if isinstance(v1, bytes) or isinstance(v2, bytes):  # a figure's file
                    keep = os.path.join(self.build, "check-chapters")
                    os.makedirs(keep, exist_ok=True)
                    base = os.path.join(keep, "line%d-%s" % (n, re.sub(r"[^\w.]+", "-", str(what))))
                    for suffix, v in ((".own", v1), (".%s" % self.alt, v2)):
                        with open(base + suffix, "wb") as f:
                            f.write(v if isinstance(v, bytes) else str(v).encode())
                    self.fail(b, n, "%s is marked deterministic but changes with the BLAS kernels: the "
                              "CPU's own and OPENBLAS_CORETYPE=%s's are %s.own and %s.%s"
                              % (what, self.alt, base, base, self.alt))
                else:
                    self.fail(b, n, "%s is marked deterministic but changes with the BLAS kernels: %s with "
                              "the CPU's own, %s with OPENBLAS_CORETYPE=%s"
                              % (what, fmt(v1), fmt(v2), self.alt))

    def eval_facts(self, b, facts, ctx, figs, compare):
        """Evaluates every fact; compares with the text when compare. Returns
        (line, what, values) for the kernels' comparison."""
        tol = ("exact", 0.0)
        told = False
        seen = []

        def cmp(line, tnum, tstr, v, what, rel="="):
            t = getattr(v, "tol", tol)
            if compare:
                b.count += 1
                if not agree(tnum, v, t, rel):
                    self.fail(b, line, "%s: the text says %s, the program %s (%s)"
                              % (what, tstr, fmt(v), tol_str(t) if rel == "=" else
                                 "the text must be %s it" % {"<=": "at most", ">=": "at least"}[rel]))

        def lists(line, tvals, pvals, what, rel="="):
            if len(tvals) != len(pvals):
                if compare:
                    self.fail(b, line, "%s: the text has %d numbers %s, the program %d %s"
                              % (what, len(tvals), fmt([t for t, _ in tvals]), len(pvals), fmt(pvals)))
                return
            for (t, s), v in zip(tvals, pvals):
                cmp(line, t, s, v, what, rel)

        for n, s in facts:
            try:
                if s.startswith("tol:"):
                    tol = parse_tol(s[4:])
                    told = True
                    continue
                if b.kind == "varies" and not told and not s.startswith(("at:", "let ")):
                    raise Fail("a block marked varies needs tol: before its facts")
                if s.startswith("at:"):
                    ctx.set_at(s[3:])
                elif s.startswith("let "):
                    m = re.match(r"let\s+(\w+)\s*=\s*(.+)$", s)
                    if not m:
                        raise Fail("let NAME = EXPR, not: %s" % s)
                    ctx.names[m.group(1)] = ctx.eval(m.group(2))
                elif s.startswith("figure:"):
                    name = s[7:].strip()
                    if figs is None:
                        raise Fail("figure: in a block without run:")
                    mine = os.path.join(self.root, "chapters", "figures", name)
                    made = os.path.join(figs, name)
                    if not os.path.exists(made):
                        raise Fail("the command wrote no %s into $FIGURES" % name)
                    with open(made, "rb") as f:
                        new = f.read()
                    seen.append((n, "figure " + name, new))
                    if compare and (not os.path.exists(mine) or open(mine, "rb").read() != new):
                        self.fail(b, n, "chapters/figures/%s is not what the command draws now: regenerate it "
                                  "(the command, with $FIGURES=chapters/figures)" % name)
                    b.count += compare
                elif s.startswith("table:"):
                    self.table(b, n, s[6:], ctx, tol, cmp, lists, seen)
                elif s.startswith("verbatim:") or s == "verbatim":
                    self.verbatim(b, n, s[9:], ctx, cmp, seen)
                elif s.startswith("row"):
                    m = re.match(r"row(?:\(([\d,]+)\))?(?:\[([\d,]+)\])?\s+(.+?)\s+(=|<=|>=)\s+(.+)$", s)
                    if not m:
                        raise Fail("row[(CELLS)][[NUMBERS]] LABEL = EXPR, not: %s" % s)
                    line, tvals = self.text_row(b, m.group(3), ints(m.group(1)), ints(m.group(2)))
                    v = flat(ctx.eval(m.group(5)))
                    seen.append((n, "row " + m.group(3), v))
                    lists(line, tvals, v, "row '%s'" % m.group(3), m.group(4))
                elif s.startswith('"'):
                    m = re.match(r'"(.*)"\s*(=|<=|>=)\s*(.+)$', s)
                    if not m:
                        raise Fail('"TEXT {} TEXT" = EXPR, not: %s' % s)
                    hits = find_template(m.group(1), b.scope)
                    v = flat(ctx.eval(m.group(3)))
                    seen.append((n, '"%s"' % m.group(1), v))
                    if len(v) != len(hits):
                        raise Fail('"%s" has %d numbers, the expression %d' % (m.group(1), len(hits), len(v)))
                    for (line, t, ts), x in zip(hits, v):
                        cmp(line, t, ts, x, '"%s"' % m.group(1), m.group(2))
                else:
                    raise Fail("not a line of a check block: %s" % s)
            except Fail as e:
                if compare:
                    self.fail(b, n, str(e))
                seen.append((n, s, "error"))
        return seen

    def text_row(self, b, label, cells, picks=None):
        """The numbers of the scope's table row labelled label: of its
        cells after the first, or of the cells given, or the numbers
        given (1-based, of all the row's numbers after the label)."""
        hits = []
        for tab in tables(b.scope):
            for line, row in tab:
                if strip_markup(row[0]) == label:
                    hits.append((line, row))
        if len(hits) != 1:
            raise Fail("%d table rows of the block's text have the first cell '%s'" % (len(hits), label))
        line, row = hits[0]
        if cells and max(cells) > len(row):
            raise Fail("row '%s' has %d cells, not %d" % (label, len(row), max(cells)))
        vals = cell_numbers([row[c - 1] for c in cells] if cells else row[1:])
        if picks:
            if max(picks) > len(vals):
                raise Fail("row '%s' has %d numbers, not %d" % (label, len(vals), max(picks)))
            vals = [vals[k - 1] for k in picks]
        return line, vals

    def table(self, b, n, spec, ctx, tol, cmp, lists, seen):
        opts, pos = parse_opts(spec)
        which = int(pos[0]) if pos else 1
        tabs = tables(b.scope)
        if len(tabs) < which:
            raise Fail("table %d: the block's text has %d tables" % (which, len(tabs)))
        key = int(opts.get("key", 1))
        cells = ints(opts.get("cells"))
        nums = ints(opts.get("nums"))
        mp = [tuple(x.split("=", 1)) for x in opts.get("map", "").split(";") if "=" in x]
        skip = set(x.strip() for x in opts.get("skip", "").split(";") if x.strip())
        saved = ctx.region
        if "at" in opts:
            ctx.set_at(opts["at"])
        try:
            self.table_rows(b, n, tabs[which - 1], which, key, cells, nums, mp, skip, ctx, lists, seen)
        finally:
            ctx.region = saved

    def table_rows(self, b, n, tab, which, key, cells, nums, mp, skip, ctx, lists, seen):
        rows = 0
        for line, row in tab:
            label = " ".join(strip_markup(c) for c in row[:key])
            if label in skip:
                continue
            rows += 1
            if ctx.lines is None:
                raise Fail("table: in a block without run: or from:")
            kt = key_tokens(row[:key], mp)
            hits = []
            for i in ctx.region:
                rest = out_key_match(ctx.lines[i], row[:key], kt, mp)
                if rest is not None:
                    hits.append((i, rest))
            if len(hits) != 1:
                msg = "no output line" if not hits else "%d output lines" % len(hits)
                raise Fail("table row '%s' (line %d): %s in the region start(s) with %s"
                           % (label, line, msg, " ".join(kt)))
            ol = ctx.lines[hits[0][0]]
            pv = numbers(hits[0][1])
            if nums:
                try:
                    pv = [pv[c - 1] for c in nums]
                except IndexError:
                    raise Fail("table row '%s': the output line has %d numbers after its key: %s"
                               % (label, len(pv), ol.strip()))
            if cells and max(cells) > len(row):
                raise Fail("table row '%s' has %d cells, not %d" % (label, len(row), max(cells)))
            tv = cell_numbers([row[c - 1] for c in cells] if cells else row[key:])
            seen.append((n, "table row '%s'" % label, pv))
            lists(line, tv, pv, "table row '%s'" % label)
        if not rows:
            raise Fail("table %d: no row compared" % which)

    def verbatim(self, b, n, spec, ctx, cmp, seen):
        which = int(spec.strip()) if spec.strip() else 1
        fs = fences(b.scope)
        if len(fs) < which:
            raise Fail("verbatim %d: the block's text has %d fenced blocks" % (which, len(fs)))
        if ctx.lines is None:
            raise Fail("verbatim: in a block without run: or from:")

        def skel(s):
            return " ".join(TEXT_NUM.sub("#", s).split())

        out = {}
        for i in ctx.region:
            out.setdefault(skel(ctx.lines[i]), []).append(ctx.lines[i])
        for line, t in fs[which - 1]:
            if t.strip() in ("", "...", "…"):
                continue
            k = skel(t)
            if k not in out:
                raise Fail("line %d of the fenced block is not a line of the output: %s" % (line, t.strip()))
            tv = [(v, m.group(0)) for v, m in zip(numbers(t, TEXT_NUM), TEXT_NUM.finditer(t))]
            # the output line of this shape closest to the text's
            cands = [numbers(o) for o in out[k]]
            best = min(cands, key=lambda pv: sum(abs(float(a) - float(p)) for (a, _), p in zip(tv, pv)))
            seen.append((n, "line %d" % line, best))
            for (a, s), p in zip(tv, best):
                cmp(line, a, s, p, "fenced line '%s'" % " ".join(t.split())[:50])


# A wall-clock figure is judged only from a run during which other processes
# used at most this share of the CPUs: the chapters quote figures taken on a
# quiet machine, and a busy one measures its load.
BUSY = 0.25


def cpu_busy():
    """Seconds of CPU time the whole machine has spent busy (/proc/stat);
    None where it cannot say."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    busy = sum(v[:8]) - v[3] - (v[4] if len(v) > 4 else 0)  # all but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def alt_kernels(root, build):
    """A kernel set other than the one OpenBLAS runs here, to rerun the
    deterministic blocks with; None where there is no choice."""
    machine = os.path.join(root, build, "bench", "machine")
    if not os.path.exists(machine):
        return None, "no %s (make builds it)" % os.path.relpath(machine, root)
    env = dict(os.environ, DT_QUIET="1")
    env.pop("OPENBLAS_CORETYPE", None)
    out = subprocess.run([machine], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env).stdout.decode()
    kv = dict(line.split("=", 1) for line in out.split("\n") if "=" in line)
    if not kv.get("blas", "").startswith("OpenBLAS"):
        return None, "libdt is built without OpenBLAS: one kernel set only"
    own = kv.get("kernels", "")
    sets = kv.get("kernel_sets", "").split()
    for k in ["Haswell", "Sandybridge", "Prescott"]:
        if k in sets and k != own:
            return k, "own %s, rerun with %s" % (own, k)
    return None, "no second kernel set (%s)" % " ".join(sets)


def main():
    ap = argparse.ArgumentParser(description="check the chapters' numbers against the code")
    ap.add_argument("files", nargs="*", help="chapters (default chapters/[0-9]*.md)")
    ap.add_argument("--root", default=".", help="the repository (commands run there)")
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--list", action="store_true", help="list the blocks and their commands, run nothing")
    ap.add_argument("--kernels", help="the second kernel set for deterministic blocks (default: Haswell, "
                    "or another where Haswell is the CPU's own); 'none' runs them once")
    ap.add_argument("--wall", action="store_true",
                    help="judge the wall-clock figures ('varies' blocks) too: on a quiet machine only, since "
                    "they measure the machine's load as well; without it they are reported, not judged")
    ap.add_argument("--strict-wall", action="store_true",
                    help="judge the wall-clock figures even of runs that other processes slowed")
    ap.add_argument("--block", type=int, action="append", metavar="LINE",
                    help="only the block that starts at LINE (repeatable): one block checked in seconds")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    files = a.files or sorted(os.path.join("chapters", f) for f in os.listdir(os.path.join(root, "chapters"))
                              if re.match(r"^\d\d-.*\.md$", f))
    chapters = [(f, read_chapter(f if os.path.isabs(f) or os.path.exists(f) else os.path.join(root, f)))
                for f in files]
    if a.block:
        chapters = [(f, [b for b in blocks if b.start in a.block]) for f, blocks in chapters]
        if not any(blocks for _, blocks in chapters):
            print("check-chapters: no block starts at line %s" % ", ".join(str(n) for n in a.block))
            return 2
    if a.list:
        for f, blocks in chapters:
            print("%s: %d blocks" % (f, len(blocks)))
            for b in blocks:
                kind = [s.strip() for _, s in b.body if s.strip() in ("deterministic", "varies")
                        or s.strip().startswith(("kernels:", "run:", "from:"))]
                print("  line %d: %s" % (b.start, "; ".join(kind) or "arithmetic"))
        return 0
    if a.kernels == "none":
        alt, why = None, "--kernels none"
    elif a.kernels:
        alt, why = a.kernels, "rerun with %s" % a.kernels
    else:
        alt, why = alt_kernels(root, a.build)
    print("check-chapters: deterministic blocks: %s" % why)
    if alt is None and not a.kernels:
        print("check-chapters: the deterministic blocks run once: no second kernel set to refuse a number that moves")
    c = Checker(root, a.build, alt, a.verbose)
    c.strict_wall = a.strict_wall
    c.wall = a.wall or a.strict_wall
    t0 = time.time()
    total = 0
    try:
        for f, blocks in chapters:
            before, before_u = len(c.fails), len(c.unjudged)
            t1 = time.time()
            for b in blocks:
                c.check_block(b)
            k = sum(b.count for b in blocks)
            total += k
            cmds = len(set(b.run for b in blocks if b.run))
            print("%s: %d blocks, %d commands, %d numbers: %s%s (%.0f s)"
                  % (f, len(blocks), cmds, k, "ok" if len(c.fails) == before else
                     "%d FAILED" % (len(c.fails) - before),
                     ", %d not judged" % (len(c.unjudged) - before_u) if len(c.unjudged) > before_u else "",
                     time.time() - t1), flush=True)
    finally:
        shutil.rmtree(c.tmp, ignore_errors=True)
    for msg in c.fails:
        print("FAIL: " + msg)
    for msg in c.unwall:
        print("wall clock off the text (not judged without --wall): " + msg)
    if c.unwall:
        print("check-chapters: %d wall-clock numbers differ from the text beyond their tolerance on this "
              "run; wall-clock figures are judged only with --wall (make check-chapters WALL=1) on a "
              "quiet machine" % len(c.unwall))
    if c.unrun:
        print("check-chapters: %d wall-clock blocks not run (%d commands): wall-clock figures are judged only "
              "with --wall (make check-chapters WALL=1) on a quiet machine"
              % (len(c.unrun), len(set(b.run for b in c.unrun if b.run))))
    for msg in c.unjudged:
        print("not judged (the machine was busy): " + msg)
    if c.unjudged:
        print("check-chapters: %d wall-clock numbers not judged: other processes used more than %d%% of the "
              "CPUs during their runs (up to %.0f%%); a quiet machine judges them (--strict-wall judges them "
              "anyway)" % (len(c.unjudged), BUSY * 100, 100 * max(c.others.values())))
    if a.verbose:
        for cmd, k, dt in sorted(c.runs, key=lambda r: -r[2]):
            print("  %6.1f s  %s%s" % (dt, "OPENBLAS_CORETYPE=%s " % k if k else "", cmd))
    if c.no_blas:
        print("check-chapters: %d deterministic blocks not run again under OPENBLAS_CORETYPE=%s: their "
              "commands used no BLAS (no sgemm: the same bits under every kernel set)" % (c.no_blas, c.alt))
    print("check-chapters: %d numbers in %d blocks, %d runs in %.0f s: %s"
          % (total, sum(len(b) for _, b in chapters), len(c.runs), time.time() - t0,
             "ok" if not c.fails else "%d failed" % len(c.fails)))
    return 1 if c.fails else 0


if __name__ == "__main__":
    sys.exit(main())
