#!/usr/bin/env bash
# check-lab-run.sh - the programs of labs 05 and 06 (`make run-lab`) refuse
# bad options before they run anything: status 2 and a line naming the
# option (or variable) and its value; on the skeleton they end with status
# 1, naming the lab function not done. The skeleton's programs are used
# (make builds them; options are read before any student function runs),
# so the check needs no solution.
#   tests/tools/check-lab-run.sh BUILD
set -uo pipefail
BUILD=${1:-build}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: check-lab-run: $*"; fail=$((fail + 1)); }

# refused PROGRAM WANT [VAR=VALUE ...] -- ARGS...: status 2, WANT on stderr.
refused() {
    local prog=$1 want=$2 out rc
    shift 2
    local -a vars=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        vars+=("$1")
        shift
    done
    shift
    out=$(env DT_QUIET=1 "${vars[@]}" timeout 30 "$prog" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 2 ]; then
        bad "${vars[*]} $prog $*: status $rc, expected 2 ($(echo "$out" | head -n 1))"
    elif ! grep -qF -- "$want" <<<"$out"; then
        bad "${vars[*]} $prog $*: no '$want' in: $(echo "$out" | head -n 1)"
    else
        ok
    fi
}

mp=$BUILD/labs/05-model-parallel/run
pipe=$BUILD/labs/06-pipeline-parallel/run
for prog in "$mp" "$pipe"; do
    if [ ! -x "$prog" ]; then
        bad "$prog is missing (make builds it)"
        continue
    fi
    out=$(DT_QUIET=1 "$prog" --help 2>&1)
    [ $? -eq 0 ] && grep -q '^usage:' <<<"$out" && ok || bad "$prog --help: no usage, or not status 0"
done

if [ -x "$mp" ]; then
    refused "$mp" "--ranks '0'" -- --ranks 0
    refused "$mp" "--ranks 'x'" -- --ranks x
    refused "$mp" "--net 'nosuch'" -- --net nosuch
    refused "$mp" "'--bogus'" -- --bogus
fi
if [ -x "$pipe" ]; then
    refused "$pipe" "--ranks '1'" -- --ranks 1
    refused "$pipe" "--micro '65'" -- --micro 65
    refused "$pipe" "--micro '2x'" -- --micro 2x
    refused "$pipe" "--net 'nosuch'" -- --net nosuch
    refused "$pipe" "--figures '/nonexistent-dtlab'" -- --figures /nonexistent-dtlab
    refused "$pipe" "BUILD '/nonexistent-dtlab'" BUILD=/nonexistent-dtlab --
    refused "$pipe" "one at a time" -- --skew --measure
    refused "$pipe" "lacks its value" -- --ranks
    refused "$pipe" "'--bogus'" -- --bogus
fi
# The skeleton's programs end with status 1 and name the function not done.
skeleton() { # PROGRAM WANT
    local out rc
    out=$(DT_QUIET=1 BUILD="$BUILD" timeout 60 "$1" 2>&1)
    rc=$?
    if [ $rc -ne 1 ]; then
        bad "$1 (the skeleton): status $rc, expected 1"
    elif ! grep -qF -- "$2" <<<"$out"; then
        bad "$1 (the skeleton): no '$2' in its output"
    else
        ok
    fi
}
[ -x "$mp" ] && skeleton "$mp" "lab_mp_partition"
[ -x "$pipe" ] && skeleton "$pipe" "lab_sched_gpipe returned DT_ERR_NOT_IMPLEMENTED"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
