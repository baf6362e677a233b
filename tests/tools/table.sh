# table.sh - sourced by the bad-input checks: runs the rows of their table.
#
# The caller defines table(), which prints rows
#     STATUS | TEXT | COMMAND
# (lines starting with '#' and empty lines are skipped), and sets WORK, a
# scratch folder. Each COMMAND runs in a folder of its own under WORK (also
# passed as $WORK), within 60 s; it must exit with STATUS and, where TEXT
# is not empty, say TEXT. Prints a FAIL line per row that does not, then
# "N passed, N failed"; run_table returns nonzero when a row failed.

trim() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' <<<"$1"; }

run_table() {
    local pass=0 fail=0 n=0 line want rest text cmd dir out got
    while IFS= read -r line; do
        case "$line" in '#'* | '') continue ;; esac
        n=$((n + 1))
        want=$(trim "${line%%|*}")
        rest=${line#*|}
        text=$(trim "${rest%%|*}")
        cmd=$(trim "${rest#*|}")
        dir="$WORK/case$n"
        mkdir -p "$dir"
        out=$(cd "$dir" && WORK=$dir timeout 60 bash -c "$cmd" 2>&1)
        got=$?
        if [ "$got" != "$want" ]; then
            echo "FAIL: $cmd: exit status $got, expected $want; it said: $out"
            fail=$((fail + 1))
        elif [ -n "$text" ] && ! grep -qF -- "$text" <<<"$out"; then
            echo "FAIL: $cmd: the message lacks '$text'; it said: $out"
            fail=$((fail + 1))
        else
            pass=$((pass + 1))
        fi
    done < <(table)
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
