#!/usr/bin/env bash
# suite.sh - the project's own suite, run by `make test` (and by CI):
#
#   build      libdt, the tools, the unit tests, the grader's fixtures and
#              every lab's skeleton, with no compiler error
#   selftest   the grader's own test (tests/grader/selftest.sh)
#   unit       libdt's unit tests, graded by dtgrade: full marks
#   convention (without SAN) the lab convention (tests/grader/check-convention.sh)
#   tools      the tools' own checks (tests/tools/check-*.sh) and their refusal
#              of bad input (tests/tools/bad-input*.sh)
#   solutions  every lab graded with IMPL=solutions, as `make check` grades
#              (spliced into the official files; race-sensitive tests also
#              under ThreadSanitizer): full marks
#   skeleton   (without SAN) every lab graded with IMPL=labs: builds, scores
#              0, no timeout
#   mutants    (without SAN) every tests/NN-topic/mutants/*.patch applied to a copy of the
#              solutions, graded as `make check` grades it: each must lose
#              points, or be refused at build by the grader's rules
#              (tests/grader/lab-objects.sh: what a lab calls, its static
#              storage), with the reason (a line per mutant as it is done)
#   student    the student tree (make dist-student: tests/grader/check-dist.sh)
#   gradescope (without SAN) every lab's Gradescope zip run as Gradescope runs
#              it, on a perfect, an empty, a broken and a loose-files
#              submission, and the zip of every lab on a broken one
#              (tests/grader/check-gradescope.sh)
#   backends   (without SAN) the communicator's unit tests and labs 01-04
#              and 12 (solutions) again on the proc backend and, where libdt
#              has it (MPI_BUILT, set by the Makefile), on the mpi backend,
#              each test under mpirun -np 8: full marks
#   gpu        (without SAN) `make gpu`, where nvcc and NCCL are found, then
#              its GPU tests (tests/gpu/): without a GPU each reports
#              "skipped: no GPU", counted as skipped in the closing line,
#              never as passed; a failed one fails the step
#   small-shm  (without SAN) the unit tests and the solutions again, in a
#              private 64 MB /dev/shm (Docker's default size), where one
#              unit test also fills it; skipped, and not counted, where no
#              private mount can be made (it needs root or user namespaces)
#
# Environment (set by the Makefile): MAKE, BUILD, SAN, WERROR, CC.
# Each step goes on even when an earlier one failed; the exit status is 1
# if any step failed. Each step prints a line when it starts, and each of
# its counts as "STEP, WHAT: N passed, N failed" (what ran, on which
# backend). The summary gives every step's time, then each failed test
# once with the steps it failed in. Logs and results.json files go to
# $BUILD/test/.
set -uo pipefail

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
SAN=${SAN:-}
WERROR=${WERROR:-}
CC=${CC:-cc}
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
[ "$JOBS" -gt 8 ] && JOBS=8
# libdt's line about the BLAS kernels (lib/tensor/blas_startup.c) would
# repeat in every step: the suite grades behaviour, not speed.
export DT_QUIET=1
# Sanitizers slow tests down: give every timeout more room.
case "$SAN" in
    address) export DT_TIMEOUT_SCALE=${DT_TIMEOUT_SCALE:-3} ;;
    thread) export DT_TIMEOUT_SCALE=${DT_TIMEOUT_SCALE:-5} ;;
esac

if [ ! -d solutions ]; then
    echo "make test is the staff's suite: it needs solutions/. In the student tree, run make check."
    exit 2
fi

out=$BUILD/test
rm -rf "$out"
mkdir -p "$out"
dtgrade=$BUILD/bin/dtgrade
labs=$(for d in tests/[0-9][0-9]-*/; do ls "$d"*.c >/dev/null 2>&1 && basename "$d"; done)

m() { "$MAKE" --no-print-directory -j"$JOBS" BUILD="$BUILD" SAN="$SAN" WERROR="$WERROR" CC="$CC" "$@"; }

