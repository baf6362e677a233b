#!/bin/bash
# planner.sh - how long `dtsim search` takes to rank every layout of 4,096
# devices (chapter 13 promises under a second): for each model, the median
# over ROUNDS runs of the search's own time (search_s: the core's loop,
# dt_sim_search_eval) and of the whole command (start to exit), with the
# layouts priced and those that fit.
#
#   bash bench/planner.sh             (make bench-planner)
#   ROUNDS=21 DEVICES=16384 bash bench/planner.sh
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_settings 11 1
DEVICES=${DEVICES:-4096}
[[ $DEVICES =~ ^[1-9][0-9]*$ ]] || { echo "$0: DEVICES='$DEVICES': expected a whole number >= 1" >&2; exit 2; }
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bin/dtsim" || exit 1
DTSIM=$BUILD/bin/dtsim

# the cores online: not nproc, which counts OMP_NUM_THREADS (1 here)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(getconf _NPROCESSORS_ONLN) cores;" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$ROUNDS rounds; $DEVICES devices"
echo
echo "| model | cluster | global batch | layouts priced | fit | search (median, range) | command (median) |"
echo "|---|---|---:|---:|---:|---:|---:|"
for spec in "megatron-22b dgx-a100-80gb 512" "gpt3-175b dgx-a100-80gb 1536" \
    "mt-nlg-530b dgx-a100-80gb 1920" "megatron-1t dgx-h100 3072"; do
    read -r model cluster batch <<<"$spec"
    search=() wall=()
    for _ in $(seq "$ROUNDS"); do
        t0=$(date +%s.%N)
        out=$("$DTSIM" search --devices "$DEVICES" --cluster "$cluster" --model "$model" \
            --global-batch "$batch" --top 1 --json) || exit 1
        t1=$(date +%s.%N)
        search+=("$(bench_json search_s <<<"$out")")
        wall+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
    done
    printf '| %s | %s | %s | %s | %s | %.4f s (%s) | %.4f s |\n' "$model" "$cluster" "$batch" \
        "$(bench_json tried <<<"$out")" "$(bench_json feasible <<<"$out")" \
        "$(printf '%s\n' "${search[@]}" | bench_median)" \
        "$(printf '%s\n' "${search[@]}" | bench_range %.4f)" \
        "$(printf '%s\n' "${wall[@]}" | bench_median)"
done
