#!/usr/bin/env bash
# tools/package-check.sh - the published crates as crates.io would serve them.
#
# 1. `cargo package` of every published crate together (xbarrier, xbarrier-api, the three
#    backends, xbarrier-build): cargo packs each one, then verifies it by building the
#    unpacked .crate against a local registry holding the others' .crate files.
# 2. A throwaway crate outside the workspace (in a temporary directory) depends on
#    xbarrier and xbarrier-build from "crates.io", patched to the unpacked .crate files,
#    compiles a tiny kernel with the build helper and runs it on the host backend. Its
#    build script checks that the headers it compiled against (DEP_XBARRIER_INCLUDE, from
#    xbarrier's `links` metadata) lie inside the unpacked xbarrier crate, not in this
#    repository.
# 3. The same crate built with the cuda and hip features (kernel images by nvcc and clang
#    through the packaged build helper); skipped, with a message, where a compiler is missing.
#
# Needs: cargo, crates.io (or a warm cargo cache), a host C++ compiler; for step 3 nvcc and
# clang-19 with lld (tools/install-toolchains.sh cuda amd). Exits non-zero on any
# failure. Set KEEP=1 to keep the temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
crates=(xbarrier xbarrier-api xbarrier-backend-host xbarrier-backend-cuda xbarrier-backend-hip xbarrier-build)
version=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "xbarrier"))')