# Grades labs as `make check` does (tests/grader/check.sh): IMPL=$1 for
# the labs $LABS (default all), dtgrade's flags after it.
check() { # impl dtgrade-flags...
    local impl=$1
    shift
    env MAKE="$MAKE" BUILD="$BUILD" SAN="$SAN" CC="$CC" WERROR="${CHECK_WERROR-$WERROR}" \
        IMPL="$impl" OFFICIAL=labs LABS="${LABS:-$labs}" RACE="${RACE:-1}" GRADE_JOBS="$JOBS" \
        DTGRADE_FLAGS="$*" tests/grader/check.sh
}

# Names a count line of a step's output ("N passed, N failed") with what
# it counts: "unit, thread backend: 520 passed, 0 failed".
label() { # what (any text: "/dev/shm" included, so not a sed pattern)
    awk -v what="$1" '/^[0-9]+ passed, [0-9]+ failed/ { $0 = what ": " $0 } { print; fflush() }'
}
backend=${DT_BACKEND:-thread}

names=()
results=()
times=()
failed=0
step() { # name command...
    local name=$1 t0 t1 rc
    shift
    echo "==== make test: $name"
    t0=$(date +%s.%N)
    "$@"
    rc=$?
    t1=$(date +%s.%N)
    names+=("$name")
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')")
    if [ $rc -eq 0 ]; then
        results+=(ok)
    else
        results+=(FAILED)
        failed=$((failed + 1))
    fi
    echo
}

