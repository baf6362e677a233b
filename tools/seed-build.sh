#!/bin/sh
# seed-build.sh SEED BUILD - the Makefile's SEED=SEED: a new build folder
# BUILD starts from the objects of SEED, a build of the same identity
# (the Makefile compared them): libdt's, the programs' and the tests'
# (obj/), and those of the labs' skeleton (labs/obj/). The objects keep
# their times, so that make finds them newer than their sources, and each
# dependency file is made to name its object in BUILD. The identity is
# copied with its time (the objects depend on it), and so is its MPI part,
# which the Makefile then rewrites where this build's differs (MPI=0,
# another family): the files MPI's flags reach are compiled again. Prints
# nothing on success (the Makefile reads its output).
set -eu
seed=${1%/}
build=${2%/}
[ -d "$seed/obj" ] && [ -f "$seed/identity" ] || { echo "seed-build.sh: $seed has no objects or no identity" >&2; exit 1; }
mkdir -p "$build/labs"
cp -Rp "$seed/obj" "$build/"
[ ! -d "$seed/labs/obj" ] || cp -Rp "$seed/labs/obj" "$build/labs/"
cp -p "$seed/identity" "$build/identity"
[ ! -f "$seed/identity-mpi" ] || cp -p "$seed/identity-mpi" "$build/identity-mpi"
# A dependency file's first line starts with its object's path as SEED's
# make named it: the path of the object beside it now.
find "$build/obj" "$build/labs" -name '*.d' -exec perl -pi -e \
    'if ($. == 1) { (my $o = $ARGV) =~ s/\.d$/.o/; s/^[^:]*:/$o:/ } close ARGV if eof' {} +
