#!/bin/bash
# zero.sh - sharded data parallelism side by side with PyTorch (chapters 08
# and 09): the MLP 784-1024-1024-10, batch 64 per rank, AdamW lr 1e-3, 2
# ranks of one thread each, the same model and batch on both sides:
#   libdt   build/bin/dttrain --ranks 2 --backend proc (one process per rank,
#           as PyTorch) --optim adamw, and:
#             (nothing)           data parallelism, one allreduce per step
#             --shard-optimizer   ZeRO-1: reduce-scatter, AdamW on the shard,
#                                 allgather (lib/train/zero1.c)
#             --fsdp --no-reshard ZeRO-2's memory: each layer gathered in the
#                                 forward and kept to its backward, gradients
#                                 reduce-scattered into the shard (2 psi a step)
#             --fsdp --no-prefetch  ZeRO-3: each layer gathered when it runs,
#                                 freed after (3 psi a step)
#             --fsdp              FSDP: ZeRO-3 with the next layer's all-gather
#                                 started before this one computes
#   PyTorch bench/zero_torch.py (Debian's python3-torch 1.13 under
#           /usr/bin/python3; skipped with a message when absent), gloo, 2
#           processes: DistributedDataParallel with AdamW, and with
#           ZeroRedundancyOptimizer(AdamW), its ZeRO-1. Its FSDP does not run
#           on a CPU in 1.13: the script tries it once and prints why.
# Each configuration runs ROUNDS times, in turns within this one run; a run
# reports the median step time of its STEPS steps (samples/s = 2 x 64 /
# median step), the median CPU time of a rank's step, rank 0's model states
# (parameters, gradients and optimizer state: libdt's memory accounting
# over the training, PyTorch's tensors after the last step) and rank 0's
# peak resident memory (its process: for PyTorch the interpreter and
# libtorch included). Ratios to PyTorch's ZeRO-1 are taken within each
# round and the table gives their median and range over rounds: the machine
# may be shared, and its speed drifts less within a round than across. On
# a busy machine the ratio of CPU time per step (a rank's thread for libdt,
# its process with gloo's threads for PyTorch) is what a quiet machine
# with a core per rank would give.
# Target: libdt at least 1.5x PyTorch's samples/s at equal or lower memory
# per rank. Quote figures only from a quiet machine (the load average is
# printed before and after).
#
#   bash bench/zero.sh                (make bench-zero runs it; BUILD picks the build)
#   ROUNDS=7 STEPS=100 BACKEND=thread bash bench/zero.sh
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 3 60
BACKEND=${BACKEND:-proc}
PY=${PY:-/usr/bin/python3}

make --no-print-directory -s BUILD="$BUILD" "$BUILD/bin/dttrain" "$BUILD/bench/machine" >/dev/null ||
    exit 1
# the same OpenBLAS kernels for libdt and PyTorch (bench/table.sh does the same)
machine=$("$BUILD/bench/machine" 2>/dev/null) || { echo "bench/machine failed" >&2; exit 1; }
if [ "$(echo "$machine" | bench_key blas)" != built-in ]; then
    export OPENBLAS_CORETYPE=$(echo "$machine" | bench_key kernels)
fi
export DT_QUIET=1
DT="$BUILD/bin/dttrain --model mlp:784,1024,1024,10 --data synthetic --batch 64 --steps $STEPS \
    --optim adamw --lr 0.001 --eval-every 0 --json --ranks 2 --backend $BACKEND"
TORCH="$PY bench/zero_torch.py --batch 64 --steps $STEPS --lr 0.001 --ranks 2"

have_torch=1
if ! $PY -c 'import torch, torch.distributed' 2>/dev/null; then
    have_torch=0
    echo "PyTorch: not installed for $PY (apt install python3-torch): libdt alone"
fi

