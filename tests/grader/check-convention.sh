#!/usr/bin/env bash
# check-convention.sh - checks the lab convention (docs/design.md, "Labs"):
#
#  1. every lab NN-topic has chapters/NN-topic.md, labs/NN-topic/,
#     solutions/NN-topic/ and graded tests in tests/NN-topic/;
#  2. each lab file with a student fence has its solution, a file of the
#     same name in solutions/NN-topic; a file with no fence (a header,
#     run.c) lives only in labs/NN-topic (the build takes it from there
#     for every IMPL), and solutions/ holds nothing else;
#  3. a lab file and its solution are identical outside the student fences
#     /* BEGIN STUDENT CODE */ ... /* END STUDENT CODE */ (the fence lines
#     themselves included), and the fences pair up;
#  4. every fence of a lab file is a stub: it contains DT_ERR_NOT_IMPLEMENTED,
#     or nothing but comments and blank lines;
#  5. hidden tests (TEST_HIDDEN) live in hidden_*.c files, and only there;
#  6. each mutant (tests/NN-topic/mutants/*.patch) patches only files of
#     solutions/NN-topic/;
#  7. and only their fenced code: make check takes nothing else from a
#     student's file, so a change elsewhere would never be graded.
# Prints one line per problem, "file:line: what is wrong", and exits 1 if
# there is any. Without solutions/ (the student tree) checks 2, 3, 6 and 7
# are skipped.
set -uo pipefail
cd "${1:-.}"

problems=0
problem() {
    echo "convention: $*"
    problems=$((problems + 1))
}

# Prints "LINE<TAB>TEXT" for each line outside the fences; fence lines are
# kept. Problems of fence pairing go to stderr as "file:line: ...".
strip_fences() {
    awk -v file="$1" '
        /BEGIN STUDENT CODE/ {
            if (inside) printf "%s:%d: BEGIN STUDENT CODE inside another fence (opened at line %d)\n", file, NR, open_at > "/dev/stderr"
            inside = 1; open_at = NR; print NR "\t" $0; next
        }
        /END STUDENT CODE/ {
            if (!inside) printf "%s:%d: END STUDENT CODE without a BEGIN\n", file, NR > "/dev/stderr"
            inside = 0; print NR "\t" $0; next
        }
        !inside { print NR "\t" $0 }
        END { if (inside) printf "%s:%d: BEGIN STUDENT CODE never closed\n", file, open_at > "/dev/stderr" }
    ' "$1"
}

