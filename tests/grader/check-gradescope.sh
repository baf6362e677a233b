#!/usr/bin/env bash
# check-gradescope.sh BUILD WORK - every lab's autograder zip (make
# gradescope LAB=NN) run the way Gradescope runs it, and the zip of every
# lab (make gradescope) on a broken submission:
#
#   image       a fresh folder stands for /autograder: source/ holds the
#               zip's contents, setup.sh runs there (its package step,
#               tools/setup-deps.sh, installs only what is missing: where
#               the packages are present it runs no apt-get; where they are
#               missing, DT_DEPS_NO_INSTALL=1 makes it only say so)
#   submission  each submission gets a copy of that image with submission/
#               and results/ beside source/, and run_autograder runs there;
#               results.json must follow Gradescope's specification (score,
#               tests[] each with score, max_score, name, output, visibility)
#   perfect     (labs 00, 02, 04, ...) the whole workbook with every
#               solution in labs/: full marks for this lab alone, its
#               hidden tests included, hidden
#   empty       a notes file: 0, and a message that the lab was not found
#   broken      the lab's folder with a syntax error in a fenced file and a
#               file that is not the lab's: 0, the compiler's error first,
#               before the note; each test's box says once where it is
#   loose       (labs 01, 03, 05, ...) the solution's files loose at the
#               top: full marks, as for perfect. One full-marks submission
#               a lab, each layout on half the labs: finding the lab's
#               files depends on the lab by their names alone, and a
#               second full grading of every lab cost a tenth of make
#               test's CPU
#
# What setup.sh compiles (libdt's objects, the grader, the lab's official
# test objects) is seeded from BUILD, built once by the suite: the same
# sources and flags, so setup.sh's make finds those up to date and only
# archives libdt and builds the lab's own files and test program. One line per failed check;
# ends with "N passed, N failed". Run by `make test`.
set -uo pipefail
BUILD=${1:-build}
WORK=${2:-$BUILD/test/gradescope}
MAKE=${MAKE:-make}
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
[ "$JOBS" -gt 4 ] && JOBS=4
rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
BUILD_ABS=$(cd "$BUILD" && pwd)
dtgrade=$BUILD_ABS/bin/dtgrade
labs=$(for d in tests/[0-9][0-9]-*/; do ls "$d"*.c >/dev/null 2>&1 && basename "$d"; done)
m() { "$MAKE" --no-print-directory BUILD="$BUILD" "$@"; }

# Gradescope's results.json: the fields and types of its specification
# (gradescope-autograders.readthedocs.io, "Autograder Specifications"),
# then what this submission must score and say. Prints one line per
# broken rule; exit status 1 if any.
cat >"$WORK/check-results.py" <<'EOF'
import json, re, sys
path, kind, lab, max_expected, tests_expected, hidden_expected = sys.argv[1:7]
bad = []
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{path}: not JSON: {e}")
    sys.exit(1)
vis = {"hidden", "after_due_date", "after_published", "visible"}
top_keys = {"score", "execution_time", "output", "output_format", "test_output_format",
            "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
            "leaderboard"}
test_keys = {"score", "max_score", "status", "name", "name_format", "number", "output",
             "output_format", "tags", "visibility", "extra_data"}