declare -A runs cpus states rss
run() { # name command...: appends samples/s, CPU ms, model states and RSS of rank 0
    local name=$1 j
    shift
    j=$("$@") || { echo "$name: failed: $*"; exit 1; }
    runs[$name]="${runs[$name]:-} $(echo "$j" | bench_json samples_per_s)"
    cpus[$name]="${cpus[$name]:-} $(echo "$j" | bench_json step_cpu_ms_median)"
    states[$name]="${states[$name]:-} $(echo "$j" | bench_json states_peak_bytes)$(echo "$j" | bench_json states_bytes)"
    rss[$name]="${rss[$name]:-} $(echo "$j" | bench_json rss_peak_kb)"
}

names=(dt_ddp dt_zero1 dt_zero2 dt_zero3 dt_fsdp)
labels=("libdt DDP" "libdt ZeRO-1 (--shard-optimizer)" "libdt ZeRO-2 (--fsdp --no-reshard)"
        "libdt ZeRO-3 (--fsdp --no-prefetch)" "libdt FSDP (--fsdp)")
flags=("" "--shard-optimizer" "--fsdp --no-reshard" "--fsdp --no-prefetch" "--fsdp")
if [ $have_torch = 1 ]; then
    names+=(pt_ddp pt_zero1)
    labels+=("PyTorch DDP" "PyTorch DDP + ZeroRedundancyOptimizer")
fi

echo "-- MLP 784-1024-1024-10, batch 64 per rank, AdamW, 2 ranks ($BACKEND backend for libdt),"
echo "   one thread each: $ROUNDS rounds of $STEPS steps"
echo "   (load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
if [ $have_torch = 1 ]; then
    why=$($TORCH --mode fsdp --steps 2 2>/dev/null | sed -n 's/.*"error": "\(.*\)"}/\1/p')
    echo "   PyTorch FSDP (FULL_SHARD) on CPU: ${why:-ran (unexpected for 1.13: add it to the table)}"
fi
for r in $(seq "$ROUNDS"); do
    for i in 0 1 2 3 4; do
        # shellcheck disable=SC2086
        run "${names[$i]}" $DT ${flags[$i]}
    done
    if [ $have_torch = 1 ]; then
        run pt_ddp $TORCH --mode ddp
        run pt_zero1 $TORCH --mode zero1
    fi
    line="round $r:"
    for k in "${names[@]}"; do
        line="$line $k $(echo "${runs[$k]}" | awk '{printf "%.0f", $NF}')"
    done
    echo "$line samples/s"
done

ref=pt_zero1
echo
echo "samples/s, CPU ms/step, model states and peak RSS: medians over rounds; the ratios to"
echo "PyTorch's ZeRO-1 (samples/s over its samples/s; its CPU time per step over this one's):"
echo "the median of each round's ratio (the range of the first after it)"
printf "%-40s %9s %7s %11s %11s %9s %9s %7s\n" "" "samples/s" "ratio" "range" "CPU ms/step" \
    "CPU ratio" "states MB" "RSS MB"
for i in "${!names[@]}"; do
    k=${names[$i]}
    ratio="-" range="-" cratio="-"
    if [ $have_torch = 1 ]; then
        ratio=$(printf "%.2fx" "$(bench_ratios "${runs[$k]}" "${runs[$ref]}" | bench_median)")
        range=$(bench_ratios "${runs[$k]}" "${runs[$ref]}" | bench_range)
        # each rank on a core of its own would step in its CPU time: the ratio a quiet
        # machine would give
        cratio=$(printf "%.2fx" "$(bench_ratios "${cpus[$ref]}" "${cpus[$k]}" | bench_median)")
    fi
    printf "%-40s %9.0f %7s %11s %11.2f %9s %9.2f %7.1f\n" "${labels[$i]}" \
        "$(bench_med ${runs[$k]})" "$ratio" "$range" "$(bench_med ${cpus[$k]})" "$cratio" \
        "$(echo "$(bench_med ${states[$k]}) / 1000000" | bc -l)" \
        "$(echo "$(bench_med ${rss[$k]}) / 1024" | bc -l)"
done
echo "(target: libdt at least 1.5x PyTorch's samples/s at equal or lower memory per rank;"
echo " model states: libdt's PARAM + GRAD + OPTIM peaks over the training, PyTorch's"
echo " parameter, gradient and optimizer-state tensors on rank 0)"
echo "(load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
