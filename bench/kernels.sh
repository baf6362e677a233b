#!/bin/bash
# kernels.sh - OpenBLAS's kernel sets side by side on this CPU, to check the
# choice libdt makes at start-up (lib/tensor/blas.c): for each set this CPU
# can run (bench/machine's kernel_sets, or KERNELS="A B ..."), in turns
# within each round,
#   - sgemm GFLOP/s, n = 1024, one thread (bench/compute_sgemm, cblas_sgemm,
#     the fastest of its turns);
#   - one training step of the MLP 784-1024-1024-10, batch 64, plain SGD,
#     one thread (dttrain --json, median step of STEPS steps).
# Each figure: the median over ROUNDS rounds and its range; and the median
# of the per-round ratio to the CPU's own set (the one libdt asks for).
#
#   bash bench/kernels.sh             (make bench-kernels)
#   ROUNDS=15 KERNELS="Haswell SkylakeX Cooperlake" bash bench/kernels.sh
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 9 60
export DT_QUIET=1

make --no-print-directory -s BUILD="$BUILD" bench-progs || exit 1
machine=$(env -u OPENBLAS_CORETYPE "$BUILD/bench/machine") || exit 1
if [ "$(echo "$machine" | bench_key blas)" = built-in ]; then
    echo "kernels.sh: libdt was built without OpenBLAS: no kernel sets to compare"
    exit 0
fi
KERNELS=${KERNELS:-$(echo "$machine" | bench_key kernel_sets)}
ref=$(echo "$machine" | bench_key cpu_kernels)
[ -n "$ref" ] || ref=${KERNELS%% *}
DT="$BUILD/bin/dttrain --model mlp:784,1024,1024,10 --data synthetic --batch 64 --steps $STEPS \
    --lr 0.01 --momentum 0 --threads 1 --eval-every 0 --json"

echo "CPU $(echo "$machine" | bench_key cpu) ($(echo "$machine" | bench_key cpu_isa)), \
$(echo "$machine" | bench_key blas); OpenBLAS by itself: $(echo "$machine" | bench_key blas_choice); \
libdt asks for: ${ref}"
echo "$ROUNDS rounds, each set in turn; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A gf ms
for r in $(seq "$ROUNDS"); do
    line="round $r:"
    for k in $KERNELS; do
        g=$(OPENBLAS_CORETYPE=$k "$BUILD/bench/compute_sgemm" --sizes 1024 --csv | bench_csv 3)
        # shellcheck disable=SC2086
        s=$(OPENBLAS_CORETYPE=$k $DT | bench_json step_ms_median)
        [ -n "$g" ] && [ -n "$s" ] || { echo "kernels.sh: $k: no figure (sgemm '$g', step '$s')"; exit 1; }
        gf[$k]="${gf[$k]:-} $g" ms[$k]="${ms[$k]:-} $s"
        line="$line $k ${g} GFLOP/s ${s} ms;"
    done
    echo "$line"
done

echo
echo "| kernels | sgemm n=1024, GFLOP/s (range) | vs $ref | MLP step, ms (range) | vs $ref |"
echo "|---|---:|---:|---:|---:|"
for k in $KERNELS; do
    # shellcheck disable=SC2086
    echo "| $k | $(printf '%.1f' "$(bench_med ${gf[$k]})") ($(printf '%s\n' ${gf[$k]} | bench_range %.1f)) |" \
         "$(printf '%.2fx' "$(bench_ratios "${gf[$k]}" "${gf[$ref]}" | bench_median)") |" \
         "$(printf '%.2f' "$(bench_med ${ms[$k]})") ($(printf '%s\n' ${ms[$k]} | bench_range %.2f)) |" \
         "$(printf '%.2fx' "$(bench_ratios "${ms[$k]}" "${ms[$ref]}" | bench_median)") |"
done
echo "(ratios: medians of per-round ratios; for the step, time over $ref's time: lower is faster)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
