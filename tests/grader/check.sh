#!/usr/bin/env bash
# check.sh - `make check`: grades labs the way the course's autograder does.
#
# Only the student's code is taken. Each selected lab is built from the
# official files (OFFICIAL/NN-topic/) with the bodies of the student fences
# of IMPL/NN-topic/ spliced in (`dtgrade --splice`): headers, run.c and
# everything outside the fences are the official text (a file the student's
# folder lacks is graded as the official one: solutions/ holds only the
# fenced files, the rest of a lab lives in labs/). A file whose fences
# do not match the official file's keeps the lab from building, with a
# message that names the file and the fence. Labs with race-sensitive
# tests (.race = 1) are also built with ThreadSanitizer, and dtgrade runs
# those tests from that build too (RACE=0 leaves it out).
#
# Environment (the Makefile sets it):
#   MAKE BUILD SAN CC WERROR   the build, as for make
#   IMPL      the student's lab folders (labs, solutions, a submission, a copy)
#   OFFICIAL  the official lab folders (tests/official in a student tree, else labs)
#   LABS      the labs to grade (NN-topic names)
#   SPLICED   where the spliced lab goes (default $BUILD/spliced/<IMPL as a name>)
#   SHOWN     the name of IMPL in messages (default $IMPL)
#   RACE      1 (default): the ThreadSanitizer builds of labs with race tests
#   TEST GRADE_JOBS TIMEOUT_SCALE DTGRADE_FLAGS DT_RESULTS   dtgrade's options
#   PREBUILT  set: the grader, libdt and the test driver are built already
#             (not checked again: the suite's mutants step, per mutant)
#   SEED_FROM a spliced folder of the same BUILD whose test objects can be
#             reused (they depend only on the official headers), and its
#             lab objects where the source and the lab's headers are the same
# The build of each lab goes to SPLICED/NN-topic/build.log, the splice's
# notes to splice.txt beside it; dtgrade shows both. Exit status: dtgrade's
# (2 when the grader or the library itself does not build).
set -uo pipefail

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
SAN=${SAN:-}
IMPL=${IMPL:-labs}
OFFICIAL=${OFFICIAL:-labs}
RACE=${RACE:-1}
SHOWN=${SHOWN:-$IMPL}
SPLICED=${SPLICED:-$BUILD/spliced/$(echo "$IMPL" | tr / _)}
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
dtgrade=$BUILD/bin/dtgrade
# The ThreadSanitizer build: this one under SAN=thread, else build/thread
# beside the plain or address build (shared with `make SAN=thread`).
if [ "$SAN" = thread ]; then TBUILD=$BUILD; else TBUILD=${BUILD%/address}/thread; fi

case "$RACE" in
    0 | 1) ;;
    *) echo "check: RACE='$RACE' is not 0 or 1 (1: race-sensitive tests also under ThreadSanitizer)"
       exit 2 ;;
esac

m() { "$MAKE" --no-print-directory -j"$JOBS" CC="${CC:-cc}" WERROR="${WERROR:-}" "$@"; }

