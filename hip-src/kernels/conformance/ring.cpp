// A producer/consumer ring with full/empty barriers: thread 0 fills stage s with a bulk
// copy tracked by full[s]'s tx-count; threads 1..n-1 consume it and release it on empty[s].
#include "common.hpp"

constexpr unsigned kStages = 4;

XB_KERNEL void xbc_ring(const unsigned* src, unsigned src_chunks, unsigned chunk_words, unsigned stages_total,
                        unsigned long long* sums) {
  __shared__ xb::barrier<xb::thread_scope_block> full[kStages], empty[kStages];
  unsigned* ring = xb::dynamic_shared<unsigned>();
  const unsigned n = xbc::block_threads(), t = threadIdx.x, consumers = n - 1;
  if (t == 0) {
    for (unsigned s = 0; s < kStages; ++s) {
      init(&full[s], 1);
      init(&empty[s], consumers);
    }
  }
  __syncthreads();
  if (t == 0) {
    for (unsigned i = 0; i < stages_total; ++i) {
      const unsigned s = i % kStages, round = i / kStages;
      empty[s].wait_parity((round & 1) ^ 1);  // round 0: a fresh barrier's parity 1 is complete
      (void)xb::device::barrier_arrive_tx(full[s], 1, chunk_words * 4);
      xb::device::memcpy_async_tx(ring + s * chunk_words, src + (i % src_chunks) * chunk_words,
                                  xb::aligned_size_t<16>(chunk_words * 4), full[s]);
    }
  } else {
    unsigned long long sum = 0;
    for (unsigned i = 0; i < stages_total; ++i) {
      const unsigned s = i % kStages;
      full[s].wait_parity((i / kStages) & 1);
      for (unsigned w = t - 1; w < chunk_words; w += consumers) sum += (unsigned long long)ring[s * chunk_words + w] * (i % 7 + 1);
      (void)empty[s].arrive();
    }
    sums[t - 1] = sum;
  }
}
