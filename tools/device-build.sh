#!/usr/bin/env bash
# tools/device-build.sh - builds the test binaries for the GPU machine into .device-bin/
# (git-ignored through .git/info/exclude; pass it in the device tool's `carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
. /opt/gpu-toolchains/env.sh
BIN=.device-bin
rm -rf "$BIN" && mkdir -p "$BIN"
newest() { ls -t target/"$1"/deps/"$2"-* | grep -v '\.d$' | head -1; }
cargo build --tests --features cuda --test conformance --test misuse
cp "$(newest debug conformance)" "$BIN/conformance-checked"
cp "$(newest debug misuse)" "$BIN/misuse-checked"
cargo build --release --tests --features cuda --test conformance
cp "$(newest release conformance)" "$BIN/conformance-release"
cargo build --tests -p xbarrier-backend-cuda --test gpu
cp "$(newest debug gpu)" "$BIN/backend-cuda-gpu"
# xbar carries `info` and `bench` (the benchmark kernels are embedded in it).
cargo build --release -p xbar --features cuda && cp target/release/xbar "$BIN/xbar" || echo "xbar not built"
strip --strip-debug "$BIN"/*   # the carry limit is 64 MiB
ls -la "$BIN"
