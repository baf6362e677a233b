#!/usr/bin/env bash
# bad-input-dtgrade.sh - dtgrade, `make check` and `make test-kernels`
# refuse bad input with a message that names the option or variable and
# the value, and exit status 2; run by `make test` (the suite's "tools"
# step).
#   tests/tools/bad-input-dtgrade.sh BUILD
#
# The table has one row per case (the format of tests/tools/bad-input.sh):
#
#   STATUS | TEXT | COMMAND
#
#   STATUS   the exit status expected (2: bad input; 0: the good runs that
#            show the table's commands are right)
#   TEXT     a text that stdout + stderr must contain (exactly); empty: anything
#   COMMAND  run by bash in $WORK (a fresh folder of its own) with BUILD/bin
#            first on PATH and $REPO the repository; at most 60 s
set -uo pipefail
BUILD=${1:-build}
REPO=$(pwd)
PATH="$(cd "$BUILD/bin" && pwd):$PATH"
export PATH REPO
WORK=$(mktemp -d)
export WORK
trap 'rm -rf "$WORK"' EXIT
unset DT_TIMEOUT_SCALE DT_RESULTS

table() {
    cat <<'ROWS'
# ---- dtgrade's options
2 | -j: '0' is not a whole number from 1 to 16        | dtgrade -j 0 lab=grade
2 | -j: 'abc' is not a whole number from 1 to 16      | dtgrade -j abc lab=grade
2 | -j: '17' is not a whole number from 1 to 16       | dtgrade -j17 lab=grade
2 | --timeout-scale: '0' is not a number from 0.01    | dtgrade --timeout-scale 0 lab=grade
2 | --timeout-scale: 'fast' is not a number           | dtgrade --timeout-scale fast lab=grade
2 | --race-timeout-scale: '-1' is not a number        | dtgrade --race-timeout-scale -1 lab=grade
2 | --limit-as: 'lots' is not a size in MiB           | dtgrade --limit-as lots lab=grade
2 | --limit-cpu: '-3' is not a number of seconds      | dtgrade --limit-cpu -3 lab=grade
2 | --limit-fsize: '0' is not a size in MiB, at least 1 | dtgrade --limit-fsize 0 lab=grade
2 | --limit-tasks: '2.5' is not a whole number        | dtgrade --limit-tasks 2.5 lab=grade
2 | DT_TIMEOUT_SCALE: 'abc' is not a number           | DT_TIMEOUT_SCALE=abc dtgrade lab=grade
2 | unknown option '--fast'                           | dtgrade --fast lab=grade
2 | --results needs a value                           | dtgrade lab=grade --results
2 | --results: the file name is empty                 | dtgrade --results '' lab=grade
2 | --race: 'other=tsan' names no lab given before it | dtgrade lab=grade --race other=tsan
2 | a lab: '=grade' is not NAME=BINARY                | dtgrade =grade
2 | a lab: 'lab=' is not NAME=BINARY                  | dtgrade lab=
2 | --job-prefix: 'a/b' is not a name part            | dtgrade --job-prefix a/b lab=grade
2 | --blas-only: no folder nowhere                    | dtgrade --blas-only nowhere lab=grade
2 | --blas-marks: the folder name is empty            | dtgrade --blas-marks '' lab=grade
2 | --blas-marks: cannot make the folder f/m          | touch f && dtgrade --blas-marks f/m lab=grade
2 | usage: dtgrade                                    | dtgrade
0 | usage: dtgrade                                    | dtgrade --help
2 | usage: dtgrade --splice                           | dtgrade --splice only-one
2 | --splice: cannot read the official folder 'nowhere' | dtgrade --splice nowhere mine out
2 | usage: dtgrade --points                           | dtgrade --points
# a lab that does not build is graded 0 of its points: no error
0 | Score: 0/1  (BUILD FAILED)                        | dtgrade --results r.json lab=missing/grade
# ---- make check
2 | check: LAB=99 names no lab                        | make -s -C "$REPO" check LAB=99
2 | check: RACE='maybe' is not 0 or 1                 | make -s -C "$REPO" check LAB=00 RACE=maybe
2 | -j: 'many' is not a whole number                  | make -s -C "$REPO" check LAB=00 GRADE_JOBS=many DT_RESULTS="$WORK/r.json"
2 | IMPL=nowhere is no folder                         | make -s -C "$REPO" check IMPL=nowhere
# ---- make test-kernels (SAN= : the sanitizer runs of this script too)
2 | test-kernels: LOAD='2' is not 0 or 1              | make -s -C "$REPO" test-kernels SAN= LOAD=2
2 | KERNELS_DONE='all': its words are own and built-in | make -s -C "$REPO" test-kernels SAN= KERNELS_DONE=all
ROWS
}

. "$(dirname "$0")/table.sh"
run_table
