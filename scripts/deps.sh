#!/usr/bin/env bash
# Install the Debian packages allocprof needs to build and test, when they are
# missing. Runs apt-get only as root; otherwise lists what is missing.
# Usage: scripts/deps.sh [build|test|bench]   (each level includes the ones before)
set -euo pipefail
level=${1:-test}
build=(cmake gcc g++ clang make pkg-config zlib1g-dev libunwind-dev libdw-dev libelf-dev
       libiberty-dev)
test=(valgrind strace prometheus golang-go libjemalloc-dev libjemalloc2 google-perftools
      libgoogle-perftools-dev libmimalloc-dev libmimalloc2.0 python3 sqlite3 git curl
      libxml2-utils libclang-rt-14-dev groff-base man-db binutils librsvg2-bin musl-tools
      rustc)
bench=(heaptrack gnuplot-nox hyperfine strace)
want=("${build[@]}")
[ "$level" = build ] || want+=("${test[@]}")
[ "$level" = bench ] && want+=("${bench[@]}")
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "deps: missing Debian packages (run as root to install): ${missing[*]}" >&2
  [ "$level" = build ] && exit 1
  exit 0
fi
