#!/bin/bash
# bench/netns.sh - libdt over MPI between "two machines": two network
# namespaces joined by a veth pair, Open MPI's TCP transport
# (tests/mpi/netns.sh). Prints, as a Markdown table, the link's own TCP
# throughput (one stream), and the allreduce busbw of libdt's mpi backend
# and of MPI_Allreduce at 64 MiB and 1 MiB on 2 ranks, medians of REPS.
#
#   bench/netns.sh [REPS]     (default 3; needs root for the namespaces)
set -eu
REPS=${1:-3}
BUILD=${BUILD:-build/bench}
command -v mpicc >/dev/null || { echo "bench/netns.sh: skipped: mpicc not found"; exit 0; }
make -s BUILD="$BUILD" "$BUILD/bin/dtbench" >/dev/null
mkdir -p "$BUILD/bench"
mpicc -O2 -o "$BUILD/bench/mpi_allreduce" bench/mpi_allreduce.c
NS=tests/mpi/netns.sh
probe=$($NS tcp 64)
case "$probe" in *skipped*) echo "bench/netns.sh: $probe"; exit 0 ;; esac

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int((NR+1)/2)]}'; }
busbw() { awk -F, 'NR > 1 && $1 ~ /^[0-9]+$/ {print $6; exit}'; }

tcp=$(for i in $(seq "$REPS"); do $NS tcp 1024; done | median)
echo "Run: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $REPS runs per case, medians"
echo
echo "| case (2 ranks, one per namespace, TCP) | libdt mpi backend | MPI_Allreduce | link (TCP, one stream) |"
echo "|---|---|---|---|"
for size in 64M 1M; do
    iters=$([ "$size" = 64M ] && echo 5 || echo 50)
    dt=$(for i in $(seq "$REPS"); do
        $NS run "$BUILD/bin/dtbench" allreduce -b "$size" -e "$size" -n 2 --backend mpi \
            --iters "$iters" --warmup 2 --csv 2>/dev/null | busbw; done | median)
    mpi=$(for i in $(seq "$REPS"); do
        $NS run "$BUILD/bench/mpi_allreduce" allreduce -b "$size" -e "$size" --iters "$iters" \
            --warmup 2 2>/dev/null | busbw; done | median)
    echo "| allreduce busbw GB/s, $size | $dt | $mpi | $tcp |"
done
