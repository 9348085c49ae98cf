#!/usr/bin/env bash
# tools/test.sh - the whole test suite, from a bare machine: installs what it needs, then
# lints, builds every backend and runs every test (the README's second command; .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }

step "toolchains"
bash tools/install-toolchains.sh host cuda amd zig genmc actionlint   # amd: clang-19, zig: clang 22 (gfx950, gfx1250)
# shellcheck disable=SC1091
. /opt/gpu-toolchains/env.sh   # nvcc for the `cuda` feature's kernel images; actionlint
export XBAR_REQUIRE_TOOLCHAINS=1   # the lowering tests must run here, not be ignored

# The model checker runs on one core for about three minutes; it starts now, beside the
# builds and tests, which leave a core idle often enough (linking, nvcc, serial test
# binaries), and its step below waits for it and prints its report. XBAR_GENMC names the
# GenMC wrapper (.ci/run sets it). GenMC is not packaged anywhere this script can install
# from: on a machine without it the step is skipped with the reason, except in CI
# (CI=true), where that is a failure.
genmc_log=$(mktemp)
genmc_pid=
# A step that fails ends the script: the model checker goes with it.
trap 'if [ -n "$genmc_pid" ]; then kill "$genmc_pid" 2>/dev/null || true; fi; rm -f "$genmc_log"' EXIT
if [ -n "${XBAR_GENMC:-}" ] || command -v genmc >/dev/null || [ "${CI:-}" = true ]; then
  bash tools/genmc-check.sh > "$genmc_log" 2>&1 &
  genmc_pid=$!
fi

step "workflow lint (actionlint; shellcheck on every run: script)"
# .github/actionlint.yaml names the GPU jobs' self-hosted runner labels (nvidia, amd).
actionlint .github/workflows/ci.yml
echo "actionlint: .github/workflows/ci.yml OK"

step "format and lints (clippy -D warnings: incompatible_msrv included)"
cargo fmt --all --check
cargo clippy --workspace --all-targets --features cuda,hip -- -D warnings

step "GPU backends build (CUDA kernel images by nvcc; the runtimes load at run time)"
cargo build --workspace --features cuda,hip

step "the standalone CUDA probes behind docs/performance.md compile (bench/cpp/*.cu; they run on a GPU)"
probes=$(mktemp -d)
# Two at a time: nvcc keeps one core busy. (The single quotes are the inner shell's script.)
# shellcheck disable=SC2016
printf '%s\n' bench/cpp/*.cu | PROBES="$probes" xargs -P 2 -n 1 sh -c \
  'nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o "$PROBES/$(basename "$1" .cu)" "$1" && echo "$1: compiled"' sh
rm -rf "$probes"

step "docs (rustdoc warning-free; doc tests run with the tests below)"
# With every backend: features only add items (no item is compiled only without one).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --features xbarrier/cuda,xbarrier/hip

step "MSRV (every locked dependency's rust-version; Rust at the MSRV where rustup can install it)"
bash tools/msrv-check.sh

step "tests (debug: checked device code; conformance, misuse, TSAN stress, unit, CLI; sm_80/sm_90 and gfx lowering)"
cargo test --workspace

step "kernel images of every backend (CUDA fatbins, AMDGPU offload bundle)"
cargo test -p xbarrier-conformance --features cuda,hip --test images

step "the checked engine's shadow logic on the host's mbarrier model (engine_sm90_checked.hpp, platform/host_mbarrier_model.hpp)"
XBAR_DEVICE_DEFINES="XB_SHADOW_MODEL=1" cargo test --test conformance --test misuse
stress=$(mktemp -d)
"${CXX:-g++}" -std=c++17 -O1 -g -fsanitize=thread -pthread -DXB_CHECKED=1 -DXB_SHADOW_MODEL=1 -I hip-src/include \
  hip-src/tests/protocol_stress.cpp -o "$stress/protocol_stress_shadow"
"$stress/protocol_stress_shadow" 1 1000000   # TSAN; the sequential model checks every phase
rm -rf "$stress"

step "the protocol model-checked (GenMC 0.11 under RC11 and IMM; every mutant must be caught)"
if [ -n "$genmc_pid" ]; then
  genmc_rc=0
  wait "$genmc_pid" || genmc_rc=$?
  genmc_pid=
  cat "$genmc_log"
  [ "$genmc_rc" -eq 0 ] || exit "$genmc_rc"
else
  echo "skipped: GenMC 0.11 not found (set XBAR_GENMC to its wrapper script, or put genmc on PATH)"
fi

step "conformance in release (unchecked device code)"
cargo test --release --test conformance

step "the example crate builds and runs its own kernel"
cargo run --release -p xbarrier-example-user-kernel

step "packaging (cargo package of the published crates; a crate outside the workspace builds a kernel from them)"
bash tools/package-check.sh

step "xbar check (the main job; checked device code, so misuse is reported too)"
cargo run --release -p xbar --features checked -- check
