# shellcheck shell=bash
# spin.sh - sourced by stress.sh and kernels.sh: spin loops that keep every
# core busy besides the grading. start_spinners measures over a second
# (from /proc/stat) the cores the machine's other work leaves idle and
# starts a spin loop for each, so that a machine already under load (as CI
# under load) is not loaded twice over; stop_spinners stops them. The
# caller sets JOBS (the cores) and traps EXIT, INT and TERM to stop them.
spinners=()
stop_spinners() {
    local p
    for p in "${spinners[@]}"; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    spinners=()
}
# The cores other work leaves idle (every core, where /proc/stat cannot be read).
idle_cores() {
    local a b
    a=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat 2>/dev/null)
    sleep 1
    b=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat 2>/dev/null)
    if [ -z "$a" ] || [ -z "$b" ]; then
        echo "$JOBS"
        return
    fi
    echo "$a $b" | awk -v n="$JOBS" '{ d = $4 - $2; i = d > 0 ? ($3 - $1) / d : 1
                                       k = int(i * n + 0.5); print (k > n ? n : k) }'
}
start_spinners() { # prefix of the line that says how many
    local k
    k=$(idle_cores)
    for _ in $(seq 1 "$k"); do
        (while :; do :; done) &
        spinners+=($!)
    done
    echo "${1:-stress}: $k spin loop(s) for the idle cores of $JOBS"
}
