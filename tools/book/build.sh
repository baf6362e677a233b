#!/usr/bin/env bash
# build.sh [OUT] - the workbook as a web book: chapters/*.md and
# chapters/hints/NN.md rendered into a static site in OUT (default
# build/book/) that works offline, from file:// or any static server.
#
#   index.html            the contents: every chapter and its sections
#   NN-topic.html         a chapter, its sections numbered as the text numbers
#                         them (anchors sec-N, the numbers labs and tests cite)
#   NN-hints.html         the chapter's hints, each a <details> folded until
#                         clicked (opened in print)
#   print.html            the whole book on one page, hints open
#   src/PATH.html         the repository files the chapters name, highlighted
#   figures/              the chapters' SVG figures
#   search-index.js       the search index, made here (a script, not JSON
#                         fetched at view time: file:// forbids fetch)
#   planner.js, planner-wasm.js   the planner in the page: a form in each
#                         chapter's ::: {.planner} block that runs lib/sim's
#                         dt_sim_plan compiled to WebAssembly (planner.sh;
#                         its test vectors go to OUT-planner/)
#
# Math is rendered here, by pandoc, into MathML: reading the book needs no
# JavaScript and no font beyond the browser's. A formula pandoc cannot
# convert fails the build (it would show as raw TeX). Tools: pandoc and
# Node.js (tools/setup-deps.sh book); nothing is fetched.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/book}
command -v pandoc >/dev/null || { echo "book: no pandoc: run make deps-book (tools/setup-deps.sh book)" >&2; exit 1; }
command -v node >/dev/null || { echo "book: no node: run make deps-book (tools/setup-deps.sh book)" >&2; exit 1; }

cd "$root"
rm -rf "$out"
mkdir -p "$out/figures" "$out/.work"
work=$out/.work
# The repository's files, for the filter to resolve the paths the text
# names: those of the student tree (list-files.sh: no solutions, hidden
# tests, mutants or instructors' notes), for the book is the students'.
tests/grader/list-files.sh student | LC_ALL=C sort >"$work/files"
: >"$work/linked"

chapters=(chapters/[0-9][0-9]-*.md)
# The planner first: the chapters that hold one load its scripts only when
# it was built (planner.sh says why it was not).
"$here/planner.sh" "$out" "$out-planner"
planner=0
if [ -f "$out/planner-wasm.js" ]; then
    planner=1
    cp "$here/planner.js" "$out/"
fi
title() { sed -n '1s/^# *//p' "$1"; }
fail_on_math() {   # pandoc's warnings: an unconverted formula is an error here
    if grep -q 'Could not convert TeX math' "$1"; then
        echo "book: $2: a formula pandoc could not render:" >&2
        grep -A2 'Could not convert TeX math' "$1" >&2
        exit 1
    fi
    cat "$1" >&2
}
render() {   # render SRC DEST [pandoc options]: one page of the book
    local src=$1 dest=$2; shift 2
    pandoc "$src" -f markdown -t html5 --mathml --standalone \
        --template "$here/page.html" --lua-filter "$here/links.lua" \
        -M files="$work/files" -M linked="$work/linked" "$@" -o "$dest" 2>"$work/warn"
    fail_on_math "$work/warn" "$src"
}

