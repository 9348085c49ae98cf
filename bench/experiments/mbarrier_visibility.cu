// bench/experiments/mbarrier_visibility.cu - a hardware probe, not part of the build: does a
// thread whose mbarrier.arrive completed the phase see that in a test_wait right after?
// The native completion engine (completion_engine.hpp) relied on it to find the thread
// that runs the completion step. One block, through the native lowering's own wrappers:
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o mbarrier_visibility \
//        bench/experiments/mbarrier_visibility.cu
//   ./mbarrier_visibility            (prints one line per block size)
// Per round every thread arrives once (count = block size), then probes test_wait on its
// own state until it succeeds. Reported: threads whose first probe succeeded, and for the
// thread that arrived last (largest clock before its arrive) the probes and cycles it
// took to see the phase complete.
#include <cstdio>
#include <cstdint>

#include <xbarrier/barrier.hpp>

// The mbarrier wrappers exist in the device pass for sm_90 (XB_NATIVE_MBARRIER) only.
#if XB_NATIVE_MBARRIER
// The instructions are the native lowering's own (platform/cuda_mbarrier.hpp).
namespace mb = xb::detail::mbarrier;
#endif

struct round_result {
  unsigned long long immediate;   // threads whose first probe saw the phase complete
  unsigned long long last_probes; // probes the last arriver needed
  unsigned long long last_cycles; // cycles from the last arriver's arrive to its successful probe
};

// mode 0: test_wait probes; mode 1: try_wait probes (may suspend).
__global__ void probe(unsigned rounds, int mode, round_result* out) {
#if XB_NATIVE_MBARRIER
  __shared__ uint64_t bar;
  __shared__ unsigned immediate;
  __shared__ unsigned long long latest;  // (clock before arrive << 16) | thread, max over the block
  __shared__ unsigned long long result[2];
  if (threadIdx.x == 0) {
    mb::init(&bar, blockDim.x);
  }
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) { immediate = 0; latest = 0; }
    __syncthreads();
    const unsigned long long before = clock64();
    const uint64_t state = mb::arrive(&bar, 1);
    const unsigned long long after = clock64();
    unsigned probes = 1;
    bool done = mode == 0 ? mb::test_wait(&bar, state) : mb::try_wait(&bar, state);
    const bool first = done;
    while (!done) {
      ++probes;
      done = mode == 0 ? mb::test_wait(&bar, state) : mb::try_wait(&bar, state);
    }
    const unsigned long long seen = clock64();
    if (first) atomicAdd(&immediate, 1u);
    atomicMax(&latest, ((before & 0xffffffffffffull) << 16) | threadIdx.x);
    __syncthreads();
    if ((latest & 0xffff) == threadIdx.x) { result[0] = probes; result[1] = seen - after; }
    __syncthreads();
    if (threadIdx.x == 0) out[r] = {immediate, result[0], result[1]};
  }
#endif
}

int main() {
  const unsigned rounds = 1000, skip = 100;
  round_result* out;
  if (cudaMalloc(&out, rounds * sizeof(round_result)) != cudaSuccess) { std::printf("no device\n"); return 2; }
  round_result* host = new round_result[rounds];
  std::printf("%-8s %-10s %22s %24s %24s\n", "threads", "probe", "first probe saw it", "last arriver: probes", "last arriver: cycles");
  for (int mode = 0; mode < 2; ++mode) {
    for (unsigned threads : {32u, 128u, 256u, 1024u}) {
      probe<<<1, threads>>>(rounds, mode, out);
      if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("launch failed\n"); return 1; }
      cudaMemcpy(host, out, rounds * sizeof(round_result), cudaMemcpyDeviceToHost);
      double imm = 0, probes = 0, cycles = 0;
      unsigned long long max_probes = 0;
      for (unsigned r = skip; r < rounds; ++r) {
        imm += host[r].immediate; probes += host[r].last_probes; cycles += host[r].last_cycles;
        if (host[r].last_probes > max_probes) max_probes = host[r].last_probes;
      }
      const double n = rounds - skip;
      std::printf("%-8u %-10s %15.1f of %4u %17.2f (max %3llu) %24.1f\n", threads, mode == 0 ? "test_wait" : "try_wait",
                  imm / n, threads, probes / n, max_probes, cycles / n);
    }
  }
  return 0;
}
