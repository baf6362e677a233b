#!/usr/bin/env bash
# check-bench.sh - `make bench` runs end to end (run by `make test`): one
# round of short runs of bench/table.sh must print the machine, the run and
# every row of the table with a number for libdt (and for the peer where
# OpenMPI or PyTorch is installed), the mpi backend's rows where libdt has
# that backend; bench/mpi.sh's and bench/netns.sh's tables (or their
# reasons to skip); a bad ROUNDS is refused by name. The
# figures themselves are not checked: a test's verdict never depends on the
# machine's speed. Skipped under sanitizers (the programs would be timed
# instrumented).
#   tests/tools/check-bench.sh BUILD
set -uo pipefail
BUILD=${1:-build}
pass=0
fail=0
if [ -n "${SAN:-}" ]; then
    echo "check-bench: skipped under SAN=$SAN"
    echo "0 passed, 0 failed"
    exit 0
fi
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: check-bench: $*"; fail=$((fail + 1)); }

out=$(ROUNDS=1 STEPS=5 BUILD="$BUILD" bash bench/table.sh 2>&1)
rc=$?
[ $rc -eq 0 ] && ok || bad "bench/table.sh exited with status $rc: $(echo "$out" | tail -n 5)"
for want in '^\*\*Machine\*\*: .* cores, .* kernels for libdt' '^\*\*Run\*\*: .*rounds: 1'; do
    grep -qE "$want" <<<"$out" && ok || bad "no line matching '$want' in: $(echo "$out" | head -n 5)"
done
# 9 rows, and 4 of the mpi backend where libdt has it (it runs under mpirun)
want_rows=9
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
command -v mpirun >/dev/null && mpirun "${root[@]}" -np 1 "$BUILD/bin/dtbench" allreduce -b 4 \
    -e 4 -n 1 --backend mpi --iters 1 --warmup 0 --csv >/dev/null 2>&1 && want_rows=13
rows=$(echo "$out" | grep -cE '^\| (allreduce|MLP step|data parallel)')
[ "$rows" -eq $want_rows ] && ok || bad "expected $want_rows rows, got $rows"
# the rows that miss their target are counted under the table
grep -qE '^(Every row with a target and its figures meets it|[0-9]+ row\(s\) miss their target)' <<<"$out" && ok ||
    bad "no line under the table on the rows that miss their target"
# every row: libdt's figure is a number; the peer's too where it is installed
peer_ok=1
command -v mpirun >/dev/null || peer_ok=0
/usr/bin/python3 -c 'import torch' 2>/dev/null || peer_ok=0
while IFS='|' read -r _ name dt peer _ _ _ _ met _; do
    [[ $dt =~ ^\ [0-9.]+x?\ $ ]] || bad "row '$name': libdt's figure is '$dt'"
    [[ $met =~ ^\ (yes|\*\*no\*\*|-)\ $ ]] || bad "row '$name': whether it meets its target is '$met'"
    [ $peer_ok = 0 ] || [[ $peer =~ ^\ [0-9.]+x?\ $ ]] || bad "row '$name': the peer's figure is '$peer'"
done < <(echo "$out" | grep -E '^\| (allreduce|MLP step|data parallel)')
[ $fail -eq 0 ] && ok

# the mpi backend's benchmarks: both tables of bench/mpi.sh, and the row of
# bench/netns.sh (or the reason it skips: no root, no namespaces)
numbers() { # REGEX FIELDS...: how many rows match REGEX with a number in every field named
    local row f n=0 all regex=$1
    shift
    while read -r row; do
        all=1
        for f in "$@"; do
            [[ $(echo "$row" | cut -d'|' -f"$f") =~ ^\ [-+]?[0-9][0-9.]*(x|\ us)?\  ]] || all=0
        done
        n=$((n + all))
    done < <(echo "$out" | grep -E "$regex")
    echo "$n"
}
out=$(ROUNDS=1 SIZES="4 64K" RANKS=2 BUILD="$BUILD" bash bench/mpi.sh 2>&1)
rc=$?
if [ $want_rows = 9 ]; then
    [ $rc -eq 0 ] && grep -q "skipped" <<<"$out" && ok || bad "bench/mpi.sh without the mpi backend: $out"
else
    [ $rc -eq 0 ] && ok || bad "bench/mpi.sh exited with status $rc: $(echo "$out" | tail -n 5)"
    [ "$(numbers '^\| (4 B|64 KiB), N=2 ' 3 4 5)" = 4 ] && ok ||
        bad "bench/mpi.sh: not two rows in each table: $out"
fi
out=$(ROUNDS=1 SIZES=64K BUILD="$BUILD" bash bench/netns.sh 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "^bench/netns.sh: skipped: " <<<"$out"; then
    ok
else
    [ $rc -eq 0 ] && [ "$(numbers '^\| busbw, 64 KiB ' 3 4 5 6 7 8 9)" = 1 ] && ok ||
        bad "bench/netns.sh (status $rc): no row for 64 KiB: $out"
fi

out=$(ROUNDS=0 BUILD="$BUILD" bash bench/table.sh 2>&1)
[ $? -ne 0 ] && grep -q "ROUNDS='0'" <<<"$out" && ok || bad "ROUNDS=0 accepted or not named: $out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
