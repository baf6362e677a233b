#!/usr/bin/env bash
# bench/chapter.sh - every table and figure of one chapter, from one command:
#
#   bash bench/chapter.sh NN [FIGURES]
#
# NN is the chapter (00, 01, 02, 03, 04, 05, 06, 07, 08, 09, 10, 11, 12); without it (as `make bench-chapter`
# runs it) every chapter in turn. Runs the lab's program with
# each setting the chapter's tables come from, prints each run's output
# under a heading that names the table it feeds, and writes the chapter's
# figures into FIGURES (default $BUILD/chapters, so that `make bench` leaves
# the tree alone; chapters/figures to regenerate the book's own).
#
# IMPL picks the code that runs: solutions when the tree has them (the
# chapter's numbers), else labs (your code). Modeled-clock tables come out
# the same on any machine; wall-clock ones and the asynchronous runs of
# chapter 04 change from run to run, as their chapters say.
set -euo pipefail

nn=${1:-}
BUILD=${BUILD:-build}
FIG=${2:-$BUILD/chapters}
if [ -z "$nn" ]; then
    for c in 00 01 02 03 04 05 06 07 08 09 10 11 12; do
        bash "$0" "$c" "$FIG"
    done
    exit 0
fi
if [ -z "${IMPL:-}" ]; then
    IMPL=labs
    [ -d solutions ] && IMPL=solutions
fi
mkdir -p "$FIG"

run_lab() { # LAB ARGS...: one run of the lab's program, under a heading
    local lab=$1
    shift
    echo
    echo "==== make run-lab LAB=$lab IMPL=$IMPL ARGS=\"$*\""
    make -s --no-print-directory run-lab LAB="$lab" IMPL="$IMPL" BUILD="$BUILD" ARGS="$*"
}

table() { echo; echo "#### chapter $nn: $*"; }

case "$nn" in
00)
    table "section 7, exercises (costs on 8 ranks); section 8 (what each rank reports)"
    run_lab 00 --ranks 8
    run_lab 00 --ranks 4
    ;;
01)
    table "section 9, the table of each rank's clock; the figure 01-bcast-time over N = 1..16"
    run_lab 01 --svg "$FIG/01-bcast-time.svg"
    table "section 9, the ring pass on an odd number of ranks (N = 5)"
    run_lab 01 --ranks 5 --barriers 100
    table "section 4, microseconds per barrier (wall clock: varies with the machine's load)"
    for spin in 0 20 200 2000; do
        run_lab 01 --count 0 --barriers 3000 --spin "$spin"
    done
    run_lab 01 --count 0 --barriers 30 --spin 1000000000
    for spin in 0 20 2000; do
        run_lab 01 --ranks 2 --count 0 --barriers 3000 --spin "$spin"
    done
    ;;
02)
    table "section 9, K = 8 on ib100; figures 02-busbw-ib100 (modeled) and 02-busbw-wall"
    run_lab 02 --ranks 8 --net ib100 --max 16M --svg "$FIG/02-busbw-ib100.svg" --wall-svg "$FIG/02-busbw-wall.svg"
    table "section 9, K = 8 on eth10"
    run_lab 02 --ranks 8 --net eth10 --max 16M --svg "$BUILD/02-busbw-eth10.svg" --wall-svg "$BUILD/02-busbw-eth10-wall.svg"
    table "section 9, recursive doubling on K = 6, ib100"
    run_lab 02 --ranks 6 --net ib100 --max 16M --svg "$BUILD/02-busbw-k6.svg" --wall-svg "$BUILD/02-busbw-k6-wall.svg"
    ;;
03)
    table "section 10, every table (memory per rank by tag: table 5); the figure 03-overlap"
    run_lab 03 --svg "$FIG/03-overlap.svg"
    table "section 5, the worked example on the modeled clock (8 ranks, 100 MB: about 1.8 GB of memory)"
    run_lab 03 --example
    table "section 10, the same on real data (make run: wall times vary)"
    make -s --no-print-directory run BUILD="$BUILD"
    ;;
04)
    table "section 11, the run table, the staleness histogram; figures 04-accuracy-time and 04-staleness"
    run_lab 04 --figures "$FIG"
    table "section 11, accuracy at lr 0.4 in eight runs"
    for i in 1 2 3 4 5 6 7 8; do
        run_lab 04 --lr 0.4
    done
    table "section 3, the stability limit against the staleness (deterministic: no threads)"
    run_lab 04 --stability
    table "section 8, lost Hogwild! updates (a race: varies from run to run and with the load)"
    run_lab 04 --lost-updates
    table "section 9.1, the server's bottleneck: a synchronous round against K on eth10"
    run_lab 04 --net eth10 --compute-ms 0.05 --knee 24
    table "section 11, no straggler"
    run_lab 04 --slow-ms 0
    table "section 11, a straggler on the network (10 ms per message)"
    run_lab 04 --slow-ms 0 --delay-ms 10
    ;;
05)
    table "section 7, every table (modeled clock)"
    run_lab 05
    table "section 7, the balance by measured layer times (wall clock: varies with the machine's load)"
    run_lab 05 --measure
    ;;
06)
    table "section 10, timelines, bubble, memory and messages; figures 06-gpipe, 06-1f1b, 06-interleaved, 06-zbh1"
    run_lab 06 --figures "$FIG"
    table "section 10, a slow last stage; figure 06-skew"
    run_lab 06 --skew --figures "$FIG"
    table "section 10, the wall clock (varies with the machine and its load)"
    run_lab 06 --measure
    ;;
07)
    table "section 11, every table (the wall clock varies with the machine's load); figure 07-loss"
    run_lab 07 --svg "$FIG/07-loss.svg"
    ;;
08)
    table "section 10, every table; the figure 08-memory"
    run_lab 08 --svg "$FIG/08-memory.svg"
    ;;
09)
    table "section 9, the memory table and the ib100 times"
    run_lab 09
    table "section 9, the eth10 times; the figure 09-prefetch"
    run_lab 09 --net eth10 --svg "$FIG/09-prefetch.svg"
    ;;
10)
    table "section 11, every table; the figure 10-loss"
    run_lab 10 --figures "$FIG"
    table "section 12, exercise 1: error feedback with momentum"
    run_lab 10 --only 1 --momentum 0.9 --lr 0.02 --figures "$BUILD"
    ;;
11)
    table "section 9, every table (the wall clock varies with the machine's load); figures 11-loss and 11-ckpt-memory"
    run_lab 11 --figures "$FIG"
    ;;
12)
    table "section 11, every table; figures 12-speedup and 12-efficiency (eth10)"
    run_lab 12 --figures "$FIG"
    table "section 12, the column 'none' (a network that costs nothing)"
    run_lab 12 --net none --figures "$BUILD"
    ;;
*)
    echo "usage: bash bench/chapter.sh NN [FIGURES]   (NN: 00 01 02 03 04 05 06 07 08 09 10 11 12)" >&2
    exit 2
    ;;
esac
echo
echo "chapter $nn: figures in $FIG"
