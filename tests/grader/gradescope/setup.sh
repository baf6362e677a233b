#!/usr/bin/env bash
# setup.sh - Gradescope runs this once when it builds the autograder image
# (from the folder the autograder zip was unpacked into, /autograder/source).
# It installs the compilers and builds libdt (also with ThreadSanitizer, for
# the race-sensitive tests) and the grader, so that each submission only
# compiles its own lab files.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q build-essential pkg-config libopenblas-dev
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
make -j"$jobs" build/bin/dtgrade build/libdt.a build/obj/tests/grader/test_main.o
make -j"$jobs" SAN=thread build/thread/libdt.a build/thread/obj/tests/grader/test_main.o
