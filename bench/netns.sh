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
# busbw (= S / t for N = 2) is at most the link's one-way bandwidth: the
# last column is busbw over the link. Medians over rounds; ratios are the
# medians (ranges) of the per-round ratios.
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
export DT_QUIET=1
die() { echo "bench/netns.sh: $*" >&2; exit 1; }
SIZES=$(bench_list SIZES '^[1-9][0-9]*[KM]?$' "64K 1M 64M" "a size in bytes (K, M suffixes)") ||
    exit 2
command -v mpicc >/dev/null ||
    { echo "bench/netns.sh: skipped: mpicc not found (make deps installs OpenMPI)"; exit 0; }
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bin/dtbench" "$BUILD/bench/mpi_allreduce" ||
    die "the build failed"
bench_dtbench 4 1 mpi 1 0 4 >/dev/null 2>&1 ||
    { echo "bench/netns.sh: skipped: dtbench was built without the mpi backend (MPI=0 or SAN)"; exit 0; }
NS=tests/mpi/netns.sh
probe=$($NS tcp 16) || die "the namespaces' TCP probe failed: $probe"
case "$probe" in *skipped*) echo "bench/netns.sh: ${probe#test-mpi-netns: }"; exit 0 ;; esac
BENCH_MPI_LAUNCH="$NS run --bind-to none -x DT_BIND=0"

iters() { # timed calls and warm-up ones at SIZE over TCP
    local b
    b=$(bench_bytes "$1")
    if [ "$b" -le 262144 ]; then echo "200 20"
    elif [ "$b" -le 4194304 ]; then echo "50 5"
    else echo "5 2"; fi
}

declare -A V
add() { V[$1]="${V[$1]:-} $2"; }
m() {
    local name=$1 v
    shift
    v=$("$@") && [ -n "$v" ] || exit 1
    add "$name" "$v"
}

round() {
    local s it wu
    m link "$NS" tcp 1024
    m xchg bench_mpi 64M 2 5 2 6 exchange
    for s in $SIZES; do
        read -r it wu <<<"$(iters "$s")"
        m "$s.dt" bench_dtbench "$s" 2 mpi "$it" "$wu" 6
        m "$s.mpi" bench_mpi "$s" 2 "$it" "$wu" 6
        m "$s.alg" bench_mpi "$s" 2 "$it" "$wu" 6 --algo ring
    done
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
    t0=$EPOCHSECONDS
    round
    echo "round $r of $ROUNDS: $((EPOCHSECONDS - t0)) s" >&2
done

med() { bench_med ${V[$1]:-}; } # shellcheck disable=SC2086
ratio() {
    local r
    r=$(bench_ratios "${V[$1]}" "${V[$2]}")
    printf "%.2fx (%s)" "$(echo "$r" | bench_median)" "$(echo "$r" | bench_range)"
}

echo
echo "**Run**: $(date -u '+%Y-%m-%d %H:%M UTC'); \`ROUNDS=$ROUNDS SIZES=\"$SIZES\" bash bench/netns.sh\`;" \
     "OpenMPI $(mpirun --version 2>/dev/null | head -n 1 | awk '{ print $NF }') over TCP" \
     "(\`--mca btl tcp,self\`) between two network namespaces joined by a veth pair, one rank" \
     "in each, no binding; load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg)" \
     "after. The link: one TCP stream one way $(printf %.2f "$(med link)") GB/s (median; $(echo "${V[link]}" |
     tr ' ' '\n' | grep . | bench_range) over rounds); MPI_Sendrecv of 64 MiB both ways at" \
     "once $(printf %.2f "$(med xchg)") GB/s each way ($(echo "${V[xchg]}" | tr ' ' '\n' | grep . | bench_range))." \
     "busbw in GB/s, medians over rounds;" \
     "every result checked exact."
echo
echo "| allreduce f32, 2 ranks over TCP | libdt over MPI | MPI_Allreduce | libdt / MPI_Allreduce |" \
     "libdt's ring over MPI_Sendrecv | libdt / that | link, one TCP stream | libdt / link |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for s in $SIZES; do
    printf "| busbw, %s | %.3f | %.3f | %s | %.3f | %s | %.2f | %s |\n" \
        "$(echo "$s" | sed 's/K$/ KiB/; s/M$/ MiB/; s/[0-9]$/& B/')" "$(med "$s.dt")" "$(med "$s.mpi")" \
        "$(ratio "$s.dt" "$s.mpi")" "$(med "$s.alg")" "$(ratio "$s.dt" "$s.alg")" \
        "$(med link)" "$(ratio "$s.dt" link)"
done
