#!/usr/bin/env bash
# tools/msrv-check.sh - checks the declared MSRV (workspace rust-version) without an old
# toolchain, which cannot be installed here (rustup's host is unreachable).
#
# What it checks:
#   1. every workspace crate declares the workspace's rust-version;
#   2. no crate in the resolved dependency graph (Cargo.lock, all features, this platform,
#      dev-dependencies and the unpublished tools included) declares a rust-version above it;
#   3. clippy's incompatible_msrv lint: no std/core/alloc API stabilized after it is used
#      (every workspace target with default features, and xbarrier's lib with cuda,hip).
# What it does not check: language features and syntax newer than the MSRV (clippy only knows
# library items' #[stable(since)]), Cargo.toml features newer than it, std behaviour changes,
# dependencies that declare no rust-version (listed, not judged), other platforms' dependencies,
# and anything an actual build with the old compiler would reveal. The workspace uses
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

echo "== clippy incompatible_msrv (std APIs newer than the MSRV)"
cargo clippy --locked --workspace --all-targets -- -A warnings -D clippy::incompatible_msrv
cargo clippy --locked -p xbarrier --lib --features cuda,hip -- -A warnings -D clippy::incompatible_msrv
echo "msrv-check: OK"
