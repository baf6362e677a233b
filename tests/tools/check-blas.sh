#!/usr/bin/env bash
# check-blas.sh - libdt's BLAS start-up check in a real program (run by
# `make test`; tests/lib/test_blas.c checks the library itself): dttrain,
# made to see OpenBLAS fall back to Prescott (DT_BLAS_TEST_FALLBACK=1), must
# run on the kernels of the CPU's level, say so in one line, and report
# them in --json; with DT_BLAS_KERNELS=off it keeps Prescott; a bad
# DT_BLAS_KERNELS is refused with status 2, naming the variable and value.
#   tests/tools/check-blas.sh BUILD
set -uo pipefail
BUILD=${1:-build}
DT="$BUILD/bin/dttrain --steps 2 --eval-every 0 --json"
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: check-blas: $*"; fail=$((fail + 1)); }
run() { # env assignments..., then the command's stdout to $out, stderr to $err
    out=$(env -u DT_QUIET -u DT_BLAS_REPLACED -u DT_BLAS_NOTED -u OPENBLAS_CORETYPE \
        -u DT_BLAS_KERNELS -u DT_BLAS_TEST_FALLBACK "$@" $DT 2>"$tmp")
    rc=$?
    err=$(cat "$tmp")
}
field() { echo "$out" | sed -n "s/.*\"$1\": \"\([^\"]*\)\".*/\1/p"; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

run DT_BLAS_KERNELS=off
if [ "$(field blas)" = built-in ] || [ "$(field blas_kernels)" = "" ]; then
    echo "check-blas: no OpenBLAS in this build: the --json fields only"
    [ "$(field blas_kernels_by)" = build ] && ok || bad "without OpenBLAS: $out"
    echo "$pass passed, $fail failed"
    exit $((fail > 0))
fi
# the kernels libdt asks for on this CPU, if any ("" on a CPU without AVX)
want=$("$BUILD/bench/machine" 2>/dev/null | sed -n 's/^cpu_kernels=//p')
[ -x "$BUILD/bench/machine" ] || bad "$BUILD/bench/machine is missing (make bench-progs)"

run OPENBLAS_CORETYPE=Prescott DT_BLAS_TEST_FALLBACK=1
lines=$(printf '%s\n' "$err" | grep -c '^dtlab:')
if [ -n "$want" ]; then
    [ $rc -eq 0 ] && [ "$(field blas_kernels)" = "$want" ] && [ "$(field blas_kernels_by)" = libdt ] &&
        [ "$(field blas_own_choice)" = Prescott ] && ok ||
        bad "after a fallback to Prescott: status $rc, $out"
    [ "$lines" -eq 1 ] && grep -q "OPENBLAS_CORETYPE=$want" <<<"$err" && ok ||
        bad "expected one line naming OPENBLAS_CORETYPE=$want, got: $err"
else
    [ "$(field blas_kernels)" = Prescott ] && [ "$lines" -eq 0 ] && ok ||
        bad "nothing better than Prescott here, yet: $out $err"
fi

run OPENBLAS_CORETYPE=Prescott DT_BLAS_TEST_FALLBACK=1 DT_BLAS_KERNELS=off
[ $rc -eq 0 ] && [ "$(field blas_kernels)" = Prescott ] && [ "$(field blas_kernels_by)" = openblas ] &&
    ! grep -q '^dtlab:' <<<"$err" && ok || bad "DT_BLAS_KERNELS=off: status $rc, $out $err"

run DT_BLAS_KERNELS=fast
[ $rc -eq 2 ] && grep -q "^dttrain: DT_BLAS_KERNELS='fast'" <<<"$err" && ok ||
    bad "DT_BLAS_KERNELS=fast: status $rc (expected 2), stderr: $err"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
