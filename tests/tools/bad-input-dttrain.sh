#!/usr/bin/env bash
# bad-input-dttrain.sh - dttrain refuses every bad option with exit status
# 2 and a message that names the option and the value (run by
# check-dttrain.sh). One case a row:
#     expected exit status | text the message must contain | arguments
#   tests/tools/bad-input-dttrain.sh BUILD
set -uo pipefail
BUILD=${1:-build}
DT="$BUILD/bin/dttrain"
fail=0
pass=0
while IFS='|' read -r want text args; do
    want=$(echo "$want" | tr -d ' ')
    [ -z "$want" ] && continue
    case "$want" in \#*) continue ;; esac
    text=$(echo "$text" | sed 's/^ *//; s/ *$//')
    # shellcheck disable=SC2086
    out=$(timeout 20 $DT $args 2>&1 </dev/null)
    got=$?
    if [ "$got" = "$want" ] && grep -qF -- "$text" <<<"$out"; then
        pass=$((pass + 1))
    else
        echo "FAIL: dttrain$args: exit $got (expected $want), output: $out (expected to contain: $text)"
        fail=$((fail + 1))
    fi
done <<'TABLE'
# status | message contains                           | arguments
2 | unknown option '--bogus'                           | --bogus
2 | --batch needs a value                              | --batch
2 | --batch '0': expected a whole number from 1 to     | --batch 0
2 | --batch '2.5': expected a whole number             | --batch 2.5
2 | --batch '64k': expected a whole number             | --batch 64k
2 | --micro-batches '0': expected a whole number       | --micro-batches 0
2 | --micro-batches 3 does not divide --batch 32       | --micro-batches 3
2 | --steps '-5': expected a whole number              | --steps -5
2 | --steps '1e3': expected a whole number             | --steps 1e3
2 | --epochs '0': expected a whole number              | --epochs 0
2 | --eval-every 'x': expected a whole number          | --eval-every x
2 | --threads '0': expected a whole number             | --threads 0
2 | --ranks '0': expected a whole number from 1 to     | --ranks 0
2 | --ranks '100000': expected a whole number          | --ranks 100000
2 | --seed '-1': expected a whole number               | --seed -1
2 | --lr '0': expected a number in (0,                 | --lr 0
2 | --lr 'abc': expected a number                      | --lr abc
2 | --lr 'inf': expected a number                      | --lr inf
2 | --momentum '1': expected a number in [0, 1)        | --momentum 1
2 | --momentum '-0.1': expected a number               | --momentum -0.1
2 | --weight-decay 'nan': expected a number            | --weight-decay nan
2 | --time-budget '-1': expected a number              | --time-budget -1
2 | --model cnn:3: model spec 'cnn:3': unknown kind    | --model cnn:3
2 | model spec 'mlp:64,0,10': bad number at '0,10'   | --model mlp:64,0,10
2 | 8 channels do not split into 3 heads              | --model gpt:5,4,1,3,8
2 | --data 'faces': expected one of digits, synthetic, spirals | --data faces
2 | --data digits: a GPT                               | --model gpt:16,8,1,2,16
2 | --optim 'adam': expected one of sgd, adamw         | --optim adam
2 | --backend 'mpi': not available outside an MPI job  | --backend mpi
2 | --net 'wifi': unknown network preset 'wifi'        | --net wifi
2 | --dump x.bin: one rank                             | --dump x.bin --ranks 2
2 | --time-budget 5: one rank only                     | --time-budget 5 --ranks 2
2 | --ranks 1: --showcase compares 1 rank with 2 or more | --showcase --ranks 1
2 | --tp '0': expected a whole number from 1 to 1024 | --tp 0
2 | --pp '65': expected a whole number from 1 to 64 | --pp 65
2 | --tp 2: tensor parallelism splits a GPT's heads   | --tp 2
2 | --tp 3: the GPT's 4 heads do not split over 3     | --model gpt:32,8,2,4,32 --data synthetic --tp 3
2 | --tp 4: the GPT's 30 vocabulary entries do not split | --model gpt:30,8,2,4,32 --data synthetic --tp 4
2 | --ranks 6: not a multiple of --tp 2 x --pp 2      | --model gpt:32,8,2,4,32 --data synthetic --tp 2 --pp 2 --ranks 6
2 | --pp 5: 5 stages of a 4-layer model               | --model gpt:32,8,2,4,32 --data synthetic --pp 5
2 | --pp 2 --vpp: 6 stages of a 4-layer model         | --model gpt:32,8,2,4,32 --data synthetic --pp 2 --schedule interleaved --vpp 3 --micro-batches 2
2 | --schedule: goes with --pp                        | --schedule gpipe
2 | --schedule: goes with --pp                        | --model gpt:32,8,2,4,32 --data synthetic --tp 2 --schedule gpipe
2 | --vpp: goes with --pp                             | --vpp 2
2 | --vpp 2: goes with --schedule interleaved         | --pp 2 --vpp 2
2 | --vpp 1: the interleaved schedule runs 2 or more  | --pp 2 --schedule interleaved --vpp 1
2 | --schedule '1f1f': expected one of gpipe, 1f1b, interleaved, zbh1 | --pp 2 --schedule 1f1f
2 | --micro-batches 1: the interleaved schedule needs a multiple of --pp 2 | --pp 2 --schedule interleaved
2 | --schedule zbh1: its split backward (W steps) runs stages of linear layers | --model gpt:32,8,2,4,32 --data synthetic --pp 2 --schedule zbh1
2 | --shard-optimizer: not with --tp or --pp          | --pp 2 --shard-optimizer
2 | --fsdp: not with --tp or --pp                     | --pp 2 --fsdp
2 | --showcase: not with --tp or --pp                 | --pp 2 --showcase
2 | --fsdp: needs --ranks                              | --fsdp
2 | --fsdp: shards the optimizer already               | --fsdp --ranks 2 --shard-optimizer
2 | --fsdp: one micro-batch a step                     | --fsdp --ranks 2 --micro-batches 2
2 | --no-prefetch: goes with --fsdp                    | --no-prefetch --ranks 2
2 | --no-reshard: goes with --fsdp                     | --no-reshard --ranks 2
2 | --backend 'gpu': unknown backend                   | --backend gpu
2 | --dump '/nonexistent-dtlab/x.bin': no folder       | --dump /nonexistent-dtlab/x.bin
2 | --json takes no value                              | --json=1
0 | --model SPEC                                       | --help
TABLE
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
