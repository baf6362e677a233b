#!/bin/sh
# seed-build.sh SEED BUILD - the Makefile's SEED=SEED: a new build folder
# BUILD starts from the objects of SEED, a build of the same identity
# (the Makefile compared them). The objects keep their times, so that make
# finds them newer than their sources; their dependency files are made to
# name BUILD's objects; the identity is copied with its time (the objects
# depend on it). MPI's part of the identity is not copied: the files MPI's
# flags reach are compiled again where it differs. Prints nothing on
# success (the Makefile reads its output).
set -eu
seed=${1%/}
build=${2%/}
[ -d "$seed/obj" ] && [ -f "$seed/identity" ] || { echo "seed-build.sh: $seed has no objects or no identity" >&2; exit 1; }
mkdir -p "$build"
cp -Rp "$seed/obj" "$build/"
cp -p "$seed/identity" "$build/identity"
# A dependency file's first line starts with its object's path, as SEED's
# make named it (.../obj/...): BUILD's object now.
find "$build/obj" -name '*.d' -exec sed -i "1s#^[^:]*/obj/#$build/obj/#" {} +
