#!/bin/bash
# table.sh - `make bench`: libdt's figures in one table, nccl-tests' way:
# each figure beside its peer measured in the same run, the ratio, the
# physical floor where one exists and the fraction of it reached, and the
# machine they ran on. Every round measures every row, libdt then its peer
# back to back, so that a ratio compares runs made seconds apart; the table
# gives medians over rounds, and for ratios the median of the per-round
# ratios with their range.
#
# Rows (the targets of issue 14):
#   allreduce f32 busbw, thread backend: 64 MiB on N = 2 and 4, 4 MiB on 2;
#   proc backend, 64 MiB, N = 2, private buffers and dt_alloc_shared ones
#     (dtbench --shared) - peer: OpenMPI's MPI_Allreduce (bench/mpi_allreduce.c)
#   4-byte allreduce time, N = 2 - peer: OpenMPI
#   the mpi backend (libdt's algorithms over MPI messages, under mpirun):
#     4-byte time, busbw at 64 KiB, 1 MiB, 64 MiB, N = 2 - peer: OpenMPI
#     (issue 18: within 1 us, within 5%; bench/mpi.sh has the details)
#   MLP 784-1024-1024-10 step, batch 64, plain SGD, dttrain's default path -
#     peer: PyTorch (bench/compute_torch.py)
#   data parallelism, 2 ranks over 1, thread and proc backends - peer:
#     PyTorch DDP over gloo (bench/ddp_torch.py)
# Floors:
#   a large allreduce moves at least 2 N S bytes through memory (each rank's
#   S-byte input read once, each output written once), so at the copy
#   bandwidth B of this run (bench/membw, min(N, cores) threads) busbw can
#   be at most B (N - 1) / N^2; a 4 MiB allreduce lives in the caches: no
#   memory floor;
#   the MLP step's matrix products (forward, weight and input gradients:
#   6.12e8 flop) at the sgemm peak of this run (bench/compute_sgemm, n =
#   1024, one thread);
#   data parallelism: 2x (linear).
# Same kernels: the OpenBLAS kernels libdt runs here (after its start-up
# check) are set with OPENBLAS_CORETYPE for every program of the run,
# PyTorch included. One thread per rank everywhere.
#
#   make bench                         (ROUNDS=5 rounds, STEPS=60 steps per run)
#   ROUNDS=9 STEPS=100 make bench      BUILD=... picks the build folder
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 5 60
PY=${PY:-/usr/bin/python3}

die() { echo "bench/table.sh: $*" >&2; exit 1; }
TMP=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$TMP"' EXIT

make --no-print-directory -s BUILD="$BUILD" bench-progs || die "the build failed"
B=$BUILD/bench
have_mpi=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    make --no-print-directory -s BUILD="$BUILD" "$B/mpi_allreduce" && have_mpi=1
fi
have_mpi_backend=0 # libdt built with its mpi backend (mpicc found, MPI not 0, no SAN)
[ $have_mpi = 1 ] && DT_QUIET=1 bench_dtbench 4 1 mpi 1 0 4 >/dev/null 2>&1 && have_mpi_backend=1
have_torch=0
$PY -c 'import torch, torch.distributed' 2>/dev/null && have_torch=1

# ---------------------------------------------------------------- the machine

machine=$("$B/machine" 2>"$TMP/machine.err") || die "bench/machine failed: $(cat "$TMP/machine.err")"
key() { echo "$machine" | bench_key "$1"; }
kernels=$(key kernels)
if [ "$(key blas)" != built-in ]; then
    export OPENBLAS_CORETYPE=$kernels # the same kernels for libdt and PyTorch
fi
export DT_QUIET=1 # libdt's line about the kernels is in the header, once
cores=$(key cores)
t2=$((cores < 2 ? cores : 2)) t4=$((cores < 4 ? cores : 4))

# ---------------------------------------------------------------- measurements

json_of() { # field command...: the field of the command's JSON output
    local f=$1 out
    shift
    out=$("$@" 2>"$TMP/cmd.err") || die "failed: $* ($(tail -n 2 "$TMP/cmd.err"))"
    echo "$out" | bench_json "$f"
}

