// Benchmark data: fill an array with xbb::pattern, and count the elements that differ from
// it (how the copies are checked: the whole output, on the device).
#include "common.hpp"

XB_KERNEL void xbb_fill(unsigned* data, unsigned long long n, unsigned seed) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) data[i] = xbb::pattern(i, seed);
}

XB_KERNEL void xbb_check_pattern(const unsigned* data, unsigned long long n, unsigned seed,
                                 unsigned long long* mismatches) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t bad = 0;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    bad += data[i] != xbb::pattern(i, seed);
  xbb::count(mismatches, bad);
}
