#!/usr/bin/env bash
# lab-objects.sh LAB OUT_DIR LIBDT TEST_OBJECT... -- LAB_OBJECT...
#
# What a lab's objects may do, checked before its test binary is linked
# (the Makefile runs it for every lab's `grade`, so `make check`, the
# autograder and `make test` all do). The lab's objects are the spliced
# files: the official code with the student's fences. Three rules:
#
#   1. What it calls. A lab may call libdt's public API (the functions
#      declared in lib/include/dt/*.h), the C library and libm, and the
#      functions of the lab's own files (in make gpu's build, GPU_API
#      names gpu/gpu.h, whose functions count as public too: a lab's
#      given GPU bodies call them); tests/grader/refused-symbols
#      takes more away (what changes what the tests read, what goes around
#      the memory accounting, the library's own version of the lab's
#      concept). Not a function of the tests (they link into the same
#      binary), visible or hidden, nor one of libdt's internals. A lab
#      may not define a function of the C library or libdt either (it
#      would replace it in the binary).
#   2. What it keeps in static or thread-local storage: at most
#      STATIC_LIMIT bytes over all its objects (.data, .bss, .tdata,
#      .tbss, any writable section): a rank's state lives in memory
#      allocated at run time, which the memory tests count.
#   3. Its allocations are charged: the objects are copied into OUT_DIR
#      with the calls of the C library's allocator renamed (objcopy
#      --redefine-syms tests/grader/untagged.redefine) to libdt's
#      lib/core/untagged.c, which charges them to the calling rank under
#      DT_MEM_UNTAGGED.
#
# A broken rule prints one line per problem, "FILE:LINE: error: ... (refused
# by the grader)", which the grader shows as the lab's BUILD reason, and
# exits 1. Environment: LAB_SRC (the folders of the lab's sources, the
# implementation's first, for the names messages give them), CC (to find the C library), NM, OBJCOPY,
# READELF, ADDR2LINE.
set -uo pipefail

STATIC_LIMIT=4096
MARK="refused by the grader"

# lab-objects.sh --lists LIBDT makes the lists below alone, ahead of the
# labs' builds (the Gradescope image's setup.sh: once, not per submission).
lists_only=
if [ "${1:-}" = --lists ]; then
    lists_only=1 lab=- libdt=${2:?usage: lab-objects.sh --lists LIBDT}
    tobjs=() objs=()
