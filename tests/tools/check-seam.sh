#!/usr/bin/env bash
# check-seam.sh - no backend is named outside its folder (run by `make
# test`): every backend reaches lib/comm through its table (lib/comm/
# backend.h), and lib/comm/backend.c is the one place that picks a table.
# In the code of lib/ (comments and strings left out), each backend's names
# may appear only in its own folder and in backend.c:
#   thread, proc  lib/comm/emul/   DT_BACKEND_THREAD, DT_BACKEND_PROC,
#                                  dt_thread_ops, dt_proc_ops
#   mpi           lib/comm/mpi/    DT_BACKEND_MPI, DT_HAVE_MPI, dt_mpi_*,
#                                  DT_MPI_*, MPI_*, <mpi.h>
#   nccl          lib/comm/nccl/   DT_BACKEND_NCCL, DT_HAVE_NCCL, dt_nccl_*,
#                                  nccl*, <nccl.h>
# and nothing else chooses by a backend value (backend == ..., !=, switch).
# dt/comm.h's enum, which names the backends a program may pick, is the
# API, not a check. And no C file outside lib/comm/backend.c and the mpi/
# folders reads DT_HAVE_MPI or <mpi.h> (bench/mpi_*.c, Open MPI's own side
# built with mpicc, aside): the Makefile gives MPI's flags to those alone.
# Each finding names the file and the line.
#   tests/tools/check-seam.sh [BUILD]
set -uo pipefail
cd "$(dirname "$0")/../.."

found=$(find lib -name '*.[ch]' | sort | grep -vxF -e lib/comm/backend.c -e lib/include/dt/comm.h |
    xargs awk '
    # The line without its comments and string or character literals
    # (a comment may go on over lines: in_comment).
    function code(s,   out, i, c, q) {
        out = ""
        for (i = 1; i <= length(s); i++) {
            c = substr(s, i, 1)
            if (in_comment) {
                if (c == "*" && substr(s, i + 1, 1) == "/") { in_comment = 0; i++ }
                continue
            }
            if (c == "/" && substr(s, i + 1, 1) == "*") { in_comment = 1; i++; continue }
            if (c == "/" && substr(s, i + 1, 1) == "/") break
            if (c == "\"" || c == "\047") {
                q = c
                for (i++; i <= length(s) && substr(s, i, 1) != q; i++)
                    if (substr(s, i, 1) == "\\") i++
                out = out " "
                continue
            }
            out = out c
        }
        return out
    }
    FNR == 1 { in_comment = 0 }
    {
        line = code($0)
        if ($0 ~ /^[ \t]*#[ \t]*include[ \t]*</) line = $0 # <mpi.h> is a name
        f = FILENAME
        emul = f ~ /^lib\/comm\/emul\//; mpi = f ~ /^lib\/comm\/mpi\//; nccl = f ~ /^lib\/comm\/nccl\//
        if (!emul && match(line, /DT_BACKEND_(THREAD|PROC)|dt_(thread|proc)_ops/))
            report(f, "thread or proc (lib/comm/emul/)")
        if (!mpi && match(line, /DT_BACKEND_MPI|DT_HAVE_MPI|dt_mpi_[A-Za-z0-9_]+|DT_MPI_[A-Za-z0-9_]+|(^|[^A-Za-z0-9_])MPI_[A-Za-z0-9_]+|<mpi\.h>/))
            report(f, "mpi (lib/comm/mpi/)")
        if (!nccl && match(line, /DT_BACKEND_NCCL|DT_HAVE_NCCL|dt_nccl_[A-Za-z0-9_]+|(^|[^A-Za-z0-9_])nccl[A-Za-z0-9_]*|<nccl\.h>/))
            report(f, "nccl (lib/comm/nccl/)")
        if (!emul && !mpi && !nccl &&
            match(line, /backend[ \t]*[!=]=|[!=]=[ \t]*[A-Za-z0-9_>.-]*backend([^A-Za-z0-9_]|$)|switch[ \t]*\(.*backend/))
            report(f, "a choice by backend")
    }
    function report(f, what,   name) {
        name = substr(line, RSTART, RLENGTH)
        sub(/^[^A-Za-z0-9_<]/, "", name)
        printf "FAIL: %s:%d: %s outside its folder and lib/comm/backend.c: %s\n", f, FNR, what, name
    }')
pass=0
fail=0
if [ -n "$found" ]; then
    echo "$found"
    fail=$(echo "$found" | wc -l)
else
    pass=1
fi
# The Makefile gives MPI's flags (-DDT_HAVE_MPI, mpi.h's folders) to
# lib/comm/backend.c and the mpi/ folders alone (MPI_OBJS), so that every
# other object is the same in a build with MPI, without it (MPI=0) and with
# either family (SEED): no other C file may read them.
outside=$(grep -rnE 'DT_HAVE_MPI|<mpi\.h>' --include='*.[ch]' lib tests tools bench labs solutions gpu 2>/dev/null |
    grep -vE '^lib/comm/backend\.c:|^lib/[a-z]+/mpi/|^bench/mpi_[a-z_]+\.c:')
if [ -n "$outside" ]; then
    echo "$outside" | sed 's/^/FAIL: MPI read outside lib\/comm\/backend.c and the mpi\/ folders (the Makefile gives their flags to those alone): /'
    fail=$((fail + $(echo "$outside" | wc -l)))
else
    pass=$((pass + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
