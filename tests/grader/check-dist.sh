#!/usr/bin/env bash
# check-dist.sh BUILD WORK - what students and the autograder get:
#
#   student tree  make dist-student: no staff file; tests/official/ is the
#                 labs; the README tells the hidden points of each lab and
#                 says nothing of the staff's; every link of its Markdown
#                 files resolves; its `make help` lists no staff target
#   make check    takes only the fenced code: a student's header that
#                 redefines the grader's macros changes nothing; a broken
#                 fence is named; a change outside the fences is noted
#   convention    a mutant that changes code outside the fences (which make
#                 check would never grade) is refused
#
# (The Gradescope autograder: tests/grader/check-gradescope.sh.)
# One line per check; ends with "N passed, N failed". Run by `make test`.
set -uo pipefail
BUILD=${1:-build}
WORK=${2:-$BUILD/test/student}
MAKE=${MAKE:-make}
dtgrade=$BUILD/bin/dtgrade
rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { # description command...
    local what=$1
    shift
    if "$@"; then ok; else bad "$what"; fi
}
m() { "$MAKE" --no-print-directory BUILD="$BUILD" "$@"; }
labs=$(for d in tests/[0-9][0-9]-*/; do ls "$d"*.c >/dev/null 2>&1 && basename "$d"; done)

# ------------------------------------------------------------ the student tree
m dist-student >"$WORK/dist.log" 2>&1 || bad "make dist-student failed: $(tail -n 3 "$WORK/dist.log")"
dist=$BUILD/dist
for f in solutions docs/instructors.md .ci; do
    check "the student tree has $f" test ! -e "$dist/$f"
done
check "the student tree has hidden tests or mutants" \
    test -z "$(find "$dist/tests" -name 'hidden_*' -o -name mutants)"
check "tests/official/ of the student tree is not its labs/" diff -r -q "$dist/labs" "$dist/tests/official"

readme=$dist/README.md
# shellcheck disable=SC2086
while IFS=$'\t' read -r lab vt vp ht hp; do
    check "README: lab $lab's row does not say $vp visible and $hp hidden points" \
        grep -qE "^\| $lab \| $vt \| $vp \| $ht \| $hp \| $((vp + hp)) \|$" "$readme"
done < <("$dtgrade" --points tests $labs)
check "README: does not say that local scores count visible tests only" \
    grep -q 'counts those only' "$readme"
for staff in 'make test' 'solutions' 'instructors' 'dist-student' 'gradescope' 'mutant'; do
    check "README: mentions '$staff' (staff only)" bash -c "! grep -qi '$staff' '$readme'"
done

# Every relative link of the tree's Markdown files names a file of the tree.
broken=$(cd "$dist" && find . -name '*.md' | while read -r md; do
    grep -oE '\]\([^)#[:space:]]+' "$md" | sed 's/^](//' | while read -r link; do
        case "$link" in http:* | https:* | mailto:*) continue ;; esac
        [ -e "$(dirname "$md")/$link" ] || echo "$md -> $link"
    done
done)
check "links to files absent from the student tree: $broken" test -z "$broken"

if (cd "$dist" && "$MAKE" -n help >/dev/null 2>&1); then
    help=$(cd "$dist" && "$MAKE" --no-print-directory help 2>&1)
    for staff in 'make test ' 'dist-student' 'gradescope' 'make stress' 'IMPL=solutions'; do
        check "the student tree's make help lists '$staff'" bash -c "! grep -qF -- '$staff' <<<\"\$0\"" "$help"
    done
fi

# ------------------------------------------------------------ make check takes only the fences
lab=02-collectives
score_of() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["score"], d["max_score"])' "$1"; }

# A header of the student's that turns the grader's checks off.
mkdir -p "$WORK/tamper"
cp -R "labs/$lab" "$WORK/tamper/"
cat >>"$WORK/tamper/$lab/collectives.h" <<'EOF'
#undef EXPECT
#define EXPECT(cond, ...) ((void)0)
#undef EXPECT_OK
#define EXPECT_OK(expr) ((void)(expr))
EOF
m check IMPL="$WORK/tamper" LAB="$lab" DT_RESULTS="$WORK/tamper.json" >"$WORK/tamper.log" 2>&1
check "a student's header redefining EXPECT changed the score: $(score_of "$WORK/tamper.json")" \
    grep -q '"score": 0,' "$WORK/tamper.json"
check "no note that the student's header is not graded" \
    grep -qF "collectives.h: has no student fence: your changes to it are not graded" "$WORK/tamper.log"

# A fence line deleted: the lab does not build, and the message names it.
mkdir -p "$WORK/fence"
cp -R "labs/$lab" "$WORK/fence/"
awk '/END STUDENT CODE/ && !done { done = 1; next } { print }' "labs/$lab/naive.c" >"$WORK/fence/$lab/naive.c"
m check IMPL="$WORK/fence" LAB="$lab" DT_RESULTS="$WORK/fence.json" >"$WORK/fence.log" 2>&1
check "a broken fence is not named in the table" \
    grep -qE "error: .*fence/$lab/naive.c:[0-9]+: BEGIN STUDENT CODE" "$WORK/fence.log"
check "a broken fence does not fail the build" grep -q 'Score: 0/.*(BUILD FAILED)' "$WORK/fence.log"

# A solution with a change outside its fences: full marks, and a note.
mkdir -p "$WORK/outside"
cp -R "solutions/$lab" "$WORK/outside/"
sed -i '1s|^|/* my notes */\n|' "$WORK/outside/$lab/ring.c"
m check IMPL="$WORK/outside" LAB="$lab" DT_RESULTS="$WORK/outside.json" >"$WORK/outside.log" 2>&1
read -r got max < <(score_of "$WORK/outside.json")
check "a solution with a change outside its fences scores $got/$max" test "$got" = "$max"
check "no note of a change outside the fences" \
    grep -qF "ring.c:1: differs from the lab's file outside the student fences" "$WORK/outside.log"

# ------------------------------------------------------------ the convention
# A copy of one lab's sources with a mutant that edits outside a fence.
conv=$WORK/convention
mkdir -p "$conv/chapters" "$conv/labs" "$conv/solutions" "$conv/tests/$lab"
cp "chapters/$lab.md" "$conv/chapters/"
cp -R "labs/$lab" "$conv/labs/"
cp -R "solutions/$lab" "$conv/solutions/"
cp "tests/$lab"/*.c "tests/$lab"/*.h "$conv/tests/$lab/" 2>/dev/null
mkdir -p "$conv/tests/$lab/mutants"
sed '1s|^|/* outside the fences */\n|' "solutions/$lab/ring.c" >"$WORK/ring.c"
diff -u --label "a/solutions/$lab/ring.c" --label "b/solutions/$lab/ring.c" \
    "solutions/$lab/ring.c" "$WORK/ring.c" >"$conv/tests/$lab/mutants/outside.patch"
tests/grader/check-convention.sh "$conv" >"$WORK/convention.log" 2>&1
check "the convention check took a mutant that edits outside the fences" \
    grep -q "mutants/outside.patch: patched ring.c:1 outside the student fences" "$WORK/convention.log"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
