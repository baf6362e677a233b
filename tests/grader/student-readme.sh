#!/usr/bin/env bash
# student-readme.sh DTGRADE - prints the README.md of the student tree
# (make dist-student): what a student needs, nothing of the staff's, and
# the points of each lab that the course's autograder adds with hidden
# tests (counted from the staff tree's tests, so run it there).
set -euo pipefail
dtgrade=$1
labs=$(for d in tests/[0-9][0-9]-*/; do ls "$d"*.c >/dev/null 2>&1 && basename "$d"; done)

cat <<'EOF'
# dtlab — distributed training, built by hand in C

dtlab is a workbook for learning how deep-learning training is spread over
many devices, by building each piece yourself. Each chapter explains one idea
with its formulas; in its lab you implement that idea in C against a small
shared library, `libdt`, and `make check` grades your code. Everything runs
on a laptop: the ranks of a job are threads or processes over shared memory,
and a modeled network clock shows what the same code would cost on NVLink,
InfiniBand or Ethernet.

## Quick start

The code runs on Linux (`make deps` installs the packages on Debian and
Ubuntu); on Windows work in WSL2, on macOS and anything else in the
development container of `.devcontainer/` (VS Code: "Reopen in
Container"). Chapter 00, section 1, shows each way to start. Then:

```
make check LAB=00
```

1. Read a chapter in `chapters/`.
2. Edit its lab in `labs/NN-topic/`: write your code between the
   `/* BEGIN STUDENT CODE */` and `/* END STUDENT CODE */` lines.
3. `make check LAB=NN` grades it (`make check` grades every lab; add
   `TEST=name` for the tests whose name contains `name`). You see a table of
   tests with points, the reason of each failure and, under it, what the
   test and every rank printed last.
4. `make run-lab LAB=NN ARGS="..."` runs the lab's own program, if it has one.
5. `make help` lists the other targets.

## How your lab is graded

`make check` grades your code the way the course's autograder does:

- **Only your fenced code is taken.** Each lab is built from the official
  files (a pristine copy is in `tests/official/`) with the code between your
  `BEGIN/END STUDENT CODE` lines spliced in. The lab's headers, `run.c` and
  everything outside the fences come from the official copy: change them
  to experiment if you like, but the grader does not see those changes (it
  says so in a note above the lab's table). Keep the fence lines themselves:
  a file whose fences do not match the official file's does not build, and
  the message names the file and the fence.
- **A test passes only when it finished.** A test that crashes, hangs past
  its timeout, ends early (`exit()` anywhere, also on one rank), or goes past
  a resource limit (memory, CPU time, file size, processes and threads)
  fails, with a verdict that says which.
- **Races are graded where the race is the bug.** The tests of the
  concurrency labs that are marked race-sensitive (the barrier of lab 01,
  Hogwild! and the parameter server of lab 04) also run from a
  ThreadSanitizer build of your lab; a data race it reports fails the test,
  with the lines of the two racing accesses. (`make check RACE=0` leaves that
  run out while you work; the autograder always runs it.)
- `make check SAN=address` builds with AddressSanitizer and UBSan to find
  memory errors (`SAN=thread`: ThreadSanitizer for everything). It sees a
  write even one element past a block of `dt_mem_alloc`, which rounds
  blocks up to 64 bytes.
- **What your code may call.** Your lab's code may call libdt's public API
  (the functions declared in `lib/include/dt/*.h`), the C library and libm,
  and the functions of the lab's own files; nothing else. Not a function of
  the tests (they are linked into the same program: returning a test's own
  answer is not an answer), not one of libdt's internals, and not what
  `tests/grader/refused-symbols` lists: calls that change what the tests
  read (`dt_comm_stats_reset`, `dt_mem_reset_peak`, ...), calls that go
  around the memory accounting (`syscall`, `sbrk`, `dlsym`, `asprintf`, ...),
  and, per lab, the library's own version of the lab's idea (the library's
  collectives in labs 01 and 02, its ZeRO and FSDP in labs 08 and 09, ...).
  A call against these rules stops the lab's build before any test runs:
  every test of the lab gets `BUILD`, and the message names the call, its
  file and line, and the rule.
- **All your memory is counted.** The memory tests compare what a rank
  holds at its peak with the chapter's formula. Memory your code gets from
  `malloc`, `calloc`, `realloc`, aligned allocations, `strdup` or `mmap` is
  counted too, for the rank that allocated it (the tag `untagged`, beside
  those of `dt_mem_alloc`), and a failure says how many bytes came from
  outside `dt_mem_alloc`. Static or thread-local storage cannot hold a rank's
  state: a lab whose objects keep more than 4096 bytes there does not build.
- **Nothing left behind.** Each test gets a temporary folder of its own
  (`$TMPDIR`, under `build/`); a test that leaves a file there, or in
  `/tmp`, fails and names it.

## Your local score and the autograder's

The tests in this tree are the **visible** tests: the score `make check`
prints counts those only. The course's autograder runs the same tests, the
same way, and adds **hidden** tests (more cases of the same functions), so
your final score can be lower than your local one. Per lab:

EOF

echo "| lab | visible tests | visible points | hidden tests | hidden points | total points |"
echo "|---|---|---|---|---|---|"
total_v=0
total_h=0
# shellcheck disable=SC2086
"$dtgrade" --points tests $labs | while IFS=$'\t' read -r lab vt vp ht hp; do
    echo "| $lab | $vt | $vp | $ht | $hp | $((vp + hp)) |"
done
read -r total_v total_h < <("$dtgrade" --points tests $labs |
    awk -F'\t' '{ v += $3; h += $5 } END { print v + 0, h + 0 }')
echo "| all | | $total_v | | $total_h | $((total_v + total_h)) |"

cat <<'EOF'

## Chapters

EOF
echo "| # | chapter | lab |"
echo "|---|---|---|"
for c in chapters/[0-9][0-9]-*.md; do
    [ -f "$c" ] || continue
    name=$(basename "$c" .md)
    title=$(head -n 1 "$c" | sed -e 's/^# *//' -e 's/^[0-9]* *— *//')
    lab=""
    [ -d "labs/$name" ] && lab="\`labs/$name/\`"
    echo "| ${name%%-*} | [$title]($c) | $lab |"
done

cat <<'EOF'

## Layout

```
Makefile        build, check, run-lab (make help lists the targets)
chapters/       the workbook text, one file per chapter; hints/: each one's hints
labs/           what you edit: code between the student fences
tests/          the visible tests of each lab; official/, the untouched labs
                that make check splices your fences into; grader/, the harness
lib/            libdt, the library the labs use (headers in lib/include/dt/)
tools/          dtgrade (the grader), dtrun (starts a program's ranks) and others
docs/           design.md (how the library and the grader are built), api.md
data/           the data sets the labs use, with their licenses
```
EOF