work=$(mktemp -d "${TMPDIR:-/tmp}/xbarrier-package-check.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

# cargo verifies each crate against the others unpacked from a local registry, and reuses an
# unpacked copy of the same name and version from an earlier run even when its contents
# changed: drop those copies first (these crates are not on crates.io under these versions).
cargo_home=${CARGO_HOME:-$HOME/.cargo}
for c in "${crates[@]}"; do
  rm -rf "$cargo_home"/registry/src/*/"$c-$version" "$cargo_home"/registry/cache/*/"$c-$version.crate"
done

echo "== cargo package (and verify) ${crates[*]}"
# --allow-dirty: the check is about what the crates contain, not about the VCS state.
args=()
for c in "${crates[@]}"; do args+=(-p "$c"); done
cargo package --allow-dirty "${args[@]}"

echo "== contents"
for c in "${crates[@]}"; do
  list=$(tar -tzf "target/package/$c-$version.crate" | sed "s|^$c-$version/||")
  for f in Cargo.toml README.md LICENSE-MIT LICENSE-APACHE src/lib.rs; do
    grep -qx "$f" <<<"$list" || { echo "error: $c-$version.crate lacks $f" >&2; exit 1; }
  done
  if grep -E '^(target|bench|tests|hip-src/kernels|hip-src/tests)/' <<<"$list"; then
    echo "error: $c-$version.crate ships the files above, which it should not" >&2
    exit 1
  fi
  echo "$c-$version.crate: $(wc -l <<<"$list") files"
done
list=$(tar -tzf "target/package/xbarrier-$version.crate")
for f in hip-src/include/xbarrier/barrier.hpp hip-src/include/xbarrier/protocol.hpp hip-src/host/runtime.cpp build.rs CHANGELOG.md; do
  grep -qx "xbarrier-$version/$f" <<<"$list" || { echo "error: xbarrier-$version.crate lacks $f" >&2; exit 1; }
done

echo "== unpack into $work/crates"
mkdir -p "$work/crates"
for c in "${crates[@]}"; do tar -xzf "target/package/$c-$version.crate" -C "$work/crates"; done

echo "== throwaway user crate in $work/user"
mkdir -p "$work/user/src" "$work/user/kernels"
{
  cat <<EOF
[package]
name = "xbarrier-package-user"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
xbarrier = "=$version"

[build-dependencies]
xbarrier-build = "=$version"

[patch.crates-io]
EOF
  for c in "${crates[@]}"; do echo "$c = { path = \"$work/crates/$c-$version\" }"; done
} >"$work/user/Cargo.toml"
cp Cargo.lock "$work/user/Cargo.lock"   # the workspace's versions of the registry crates

cat >"$work/user/kernels/rotate.cpp" <<'EOF'
#include <xbarrier/barrier.hpp>

// Each block loads its slice into shared memory, meets at the barrier, then writes the slice
// rotated by one: out[i] = in[next i in the same block].
XB_KERNEL void rotate(const int* in, int* out) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  int* tile = xb::dynamic_shared<int>();
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  const unsigned base = blockIdx.x * blockDim.x;
  tile[threadIdx.x] = in[base + threadIdx.x];
  bar.arrive_and_wait();
  out[base + threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}
EOF

cat >"$work/user/build.rs" <<EOF
fn main() {
    let include = std::env::var("DEP_XBARRIER_INCLUDE").expect("DEP_XBARRIER_INCLUDE from xbarrier's links metadata");
    let unpacked = std::path::Path::new("$work/crates/xbarrier-$version");
    assert!(
        std::path::Path::new(&include).starts_with(unpacked),
        "DEP_XBARRIER_INCLUDE={include} is not inside the packaged crate {}",
        unpacked.display()
    );
    assert!(!include.starts_with("$repo/"), "DEP_XBARRIER_INCLUDE={include} points into the repository");
    println!("cargo:rustc-env=XB_INCLUDE_USED={include}");
    xbarrier_build::Kernels::new("user").file("kernels/rotate.cpp").build_or_exit();
}
EOF

cat >"$work/user/src/main.rs" <<'EOF'
use xbarrier::{DefaultBackend, Device, LaunchConfig};

fn main() -> xbarrier::Result<()> {
    let (blocks, threads) = (4u32, 64u32);
    let input: Vec<i32> = (0..(blocks * threads) as i32).collect();
    let device = Device::<DefaultBackend>::open(0)?;
    let module = device.load(&xbarrier::kernel_bundle!("user")?)?;
    let kernel = module.kernel("rotate")?;
    let data = device.upload(&input)?;
    let out = device.alloc::<i32>(input.len())?;
    let stream = device.stream()?;
    // SAFETY: rotate(const int*, int*) takes these two buffers, which outlive the synchronize.
    unsafe { stream.launch(&kernel, &LaunchConfig::new(blocks, threads).shared(threads * 4), &[data.arg(), out.arg()])? };
    stream.synchronize()?;
    let got = out.download()?;
    for (i, &v) in got.iter().enumerate() {
        let (b, t) = (i as u32 / threads, i as u32 % threads);
        let want = (b * threads + (t + 1) % threads) as i32;
        assert_eq!(v, want, "out[{i}]");
    }
    println!(
        "rotate on {} ({}): {} values through one barrier phase per block, all match; headers from {}",
        device.info().name,
        device.info().backend,
        got.len(),
        env!("XB_INCLUDE_USED")
    );
    Ok(())
}
EOF

echo "== build and run it on the host backend"
(cd "$work/user" && CARGO_TARGET_DIR="$work/target" cargo run --quiet)

# 3. The GPU backends' kernel images, built the way a user's crate builds them: the packaged
#    build helper compiles the kernel against the packaged headers with nvcc (a fatbin for
#    sm_80, sm_90 and compute_90) and with clang (an offload bundle of AMDGPU code objects).
#    Built, not run: this machine need not have a GPU. A missing compiler is said, not hidden.
for backend in cuda hip; do
  if [ "$backend" = cuda ] && ! command -v "${NVCC:-nvcc}" >/dev/null 2>&1 &&
    [ ! -x "${CUDA_PATH:-/nonexistent}/bin/nvcc" ] && [ ! -x "${CUDA_HOME:-/nonexistent}/bin/nvcc" ]; then
    echo "== $backend: skipped, no nvcc (bash tools/install-toolchains.sh cuda)"
    continue
  fi
  if [ "$backend" = hip ] && { ! command -v "${HIP_CLANG:-clang-19}" >/dev/null 2>&1 ||
    { ! command -v ld.lld >/dev/null 2>&1 && ! command -v ld.lld-19 >/dev/null 2>&1; }; }; then
    echo "== $backend: skipped, no clang-19 and lld (bash tools/install-toolchains.sh amd)"
    continue
  fi
  echo "== build it with the $backend backend"
  (cd "$work/user" && CARGO_TARGET_DIR="$work/target-$backend" cargo build --quiet --features "xbarrier/$backend")
  images=$(find "$work/target-$backend" -name 'user.xbk' -print -quit)
  [ -s "$images" ] || { echo "error: the $backend build left no kernel bundle (user.xbk)" >&2; exit 1; }
  # The image's own magic: a CUDA fatbin header (0xBA55ED50, little-endian), a clang offload bundle.
  if [ "$backend" = cuda ]; then magic=$'\x50\xed\x55\xba'; else magic=__CLANG_OFFLOAD_BUNDLE__; fi
  LC_ALL=C grep -qa "$magic" "$images" || { echo "error: $images holds no $backend image" >&2; exit 1; }
  echo "$backend: kernel bundle $(stat -c %s "$images") bytes, with its $backend image"
done
echo "package-check: OK"
