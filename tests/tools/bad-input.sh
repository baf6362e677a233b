#!/usr/bin/env bash
# bad-input.sh - every tool refuses bad input with a message that names
# what was wrong (the option or the variable, and the value) and a known
# exit status; run by `make test` (the suite's "tools" step).
#   tests/tools/bad-input.sh BUILD
#
# The table below has one row per case:
#
#   STATUS | TEXT | COMMAND
#
#   STATUS   the exit status expected: 2 for a bad option or variable,
#            1 for a failure at run time (a file that cannot be read), 0 for
#            the good runs that show the table's commands are right
#   TEXT     a text that stdout + stderr must contain (exactly, case
#            included); empty: anything
#   COMMAND  run by bash with BUILD/bin first on PATH and $WORK a fresh
#            folder of its own; at most 60 s
#
# To add a tool's cases, add rows (keep one tool's rows together).
set -uo pipefail
BUILD=${1:-build}
PATH="$(cd "$BUILD/bin" && pwd):$PATH"
export PATH
WORK=$(mktemp -d)
export WORK
trap 'rm -rf "$WORK"' EXIT
unset DT_NRANKS DT_BACKEND DT_NET DT_TIMEOUT DT_DEBUG DT_ALGO DT_TRACE DT_FAULT \
    DT_SPIN_US DT_BIND DT_ARENA_MB

