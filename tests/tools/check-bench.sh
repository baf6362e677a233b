#!/usr/bin/env bash
# check-bench.sh - `make bench` runs end to end (run by `make test`): one
# round of short runs of bench/table.sh must print the machine, the run and
# every row of the table with a number for libdt (and for the peer where
# OpenMPI or PyTorch is installed); a bad ROUNDS is refused by name. The
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
    echo "$out" | grep -qE "$want" && ok || bad "no line matching '$want' in: $(echo "$out" | head -n 5)"
done
rows=$(echo "$out" | grep -cE '^\| (allreduce|MLP step|data parallel)')
[ "$rows" -eq 9 ] && ok || bad "expected 9 rows, got $rows"
# every row: libdt's figure is a number; the peer's too where it is installed
peer_ok=1
command -v mpirun >/dev/null || peer_ok=0
/usr/bin/python3 -c 'import torch' 2>/dev/null || peer_ok=0
while IFS='|' read -r _ name dt peer _; do
    [[ $dt =~ ^\ [0-9.]+x?\ $ ]] || bad "row '$name': libdt's figure is '$dt'"
    [ $peer_ok = 0 ] || [[ $peer =~ ^\ [0-9.]+x?\ $ ]] || bad "row '$name': the peer's figure is '$peer'"
done < <(echo "$out" | grep -E '^\| (allreduce|MLP step|data parallel)')
[ $fail -eq 0 ] && ok

out=$(ROUNDS=0 BUILD="$BUILD" bash bench/table.sh 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q "ROUNDS='0'" && ok || bad "ROUNDS=0 accepted or not named: $out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
