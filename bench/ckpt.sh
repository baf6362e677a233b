#!/bin/bash
# ckpt.sh - a sharded checkpoint's write and read bandwidth against the
# disk's own, measured in the same run, and the snapshot that an
# asynchronous save stops training for (chapter 14, sections 5 and 7;
# bench/ckpt.c says what each figure is). The disk is DIR's (default the
# build folder). Quote figures only from a quiet machine (the load average
# is printed before and after): other jobs' writes share the disk.
#
#   bash bench/ckpt.sh                (make bench-ckpt)
#   ROUNDS=9 MIB=1024 RANKS=8 DIR=/mnt/fast bash bench/ckpt.sh
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 5 1
MIB=${MIB:-256}
RANKS=${RANKS:-4}
DIR=${DIR:-$BUILD}
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/ckpt" || exit 1
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "disk: $(df -h "$DIR" | awk 'NR == 2 {print $1 ", " $2}')"
"$BUILD/bench/ckpt" --dir "$DIR" --mib "$MIB" --ranks "$RANKS" --rounds "$ROUNDS" || exit 1
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