# Checks that each fence of a lab file is a stub (rule 4).
check_stubs() {
    awk -v file="$1" '
        function report() {
            if (!stub && code)
                printf "%s:%d: the student fence is not a stub (it has code but no DT_ERR_NOT_IMPLEMENTED)\n", file, open_at
        }
        /BEGIN STUDENT CODE/ { inside = 1; open_at = NR; stub = 0; code = 0; incomment = 0; next }
        /END STUDENT CODE/ { if (inside) report(); inside = 0; nfences++; next }
        inside {
            if ($0 ~ /DT_ERR_NOT_IMPLEMENTED/) stub = 1
            line = $0
            # drop comments, then see whether code is left
            if (incomment) { if (sub(/.*\*\//, "", line)) incomment = 0; else line = "" }
            gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
            if (sub(/\/\*.*/, "", line)) incomment = 1
            sub(/\/\/.*/, "", line)
            if (line ~ /[^ \t]/) code = 1
        }
        END { print nfences + 0 }
    ' "$1"
}

# Rule 3 for one pair of files: a (a lab file) and b (its solution, or a
# mutant's copy, named c in messages) are the same outside the fences.
same_outside() { # a b c
    local a=$1 b=$2 c=$3 sa sb errs_a errs_b diffline la lb e l
    local tmp=${TMPDIR:-/tmp}/dtconv.$$
    sa=$(strip_fences "$a" 2>"$tmp"); errs_a=$(cat "$tmp")
    sb=$(strip_fences "$b" 2>"$tmp"); errs_b=$(cat "$tmp")
    rm -f "$tmp"
    for e in "$errs_a" "$errs_b"; do
        while read -r l; do [ -n "$l" ] && problem "${l/$b/$c}"; done <<<"$e"
    done
    # First line where the texts (line numbers aside) differ.
    diffline=$(paste -d '\n' <(echo "$sa") <(echo "$sb") | awk -F'\t' '
        NR % 2 == 1 { la = $1; ta = substr($0, length($1) + 2); next }
        { lb = $1; tb = substr($0, length($1) + 2)
          if (ta != tb) { print la "\t" lb; exit } }')
    if [ -n "$diffline" ]; then
        la=${diffline%%$'\t'*}
        lb=${diffline##*$'\t'}
        problem "$a:${la:-end}: differs from $c:${lb:-end} outside the student fences"
    elif [ "$(wc -l <<<"$sa")" != "$(wc -l <<<"$sb")" ]; then
        problem "$a: differs from $c outside the student fences (one file has more lines at the end)"
    fi
}

have_solutions=0
[ -d solutions ] && have_solutions=1

labs=$( {
    for d in tests/[0-9][0-9]-*/ labs/[0-9][0-9]-*/ solutions/[0-9][0-9]-*/; do
        [ -d "$d" ] && basename "$d"
    done
} | sort -u)

nlabs=0
for lab in $labs; do
    nlabs=$((nlabs + 1))
    [ -f "chapters/$lab.md" ] || problem "chapters/$lab.md: missing (lab $lab has no chapter)"
    [ -d "labs/$lab" ] || problem "labs/$lab/: missing"
    if [ "$have_solutions" = 1 ] && [ ! -d "solutions/$lab" ]; then
        problem "solutions/$lab/: missing"
    fi
    if ! ls "tests/$lab"/*.c >/dev/null 2>&1; then
        problem "tests/$lab/: no graded tests (*.c)"
    fi
    [ -d "labs/$lab" ] || continue

    # Rule 5: hidden tests only in hidden_*.c.
    for t in "tests/$lab"/*.c; do
        [ -f "$t" ] || continue
        case "$(basename "$t")" in
            hidden_*) pat='^[[:space:]]*TEST(_T)?\('
                      why="a visible TEST in a hidden_*.c file (use TEST_HIDDEN)" ;;
            *) pat='^[[:space:]]*TEST_HIDDEN(_T)?\('
               why="TEST_HIDDEN outside a hidden_*.c file (dist-student would ship it)" ;;
        esac
        for ln in $(grep -nE "$pat" "$t" | cut -d: -f1 || true); do
            problem "$t:$ln: $why"
        done
    done

    # Rule 4: every lab file's fences are stubs; a lab has at least one fence.
    total_fences=0
    for f in "labs/$lab"/*; do
        [ -f "$f" ] || continue
        out=$(check_stubs "$f")
        n=$(tail -n 1 <<<"$out")
        total_fences=$((total_fences + n))
        while read -r l; do
            [ -n "$l" ] && problem "$l"
        done < <(sed '$d' <<<"$out")
    done
    [ "$total_fences" -gt 0 ] || problem "labs/$lab/: no /* BEGIN STUDENT CODE */ fence in any file"

    [ "$have_solutions" = 1 ] && [ -d "solutions/$lab" ] || continue

    # Rule 2: a fenced file has its solution; an unfenced one lives only in labs/.
    lf=$(cd "labs/$lab" && find . -type f | sort)
    sf=$(cd "solutions/$lab" && find . -type f | sort)
    while read -r f; do
        f=${f#./}
        [ -n "$f" ] || continue
        grep -q 'BEGIN STUDENT CODE' "labs/$lab/$f" &&
            problem "labs/$lab/$f: has a student fence but no solution in solutions/$lab/"
    done < <(comm -23 <(echo "$lf") <(echo "$sf"))
    while read -r f; do
        [ -n "$f" ] && problem "solutions/$lab/${f#./}: has no counterpart in labs/$lab/"
    done < <(comm -13 <(echo "$lf") <(echo "$sf"))

    # Rule 3: identical outside the fences (and a file without a fence is
    # no solution: it would be a second copy of the lab's file).
    for f in $(comm -12 <(echo "$lf") <(echo "$sf")); do
        f=${f#./}
        if ! grep -q 'BEGIN STUDENT CODE' "labs/$lab/$f"; then
            problem "solutions/$lab/$f: labs/$lab/$f has no student fence: it lives only in labs/$lab/ (the build takes it from there)"
            continue
        fi
        same_outside "labs/$lab/$f" "solutions/$lab/$f" "solutions/$lab/$f"
    done

    # Rule 6: mutants patch only this lab's solution.
    for p in "tests/$lab/mutants"/*.patch; do
        [ -f "$p" ] || continue
        grep -q '^+++ ' "$p" || problem "$p: not a unified diff (no '+++ ' line)"
        while IFS=: read -r ln rest; do
            [ -n "$ln" ] || continue
            target=${rest#+++ }
            target=${target%%$'\t'*}
            target=${target#b/}
            case "$target" in
                solutions/"$lab"/*) ;;
                *) problem "$p:$ln: patches '$target', not a file of solutions/$lab/" ;;
            esac
        done < <(grep -nE '^\+\+\+ ' "$p" || true)
        # Rule 7: only fenced code (make check grades nothing else).
        tmp=$(mktemp -d)
        mkdir -p "$tmp/solutions"
        cp -R "solutions/$lab" "$tmp/solutions/"
        if ! patch -p1 -s -f -d "$tmp" <"$p" >/dev/null 2>&1; then
            problem "$p: does not apply to solutions/$lab/"
        else
            for f in "$tmp/solutions/$lab"/*; do
                [ -f "labs/$lab/$(basename "$f")" ] &&
                    same_outside "labs/$lab/$(basename "$f")" "$f" "$p: patched $(basename "$f")"
            done
        fi
        rm -rf "$tmp"
    done
done

if [ "$problems" -ne 0 ]; then
    echo "convention: $problems problem(s) in $nlabs lab(s)"
    exit 1
fi
echo "convention: $nlabs lab(s) follow the convention"
