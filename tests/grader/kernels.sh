#!/usr/bin/env bash
# kernels.sh - `make test-kernels`: one verdict on every CPU. A test's
# verdict must not depend on the BLAS kernels that computed its numbers:
# two paths that are claimed to agree bit for bit must do the same
# arithmetic, and a tolerance must hold with room under every kernel set.
# This runs libdt's unit tests and every lab's solution (graded as
# `make check IMPL=solutions` grades, without the ThreadSanitizer runs,
# whose build has no OpenBLAS, unless LOAD=1) under
#
#   - each OpenBLAS kernel set this CPU can run (OPENBLAS_CORETYPE): one
#     per level of vector instructions up to the CPU's (bench/machine's
#     kernel_sets: Prescott, Sandybridge, Haswell, SkylakeX, Cooperlake on
#     an AVX-512 CPU with BF16) and Zen, the AMD AVX2 set, where the CPU
#     has AVX2; KERNELS="A B ..." chooses others. A set that OpenBLAS does
#     not run when asked (not in its build, or a build with one set) is
#     said and skipped, and so is a set of the default list whose sgemm
#     gives the same bits as one already run (bench/machine's
#     sgemm_fingerprint: Zen runs Haswell's sgemm kernels);
#   - a build without OpenBLAS (make OPENBLAS=0, into $BUILD/noblas), whose
#     sgemm is libdt's built-in kernel.
#
# The first of these runs every test; the others only the tests that used
# the BLAS there (dtgrade --blas-marks and --blas-only): a test that does
# not computes the same bits under any of them. With KERNELS_DONE=own the
# marks are those make test left, and every set runs the marked tests only.
#
# With LOAD=1 each set is graded as `make stress` grades a round: every
# core busy besides (tests/grader/spin.sh) and, in the first, the
# race-sensitive tests under ThreadSanitizer too, so that the first set's
# round is also a round of the flake hunt (CI's: one verdict whatever the
# kernels and the load, in one pass).
#
# It prints the sets it ran and ends with one line per failing test, named
# with its set, and "test-kernels: N passed, N failed". Exit status 1 if
# any test failed under any set. Logs go to $BUILD/test-kernels/.
#
# Environment (set by the Makefile): MAKE, BUILD, WERROR, CC, KERNELS,
# KERNELS_DONE, words of: own (OpenBLAS's own choice was graded in this
# build by `make test` just before, as CI does; its bits are skipped here,
# and its marks say which tests use the BLAS), built-in (`make test
# SAN=thread` graded every test with the built-in sgemm just before, as CI
# does: its build has no OpenBLAS, and the instrumentation changes no
# float operation; the build without OpenBLAS is skipped); LOAD.
set -uo pipefail

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
WERROR=${WERROR:-}
CC=${CC:-cc}
KERNELS=${KERNELS:-}
KERNELS_DONE=${KERNELS_DONE:-}
done_own=0
done_builtin=0
for w in $KERNELS_DONE; do
    case "$w" in
        own) done_own=1 ;;
        built-in) done_builtin=1 ;;
        *) echo "test-kernels: KERNELS_DONE='$KERNELS_DONE': its words are own and built-in"
           exit 2 ;;
    esac
done
LOAD=${LOAD:-0}
case "$LOAD" in
    0 | 1) ;;
    *) echo "test-kernels: LOAD='$LOAD' is not 0 or 1 (1: every core busy besides each set's grading)"
       exit 2 ;;
esac
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
[ "$JOBS" -gt 8 ] && JOBS=8
export DT_QUIET=1 # the kernels are chosen here: no line about them in every test
unset DT_BLAS_KERNELS

if [ ! -d solutions ]; then
    echo "make test-kernels is the staff's check: it needs solutions/."
    exit 2
fi
NOBLAS=$BUILD/noblas
out=$BUILD/test-kernels
rm -rf "$out"
mkdir -p "$out"
labs=$(for d in tests/[0-9][0-9]-*/; do ls "$d"*.c >/dev/null 2>&1 && basename "$d"; done)

m() { "$MAKE" --no-print-directory -j"$JOBS" WERROR="$WERROR" CC="$CC" "$@"; }
key() { sed -n "s/^$1=//p"; } # a KEY=VALUE line of bench/machine

