#!/usr/bin/env bash
# tools/msrv-check.sh - checks the declared MSRV (workspace rust-version).
#
# What it checks:
#   1. every workspace crate declares the workspace's rust-version;
#   2. no crate in the resolved dependency graph (Cargo.lock, all features, this platform,
#      dev-dependencies and the unpublished tools included) declares a rust-version above it;
#   3. clippy's incompatible_msrv lint (no std/core/alloc API stabilized after it is used)
#      is not run here: it warns by default, so the lint step's `cargo clippy --workspace
#      --all-targets --features cuda,hip -- -D warnings` (tools/test.sh) already fails on it,
#      on every target with every backend (features only add items);
#   4. `cargo check` with that Rust itself (installed by rustup), on the same targets: what
#      1-3 cannot see (language features, Cargo.toml syntax). Where rustup cannot install it
#      (no network), this step says so and the check rests on 1-3, unless
#      XBAR_REQUIRE_MSRV_TOOLCHAIN=1 (the GitHub workflow) makes that an error.
# What it does not check: std behaviour changes, other platforms' dependencies, and the GPU
# features' kernel builds (their build scripts need nvcc and clang). The workspace uses
# resolver = "3", so `cargo update` itself prefers dependency versions within the MSRV.
set -euo pipefail
cd "$(dirname "$0")/.."
platform=$(rustc -vV | sed -n 's/^host: //p')

echo "== rust-version of the workspace crates and of the resolved dependencies ($platform)"
metadata=$(mktemp)
trap 'rm -f "$metadata"' EXIT
cargo metadata --locked --format-version 1 --all-features --filter-platform "$platform" >"$metadata"
python3 - "$metadata" <<'PY'

import json, sys

def parse(v):
    return tuple(int(x) for x in (v.split(".") + ["0", "0"])[:3])

meta = json.load(open(sys.argv[1]))
members = set(meta["workspace_members"])
own = [p for p in meta["packages"] if p["id"] in members]
msrv = {p["rust_version"] for p in own}
if len(msrv) != 1 or None in msrv:
    sys.exit("error: workspace crates declare different rust-versions: "
             + ", ".join(f"{p['name']}={p['rust_version']}" for p in own))
msrv = msrv.pop()
print(f"declared MSRV: {msrv} (all {len(own)} workspace crates)")
deps = [p for p in meta["packages"] if p["id"] not in members]
too_new = [p for p in deps if p["rust_version"] and parse(p["rust_version"]) > parse(msrv)]
unknown = sorted(f"{p['name']} {p['version']}" for p in deps if not p["rust_version"])
highest = max((p for p in deps if p["rust_version"]), key=lambda p: parse(p["rust_version"]))
print(f"{len(deps)} dependencies; highest rust-version: {highest['name']} {highest['version']} ({highest['rust_version']})")
if unknown:
    print("declare no rust-version (not checked): " + ", ".join(unknown))
if too_new:
    for p in too_new:
        print(f"error: {p['name']} {p['version']} needs Rust {p['rust_version']} > MSRV {msrv}", file=sys.stderr)
    sys.exit(1)
PY

msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
echo "== cargo check with Rust $msrv"
if command -v rustup >/dev/null && timeout 600 rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; then
  # Its own target folder: artifacts of two compilers do not mix.
  CARGO_TARGET_DIR=target/msrv cargo +"$msrv" check --locked --workspace --all-targets
  CARGO_TARGET_DIR=target/msrv cargo +"$msrv" check --locked -p xbarrier --lib --features cuda,hip
  echo "Rust $msrv builds the workspace"
elif [ "${XBAR_REQUIRE_MSRV_TOOLCHAIN:-0}" = 1 ]; then
  echo "error: rustup could not install Rust $msrv, and XBAR_REQUIRE_MSRV_TOOLCHAIN=1" >&2
  exit 1
else
  echo "warning: rustup could not install Rust $msrv (no network?): MSRV checked by 1-3 only"
fi
echo "msrv-check: OK"
