#!/usr/bin/env bash
# setup-deps.sh [--check|--list] [SET...] - the Debian/Ubuntu packages of dtlab,
# in one place: `make deps`, the development container's Dockerfile
# (.devcontainer/), the Gradescope image (tests/grader/gradescope/setup.sh)
# and CI (.ci/run) all run this script, so that their package lists cannot
# drift apart or rot unnoticed.
#
# Sets (default: build):
#   build      a C compiler, make, pkg-config and OpenBLAS: `make`, `make check`
#   staff      patch, zip, unzip, python3: `make test`, `make gradescope`
#   mpi        Open MPI and MPICH: the mpi backend, `make test-mpi` (Open MPI
#              stays the default mpicc; MPICC=mpicc.mpich picks MPICH)
#   container  git and gdb, for working inside the development container
#   book       pandoc, Node.js with npm, and Chromium: `make book` and its
#              browser test `make test-book` (tools/book/; npm then installs
#              the pinned playwright-core of tools/book/package-lock.json,
#              1.61, the last that runs on Debian 12's Node.js 18); clang,
#              lld, wasi-libc and the wasm32 builtins of compiler-rt: the
#              planner in the page, lib/sim built for WebAssembly.
#              Debian's npm package only where no npm is installed: a
#              Node.js of another origin bundles its own and conflicts with it
#
# Only the packages not installed yet are installed (apt-get, with sudo
# when not root); where all are present no apt-get runs at all, so the
# script is cheap to run every time. A package name that Debian no longer
# knows fails it: dpkg knows every installed name, and apt-get refuses an
# unknown one.
#
# --check installs nothing: it lists the missing packages and exits 1 if
# there are any. --list prints the sets' packages, one a line. DT_DEPS_NO_INSTALL=1 does the same but exits 0 (a test that
# runs setup.sh on a machine where the packages are missing and cannot be
# installed; tests/grader/check-gradescope.sh).
set -euo pipefail

check=0
list=0
sets=()
for a in "$@"; do
    case $a in
        --check) check=1 ;;
        --list) list=1 ;;
        build | staff | mpi | container | book) sets+=("$a") ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup-deps.sh: '$a' is no set (build, staff, mpi, container, book) nor --check or --list" >&2
           exit 2 ;;
    esac
done
[ ${#sets[@]} -gt 0 ] || sets=(build)

pkgs=()
for s in "${sets[@]}"; do
    case $s in
        build) pkgs+=(build-essential make pkg-config libopenblas-dev) ;;
        staff) pkgs+=(patch zip unzip python3) ;;
        mpi) pkgs+=(openmpi-bin libopenmpi-dev mpich libmpich-dev) ;;
        container) pkgs+=(git gdb) ;;
        book) pkgs+=(pandoc nodejs chromium clang lld wasi-libc libclang-rt-dev-wasm32)
              command -v npm >/dev/null || pkgs+=(npm) ;;
    esac
done

if [ "$list" = 1 ]; then
    printf '%s\n' "${pkgs[@]}"
    exit 0
fi

missing=()
if command -v dpkg-query >/dev/null; then
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
else
    echo "setup-deps.sh: no dpkg here: install the equivalents of ${pkgs[*]} by hand" >&2
    [ "$check" = 1 ] && exit 1
    exit 0
fi

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup-deps.sh: installed already: ${pkgs[*]}"
    exit 0
fi
if [ "$check" = 1 ] || [ "${DT_DEPS_NO_INSTALL:-0}" = 1 ]; then
    echo "setup-deps.sh: missing: ${missing[*]}"
    [ "$check" = 1 ] && exit 1
    exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "setup-deps.sh: not root and no sudo: install ${missing[*]} as root" >&2; exit 1; }
    sudo=sudo
fi
echo "setup-deps.sh: installing ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