# shellcheck source=tests/grader/spin.sh
. "$(dirname "$0")/spin.sh"
trap stop_spinners EXIT
trap 'stop_spinners; exit 130' INT
trap 'stop_spinners; exit 143' TERM

# What grade_all runs: the grader, libdt, the unit tests and the test
# driver (check.sh builds the labs).
build() { # build-dir make-arguments...
    local dir=$1
    shift
    echo "test-kernels: building $dir"
    if ! m BUILD="$dir" "$@" "$dir/bin/dtgrade" "$dir/libdt.a" "$dir/tests/lib/grade" \
        "$dir/obj/tests/grader/test_main.o" >"$out/build-$(basename "$dir").log" 2>&1; then
        tail -n 20 "$out/build-$(basename "$dir").log"
        echo "test-kernels: the build in $dir failed (log: $out/build-$(basename "$dir").log)"
        return 1
    fi
}

passed=0
failed=0
fails=()
ran=()
# The first configuration graded runs every test, and each test that uses
# the BLAS (an sgemm, what the BLAS is) leaves a mark here (dtgrade
# --blas-marks: libdt's DT_BLAS_MARK). The others run only the marked
# tests: an unmarked one does the same arithmetic under every kernel set
# and without OpenBLAS (lib/tensor/blas.c, sgemm.c and blas_startup.c are
# the only files that differ), so its verdict was had once already.
marks=$out/blas-marks
first=1
# KERNELS_DONE=own: make test graded every test in this build a moment ago,
# and left the marks (tests/grader/suite.sh); every set here grades the
# marked tests only.
if [ "$done_own" = 1 ]; then
    if [ -n "$(ls -A "$BUILD/test/blas-marks" 2>/dev/null)" ]; then
        marks=$BUILD/test/blas-marks
        first=0
    else
        echo "test-kernels: KERNELS_DONE=own, but make test left no mark in $BUILD/test/blas-marks: the first set grades every test"
    fi