table() {
    cat <<'EOF'
# ---- dtbench: sizes, factor, counts, names
2 | -b '1T': expected a size in bytes           | dtbench allreduce -b 1T
2 | -b '-8': expected a size in bytes           | dtbench allreduce -b -8
2 | -b 'abc': expected a size in bytes          | dtbench allreduce -b abc
2 | -e '2X': expected a size in bytes           | dtbench allreduce -e 2X
2 | -b 1024 is larger than -e 8                 | dtbench allreduce -b 1K -e 8
2 | -f '0': expected a number in (1, 1e+06]      | dtbench allreduce -f 0
2 | -f '1': expected a number in (1, 1e+06]      | dtbench allreduce -f 1
2 | -f 'x2': expected a number in (1,           | dtbench allreduce -f x2
2 | -n '0': expected a whole number from 1 to   | dtbench allreduce -n 0
2 | -n 'two': expected a whole number           | dtbench allreduce -n two
2 | --iters '0': expected a whole number        | dtbench allreduce --iters 0
2 | --warmup '-1': expected a whole number      | dtbench allreduce --warmup -1
2 | --check '2': expected a whole number from 0 to 1 | dtbench allreduce --check 2
2 | -d 'f64': expected one of f32, f16, bf16     | dtbench allreduce -d f64
2 | -o 'mean': expected one of sum, prod         | dtbench allreduce -o mean
2 | --backend 'gpu': unknown backend            | dtbench allreduce --backend gpu
2 | --backend 'mpi': not available              | dtbench allreduce --backend mpi
2 | --algo 'fastest': unknown algorithm         | dtbench allreduce --algo fastest
2 | --net 'warp': unknown network preset 'warp' | dtbench allreduce --net warp
2 | --net 'alpha=1parsec': bad network          | dtbench allreduce --net alpha=1parsec
2 | unknown collective 'allreduse'              | dtbench allreduse
2 | unknown option '--fast'                     | dtbench allreduce --fast
2 | unexpected argument 'now'                   | dtbench allreduce now
2 | -b needs a value                            | dtbench allreduce -b
2 | --ranks '0': expected a whole number from 1 | dtbench allreduce --ranks 0
2 | -b '1T': expected a size in bytes from 0 to 274877906944 | dtbench allreduce -b 1T
2 | usage: dtbench                              | dtbench
0 | busbw                                       | dtbench allreduce -b 8 -e 64 -n 2 --iters 2 --warmup 1
0 | launch: 2 ranks (proc)                      | dtbench launch --backend proc --iters 2
# ---- every DT_* variable the library reads, through dtbench (its launch)
2 | DT_NRANKS='abc': expected a whole number    | DT_NRANKS=abc dtbench allreduce
2 | DT_BACKEND: unknown backend 'pigeon'        | DT_BACKEND=pigeon dtbench allreduce
2 | DT_NET: unknown network preset 'warp'       | DT_NET=warp dtbench allreduce
2 | DT_TIMEOUT='abc': expected a number         | DT_TIMEOUT=abc dtbench allreduce
2 | DT_TIMEOUT='-1': expected a number          | DT_TIMEOUT=-1 dtbench allreduce
2 | DT_DEBUG='on': expected a whole number      | DT_DEBUG=on dtbench allreduce
2 | DT_ALGO: unknown algorithm 'best'           | DT_ALGO=best dtbench allreduce
2 | DT_FAULT: bad fault 'boom'                  | DT_FAULT=boom dtbench allreduce
2 | DT_SPIN_US='-1': expected a number          | DT_SPIN_US=-1 dtbench allreduce
2 | DT_BIND='yes': expected a whole number      | DT_BIND=yes dtbench allreduce
2 | DT_ARENA_MB='abc': expected a whole number  | DT_ARENA_MB=abc dtbench allreduce --backend proc
2 | DT_ARENA_MB='-5': expected a whole number   | DT_ARENA_MB=-5 dtbench allreduce --backend proc
2 | DT_JOB_ID='a/b': expected at most 40        | DT_JOB_ID=a/b dtbench allreduce --backend proc
# ---- dtrun
2 | -n '0': expected a whole number from 1 to   | dtrun -n 0 true
2 | -np 'abc': expected a whole number          | dtrun -np abc true
2 | -n N is required                            | dtrun true
2 | no program to run                           | dtrun -n 2
2 | -n needs a value                            | dtrun -n
2 | --backend 'thread': a program's ranks are processes | dtrun -n 2 --backend thread true
2 | --net 'warp': unknown network preset 'warp' | dtrun -n 2 --net warp true
2 | --timeout 'soon': expected a number         | dtrun -n 2 --timeout soon true
2 | --timeout '0': expected a number            | dtrun -n 2 --timeout 0 true
2 | --algo 'best': unknown algorithm            | dtrun -n 2 --algo best true
2 | --fault: bad fault 'boom'                   | dtrun -n 2 --fault boom true
2 | --trace '': expected a file name            | dtrun -n 2 --trace '' true
2 | unknown option '--gpus'                     | dtrun -n 2 --gpus 1 true
2 | --trace '/nonexistent-dtlab/t.json': no folder | dtrun -n 2 --trace /nonexistent-dtlab/t.json true
2 | DT_TIMEOUT='abc': expected a number         | DT_TIMEOUT=abc dtrun -n 2 true
2 | DT_ARENA_MB='-5': expected a whole number   | DT_ARENA_MB=-5 dtrun -n 2 true
0 |                                             | dtrun -n 2 true
3 | rank 1: exited with status 3                | dtrun -n 2 sh -c '[ "$RANK" = 1 ] && exit 3; exit 0'
# ---- dtsim
2 | --alpha 'fast': expected a time             | dtsim --alpha fast --bw 1GB/s --bytes 1M --ranks 2
2 | --bw '0': expected a rate > 0               | dtsim --alpha 1us --bw 0 --bytes 1M --ranks 2
2 | --bw '1Q': expected a rate                  | dtsim --alpha 1us --bw 1Q --bytes 1M --ranks 2
2 | --bw '25G': expected a rate > 0 such as 25GB/s | dtsim --alpha 1us --bw 25G --bytes 1M --ranks 2
2 | --bytes '-1M': expected a size in bytes     | dtsim --alpha 1us --bw 1GB/s --bytes -1M --ranks 2
2 | --ranks '0': expected a whole number        | dtsim --alpha 1us --bw 1GB/s --bytes 1M --ranks 0
2 | --ranks '2.5': expected a whole number      | dtsim --alpha 1us --bw 1GB/s --bytes 1M --ranks 2.5
2 | --comp '-1': expected a time                | dtsim --alpha 1us --bw 1GB/s --bytes 1M --ranks 2 --comp -1
2 | --stages and --micro go together            | dtsim --alpha 1us --bw 1GB/s --bytes 1M --ranks 2 --stages 4
2 | --micro '0': expected a whole number        | dtsim --alpha 1us --bw 1GB/s --bytes 1M --ranks 2 --stages 4 --micro 0
2 | --alpha and --bw (or --net), --bytes and --ranks are all needed | dtsim --alpha 1us
2 | unknown option '--gpus'                     | dtsim --gpus 8
2 | --alpha needs a value                       | dtsim --alpha
2 | --net replaces --alpha, --bw and --gamma    | dtsim --net ib100 --alpha 1us --bytes 1M --ranks 2
2 | --bytes '1.5': expected a size in bytes     | dtsim --net ib100 --bytes 1.5 --ranks 2
0 | ring                                        | dtsim --alpha 5us --bw 25GB/s --bytes 256Mi --ranks 8
0 | ring                                        | dtsim --net ib100 --bytes=1G --ranks=8
# ---- one size convention (dt_parse_bytes): 256M = 256Mi = 2^28 bytes in every
# tool, 1e6 decimal; dtbench shows the number it read in the -b > -e error
2 | -b 268435456 is larger than -e 8            | dtbench allreduce -b 256M -e 8
2 | -b 268435456 is larger than -e 8            | dtbench allreduce -b 256Mi -e 8
2 | -b 1000000 is larger than -e 8              | dtbench allreduce -b 1e6 -e 8
0 | n 268435456 bytes                           | dtsim --net ib100 --bytes 256M --ranks 8
0 | n 268435456 bytes                           | dtsim --net ib100 --bytes 256Mi --ranks 8
0 | n 1000000 bytes                             | dtsim --net ib100 --bytes 1e6 --ranks 8
0 | 256M = 256Mi = 268435456                    | dtsim --help
0 | 256M = 256Mi = 268435456                    | dtbench --help
# ---- dtplot
2 | --logx '3': expected one of none, 2, 10     | dtplot --logx 3 in.csv out.svg
2 | --logy 'e': expected one of none, 2, 10     | dtplot --logy e in.csv out.svg
2 | --style 'dots': expected one of points, line, both | dtplot --style dots in.csv out.svg
2 | unknown option '--width'                    | dtplot --width 3 in.csv out.svg
2 | needs an input CSV and an output SVG        | dtplot in.csv
2 | unexpected argument 'c.svg'                 | dtplot a.csv b.svg c.svg
2 | --title needs a value                       | dtplot in.csv out.svg --title
1 | cannot open the input '/nonexistent.csv'    | dtplot /nonexistent.csv "$WORK/out.svg"
1 | column 2 is not a number                    | printf 'x,y\n1,abc\n' >"$WORK/a.csv" && dtplot "$WORK/a.csv" "$WORK/a.svg"
0 | a.svg                                       | printf 'x,y\n1,2\n2,3\n' >"$WORK/a.csv" && dtplot "$WORK/a.csv" "$WORK/a.svg"
EOF
}

. "$(dirname "$0")/table.sh"
run_table
