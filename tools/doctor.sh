#!/usr/bin/env bash
# doctor.sh - `make doctor`: a GPU machine's preflight before chapter 15.
# It reports nvcc's, the driver's and NCCL's versions, the visible GPUs and
# the peer access between them, then runs an allreduce through the nccl
# backend on 1 rank and, where there are several GPUs, on all of them.
# Each failure comes with its next step.
#
# Exit status (documented in the README and chapter 15):
#   0   ready: the GPU path runs here
#   1   a failure to fix (the line before the exit says the next step)
#   77  no GPU or no driver here: nothing to run; the suite counts it as a
#       skip (automake's convention), never as a pass
#
#   NVCC=... CUDA_HOME=... GPU_BUILD=build/gpu MAKE=make tools/doctor.sh
set -uo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
GPU_BUILD=${GPU_BUILD:-build/gpu}
MAKE=${MAKE:-make}
SKIP=77

next() { echo "  next step: $*"; }

# ---------------------------------------------------------------- the toolkit
if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "doctor: FAIL: nvcc not found (NVCC=$NVCC)"
    next "install the CUDA toolkit, or say where it is: make doctor NVCC=/path/to/bin/nvcc"
    exit 1
fi
echo "doctor: nvcc: $("$NVCC" --version | grep -m1 -oE 'release [0-9.]+' || echo '?')"
nccl_h="$CUDA_HOME/include/nccl.h"
if [ ! -f "$nccl_h" ] || ! ls "$CUDA_HOME"/lib64/libnccl.so* >/dev/null 2>&1; then
    echo "doctor: FAIL: NCCL not found in $CUDA_HOME (include/nccl.h, lib64/libnccl.so)"
    next "install NCCL (libnccl-dev) into the CUDA prefix, or CUDA_HOME=/its/prefix make doctor"
    exit 1
fi
echo "doctor: NCCL header: $(awk '/#define NCCL_(MAJOR|MINOR|PATCH) / { v = v (v ? "." : "") $3 } END { print v }' "$nccl_h")"

# ---------------------------------------------------------------- the driver
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "doctor: driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
else
    echo "doctor: no NVIDIA driver answers here (nvidia-smi missing or failing)"
fi

# ---------------------------------------------------------------- the build
if ! $MAKE --no-print-directory gpu >"$GPU_BUILD.doctor.log" 2>&1 || [ ! -x "$GPU_BUILD/bin/dtdoctor" ]; then
    tail -n 20 "$GPU_BUILD.doctor.log"
    echo "doctor: FAIL: make gpu did not build $GPU_BUILD/bin/dtdoctor (log: $GPU_BUILD.doctor.log)"
    next "read the compiler's message above; a driver or toolkit mismatch shows as link errors"
    exit 1
fi

# ---------------------------------------------------------------- the GPUs
# dtdoctor first reports versions and devices (it exits 77 without a GPU),
# then, in a process of its own that has not touched CUDA, the allreduce
# (the nccl backend forks its ranks: a child cannot use its parent's CUDA).
out=$("$GPU_BUILD/bin/dtdoctor")
rc=$?
echo "$out"
[ $rc -eq $SKIP ] && { echo "doctor: skipped: no GPU here (exit $SKIP)"; exit $SKIP; }
[ $rc -ne 0 ] && exit 1
gpus=$(echo "$out" | awk '/^doctor: gpus / { print $3 }')
"$GPU_BUILD/bin/dtdoctor" --allreduce 1 || exit 1
if [ "${gpus:-0}" -gt 1 ]; then
    "$GPU_BUILD/bin/dtdoctor" --allreduce "$gpus" || exit 1
else
    echo "doctor: one GPU only: no N-rank allreduce across GPUs (NCCL refuses two ranks of"
    echo "  one communicator on one GPU); bench/gpu-check.sh runs 2 and 4 ranks on it through"
    echo "  the NCCL_HOSTID route, for correctness only"
fi
echo "doctor: ready"
