# bench/lib.sh - what the benchmark scripts share; sourced, not run:
#   . bench/lib.sh
#   bench_settings 5 60     BUILD, ROUNDS and STEPS from the environment
# Numbers go one per line on stdin; lists of numbers in arguments are
# space-separated, one value per round, in round order.

# BUILD (default build), ROUNDS (default $1) and STEPS (default $2) from
# the environment, checked; one thread per rank for every program (OpenBLAS
# and OpenMP start their own threads otherwise, whatever the ranks).
bench_settings() {
    BUILD=${BUILD:-build}
    ROUNDS=${ROUNDS:-$1}
    STEPS=${STEPS:-$2}
    local v
    for v in ROUNDS STEPS; do
        [[ ${!v} =~ ^[1-9][0-9]*$ ]] ||
            { echo "$0: $v='${!v}': expected a whole number >= 1" >&2; exit 2; }
    done
    export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 DT_BLAS_THREADS=1
}

# The bytes of a size with an optional K or M suffix (powers of 2): 64K -> 65536.
bench_bytes() { awk -v s="$1" 'BEGIN { m = s ~ /K$/ ? 1024 : s ~ /M$/ ? 1048576 : 1
    sub(/[KM]$/, "", s); print s * m }'; }

# bench_list NAME REGEX DEFAULT WHAT: the space-separated list in the variable
# NAME (DEFAULT when unset or empty), every word matching REGEX; exits 2
# naming the variable, the word and WHAT it should be otherwise.
bench_list() {
    local w list=${!1:-$3}
    for w in $list; do
        [[ $w =~ $2 ]] || { echo "$0: $1: '$w' is not $4" >&2; exit 2; }
    done
    echo "$list"
}

# SIZES from the environment (default $1), each a size in bytes.
bench_sizes() { bench_list SIZES '^[1-9][0-9]*[KM]?$' "$1" "a size in bytes (K, M suffixes)"; }

