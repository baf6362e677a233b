#!/usr/bin/env bash
# bad-input-dtsim.sh - dtsim's planner and search (chapter 13) refuse bad
# flags with exit status 2 and a message naming the flag, in the words of
# every program's options (dt/cli.h); its network mode's cases are
# bad-input.sh's. Run by `make test` (the "tools" step).
#   tests/tools/bad-input-dtsim.sh BUILD
set -uo pipefail
BUILD=${1:-build}
PATH="$(cd "$BUILD/bin" && pwd):$PATH"
export PATH
WORK=$(mktemp -d)
export WORK
trap 'rm -rf "$WORK"' EXIT

table() {
    cat <<'EOF_TABLE'
# ---- the planner: flags
2 | --cluster is needed                         | dtsim --model gpt3-175b --global-batch 8
2 | --cluster 'dgx': unknown cluster (dgx-a100-40gb, | dtsim --model gpt3-175b --global-batch 8 --cluster dgx
2 | --model 'gpt5': unknown model               | dtsim --model gpt5 --global-batch 8 --cluster laptop
2 | --layers is needed (or --model NAME)        | dtsim --hidden 64 --cluster laptop --global-batch 8
2 | --global-batch is needed                    | dtsim --model gpt3-175b --cluster laptop
2 | --tp 'two': expected a whole number from 1  | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --tp two
2 | --zero '4': expected a whole number from 0 to 3 | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --zero 4
2 | --sp '2': expected a whole number from 0 to 1 | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --sp 2
2 | --recompute 'half': expected one of none, selective, full | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --recompute half
2 | --dtype 'f64': expected one of bf16, fp16, fp32 | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --dtype f64
2 | --schedule 'zb': expected one of 1f1b, gpipe | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --schedule zb
2 | --tp needs a value                          | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --tp
2 | --json takes no value (got '1')             | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --json=1
2 | --json and --explain go one at a time       | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --json --explain
2 | unknown option '--gpus'                     | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --gpus 8
2 | --devices belongs to `dtsim search`         | dtsim --model gpt3-175b --cluster laptop --global-batch 8 --devices 8
# ---- the planner: a layout the model refuses, named by its flags
2 | --tp 5: must divide heads (--heads 96)      | dtsim --model gpt3-175b --cluster dgx-a100-80gb --global-batch 8 --tp 5
2 | --pp 5: must divide layers (--layers 96)    | dtsim --model gpt3-175b --cluster dgx-a100-80gb --global-batch 8 --pp 5
2 | --vpp 2: needs pp > 1                       | dtsim --model gpt3-175b --cluster dgx-a100-80gb --global-batch 8 --vpp 2
2 | --global-batch 10: must be a multiple of dp x micro_batch (--micro-batch 4) | dtsim --model gpt3-175b --cluster dgx-a100-80gb --global-batch 10 --micro-batch 4
2 | --global-batch 12: must give a multiple of pp micro-batches | dtsim --model gpt3-175b --cluster dgx-a100-80gb --global-batch 12 --pp 8 --vpp 2
2 | --heads 7: must divide hidden (--hidden 64) | dtsim --layers 2 --hidden 64 --heads 7 --seq 8 --vocab 10 --cluster laptop --global-batch 8
2 | --vpp 2: must be 1 with the gpipe schedule  | dtsim --model gpt3-175b --cluster dgx-a100-80gb --global-batch 64 --pp 8 --vpp 2 --schedule gpipe
# ---- search
2 | --devices is needed                         | dtsim search --model gpt3-175b --cluster laptop --global-batch 8
2 | --tp is chosen by the search: leave it out  | dtsim search --devices 8 --model gpt3-175b --cluster laptop --global-batch 8 --tp 2
2 | --explain does not apply to `dtsim search`  | dtsim search --devices 8 --model gpt3-175b --cluster laptop --global-batch 8 --explain
2 | --devices '0': expected a whole number from 1 | dtsim search --devices 0 --model gpt3-175b --cluster laptop --global-batch 8
2 | --top '-1': expected a whole number from 0  | dtsim search --devices 8 --model gpt3-175b --cluster laptop --global-batch 8 --top -1
# ---- good runs
0 | clusters: dgx-a100-40gb                   | dtsim --help
0 | --explain                                   | dtsim search --help
0 | total                                       | dtsim --model gpt3-175b --cluster dgx-a100-80gb --global-batch 64 --tp 8 --pp 8 --recompute full
0 | "step_s"                                    | dtsim --layers=2 --hidden=64 --heads=4 --seq=32 --vocab=100 --cluster=laptop --global-batch=8 --json
0 | layouts priced                              | dtsim search --devices 8 --model megatron-22b --cluster dgx-a100-80gb --global-batch 8
EOF_TABLE
}

. "$(dirname "$0")/table.sh"
run_table
