#!/usr/bin/env bash
# funclatency demo: installs what the build needs, builds, and prints a latency
# histogram every second until Ctrl-C.
#
#   ./demo.sh                   time slow_op() of the bundled target-app
#   SYM=fast_op ./demo.sh       time another function of target-app (fast_op, cet_op)
#   ./demo.sh PATH FUNCTION     time FUNCTION of any binary, in every process running it
set -euo pipefail
cd "$(dirname "$0")"

if (($# != 0 && $# != 2)); then
  echo "usage: $0 [PATH FUNCTION]   (SYM=name $0 times another function of target-app)" >&2
  exit 2
fi

# Only the build packages: the exporter modules' and the tests' come with
# ./scripts/test, which configures this same tree again (adding FUNCLATENCY_FUZZ)
# and builds the rest without rebuilding what the demo built.
scripts/setup build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# Only what the demo runs: funclatency and target-app (CMakeLists.txt).
cmake --build build --target demo -j"$(nproc)"

if (($# == 2)); then
  exec build/funclatency -i 1 "$1:$2"
fi

build/target-app >/dev/null &
target_pid=$!
# Whatever ends the demo (Ctrl-C, an error), the target-app goes with it.
trap 'kill "$target_pid" 2>/dev/null || true; wait "$target_pid" 2>/dev/null || true' EXIT

build/funclatency -i 1 "build/target-app:${SYM:-slow_op}" -p "$target_pid"
