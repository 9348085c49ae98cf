#!/usr/bin/env bash
# tools/device-build.sh - builds the test binaries for a GPU machine into .device-bin/ (the
# machine that runs them needs the NVIDIA driver, not Rust): the conformance and misuse
# suites (checked and release, and the conformance suite as checked code for sanitizers), the CUDA backend's GPU tests, `xbar` (with the benchmark
# kernels built in) and, where nvcc is found, the probes of bench/cpp/. Then copy the
# repository with .device-bin/ to the GPU machine and run tools/device-run.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091  # the toolchains' environment (tools/install-toolchains.sh)
if [ -f /opt/gpu-toolchains/env.sh ]; then . /opt/gpu-toolchains/env.sh; fi
BIN=.device-bin
rm -rf "$BIN" && mkdir -p "$BIN"
# The newest test binary of that name (cargo names them <name>-<hash>, beside <name>-<hash>.d).
newest() {
  local newest="" file
  for file in target/"$1"/deps/"$2"-*; do
    if [ ! -x "$file" ] || [ "${file%.d}" != "$file" ]; then continue; fi
    if [ -z "$newest" ] || [ "$file" -nt "$newest" ]; then newest=$file; fi
  done
  [ -n "$newest" ] || { echo "no $2 test binary under target/$1/deps" >&2; return 1; }
  printf '%s\n' "$newest"
}
# Checked code for compute-sanitizer (XB_SANITIZER: shadow mbarriers, long sleeps in the
# wait loops): device-run-checked.sh runs this build under racecheck and synccheck. The
# plain checked build is rebuilt after it (the variable is a rerun trigger).
XBAR_SANITIZER=1 cargo build --tests --features cuda --test conformance
cp "$(newest debug conformance)" "$BIN/conformance-checked-sanitizer"
cargo build --tests --features cuda --test conformance --test misuse
cp "$(newest debug conformance)" "$BIN/conformance-checked"
cp "$(newest debug misuse)" "$BIN/misuse-checked"
cargo build --release --tests --features cuda --test conformance
cp "$(newest release conformance)" "$BIN/conformance-release"
cargo build --tests -p xbarrier-backend-cuda --test gpu
cp "$(newest debug gpu)" "$BIN/backend-cuda-gpu"
# xbar carries `info` and `bench` (the benchmark kernels are embedded in it).
if cargo build --release -p xbar --features cuda; then cp target/release/xbar "$BIN/xbar"; else echo "xbar not built"; fi
# The example crate on CUDA: its kernels launched through the typed launchers.
cargo build -p xbarrier-example-user-kernel --no-default-features --features cuda
cp target/debug/xbarrier-example-user-kernel "$BIN/user-kernel"
cargo build --tests -p xbarrier-example-user-kernel --no-default-features --features cuda --test host_handoff
cp "$(newest debug host_handoff)" "$BIN/host-handoff"
# The probes behind docs/performance.md (standalone CUDA programs).
if command -v nvcc > /dev/null; then
  for probe in bulk_copy_ceiling round_trip_forms emulated_forms grid_forms host_device_phases system_memory; do
    nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o "$BIN/$probe" "bench/cpp/$probe.cu"
  done
else
  echo "nvcc not found: the probes of bench/cpp are not built"
fi
strip --strip-debug "$BIN"/*   # keeps the copy small (the device tool's limit is 64 MiB)
ls -la "$BIN"
