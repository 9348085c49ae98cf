// Streaming copy through shared memory: bulk loads into a ring of `stages` stages (each
// completing on its `full` barrier) and bulk stores out of them, all issued by one thread per
// block, which is how the copy engine is meant to be driven. Persistent: grid = SMs x k,
// block b copies tiles b, b + grid, ... Dynamic shared memory: stages * stage_bytes;
// stages >= 2; bytes, stage_bytes and both pointers are multiples of 16.
#include "common.hpp"

XB_KERNEL void xbb_copy_xb(const unsigned char* src, unsigned char* dst, unsigned long long bytes,
                           unsigned stage_bytes, unsigned stages) {
  using barrier = xb::barrier<xb::thread_scope_block>;
  __shared__ barrier full[XBB_MAX_STAGES];
  if (threadIdx.x != 0 || stages < 2 || stages > XBB_MAX_STAGES) return;  // bad arguments leave dst unwritten
  unsigned char* ring = xb::dynamic_shared<unsigned char>();
  for (unsigned s = 0; s < stages; ++s) init(&full[s], 1);
  xb::fence_proxy_async();  // the copy engine must see the initialized barriers
  const xbb::tiling tiles{bytes, stage_bytes};
  const uint64_t owned = tiles.owned();
  auto stage = [&](unsigned s) { return ring + size_t(s) * stage_bytes; };
  auto load = [&](uint64_t j, unsigned s) {
    const uint32_t n = tiles.size(j);
    (void)xb::device::barrier_arrive_tx(full[s], 1, n);
    xb::device::memcpy_async_tx(stage(s), src + tiles.offset(j), xb::aligned_size_t<16>(n), full[s]);
  };
  // stages - 1 loads in flight; the last stage is the one the previous store still reads.
  for (uint64_t j = 0; j < owned && j + 1 < stages; ++j) load(j, unsigned(j));
  xbb::ring_cursor at(stages);
  for (uint64_t j = 0; j < owned; ++j, at.advance()) {
    full[at.stage].wait_parity(at.parity);
    // Loaded and stored by the async proxy alike: no proxy fence between them.
    xb::device::bulk_store(dst + tiles.offset(j), stage(at.stage), xb::aligned_size_t<16>(tiles.size(j)));
    xb::device::bulk_store_commit();
    if (j + stages - 1 < owned) {
      // Tile j + stages - 1 goes where tile j - 1 was: wait until its store has read it.
      xb::device::bulk_store_wait_read<1>();
      load(j + stages - 1, at.stage == 0 ? stages - 1 : at.stage - 1);
    }
  }
  // The stores must have read shared memory before the block exits and gives it up.
  xb::device::bulk_store_wait<0>();
}
