// Probe (session 7): the conformance kernel xbc_tx_sequences (tx.cpp) under the checked
// engine, with a short wait bound, and P9 alone as tx.cpp writes it. Prints seen[] and the
// fault record of each launch. Found: the whole kernel deadlocked in P9 while P9 alone did
// not, because nvcc folded __isShared to false at P9's complete_tx (its PTX has 6
// mbarrier.complete_tx for 7 calls); checked_engine.hpp now tests the space at run time.
// Build: nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=1 -DXB_DEFAULT_WAIT_TIMEOUT_NS=200000000ull
//        -I hip-src/include -I hip-src/kernels/conformance -o checked_tx_sequences bench/experiments/checked_tx_sequences.cu
#include <cstdio>
#include "../../hip-src/kernels/conformance/tx.cpp"  // the kernel under test, as the conformance suite compiles it

__global__ void p9_alone(const unsigned* src, unsigned long long* seen) {
  if (threadIdx.x != 0) return;
  __shared__ block_barrier bars[9];
  __shared__ __attribute__((aligned(16))) unsigned buf[4];
  block_barrier* bar = &bars[6];
  auto copy16 = [&] {
    for (int i = 0; i < 4; ++i) buf[i] = src[i];
    xb::detail::complete_tx(*bar, 16);
  };
  init(bar, 1);
  (void)bar->arrive();
  seen[9] = bar->try_wait_parity(false);
  bar->wait_parity(false);
  copy16();
  seen[10] = bar->try_wait_parity(true);
  xb::device::barrier_expect_tx(*bar, 16);
  seen[11] = bar->try_wait_parity(true);
  (void)bar->arrive();
  seen[12] = bar->try_wait_parity(true);
}

static void show(const char* name, cudaError_t e, unsigned long long* seen) {
  xb_fault_record r;
  cudaMemcpyFromSymbol(&r, xb_fault_record_slot, sizeof r);
  printf("%s: %s; seen", name, cudaGetErrorString(e));
  for (int i = 0; i < 18; ++i) printf(" %llu", seen[i]);
  printf("\n  fault kind %u op %u barrier %llx pending %lld tx %lld parity %u\n", r.kind, r.op,
         (unsigned long long)r.barrier, (long long)r.pending, (long long)r.tx, (unsigned)r.phase_parity);
  xb_fault_record zero = {};
  cudaMemcpyToSymbol(xb_fault_record_slot, &zero, sizeof zero);
}

int main() {
  unsigned long long* seen;
  unsigned* src;
  cudaMallocManaged(&seen, 32 * sizeof(unsigned long long));
  cudaMallocManaged(&src, 64);
  for (int k = 0; k < 16; ++k) src[k] = k + 1;
  for (int k = 0; k < 32; ++k) seen[k] = 9;
  xbc_tx_sequences<<<1, 32>>>(src, seen);
  show("xbc_tx_sequences", cudaDeviceSynchronize(), seen);
  for (int k = 0; k < 32; ++k) seen[k] = 9;
  p9_alone<<<1, 1>>>(src, seen);
  show("p9_alone", cudaDeviceSynchronize(), seen);
  for (int k = 0; k < 32; ++k) seen[k] = 9;
  p9_alone<<<1, 32>>>(src, seen);
  show("p9_alone, 32 threads", cudaDeviceSynchronize(), seen);
}