num = (int, float)
if not isinstance(d, dict): bad.append("the top level is not an object")
else:
    for k in d:
        if k not in top_keys and k != "max_score":  # max_score: ours, ignored by Gradescope
            bad.append(f"unknown top-level key {k!r}")
    if not isinstance(d.get("score"), num): bad.append("no numeric top-level score")
    if not isinstance(d.get("output", ""), str): bad.append("output is not a string")
    tests = d.get("tests")
    if not isinstance(tests, list): bad.append("tests is not a list"); tests = []
    names = set()
    for i, t in enumerate(tests):
        where = f"tests[{i}]"
        for k in t:
            if k not in test_keys: bad.append(f"{where}: unknown key {k!r}")
        for k in ("score", "max_score"):
            if not isinstance(t.get(k), num): bad.append(f"{where}: {k} is not a number")
        for k in ("name", "output"):
            if not isinstance(t.get(k), str): bad.append(f"{where}: {k} is not a string")
        if t.get("visibility", "visible") not in vis: bad.append(f"{where}: visibility {t.get('visibility')!r}")
        if t.get("status", "passed") not in ("passed", "failed"): bad.append(f"{where}: status {t.get('status')!r}")
        if isinstance(t.get("score"), num) and isinstance(t.get("max_score"), num) and not 0 <= t["score"] <= t["max_score"]:
            bad.append(f"{where}: score {t['score']} outside 0..{t['max_score']}")
        if t.get("name") in names: bad.append(f"{where}: name {t.get('name')!r} twice")
        names.add(t.get("name"))
        if lab != "-" and not str(t.get("name", "")).startswith(lab + "/"):
            bad.append(f"{where}: {t.get('name')!r} is not a test of {lab}")
    got = sum(t.get("score", 0) for t in tests if isinstance(t.get("score"), num))
    mx = sum(t.get("max_score", 0) for t in tests if isinstance(t.get("max_score"), num))
    if isinstance(d.get("score"), num) and got != d["score"]: bad.append(f"score {d['score']} is not the tests' sum {got}")
    out = d.get("output", "") if isinstance(d.get("output"), str) else ""
    if max_expected != "-" and mx != int(max_expected): bad.append(f"max {mx}, the lab has {max_expected} points")
    if tests_expected != "-" and len(tests) != int(tests_expected): bad.append(f"{len(tests)} tests, the lab has {tests_expected}")
    hidden = sum(1 for t in tests if t.get("visibility") == "hidden")
    if hidden_expected != "-" and hidden != int(hidden_expected): bad.append(f"{hidden} hidden tests, the lab has {hidden_expected}")
    if kind in ("perfect", "loose"):
        if got != mx or mx == 0: bad.append(f"{kind}: scored {got}/{mx}")
        if lab != "-" and re.search(r"^note: .*: not found", out, re.M): bad.append(f"{kind}: the output notes a file not found")
    if kind in ("empty", "broken", "all-broken") and got != 0: bad.append(f"{kind}: scored {got}")
    if kind == "empty" and "was found in your submission" not in out: bad.append("empty: no message that the lab was not found")
    if kind in ("broken", "all-broken"):
        lines = out.splitlines()
        err = next((i for i, l in enumerate(lines) if re.search(r"\.c:\d+:\d+: error", l)), None)
        note = next((i for i, l in enumerate(lines) if l.startswith("note:")), None)
        if err is None: bad.append(f"{kind}: no compiler error in the output")
        elif note is None: bad.append(f"{kind}: no note in the output (the submission has a file that is not the lab's)")
        elif note < err: bad.append(f"{kind}: a note (line {note + 1}) comes before the compiler's error (line {err + 1})")
        if "hidden_" in out: bad.append(f"{kind}: the output names a hidden test's file")
        if kind == "broken":
            for t in tests:
                o = t.get("output", "")
                if o.count("top of these results") != 1 or "above" in o:
                    bad.append(f"broken: {t.get('name')}: its box says {o!r}"); break
for b in bad: print(f"{path}: {b}")
sys.exit(1 if bad else 0)
EOF

# Every zip at once.
per_lab=$(echo $labs | tr ' ' '\n' | cut -c1-2 | tr '\n' ' ')
if ! m gradescope LAB="$per_lab" >"$WORK/zips.log" 2>&1 || ! m gradescope >>"$WORK/zips.log" 2>&1; then
    echo "FAIL: make gradescope: $(tail -n 3 "$WORK/zips.log")"
    echo "0 passed, 1 failed"
    exit 1
fi
# setup.sh's packages, checked once: present, no apt-get; else not installed.
deps_env=()
tools/setup-deps.sh --check build >"$WORK/deps.log" 2>&1 || deps_env=(DT_DEPS_NO_INSTALL=1)

