#!/usr/bin/env bash
# check-make-help.sh - `make help` (run by `make test`): it names every
# target of the Makefile (its .PHONY list; bench-% as bench-NAME), and
# its rows keep two columns, the second starting at the same place on
# every row, in this tree and in the student tree's (the Makefile is the
# same; STAFF_TREE= stands for a tree without solutions/).
#   tests/tools/check-make-help.sh BUILD
set -uo pipefail
BUILD=${1:-build}
MAKE=${MAKE:-make}
pass=0
fail=0
check() { # description command...
    local what=$1
    shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
help=$("$MAKE" --no-print-directory -s BUILD="$BUILD" help 2>&1)
student=$("$MAKE" --no-print-directory -s BUILD="$BUILD" STAFF_TREE= help 2>&1)

targets=$(sed -n 's/^\.PHONY://p' Makefile | tr ' ' '\n' | grep -v '^$')
check "the Makefile has no .PHONY list" test -n "$targets"
for t in $targets; do
    case $t in all) want="make " ;; *) want="make $t" ;; esac
    check "make help does not list '$t'" grep -qE "^  $want( |$)" <<<"$help"
done
check "make help does not list bench-NAME" grep -qE '^  make bench-NAME ' <<<"$help"

# Every row ("  " then its first column) has its second column where the
# row of `make help` has it: a space before, a word there (a row with an
# empty first column continues the one above).
for tree in staff student; do
    text=$help
    [ $tree = student ] && text=$student
    col=$(grep -m1 '^  make help ' <<<"$text" | awk '{ match($0, /^  make help +/); print RLENGTH }')
    check "make help has no row for itself ($tree tree)" test -n "$col"
    bad=$(awk -v col="${col:-0}" '/^  [^ ]/ && !/^  staff / &&
        (substr($0, col, 1) != " " || substr($0, col + 1, 1) == " ")' <<<"$text")
    check "make help ($tree tree): rows whose second column starts elsewhere: $bad" test -z "$bad"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
