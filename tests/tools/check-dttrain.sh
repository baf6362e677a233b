#!/usr/bin/env bash
# check-dttrain.sh - the data-parallel paths of tools/dttrain (run by
# `make test`): the same training must give the same parameters, bit for
# bit (the "params_hash" of --json), whatever the backend, and with
# --shard-optimizer (reduce-scatter, step on a shard, allgather) as with
# the allreduce; a bad argument is refused with the usage.
#   tests/tools/check-dttrain.sh BUILD
set -uo pipefail
BUILD=${1:-build}
DT="$BUILD/bin/dttrain --model mlp:64,128,10 --batch 16 --steps 30 --eval-every 0 --json"
fail=0
pass=0

hash_of() { "$@" | sed -n 's/.*"params_hash": "\([0-9a-f]*\)".*/\1/p'; }

for k in 2 3; do
    want=$(hash_of $DT --ranks $k)
    [ -n "$want" ] || { echo "FAIL: dttrain --ranks $k printed no params_hash"; fail=$((fail + 1)); continue; }
    for extra in "--backend proc" "--shard-optimizer" "--backend proc --shard-optimizer"; do
        # shellcheck disable=SC2086
        got=$(hash_of $DT --ranks $k $extra)
        if [ "$got" = "$want" ]; then
            pass=$((pass + 1))
        else
            echo "FAIL: dttrain --ranks $k $extra: parameters $got, the allreduce on threads gives $want"
            fail=$((fail + 1))
        fi
    done
done
# a run on 1 rank is another training (batch 16, not 2 x 16): another hash
one=$(hash_of $DT --ranks 1)
if [ -n "$one" ] && [ "$one" != "$(hash_of $DT --ranks 2)" ]; then
    pass=$((pass + 1))
else
    echo "FAIL: dttrain --ranks 1 and --ranks 2 give the same parameters ($one): the hash sees nothing"
    fail=$((fail + 1))
fi
out=$("$BUILD/bin/dttrain" --ranks 2 --bogus 2>&1)
if [ $? -ne 0 ] && echo "$out" | grep -q usage; then
    pass=$((pass + 1))
else
    echo "FAIL: dttrain --bogus: expected a non-zero exit and the usage, got: $out"
    fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