MLP="--model mlp:784,1024,1024,10 --data synthetic --batch 64 --steps $STEPS --eval-every 0 --json"
STEP_DT="$BUILD/bin/dttrain $MLP --lr 0.01 --momentum 0 --threads 1"
STEP_PT="$PY bench/compute_torch.py --batch 64 --steps $STEPS --lr 0.01"
DP_DT="$BUILD/bin/dttrain $MLP --lr 0.01 --momentum 0.9"
DP_PT="$PY bench/ddp_torch.py --batch 64 --steps $STEPS --lr 0.01 --momentum 0.9"
# The step's matrix products, 2 x batch x (in x out) flop each: forward and
# weight gradient for every layer, input gradient for all but the first.
STEP_FLOP=$(awk 'BEGIN { n = split("784 1024 1024 10", w, " "); b = 64
    for (i = 1; i < n; i++) f += 2 * b * w[i] * w[i + 1] * (i == 1 ? 2 : 3); print f }')

ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { print b / a }'; } # b / a

round() {
    local bw2 bw4 peak
    bw2=$("$B/membw" --threads "$t2" --csv | bench_csv 3) || exit 1
    bench_add bw2 "$bw2"
    bw4=$bw2
    [ "$t4" != "$t2" ] && { bw4=$("$B/membw" --threads "$t4" --csv | bench_csv 3) || exit 1; }
    bench_add bw4 "$bw4"
    bench_m floor64_2 awk -v b="$bw2" 'BEGIN { print b / 4 }'
    bench_m floor64_4 awk -v b="$bw4" 'BEGIN { print b * 3 / 16 }'
    peak=$("$B/compute_sgemm" --sizes 1024 --csv | bench_csv 3) || exit 1
    bench_add peak "$peak"
    bench_m floor_step awk -v f="$STEP_FLOP" -v p="$peak" 'BEGIN { print f / (p * 1e9) * 1e3 }'

    bench_m ar64_2 bench_dtbench 64M 2 thread 10 3 6
    [ $have_mpi = 1 ] && bench_m mpi64_2 bench_mpi 64M 2 10 3 6
    bench_m ar64_4 bench_dtbench 64M 4 thread 5 2 6
    [ $have_mpi = 1 ] && bench_m mpi64_4 bench_mpi 64M 4 5 2 6
    bench_m ar4_2 bench_dtbench 4M 2 thread 50 10 6
    [ $have_mpi = 1 ] && bench_m mpi4_2 bench_mpi 4M 2 50 10 6
    bench_m proc64_2 bench_dtbench 64M 2 proc 10 3 6
    bench_m proc64_2s bench_dtbench 64M 2 proc 10 3 6 --shared
    bench_m lat bench_dtbench 4 2 thread 20000 1000 4
    [ $have_mpi = 1 ] && bench_m mpi_lat bench_mpi 4 2 20000 1000 4
    if [ $have_mpi_backend = 1 ]; then # libdt's algorithms over MPI, each beside OpenMPI's
        bench_m mb_lat bench_dtbench 4 2 mpi 20000 1000 4
        bench_m mb64k bench_dtbench 64K 2 mpi 2000 200 6
        bench_m mpi64k bench_mpi 64K 2 2000 200 6
        bench_m mb1m bench_dtbench 1M 2 mpi 200 20 6
        bench_m mpi1m bench_mpi 1M 2 200 20 6
        bench_m mb64_2 bench_dtbench 64M 2 mpi 10 3 6
    fi

    # shellcheck disable=SC2086
    bench_m step json_of step_ms_median $STEP_DT
    # shellcheck disable=SC2086
    [ $have_torch = 1 ] && bench_m pt_step json_of step_ms_median $STEP_PT
    local b s1 s2
    for b in thread proc; do
        # shellcheck disable=SC2086
        s1=$(json_of samples_per_s $DP_DT --ranks 1 --backend $b) || exit 1
        # shellcheck disable=SC2086
        s2=$(json_of samples_per_s $DP_DT --ranks 2 --backend $b) || exit 1
        bench_m dp_$b ratio_of "$s1" "$s2"
    done
    if [ $have_torch = 1 ]; then
        # shellcheck disable=SC2086
        s1=$(json_of samples_per_s $DP_PT --ranks 1) || exit 1
        # shellcheck disable=SC2086
        s2=$(json_of samples_per_s $DP_PT --ranks 2) || exit 1
        bench_m pt_dp ratio_of "$s1" "$s2"
    fi
}