else
    lab=${1:?usage: lab-objects.sh LAB OUT_DIR LIBDT TEST_OBJECT... -- LAB_OBJECT...}
    out=${2:?}
    libdt=${3:?}
    shift 3
    tobjs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do tobjs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    objs=("$@")
    [ ${#objs[@]} -gt 0 ] || { mkdir -p "$out"; exit 0; }
fi

CC=${CC:-cc}
NM=${NM:-nm}
OBJCOPY=${OBJCOPY:-objcopy}
READELF=${READELF:-readelf}
ADDR2LINE=${ADDR2LINE:-addr2line}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
num=${lab%%-*}
cache=$(dirname "$libdt")/grader
mkdir -p "$cache"
[ -n "$lists_only" ] || mkdir -p "$out"
tmp=$(mktemp -d "$cache/check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ------------------------------------------------ the lists

# The global symbols of objects (or archives), from their symbol tables:
# "OBJECT u SYMBOL" for each undefined one and "OBJECT d SYMBOL" for each
# defined one, as nm -u and nm -g --defined-only list them. One readelf for
# them all: nm takes ten times as long to start, and the suites check
# hundreds of builds.
symbols() { # object...
    [ $# -gt 0 ] || return 0
    "$READELF" -sW "$@" 2>/dev/null | awk -v one="$1" -v n=$# '
        /^File: / { f = substr($0, 7); next }
        $1 ~ /^[0-9]+:$/ && NF >= 8 && ($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE") {
            print (n == 1 ? one : f), ($7 == "UND" ? "u" : "d"), $8 }'
}

# libdt's public API: what the public headers declare (comments left out
# by the preprocessor) and libdt defines. Remade when libdt is.
public=$cache/public.syms
defined=$cache/libdt.syms
if [ ! -s "$public" ] || [ ! -s "$defined" ] || [ "$libdt" -nt "$public" ]; then
    printf '#include "dt/dt.h"\n' | "$CC" -E -P -I"$root/lib/include" -x c - 2>/dev/null |
        grep -oE '\bdt_[A-Za-z0-9_]+' | sort -u >"$tmp/declared"
    symbols "$libdt" | awk '$2 == "d" { print $3 }' | sort -u >"$tmp/libdt"
    comm -12 "$tmp/declared" "$tmp/libdt" >"$tmp/public"
    mv "$tmp/libdt" "$defined" && mv "$tmp/public" "$public"
fi

# The C library, libm and the compiler's support library (libgcc): their
# exported names, GLIBC_PRIVATE ones left out. Empty when the C library
# cannot be found: then any name libdt and the tests do not define passes.
libc=$cache/libc.syms
if [ ! -f "$libc" ]; then
    for so in libc.so.6 libm.so.6; do
        f=$("$CC" -print-file-name="$so" 2>/dev/null)
        [ -f "$f" ] || f=$(ldconfig -p 2>/dev/null | awk -v so="$so" '$1 == so { print $NF; exit }')
        [ -n "$f" ] && [ -f "$f" ] || continue
        "$READELF" --dyn-syms -W "$f" 2>/dev/null |
            awk '$1 ~ /^[0-9]+:$/ && NF >= 8 && $7 != "UND" && $5 != "LOCAL" && $8 !~ /GLIBC_PRIVATE/ {
                sub(/@.*/, "", $8); print $8 }'
    done >"$tmp/libc"
    g=$("$CC" -print-libgcc-file-name 2>/dev/null)
    [ -f "$g" ] && symbols "$g" | awk '$2 == "d" { print $3 }' >>"$tmp/libc"
    sort -u "$tmp/libc" >"$tmp/libc.sorted" && mv "$tmp/libc.sorted" "$libc"
fi

[ -z "$lists_only" ] || exit 0

# make gpu's build: gpu.h's functions (the GPU objects link into the test
# binary beside the lab's) are public there.
cp "$public" "$tmp/public.all"
if [ -n "${GPU_API:-}" ]; then
    "$CC" -E -P -I"$root/lib/include" -x c "$root/$GPU_API" 2>/dev/null |
        grep -oE '\bdt_gpu_[A-Za-z0-9_]+' >>"$tmp/public.all"
fi

symbols "${tobjs[@]}" | awk '$2 == "d" { print $3 }' | sort -u >"$tmp/tests"
symbols "${objs[@]}" >"$tmp/symbols"
awk '$2 == "d" { print $3 }' "$tmp/symbols" | sort -u >"$tmp/lab"

# The refused symbols of this lab: "SYMBOL REASON" (SYMBOL may end in *).
awk -v n="$num" '/^[[:space:]]*(#|$)/ { next }
    { labs = $1; sym = $2; $1 = ""; $2 = ""; sub(/^[[:space:]]+/, "")
      k = split(labs, l, ",")
      for (i = 1; i <= k; i++) if (l[i] == "*" || l[i] == n) { print sym "\t" $0; break } }' \
    "$here/refused-symbols" >"$tmp/refused"

# ------------------------------------------------ where a symbol is used

rel() { # path -> relative to the repository's root
    case "$1" in "$root"/*) echo "${1#"$root"/}" ;; *) echo "$1" ;; esac
}

# The name a lab's object's source goes by: the file the splice's first
# "#line 1" names (the student's), else the source's path (the first of
# LAB_SRC's folders that has it: a file the implementation lacks is the
# official one).
source_name() { # object
    local dir src first
    for dir in ${LAB_SRC:-}; do
        src=$dir/$(basename "${1%.o}.c")
        [ -f "$src" ] || continue
        first=$(head -n 1 "$src")
        case "$first" in
            '#line 1 "'*'"') first=${first#'#line 1 "'}; echo "${first%'"'}"; return ;;
        esac
        rel "$src"
        return
    done
    basename "${1%.o}.c"
}

# "FILE:LINE" of the first call of symbol $2 in object $1 (from its
# relocations and line table; the splice's #line directives keep the
# student's numbering), else the source's name.
where() { # object symbol
    local o=$1 s=$2 sec off loc
    read -r sec off < <("$READELF" -rW "$o" 2>/dev/null | awk -v s="$2" '
        /^Relocation section/ { sec = $3; gsub(/\047/, "", sec); sub(/^\.rela/, "", sec); next }
        sec !~ /^\.debug|^\.eh_frame/ && $5 == s { print sec, $1; exit }')
    if [ -n "${off:-}" ]; then
        loc=$("$ADDR2LINE" -e "$o" -j "$sec" "0x$off" 2>/dev/null | head -n 1)
        loc=${loc%% *}
        case "${loc##*:}" in
            '' | *[!0-9]*) ;;
            *) echo "$(source_name "$o"):${loc##*:}"; return ;;
        esac
    fi
    source_name "$o"
}

errors=0
say() { echo "$*" >&2; errors=$((errors + 1)); }
RULE="a lab may call libdt's public API (lib/include/dt/), the C library and libm, and its own functions"

# ------------------------------------------------ rule 1: what it calls

# Each object's undefined symbols ("u OBJ SYM") and defined ones ("d OBJ
# SYM"), judged in one pass: "OBJ SYM WHAT" for each problem, WHAT a
# reason of refused-symbols, or tests, internal, unknown, defines.
awk '{ print $2, $1, $3 }' "$tmp/symbols" >"$tmp/uses"
awk -v libc_known="$([ -s "$libc" ] && echo 1)" '
    FILENAME == ARGV[1] { split($0, f, "\t"); refused[f[1]] = f[2]; next }
    FILENAME == ARGV[2] { lab[$1] = 1; next }
    FILENAME == ARGV[3] { public[$1] = 1; next }
    FILENAME == ARGV[4] { tests[$1] = 1; next }
    FILENAME == ARGV[5] { libdt[$1] = 1; next }
    FILENAME == ARGV[6] { libc[$1] = 1; next }
    function refusal(s,   p) {
        for (p in refused)
            if (p == s || (p ~ /\*$/ && index(s, substr(p, 1, length(p) - 1)) == 1))
                return refused[p]
        return ""
    }
    $1 == "d" {
        if ($3 in libdt || $3 in libc || $3 in tests) print $2 "\t" $3 "\tdefines"
        next
    }
    {
        s = $3
        if ((r = refusal(s)) != "") { print $2 "\t" s "\t" r; next }
        if (s in lab || s in public || s ~ /^(__asan_|__ubsan_|__tsan_|__sanitizer_|_GLOBAL_OFFSET_TABLE_$)/) next
        if (s in tests) print $2 "\t" s "\ttests"
        else if (s in libdt) print $2 "\t" s "\tinternal"
        else if (libc_known && !(s in libc)) print $2 "\t" s "\tunknown"
    }' "$tmp/refused" "$tmp/lab" "$tmp/public.all" "$tmp/tests" "$defined" "$libc" "$tmp/uses" \
    >"$tmp/problems"
while IFS=$'\t' read -r o s what; do
    case "$what" in
        tests) say "$(where "$o" "$s"): error: the lab calls $s, a function of the tests: $RULE ($MARK)" ;;
        internal) say "$(where "$o" "$s"): error: the lab calls $s, one of libdt's internals, not its public API: $RULE ($MARK)" ;;
        unknown) say "$(where "$o" "$s"): error: the lab calls $s, in none of libdt's public API, the C library and libm: $RULE ($MARK)" ;;
        defines) say "$(source_name "$o"): error: the lab defines $s, a function of libdt, the C library or the tests, which it would replace in the test binary; give yours another name ($MARK)" ;;
        *) say "$(where "$o" "$s"): error: the lab calls $s, which it may not: $what ($MARK: tests/grader/refused-symbols)" ;;
    esac
done <"$tmp/problems"

# ------------------------------------------------ rule 2: static storage

# Bytes of writable storage an object holds: its writable sections, but
# in a sanitized build its data symbols (AddressSanitizer pads each global
# with a red zone), so that both builds count the same bytes.
HEX='function hex(h,   v, i) { v = 0; h = tolower(h)
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
    return v }'
sanitized() { # object: status 0 when it calls a sanitizer's runtime
    awk -v o="$1" '$1 == o && $2 == "u" && $3 ~ /^(__asan|__tsan)_/ { found = 1 }
        END { exit !found }' "$tmp/symbols"
}
static_bytes() { # object
    if sanitized "$1"; then
        "$NM" -S --defined-only "$1" 2>/dev/null | awk "$HEX"'
            NF == 4 && $3 ~ /^[bBdDC]$/ && $4 !~ /^(__odr_asan|__asan|\.)/ { s += hex($2) }
            END { print s + 0 }'
    else
        "$READELF" -SW "$1" 2>/dev/null | sed -n 's/^ *\[ *[0-9]*\] //p' | awk "$HEX"'
            { flags = NF == 10 ? $7 : "" }
            flags ~ /W/ && flags ~ /A/ && $1 !~ /^\.(init|fini|preinit)_array/ { s += hex($5) }
            END { print s + 0 }'
    fi
}

total=0
bytes=()
for o in "${objs[@]}"; do
    b=$(static_bytes "$o")
    bytes+=("${b:-0}")
    total=$((total + ${b:-0}))
done
if [ "$total" -gt "$STATIC_LIMIT" ]; then
    detail=""
    for i in "${!objs[@]}"; do
        o=${objs[$i]} b=${bytes[$i]}
        [ "$b" -gt 0 ] || continue
        big=$("$NM" -S --size-sort --defined-only "$o" 2>/dev/null |
            awk 'NF == 4 && $3 ~ /^[bBdDC]$/ && $4 !~ /^(__odr_asan|__asan|\.)/ { print $4 }' | tail -n 3 | tr '\n' ' ')
        detail="$detail${detail:+, }$(source_name "$o") $b${big:+ (${big% })}"
    done
    say "$lab: error: the lab keeps $total bytes in static or thread-local storage (bytes per file: $detail); a lab may keep at most $STATIC_LIMIT bytes there: a rank's state lives in memory allocated at run time, which the memory tests count ($MARK)"
fi

[ "$errors" -eq 0 ] || exit 1

# ------------------------------------------------ rule 3: allocations charged

for o in "${objs[@]}"; do
    "$OBJCOPY" --redefine-syms="$here/untagged.redefine" "$o" "$out/$(basename "$o")" || exit 2
done
