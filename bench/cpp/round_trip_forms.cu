// bench/cpp/round_trip_forms.cu - what the native (sm_90 mbarrier) arrive_and_wait costs in
// each way of waiting, one block per SM as in `xbar bench`: why the token form of the xb
// round trip trails raw PTX at 128 threads (docs/performance.md). Not part of the cargo
// build: a standalone program for sm_90 (CI compiles it; it needs a GPU to run).
//
// Forms:
//   0 raw PTX: arrive with no result, try_wait.parity on a parity the caller tracks
//     (the benchmark's raw-PTX baseline, and what xb's wait_parity form does)
//   1 token: wait(arrive()), try_wait on the state the arrive returned (xb's arrive_and_wait)
//   2 parity read first: test_wait.parity reads the current phase's parity before the
//     arrive; try_wait.parity on it; the arrive's state is compared only after the wait (or
//     when a try_wait times out), and a mismatch (the phase ended before our arrival
//     landed) falls back to waiting on the state
//   3 as 0, but the arrive returns its state (unused): does producing the result cost?
// This loop carries more than the benchmark's, so compare the forms within one column only.
// Build and run from the repository root:
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o /tmp/round_trip_forms \
//        bench/cpp/round_trip_forms.cu
//   /tmp/round_trip_forms   (cycles per round trip, per form and block size)
#include <cstdio>
#include <cstdint>

#include <xbarrier/barrier.hpp>

#include "probe_timing.hpp"

#if XB_NATIVE_MBARRIER
namespace mb = xb::detail::mbarrier;

__device__ __forceinline__ void arrive_no_result(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mb::smem(bar)) : "memory");
}
__device__ __forceinline__ bool parity_of(uint64_t state) { return (state >> 63) != 0; }

// Form 2. Counts the fallbacks (a guess that missed) into *missed. The arrive's state is
// first read after the first try_wait, so that the wait does not wait for it.
__device__ __noinline__ void missed_guess(uint64_t* bar, uint64_t state, uint32_t now, unsigned* missed) {
  for (;;) {
    if (parity_of(state) != bool(now)) {
      atomicAdd(missed, 1u);
      while (!mb::try_wait(bar, state)) {}
      return;
    }
    if (mb::try_wait_parity(bar, now)) return;
  }
}
__device__ __forceinline__ void guessed(uint64_t* bar, unsigned* missed) {
  const uint32_t now = mb::test_wait_parity(bar, 0) ? 1u : 0u;  // phase 0-parity done: we are in a 1-parity phase
  const uint64_t state = mb::arrive(bar, 1);
  const bool done = mb::try_wait_parity(bar, now);
  // The state's first use depends on the wait's result, so no scheduler can move it (and
  // the wait for the arrive's result) above the try_wait. The asm hides that the mask is
  // all ones whenever it matters.
  uint32_t mask = done ? ~0u : 0u;
  asm volatile("mov.b32 %0, %0;" : "+r"(mask));
  const uint32_t high = uint32_t(state >> 32) & mask;
  if (!done || (high >> 31) != now) missed_guess(bar, state, now, missed);
}
#endif

// The form is a template argument: a run-time switch inside the loop costs an indirect
// branch per round (seen in the SASS), more than the forms differ by.
template <int form>
__global__ void rt(unsigned rounds, unsigned long long* cycles, unsigned* missed) {
#if XB_NATIVE_MBARRIER
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) mb::init(&bar, blockDim.x);
  __syncthreads();
  unsigned long long start = 0;
  uint32_t parity = 0;
#pragma unroll 1
  for (unsigned r = 0; r < rounds; ++r) {
    probe::start_after_warm_up(r, rounds, start);
    if constexpr (form == 0) {
      arrive_no_result(&bar);
      while (!mb::try_wait_parity(&bar, parity)) {}
    } else if constexpr (form == 1) {
      const uint64_t state = mb::arrive(&bar, 1);
      while (!mb::try_wait(&bar, state)) {}
    } else if constexpr (form == 2) {
      guessed(&bar, missed);
    } else {
      (void)mb::arrive(&bar, 1);
      while (!mb::try_wait_parity(&bar, parity)) {}
    }
    parity ^= 1;
  }
  const unsigned long long took = clock64() - start;
  if (threadIdx.x == 0) cycles[blockIdx.x] = took;
#endif
}

int main() {
  const unsigned rounds = 20000;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) { std::printf("no device\n"); return 2; }
  unsigned long long* cycles;
  unsigned* missed;
  if (cudaMalloc(&cycles, 8 * sms) != cudaSuccess || cudaMalloc(&missed, 4) != cudaSuccess) return 2;
  cudaMemset(missed, 0, 4);
  const char* names[] = {"0 raw PTX (parity)", "1 token (xb arrive_and_wait)", "2 parity read first", "3 raw PTX, arrive result"};
  std::printf("%-28s %10s %10s %10s   (cycles per round trip, mean of %d blocks, best of 5)\n", "form", "128", "256", "1024", sms);
  for (int form = 0; form < 4; ++form) {
    std::printf("%-28s", names[form]);
    for (unsigned threads : {128u, 256u, 1024u}) {
      const auto launch = [&] {
        if (form == 0) rt<0><<<sms, threads>>>(rounds, cycles, missed);
        else if (form == 1) rt<1><<<sms, threads>>>(rounds, cycles, missed);
        else if (form == 2) rt<2><<<sms, threads>>>(rounds, cycles, missed);
        else rt<3><<<sms, threads>>>(rounds, cycles, missed);
      };
      if (!probe::print_best_of_five(launch, cycles, sms, rounds)) return 1;
    }
    std::printf("\n");
  }
  unsigned m = 0;
  cudaMemcpy(&m, missed, 4, cudaMemcpyDeviceToHost);
  std::printf("guesses that missed (fell back to the state): %u\n", m);
  return 0;
}
