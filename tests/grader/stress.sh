#!/usr/bin/env bash
# stress.sh - `make stress`: the flake hunt. Every lab's solution is graded
# ROUNDS times (default 5) the way `make check` grades it (race-sensitive
# tests under ThreadSanitizer too), with every core kept busy besides: at
# each round's start, a spin loop (started and stopped by this script) for
# each core the machine's other work leaves idle. A verdict must
# not depend on scheduling or load: any test that fails in any round fails
# the hunt, named with the rounds it failed in and its reason.
#
# Environment (the Makefile sets it): MAKE, BUILD, SAN, CC, WERROR, ROUNDS,
# LABS (default: every lab). Logs go to $BUILD/stress/.
set -uo pipefail
MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
case "$ROUNDS" in
    '' | *[!0-9]* | 0) echo "stress: ROUNDS='$ROUNDS' is not a whole number of rounds (at least 1)"
                       exit 2 ;;
esac
labs=${LABS:-$(for d in tests/[0-9][0-9]-*/; do ls "$d"*.c >/dev/null 2>&1 && basename "$d"; done)}
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
[ "$JOBS" -gt 8 ] && JOBS=8
out=$BUILD/stress
rm -rf "$out"
mkdir -p "$out"

spinners=()
stop_spinners() {
    local p
    for p in "${spinners[@]}"; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    spinners=()
}
trap stop_spinners EXIT
trap 'stop_spinners; exit 130' INT
trap 'stop_spinners; exit 143' TERM
# The cores other work leaves idle, measured over a second from /proc/stat
# (every core, where it cannot be read): a spin loop for each, so that
# every core is busy besides the grading, whether the machine's other work
# already keeps some busy (as in CI's run under load) or not.
idle_cores() {
    local a b
    a=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat 2>/dev/null)
    sleep 1
    b=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat 2>/dev/null)
    if [ -z "$a" ] || [ -z "$b" ]; then
        echo "$JOBS"
        return
    fi
    echo "$a $b" | awk -v n="$JOBS" '{ d = $4 - $2; i = d > 0 ? ($3 - $1) / d : 1
                                       k = int(i * n + 0.5); print (k > n ? n : k) }'
}
start_spinners() {
    local k
    k=$(idle_cores)
    for _ in $(seq 1 "$k"); do
        (while :; do :; done) &
        spinners+=($!)
    done
    echo "stress: $k spin loop(s) for the idle cores of $JOBS"
}
echo "stress: $ROUNDS round(s) of every solution, $JOBS test(s) at a time, every core busy besides"

fails=$out/failures.txt
: >"$fails"
total=0
for k in $(seq 1 "$ROUNDS"); do
    stop_spinners
    start_spinners
    t0=$(date +%s)
    env MAKE="$MAKE" BUILD="$BUILD" SAN="${SAN:-}" CC="${CC:-cc}" WERROR="${WERROR:-}" \
        IMPL=solutions OFFICIAL=labs LABS="$labs" RACE=1 GRADE_JOBS="$JOBS" \
        DTGRADE_FLAGS="-q" DT_RESULTS="$out/round-$k.json" \
        tests/grader/check.sh >"$out/round-$k.txt" 2>&1
    # The failed rows of the quiet table, with their lab and the round.
    awk -v k="$k" '/^== / { lab = $2 }
        /^  [a-z_0-9]+ +0\/[0-9]+ +[A-Z]/ { name = $1; $1 = ""; $2 = ""
            sub(/^ +/, ""); print "round " k ": " lab "/" name ": " $0 }' \
        "$out/round-$k.txt" | tee -a "$fails"
    n=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/round-$k.txt" | tail -n 1)
    if [ -z "$n" ]; then
        echo "round $k: (the grading): did not finish: $(tail -n 1 "$out/round-$k.txt")" | tee -a "$fails"
    else
        total=$((total + ${n%% *}))
    fi
    echo "stress: round $k of $ROUNDS: ${n:-no result} ($(($(date +%s) - t0)) s)"
done
stop_spinners

nfail=$(wc -l <"$fails")
if [ "$nfail" -ne 0 ]; then
    echo "stress: flaky or failing tests (how many rounds of $ROUNDS each failed in):"
    sed -E 's/^round [0-9]+: ([^:]+): .*/\1/' "$fails" | sort | uniq -c |
        awk -v r="$ROUNDS" '{ printf "  %s: failed in %d of %d rounds\n", $2, $1, r }'
fi
echo "$total passed, $nfail failed"
[ "$nfail" -eq 0 ]
