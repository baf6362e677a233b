#!/usr/bin/env bash
# run.sh GRADE - runs each test of the mpi backend's test binary under
# `mpirun -np P` (DT_MPIRUN: the family's launcher), P = 2 and 4 (MPI_NPS
# to change), one mpirun per test, and prints "mpi (FAMILY) -np P: N
# passed, M failed". Skips, saying why, where mpirun is
# missing or libdt was built without MPI (MPI_BUILT empty). Exit 1 on any
# failure.
set -uo pipefail
grade=${1:?usage: run.sh GRADE}
nps=${MPI_NPS:-2 4}
# The launcher and its flags: DT_MPIRUN, which the Makefile derives from
# MPICC's family (mpirun.mpich -bind-to none, ...), else Open MPI 4's.
if [ -n "${DT_MPIRUN:-}" ]; then
    read -r -a launcher <<<"$DT_MPIRUN"
else
    launcher=(mpirun --oversubscribe --bind-to none)
    [ "$(id -u)" = 0 ] && launcher+=(--allow-run-as-root)
fi
if ! command -v "${launcher[0]}" >/dev/null; then
    echo "test-mpi: skipped: ${launcher[0]} is not installed (tools/setup-deps.sh mpi installs Open MPI and MPICH)"
    exit 0
fi
if [ -z "${MPI_BUILT:-}" ]; then
    echo "test-mpi: skipped: libdt was built without MPI (MPI=0, a sanitizer, or no mpicc)"
    exit 0
fi
family=${DT_MPI_FAMILY:-openmpi4}
# A test's own timeouts catch a hang inside libdt; this one catches the rest.
limit=${MPI_TEST_LIMIT:-300}
export DT_QUIET=1
names=$("$grade" --list | cut -f2) || { echo "test-mpi: $grade --list failed"; exit 1; }
failed=0
for np in $nps; do
    pass=0 fail=0
    for name in $names; do
        log=$(mktemp)
        if timeout -k 5 "$limit" "${launcher[@]}" -np "$np" "$grade" --run "$name" >"$log" 2>&1; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL: ${launcher[*]} -np $np $grade --run $name"
            tail -n 20 "$log" | sed 's/^/    /'
        fi
        rm -f "$log"
    done
    echo "mpi ($family) -np $np: $pass passed, $fail failed"
    [ "$fail" -eq 0 ] || failed=1
done
exit $failed