verify=""
if [ $have_torch = 1 ]; then # the same loss and gradients, before any timing
    "$BUILD/bin/dttrain" --model mlp:784,1024,1024,10 --data synthetic --batch 64 \
        --dump "$TMP/step.bin" >/dev/null 2>&1 || die "dttrain --dump failed"
    verify=$($PY bench/compute_verify.py "$TMP/step.bin" | tail -n 1) ||
        die "libdt's gradients differ from PyTorch's: $verify"
fi
bench_rounds # its series in V (bench/lib.sh)

# ---------------------------------------------------------------- the table

fmt() { [ -n "${V[$2]:-}" ] && printf "$1" "$(bench_smed "$2")" || printf -- "-"; }

# met SPEC LIBDT PEER FLOOR: "yes" when the row meets its target, "**no**"
# when it misses it, "-" when it has none or a figure is missing. SPEC is
# conditions that must all hold, on medians of this run:
#   ratio>=X, ratio<=X   the per-round ratios libdt / peer
#   floor>=X             the per-round ratios libdt / floor
#   self>=X              libdt's figure
#   diff<=X              libdt's figure less the peer's (times)
met() {
    local spec=$1 a=$2 p=$3 fl=$4 c v op lim ok=yes
    [ -n "$spec" ] && [ -n "${V[$a]:-}" ] || { printf -- "-"; return; }
    for c in $spec; do
        case $c in
            ratio*) [ -n "${V[$p]:-}" ] || { printf -- "-"; return; }
                    v=$(bench_ratios "${V[$a]}" "${V[$p]}" | bench_median) ;;
            floor*) [ -n "${V[$fl]:-}" ] || { printf -- "-"; return; }
                    v=$(bench_ratios "${V[$a]}" "${V[$fl]}" | bench_median) ;;
            self*) v=$(bench_smed "$a") ;;
            diff*) [ -n "${V[$p]:-}" ] || { printf -- "-"; return; }
                   v=$(awk -v a="$(bench_smed "$a")" -v p="$(bench_smed "$p")" 'BEGIN { print a - p }') ;;
            *) die "met: no condition '$c'" ;;
        esac
        op=$(echo "$c" | grep -oE '[<>]=')
        lim=${c##*=}
        awk -v v="$v" -v l="$lim" -v op="$op" 'BEGIN { exit !(op == ">=" ? v >= l : v <= l) }' ||
            ok="**no**"
    done
    printf '%s' "$ok"
}

# row LABEL UNIT-FORMAT LIBDT PEER TARGET FLOOR FRACTION-OF SPEC
#   FRACTION-OF is "above" when a higher figure is better (fraction =
#   libdt / floor), "below" for times (fraction = floor / libdt); SPEC is
#   the target for met (empty: none).
missed=()
row() {
    local frac="-" floor="-" ok
    if [ -n "$6" ] && [ -n "${V[$6]:-}" ]; then
        floor=$(fmt "$2" "$6")
        if [ "$7" = above ]; then frac=$(bench_sratio "$3" "$6" ""); else frac=$(bench_sratio "$6" "$3" ""); fi
    elif [ -n "$6" ]; then
        floor=$6
    fi
    ok=$(met "${8:-}" "$3" "$4" "$6")
    [ "$ok" = "**no**" ] && missed+=("$1")
    echo "| $1 | $(fmt "$2" "$3") | $(fmt "$2" "$4") | $(bench_sratio "$3" "$4") | $5 | $floor | $frac | $ok |"
}
V[two]=$(printf ' 2%.0s' $(seq "$ROUNDS")) # the linear speedup, each round

mpi_v=$(mpirun --version 2>/dev/null | head -n 1 | awk '{ print $NF }')
torch_v=$($PY -c 'import torch; print(torch.__version__)' 2>/dev/null)
echo
echo "**Machine**: $(key cpu) (vendor $(key cpu_vendor), family $(key cpu_family), model" \
     "$(key cpu_model); $(key cpu_isa)), $cores cores, $(key memory_gib) GiB;" \
     "$(key blas) with $kernels kernels for libdt and PyTorch" \
     "(${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE; }at libdt's start-up chosen" \
     "by $(key kernels_by); the set for this CPU's level: $(key cpu_kernels));" \
     "OpenMPI ${mpi_v:-not installed}; PyTorch ${torch_v:-not installed} ($PY)."