# The image of one zip: unpacked, seeded from BUILD, setup.sh run.
make_image() { # zip seed-labs dir
    local img=$3/image src
    src=$img/source
    mkdir -p "$src"
    (cd "$src" && unzip -q "$1") || return 1
    local f seeds=(obj/lib obj/tests/grader bin/dtgrade identity identity-mpi)
    # the ThreadSanitizer build's where a lab has race-sensitive tests
    # (setup.sh builds it for those labs alone)
    for f in $2; do
        if grep -qE '\.race[[:space:]]*=[[:space:]]*1' "tests/$f"/*.c 2>/dev/null; then
            seeds+=(thread/obj/lib thread/obj/tests/grader thread/identity thread/identity-mpi)
            break
        fi
    done
    # what setup.sh builds from, and no more: libdt's objects, the grader and
    # its main; setup.sh still archives libdt and compiles the official files
    for f in "${seeds[@]}"; do
        [ -e "$BUILD_ABS/$f" ] || continue
        mkdir -p "$src/build/$(dirname "$f")"
        cp -Rp "$BUILD_ABS/$f" "$src/build/$(dirname "$f")/"
    done
    # the official test objects: those of the suite's build of labs/ (the
    # spliced builds' copies have no .d files, so their age is not known)
    for f in $2; do
        seed_objects "$BUILD_ABS/labs/obj/tests/tests/$f" "$src/build/tests_official/obj/tests/tests"
        seed_objects "$BUILD_ABS/thread/$(echo "$BUILD/spliced/labs" | tr / _)/obj/tests/tests/$f" \
            "$src/build/thread/tests_official/obj/tests/tests"
    done
    (cd "$src" && env -u MAKEFLAGS -u MAKELEVEL "${deps_env[@]}" ./setup.sh) >"$3/setup.log" 2>&1
}
# Test objects without their .d files (the paths they name are BUILD's),
# and only when each is newer than every file its .d names (a suite run
# builds them in its build step; a stale set would mix two ABIs).
stale() { # dir: status 0 when an object there is older than a file it was made from
    local d f
    for d in "$1"/*.d; do
        [ -f "$d" ] || return 0
        for f in $(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$d" | head -n 1 | cut -d: -f2-); do
            [ "$f" -nt "${d%.d}.o" ] && return 0
        done
    done
    return 1
}
seed_objects() { # from to
    [ -d "$1" ] || return 0
    stale "$1" && return 0
    mkdir -p "$2" && cp -Rp "$1" "$2/" && rm -f "$2/$(basename "$1")"/*.d
}

# One submission on a fresh copy of the image.
autograde() { # dir name -> dir/name/results/results.json
    local run=$1/$2
    mkdir -p "$run/results"
    # Hard links: grading writes only new files (the spliced lab, its
    # objects, the results) and replaces none of the image's.
    cp -al "$1/image/source" "$run/"
    (cd "$run" && env -u MAKEFLAGS -u MAKELEVEL DT_AG_SOURCE="$run/source" DT_AG_SUBMISSION="$run/submission" \
        DT_AG_RESULTS="$run/results" "$run/source/run_autograder") >"$run.log" 2>&1
    rm -rf "$run/source"
}

# A broken copy of a lab file: a syntax error inside its first fence.
break_file() { # from to
    awk '/BEGIN STUDENT CODE/ && !done { print; print "    int broken = ;"; done = 1; next } { print }' "$1" >"$2"
}

# One lab: its zip's image, then the four submissions, each checked.
check_lab() { # lab -> WORK/lab/checks.txt: one line per failed check, then "N passed, N failed"
    local lab=$1 dir=$WORK/$1 nn fenced pass=0 fail=0 max tests kind
    nn=${lab%%-*}
    exec >"$dir.txt" 2>&1
    mkdir -p "$dir"
    ok() { pass=$((pass + 1)); }
    bad() { echo "FAIL: $lab: $*"; fail=$((fail + 1)); }
    if make_image "$BUILD_ABS/gradescope-$nn.zip" "$lab" "$dir"; then ok; else
        bad "setup.sh failed: $(tail -n 3 "$dir/setup.log")"
        echo "$pass passed, $((fail + 3)) failed"
        return
    fi
    if grep -q 'apt-get\|installing' "$dir/setup.log"; then bad "setup.sh ran apt-get: $(grep -m1 'apt-get\|installing' "$dir/setup.log")"; else ok; fi
    read -r _ vt vp ht hp < <("$dtgrade" --points tests "$lab" | tr '\t' ' ')
    max=$((vp + hp))
    tests=$((vt + ht))
    fenced=$(grep -l 'BEGIN STUDENT CODE' "labs/$lab"/*.c | head -n 1)

    local full=perfect
    [ $((10#$nn % 2)) -eq 1 ] && full=loose
    if [ $full = perfect ]; then
        mkdir -p "$dir/perfect/submission/workbook"
        cp -R solutions "$dir/perfect/submission/workbook/labs"
    else
        mkdir -p "$dir/loose/submission"
        cp "solutions/$lab"/* "$dir/loose/submission/"
    fi
    mkdir -p "$dir/empty/submission" && echo "my notes" >"$dir/empty/submission/notes.txt"
    mkdir -p "$dir/broken/submission/$lab"
    cp "labs/$lab"/*.c "$dir/broken/submission/$lab/"
    break_file "$fenced" "$dir/broken/submission/$lab/$(basename "$fenced")"
    echo "int my_helper(void) { return 1; }" >"$dir/broken/submission/$lab/my_helper.c"
    for kind in $full empty broken; do
        autograde "$dir" "$kind"
        if [ ! -s "$dir/$kind/results/results.json" ]; then
            bad "$kind: no results.json ($(tail -n 2 "$dir/$kind.log"))"
        elif python3 "$WORK/check-results.py" "$dir/$kind/results/results.json" "$kind" "$lab" "$max" "$tests" "$ht" \
            >"$dir/$kind.check" 2>&1; then
            ok
        else
            bad "$(head -n 3 "$dir/$kind.check" | sed "s|$dir/||")"
        fi
    done
    echo "$pass passed, $fail failed"
}

# The zip of every lab, on lab 02 broken and nothing else: the compiler's
# error comes before the notes about the other labs (not found).
check_all() {
    local all=$WORK/all
    exec >"$WORK/all.txt" 2>&1
    mkdir -p "$all/broken/submission/02-collectives"
    if ! make_image "$BUILD_ABS/gradescope.zip" "$labs" "$all"; then
        echo "FAIL: every lab: setup.sh failed: $(tail -n 3 "$all/setup.log")"
        echo "0 passed, 1 failed"
        return
    fi
    cp labs/02-collectives/*.c "$all/broken/submission/02-collectives/"
    break_file labs/02-collectives/ring.c "$all/broken/submission/02-collectives/ring.c"
    autograde "$all" broken
    if python3 "$WORK/check-results.py" "$all/broken/results/results.json" all-broken - - - - >"$all/broken.check" 2>&1; then
        echo "1 passed, 0 failed"
    else
        sed "s|$all/||; s|^|FAIL: every lab: |" "$all/broken.check" | head -n 3
        echo "0 passed, 1 failed"
    fi
}

# The labs, JOBS at a time (each grades with one job, as Gradescope does);
# the zip of every lab first, the longest.
(check_all) &
for lab in $labs; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    (check_lab "$lab") &
done
wait

pass=0
fail=0
for f in "$WORK"/[0-9][0-9]-*.txt "$WORK/all.txt"; do
    grep '^FAIL' "$f"
    read -r p _ q _ < <(grep -E '^[0-9]+ passed, [0-9]+ failed' "$f" | tail -n 1)
    pass=$((pass + ${p:-0}))
    fail=$((fail + ${q:-1}))
done
echo "gradescope: $(echo $labs | wc -w) labs' zips on 3 submissions each (full marks: the workbook or loose files, by turns), and the zip of every lab"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
