#!/bin/bash
# mpi.sh - `make bench-mpi`: the mpi backend (libdt's own algorithms over
# MPI point-to-point messages, lib/comm/mpi/mpi_port.c) against raw MPI at the
# same sizes, and beside libdt's thread and proc backends.
#
# Each round runs, for every case (allreduce f32 sum, out of place, at 4 B,
# 64 KiB, 1 MiB and 64 MiB on N = 2 and 4 ranks), one after another:
#   libdt over MPI     mpirun -np N dtbench --backend mpi
#   MPI_Allreduce      mpirun -np N bench/mpi_allreduce (OpenMPI's choice)
#   thread, proc       dtbench --backend thread|proc -n N (the shortcuts over
#                      shared memory, where AUTO takes them)
# and what bounds libdt over MPI, step by step, in plain MPI
# (bench/mpi_allreduce):
#   --algo tree|ring   the algorithm libdt's AUTO picks on the mpi backend
#                      (recursive doubling up to 32 KiB, the ring above) with
#                      MPI_Sendrecv
#   --thread-multiple  the same, MPI started as libdt must start it
#   --frames           the same, each message in libdt's frames (a header
#                      and the data in one message, above 16 KiB as two
#                      blocks of one datatype, with the receiver's ack)
# and MPI_Allreduce once more with Open MPI's single copy (CMA) off, the
# shared-memory path libdt's two-block messages take.
# It prints two tables, ready to paste: the targets (medians over rounds of
# each one's time, the slowest rank's mean per call; the median and range
# of the per-round ratios libdt / MPI_Allreduce, at 4 B the difference in
# us; issue 18: within 5% at >= 64 KiB, within 1 us at 4 bytes), and the
# steps from MPI_Allreduce to libdt over MPI.
#
#   make bench-mpi                   ROUNDS=5 rounds
#   ROUNDS=9 bash bench/mpi.sh       BUILD=... picks the build folder;
#                                    SIZES="4 64K" RANKS=2 other cases
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 5 1
SIZES=$(bench_sizes "4 64K 1M 64M") || exit 2
RANKS=$(bench_list RANKS '^(2|4|8|16)$' "2 4" "a power of two from 2 to 16 (--algo tree's)") || exit 2
bench_need_mpi bench/mpi.sh
# iters and warmup of SIZE on N ranks: about 0.1 to 0.3 s of timed calls
iters() {
    local b
    b=$(bench_bytes "$1")
    if [ "$b" -le 4096 ]; then echo "20000 1000"
    elif [ "$b" -le 262144 ]; then echo "2000 200"
    elif [ "$b" -le 4194304 ]; then echo "200 20"
    elif [ "$2" -le 2 ]; then echo "10 3"
    else echo "5 2"; fi
}
# the algorithm AUTO picks on the mpi backend: coll.c's AUTO_TREE_MAX, 32 KiB
algo() { [ "$(bench_bytes "$1")" -le 32768 ] && echo tree || echo ring; }

# Open MPI's shared-memory transport without its single copy (CMA): the
# path it takes for libdt's two-block messages (lib/comm/mpi/mpi_port.c)
no_single_copy() { OMPI_MCA_btl_vader_single_copy_mechanism=none "$@"; }

round() {
    local n s it wu a
    for n in $RANKS; do
        for s in $SIZES; do
            read -r it wu <<<"$(iters "$s" "$n")"
            a=$(algo "$s")
            bench_m "$n.$s.dt" bench_dtbench "$s" "$n" mpi "$it" "$wu" 4
            bench_m "$n.$s.mpi" bench_mpi "$s" "$n" "$it" "$wu" 4
            bench_m "$n.$s.nocma" no_single_copy bench_mpi "$s" "$n" "$it" "$wu" 4
            bench_m "$n.$s.alg" bench_mpi "$s" "$n" "$it" "$wu" 4 --algo "$a"
            bench_m "$n.$s.tm" bench_mpi "$s" "$n" "$it" "$wu" 4 --algo "$a" --thread-multiple
            bench_m "$n.$s.fr" bench_mpi "$s" "$n" "$it" "$wu" 4 --algo "$a" --thread-multiple --frames
            bench_m "$n.$s.thread" bench_dtbench "$s" "$n" thread "$it" "$wu" 4
            bench_m "$n.$s.proc" bench_dtbench "$s" "$n" proc "$it" "$wu" 4
        done
    done
}

