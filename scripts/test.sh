#!/usr/bin/env bash
# The whole test suite: install missing Debian dependencies (when root),
# configure, build, run ctest. Extra arguments go to ctest.
# Env: BUILD_DIR (default build), CMAKE_ARGS (extra configure flags).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
dir=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$dir" -DAP_WERROR=ON ${CMAKE_ARGS:-} >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir" && ctest --output-on-failure -j"$(nproc)" "$@"