# A line every 10 s while a long command runs: how long, and how many
# objects are newer than its start (the build's progress, whatever its output).
with_progress() { # label log command...
    local label=$1 log=$2 t0=$SECONDS pid rc
    shift 2
    touch "$out/$label.start"
    "$@" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if [ $(((SECONDS - t0) % 10)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
            echo "$label: $((SECONDS - t0)) s, $(find "$BUILD" -name '*.o' -newer "$out/$label.start" 2>/dev/null | wc -l) object(s) compiled so far"
        fi
    done
    wait "$pid"
    rc=$?
    rm -f "$out/$label.start"
    return $rc
}

do_build() {
    with_progress build "$out/build.log" m -k all
    local rc=$?
    grep -E 'warning:|error:' "$out/build.log" | head -n 40
    if [ $rc -ne 0 ]; then
        tail -n 20 "$out/build.log"
        echo "build failed (full log: $out/build.log)"
        return 1
    fi
    if grep -q 'warning:' "$out/build.log"; then
        echo "build: compiler warnings (full log: $out/build.log)"
        return 1
    fi
    echo "build: ok"
}

do_selftest() {
    m "$dtgrade" "$BUILD/tests/grader/fixtures/grade" >/dev/null || return 1
    SAN="$SAN" tests/grader/selftest.sh "$dtgrade" "$BUILD/tests/grader/fixtures/grade" "$out/selftest"
}

# The unit tests and the solutions leave a mark for each test that uses the
# BLAS (dtgrade --blas-marks): make test-kernels KERNELS_DONE=own grades
# those again under the other kernel sets, right after.
marks=$out/blas-marks
do_unit() {
    m "$dtgrade" "$BUILD/tests/lib/grade" >/dev/null 2>&1
    [ -x "$BUILD/tests/lib/grade" ] || rm -f "$BUILD/tests/lib/grade"
    "$dtgrade" -q -j "$JOBS" --min-score-full --tests-root tests --blas-marks "$marks" \
        --results "$out/unit.json" "lib=$BUILD/tests/lib/grade" | tee "$out/unit.txt" |
        label "unit, libdt's tests on the $backend backend"
}

do_gpu() {
    m gpu >"$out/gpu.log" 2>&1
    local rc=$?
    grep -E '^gpu: |warning:|error:' "$out/gpu.log" | head -n 20
    [ $rc -eq 0 ] || { echo "make gpu failed (log: $out/gpu.log)"; return 1; }
    if [ ! -x build/gpu/tests/gpu/grade ]; then
        echo "0 passed, 0 failed" >"$out/gpu.txt" # make gpu said why it skipped
        return 0
    fi
    # lab 15's GPU tests (make gpu's build only), the solution's, graded
    # beside tests/gpu/'s; make check splices and builds it (RACE=0: no
    # ThreadSanitizer build of the GPU libdt; the lab's race-sensitive host
    # tests ran in the solutions step)
    "$MAKE" --no-print-directory -j"$JOBS" check LAB=15 IMPL=solutions GPU=1 BUILD=build/gpu RACE=0 \
        WERROR="$WERROR" CC="$CC" DTGRADE_FLAGS="--only gpu_" DT_RESULTS="$out/gpu-lab15.json" \
        >>"$out/gpu.log" 2>&1 || { echo "lab 15 in make gpu's build failed (log: $out/gpu.log)"; return 1; }
    "$dtgrade" -q --tests-root tests --results "$out/gpu.json" --only gpu_ \
        "gpu=build/gpu/tests/gpu/grade" "15-capstone-gpu=build/gpu/spliced/solutions/15-capstone-gpu/grade" |
        tee "$out/gpu.txt"
    ! grep -qE '^[0-9]+ passed, [1-9][0-9]* failed' "$out/gpu.txt"
}

do_convention() {
    tests/grader/check-convention.sh
}

# One count line per check, named: "tools, check-dttrain.sh: 30 passed, 0
# failed"; a check's other lines (its failures) as it printed them.
# Under a sanitizer only the checks that run the build's programs: the
# others read the sources, the scripts or make's output, the same in every
# build, and the plain build's run has judged them.
static_checks="check-chapters.sh check-deps.sh check-make-help.sh check-seam.sh check-setup-deps.sh"
do_tools() {
    local t name
    : >"$out/tools.log"
    for t in tests/tools/check-*.sh tests/tools/bad-input*.sh; do
        [ -f "$t" ] || continue
        name=$(basename "$t")
        if [ -n "$SAN" ] && [[ " $static_checks " == *" $name "* ]]; then
            continue
        fi
        # a check that dies before its count line counts as one failure
        "$t" "$BUILD" >"$out/tool.out" 2>&1
        local rc=$?
        if [ $rc -ne 0 ] && ! grep -qE '^[0-9]+ passed, [0-9]+ failed' "$out/tool.out"; then
            echo "FAIL: $t exited with status $rc" >>"$out/tool.out"
        fi
        label "tools, $name" <"$out/tool.out" | tee -a "$out/tools.log"
    done
    awk '/: [0-9]+ passed, [0-9]+ failed/ { sub(/.*: /, ""); p += $1; f += $3 }
         /^FAIL: .* exited with status/ { f++ }
         END { printf "%d passed, %d failed\n", p, f; exit f > 0 }' \
        "$out/tools.log" >"$out/tools.txt"
}

# The build step compiled every lab's skeleton (make all, into $BUILD/labs/):
# its test objects serve the spliced builds below as they are (check.sh's
# SEED_FROM; the lab's own objects are not taken from there: a spliced
# file's #line names the folder it came from, so none is byte-identical).
do_solutions() {
    [ -n "$labs" ] || { echo "no labs"; return 0; }
    SEED_FROM=labs check solutions -q --min-score-full --blas-marks "$marks" --results "$out/solutions.json" | tee "$out/solutions.txt" |
        label "solutions, every lab on the $backend backend"
}

do_skeleton() {
    [ -n "$labs" ] || { echo "no labs"; return 0; }
    SEED_FROM=labs check labs -q --expect-zero --results "$out/skeleton.json" |
        label "skeleton, every lab on the $backend backend (untouched: every test must fail)"
}

# One mutant: a copy of solutions/LAB with the patch applied, graded as
# make check grades it (its test objects are those of the solutions).
run_mutant() { # lab patch
    local lab=$1 patch=$2 name dir log
    name=$(basename "$patch" .patch)
    dir=$BUILD/mutants/$lab/$name
    log=$out/mutant-$lab-$name.log
    rm -rf "$dir"
    mkdir -p "$dir/solutions"
    cp -R "solutions/$lab" "$dir/solutions/"
    # Paths in the patch are a/solutions/LAB/... (from the repository root);
    # a/LAB/... (from solutions/) is accepted too.
    if patch -p1 -s -f --dry-run -d "$dir" <"$patch" >/dev/null 2>&1; then
        patch -p1 -s -f -d "$dir" <"$patch" >"$log" 2>&1
    elif patch -p1 -s -f --dry-run -d "$dir/solutions" <"$patch" >/dev/null 2>&1; then
        patch -p1 -s -f -d "$dir/solutions" <"$patch" >"$log" 2>&1
    else
        echo "$lab/$name: FAILED: the patch does not apply to solutions/$lab"
        return 1
    fi
    # Without -Werror: a mutant is wrong on purpose, a warning is no news.
    # The plain build first: only a mutant that it does not catch is built
    # with ThreadSanitizer too (RACE=1: a data race only that build sees;
    # check.sh builds it for the labs with race-sensitive tests alone).
    grade_mutant() { # race
        RACE=$1 LABS=$lab CHECK_WERROR= SPLICED=$dir/spliced SHOWN=solutions \
            SEED_FROM=$BUILD/spliced/solutions PREBUILT=1 check "$dir/solutions" -q --stop-on-fail \
            --expect-loss --results "$dir/results.json" >>"$log" 2>&1
    }
    if grade_mutant 0 || { ! grep -q 'BUILD FAILED' "$log" && grade_mutant 1; }; then
        echo "$lab/$name: caught ($(grep -m1 -E '^  [a-z_0-9]+ +0/' "$log" | awk '{print $1}'))"
    elif grep -q 'BUILD FAILED' "$log" && grep -q '(refused by the grader' "$dir/spliced/$lab/build.log"; then
        # refused by tests/grader/lab-objects.sh (what it calls, its static
        # storage): a BUILD verdict that names the problem is a catch
        echo "$lab/$name: caught (refused at build: $(grep -m1 '(refused by the grader' \
            "$dir/spliced/$lab/build.log" | sed 's/^[^ ]*: error: //; s/ (refused by the grader.*//' | cut -c1-120))"
    elif grep -q 'BUILD FAILED' "$log"; then
        echo "$lab/$name: FAILED: does not build (a mutant must build and lose points; log: $log)"
        return 1
    else
        echo "$lab/$name: FAILED: keeps full marks, no test catches it (log: $log)"
        return 1
    fi
}

# Mutants are independent: up to $JOBS of them are built and graded at once;
# each one's line is printed, in order, as soon as it and those before it
# are done ([k/N]: the progress of this long step).
do_mutants() {
    local lab p bad=0 i shown=0
    local -a list=()
    for lab in $labs; do
        for p in "tests/$lab/mutants"/*.patch; do
            [ -f "$p" ] && list+=("$lab $p")
        done
    done
    mkdir -p "$out/mutants"
    rm -rf "$BUILD/mutants" "${BUILD%/address}/thread/$(echo "$BUILD/mutants" | tr / _)"_*
    show_done() { # prints the finished mutants that are next in order
        while [ "$shown" -lt "${#list[@]}" ] && [ -f "$out/mutants/$shown.rc" ]; do
            echo "  [$((shown + 1))/${#list[@]}] $(cat "$out/mutants/$shown.txt")"
            [ "$(cat "$out/mutants/$shown.rc")" = 0 ] || bad=$((bad + 1))
            shown=$((shown + 1))
        done
    }
    # built once here, then taken as built by each mutant's check (PREBUILT)
    if ! m "$dtgrade" "$BUILD/libdt.a" "$BUILD/obj/tests/grader/test_main.o" >"$out/mutants/prebuild.log" 2>&1; then
        echo "mutants: the grader or libdt does not build (log: $out/mutants/prebuild.log)"
        return 1
    fi
    echo "mutants: ${#list[@]} to build and grade, $JOBS at a time"
    for i in "${!list[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
            wait -n 2>/dev/null || true
            show_done
        done
        # shellcheck disable=SC2086
        (run_mutant ${list[$i]} >"$out/mutants/$i.tmp" 2>&1
         echo $? >"$out/mutants/$i.rc.tmp"
         mv "$out/mutants/$i.tmp" "$out/mutants/$i.txt"
         mv "$out/mutants/$i.rc.tmp" "$out/mutants/$i.rc") &
        show_done
    done
    wait
    show_done
    echo "mutants: $((${#list[@]} - bad)) of ${#list[@]} caught"
    echo "$((${#list[@]} - bad)) passed, $bad failed" >"$out/mutants.txt"
    [ "$bad" -eq 0 ]
}

do_student() {
    tests/grader/check-dist.sh "$BUILD" "$out/student" | tee "$out/student.txt" |
        label "student, the student tree"
    return "${PIPESTATUS[0]}"
}

do_gradescope() {
    tests/grader/check-gradescope.sh "$BUILD" "$out/gradescope" | tee "$out/gradescope.txt" |
        label "gradescope, every lab's zip"
    return "${PIPESTATUS[0]}"
}

# The labs whose every test runs on any backend (issue of the mpi backend:
# the communicator and labs 01-04 and 12 on thread, proc and mpi).
backend_labs=$(for d in tests/0[1-4]-*/ tests/12-*/; do [ -d "$d" ] && basename "$d"; done)
backend_nums=$(for l in $backend_labs; do printf '%s\n' "${l%%-*}"; done | paste -sd, - | sed 's/,/, /g')

# Each run's count line, named with what ran and on which backend, and
# its failed tests' lines.
show_run() { # log step-log what
    grep -E '^[0-9]+ passed, [0-9]+ failed|^  [a-z_0-9]+ +[0-9]+/[0-9]+ +(FAIL|CRASH|TIMEOUT|SANITIZER|EXIT|LIMIT|BUILD)' "$1" |
        label "$3"
    cat "$1" >>"$2"
}

do_backends() {
    local b rc=0 only=() np
    : >"$out/backends.log"
    for b in proc mpi; do
        if [ $b = mpi ] && [ -z "${MPI_BUILT:-}" ]; then
            echo "backends: mpi skipped: libdt was built without MPI (no mpicc, or MPI=0)"
            continue
        fi
        np=$([ $b = mpi ] && echo 8)
        [ $b = mpi ] && only=(--only comm_) # the others launch nothing, or threads by name
        # One machine: Open MPI needs only its shared-memory transport, and
        # starts each job's processes a sixth faster without probing the
        # others (MPICH reads none of these; vader is Open MPI 5's sm too).
        OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader DT_BACKEND=$b DT_MPI_NP=$np "$dtgrade" -q -j "$JOBS" --min-score-full \
            --tests-root tests "${only[@]}" --results "$out/backends-unit-$b.json" \
            "lib=$BUILD/tests/lib/grade" >"$out/backends-unit-$b.log" 2>&1 || rc=1
        show_run "$out/backends-unit-$b.log" "$out/backends.log" \
            "backends, the communicator's unit tests on the $b backend${np:+ (mpirun -np $np)}"
        # mpi: no ThreadSanitizer rerun (MPI's own threads are not built with it)
        OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader DT_BACKEND=$b DT_MPI_NP=$np LABS="$backend_labs" \
            RACE=$([ $b = mpi ] && echo 0 || echo 1) check solutions -q --min-score-full \
            --results "$out/backends-labs-$b.json" >"$out/backends-labs-$b.log" 2>&1 || rc=1
        show_run "$out/backends-labs-$b.log" "$out/backends.log" \
            "backends, labs $backend_nums (solutions) on the $b backend${np:+ (mpirun -np $np)}"
    done
    awk '/^[0-9]+ passed, [0-9]+ failed/ { p += $1; f += $3 } END { printf "%d passed, %d failed\n", p, f }' \
        "$out/backends.log" >"$out/backends.txt"
    return $rc
}

# Runs "$@" with a private 64 MB tmpfs on /dev/shm (a mount namespace of its
# own: nothing outside sees it). Status 125 when no such mount can be made.
with_small_shm() {
    local ns
    for ns in "unshare -m" "unshare -rm"; do
        # shellcheck disable=SC2086
        if $ns sh -c 'mount -t tmpfs -o size=64m dtlab-shm /dev/shm' 2>/dev/null; then
            # shellcheck disable=SC2086
            $ns sh -c 'mount -t tmpfs -o size=64m dtlab-shm /dev/shm && exec "$@"' sh "$@"
            return
        fi
    done
    return 125
}

do_small_shm() {
    local rc=0
    : >"$out/small-shm.log"
    # One test at a time for the unit tests: one of them fills /dev/shm.
    DT_TEST_FILL_SHM=1 with_small_shm "$dtgrade" -q -j 1 --min-score-full --tests-root tests \
        --results "$out/small-shm-unit.json" "lib=$BUILD/tests/lib/grade" >"$out/small-shm-unit.log" 2>&1
    rc=$?
    if [ $rc -eq 125 ]; then
        echo "small-shm: skipped (no private /dev/shm can be mounted here: it needs root or user namespaces)"
        echo "0 passed, 0 failed" >"$out/small-shm.txt"
        return 0
    fi
    show_run "$out/small-shm-unit.log" "$out/small-shm.log" \
        "small-shm, libdt's tests on the $backend backend in a 64 MB /dev/shm"
    local args=() lab
    for lab in $labs; do args+=("$lab=$BUILD/spliced/solutions/$lab/grade"); done
    with_small_shm "$dtgrade" -q -j "$JOBS" --min-score-full --results "$out/small-shm.json" \
        "${args[@]}" >"$out/small-shm-labs.log" 2>&1 || rc=1
    show_run "$out/small-shm-labs.log" "$out/small-shm.log" \
        "small-shm, every lab (solutions) on the $backend backend in a 64 MB /dev/shm"
    awk '/^[0-9]+ passed, [0-9]+ failed/ { p += $1; f += $3 } END { printf "%d passed, %d failed\n", p, f }' \
        "$out/small-shm.log" >"$out/small-shm.txt"
    return $rc
}

t_start=$(date +%s)
step build do_build
step selftest do_selftest
step unit do_unit
# (convention and skeleton not under SAN: the convention is read from the
# files, and the skeleton's verdict, 0 points and no timeout, is the plain
# build's: a sanitizer report in a test that fails anyway changes nothing)
[ -n "$SAN" ] || step convention do_convention
step tools do_tools
step solutions do_solutions
[ -n "$SAN" ] || step skeleton do_skeleton
# (without SAN: every mutant must be caught by the plain build already, and
# the sanitizers' runs of 180 mutants would double CI's time for no verdict)
[ -n "$SAN" ] || step mutants do_mutants
[ -n "$SAN" ] || step backends do_backends
[ -n "$SAN" ] || step gpu do_gpu
[ -n "$SAN" ] || step small-shm do_small_shm
[ -n "$SAN" ] || step student do_student
[ -n "$SAN" ] || step gradescope do_gradescope

echo "==== make test${SAN:+ SAN=$SAN}: summary"
for i in "${!names[@]}"; do
    printf '  %-11s %-7s %6s s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
done
total=$(($(date +%s) - t_start))
# The closing count: the unit tests, the solutions' tests and the mutants
# (a mutant passes when it is caught), plus each other step as one check.
count() { # file -> "passed failed" of its last "N passed, N failed" line
    grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" 2>/dev/null | tail -n 1 |
        awk '{ print $1, $3 }'
}
n_pass=0
n_fail=0
n_skip=0 # tests that skipped themselves (no GPU here): neither passed nor failed
for i in "${!names[@]}"; do
    f=$out/${names[$i]}.txt
    sk=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$f" 2>/dev/null | tail -n 1 |
        awk '{ print $5 }')
    n_skip=$((n_skip + ${sk:-0}))
    pf=$(count "$f")
    if [ -n "$pf" ]; then
        n_pass=$((n_pass + ${pf% *}))
        n_fail=$((n_fail + ${pf#* }))
    elif [ "${results[$i]}" = ok ]; then
        n_pass=$((n_pass + 1))
    else
        n_fail=$((n_fail + 1))
    fi
done
if [ "$failed" -ne 0 ]; then
    # Each failed test once, with the steps it failed in (from the steps'
    # results.json files and FAIL lines), where the last lines of a long
    # log show it.
    echo "failed (each once, with the steps it failed in):"
    failed_steps=""
    for i in "${!names[@]}"; do
        [ "${results[$i]}" = ok ] || failed_steps+="${names[$i]} "
    done
    python3 - "$out" "$failed_steps" <<'PY' | cut -c1-300
import glob, json, os, re, sys
out, failed_steps = sys.argv[1], sys.argv[2].split()
seen = {}  # test -> [steps], reason
def add(test, step, reason):
    steps, _ = seen.setdefault(test, ([], reason))
    if step not in steps:
        steps.append(step)
runs = [("unit", "unit.json"), ("solutions", "solutions.json"), ("skeleton", "skeleton.json"),
        ("backends proc", "backends-unit-proc.json"), ("backends proc", "backends-labs-proc.json"),
        ("backends mpi", "backends-unit-mpi.json"), ("backends mpi", "backends-labs-mpi.json"),
        ("small-shm", "small-shm-unit.json"), ("small-shm", "small-shm.json")]
for step, f in runs:
    try:
        tests = json.load(open(os.path.join(out, f))).get("tests", [])
    except (OSError, ValueError):
        continue
    for t in tests:
        verdict = t.get("extra_data", {}).get("verdict", "")
        first = (t.get("output") or "").strip().splitlines()[:1]
        if step == "skeleton":
            if t.get("score", 0) > 0:
                add(t["name"], step, "scores points on the untouched skeleton")
            elif verdict in ("TIMEOUT", "BUILD"):
                add(t["name"], step, f"{verdict} on the untouched skeleton")
        elif t.get("score", 0) < t.get("max_score", 0):
            add(t["name"], step, first[0] if first else verdict)
for f in sorted(glob.glob(os.path.join(out, "mutants", "*.txt"))):
    for line in open(f):
        m = re.match(r"(\S+): FAILED: (.*)", line.strip())
        if m:
            add("mutant " + m.group(1), "mutants", m.group(2))
for step, f in (("tools", "tools.log"), ("student", "student.txt"), ("gradescope", "gradescope.txt")):
    try:
        for line in open(os.path.join(out, f)):
            if line.startswith("FAIL"):
                add(line.strip(), step, "")
    except OSError:
        pass
named = {st for steps, _ in seen.values() for st in steps}
for test, (steps, reason) in list(seen.items())[:30]:
    print(f"  {test}  [{', '.join(steps)}]" + (f"\n      {reason}" if reason else ""))
if len(seen) > 30:
    print(f"  ... and {len(seen) - 30} more")
for st in failed_steps:
    if not any(n.split()[0] == st for n in named):
        print(f"  the {st} step (its lines above)")
PY
    echo "make test: FAILED ($failed of ${#names[@]} steps, ${total} s)"
    echo "suite: $n_pass passed, $n_fail failed${n_skip:+, $n_skip skipped}"
    exit 1
fi
echo "make test: passed (${#names[@]} steps, ${total} s)"
echo "suite: $n_pass passed, $n_fail failed${n_skip:+, $n_skip skipped}"
