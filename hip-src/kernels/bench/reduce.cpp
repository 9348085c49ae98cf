// Streaming reduction: the sum (as u64) of `bytes` bytes of u32 data; each block stores its
// part in partials[block], the host adds them up and compares with the exact sum.
//
// The pipelines are persistent kernels (grid = SMs x k) with a ring of `stages` shared-memory
// stages of `stage_bytes` each (dynamic shared memory: stages * stage_bytes). Warp 0 is the
// producer: its lane 0 waits until a stage is empty, then has the copy engine fill it and
// complete the bytes on the stage's `full` barrier. The other warps consume: wait on `full`,
// add the stage up, and arrive on `empty` once per warp. bytes, stage_bytes and every
// pointer are multiples of 16.
#include "common.hpp"
#include "ptx.hpp"

// Named, not anonymous: the CUDA build compiles every file as one translation unit.
namespace xbb {
namespace reduce {

// A consumer thread's share of one stage: 16-byte reads strided by the consumer count.
XB_INLINE uint64_t add_stage(const unsigned char* stage, uint32_t bytes, unsigned c, unsigned consumers) {
  const xbb::vec4* v = reinterpret_cast<const xbb::vec4*>(stage);
  uint64_t sum = 0;
  XBB_UNROLL(4)
  for (uint32_t k = c; k < bytes / 16; k += consumers) sum += xbb::sum4(v[k]);
  return sum;
}

}  // namespace reduce
}  // namespace xbb

// The pipeline written against xb::barrier and xb::device.
XB_KERNEL void xbb_reduce_xb(const unsigned char* data, unsigned long long bytes, unsigned stage_bytes,
                             unsigned stages, unsigned long long* partials) {
  using barrier = xb::barrier<xb::thread_scope_block>;
  __shared__ barrier full[XBB_MAX_STAGES], empty[XBB_MAX_STAGES];
  __shared__ uint64_t total;
  unsigned char* ring = xb::dynamic_shared<unsigned char>();
  const unsigned w = xbb::warp_size(), consumers = blockDim.x - w;
  const xbb::tiling tiles{bytes, stage_bytes};
  if (stages == 0 || stages > XBB_MAX_STAGES || blockDim.x < 2 * w) return;  // bad arguments leave partials unwritten
  if (threadIdx.x == 0) {
    for (unsigned s = 0; s < stages; ++s) {
      init(&full[s], 1);              // the producer's arrival; the phase ends when the bytes land
      init(&empty[s], consumers / w);  // one arrival per consumer warp
    }
    total = 0;
    xb::fence_proxy_async();  // the copy engine must see the initialized barriers
  }
  __syncthreads();
  const uint64_t owned = tiles.owned();
  if (threadIdx.x < w) {
    if (threadIdx.x == 0) {
      xbb::ring_cursor at(stages);
      for (uint64_t j = 0; j < owned; ++j, at.advance()) {
        const unsigned s = at.stage;
        if (j >= stages) empty[s].wait_parity(at.parity ^ 1);  // the consumers' last round on it
        const uint32_t n = tiles.size(j);
        (void)xb::device::barrier_arrive_tx(full[s], 1, n);
        xb::device::memcpy_async_tx(ring + size_t(s) * stage_bytes, data + tiles.offset(j), xb::aligned_size_t<16>(n),
                                    full[s]);
      }
    }
  } else {
    const unsigned c = threadIdx.x - w;
    uint64_t sum = 0;
    xbb::ring_cursor at(stages);
    for (uint64_t j = 0; j < owned; ++j, at.advance()) {
      const unsigned s = at.stage;
      full[s].wait_parity(at.parity);
      sum += xbb::reduce::add_stage(ring + size_t(s) * stage_bytes, tiles.size(j), c, consumers);
      xbb::warp_sync();
      if (xbb::lane() == 0) (void)empty[s].arrive();
    }
    xbb::add_to_block(&total, sum);
  }
  __syncthreads();
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// A plain grid-stride kernel: 16-byte loads, no shared memory, no barriers.
XB_KERNEL void xbb_reduce_plain(const xbb::vec4* data, unsigned long long vectors, unsigned long long* partials) {
  __shared__ uint64_t total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t sum = 0;
XBB_UNROLL(4)
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors; i += stride) sum += xbb::sum4(data[i]);
  xbb::add_to_block(&total, sum);
  __syncthreads();
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

#if defined(XB_PLATFORM_CUDA)

// The same pipeline in hand-written PTX (mbarrier + cp.async.bulk). report[1] is set when
// this image lacks the instructions (below sm_90).
XB_KERNEL void xbb_reduce_ptx(const unsigned char* data, unsigned long long bytes, unsigned stage_bytes,
                              unsigned stages, unsigned long long* partials, unsigned long long* report) {
#if XBB_PTX
  __shared__ uint64_t full[XBB_MAX_STAGES], empty[XBB_MAX_STAGES];
  __shared__ uint64_t total;
  unsigned char* ring = xb::dynamic_shared<unsigned char>();
  const unsigned consumers = blockDim.x - 32;
  const xbb::tiling tiles{bytes, stage_bytes};
  if (stages == 0 || stages > XBB_MAX_STAGES || blockDim.x < 64) return;  // bad arguments leave partials unwritten
  if (threadIdx.x == 0) {
    for (unsigned s = 0; s < stages; ++s) {
      xbb::ptx::init(&full[s], 1);
      xbb::ptx::init(&empty[s], consumers / 32);
    }
    total = 0;
    xbb::ptx::fence_init();
  }
  __syncthreads();
  const uint64_t owned = tiles.owned();
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0) {
      xbb::ring_cursor at(stages);
      for (uint64_t j = 0; j < owned; ++j, at.advance()) {
        const unsigned s = at.stage;
        if (j >= stages) xbb::ptx::wait_parity(&empty[s], at.parity ^ 1);
        const uint32_t n = tiles.size(j);
        xbb::ptx::arrive_expect_tx(&full[s], n);
        xbb::ptx::bulk_load(ring + size_t(s) * stage_bytes, data + tiles.offset(j), n, &full[s]);
      }
    }
  } else {
    const unsigned c = threadIdx.x - 32;
    uint64_t sum = 0;
    xbb::ring_cursor at(stages);
    for (uint64_t j = 0; j < owned; ++j, at.advance()) {
      const unsigned s = at.stage;
      xbb::ptx::wait_parity(&full[s], at.parity);
      sum += xbb::reduce::add_stage(ring + size_t(s) * stage_bytes, tiles.size(j), c, consumers);
      __syncwarp();
      if (xbb::lane() == 0) xbb::ptx::arrive(&empty[s]);
    }
    atomicAdd(reinterpret_cast<unsigned long long*>(&total), (unsigned long long)sum);
  }
  __syncthreads();
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
#else
  if (threadIdx.x == 0 && blockIdx.x == 0) report[1] = 1;
#endif
}

#endif  // XB_PLATFORM_CUDA
