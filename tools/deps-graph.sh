#!/usr/bin/env bash
# deps-graph.sh - `make deps-graph`: what lib/ depends on, read from the code.
#
#   layers    for each layer of lib/ (in docs/design.md's order, lowest
#             first), the layers it includes: #include "dt/X.h" in its
#             files and in its public headers (dt/tp.h is nn's: a header
#             not named after a layer says whose it is), and relative
#             includes that reach another layer's folder
#   backends  the same between a layer and its backends' folders
#             (lib/comm/emul/, lib/comm/mpi/)
#   circles   the call circles between files of lib/: a file calls another
#             when its object uses a function the other's defines (nm: U
#             against T); a circle is a set of two or more files each of
#             which reaches every other (a strongly connected component)
#
# With --check DESIGN it also checks, printing "FAIL: ..." lines naming the
# file and line, then "N passed, M failed" (exit 1 on a failure):
#   - DESIGN's layer order (its line "core < net < ...") names every layer;
#   - every include goes down that order or stays in its layer;
#   - a layer's own files include nothing of its backends' folders, and a
#     backend's folder nothing of another's;
#   - the circles equal the lines "circle: FILE FILE ..." of DESIGN, which
#     lists them as built with OpenBLAS and MPI; a build without either
#     (BUILD's identity: no DT_HAVE_OPENBLAS or DT_HAVE_MPI; the sanitizers'
#     builds) compiles some files without the calls that close a circle,
#     so there each circle found must be listed, and no more.
# Objects are BUILD's (make builds them first); the files of an mpi/ folder
# count only where BUILD has MPI, those of an nccl/ folder only in make
# gpu's build.
#
#   tools/deps-graph.sh [--build BUILD] [--check DESIGN]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build
DESIGN=
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD=${2:?--build needs a folder}; shift 2 ;;
        --check) DESIGN=${2:?--check needs a file}; shift 2 ;;
        *) echo "deps-graph.sh: unknown option '$1' (--build BUILD, --check DESIGN)" >&2; exit 2 ;;
    esac
done
[ -z "$DESIGN" ] || [ -f "$DESIGN" ] || { echo "deps-graph.sh: no file $DESIGN" >&2; exit 2; }
command -v nm >/dev/null || { echo "deps-graph.sh: needs nm (binutils)" >&2; exit 2; }

mpi_built=0
grep -q -- '-DDT_HAVE_MPI' "$BUILD/identity-mpi" 2>/dev/null && mpi_built=1
nccl_built=0 # make gpu's build (GPU=1): lib/comm/nccl/ is compiled only there
grep -q -- '-DDT_HAVE_NCCL' "$BUILD/identity" 2>/dev/null && nccl_built=1
full_build=0 # the configuration DESIGN's circles are listed for
[ "$mpi_built" = 1 ] && grep -q -- '-DDT_HAVE_OPENBLAS' "$BUILD/identity" 2>/dev/null && full_build=1

