#!/usr/bin/env bash
# check-dttrain.sh - tools/dttrain (run by `make test`): the data-parallel
# paths must give the same parameters, bit for bit (the "params_hash" of
# --json), whatever the backend, and with --shard-optimizer (the
# allreduce's two halves with the step on a shard between) as with the
# allreduce; --fsdp the same whatever its prefetch, resharding and
# backend; one rank runs its fastest correct path by default and says which
# ("update", "layout"), and that path trains as the reference does;
# --tp and --pp train as one rank does on the global batch. (Bad options
# are refused: bad-input-dttrain.sh, which the suite's tools step runs on
# its own.)
#   tests/tools/check-dttrain.sh BUILD
set -uo pipefail
BUILD=${1:-build}
# Under a sanitizer (make test SAN=..., which sets SAN) fewer steps: it
# looks for memory errors and races, which every path meets in its first
# steps; the plain build compares the longer runs.
S=30 G=40
[ -z "${SAN:-}" ] || S=8 G=10
DT="$BUILD/bin/dttrain --model mlp:64,128,10 --batch 16 --steps $S --eval-every 0 --json"
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
# ZeRO-1 is DDP's allreduce in two halves: the same bits with every
# algorithm auto picks, also on 5 ranks with 7,510 parameters (recursive
# doubling, 30 KB) and on 4 with 9,610 (the ring, blocks of 2,403 and 2,402)
for case in "mlp:64,100,10 5" "mlp:64,128,10 4"; do
    set -- $case
    SMALL="$BUILD/bin/dttrain --model $1 --batch 16 --steps $S --eval-every 0 --json --ranks $2"
    want=$(hash_of $SMALL)
    got=$(hash_of $SMALL --shard-optimizer)
    if [ -n "$want" ] && [ "$got" = "$want" ]; then
        pass=$((pass + 1))
    else
        echo "FAIL: dttrain --model $1 --ranks $2 --shard-optimizer: parameters $got, the allreduce gives $want"
        fail=$((fail + 1))
    fi
done
# FSDP (chapter 09): gathering, prefetching and resharding move the same
# numbers; every variant and backend gives the same parameters
for k in 2 3; do
    want=$(hash_of $DT --ranks $k --fsdp)
    [ -n "$want" ] || { echo "FAIL: dttrain --ranks $k --fsdp printed no params_hash"; fail=$((fail + 1)); continue; }
    for extra in "--no-prefetch" "--no-reshard" "--backend proc" "--backend proc --no-prefetch --no-reshard"; do
        # shellcheck disable=SC2086
        got=$(hash_of $DT --ranks $k --fsdp $extra)
        if [ "$got" = "$want" ]; then
            pass=$((pass + 1))
        else
            echo "FAIL: dttrain --ranks $k --fsdp $extra: parameters $got, --fsdp on threads gives $want"
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

# one rank: which update and layout ran, by default and when asked
ONE="$BUILD/bin/dttrain --model mlp:64,128,10 --batch 16 --steps $S --eval-every 0 --json"
str_of() { sed -n "s/.*\"$1\": \"\([a-z_]*\)\".*/\1/p"; }
num_of() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p"; }
while read -r update layout args; do
    # shellcheck disable=SC2086
    j=$($ONE $args)
    got="$(echo "$j" | str_of update) $(echo "$j" | str_of layout)"
    if [ "$got" = "$update $layout" ]; then
        pass=$((pass + 1))
    else
        echo "FAIL: dttrain$args: ran \"$got\", expected \"$update $layout\""
        fail=$((fail + 1))
    fi
done <<'CASES'
fused_sgd feature_major --momentum 0
sgd feature_major --momentum 0 --no-fuse
sgd batch_major --momentum 0 --reference
sgd feature_major
adamw feature_major --optim adamw --lr 0.005
CASES
# the fast path and the reference train alike: the same final loss to 1e-4
fast=$($ONE --momentum 0 | num_of final_loss)
ref=$($ONE --momentum 0 --reference | num_of final_loss)
if [ -n "$fast" ] && awk -v a="$fast" -v b="$ref" 'BEGIN { d = a - b; exit !(d < 1e-4 * b && -d < 1e-4 * b) }'; then
    pass=$((pass + 1))
else
    echo "FAIL: final loss $fast on the fast path (fused SGD, feature-major), $ref on the reference"
    fail=$((fail + 1))
fi
# --tp and --pp (chapters 06, 07, 13): a GPT on DP x TP x PP ranks trains
# like one rank on the global batch (final loss within 1e-5, relative),
# whatever the schedule and backend; an MLP's pipeline with ZB-H1's W steps
# too; and the JSON names the layout
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(a != "" && d <= 1e-5 * b && -d <= 1e-5 * b) }'; }
GPT="$BUILD/bin/dttrain --model gpt:32,8,2,4,32 --data synthetic --micro-batches 4 --steps $G --eval-every 0 --json"
one=$($GPT --batch 8 | num_of final_loss)
one2=$($GPT --batch 16 | num_of final_loss)
while read -r want args; do
    # shellcheck disable=SC2086
    got=$($GPT $args | num_of final_loss)
    w=$([ "$want" = one ] && echo "$one" || echo "$one2")
    if close "$got" "$w"; then
        pass=$((pass + 1))
    else
        echo "FAIL: dttrain (GPT) $args: final loss \"$got\", one rank on the global batch $w"
        fail=$((fail + 1))
    fi
done <<'CASES'
one --batch 8 --tp 2
one --batch 8 --pp 2
one --batch 8 --tp 2 --pp 2
one --batch 8 --tp 2 --pp 2 --schedule interleaved
one --batch 8 --tp 2 --pp 2 --schedule gpipe --backend proc
one2 --batch 8 --ranks 8 --tp 2 --pp 2
one2 --batch 8 --ranks 4 --tp 2 --shard-optimizer
CASES
MLP="$BUILD/bin/dttrain --model mlp:64,128,64,10 --micro-batches 4 --batch 16 --steps $S --eval-every 0 --json"
want=$($MLP --no-fuse | num_of final_loss)
got=$($MLP --pp 3 --schedule zbh1 | num_of final_loss)
if close "$got" "$want"; then
    pass=$((pass + 1))
else
    echo "FAIL: dttrain (MLP) --pp 3 --schedule zbh1: final loss \"$got\", one rank $want"
    fail=$((fail + 1))
fi
j=$($GPT --batch 8 --ranks 8 --tp 2 --pp 2 --schedule interleaved --vpp 2)
layout=$(echo "$j" | sed -n 's/.*"dp": \([0-9]*\), "tp": \([0-9]*\), "pp": \([0-9]*\), "vpp": \([0-9]*\), "schedule": "\([a-z0-9]*\)".*/\1 \2 \3 \4 \5/p')
tpb=$(echo "$j" | num_of tp_bytes_per_step)
if [ "$layout" = "2 2 2 2 interleaved" ] && [ -n "$tpb" ] && awk -v b="$tpb" 'BEGIN { exit !(b > 0) }'; then
    pass=$((pass + 1))
else
    echo "FAIL: dttrain --ranks 8 --tp 2 --pp 2 --schedule interleaved: JSON layout \"$layout\", TP bytes \"$tpb\""
    fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
