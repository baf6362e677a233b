#!/usr/bin/env bash
# check-chapters.sh - (run by `make test`) the chapters' checks refuse what
# they exist to refuse, in seconds:
#   - the text lint (tests/chapters/lint.py) passes on this tree, and fails
#     on a copy of a chapter with a control character planted, and on a
#     figure whose title runs off its canvas, naming the file and line;
#   - the number check (tests/chapters/numbers.py, `make check-chapters`)
#     passes on untouched copies of two blocks' chapters and fails on copies
#     with one digit changed: in worked arithmetic (chapter 04's first
#     block) and in a table a command prints (chapter 01's dtsim presets),
#     naming the file, the line, the text's number and the program's;
#     and a figure whose line breaks inside it is read whole.
# The whole of `make check-chapters` runs in CI, a step of its own.
#   tests/tools/check-chapters.sh BUILD
set -uo pipefail
BUILD=${1:-build}
pass=0
fail=0
check() { # description command...
    local what=$1
    shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
has() { grep -qF -- "$2" "$tmp/$1.out"; }

# ---------------------------------------------------------------- lint
python3 tests/chapters/lint.py >"$tmp/lint.out" 2>&1
rc=$?
check "the text lint fails on this tree: $(grep -v '^lint:' "$tmp/lint.out" | head -n 5)" test $rc -eq 0

# A copy of chapter 06 (where a formula's \bmod once became a backspace)
# beside the chapters' figures and hints, which its links name.
mkdir -p "$tmp/chapters"
ln -s "$PWD/chapters/figures" "$PWD/chapters/hints" "$tmp/chapters/"
ch=chapters/06-pipeline-parallel.md
cp "$ch" "$tmp/$ch"
python3 tests/chapters/lint.py "$tmp/$ch" >"$tmp/lint-copy.out" 2>&1
rc=$?
check "the lint fails on an untouched copy of $ch: $(head -n 3 "$tmp/lint-copy.out")" test $rc -eq 0
line=$(grep -n -m1 'bmod' "$ch" | cut -d: -f1)
check "$ch has a \\bmod to plant a backspace in" test -n "$line"
sed -i "${line:-1}s/\\\\bmod/$(printf '\b')mod/" "$tmp/$ch"
python3 tests/chapters/lint.py "$tmp/$ch" >"$tmp/lint-bs.out" 2>&1
rc=$?
check "the lint passes a backspace planted at $ch:$line" test $rc -ne 0
check "the lint does not name the file and line of the backspace: $(head -n 3 "$tmp/lint-bs.out")" \
    has lint-bs "$tmp/$ch:$line: control character '\\x08'"

# The figures' check: every figure's text inside its canvas, and a copy of
# one whose title is made as long as 08-memory.svg's once was (at 16 px, 93
# characters run past both edges of 640 px) refused, naming the line.
f=chapters/figures/08-memory.svg
line=$(grep -n -m1 'class="title"' "$f" | cut -d: -f1)
check "$f has no title" test -n "$line"
sed "${line:-1}s|>[^<]*</text>|>rank 0 over one step, deep:64,512,8,10 on 4 ranks: model states at their highest in each part</text>|; ${line:-1}s|font-size=\"[0-9]*\"|font-size=\"16\"|" "$f" >"$tmp/wide.svg"
python3 tests/chapters/lint.py --svg "$tmp/wide.svg" >"$tmp/svg.out" 2>&1
rc=$?
check "the figures' check passes a 893-pixel title on a 640-pixel canvas" test $rc -ne 0
check "the figures' check does not name the line: $(head -n 2 "$tmp/svg.out")" \
    has svg "$tmp/wide.svg:$line: text 'rank 0 over one step"

# ---------------------------------------------------------------- numbers
# Worked arithmetic: chapter 04 block 1 says 3/(2 ms) + 1/(30 ms) = 1.53.
ch=chapters/04-async.md
line=$(grep -n -m1 '3/(2 ms) + 1/(30 ms) = 1\.53 gradients' "$ch" | cut -d: -f1)
check "$ch no longer says 3/(2 ms) + 1/(30 ms) = 1.53" test -n "$line"
block=$(awk -v l="${line:-1}" 'NR < l && /^<!-- check/ { b = NR } END { print b + 0 }' "$ch")
cp "$ch" "$tmp/04.md"
python3 tests/chapters/numbers.py --build "$BUILD" --block "$block" "$tmp/04.md" >"$tmp/n04.out" 2>&1
rc=$?
check "numbers.py fails on an untouched copy of $ch (block at line $block): $(grep FAIL "$tmp/n04.out")" \
    test $rc -eq 0
sed -i "${line:-1}s/= 1\\.53 gradients/= 1.58 gradients/" "$tmp/04.md"
python3 tests/chapters/numbers.py --build "$BUILD" --block "$block" "$tmp/04.md" >"$tmp/n04.out" 2>&1
rc=$?
check "numbers.py passes 1.58 for 3/2 + 1/30 at $ch:$line" test $rc -ne 0
check "numbers.py does not name the file, line and both numbers: $(grep -A1 FAIL "$tmp/n04.out")" \
    has n04 "FAIL: $tmp/04.md:$line: \"3/(2 ms) + 1/(30 ms) = {} gradients per ms\": the text says 1.58, the program 1.533333"

# A command's output: chapter 01's table of dtsim's presets (nvlink 300 GB/s).
ch=chapters/01-ranks-and-shared-memory.md
line=$(grep -n -m1 '^| `nvlink` | 1 µs | 300 GB/s |' "$ch" | cut -d: -f1)
check "$ch no longer has its nvlink row" test -n "$line"
block=$(awk -v l="${line:-1}" 'NR < l && /^<!-- check/ { b = NR } END { print b + 0 }' "$ch")
cp "$ch" "$tmp/01.md"
python3 tests/chapters/numbers.py --build "$BUILD" --block "$block" "$tmp/01.md" >"$tmp/n01.out" 2>&1
rc=$?
check "numbers.py fails on an untouched copy of $ch (block at line $block): $(grep FAIL "$tmp/n01.out")" \
    test $rc -eq 0
sed -i "${line:-1}s/| 300 GB\\/s |/| 310 GB\\/s |/" "$tmp/01.md"
python3 tests/chapters/numbers.py --build "$BUILD" --block "$block" "$tmp/01.md" >"$tmp/n01.out" 2>&1
rc=$?
check "numbers.py passes nvlink at 310 GB/s (dtsim says 300) at $ch:$line" test $rc -ne 0
check "numbers.py does not name the file, line and both numbers: $(grep -A1 FAIL "$tmp/n01.out")" \
    has n01 "FAIL: $tmp/01.md:$line: row 'nvlink': the text says 310, the program 300"

# A figure whose line breaks inside it (1.500 \times, then 10^{19}): read
# whole, compared, and refused when wrong (it once crashed the reader).
printf '# t\n\n<!-- check\n"a step of ${}$ FLOPs" = 1.5e19\n-->\n\na step of $1.500 \\times\n10^{19}$ FLOPs\n' >"$tmp/99-wrap.md"
python3 tests/chapters/numbers.py --build "$BUILD" "$tmp/99-wrap.md" >"$tmp/nwrap.out" 2>&1
check "numbers.py does not read a figure broken across lines: $(tail -n 3 "$tmp/nwrap.out")" has nwrap "1 numbers in 1 blocks"
sed -i 's/1\.500 /1.600 /' "$tmp/99-wrap.md"
python3 tests/chapters/numbers.py --build "$BUILD" "$tmp/99-wrap.md" >"$tmp/nwrap.out" 2>&1
check "numbers.py passes 1.600e19 for 1.5e19 across a line break: $(tail -n 3 "$tmp/nwrap.out")" \
    has nwrap "the text says 1.600"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
