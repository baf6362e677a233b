#!/bin/bash
# bench/comm.sh - the communicator against OpenMPI, side by side in one run.
#
#   bench/comm.sh [REPS]        (default 5; BUILD=build/bench by default)
#
# Builds dtbench and dtrun, compiles bench/mpi_allreduce.c with mpicc, then
# runs each case REPS times, alternating dtbench and OpenMPI (mpirun
# --oversubscribe) so that both see the same machine load, and prints the
# median of each as a Markdown table (paste it into BENCHMARKS.md):
#   - allreduce f32 busbw at 64 MiB (N = 2, 4; thread and proc backends),
#     at 4 MiB (N = 2), latency at 4 bytes (N = 2)
#   - barrier time, N = 2 and N = 8
#   - start-up: dt_launch of 8 thread ranks, dtrun -n 8 and mpirun -np 8 of
#     a trivial program (/bin/true)
# Every dtbench and mpi_allreduce run also checks its results (#wrong = 0).
# libdt's mpi backend against OpenMPI: bench/mpi.sh (make bench-mpi).
set -eu

REPS=${1:-5}
BUILD=${BUILD:-build/bench}
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
command -v mpicc >/dev/null || { echo "bench/comm.sh: skipped: mpicc not found (make deps installs OpenMPI)"; exit 0; }

make -s BUILD="$BUILD" "$BUILD/bin/dtbench" "$BUILD/bin/dtrun" "$BUILD/bench/mpi_allreduce" >/dev/null
DTBENCH="$BUILD/bin/dtbench"
MPIB="$BUILD/bench/mpi_allreduce"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int((NR+1)/2)]}'; }

# field COL of the data row of a CSV output (column 4: time_us, 6: busbw)
field() { awk -F, -v c="$1" 'NR > 1 && $1 ~ /^[0-9]+$/ {print $c; exit}'; }

wrong() { awk -F, 'NR > 1 && $7 != 0 && $7 != "" {bad=1} END {exit bad}'; }

# run_case NAME SIZE N ITERS WARMUP COLUMN BACKEND
run_case() {
    name=$1 size=$2 n=$3 iters=$4 warmup=$5 col=$6 backend=$7
    coll=allreduce
    [ "$size" = 0 ] && coll=barrier
    : >"$TMP/dt" ; : >"$TMP/mpi"
    for i in $(seq "$REPS"); do
        "$DTBENCH" $coll -b "$size" -e "$size" -n "$n" --backend "$backend" --iters "$iters" \
            --warmup "$warmup" --csv >"$TMP/out"
        wrong <"$TMP/out" || { echo "dtbench: wrong results in $name" >&2; exit 1; }
        field "$col" <"$TMP/out" >>"$TMP/dt"
        $MPIRUN -np "$n" "$MPIB" $coll -b "$size" -e "$size" --iters "$iters" \
            --warmup "$warmup" >"$TMP/out" 2>/dev/null
        wrong <"$TMP/out" || { echo "OpenMPI: wrong results in $name" >&2; exit 1; }
        field "$col" <"$TMP/out" >>"$TMP/mpi"
    done
    dt=$(median <"$TMP/dt")
    mp=$(median <"$TMP/mpi")
    ratio=$(awk -v a="$dt" -v b="$mp" -v c="$col" 'BEGIN {
        if (c == 6) printf "%.2fx", a / b; else printf "%.2fx", b / a }')
    echo "| $name | $dt | $mp | $ratio |"
}

# start-up times in ms: median of REPS runs (bash's clock: no process to
# read the time, so only the launcher itself is measured)
time_ms() {
    : >"$TMP/t"
    for i in $(seq "$REPS"); do
        t0=$EPOCHREALTIME
        "$@" >/dev/null 2>&1
        t1=$EPOCHREALTIME
        awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", (b - a) * 1000}' >>"$TMP/t"
    done
    median <"$TMP/t"
}

echo "Run: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "$REPS runs per case, medians; OpenMPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}')"
echo
echo "| case | dtbench | OpenMPI | ours / OpenMPI (higher is better) |"
echo "|---|---|---|---|"
run_case "allreduce busbw GB/s, 64 MiB, N=2, thread" 64M 2 10 3 6 thread
run_case "allreduce busbw GB/s, 64 MiB, N=2, proc" 64M 2 10 3 6 proc
run_case "allreduce busbw GB/s, 64 MiB, N=4, thread" 64M 4 5 2 6 thread
run_case "allreduce busbw GB/s, 4 MiB, N=2, thread" 4M 2 50 10 6 thread
run_case "allreduce time us, 4 bytes, N=2, thread" 4 2 20000 1000 4 thread
run_case "barrier time us, N=2, thread" 0 2 20000 1000 4 thread
run_case "barrier time us, N=8, thread" 0 8 5000 500 4 thread

launch=$("$DTBENCH" launch -n 8 --iters 20 --csv | awk -F, 'NR == 2 {print $3}')
dtrun=$(time_ms "$BUILD/bin/dtrun" -n 8 /bin/true)
mpi=$(time_ms $MPIRUN -np 8 /bin/true)
echo "| start-up ms: dt_launch 8 threads / dtrun -n 8 /bin/true | $launch / $dtrun | $mpi (mpirun -np 8 /bin/true) |" \
     "$(awk -v a="$launch" -v b="$dtrun" -v m="$mpi" 'BEGIN {printf "%.0fx / %.0fx", m / a, m / b}') |"
