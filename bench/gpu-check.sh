#!/usr/bin/env bash
# gpu-check.sh - the GPU path checked end to end on a GPU machine, in under
# 5 minutes on one GPU; its logs go to LOGDIR (default build/gpu-check):
#
#   build      make (the CPU build) and make gpu (libdt with nccl, the
#              kernels, their tests, the GPU benchmarks)
#   doctor     tools/doctor.sh: versions, GPUs, peer access, allreduce
#   kernels    each CUDA kernel and the MLP step against the CPU library
#   nccl-1     the nccl backend on 1 rank through every collective, p2p,
#              async, split
#   nccl-2/4   the same on 2 and 4 ranks on ONE GPU through the NCCL_HOSTID
#              route (each rank its own "host": P2P and SHM off, sockets on
#              loopback): exact results, speed meaningless
#   capstone   the graded tests of chapters 03, 07 and 08 with BACKEND=nccl,
#              unchanged (host buffers staged; NCCL_HOSTID route on one GPU),
#              and the capstone lab's tests (labs/15-capstone-gpu): the host
#              device's as in the CPU build, and its GPU tests (gpu_*: the
#              solution's same code with the task bodies on device buffers,
#              DDP, ZeRO-1 and the tensor-parallel MLP against the host's, on
#              1 and, through the NCCL_HOSTID route, 2 ranks)
#   allreduce  dt_allreduce on the nccl backend beside a raw ncclAllReduce
#              loop, nccl-tests' table each, device buffers (bench/gpu_allreduce.c);
#              and dtbench --backend nccl, host buffers staged through the GPU
#   mlp        the GPU MLP step beside PyTorch's (bench/gpu_mlp_step.c,
#              bench/gpu_mlp_torch.py); target: at most 1.2x PyTorch's time
#   gpt        the tiny GPT's GPU step beside PyTorch's same model
#              (bench/gpu_gpt_step.c, bench/gpu_gpt_torch.py): their
#              parameter counts must be equal; the ratio has no target
#
# On a machine without a GPU it runs the CPU-side parts (the builds,
# doctor's versions, the GPU tests, which skip but for the ones that check
# the clean refusal) and says what it skipped. Exit 1 when a part failed.
#
#   bash bench/gpu-check.sh [LOGDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${1:-build/gpu-check}
mkdir -p "$LOG" || { echo "gpu-check: cannot make $LOG" >&2; exit 2; }
GPU_BUILD=${GPU_BUILD:-build/gpu}
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
export DT_QUIET=1
t_start=$SECONDS
failed=()
skipped=()
part() { echo "==== gpu-check: $1 ($((SECONDS - t_start)) s)"; }
# run NAME COMMAND...: its output to LOG/NAME.log and the screen's tail
run() {
    local name=$1 rc
    shift
    "$@" >"$LOG/$name.log" 2>&1
    rc=$?
    tail -n 15 "$LOG/$name.log"
    [ $rc -eq 0 ] || failed+=("$name (exit $rc, $LOG/$name.log)")
    return $rc
}
grade() { # name dtgrade-args...: the GPU tests, no test failed
    local name=$1
    shift
    run "$name" build/bin/dtgrade --tests-root tests --results "$LOG/$name.json" "$@" \
        "gpu=$GPU_BUILD/tests/gpu/grade"
}

part build
run build-cpu make -j"$JOBS" || { echo "gpu-check: the CPU build failed"; exit 1; }
run build-gpu make -j"$JOBS" gpu
if [ ! -x "$GPU_BUILD/tests/gpu/grade" ]; then
    echo "gpu-check: make gpu built nothing (no nvcc or NCCL: see $LOG/build-gpu.log); nothing more to check"
    exit 1
fi

part doctor
tools/doctor.sh >"$LOG/doctor.log" 2>&1
doctor=$?
cat "$LOG/doctor.log"
gpu=1
case $doctor in
    0) ;;
    77) gpu=0 ;;
    *) failed+=("doctor (exit $doctor)") ;;
esac

part "GPU tests"
if [ $gpu -eq 0 ]; then
    # the CPU side: every GPU test reports itself skipped, the refusal tests pass
    grade gpu-tests-no-gpu
    skipped+=("kernels, nccl 1/2/4 ranks, the lab, the benchmarks (allreduce, mlp, gpt): no GPU here")
