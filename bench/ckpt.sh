#!/bin/bash
# ckpt.sh - a sharded checkpoint's write and read bandwidth against the
# disk's own, measured in the same run, the snapshot that an asynchronous
# save stops training for, and the stall an asynchronous save adds to a
# training loop against a synchronous save's (chapter 14, sections 5 and
# 7; bench/ckpt.c says what each figure is). The disk is DIR's (default
# the build folder). Quote figures only from a quiet machine (the load
# average is printed before and after): other jobs' writes share the
# disk, and their CPU time the cores the background persist needs.
#
#   bash bench/ckpt.sh                (make bench-ckpt)
#   ROUNDS=9 MIB=1024 RANKS=8 DIR=/mnt/fast bash bench/ckpt.sh
#   GEMM=512 EVERY=80 SAVES=3 bash bench/ckpt.sh     (the training loop)
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 5 1
MIB=${MIB:-256}
RANKS=${RANKS:-4}
GEMM=${GEMM:-1024}
EVERY=${EVERY:-40}
SAVES=${SAVES:-3}
DIR=${DIR:-$BUILD}
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/ckpt" "$BUILD/bench/machine" || exit 1
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(getconf _NPROCESSORS_ONLN) cores;" \
    "$("$BUILD/bench/machine" | bench_key summary | sed 's/; CPU.*//');" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "disk: $(df -h "$DIR" | awk 'NR == 2 {print $1 ", " $2}')"
"$BUILD/bench/ckpt" --dir "$DIR" --mib "$MIB" --ranks "$RANKS" --rounds "$ROUNDS" \
    --gemm "$GEMM" --every "$EVERY" --saves "$SAVES" || exit 1
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
