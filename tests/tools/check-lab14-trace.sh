#!/usr/bin/env bash
# check-lab14-trace.sh - `make run-lab LAB=14` writes the trace of the
# killed run and its resume (chapter 14's run a student can watch; issue
# of the lab): its output names the file, and the file is JSON in the
# trace-event format (traceEvents; each event with a name, a phase, a pid
# and a tid; a time and a duration where its phase has them) holding, on
# both clocks, every rank's steps and saves, the kill of the failure plan
# at its phase, the recovery's load and the resumed steps after the kill.
# Runs lab 14's program on the solution (make builds it), twice: a kill
# before the manifest, and one mid-allreduce with a resume on 2 ranks.
#   tests/tools/check-lab14-trace.sh BUILD
set -uo pipefail
BUILD=${1:-build}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: check-lab14-trace: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v python3 >/dev/null; then
    echo "check-lab14-trace: skipped: no python3"
    echo "0 passed, 0 failed"
    exit 0
fi

# case: name | the program's options | the kill's instant | the recovery's region
while IFS='|' read -r name args killed recovery; do
    name=$(echo "$name" | tr -d ' ')
    [ -z "$name" ] && continue
    case "$name" in \#*) continue ;; esac
    trace=$tmp/$name.json
    out=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s --no-print-directory BUILD="$BUILD" \
        SAN="${SAN:-}" ${CC:+CC="$CC"} run-lab LAB=14 IMPL=solutions \
        ARGS="--dir $tmp --trace $trace $args" 2>&1)
    rc=$?
    [ $rc -eq 0 ] && ok || bad "$name: make run-lab exited with status $rc: $(echo "$out" | tail -n 3)"
    grep -qF "for Perfetto: $trace" <<<"$out" && ok ||
        bad "$name: the output does not name the trace $trace: $(echo "$out" | tail -n 2)"
    python3 - "$trace" "$killed" "$recovery" <<'PY' && ok || bad "$name: the trace $trace (above)"
import json, sys
path, killed, recovery = sys.argv[1], sys.argv[2].strip(), sys.argv[3].strip()
try:
    with open(path) as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"not JSON: {e}")
evs = doc.get("traceEvents")
assert isinstance(evs, list) and evs, "no traceEvents list"
for e in evs:
    assert isinstance(e.get("name"), str) and e.get("ph") in ("X", "i", "M"), e
    assert isinstance(e.get("pid"), int), e
    if e["ph"] != "M":
        assert isinstance(e.get("tid"), int) and isinstance(e.get("ts"), (int, float)), e
    if e["ph"] == "X":
        assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, e
    if e["ph"] == "i":
        assert e.get("s") in ("t", "p", "g"), e
prog = [e for e in evs if e.get("cat") == "program"]
for pid in (0, 1):  # the wall clock and the modeled clock
    mine = [e for e in prog if e["pid"] == pid]
    names = {e["name"] for e in mine}
    for want in ("step 1", "step 12", "save step 3", "save step 12", recovery):
        assert want in names, f"pid {pid}: no region '{want}' among {sorted(names)}"
    kills = [e for e in mine if e["name"] == killed and e["ph"] == "i"]
    assert len(kills) == 1, f"pid {pid}: {len(kills)} instants '{killed}' (expected 1)"
    loads = [e for e in mine if e["name"] == recovery and e["ph"] == "X"]
    resumed = [e for e in mine if e["name"].startswith("resumed at step") and e["ph"] == "i"]
    assert loads and resumed, f"pid {pid}: no recovery region, or no 'resumed at step' instant"
    kill_t = kills[0]["ts"]
    assert all(e["ts"] >= kill_t for e in loads + resumed), \
        f"pid {pid}: the recovery starts before the kill at {kill_t} us"
PY
done <<'CASES'
# name       | options                                            | kill's instant          | recovery's region
manifest     | --phase before-manifest --step 6 --victim 0         | killed: before-manifest | recovery: lab_load
allreduce    | --phase mid-allreduce --step 7 --victim 2 --resume-ranks 2 | killed: reduce_scatter #8 | recovery: lab_reshard_load
CASES
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
