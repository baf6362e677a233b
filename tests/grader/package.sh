#!/usr/bin/env bash
# package.sh student|autograder DIR DTGRADE
#
# Writes into DIR (emptied first) the tree of
#   student     `make dist-student`: the files of list-files.sh student, the
#               official copy of the labs in tests/official/ (what make check
#               splices the student's fences into), and a README for students;
#   autograder  `make gradescope`: the files of list-files.sh autograder (with
#               the hidden tests), tests/official/, and Gradescope's two
#               scripts at the top.
set -euo pipefail
mode=${1:?usage: package.sh student|autograder DIR DTGRADE}
dir=${2:?usage: package.sh student|autograder DIR DTGRADE}
dtgrade=${3:?usage: package.sh student|autograder DIR DTGRADE}
rm -rf "$dir"
mkdir -p "$dir"
tests/grader/list-files.sh "$mode" | tar -cf - -T - | tar -xf - -C "$dir"
mkdir -p "$dir/tests/official"
cp -Rp "$dir/labs/." "$dir/tests/official/"
case $mode in
    student)
        tests/grader/student-readme.sh "$dtgrade" >"$dir/README.md" ;;
    autograder)
        cp -p tests/grader/gradescope/setup.sh tests/grader/gradescope/run_autograder "$dir/"
        chmod +x "$dir/setup.sh" "$dir/run_autograder" ;;
esac
