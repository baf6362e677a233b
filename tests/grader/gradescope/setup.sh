#!/usr/bin/env bash
# setup.sh - Gradescope runs this once when it builds the autograder image
# (from the folder the autograder zip was unpacked into, /autograder/source).
# It installs what is missing of the compiler, make, pkg-config and
# OpenBLAS (tools/setup-deps.sh: nothing, and no apt-get at all, where they
# are present), then builds once what every submission shares: libdt, the
# grader, and the test objects of the graded labs (the lab named in
# gradescope-lab, or every lab), which run_autograder reuses, so that each
# submission compiles only its own lab files, and the grader's lists of
# what a lab may call (tests/grader/lab-objects.sh). Labs with
# race-sensitive tests get the same with ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")"
# The folders below are the Makefile's defaults: a BUILD or SAN in the
# environment (the suite's `make test` exports BUILD) must not move them.
unset BUILD SAN OPENBLAS
tools/setup-deps.sh build
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ -f gradescope-lab ]; then
    labs=$(cat gradescope-lab)
else
    labs=$(for d in tests/[0-9][0-9]-*/; do ls "$d"*.c >/dev/null 2>&1 && basename "$d"; done)
fi
race=()
for lab in $labs; do
    grep -qE '\.race[[:space:]]*=[[:space:]]*1' "tests/$lab"/*.c 2>/dev/null && race+=("$lab")
done
# The labs' test objects, as check.sh's SEED_FROM=tests/official finds them.
test_objects() { # build lab...
    local lab f
    for lab in "${@:2}"; do
        for f in tests/"$lab"/*.c; do
            echo "$1/tests_official/obj/tests/tests/$lab/$(basename "$f" .c).o"
        done
    done
}
# shellcheck disable=SC2086
make -j"$jobs" IMPL=tests/official build/bin/dtgrade build/libdt.a build/obj/tests/grader/test_main.o \
    $(test_objects build $labs)
tests/grader/lab-objects.sh --lists build/libdt.a
if [ ${#race[@]} -gt 0 ]; then
    make -j"$jobs" IMPL=tests/official SAN=thread build/thread/libdt.a \
        build/thread/obj/tests/grader/test_main.o $(test_objects build/thread "${race[@]}")
    tests/grader/lab-objects.sh --lists build/thread/libdt.a
fi