n=${#chapters[@]}
for ((i = 0; i < n; i++)); do
    c=${chapters[$i]}
    base=$(basename "$c" .md)
    nn=${base%%-*}
    args=(-M chapter="$nn" -M pagetitle="$(title "$c")")
    if ((i > 0)); then
        p=$(basename "${chapters[$((i - 1))]}" .md)
        args+=(-V prev="$p.html" -V prevtitle="${p%%-*}")
    fi
    if ((i + 1 < n)); then
        x=$(basename "${chapters[$((i + 1))]}" .md)
        args+=(-V next="$x.html" -V nexttitle="${x%%-*}")
    fi
    if [ "$planner" = 1 ] && grep -q '^::: *{[^}]*\.planner' "$c"; then
        args+=(-V planner=1)
    fi
    if [ -f "chapters/hints/$nn.md" ]; then
        args+=(-V hints="$nn-hints.html")
        render "chapters/hints/$nn.md" "$out/$nn-hints.html" -M chapter="$nn" \
            -M pagetitle="$(title "chapters/hints/$nn.md")" \
            -V prev="$base.html" -V prevtitle="back to $nn"
    fi
    render "$c" "$out/$base.html" "${args[@]}"
done

# The single page: each chapter and its hints as a fragment whose ids carry
# the chapter's prefix, in one document (hints open: print.css).
: >"$work/all.html"
for c in "${chapters[@]}"; do
    base=$(basename "$c" .md)
    nn=${base%%-*}
    for s in "$c" $( [ -f "chapters/hints/$nn.md" ] && echo "chapters/hints/$nn.md"); do
        id=c$nn-top prefix=c$nn-
        [ "$s" = "$c" ] || id=c$nn-hints prefix=c$nn-h-
        printf '<section class="chapter" id="%s">\n' "$id" >>"$work/all.html"
        pandoc "$s" -f markdown -t html5 --mathml --lua-filter "$here/links.lua" \
            -M files="$work/files" -M chapter="$nn" -M print=1 -M prefix="$prefix" \
            2>"$work/warn" >>"$work/all.html"
        fail_on_math "$work/warn" "$s"
        printf '</section>\n' >>"$work/all.html"
    done
done
# (The fragments go in as they are: read back by pandoc, MathML would
# become TeX again.)
pandoc /dev/null -f markdown -t html5 --standalone --template "$here/page.html" \
    -M pagetitle="The whole book" --include-after-body="$work/all.html" -o "$out/print.html"

cp chapters/figures/*.svg "$out/figures/"
cp "$here/book.css" "$here/book.js" "$out/"

# The repository files the chapters link to, each a highlighted page.
LC_ALL=C sort -u "$work/linked" >"$work/linked.sorted"
while read -r path; do
    if [ "${path%/}" != "$path" ]; then      # a folder: its files, listed
        mkdir -p "$out/src/$path"
        depth=$(($(tr -cd / <<<"src/$path" | wc -c)))
        up=$(printf '../%.0s' $(seq 1 "$depth"))
        {
            printf '# `%s`\n\n' "$path"
            grep "^${path//./\\.}[^/]*$" "$work/files" | while read -r f; do
                printf -- '- [`%s`](%s.html)\n' "${f#"$path"}" "${f#"$path"}"
                echo "$f" >>"$work/linked.more"
            done
        } >"$work/dir.md"
        pandoc "$work/dir.md" -t html5 --standalone --template "$here/page.html" \
            -V root="$up" -M pagetitle="$path" -o "$out/src/${path}index.html"
    fi
done <"$work/linked.sorted"
# One pandoc a file, as many at once as there are cores.
src_page() {   # src_page PATH: OUT/src/PATH.html
    local path=$1 depth up lang fence='````````' md
    mkdir -p "$out/src/$(dirname "$path")"
    depth=$(($(tr -cd / <<<"src/$path" | wc -c)))
    up=$(printf '../%.0s' $(seq 1 "$depth"))
    case $path in *.c | *.h) lang=c ;; *.sh) lang=bash ;; *.py) lang=python ;; *.md) lang=markdown ;; *) lang=text ;; esac
    md=$(mktemp "$work/src.XXXXXX")
    { printf '# `%s`\n\n%s {.%s .numberLines tabindex="0"}\n' "$path" "$fence" "$lang"; cat "$path"; printf '\n%s\n' "$fence"; } >"$md"
    # The line numbers are empty links (their number is CSS): out of the tab
    # order and hidden from screen readers, which read the code itself.
    pandoc "$md" -f markdown -t html5 --standalone --template "$here/page.html" \
        -V root="$up" -M pagetitle="$path" |
        sed -E 's|<a href="#(cb[0-9]+-[0-9]+)"></a>|<a href="#\1" aria-hidden="true" tabindex="-1"></a>|g' >"$out/src/$path.html"
    rm -f "$md"
}
export -f src_page
export out work here
cat "$work/linked.sorted" "$work/linked.more" 2>/dev/null | grep -v '/$' | LC_ALL=C sort -u |
    xargs -r -d '\n' -P "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)" -n 8 \
        bash -c 'for p; do src_page "$p" || exit 255; done' src_page

# The contents and the search index, from the rendered pages.
node "$here/index.mjs" "$out" "$work/toc.md" "${chapters[@]}"
render "$work/toc.md" "$out/index.html" -M pagetitle="Contents" \
    -V next="$(basename "${chapters[0]}" .md).html" -V nexttitle="${chapters[0]:9:2}"
rm -rf "$work"
echo "book: $out/index.html ($(find "$out" -name '*.html' | wc -l) pages)"
if [ "$planner" = 0 ]; then
    echo "book: built WITHOUT the planner: $(cat "$out-planner/skipped")" >&2
fi