fi
# Grades under one configuration: the unit tests, then the solutions.
# $1 the name shown, $2 the build; the environment carries the kernels.
grade_all() { # name build
    local name=$1 dir=$2 log=$out/$1 p f select race=$LOAD sel_labs=$labs what=""
    if [ "$first" = 1 ]; then
        select="--blas-marks $marks"
    else
        what=" (the tests that use the BLAS)"
        select="--blas-only $marks"
        race=0 # the ThreadSanitizer build has no OpenBLAS: the first set ran it
        sel_labs=$(ls "$marks" | sed -n 's/^\([0-9][0-9]-[^.]*\)\..*/\1/p' | sort -u | tr '\n' ' ')
    fi
    first=0
    [ "$LOAD" = 0 ] || start_spinners test-kernels
    # shellcheck disable=SC2086 # $select: an option and its folder
    "$dir/bin/dtgrade" -q -j "$JOBS" $select --tests-root tests --results "$log-unit.json" \
        "lib=$dir/tests/lib/grade" >"$log-unit.txt" 2>&1
    if [ -n "$sel_labs" ]; then
        env MAKE="$MAKE" BUILD="$dir" SAN= CC="$CC" WERROR="$WERROR" IMPL=solutions OFFICIAL=labs \
            LABS="$sel_labs" RACE="$race" GRADE_JOBS="$JOBS" DTGRADE_FLAGS="-q $select" \
            DT_RESULTS="$log-solutions.json" tests/grader/check.sh >"$log-solutions.txt" 2>&1
    else
        echo "0 passed, 0 failed (no lab's test uses the BLAS)" >"$log-solutions.txt"
    fi
    stop_spinners
    for part in unit solutions; do
        read -r p f < <(awk '/^[0-9]+ passed, [0-9]+ failed/ { p = $1; f = $3 }
                              END { print p + 0, f + 0 }' "$log-$part.txt")
        if ! grep -qE '^[0-9]+ passed, [0-9]+ failed' "$log-$part.txt"; then
            f=$((f + 1)) # no count: it did not run (a build error, a crash)
            fails+=("$name: $part: no result (log: $log-$part.txt)")
        fi
        passed=$((passed + p))
        failed=$((failed + f))
        printf '  %-12s %-9s %4d passed, %d failed%s\n' "$name" "$part" "$p" "$f" "$what"
        # dtgrade -q prints the failed rows: "  name   0/3   FAIL ..."
        while read -r row; do
            fails+=("$name: $part: $row")
        done < <(grep -E '^ +[a-z_0-9]+ +[0-9]+/[0-9]+ +(FAIL|TIMEOUT|CRASH|LIMIT|BUILD)' \
                     "$log-$part.txt" | sed 's/^ *//' | tr -s ' ' | cut -c1-200)
    done
    ran+=("$name")
}

# ---------------------------------------------------------------- OpenBLAS sets
build "$BUILD" || exit 1
m BUILD="$BUILD" "$BUILD/bench/machine" >/dev/null 2>&1
machine=$(env -u OPENBLAS_CORETYPE "$BUILD/bench/machine") || {
    echo "test-kernels: $BUILD/bench/machine failed"
    exit 1
}
echo "test-kernels: CPU $(echo "$machine" | key cpu) ($(echo "$machine" | key cpu_isa)), \
$(echo "$machine" | key blas), OpenBLAS's own choice here: $(echo "$machine" | key kernels)"
if [ "$(echo "$machine" | key blas)" = built-in ]; then
    echo "test-kernels: $BUILD has no OpenBLAS (not installed, or OPENBLAS=0): only the built-in sgemm"
else
    KERNELS_CHOSEN=$KERNELS
    if [ -z "$KERNELS" ]; then
        KERNELS=$(echo "$machine" | key kernel_sets)
        case " $(echo "$machine" | key cpu_features) " in # Zen beside Haswell, the other AVX2 set
            *" avx2 "*) KERNELS=$(echo "$KERNELS" | sed 's/Haswell/Haswell Zen/') ;;
        esac
    fi
    chosen=$KERNELS_CHOSEN
    declare -A seen=() # sgemm fingerprint -> the set that ran with it
    # KERNELS_DONE=own (CI): `make test` has just graded the unit tests and
    # the solutions in this build under OpenBLAS's own choice; that set's
    # bits are not graded twice.
    if [ "$done_own" = 1 ] && [ -z "$chosen" ]; then
        fp=$(echo "$machine" | key sgemm_fingerprint)
        [ -n "$fp" ] && [ "$fp" != 0000000000000000 ] &&
            seen[$fp]="own"
    fi
    for k in $KERNELS; do
        info=$(OPENBLAS_CORETYPE=$k "$BUILD/bench/machine")
        got=$(echo "$info" | key kernels)
        if [ "$got" != "$k" ]; then
            echo "test-kernels: $k skipped: OPENBLAS_CORETYPE=$k runs OpenBLAS's $got kernels"
            continue
        fi
        # A set whose sgemm gives the bits of one already run does the same
        # arithmetic (dt_sgemm is libdt's only BLAS call): once is enough,
        # unless KERNELS named it.
        fp=$(echo "$info" | key sgemm_fingerprint)
        if [ -z "$chosen" ] && [ -n "$fp" ] && [ "$fp" != 0000000000000000 ] && [ -n "${seen[$fp]:-}" ]; then
            if [ "${seen[$fp]}" = own ]; then
                echo "test-kernels: $k skipped: its sgemm gives the bits of OpenBLAS's own choice, which make test graded in this build (KERNELS_DONE=own)"
            else
                echo "test-kernels: $k skipped: its sgemm gives the same bits as ${seen[$fp]}'s (fingerprint $fp)"
            fi
            continue
        fi
        [ -n "$fp" ] && seen[$fp]=$k
        echo "test-kernels: OPENBLAS_CORETYPE=$k"
        OPENBLAS_CORETYPE=$k grade_all "$k" "$BUILD"
    done
fi

# ---------------------------------------------------------------- no OpenBLAS
if [ "$done_builtin" = 1 ]; then
    echo "test-kernels: built-in skipped: make test SAN=thread graded every test with libdt's built-in sgemm in this run (its build has no OpenBLAS; KERNELS_DONE=built-in)"
elif build "$NOBLAS" OPENBLAS=0; then
    echo "test-kernels: without OpenBLAS ($NOBLAS)"
    grade_all built-in "$NOBLAS"
else
    failed=$((failed + 1))
    fails+=("built-in: the build failed")
fi

echo
echo "test-kernels: ran ${ran[*]:-nothing}"
for f in "${fails[@]}"; do
    echo "FAIL: $f"
done
echo "test-kernels: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ ${#ran[@]} -gt 0 ]
