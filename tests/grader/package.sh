#!/usr/bin/env bash
# package.sh student|autograder DIR DTGRADE [LAB]
#
# Writes into DIR (emptied first) the tree of
#   student     `make dist-student`: the files of list-files.sh student, the
#               official copy of the labs in tests/official/ (what make check
#               splices the student's fences into), and a README for students;
#   autograder  `make gradescope`: the files of list-files.sh autograder (with
#               the hidden tests), tests/official/, and Gradescope's two
#               scripts at the top; then DIR.zip of it. With LAB (an NN-topic
#               name), the autograder of that lab alone: its name goes into
#               DIR/gradescope-lab, which setup.sh and run_autograder read
#               (one Gradescope assignment per lab).
set -euo pipefail
mode=${1:?usage: package.sh student|autograder DIR DTGRADE [LAB]}
dir=${2:?usage: package.sh student|autograder DIR DTGRADE [LAB]}
dtgrade=${3:?usage: package.sh student|autograder DIR DTGRADE [LAB]}
lab=${4:-}
if [ -n "$lab" ] && [ ! -d "tests/$lab" ]; then
    echo "package.sh: no lab $lab (tests/$lab/ is missing)" >&2
    exit 2
fi
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
        chmod +x "$dir/setup.sh" "$dir/run_autograder"
        [ -z "$lab" ] || echo "$lab" >"$dir/gradescope-lab"
        # Gradescope wants setup.sh and run_autograder at the zip's root.
        zip=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir").zip
        rm -f "$zip"
        if command -v zip >/dev/null; then
            (cd "$dir" && zip -qr "$zip" .)
        elif command -v python3 >/dev/null; then
            (cd "$dir" && python3 -m zipfile -c "$zip" $(ls -A))
        else
            echo "package.sh: the zip needs zip or python3 (make deps)" >&2
            exit 1
        fi ;;
esac
