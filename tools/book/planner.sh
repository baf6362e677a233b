#!/usr/bin/env bash
# planner.sh BOOK WORK - the web book's planner: lib/sim's planner built
# for WebAssembly by clang (wasm32-wasi, Debian's clang, lld, wasi-libc and
# libclang-rt-dev-wasm32: tools/setup-deps.sh book), from the very sources
# libdt compiles, with tools/book/planner/entry.c's exports on top; and the
# numbers the page must give, from the native build of the same sources.
#
#   BOOK/planner-wasm.js   the module, base64 in a script (file:// forbids
#                          fetching a .wasm), read by BOOK/planner.js
#   WORK/vectors.json      tests/lib/sim_vectors.h's vectors with the native
#                          planner's figures (planner/vectors.c): what make
#                          test-book replays in the browser
#   WORK/skipped           instead of both, the reason, when this machine's
#                          clang cannot build for wasm32-wasi
#
# A machine without that toolchain gets the book without the planner (this
# script says so and writes WORK/skipped, which make test-book reports as a
# failure); a toolchain that builds a probe but not the planner fails the
# build. CLANG and CC name the compilers (default clang and cc).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
book=${1:?usage: planner.sh BOOK WORK}
work=${2:?usage: planner.sh BOOK WORK}
clang=${CLANG:-clang}
cc=${CC:-cc}
cd "$root"
rm -rf "$work"
mkdir -p "$work"

# The planner's sources: its core (dt/sim.h: pure, libc's math only) and
# what it calls, the formulas of the memory, the activations and the
# collectives, and dt_fail (plan_error.c's message for dt_last_error).
srcs=(lib/sim/plan.c lib/sim/plan_time.c lib/sim/plan_search.c lib/sim/plan_error.c
      lib/sim/presets.c lib/sim/memory.c lib/sim/activations.c lib/net/cost.c lib/core/error.c)
flags=(-O2 -std=c11 -Wall -Wextra ${WERROR:-} -D_GNU_SOURCE -Ilib/include)
wasm=(--target=wasm32-wasi -nostartfiles -Wl,--no-entry)

skip() {
    echo "$1" >"$work/skipped"
    echo "book: the planner was skipped: $1 (make deps-book installs the toolchain; make test-book fails without it)" >&2
    exit 0
}
command -v "$clang" >/dev/null || skip "no $clang"
# A probe with what the planner needs from the toolchain (libc's math and
# vsnprintf, the compiler's builtins): a missing piece skips the planner,
# where a failure on the planner's own code below fails the build.
cat >"$work/probe.c" <<'PROBE'
#include <math.h>
#include <stdio.h>
__attribute__((export_name("probe"))) int probe(double x)
{
    char s[32];
    return snprintf(s, sizeof s, "%g", fmod(x, 3.0));
}
PROBE
if ! "$clang" "${wasm[@]}" -O2 -o "$work/probe.wasm" "$work/probe.c" 2>"$work/probe.log"; then
    skip "$clang cannot build for wasm32-wasi: $(grep -m1 -i 'error' "$work/probe.log" || head -1 "$work/probe.log")"
fi
rm -f "$work"/probe.*

"$clang" "${wasm[@]}" "${flags[@]}" -o "$work/planner.wasm" tools/book/planner/entry.c "${srcs[@]}"
{ printf '// The planner of dt/sim.h, built for WebAssembly by tools/book/planner.sh.\nwindow.DT_PLANNER_WASM = "'
  base64 -w0 "$work/planner.wasm"
  printf '";\n'; } >"$book/planner-wasm.js"

"$cc" "${flags[@]}" -Itests/lib -o "$work/vectors" tools/book/planner/vectors.c "${srcs[@]}" -lm
"$work/vectors" >"$work/vectors.json"
echo "book: the planner: $(wc -c <"$work/planner.wasm") bytes of WebAssembly, $(grep -c '"name"' "$work/vectors.json") test vectors"
