#!/usr/bin/env bash
# selftest.sh DTGRADE FIXTURE_BINARY WORKDIR
#
# The grader's own test: grades the misbehaving fixtures of
# tests/grader/fixtures/ and checks that each failure mode gets the right
# verdict, that the exit codes follow the options, and that no process and
# no /dev/shm entry of the fixtures is left behind.
set -euo pipefail

dtgrade=$1
fixture=$2
work=$3
mkdir -p "$work"
rm -f "$work"/*
prefix="selftest$$."
uid=$(id -u)
export DT_FIXTURE_PIDS="$work/pids"
failures=0

fail() {
    echo "selftest: $*" >&2
    failures=$((failures + 1))
}

# A row of the table: "  NAME  got/max  STATUS  reason".
expect_row() { # name status reason-substring
    local row
    row=$(grep -E "^  $1 " "$work/out.txt" || true)
    if [ -z "$row" ]; then
        fail "no row for $1"
    elif ! grep -qE "^  $1 +[0-9]+/[0-9]+ +$2( |$)" <<<"$row"; then
        fail "$1: expected status $2, got: $row"
    elif ! grep -qF -- "$3" <<<"$row"; then
        fail "$1: expected reason containing '$3', got: $row"
    fi
}

rc=0
"$dtgrade" --job-prefix "$prefix" --timeout-scale 1 --results "$work/results.json" \
    "fixtures=$fixture" >"$work/out.txt" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "plain grading exited $rc (a score is not an error)"

expect_row fx_pass pass ""
expect_row fx_wrong_answer FAIL "FAIL: tests/grader/fixtures/fixtures.c:"
expect_row fx_wrong_answer FAIL "sum = 4, expected 5"
expect_row fx_segfault CRASH "CRASH: SIGSEGV"
expect_row fx_abort CRASH "CRASH: SIGABRT"
expect_row fx_exit_code FAIL "FAIL: exit status 3"
expect_row fx_infinite_loop TIMEOUT "TIMEOUT after 1 s"
expect_row fx_fork_orphan pass ""
expect_row fx_fork_hang TIMEOUT "TIMEOUT after 1 s"
expect_row fx_shm_leak pass ""
expect_row fx_ranks_fail FAIL "rank 2 disagrees"
expect_row fx_hidden_pass pass "(hidden)"

# Each rank's last lines are shown for a multi-rank failure.
for r in 0 1 2; do
    grep -qF "| [rank $r] step 9" "$work/out.txt" || fail "rank $r's last line not shown"
done
grep -q '^Score: 4/12 ' "$work/out.txt" || fail "total score line wrong: $(grep '^Score' "$work/out.txt")"
[ "$(tail -n 1 "$work/out.txt")" = "4 passed, 7 failed" ] ||
    fail "closing line: '$(tail -n 1 "$work/out.txt")'"

# results.json: Gradescope's fields, a visible and a hidden test, rank output.
json="$work/results.json"
grep -q '"score": 4,' "$json" || fail "results.json score"
grep -q '"max_score": 12,' "$json" || fail "results.json max_score"
grep -q '"name": "fixtures/fx_segfault", "score": 0, "max_score": 1' "$json" ||
    fail "results.json row of fx_segfault"
grep -q '"visibility": "hidden"' "$json" || fail "results.json hidden visibility"
grep -q '\[rank 1\] step 9' "$json" || fail "results.json lacks rank 1's output"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["tests"]) == 11' \
        "$json" || fail "results.json is not valid JSON with 11 tests"
fi

# Nothing left behind: every process the fixtures recorded (the looping and
# waiting tests, their children) is gone; no segment of these jobs remains.
sleep 0.2
if [ -f "$DT_FIXTURE_PIDS" ]; then
    while read -r pid; do
        if kill -0 "$pid" 2>/dev/null; then
            fail "process $pid of a fixture is still alive"
        fi
    done <"$DT_FIXTURE_PIDS"
else
    fail "the fixtures recorded no pid"
fi
if [ -f "$DT_FIXTURE_PIDS" ] && [ "$(wc -l <"$DT_FIXTURE_PIDS")" -ne 4 ]; then
    fail "expected 4 recorded pids, got $(wc -l <"$DT_FIXTURE_PIDS")"
fi

if ls /dev/shm/ 2>/dev/null | grep -q "^dtlab\.$uid\.$prefix"; then
    fail "shared memory left behind: $(ls /dev/shm | grep "^dtlab\.$uid\.$prefix")"
fi
grep -q "created /dtlab.$uid.$prefix" "$json" || fail "fx_shm_leak did not create its segment"

# Options and exit codes.
run_rc() { local r=0; "$dtgrade" --results "$work/r2.json" "$@" >"$work/out2.txt" 2>&1 || r=$?; echo $r; }
[ "$(run_rc --only fx_pass "fixtures=$fixture")" = 0 ] || fail "--only"
grep -q '^1 passed, 0 failed$' "$work/out2.txt" || fail "--only fx_pass ran more than fx_pass"
[ "$(run_rc --only fx_pass --min-score-full "fixtures=$fixture")" = 0 ] || fail "--min-score-full on a pass"
[ "$(run_rc --only fx_abort --min-score-full "fixtures=$fixture")" = 1 ] || fail "--min-score-full on a failure"
[ "$(run_rc --only fx_pass --expect-zero "fixtures=$fixture")" = 1 ] || fail "--expect-zero on a score"
[ "$(run_rc --only fx_abort --expect-zero "fixtures=$fixture")" = 0 ] || fail "--expect-zero on 0"
[ "$(run_rc --only fx_pass --expect-loss "fixtures=$fixture")" = 1 ] || fail "--expect-loss on full marks"
[ "$(run_rc --only fx_a --expect-loss "fixtures=$fixture")" = 0 ] || fail "--expect-loss on a loss"
[ "$(run_rc --no-hidden --only fx_hidden "fixtures=$fixture")" = 0 ] || fail "--no-hidden"
grep -q '^0 passed, 0 failed$' "$work/out2.txt" || fail "--no-hidden still ran the hidden test"
[ "$(run_rc --stop-on-fail "fixtures=$fixture")" = 0 ] || fail "--stop-on-fail"
grep -q '^1 passed, 1 failed$' "$work/out2.txt" || fail "--stop-on-fail went on after a failure"

# A lab that did not build: its tests come from its sources, all BUILD FAILED.
[ "$(run_rc --tests-root tests/grader "fixtures=$work/no-such-binary")" = 0 ] ||
    fail "a missing binary is a grader error"
grep -q '^  fx_wrong_answer .* 0/2 .*BUILD' "$work/out2.txt" || fail "missing binary: rows from sources"
grep -q '^  Score: 0/12  (BUILD FAILED)' "$work/out2.txt" || fail "missing binary: 0/12"
[ "$(run_rc --tests-root tests/grader --expect-zero "fixtures=$work/no-such-binary")" = 1 ] ||
    fail "--expect-zero must reject a build failure"

if [ "$failures" -ne 0 ]; then
    echo "--- dtgrade output:" >&2
    cat "$work/out.txt" >&2
    echo "selftest: $failures check(s) failed" >&2
    exit 1
fi
echo "grader selftest: all failure modes reported, nothing left behind"
