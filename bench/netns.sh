#!/bin/bash
# netns.sh - libdt over MPI between "two machines": two network namespaces
# joined by a veth pair, Open MPI's TCP transport between them, shared
# memory off (tests/mpi/netns.sh, which makes them and removes them).
#
# Each round measures the link itself, the TCP throughput of one stream
# from one namespace to the other (tests/mpi/netns.sh tcp: 1 GiB), and
# MPI's own bandwidth over it each way while both ways carry 64 MiB
# (bench/mpi_allreduce exchange: one MPI_Sendrecv), then, at
# 64 KiB, 1 MiB and 64 MiB on 2 ranks (one per namespace), one after
# another: allreduce busbw of libdt's mpi backend (dtbench), of
# MPI_Allreduce, and of libdt's ring written with MPI_Sendrecv
# (bench/mpi_allreduce --algo ring). A ring allreduce on 2 ranks sends S
# bytes each way over the link (S/2 in each of its two phases), so its
# busbw (= S / t for N = 2) is bounded by what the link carries each way
# while both ways are busy: the last column is busbw over the one-stream
# figure, a reference rather than a bound (one stream may be limited by
# its one receiving process; here both "machines" share the same cores).
# Medians over rounds; ratios are the medians (ranges) of the per-round
# ratios.
#
# No rank is bound to a core (--bind-to none, DT_BIND=0): in each
# namespace mpirun's default would bind its one rank to core 0, both
# ranks on one core of this machine; two machines have a core each.
#
#   make bench-netns              ROUNDS=3 rounds; needs root for the namespaces
#   ROUNDS=5 bash bench/netns.sh  BUILD=... picks the build folder; SIZES="1M"
#                                 other sizes
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 3 1
SIZES=$(bench_sizes "64K 1M 64M") || exit 2
bench_need_mpi bench/netns.sh
NS=tests/mpi/netns.sh
probe=$($NS tcp 16) || { echo "bench/netns.sh: the namespaces' TCP probe failed: $probe" >&2; exit 1; }
case "$probe" in *skipped*) echo "bench/netns.sh: ${probe#test-mpi-netns: }"; exit 0 ;; esac
BENCH_MPI_LAUNCH="$NS run --bind-to none -x DT_BIND=0"

iters() { # timed calls and warm-up ones at SIZE over TCP
    local b
    b=$(bench_bytes "$1")
    if [ "$b" -le 262144 ]; then echo "200 20"
    elif [ "$b" -le 4194304 ]; then echo "50 5"
    else echo "5 2"; fi
}

round() {
    local s it wu
    bench_m link "$NS" tcp 1024
    bench_m xchg bench_mpi 64M 2 5 2 6 exchange
    for s in $SIZES; do
        read -r it wu <<<"$(iters "$s")"
        bench_m "$s.dt" bench_dtbench "$s" 2 mpi "$it" "$wu" 6
        bench_m "$s.mpi" bench_mpi "$s" 2 "$it" "$wu" 6
        bench_m "$s.alg" bench_mpi "$s" 2 "$it" "$wu" 6 --algo ring
    done
}

bench_rounds # its series in V (bench/lib.sh)

spread() { # NAME: "median (range over rounds)" of a series
    printf "%.2f (%s)" "$(bench_smed "$1")" "$(echo "${V[$1]}" | tr ' ' '\n' | grep . | bench_range)"
}
echo
echo "**Run**: $(date -u '+%Y-%m-%d %H:%M UTC'); \`ROUNDS=$ROUNDS SIZES=\"$SIZES\" bash bench/netns.sh\`;" \
     "OpenMPI $(mpirun --version 2>/dev/null | head -n 1 | awk '{ print $NF }') over TCP" \
     "(\`--mca btl tcp,self\`) between two network namespaces joined by a veth pair, one rank" \
     "in each, no binding; load average $BENCH_LOAD before, $(cut -d' ' -f1-3 /proc/loadavg)" \
     "after. The link: one TCP stream one way $(spread link) GB/s; MPI_Sendrecv of 64 MiB" \
     "both ways at once $(spread xchg) GB/s each way. busbw in GB/s, medians over rounds;" \
     "every result checked exact."
echo
echo "| allreduce f32, 2 ranks over TCP | libdt over MPI | MPI_Allreduce | libdt / MPI_Allreduce |" \
     "libdt's ring over MPI_Sendrecv | libdt / that | link, one TCP stream | libdt / link |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for s in $SIZES; do
    printf "| busbw, %s | %.3f | %.3f | %s | %.3f | %s | %.2f | %s |\n" \
        "$(echo "$s" | sed 's/K$/ KiB/; s/M$/ MiB/; s/[0-9]$/& B/')" "$(bench_smed "$s.dt")" \
        "$(bench_smed "$s.mpi")" "$(bench_sratio "$s.dt" "$s.mpi")" "$(bench_smed "$s.alg")" \
        "$(bench_sratio "$s.dt" "$s.alg")" "$(bench_smed link)" "$(bench_sratio "$s.dt" link)"
done
