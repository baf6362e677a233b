#!/bin/bash
# compute.sh - libdt's compute layers against their references, one thread:
#   1. sgemm GFLOP/s, n = 256..2048: dt_sgemm vs calling cblas_sgemm directly
#   2. libdt's loss and gradients against PyTorch's on the same weights and
#      batch (bench/compute_verify.py; relative error < 1e-5)
#   3. one training step of the MLP 784-1024-1024-10 (ReLU, softmax
#      cross-entropy, plain SGD, batch 64, float32): libdt (build/bin/dttrain)
#      vs PyTorch (Debian's python3-torch under /usr/bin/python3), run in
#      turns in the same session, medians of the per-run medians. libdt runs
#      three ways: its defaults (SGD folded into the backward GEMM, the
#      feature-major layout), --no-fuse (gradients, then SGD) and
#      --reference (the plain code the chapters describe); each run's JSON
#      must say that it ran the path its row names.
# One thread means OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 for both: Debian's
# torch does its matrix work through OpenBLAS, which starts its own threads.
#
#   bash bench/compute.sh            (make bench runs it; BUILD picks the build)
#   ROUNDS=11 STEPS=100 bash bench/compute.sh
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-7}
STEPS=${STEPS:-60}
PY=/usr/bin/python3
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 DT_BLAS_THREADS=1

make --no-print-directory -s BUILD="$BUILD" "$BUILD/libdt.a" "$BUILD/bin/dttrain" >/dev/null || exit 1
CFLAGS_BLAS=$(pkg-config --cflags openblas 2>/dev/null && echo -DDT_HAVE_OPENBLAS)
LIBS_BLAS=$(pkg-config --libs openblas 2>/dev/null)
SGEMM="$BUILD/bench/compute_sgemm"
mkdir -p "$BUILD/bench"
cc -std=c11 -O2 -D_GNU_SOURCE -pthread -Ilib/include $CFLAGS_BLAS bench/compute_sgemm.c \
   "$BUILD/libdt.a" $LIBS_BLAS -lm -lrt -o "$SGEMM" || exit 1

echo "-- sgemm, one thread (fastest of the turns; ratio target >= 0.95)"
"$SGEMM" || { echo "sgemm: results differ"; exit 1; }

have_torch=1
if ! $PY -c 'import torch' 2>/dev/null; then
    have_torch=0
    echo
    echo "PyTorch: not installed for $PY (apt install python3-torch): libdt alone"
fi
if [ $have_torch = 1 ]; then
    echo
    echo "-- same weights and batch in libdt and PyTorch: loss and gradients"
    DUMP="$BUILD/bench/mlp_step.bin"
    "$BUILD/bin/dttrain" --model mlp:784,1024,1024,10 --data synthetic --batch 64 --dump "$DUMP" &&
        $PY bench/compute_verify.py "$DUMP" || { echo "verify: libdt and PyTorch differ"; exit 1; }
fi

echo
echo "-- MLP 784-1024-1024-10, batch 64, SGD, one thread: $ROUNDS rounds of $STEPS steps"
MODEL="--model mlp:784,1024,1024,10 --data synthetic --batch 64 --steps $STEPS --lr 0.01 --momentum 0 --threads 1"
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
field() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p"; }
ratios() { paste -d/ <(printf '%s\n' "${!1}") <(printf '%s\n' "${!2}") | bc -l | median; }
# one libdt run: its JSON, after checking that it ran the update and layout expected
libdt() { # update layout options...
    local want="$1 $2" j got
    shift 2
    j=$("$BUILD/bin/dttrain" $MODEL "$@" --json) || exit 1
    got="$(echo "$j" | sed -n 's/.*"update": "\([a-z_]*\)".*/\1/p') $(echo "$j" | sed -n 's/.*"layout": "\([a-z_]*\)".*/\1/p')"
    [ "$got" = "$want" ] || { echo "dttrain $*: ran $got, expected $want" >&2; exit 1; }
    echo "$j"
}
# wall and CPU (of the calling thread) step medians of each run
fw=() fc=() pw=() pc=() rw=() rc=() tw=() tc=()
for r in $(seq "$ROUNDS"); do
    j=$(libdt fused_sgd feature_major) || exit 1
    fw+=("$(echo "$j" | field step_ms_median)") fc+=("$(echo "$j" | field step_cpu_ms_median)")
    j=$(libdt sgd feature_major --no-fuse) || exit 1
    pw+=("$(echo "$j" | field step_ms_median)") pc+=("$(echo "$j" | field step_cpu_ms_median)")
    j=$(libdt sgd batch_major --reference) || exit 1
    rw+=("$(echo "$j" | field step_ms_median)") rc+=("$(echo "$j" | field step_cpu_ms_median)")
    line="round $r: libdt fused ${fw[-1]} ms (cpu ${fc[-1]}), unfused ${pw[-1]} ms (cpu ${pc[-1]}), reference ${rw[-1]} ms (cpu ${rc[-1]})"
    if [ $have_torch = 1 ]; then
        j=$($PY bench/compute_torch.py --batch 64 --steps "$STEPS" --lr 0.01) || exit 1
        tw+=("$(echo "$j" | field step_ms_median)") tc+=("$(echo "$j" | field step_cpu_ms_median)")
        line="$line, pytorch ${tw[-1]} ms (cpu ${tc[-1]})"
    fi
    echo "$line"
done

# The machine may be shared: a run's wall-clock median follows the load
# during that run, its CPU-time median much less so. Each round runs the
# three back to back, so per-round ratios compare like with like.
row() { printf "%-28s %10.3f %10.3f %10.0f\n" "$1" "$(printf '%s\n' "${!2}" | median)" \
        "$(printf '%s\n' "${!3}" | median)" "$(echo "64000 / $(printf '%s\n' "${!2}" | median)" | bc -l)"; }
echo
printf "%-28s %10s %10s %10s\n" "step, median of the runs" "wall ms" "cpu ms" "samples/s"
row "libdt (SGD fused in GEMM)" "fw[@]" "fc[@]"
row "libdt (grads, then SGD)" "pw[@]" "pc[@]"
row "libdt (reference code)" "rw[@]" "rc[@]"
if [ $have_torch = 1 ]; then
    row "pytorch" "tw[@]" "tc[@]"
    printf "libdt / pytorch (median of per-round ratios; target <= 0.85):\n"
    printf "  fused:   wall %.3f  cpu %.3f\n" "$(ratios "fw[@]" "tw[@]")" "$(ratios "fc[@]" "tc[@]")"
    printf "  unfused: wall %.3f  cpu %.3f\n" "$(ratios "pw[@]" "tw[@]")" "$(ratios "pc[@]" "tc[@]")"
fi
