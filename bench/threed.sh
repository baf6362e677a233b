#!/bin/bash
# threed.sh - chapter 13's table: lib/sim's planner (dtsim) against the
# emulator's modeled clock for every layout of 8 ranks of the tiny GPT on
# two nodes of 4, with the step's wall time beside it (bench/threed.c says
# how the two are set alike).
#
#   bash bench/threed.sh            (make bench-threed)
#   ROUNDS=11 bash bench/threed.sh
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 5 1
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/threed" || exit 1
# the cores online: not nproc, which counts OMP_NUM_THREADS (1 here)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(getconf _NPROCESSORS_ONLN) cores;" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "thread backend, 8 ranks; wall: median of $ROUNDS runs"
echo
"$BUILD/bench/threed" --rounds "$ROUNDS"
