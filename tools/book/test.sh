#!/usr/bin/env bash
# test.sh [BOOK] - make test-book: the web book (default build/book/, made
# by build.sh) in headless Chromium (test.mjs), then proof that the test
# can fail: copies of the book in a temporary folder, each with one planted
# fault in a chapter's page, must each fail it with the fault named, and an
# unplanted copy must pass.
#
# playwright-core and axe-core come from npm at the versions package-lock.json pins
# (npm ci, once); Chromium, pandoc and Node.js from Debian
# (tools/setup-deps.sh book).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
book=$(cd "${1:-$here/../../build/book}" && pwd)
[ -f "$book/index.html" ] || { echo "test-book: no book in $book: run make book" >&2; exit 2; }
command -v node >/dev/null || { echo "test-book: no node: run tools/setup-deps.sh book" >&2; exit 2; }
if [ ! -f "$here/node_modules/playwright-core/package.json" ] ||
   [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

node "$here/test.mjs" "$book"

# The planted faults: what goes into the page, and what the failure must say.
page=03-data-parallel.html
plants=(
    'a broken link|<p><a href="no-such-chapter.html">x</a></p>|no-such-chapter.html (no such page)'
    'a link to a missing section|<p><a href="04-async.html#sec-99">x</a></p>|04-async.html#sec-99 (no such anchor)'
    'an unrendered formula|<p>$$\frac{1}{2}$$</p>|unrendered math'
    'a request outside the book|<link rel="stylesheet" href="https://cdn.example.invalid/x.css">|requests outside the book'
    'a file outside the book|<img alt="" src="../outside.png">|requests outside the book'
    'a missing figure|<img alt="" src="figures/no-such.svg">|images not loaded'
    'a script error|<script>window.noSuchFunction()</script>|script error'
    'a figure without alt text|<img src="figures/03-overlap.svg">|image-alt'
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
copy() { rm -rf "$tmp/book"; mkdir "$tmp/book"; cp -r "$book/." "$tmp/book/"; rm -rf "$tmp/book/screenshots"; }
copy
if node "$here/test.mjs" "$tmp/book" --pages "$page" >"$tmp/log" 2>&1; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAIL the unplanted copy of $page fails:"; cat "$tmp/log"
fi
for p in "${plants[@]}"; do
    IFS='|' read -r what html expect <<<"$p"
    copy
    html=$html node -e '
        const fs = require("fs"), f = process.argv[1], s = fs.readFileSync(f, "utf8");
        if (!s.includes("</main>")) process.exit(1);
        fs.writeFileSync(f, s.replace("</main>", process.env.html + "</main>"));' "$tmp/book/$page"
    if node "$here/test.mjs" "$tmp/book" --pages "$page" >"$tmp/log" 2>&1; then
        failed=$((failed + 1)); echo "FAIL the test passed a page with $what"
    elif ! grep -qF -- "$expect" "$tmp/log"; then
        failed=$((failed + 1)); echo "FAIL with $what the test failed without saying '$expect':"; cat "$tmp/log"
    else
        passed=$((passed + 1)); echo "ok   planted $what: caught ($expect)"
    fi
done
echo "planted faults: $passed passed, $failed failed"
[ "$failed" = 0 ]
