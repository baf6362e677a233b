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

# shellcheck source=tests/grader/spin.sh
. "$(dirname "$0")/spin.sh"
trap stop_spinners EXIT
trap 'stop_spinners; exit 130' INT
trap 'stop_spinners; exit 143' TERM
echo "stress: $ROUNDS round(s) of every solution, $JOBS test(s) at a time, every core busy besides"

fails=$out/failures.txt
: >"$fails"
total=0
for k in $(seq 1 "$ROUNDS"); do
    stop_spinners
    start_spinners stress
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
