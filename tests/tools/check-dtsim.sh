#!/usr/bin/env bash
# check-dtsim.sh - dtsim, the planner (chapter 13), from its command line
# (run by `make test`):
#   - a plan prints memory by kind, each communication, the bubble, the
#     step and MFU; --json has the documented keys, its memory and step are
#     the sums of their parts; --explain gives each term's formula;
#   - the published runs of Narayanan et al. 2021 (Table 1) and Korthikanti
#     et al. 2022 (Table 5), predicted through the command line, land
#     within 15% (the error table is printed: the library's test,
#     tests/lib/test_sim_published.c, holds the same rows with their
#     sources);
#   - `dtsim search` ranks layouts that fit, fastest first, and its best
#     layout priced again by `dtsim --json` gives the same step;
#   - the network mode works as before;
#   - --checkpoint gives Daly's worked figures (chapter 14);
#   - --stragglers gives the one-slow-worker steps worked by hand, and
#     refuses a bad configuration by name.
# Figures only: no check depends on the machine's speed.
#   tests/tools/check-dtsim.sh BUILD
set -uo pipefail
BUILD=${1:-build}
DTSIM=$BUILD/bin/dtsim
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: check-dtsim: $*"; fail=$((fail + 1)); }
has() { grep -qF -- "$2" <<<"$1" && ok || bad "no '$2' in: $(head -n 3 <<<"$1")"; }

# One number from a flat JSON key ("key": value).
json_num() { sed -n "s/^ *\"$2\": \([-0-9.e+]*\),*$/\1/p" <<<"$1" | head -n 1; }

gpt=(--model gpt3-175b --cluster dgx-a100-80gb --global-batch 64 --tp 8 --pp 8 --vpp 3)

# ---- a plan, as text
out=$("$DTSIM" "${gpt[@]}" --recompute full --dtype fp16 2>&1)
[ $? -eq 0 ] && ok || bad "plan exited nonzero: $out"
for want in 'parameters' 'gradients' 'optimizer state' 'activations' 'fits' \
    'tp ring_allreduce' 'pp p2p' 'bubble: (p - 1)/(v m)' 'step' 'MFU'; do
    has "$out" "$want"
done

# ---- --json: the keys, and the sums
json=$("$DTSIM" "${gpt[@]}" --recompute selective --sp 1 --json 2>&1)
for key in step_s mfu fits mem_bytes tflops_per_device tokens_per_s bubble compute_s; do
    grep -q "\"$key\":" <<<"$json" && ok || bad "--json lacks \"$key\""
done
if command -v python3 >/dev/null; then
    python3 - "$json" <<'PY' && ok || bad "--json: not JSON, or its parts do not add up"
import json, sys
j = json.loads(sys.argv[1])
m = j["mem"]
assert abs(m["params"] + m["grads"] + m["optim"] + m["acts"] - j["mem_bytes"]) <= 1e-9 * j["mem_bytes"]
parts = j["compute_s"] + j["tp_s"] + j["pp_s"] + j["bubble_s"] + j["dp_s"] + j["optimizer_s"]
assert abs(parts - j["step_s"]) <= 1e-9 * j["step_s"], (parts, j["step_s"])
assert abs(sum(c["seconds"] for c in j["comm"]) - (j["tp_s"] + j["pp_s"] + j["dp_s"])) <= 1e-9 * j["step_s"]
assert j["fits"] is True and 0 < j["mfu"] < 1
assert {c["group"] for c in j["comm"]} == {"tp", "pp"}
PY
fi

# ---- --explain: each term beside its formula
out=$("$DTSIM" "${gpt[@]}" --recompute full --dp 2 --global-batch 128 --explain 2>&1)
for want in 'm = B / (d b)' 'params = l (4h^2 + 2hf + f + 9h) + Vh + sh + 2h' \
    'model FLOPs = 3 B s (l (8h^2 + 4hf + 4sh) + 2hV)' 'bubble = (p - 1) / (v m)' \
    '2 (k-1) (alpha + n / (k beta eff))' 'dp ring_allreduce' 'MFU = ' 'step = '; do
    has "$out" "$want"
done

# ---- the published runs through the command line
# Narayanan et al. 2021, Table 1: layers hidden heads tp pp gpus batch TFLOP/s (hardware,
# full recomputation; micro-batch 1, no interleaving assumed)
megatron="24 2304 24 1 1 32 512 137
30 3072 32 2 1 64 512 138
36 4096 32 4 1 128 512 142
40 6144 48 8 1 256 1024 135
48 8192 64 8 2 512 1536 138
60 10240 80 8 4 1024 1792 140
80 12288 96 8 8 1536 2304 148
96 16384 128 8 16 1920 2160 155
105 20480 128 8 35 2520 2520 163
128 25600 160 8 64 3072 3072 163"
# Korthikanti et al. 2022, Table 5 (layouts of its Table 3): seconds a step
korthikanti="48 6144 64 8 1 8 4 4 1 full 0 1.42
48 6144 64 8 1 8 4 4 1 selective 1 1.10
96 12288 96 8 8 64 64 1 3 full 0 18.13
96 12288 96 8 8 64 64 1 3 selective 1 13.75
105 20480 128 8 35 280 280 1 3 full 0 49.05
105 20480 128 8 35 280 280 1 3 selective 1 37.83
128 25600 160 8 64 512 512 1 1 full 0 94.42
128 25600 160 8 64 512 512 1 1 selective 1 71.49"
rows=()
errors=()
row() { # name published predicted
    local err
    err=$(awk -v p="$2" -v q="$3" 'BEGIN { printf "%+.1f", 100 * (q - p) / p }')
    rows+=("$(printf '%-40s %9s %9.4g %7s%%' "$1" "$2" "$3" "$err")")
    errors+=("$1|$err")
    awk -v e="$err" 'BEGIN { exit !(e <= 15 && e >= -15) }' && ok ||
        bad "$1: published $2, predicted $3 ($err%), beyond 15%"
}
while read -r l h a t p g b tf; do
    j=$("$DTSIM" --layers "$l" --hidden "$h" --heads "$a" --seq 2048 --vocab 51200 \
        --cluster dgx-a100-80gb --global-batch "$b" --tp "$t" --pp "$p" --dp $((g / (t * p))) \
        --recompute full --dtype fp16 --json 2>&1)
    row "Narayanan 2021 T1, h $h" "$tf" "$(json_num "$j" hw_tflops_per_device)"