# The layers, in the order DESIGN (else docs/design.md) gives them.
order_line=$(grep -m1 -E '^ +core( < [a-z]+)+ *$' "${DESIGN:-docs/design.md}" | tr -d ' ')
layers=$(ls -d lib/*/ | sed 's|lib/||; s|/$||' | grep -vx include)

# ---------------------------------------------------------------- includes

# The layer of each public header, "X=LAYER": dt/X.h is layer X's, or,
# where no layer is named X, the layer its opening comment names ("Part
# of the nn layer": dt/tp.h); dt/dt.h, which includes them all, is none.
header_layers() {
    local h x l
    for h in lib/include/dt/*.h; do
        x=$(basename "$h" .h)
        l=$x
        if [ ! -d "lib/$x" ]; then
            l=$(head -20 "$h" | grep -m1 -oE 'Part of the [a-z]+ layer' | awk '{ print $4 }')
            [ -n "$l" ] || l=$x
        fi
        echo "$x=$l"
    done | paste -sd' ' -
}

# One line per include: FILE LINE FROM_FOLDER TO_FOLDER (folders below
# lib/: "comm", "comm/emul"; a public header dt/X.h counts as its layer's
# folder, header_layers).
includes() {
    find lib -name '*.[ch]' | sort | xargs awk -v hl="$(header_layers)" '
            BEGIN { n = split(hl, p, " "); for (i = 1; i <= n; i++) { split(p[i], kv, "="); hdr[kv[1]] = kv[2] } }
            function layer(x) { return (x in hdr) ? hdr[x] : x }
            function folder(p,   n, a, i, out, k) {  # lib/comm/emul/x.c -> comm/emul
                n = split(p, a, "/"); out = ""; k = 0
                for (i = 1; i < n; i++) {
                    if (a[i] == "" || a[i] == ".") continue
                    if (a[i] == "..") { k--; continue }
                    st[++k] = a[i]
                }
                for (i = 2; i <= k; i++) out = out (out == "" ? "" : "/") st[i]
                return out
            }
            /^[ \t]*#[ \t]*include[ \t]*"/ {
                f = FILENAME
                inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
                from = folder(f)
                if (from == "include/dt") { from = f; sub(/.*\//, "", from); sub(/\.h$/, "", from); from = layer(from) }
                if (inc ~ /^dt\//) { to = inc; sub(/^dt\//, "", to); sub(/\.h$/, "", to); to = layer(to) }
                else { dir = f; sub(/[^\/]*$/, "", dir); to = folder(dir inc) }
                print f, FNR, from, to
            }'
}

# ---------------------------------------------------------------- calls

objects() {
    local src
    for src in $(find lib -name '*.c' | sort); do
        case "$src" in
            lib/*/mpi/*) [ "$mpi_built" = 1 ] || continue ;;
            lib/*/nccl/*) [ "$nccl_built" = 1 ] || continue ;;
        esac
        echo "$src $BUILD/obj/${src%.c}.o"
    done
}

# The circles, one line each: "circle: FILE FILE ..." (paths below lib/,
# sorted), sorted.
circles() {
    local src obj
    objects | while read -r src obj; do
        [ -f "$obj" ] || { echo "MISSING $src $obj"; continue; }
        nm -P "$obj" | awk -v f="${src#lib/}" '{ print f, $1, $2 }'
    done | awk '
        $1 == "MISSING" { print "FAIL: no object " $3 " for " $2 " (make first)" > "/dev/stderr"; bad = 1; next }
        { files[$1] = 1 }
        $3 == "T" || $3 == "W" { def[$2] = $1 }
        $3 == "U" { nu++; uf[nu] = $1; us[nu] = $2 }
        END {
            for (i = 1; i <= nu; i++) {
                if (!(us[i] in def) || def[us[i]] == uf[i]) continue
                e = uf[i] SUBSEP def[us[i]]
                if (!(e in seen)) { seen[e] = 1; adj[uf[i]] = adj[uf[i]] " " def[us[i]] }
            }
            n = 0
            for (v in files) if (!(v in idx)) strong(v)
            exit bad
        }
        # Tarjan: a component is a circle when it holds two files or more
        function strong(v,   ws, m, i, w, c, k) {
            idx[v] = n; low[v] = n; n++; st[++sp] = v; on[v] = 1
            m = split(adj[v], ws, " ")
            for (i = 1; i <= m; i++) {
                w = ws[i]
                if (!(w in idx)) { strong(w); if (low[w] < low[v]) low[v] = low[w] }
                else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
            }
            if (low[v] != idx[v]) return
            c = ""; k = 0
            do { w = st[sp--]; on[w] = 0; c = c "\n" w; k++ } while (w != v)
            if (k > 1) print c | "sort | paste -sd\" \" - | sed \"s/^ */circle: /\""
            close("sort | paste -sd\" \" - | sed \"s/^ */circle: /\"")
        }' | sort
}

# ---------------------------------------------------------------- print

