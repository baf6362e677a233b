#!/usr/bin/env bash
# check-setup-deps.sh - tools/setup-deps.sh, the one list of the project's
# packages (run by `make test`): the development container's Dockerfile,
# CI, `make deps` and the Gradescope image all install through it and
# through nothing else; with stand-ins for dpkg-query and apt-get on PATH,
# it installs exactly the missing packages, runs no apt-get when none is
# missing, and --check and DT_DEPS_NO_INSTALL=1 install nothing; a wrong
# set is refused by name; every package it names is one Debian knows
# (apt-cache, where its lists are present); devcontainer.json is valid and
# builds the Dockerfile from Debian 12.
#   tests/tools/check-setup-deps.sh BUILD
set -uo pipefail
deps=tools/setup-deps.sh
pass=0
fail=0
check() { # description command...
    local what=$1
    shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# ---------------------------------------------------------------- its users
sets_of() { # file: the sets its setup-deps line installs
    grep -m1 -oE '(setup-deps(\.sh)?|dtlab-setup-deps) [a-z ]+' "$1" | cut -d' ' -f2- | tr ' ' '\n' |
        grep -v '^$' | sort | tr '\n' ' '
}
docker=.devcontainer/Dockerfile
check "$docker does not start from debian:12" grep -q '^FROM debian:12$' "$docker"
check "$docker does not install through setup-deps.sh" grep -qE '^COPY tools/setup-deps.sh ' "$docker"
for f in "$docker" .ci/run Makefile tests/grader/gradescope/setup.sh; do
    [ -f "$f" ] || continue # .ci/ is not in the student tree
    check "$f does not run tools/setup-deps.sh" test -n "$(sets_of "$f")"
    check "$f runs apt-get itself" bash -c "! grep -n 'apt-get' '$f' | grep -v '^[0-9]*:#'"
done
if [ -f .ci/run ]; then
    check "CI installs $(sets_of .ci/run)but the container $(sets_of "$docker")" \
        test "$(sets_of .ci/run)" = "$(sets_of "$docker")"
fi
if command -v python3 >/dev/null; then
    check ".devcontainer/devcontainer.json is no JSON (comments aside) naming the Dockerfile and make" \
        python3 -c '
import json, re, sys
text = re.sub(r"^\s*//.*$", "", open(".devcontainer/devcontainer.json").read(), flags=re.M)
d = json.loads(text)
assert d["build"]["dockerfile"] == "Dockerfile" and d["build"]["context"] == ".."
assert "make" in d["postCreateCommand"]'
fi

# ---------------------------------------------------------------- with stand-ins
# dpkg-query says every package is installed but those in $WORK/absent;
# apt-get and sudo write what they were asked to $WORK/calls.
mkdir -p "$WORK/bin"
cat >"$WORK/bin/dpkg-query" <<'EOF'
#!/bin/sh
for p; do :; done
grep -qx "$p" "$DEPS_WORK/absent" 2>/dev/null && exit 1
echo "install ok installed"
EOF
cat >"$WORK/bin/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >>"$DEPS_WORK/calls"
EOF
cat >"$WORK/bin/sudo" <<'EOF'
#!/bin/sh
exec "$@"
EOF
chmod +x "$WORK/bin"/*
stub() { # absent-packages -- setup-deps arguments: status, output in $WORK/out, calls in $WORK/calls
    printf '%s\n' $1 >"$WORK/absent"
    : >"$WORK/calls"
    shift
    PATH="$WORK/bin:$PATH" DEPS_WORK="$WORK" "$deps" "$@" >"$WORK/out" 2>&1
}
stub "" build staff mpi container
check "with every package present it ran apt-get: $(cat "$WORK/calls")" test ! -s "$WORK/calls"
check "with every package present it does not say so" grep -q 'installed already' "$WORK/out"
stub "gdb libopenblas-dev" build container
check "two packages missing: not exactly those installed: $(tr '\n' ';' <"$WORK/calls")" \
    grep -qxE 'apt-get install -y -q libopenblas-dev gdb' "$WORK/calls"
check "two packages missing: no apt-get update first" grep -q '^apt-get update' "$WORK/calls"
stub "gdb" --check container
check "--check with gdb missing: status $? (1 expected)" test $? = 1 -a ! -s "$WORK/calls"
check "--check does not name the missing package" grep -q 'missing: gdb' "$WORK/out"
DT_DEPS_NO_INSTALL=1 stub "gdb" container
check "DT_DEPS_NO_INSTALL=1: status $? or apt-get ran" test $? = 0 -a ! -s "$WORK/calls"
stub "" bogus
check "a wrong set: status $? (2 expected) or no message naming it" \
    bash -c "test $? = 2 && grep -q \"'bogus' is no set\" '$WORK/out'"
stub "gdb" build
check "the build set installs gdb (the container's)" test ! -s "$WORK/calls"

# ---------------------------------------------------------------- the names
if command -v apt-cache >/dev/null && [ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial -e auxfiles)" ]; then
    # one apt-cache for all (each loads the whole package cache)
    known=$(apt-cache show --no-all-versions $("$deps" --list build staff mpi container book) 2>/dev/null |
        sed -n 's/^Package: //p')
    for p in $("$deps" --list build staff mpi container book); do
        check "Debian does not know the package $p (apt-cache show)" grep -qx "$p" <<<"$known"
    done
else
    echo "check-setup-deps.sh: no apt lists here: the package names are checked where they are (CI)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
