#!/usr/bin/env bash
# check-lab-run.sh - the labs' programs (`make run-lab`) read their options
# through the library's options module (dt/cli.h): each refuses a bad
# option before it runs anything, with status 2 and a line naming the
# option (or variable) and its value; --help exits 0; lab 02's old
# spellings (-n, -net, ...) are refused naming the new ones; sizes follow
# the one convention (256M = 2^28 bytes). On the skeleton the programs of
# labs 05 and 06 end with status 1, naming the lab function not done. The
# skeleton's programs are used (make builds them, and options are read
# before any student function runs), so the check needs no solution. One
# case a row:
#     expected exit status | text the output must contain | command
# the command run by bash with $L00 .. $L14 the labs' programs.
#   tests/tools/check-lab-run.sh BUILD
set -uo pipefail
BUILD=${1:-build}
export BUILD DT_QUIET=1
pass=0
fail=0
for dir in labs/[0-9][0-9]-*/; do
    [ -f "$dir/run.c" ] || continue
    nn=$(basename "$dir" | cut -c1-2)
    prog=$BUILD/labs/$(basename "$dir")/run
    export "L$nn=$prog"
    [ -x "$prog" ] || { echo "FAIL: check-lab-run: $prog is missing (make builds it)"; fail=$((fail + 1)); }
done
while IFS='|' read -r want text cmd; do
    want=$(echo "$want" | tr -d ' ')
    [ -z "$want" ] && continue
    case "$want" in \#*) continue ;; esac
    text=$(echo "$text" | sed 's/^ *//; s/ *$//')
    out=$(timeout 60 bash -c "$cmd" 2>&1 </dev/null)
    got=$?
    if [ "$got" = "$want" ] && grep -qF -- "$text" <<<"$out"; then
        pass=$((pass + 1))
    else
        echo "FAIL: check-lab-run:$cmd: exit $got (expected $want), output: $(echo "$out" | head -n 2) (expected to contain: $text)"
        fail=$((fail + 1))
    fi
done <<'TABLE'
# status | output contains                                  | command
0 | usage: run [options]                                    | $L00 --help
2 | --ranks '0': expected a whole number from 1 to 1024     | $L00 --ranks 0
2 | '8': the rank count is an option now: --ranks 8        | $L00 8
0 | usage: run [options]                                    | $L01 --help
2 | --ranks '65': expected a whole number from 1 to 64      | $L01 --ranks 65
2 | --root 8: not a rank of --ranks 8                       | $L01 --root 8
2 | --count 'x': expected a whole number                    | $L01 --count x
2 | --plot: no such option any more: it is --svg            | $L01 --plot x.svg
2 | --svg '/nonexistent-dtlab/x.svg': no folder             | $L01 --svg /nonexistent-dtlab/x.svg
0 | SIZE: K, M, G, T are 2^10, 2^20, 2^30, 2^40 bytes       | $L02 --help
2 | -n: no such option any more: it is --ranks              | $L02 -n 8
2 | -net: no such option any more: it is --net              | $L02 -net ib100
2 | -min: no such option any more: it is --min              | $L02 -min 1K
2 | -max: no such option any more: it is --max              | $L02 -max 1M
2 | -o: no such option any more: it is --svg                | $L02 -o x.svg
2 | -wall: no such option any more: it is --wall-svg        | $L02 -wall x.svg
2 | --max 8 is below --min 268435456                        | $L02 --min 256M --max 8
2 | --max 8 is below --min 268435456                        | $L02 --min 256Mi --max 8
2 | --min '2': expected a size in bytes from 4              | $L02 --min 2
2 | --net 'warp': unknown network preset 'warp'             | $L02 --net warp
2 | no folder '/nonexistent-dtlab' to write it in (the default of --svg | BUILD=/nonexistent-dtlab $L02
2 | --ranks '1': expected a whole number from 2 to 16       | $L03 --ranks 1
2 | --example runs alone                                    | $L03 --example --ranks 4
2 | --workers '0': expected a whole number from 1 to        | $L04 --workers 0
2 | --lr '0': expected a number in (0,                      | $L04 --lr 0
2 | --backend 'mpi': this program runs its ranks as threads | $L04 --backend mpi
2 | DT_BACKEND 'nccl': this program runs its ranks          | DT_BACKEND=nccl $L04
2 | --updates 2: fewer gradients than --workers 4           | $L04 --updates 2
2 | --figures '/nonexistent-dtlab': no such folder          | $L04 --figures /nonexistent-dtlab
0 | usage: run [options]                                    | $L05 --help
2 | --ranks '0': expected a whole number from 1 to          | $L05 --ranks 0
2 | --ranks 'x': expected a whole number                    | $L05 --ranks x
2 | --net 'nosuch'                                          | $L05 --net nosuch
2 | unknown option '--bogus'                                | $L05 --bogus
1 | lab_mp_partition                                        | $L05
0 | usage: run [options]                                    | $L06 --help
2 | --ranks '1': expected a whole number from 2 to          | $L06 --ranks 1
2 | --micro '65': expected a whole number from 1 to 64      | $L06 --micro 65
2 | --micro '2x': expected a whole number                   | $L06 --micro 2x
2 | --net 'nosuch'                                          | $L06 --net nosuch
2 | --figures '/nonexistent-dtlab': no such folder          | $L06 --figures /nonexistent-dtlab
2 | '/nonexistent-dtlab': no such folder (the default of --figures | BUILD=/nonexistent-dtlab $L06
2 | --schedule, --skew and --measure go one at a time       | $L06 --skew --measure
2 | --ranks needs a value                                   | $L06 --ranks
2 | unknown option '--bogus'                                | $L06 --bogus
1 | cannot open schedule '/nonexistent-dtlab'               | $L06 --schedule /nonexistent-dtlab
1 | lab_sched_gpipe returned DT_ERR_NOT_IMPLEMENTED         | $L06
1 | lab_sched_1f1b returned DT_ERR_NOT_IMPLEMENTED          | $L06 --skew
2 | --ranks '3': expected one of 1, 2, 4                    | $L07 --ranks 3
2 | --steps '0': expected a whole number from 1             | $L07 --steps 0
2 | --ranks '1': expected a whole number from 2 to          | $L08 --ranks 1
2 | --model 'cnn:3': model spec 'cnn:3': unknown kind       | $L08 --model cnn:3
2 | --ranks '17': expected a whole number from 2 to 16      | $L09 --ranks 17
2 | --net 'warp': unknown network preset                    | $L09 --net warp
2 | --momentum '1': expected a number in [0, 1)             | $L10 --momentum 1
2 | --only '4': expected a whole number from 1 to 3         | $L10 --only 4
2 | --out: no such option any more: it is --figures         | $L10 --out build
2 | --width '8': expected a whole number from 16 to 2048    | $L11 --width 8
2 | --out: no such option any more: it is --figures         | $L11 --out build
2 | --max-ranks 12: not a power of two                      | $L12 --max-ranks 12
2 | --steps 'x': expected a whole number                    | $L12 --steps x
2 | --out: no such option any more: it is --figures         | $L12 --out build
2 | --victim 5: the run has 3 ranks                       | $L14 --victim 5
2 | bad failure plan 'rank=0:step=6:phase=nap'           | $L14 --phase nap
2 | --trace '/nonexistent-dtlab/t.json': no folder         | $L14 --trace /nonexistent-dtlab/t.json
TABLE
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