bench_rounds # its series in V (bench/lib.sh)

# issue 18's target for case N.S, on the median of the per-round figures:
# at 4 bytes libdt - MPI_Allreduce <= 1 us, from 64 KiB libdt / it <= 1.05;
# other sizes have none (up to 4 KiB the difference is shown all the same).
verdict() {
    local b d r
    b=$(bench_bytes "$2")
    if [ "$b" -le 4096 ]; then
        d=$(bench_diffs "${V[$1.$2.dt]}" "${V[$1.$2.mpi]}")
        printf "%+.2f us (%s)" "$(echo "$d" | bench_median)" \
            "$(echo "$d" | bench_range %+.2f | sed 's/-+/ to +/; s/--/ to -/')"
        [ "$b" = 4 ] && echo "$d" | bench_median |
            awk '{ printf ": %s (<= 1 us)", $1 <= 1 ? "met" : "missed" }'
    elif [ "$b" -ge 65536 ]; then
        r=$(bench_ratios "${V[$1.$2.dt]}" "${V[$1.$2.mpi]}" | bench_median)
        awk -v r="$r" 'BEGIN { printf "%s (<= 1.05x)", r <= 1.05 ? "met" : "missed" }'
    else
        printf -- "-"
    fi
}

mpi_v=$(mpirun --version 2>/dev/null | head -n 1 | awk '{ print $NF }')
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
cores=$(getconf _NPROCESSORS_ONLN) # not nproc: it counts OMP_NUM_THREADS
echo
echo "**Machine**: $cpu, $cores cores; OpenMPI $mpi_v (\`mpirun --oversubscribe\`, its" \
     "default transports and binding; libdt's ranks bound as dtbench binds them, DT_BIND=1)."
echo
echo "**Run**: $(date -u '+%Y-%m-%d %H:%M UTC'); \`ROUNDS=$ROUNDS SIZES=\"$SIZES\"" \
     "RANKS=\"$RANKS\" bash bench/mpi.sh\`; every case in each round, its eight runs back to back; load average $BENCH_LOAD before," \
     "$(cut -d' ' -f1-3 /proc/loadavg) after. Times in us: the slowest rank's mean per call," \
     "medians over rounds; ratios: the median (range) of the per-round ratios. Every result" \
     "checked exact."
echo
label() { echo "$1" | sed 's/K$/ KiB/; s/M$/ MiB/; s/[0-9]$/& B/'; }
targets="" bounds=""
for n in $RANKS; do
    for s in $SIZES; do
        k=$n.$s
        targets+=$(printf "| %s, N=%s | %.2f | %.2f | %s | %s | %.2f | %.2f |" "$(label "$s")" "$n" \
            "$(bench_smed "$k.dt")" "$(bench_smed "$k.mpi")" "$(bench_sratio "$k.dt" "$k.mpi")" \
            "$(verdict "$n" "$s")" "$(bench_smed "$k.thread")" "$(bench_smed "$k.proc")")$'\n'
        bounds+=$(printf "| %s, N=%s | %.2f | %.2f | %.2f (%s) | %.2f | %.2f | %.2f | %s |" \
            "$(label "$s")" "$n" "$(bench_smed "$k.mpi")" "$(bench_smed "$k.nocma")" \
            "$(bench_smed "$k.alg")" "$(algo "$s")" \
            "$(bench_smed "$k.tm")" "$(bench_smed "$k.fr")" "$(bench_smed "$k.dt")" \
            "$(bench_sratio "$k.dt" "$k.fr")")$'\n'
    done
done
echo "| allreduce f32, time us | libdt over MPI | MPI_Allreduce | libdt / MPI_Allreduce |" \
     "target (issue 18) | thread | proc |"
echo "|---|---:|---:|---:|---|---:|---:|"
printf "%s" "$targets"
echo
echo "What bounds libdt over MPI, in plain MPI (bench/mpi_allreduce), time us:"
echo
echo "| allreduce f32 | MPI_Allreduce | the same, no single copy | libdt's algorithm, MPI_Sendrecv |" \
     "+ MPI_THREAD_MULTIPLE | + libdt's frames | libdt over MPI | libdt / the last |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
printf "%s" "$bounds"