# The median of the numbers on stdin (the mean of the middle two for an
# even count); "nan" for none.
bench_median() {
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
              else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# "min-max" of the numbers on stdin, with FORMAT (default %.2f).
bench_range() {
    sort -g | awk -v f="${1:-%.2f}" '{ v[NR] = $1 }
        END { if (NR == 0) print "-"; else printf f "-" f "\n", v[1], v[NR] }'
}

# The value of "NAME": in the JSON object on stdin (numbers only).
bench_json() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" | head -n 1; }

# Column COL of the first data row of CSV on stdin (a row that starts with
# a number), e.g. dtbench --csv: 4 = time_us, 6 = busbw_GBs, 7 = wrong.
bench_csv() { awk -F, -v c="$1" 'NR > 1 && $1 ~ /^[0-9]/ { print $c; exit }'; }

# VALUE of KEY=VALUE lines on stdin (bench/machine's output).
bench_key() { sed -n "s/^$1=//p" | head -n 1; }

# Per-round ratios of two lists: A_i / B_i, one per line.
bench_ratios() {
    paste <(printf '%s\n' $1) <(printf '%s\n' $2) |
        awk '$1 != "" && $2 != "" && $2 != 0 { printf "%.6f\n", $1 / $2 }'
}

# The median of a list (arguments).
bench_med() { printf '%s\n' "$@" | grep . | bench_median; }

# ---------------------------------------------------------------- allreduce runs

# mpirun as the benchmarks start it: more ranks than cores allowed, and
# root's permission flag only when running as root (a container).
bench_mpirun() {
    local root=()
    [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    mpirun "${root[@]}" --oversubscribe "$@"
}

# bench_mpi_launch N COMMAND...: COMMAND on N MPI ranks, under bench_mpirun,
# or under $BENCH_MPI_LAUNCH where a script sets it (bench/netns.sh: its
# own mpirun across two network namespaces, with N ranks of its own).
bench_mpi_launch() {
    local n=$1
    shift
    if [ -n "${BENCH_MPI_LAUNCH:-}" ]; then
        # shellcheck disable=SC2086 # a command and its options, split
        $BENCH_MPI_LAUNCH "$@"
    else
        bench_mpirun -np "$n" "$@"
    fi
}

# bench_need_mpi NAME: builds dtbench and bench/mpi_allreduce, or ends the
# script NAME: status 0 saying why it skips (no OpenMPI, or libdt built
# without its mpi backend), status 1 when the build failed. Sets DT_QUIET
# for every program: libdt's line about the BLAS kernels has no place here.
bench_need_mpi() {
    export DT_QUIET=1
    command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
        { echo "$1: skipped: mpicc or mpirun not found (make deps installs OpenMPI)"; exit 0; }
    make --no-print-directory -s BUILD="$BUILD" "$BUILD/bin/dtbench" "$BUILD/bench/mpi_allreduce" ||
        { echo "$1: the build failed" >&2; exit 1; }
    bench_dtbench 4 1 mpi 1 0 4 >/dev/null 2>&1 ||
        { echo "$1: skipped: dtbench was built without the mpi backend (MPI=0 or SAN)"; exit 0; }
}

# bench_dtbench SIZE N BACKEND ITERS WARMUP COL [ARGS...]: column COL (4
# time_us, 6 busbw_GBs) of `dtbench allreduce` at SIZE bytes on N ranks of
# BACKEND (thread, proc, or mpi: then under bench_mpi_launch), ITERS timed calls
# after WARMUP; ARGS go to dtbench. Status 1, saying why on stderr, when it
# failed or an element of its result is wrong.
bench_dtbench() {
    local size=$1 n=$2 backend=$3 iters=$4 warmup=$5 col=$6 out launcher=()
    shift 6
    [ "$backend" = mpi ] && launcher=(bench_mpi_launch "$n")
    out=$("${launcher[@]}" "$BUILD/bin/dtbench" allreduce -b "$size" -e "$size" -n "$n" \
        --backend "$backend" --iters "$iters" --warmup "$warmup" --csv "$@") ||
        { echo "dtbench allreduce -b $size -n $n --backend $backend failed" >&2; return 1; }
    [ "$(echo "$out" | bench_csv 7)" = 0 ] ||
        { echo "dtbench: wrong results at $size bytes, N=$n, $backend" >&2; return 1; }
    echo "$out" | bench_csv "$col"
}

# bench_mpi SIZE N ITERS WARMUP COL [ARGS...]: the same of OpenMPI
# (bench/mpi_allreduce under bench_mpi_launch; ARGS: --algo ring, ...).
bench_mpi() {
    local size=$1 n=$2 iters=$3 warmup=$4 col=$5 out
    shift 5
    out=$(bench_mpi_launch "$n" "$BUILD/bench/mpi_allreduce" allreduce -b "$size" -e "$size" \
        --iters "$iters" --warmup "$warmup" "$@") ||
        { echo "mpi_allreduce -b $size -np $n $* failed" >&2; return 1; }
    [ "$(echo "$out" | bench_csv 7)" = 0 ] ||
        { echo "OpenMPI: wrong results at $size bytes, N=$n $*" >&2; return 1; }
    echo "$out" | bench_csv "$col"
}

# Per-round differences of two lists: A_i - B_i, one per line.
bench_diffs() {
    paste <(printf '%s\n' $1) <(printf '%s\n' $2) |
        awk '$1 != "" && $2 != "" { printf "%.6f\n", $1 - $2 }'
}

# ---------------------------------------------------------------- series

# A script's figures: V[NAME] holds NAME's figures, one per round,
# space-separated.
declare -A V
bench_add() { V[$1]="${V[$1]:-} $2"; }

# bench_m NAME COMMAND...: the command's output (one figure) added to NAME's
# series; a failure (the command said why) ends the script.
bench_m() {
    local name=$1 v
    shift
    v=$("$@") && [ -n "$v" ] || exit 1
    bench_add "$name" "$v"
}

# Runs the script's function `round` ROUNDS times, each one's duration on
# stderr; BENCH_LOAD: the load average before.
bench_rounds() {
    local r t0
    BENCH_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
    for r in $(seq "$ROUNDS"); do
        t0=$EPOCHSECONDS
        round
        echo "round $r of $ROUNDS: $((EPOCHSECONDS - t0)) s" >&2
    done
}

# The median of NAME's series.
bench_smed() { bench_med ${V[$1]:-}; } # shellcheck disable=SC2086

# bench_sratio A B [SUFFIX]: the median (with SUFFIX, default x) and range
# of the per-round ratios of the series A / B; "-" when either is empty.
bench_sratio() {
    [ -n "${V[$1]:-}" ] && [ -n "${V[$2]:-}" ] || { printf -- "-"; return; }
    local r
    r=$(bench_ratios "${V[$1]}" "${V[$2]}")
    printf "%.2f${3:-x} (%s)" "$(echo "$r" | bench_median)" "$(echo "$r" | bench_range)"
}