done <<<"$megatron"
while read -r l h a t p g b mb v r sp sec; do
    j=$("$DTSIM" --layers "$l" --hidden "$h" --heads "$a" --seq 2048 --vocab 51200 \
        --cluster dgx-a100-80gb --global-batch "$b" --tp "$t" --pp "$p" --micro-batch "$mb" \
        --vpp "$v" --sp "$sp" --recompute "$r" --dtype fp16 --json 2>&1)
    row "Korthikanti 2022 T5, h $h, $r" "$sec" "$(json_num "$j" step_s)"
done <<<"$korthikanti"
printf '%-40s %9s %9s %8s\n' "published run" published predicted error
printf '%s\n' "${rows[@]}"
# mean and max of the rows predicted (all but the one the efficiency was fitted on)
printf '%s\n' "${errors[@]}" | awk -F'|' '
    $1 !~ /h 12288, full/ { e = $2 < 0 ? -$2 : $2; s += e; n++; if (e > m) m = e }
    END { printf "predicted rows: %d, mean |error| %.2f%%, max %.2f%% (Calculon: 3.65%%, 8.87%%)\n", n, s / n, m }' 

# ---- search: sorted, fitting, and consistent with the plan mode
json=$("$DTSIM" search --devices 64 --cluster dgx-a100-80gb --model gpt3-175b \
    --global-batch 64 --top 5 --json 2>&1)
[ $? -eq 0 ] && ok || bad "search exited nonzero: $json"
if command -v python3 >/dev/null; then
    best=$(python3 - "$json" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
L = j["layouts"]
assert j["tried"] >= j["feasible"] > 0 and len(L) == min(5, j["feasible"])
assert all(x["fits"] for x in L)
assert all(a["step_s"] <= b["step_s"] for a, b in zip(L, L[1:]))
b = L[0]
print(b["tp"], b["pp"], b["dp"], b["vpp"], b["sp"], b["micro_batch"], b["zero"], b["recompute"], repr(b["step_s"]))
PY
    )
    if [ -n "$best" ]; then
        ok
        read -r t p d v sp mb z r step <<<"$best"
        j=$("$DTSIM" --model gpt3-175b --cluster dgx-a100-80gb --global-batch 64 --tp "$t" \
            --pp "$p" --dp "$d" --vpp "$v" --sp "$sp" --micro-batch "$mb" --zero "$z" \
            --recompute "$r" --json 2>&1)
        [ "$(json_num "$j" step_s)" = "$step" ] && ok ||
            bad "search's best ($best) priced again: $(json_num "$j" step_s)"
    else
        bad "search --json: not JSON, unsorted, or a layout that does not fit"
    fi
fi
out=$("$DTSIM" search --devices 4096 --cluster dgx-a100-80gb --model gpt3-175b \
    --global-batch 1536 2>&1)
has "$out" "layouts priced"
has "$out" "searched in"

# ---- the network mode, as before the planner
out=$("$DTSIM" --net ib100 --bytes 256Mi --ranks 8 --comp 0.2 --stages 4 --micro 16 2>&1)
for want in ring_allreduce 'data-parallel step' 'pipeline bubble (p - 1) / (m + p - 1)'; do
    has "$out" "$want"
done

# ---- the checkpoint mode: Daly's worked figures (R = 10 min, delta = 5 min)
for mw in "24h 116.6898" "6h 56.7130" "15min 9.1409"; do
    read -r m want <<<"$mw"
    out=$("$DTSIM" --checkpoint --cost 5min --restart 10min --mtbf "$m" 2>&1)
    got=$(awk '/^Daly/ {print $4}' <<<"$out")
    [ "$got" = "$want" ] && ok || bad "--checkpoint --mtbf $m: Daly's tau '$got' min, want $want"
done
"$DTSIM" --checkpoint --cost 5 --restart 1min --mtbf 1week >/dev/null 2>&1 &&
    bad "--mtbf 1week accepted" || ok

# ---- the straggler mode: one worker at half speed, 16 samples of 1 ms
# each: waiting takes 32 ms, a spare or a drop 16, the adaptive batch 19
# after its first step (the library's test works them by hand)
out=$("$DTSIM" --stragglers --workers 4 --batch 64 --sample 1ms --slow-rank 3 --steps 10 2>&1)
for rw in "wait 32.0000" "backup 16.0000" "drop 16.0000" "adaptive 20.3000"; do
    read -r row want <<<"$rw"
    got=$(awk -v r="$row" '$1 == r {for (i = 2; i <= NF; i++) if ($i ~ /[.]/) {print $i; exit}}' <<<"$out")
    [ "$got" = "$want" ] && ok || bad "--stragglers: the $row row's step '$got' ms, want $want: $(head -n 8 <<<"$out")"
done
for a in "--batch 63" "--drop 4" "--slow-rank 4" "--slow-speed 0"; do
    # shellcheck disable=SC2086
    out=$("$DTSIM" --stragglers $a 2>&1)
    [ $? -eq 2 ] && grep -qF -- "${a%% *}" <<<"$out" && ok || bad "--stragglers $a: not refused by name: $out"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
