// bench/cpp/probe_timing.hpp - what the round-trip probes (round_trip_forms.cu,
// emulated_forms.cu) share: one block per SM times its rounds after a tenth of them as
// warm-up and stores the cycles in cycles[block]; the value reported is the mean over the
// blocks per timed round, best of five launches.
#pragma once
#include <cstdio>

#include <cuda_runtime.h>

namespace probe {

// In round r of `rounds`: starts the clock once every thread of the block is past the
// warm-up rounds (the first tenth).
__device__ inline void start_after_warm_up(unsigned r, unsigned rounds, unsigned long long& start) {
  if (r == rounds / 10) {
    __syncthreads();
    start = clock64();
  }
}

// Cycles per timed round of one launch: the blocks' mean. Negative when the launch failed.
inline double cycles_per_round(const unsigned long long* cycles, int sms, unsigned rounds) {
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  unsigned long long c[1024];
  if (sms > 1024 || cudaMemcpy(c, cycles, 8 * size_t(sms), cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
  double sum = 0;
  for (int b = 0; b < sms; ++b) sum += double(c[b]);
  return sum / sms / (rounds - rounds / 10);
}

// The best of five launches of `launch()` (which launches one grid), printed as a column;
// false when a launch failed.
template <class Launch>
bool print_best_of_five(Launch launch, const unsigned long long* cycles, int sms, unsigned rounds) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    launch();
    const double per = cycles_per_round(cycles, sms, rounds);
    if (per < 0) {
      std::printf(" launch failed\n");
      return false;
    }
    if (per < best) best = per;
  }
  std::printf(" %10.1f", best);
  return true;
}

}  // namespace probe
