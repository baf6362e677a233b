#!/usr/bin/env bash
# check-dtrun.sh - dtrun ends its job cleanly (run by `make test`):
#   - SIGTERM or SIGINT sent to dtrun reaches every rank; dtrun exits with
#     128 + the signal, saying so, and leaves no shared memory behind;
#   - killed with SIGKILL, dtrun takes its ranks with it (each rank has a
#     parent-death signal), and the next dtrun removes the segment it left.
# Every wait polls with a deadline far above what the step needs, so a
# loaded machine changes nothing but the time taken.
#   tests/tools/check-dtrun.sh BUILD
set -uo pipefail
shopt -s nullglob
set -m # background jobs keep SIGINT (a script without job control ignores it there)
BUILD=${1:-build}
dtrun=$BUILD/bin/dtrun
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DT_JOB_ID=dtrun-check-$$
uid=$(id -u)
pass=0
fail=0
check() { # what command...
    local what=$1
    shift
    if "$@"; then
        pass=$((pass + 1))
    else
        echo "FAIL: $what"
        fail=$((fail + 1))
    fi
}

segments() { find /dev/shm -maxdepth 1 -name "dtlab.$uid.$DT_JOB_ID.*" 2>/dev/null | wc -l; }
no_segment() { [ "$(segments)" -eq 0 ]; }
one_segment() { [ "$(segments)" -eq 1 ]; }
# A process is gone when it does not exist, or is a zombie its new parent
# has not reaped yet.
gone() {
    local state
    state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
    [ -z "$state" ] || [ "$state" = Z ]
}
within() { # seconds command...: polls until the command succeeds
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        [ $SECONDS -ge $end ] && return 1
        sleep 0.1
    done
}
ranks_started() { [ "$(find "$work" -name 'pid.*' | wc -l)" -eq "$1" ]; }
ranks_gone() {
    local f
    for f in "$work"/pid.*; do gone "$(cat "$f")" || return 1; done
}
dtrun_gone() { gone "$dtrun_pid"; }

# Ranks that record their pid and wait; they never join the job, so its
# segment keeps its name until dtrun removes it.
# dtrun keeps a signal ignored that was ignored when it started (as a shell
# ignores SIGINT for a background job, and so for this script when it runs
# in the background): the job starts with the three signals at their
# defaults, so that the test sees what a user who presses Ctrl-C sees.
start_job() { # ranks
    rm -f "$work"/pid.*
    env --default-signal=INT,TERM,HUP "$dtrun" -n "$1" sh -c 'echo $$ >"$0/pid.$RANK"; exec sleep 120' "$work" \
        >"$work/out" 2>&1 &
    dtrun_pid=$!
    within 30 ranks_started "$1"
}

for sig in TERM INT; do
    check "SIG$sig: dtrun started 3 ranks" start_job 3
    check "SIG$sig: the job's segment exists while it runs" one_segment
    kill -s "$sig" "$dtrun_pid"
    if within 30 dtrun_gone; then
        wait "$dtrun_pid"
        status=$?
        want=$((128 + $(kill -l "$sig")))
        check "SIG$sig: dtrun exits with $want, not $status" [ "$status" -eq "$want" ]
        check "SIG$sig: dtrun says it was interrupted: $(cat "$work/out")" \
            grep -q "interrupted by signal $(kill -l "$sig")" "$work/out"
    else
        check "SIG$sig: dtrun still runs 30 s after the signal" false
        kill -KILL "$dtrun_pid"
        wait "$dtrun_pid" 2>/dev/null
    fi
    check "SIG$sig: every rank has ended" within 30 ranks_gone
    check "SIG$sig: the job's segment is removed" no_segment
done

check "SIGKILL: dtrun started 2 ranks" start_job 2
kill -KILL "$dtrun_pid"
wait "$dtrun_pid" 2>/dev/null # reaped: its pid names no process any more
check "SIGKILL: the ranks die with dtrun" within 30 ranks_gone
check "SIGKILL: the segment is left behind (dtrun could not remove it)" one_segment
check "SIGKILL: the next dtrun runs" "$dtrun" -n 1 true
check "SIGKILL: the next dtrun removed the stale segment" no_segment

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
