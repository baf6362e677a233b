#!/usr/bin/env bash
# list-files.sh student|autograder
#
# Lists (relative paths, one a line) the files of the tree that go into
#   student     the student tree of `make dist-student`: no solutions/, no
#               hidden tests (tests/*/hidden_*.c), no mutants, no CI, no
#               instructors' notes;
#   autograder  the Gradescope autograder: as above, but with the hidden tests.
# In a git checkout the files are those git knows (tracked, or new and not
# ignored); elsewhere every file but build/.
set -euo pipefail
mode=${1:?usage: list-files.sh student|autograder}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard
else
    find . -path ./build -prune -o -type f -print | sed 's|^\./||'
fi | sort -u | while read -r f; do
    [ -f "$f" ] || continue # deleted but still in the index
    case "$f" in
        build/* | solutions/* | .ci/* | .git/* | tests/*/mutants/*) continue ;;
        docs/instructors.md) continue ;;
    esac
    if [ "$mode" = student ]; then
        case "$f" in
            tests/*/hidden_*) continue ;;
            tests/grader/gradescope/*) continue ;;
        esac
    fi
    printf '%s\n' "$f"
done