inc=$(includes)
calls=$(circles) || calls_failed=1
echo "Layers, lowest first, and the layers each includes (#include lines):"
for l in $(echo "$order_line" | tr '<' ' ') $(echo "$layers" | grep -vxF -f <(echo "$order_line" | tr '<' '\n')); do
    below=$(echo "$inc" | awk -v l="$l" '{ split($3, a, "/"); split($4, b, "/") }
        a[1] == l && b[1] != l { print b[1] }' | sort -u | paste -sd' ' -)
    printf '  %-8s %s\n' "$l" "${below:--}"
done
echo "Backends' folders and what they include of their layer's (#include lines):"
echo "$inc" | awk '{ split($3, a, "/"); split($4, b, "/") }
    a[2] != "" && a[1] == b[1] && $4 != $3 { print $3, $4 }' | sort -u |
    awk '{ t[$1] = t[$1] " " $2 } END { for (f in t) printf "  %-10s%s\n", f, t[f] }' | sort
echo "Call circles between files of lib/ (nm of the objects in $BUILD$([ "$full_build" = 1 ] || echo ", without OpenBLAS or MPI")):"
if [ -n "$calls" ]; then echo "$calls" | sed 's/^/  /'; else echo "  none"; fi
[ -n "$DESIGN" ] || exit "${calls_failed:-0}"

# ---------------------------------------------------------------- check

pass=0
fail=0
verdict() { # 0: the check passed
    if [ "$1" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

# the order names every layer
missing=$(echo "$layers" | grep -vxF -f <(echo "$order_line" | tr '<' '\n'))
[ -n "$order_line" ] || echo "FAIL: $DESIGN has no layer order (a line 'core < net < ...')"
for l in $missing; do echo "FAIL: $DESIGN: the layer order '$order_line' leaves out lib/$l"; done
verdict $([ -n "$order_line" ] && [ -z "$missing" ]; echo $?)

# every include goes down the order (or stays in its layer)
bad=$(echo "$inc" | awk -v order="$order_line" '
    BEGIN { n = split(order, o, "<"); for (i = 1; i <= n; i++) rank[o[i]] = i }
    { split($3, a, "/"); split($4, b, "/") }
    a[1] != b[1] && (a[1] in rank) && (!(b[1] in rank) || rank[b[1]] > rank[a[1]]) {
        printf "FAIL: %s:%s: layer %s includes %s, above it (%s)\n", $1, $2, a[1], b[1], order }')
[ -z "$bad" ] || echo "$bad"
verdict $([ -z "$bad" ]; echo $?)

# a layer's files include none of its backends'; a backend none of another's
bad=$(echo "$inc" | awk '
    { split($3, a, "/"); split($4, b, "/") }
    a[1] == b[1] && b[2] != "" && a[2] != b[2] {
        printf "FAIL: %s:%s: %s includes %s: %s\n", $1, $2, $3, $4,
            a[2] == "" ? "above the seam, a backend is reached through its table only" \
                       : "a backend uses no other backend" }')
[ -z "$bad" ] || echo "$bad"
verdict $([ -z "$bad" ]; echo $?)

# the circles are DESIGN's (without OpenBLAS or MPI: among DESIGN's)
listed=$(grep -E '^ *circle: ' "$DESIGN" | sed 's/^ *//; s/ *$//' | sort)
if [ -n "${calls_failed:-}" ]; then
    echo "FAIL: the call circles could not be read from $BUILD's objects"
    verdict 1
else
    diff_out=$(diff <(echo "$listed" | sed '/^$/d') <(echo "$calls" | sed '/^$/d') |
        awk -v d="$DESIGN" -v full="$full_build" '
            { c = substr($0, 3); sub(/^circle: /, "", c) }
            /^< / && full { print "FAIL: " d " lists the call circle " c ", which the code does not have" }
            /^> / { print "FAIL: " d " does not list the call circle " c }')
    [ -z "$diff_out" ] || echo "$diff_out"
    verdict $([ -z "$diff_out" ]; echo $?)
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
