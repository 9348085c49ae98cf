// Helpers shared by the benchmark kernels: a clock, warp-level helpers that degrade to one
// thread per "warp" on the host (whose wave size is 1), 16-byte vectors, the data pattern the
// host recomputes to check results, and block totals.
#pragma once
#include <xbarrier/barrier.hpp>

// Most stages a pipeline ring may have (its barriers are static shared arrays).
#define XBB_MAX_STAGES 16

// Loop unrolling hints for the GPU compilers; the host compiler would warn about them.
#if defined(XB_PLATFORM_HOST)
#define XBB_UNROLL(n)
#else
#define XBB_PRAGMA(x) _Pragma(#x)
#define XBB_UNROLL(n) XBB_PRAGMA(unroll n)
#endif

namespace xbb {

#if defined(XB_PLATFORM_CUDA)
using vec4 = uint4;
#else
struct alignas(16) vec4 {
  uint32_t x, y, z, w;
};
#endif

// Cycles on the GPU (the SM clock); nanoseconds on the host, which has no portable cycle counter.
XB_INLINE uint64_t cycles() {
#if defined(XB_PLATFORM_CUDA)
  return uint64_t(clock64());
#else
  return xb::clock_ns();
#endif
}

XB_INLINE constexpr unsigned warp_size() {
#if defined(XB_PLATFORM_CUDA)
  return 32;
#else
  return 1;
#endif
}
XB_INLINE unsigned lane() { return threadIdx.x % warp_size(); }

// Orders the lanes' shared-memory reads before the one arrival a warp makes for all of them.
XB_INLINE void warp_sync() {
#if defined(XB_PLATFORM_CUDA)
  __syncwarp();
#endif
}

// The benchmark data: element i of a u32 array. Nonzero, not periodic, so a lost,
// repeated or stale tile changes the sum. bench/src/pattern.rs has the same function.
XB_INLINE uint32_t pattern(uint64_t i, uint32_t seed) {
  uint64_t z = (i + seed) * 0x9E3779B97F4A7C15ull;
  z ^= z >> 32;
  return uint32_t(z) | 1u;
}

XB_INLINE uint64_t sum4(const vec4& v) { return uint64_t(v.x) + uint64_t(v.y) + uint64_t(v.z) + uint64_t(v.w); }

// Relaxed device-scope atomics on 64-bit words (counters and flags read across blocks).
using device_ops = xb::detail::platform;
constexpr auto device_scope = xb::detail::mem_scope::device;
constexpr auto block_scope = xb::detail::mem_scope::block;
constexpr auto relaxed = xb::detail::mem_order::relaxed;

XB_INLINE void count(unsigned long long* counter, uint64_t n) {
  if (n) device_ops::fetch_add<device_scope>(reinterpret_cast<uint64_t*>(counter), n, relaxed);
}

// Tiles of a persistent kernel: block b owns tiles b, b + grid, b + 2 grid, ...
struct tiling {
  uint64_t bytes;  // of the whole array
  uint32_t tile_bytes;
  XB_INLINE uint64_t tiles() const { return (bytes + tile_bytes - 1) / tile_bytes; }
  XB_INLINE uint64_t owned() const {
    const uint64_t all = tiles();
    return all > blockIdx.x ? (all - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  }
  // Byte offset and size of the block's j-th tile.
  XB_INLINE uint64_t offset(uint64_t j) const { return (blockIdx.x + j * gridDim.x) * uint64_t(tile_bytes); }
  XB_INLINE uint32_t size(uint64_t j) const {
    const uint64_t left = bytes - offset(j);
    return left < tile_bytes ? uint32_t(left) : tile_bytes;
  }
};

// Where a walk through a ring of stages stands: the stage and the parity of its current
// phase (round r of a stage is its phase r). Kept incrementally: a 64-bit division per tile
// would sit on the critical path of the thread that drives the copies.
struct ring_cursor {
  unsigned stages;
  unsigned stage = 0;
  unsigned parity = 0;
  XB_INLINE explicit ring_cursor(unsigned n) : stages(n) {}
  XB_INLINE void advance() {
    if (++stage == stages) {
      stage = 0;
      parity ^= 1;
    }
  }
};

// A block's sum: every thread adds its part to a shared word that thread 0 zeroed before a
// __syncthreads; after the next __syncthreads thread 0 stores it (no atomics across blocks,
// so nothing has to be reset between launches).
XB_INLINE void add_to_block(uint64_t* total, uint64_t mine) {
  if (mine) device_ops::fetch_add<block_scope>(total, mine, relaxed);
}

}  // namespace xbb