# The binary make builds for a lab of implementation $1 under build $2
# (the Makefile's IMPL_DIR rule).
grade_path() { # impl build lab
    case "$1" in
        "$2"/*) echo "$1/$3/grade" ;;
        *) echo "$2/$(echo "$1" | tr / _)/$3/grade" ;;
    esac
}

# Test objects depend on the official headers only: those of another
# spliced build of the same BUILD serve as they are (copied with their
# times; their .d files go, so that make does not look for the old paths).
seed_tests() { # from-impl to-impl build lab
    local from to
    from=$(dirname "$(dirname "$(grade_path "$1" "$3" "$4")")")/obj/tests/tests/$4
    to=$(dirname "$(dirname "$(grade_path "$2" "$3" "$4")")")/obj/tests/tests
    [ -d "$from" ] && [ ! -d "$to/$4" ] || return 0
    mkdir -p "$to" && cp -Rp "$from" "$to/" && rm -f "$to/$4"/*.d
}

# A lab's own objects are reused the same way, file by file, where the
# spliced source is byte-identical to the seed's and so is every header of
# the lab (a mutant changes one file: only that one is compiled again). The
# source gets the seed source's time, so that make sees the copied object
# as newer than it. The graded copies (obj/graded/) are not seeded: the
# grader's check renames them again from these.
seed_lab() { # from-impl to-impl build lab
    local fromdir=$1/$4 todir=$2/$4 fromobj toobj f b
    fromobj=$(dirname "$(dirname "$(grade_path "$1" "$3" "$4")")")/obj/$4
    toobj=$(dirname "$(dirname "$(grade_path "$2" "$3" "$4")")")/obj/$4
    [ -d "$fromobj" ] && [ ! -d "$toobj" ] || return 0
    for f in "$fromdir"/*.h; do # every header the same, or nothing is reused
        [ -f "$f" ] || continue
        cmp -s "$f" "$todir/$(basename "$f")" || return 0
    done
    for f in "$todir"/*.h; do
        [ -f "$f" ] && [ ! -f "$fromdir/$(basename "$f")" ] && return 0
    done
    mkdir -p "$toobj"
    for f in "$todir"/*.c; do
        b=$(basename "$f" .c)
        [ -f "$fromobj/$b.o" ] && [ "$fromobj/$b.o" -nt "$fromdir/$b.c" ] &&
            cmp -s "$f" "$fromdir/$b.c" || continue
        touch -r "$fromdir/$b.c" "$f" && cp -p "$fromobj/$b.o" "$toobj/$b.o"
    done
}

# Nothing outside BUILD: the temporary files here and the tests' folders
# (dtgrade --tmp-root) go below it.
export TMPDIR=${TMPDIR:-$BUILD/tmp}
mkdir -p "$TMPDIR"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ -n "${PREBUILT:-}" ]; then
    : # the caller has built both (the suite's mutants step: once, not per mutant)
elif ! m BUILD="$BUILD" "$dtgrade" >"$log" 2>&1; then
    cat "$log"
    echo "check: the grader does not build"
    exit 2
elif ! m BUILD="$BUILD" SAN="$SAN" "$BUILD/libdt.a" "$BUILD/obj/tests/grader/test_main.o" >"$log" 2>&1; then
    grep -E 'error|warning' "$log" | head -n 20
    echo "check: libdt does not build (this is not your lab's code; full log: $log)"
    trap - EXIT
    exit 2
fi

args=()
race_labs=()
for lab in $LABS; do
    dir=$SPLICED/$lab
    mkdir -p "$dir"
    bin=$dir/grade
    "$dtgrade" --splice "$OFFICIAL/$lab" "$IMPL/$lab" "$dir" "$SHOWN/$lab" >"$dir/splice.txt"
    case $? in
        0) ;;
        1) rm -f "$bin"; cp "$dir/splice.txt" "$dir/build.log"; args+=("$lab=$bin"); continue ;;
        *) echo "check: cannot splice $lab"; exit 2 ;;
    esac
    [ -z "${SEED_FROM:-}" ] || seed_tests "$SEED_FROM" "$SPLICED" "$BUILD" "$lab"
    [ -z "${SEED_FROM:-}" ] || seed_lab "$SEED_FROM" "$SPLICED" "$BUILD" "$lab"
    if ! m BUILD="$BUILD" SAN="$SAN" IMPL="$SPLICED" "$bin" >"$dir/build.log" 2>&1; then
        rm -f "$bin"
    fi
    args+=("$lab=$bin")
    if [ "$RACE" = 1 ] && [ "$SAN" != thread ] && [ -f "$bin" ] &&
        grep -qE '\.race[[:space:]]*=[[:space:]]*1' "tests/$lab"/*.c 2>/dev/null; then
        tbin=$(grade_path "$SPLICED" "$TBUILD" "$lab")
        mkdir -p "$(dirname "$tbin")"
        [ -z "${SEED_FROM:-}" ] || seed_tests "$SEED_FROM" "$SPLICED" "$TBUILD" "$lab"
        [ -z "${SEED_FROM:-}" ] || seed_lab "$SEED_FROM" "$SPLICED" "$TBUILD" "$lab"
        if ! m BUILD="$TBUILD" SAN=thread IMPL="$SPLICED" "$tbin" >"$(dirname "$tbin")/build.log" 2>&1; then
            rm -f "$tbin"
        fi
        args+=(--race "$lab=$tbin")
        race_labs+=("$lab")
    fi
done
[ ${#race_labs[@]} -eq 0 ] ||
    echo "check: race-sensitive tests of ${race_labs[*]} also run from a ThreadSanitizer build (RACE=0: not)"

flags=(-j "${GRADE_JOBS:-1}" --results "${DT_RESULTS:-$BUILD/results.json}" --tmp-root "$BUILD/tmp")
[ -z "${TEST:-}" ] || flags+=(--only "$TEST")
[ -z "${TIMEOUT_SCALE:-}" ] || flags+=(--timeout-scale "$TIMEOUT_SCALE")
rm -f "$log" # (exec runs no EXIT trap)
trap - EXIT
# shellcheck disable=SC2086
exec "$dtgrade" "${flags[@]}" ${DTGRADE_FLAGS:-} "${args[@]}"
