#!/usr/bin/env bash
# The main job: build if needed, profile the bundled demo program and print
# its report. Until the runtime exists it demonstrates the sampler and the
# estimators on a simulated allocation stream.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
if [ -x build/examples/simulate ]; then
  exec build/examples/simulate
fi
echo "demo: nothing to run yet" >&2
exit 1