else
    grade kernels --only _matches_cpu
    part "nccl backend, 1 rank"
    DT_NCCL_RANKS=1 grade nccl-1 --only gpu_nccl
    for n in 2 4; do
        part "nccl backend, $n ranks on one GPU (NCCL_HOSTID route)"
        DT_NCCL_HOSTID=1 DT_NCCL_RANKS=$n grade "nccl-$n" --only gpu_nccl
    done
    part "the capstone: the graded tests of chapters 03, 07 and 08 on nccl, unchanged"
    # their ranks on one GPU through the NCCL_HOSTID route; host buffers staged
    DT_NCCL_HOSTID=1 run capstone make check BACKEND=nccl GPU=1 BUILD="$GPU_BUILD" \
        IMPL=solutions LAB="03 07 08" DT_RESULTS="$LOG/capstone.json"
    if [ -d tests/15-capstone-gpu ]; then
        DT_NCCL_HOSTID=1 run lab make check LAB=15 IMPL=solutions GPU=1 BUILD="$GPU_BUILD"
    else
        skipped+=("the capstone lab: labs/15-capstone-gpu is not there yet")
    fi
    part "allreduce: dt_allreduce (nccl) beside raw ncclAllReduce, 1 GPU"
    run allreduce-dt "$GPU_BUILD/bench/gpu_allreduce" --impl dt -b 8 -e 256M -f 8 --iters 20
    run allreduce-raw "$GPU_BUILD/bench/gpu_allreduce" --impl raw -b 8 -e 256M -f 8 --iters 20
    # dtbench itself on nccl: host buffers, staged through the GPU (two PCIe
    # copies per call: what a program written for the emulated ranks pays)
    run dtbench-nccl "$GPU_BUILD/bin/dtbench" allreduce --backend nccl -n 1 -b 8 -e 256M -f 8
    part "the MLP step: libdt's GPU step beside PyTorch's"
    run mlp-libdt "$GPU_BUILD/bench/gpu_mlp_step" --widths 784,1024,1024,10 --batch 256 --steps 50
    run mlp-torch python3 bench/gpu_mlp_torch.py --widths 784,1024,1024,10 --batch 256 --steps 50
    # the ratios, from the two tables' time columns and the two medians
    awk 'FNR == 1 { f++ } /^ *[0-9]/ { t[f, $1] = $5; s[$1] = 1 }
         END { print "allreduce time ratio dt/raw per size:"
               for (k in s) if (t[2, k] > 0) printf "  %12d B  %.3f\n", k, t[1, k] / t[2, k] }' \
        "$LOG/allreduce-dt.log" "$LOG/allreduce-raw.log" | sort -n -k1 | tee "$LOG/ratios.txt"
    a=$(grep -oE 'median_ms=[0-9.]+' "$LOG/mlp-libdt.log" | cut -d= -f2)
    b=$(grep -oE 'median_ms=[0-9.]+' "$LOG/mlp-torch.log" | cut -d= -f2)
    [ -n "$a" ] && [ -n "$b" ] &&
        awk -v a="$a" -v b="$b" 'BEGIN { printf "MLP step: libdt %.4f ms, PyTorch %.4f ms, ratio %.3f\n", a, b, a / b }' |
        tee -a "$LOG/ratios.txt"
    part "the GPT step: libdt's GPU step beside PyTorch's same model"
    # small enough for the 5 minutes: 512 tokens, context 128, 4 blocks of
    # 4 heads and 256 channels (about 3.5M parameters), 8 sequences
    gpt=(--config 512,128,4,4,256 --batch 8 --steps 30)
    run gpt-libdt "$GPU_BUILD/bench/gpu_gpt_step" "${gpt[@]}"
    run gpt-torch python3 bench/gpu_gpt_torch.py "${gpt[@]}"
    # the same model on both sides: the parameter counts agree
    pa=$(grep -oE 'params=[0-9]+' "$LOG/gpt-libdt.log" | cut -d= -f2)
    pb=$(grep -oE 'params=[0-9]+' "$LOG/gpt-torch.log" | cut -d= -f2)
    grep -q 'skipped:' "$LOG/gpt-torch.log" &&
        skipped+=("the GPT's PyTorch side: $(grep -m 1 'skipped:' "$LOG/gpt-torch.log")")
    if [ -n "$pa" ] && [ -n "$pb" ] && [ "$pa" != "$pb" ]; then
        echo "gpu-check: the GPT's parameter counts differ: libdt $pa, PyTorch $pb"
        failed+=("gpt-params (libdt $pa, PyTorch $pb: not the same model)")
    fi
    a=$(grep -oE 'median_ms=[0-9.]+' "$LOG/gpt-libdt.log" | cut -d= -f2)
    b=$(grep -oE 'median_ms=[0-9.]+' "$LOG/gpt-torch.log" | cut -d= -f2)
    [ -n "$a" ] && [ -n "$b" ] &&
        awk -v a="$a" -v b="$b" -v p="$pa" 'BEGIN { printf "GPT step (%d parameters): libdt %.4f ms, " \
            "PyTorch %.4f ms, ratio %.3f (no target)\n", p, a, b, a / b }' |
        tee -a "$LOG/ratios.txt"
fi

echo "==== gpu-check: done in $((SECONDS - t_start)) s, logs in $LOG"
for s in "${skipped[@]}"; do echo "gpu-check: skipped: $s"; done
if [ ${#failed[@]} -gt 0 ]; then
    for f in "${failed[@]}"; do echo "gpu-check: FAILED: $f"; done
    exit 1
fi
echo "gpu-check: passed$([ $gpu -eq 0 ] && echo ' (the CPU-side parts only: no GPU here)')"
