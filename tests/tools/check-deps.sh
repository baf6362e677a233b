#!/usr/bin/env bash
# check-deps.sh - docs/design.md cannot drift from lib/'s dependencies (run
# by `make test`): tools/deps-graph.sh --check reads the include lines and
# the objects of BUILD and checks that layers include only downward, in
# docs/design.md's order, that above the seam lib/comm includes none of
# its backends' folders and no backend another's, and that the call
# circles between files of lib/ are the ones docs/design.md lists; each
# failure names the file and line, or the circle.
#   tests/tools/check-deps.sh BUILD
set -uo pipefail
cd "$(dirname "$0")/../.."
exec tools/deps-graph.sh --build "${1:-build}" --check docs/design.md
