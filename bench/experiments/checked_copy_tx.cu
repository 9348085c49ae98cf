// Probe (session 8): conformance xbc_copy_tx (tx.cpp) through the checked shadow-mbarrier
// engine, with every thread's steps through the engine traced (XB_CHECKED_TRACE), to find
// why it deadlocked under compute-sanitizer racecheck only in session 7 (128 threads, 16 B,
// one copier). Prints, per launch, the fault record and where the threads stopped.
// Build: nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=1 -I hip-src/include -I hip-src/kernels/conformance
//        -o checked_copy_tx bench/experiments/checked_copy_tx.cu
// Run:   checked_copy_tx THREADS BYTES PIECES ROUNDS BLOCKS LAUNCHES   (e.g. 128 16 1 4 2 3)
#include <cstdint>
#include <cstdio>
#include <cstdlib>

__device__ void probe_note(unsigned event, const uint64_t* w, unsigned op, bool parity);
#define XB_CHECKED_TRACE(event, w, op, parity) probe_note(event, w, op, parity)
#include "common.hpp"

constexpr int kMaxThreads = 4 * 128, kSlots = 16;
__device__ unsigned long long g_trace[kMaxThreads][kSlots];
__device__ unsigned g_count[kMaxThreads];

// Event (4 bits), op (8), parity (1), M's test_wait for parity 0 and 1 (a phase of that
// parity has ended), then microseconds since the launch's first note.
__device__ void probe_note(unsigned event, const uint64_t* w, unsigned op, bool parity) {
  const unsigned me = blockIdx.x * blockDim.x + threadIdx.x;
  if (me >= kMaxThreads) return;
  unsigned long long v = event | (op & 0xff) << 4 | unsigned(parity) << 12;
#if defined(__CUDA_ARCH__)  // the mbarrier functions exist in the device pass only
  if (w) {
    const uint64_t* m = w + 1;
    v |= uint64_t(xb::detail::mbarrier::test_wait_parity(m, 0)) << 13;
    v |= uint64_t(xb::detail::mbarrier::test_wait_parity(m, 1)) << 14;
  }
#endif
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  v |= (t / 1000) << 32;
  g_trace[me][g_count[me] % kSlots] = v;
  g_count[me]++;
}

using block_barrier = xb::barrier<xb::thread_scope_block>;

// xbc_copy_tx as tx.cpp has it, with the kernel's own steps traced as events 8..12.
__global__ void copy_tx(const unsigned* src, unsigned long long* report, unsigned bytes, unsigned pieces,
                        unsigned rounds) {
  __shared__ block_barrier bar;
  unsigned* smem = xb::dynamic_shared<unsigned>();
  const unsigned n = xbc::block_threads(), t = threadIdx.x, words = bytes / 4;
  if (t == 0) init(&bar, n);
  __syncthreads();
  const unsigned piece = bytes / 16 / pieces * 16;
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned* from = src + r * 4;
    probe_note(8, nullptr, r, false);
    xb::arrival_token token = t == 0 ? xb::device::barrier_arrive_tx(bar, 1, bytes) : bar.arrive();
    probe_note(9, nullptr, r, false);
    if (t < pieces) {
      const unsigned begin = t * piece, size = t + 1 == pieces ? bytes - begin : piece;
      xb::device::memcpy_async_tx(smem + begin / 4, from + begin / 4, xb::aligned_size_t<16>(size), bar);
      probe_note(10, nullptr, r, false);
    }
    bar.wait(static_cast<xb::arrival_token&&>(token));
    probe_note(11, nullptr, r, false);
    for (unsigned w = t; w < words; w += n) xbc::expect_eq(report, r * 1000000ull + w, smem[w], from[w]);
    bar.arrive_and_wait();
    probe_note(12, nullptr, r, false);
  }
  probe_note(15, nullptr, 0, false);
}