[ -s "$TMP/machine.err" ] && echo "libdt said at start-up: $(cat "$TMP/machine.err")"
echo
echo "**Run**: $(date -u '+%Y-%m-%d %H:%M UTC'); rounds: $ROUNDS, every row in each;" \
     "$STEPS steps per training run, one thread per rank; load average $BENCH_LOAD before," \
     "$(cut -d' ' -f1-3 /proc/loadavg) after. Floors from this run's medians: memory copy" \
     "$(fmt %.1f bw2) GB/s ($t2 threads)$([ "$t4" != "$t2" ] && echo ", $(fmt %.1f bw4) GB/s ($t4)")," \
     "sgemm $(fmt %.1f peak) GFLOP/s (n = 1024, one thread). Checks: every allreduce" \
     "result exact$([ $have_mpi = 1 ] && echo ", libdt's and OpenMPI's")${verify:+; $verify}."
echo
echo "| figure | libdt | peer | libdt / peer, median (range) | target | floor | libdt / floor | target met |"
echo "|---|---:|---:|---:|---|---:|---:|---|"
row "allreduce busbw GB/s, 64 MiB, N=2, thread (peer: OpenMPI)" %.2f ar64_2 mpi64_2 ">= 4x, >= 0.85 of floor" floor64_2 above "ratio>=4 floor>=0.85"
row "allreduce busbw GB/s, 64 MiB, N=4, thread (peer: OpenMPI)" %.2f ar64_4 mpi64_4 ">= 4x, >= 0.85 of floor" floor64_4 above "ratio>=4 floor>=0.85"
row "allreduce busbw GB/s, 4 MiB, N=2, thread (peer: OpenMPI)" %.2f ar4_2 mpi4_2 ">= 2.5x" "in cache" above "ratio>=2.5"
row "allreduce busbw GB/s, 64 MiB, N=2, proc, private buffers (peer: OpenMPI)" %.2f proc64_2 mpi64_2 ">= 2x" floor64_2 above "ratio>=2"
row "allreduce busbw GB/s, 64 MiB, N=2, proc, dt_alloc_shared (peer: OpenMPI)" %.2f proc64_2s mpi64_2 ">= 4x" floor64_2 above "ratio>=4"
row "allreduce time us, 4 bytes, N=2, thread (peer: OpenMPI; lower is better)" %.3f lat mpi_lat "-" "" below ""
if [ $have_mpi_backend = 1 ]; then
    row "allreduce time us, 4 bytes, N=2, mpi backend (peer: OpenMPI; lower is better)" %.3f mb_lat mpi_lat "<= peer + 1 us" "" below "diff<=1"
    for k in "64 KiB:mb64k:mpi64k" "1 MiB:mb1m:mpi1m" "64 MiB:mb64_2:mpi64_2"; do
        IFS=: read -r size dt peer <<<"$k"
        row "allreduce busbw GB/s, $size, N=2, mpi backend (peer: OpenMPI)" %.2f "$dt" "$peer" \
            ">= 0.95x (time within 5%)" "" above "ratio>=0.95"
    done
fi
row "MLP step ms, dttrain defaults (peer: PyTorch; lower is better)" %.2f step pt_step "<= 0.85x" floor_step below "ratio<=0.85"
row "data parallel, 2 ranks / 1, thread (peer: PyTorch DDP, gloo)" %.2fx dp_thread pt_dp ">= 1.8x (libdt)" two above "self>=1.8"
row "data parallel, 2 ranks / 1, proc (peer: PyTorch DDP, gloo)" %.2fx dp_proc pt_dp ">= 1.8x (libdt)" two above "self>=1.8"
echo
if [ ${#missed[@]} -eq 0 ]; then
    echo "Every row with a target and its figures meets it."
else
    echo "${#missed[@]} row(s) miss their target (**no** in the last column; the load average" \
         "above says how busy the machine was)."
fi
