#!/usr/bin/env bash
# check-lab-run.sh - the programs of labs 05 and 06 (`make run-lab`) refuse
# bad options before they run anything, with status 2 and a line naming
# the option (or variable) and its value; on the skeleton they end with
# status 1, naming the lab function not done. The skeleton's programs are
# used (make builds them, and options are read before any student function
# runs), so the check needs no solution. One case a row:
#     expected exit status | text the output must contain | command
# the command run by bash with $MP and $PIPE the two programs.
#   tests/tools/check-lab-run.sh BUILD
set -uo pipefail
BUILD=${1:-build}
MP=$BUILD/labs/05-model-parallel/run
PIPE=$BUILD/labs/06-pipeline-parallel/run
export MP PIPE BUILD DT_QUIET=1
pass=0
fail=0
for prog in "$MP" "$PIPE"; do
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
0 | usage:                                                  | $MP --help
2 | --ranks '0': need an integer in 1..                     | $MP --ranks 0
2 | --ranks 'x': need an integer in 1..                     | $MP --ranks x
2 | --net 'nosuch'                                          | $MP --net nosuch
2 | unknown or incomplete option '--bogus'                  | $MP --bogus
1 | lab_mp_partition                                        | $MP
0 | usage:                                                  | $PIPE --help
2 | --ranks '1': need an integer in 2..                     | $PIPE --ranks 1
2 | --micro '65': need an integer in 1..64                  | $PIPE --micro 65
2 | --micro '2x': need an integer in 1..64                  | $PIPE --micro 2x
2 | --net 'nosuch'                                          | $PIPE --net nosuch
2 | --figures '/nonexistent-dtlab': no such folder          | $PIPE --figures /nonexistent-dtlab
2 | BUILD '/nonexistent-dtlab': no such folder              | BUILD=/nonexistent-dtlab $PIPE
2 | --schedule, --skew and --measure go one at a time       | $PIPE --skew --measure
2 | unknown option '--ranks', or it lacks its value         | $PIPE --ranks
2 | unknown option '--bogus'                                | $PIPE --bogus
1 | cannot open schedule '/nonexistent-dtlab'               | $PIPE --schedule /nonexistent-dtlab
1 | lab_sched_gpipe returned DT_ERR_NOT_IMPLEMENTED         | $PIPE
1 | lab_sched_1f1b returned DT_ERR_NOT_IMPLEMENTED          | $PIPE --skew
TABLE
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