static const char* kEvent[16] = {"?",         "mirror",  "prewaited", "mirrored", "step",      "step-M", "wait",
                                 "waited-M",  "round",   "arrived",   "copied",   "waited",    "aw-done", "?",
                                 "?",         "end"};

int main(int argc, char** argv) {
  const unsigned threads = argc > 1 ? atoi(argv[1]) : 128, bytes = argc > 2 ? atoi(argv[2]) : 16,
                 pieces = argc > 3 ? atoi(argv[3]) : 1, rounds = argc > 4 ? atoi(argv[4]) : 4,
                 blocks = argc > 5 ? atoi(argv[5]) : 2, launches = argc > 6 ? atoi(argv[6]) : 3;
  unsigned* src;
  unsigned long long* report;
  cudaMalloc(&src, bytes + rounds * 16 + 64);
  cudaMemset(src, 0x5a, bytes + rounds * 16 + 64);
  cudaMalloc(&report, 64);
  int failed = 0;
  for (unsigned launch = 0; launch < launches; ++launch) {
    static unsigned long long trace[kMaxThreads][kSlots];
    static unsigned count[kMaxThreads];
    cudaMemset(report, 0, 64);
    unsigned zero[kMaxThreads] = {};
    cudaMemcpyToSymbol(g_count, zero, sizeof zero);
    copy_tx<<<blocks, threads, bytes>>>(src, report, bytes, pieces, rounds);
    const cudaError_t e = cudaDeviceSynchronize();
    xb_fault_record r;
    cudaMemcpyFromSymbol(&r, xb_fault_record_slot, sizeof r);
    unsigned long long rep[4];
    cudaMemcpy(rep, report, sizeof rep, cudaMemcpyDeviceToHost);
    cudaMemcpyFromSymbol(trace, g_trace, sizeof trace);
    cudaMemcpyFromSymbol(count, g_count, sizeof count);
    printf("launch %u (%u blocks x %u threads, %u B, %u pieces, %u rounds): %s, fault kind %u op %u thread %u block %u "
           "[parity %u pending %lld tx %lld], mismatches %llu\n",
           launch, blocks, threads, bytes, pieces, rounds, cudaGetErrorString(e), r.kind, r.op, r.thread[0], r.block[0],
           (unsigned)r.phase_parity, (long long)r.pending, (long long)r.tx, rep[0]);
    if (e != cudaSuccess) return 2;
    if (r.kind == 0 && rep[0] == 0) continue;
    failed = 1;
    // Where each thread's trace ends, counted; then the last steps of a few threads.
    unsigned last_kind[16] = {};
    for (unsigned i = 0; i < blocks * threads && i < kMaxThreads; ++i)
      if (count[i]) ++last_kind[trace[i][(count[i] - 1) % kSlots] & 15];
    printf("  threads by last event:");
    for (int k = 0; k < 16; ++k)
      if (last_kind[k]) printf(" %s=%u", kEvent[k], last_kind[k]);
    printf("\n");
    unsigned shown = 0;
    for (unsigned i = 0; i < blocks * threads && i < kMaxThreads && shown < 10; ++i) {
      if (!count[i] || (trace[i][(count[i] - 1) % kSlots] & 15) == 15) continue;
      if (i / threads != r.block[0] && shown > 2) continue;
      ++shown;
      printf("  b%u t%-3u:", i / threads, i % threads);
      const unsigned n = count[i] < 8 ? count[i] : 8;
      for (unsigned k = count[i] - n; k < count[i]; ++k) {
        const unsigned long long v = trace[i][k % kSlots];
        printf(" %s(op%llu p%llu M%llu%llu @%llu)", kEvent[v & 15], (v >> 4) & 0xff, (v >> 12) & 1, (v >> 13) & 1,
               (v >> 14) & 1, (v >> 32) % 100000000);
      }
      printf("\n");
    }
    xb_fault_record clear = {};
    cudaMemcpyToSymbol(xb_fault_record_slot, &clear, sizeof clear);
  }
  printf("%s\n", failed ? "probe: FAILED" : "probe: OK");
  return failed;
}
