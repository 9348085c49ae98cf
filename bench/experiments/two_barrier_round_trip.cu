// bench/experiments/two_barrier_round_trip.cu - a hardware probe, not part of the build:
// what a round trip costs when the phase is published on a second mbarrier, as the native
// completion engine (completion_engine.hpp) does: M counts the arrivals, one thread sees M's
// phase end, claims it with a CAS on a shared word and arrives on P (count 1), everyone
// waits on P. No completion function, no gate, no drops: the bare shape.
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o two_barrier_round_trip \
//        bench/experiments/two_barrier_round_trip.cu
//   ./two_barrier_round_trip        (cycles per round trip, per variant and block size)
// Variants:
//   0 one mbarrier: arrive, try_wait.parity (the raw PTX baseline)
//   1 two: every lane test_waits its M state; lanes that see it end CAS the claim word;
//     the winner arrives on P; all try_wait.parity on P
//   2 as 1, but only lane 0 of each warp test_waits and CASes
//   3 as 2, but waiters poll P with test_wait.parity (never suspend)
//   4 as 2, but everyone first try_waits on M, then lane 0s CAS, then all wait on P
// Then variant 2 with the completion engine's extra parts added one at a time (features):
//   gate    M expects one more arrival, which the claimer gives after publishing on P
//   look    after its arrival every lane reads the control word twice around a test_wait
//           (the engine's check for an arrival counted during a step)
//   control the claim is a 64-bit CAS on the control word after an acquire read of it and
//           a test_wait.parity on M; the claimer frees it with a release store
//   rejoin  the lanes of a warp __syncwarp after the claim attempt
#include <cstdio>
#include <cstdint>

#include <xbarrier/barrier.hpp>

enum { GATE = 1, LOOK = 2, CONTROL = 4, REJOIN = 8 };

// The mbarrier wrappers exist in the device pass for sm_90 (XB_NATIVE_MBARRIER) only.
#if XB_NATIVE_MBARRIER
// The instructions are the native lowering's own (platform/cuda_mbarrier.hpp, cuda.hpp).
namespace mb = xb::detail::mbarrier;
using platform = xb::detail::platform;
constexpr auto cta = xb::detail::mem_scope::block;

__device__ __forceinline__ uint64_t arrive(uint64_t* bar) { return mb::arrive(bar, 1); }
__device__ __forceinline__ bool claim(unsigned* word, unsigned round) {
  return atomicCAS(word, round, round + 1) == round;
}

__device__ __forceinline__ uint64_t load_acquire(const uint64_t* w) {
  return platform::load<cta>(w, xb::detail::mem_order::acquire);
}
// st.release directly: the platform's release store goes through libcu++ (a fence and a
// generic store), whose cost in the engine was measured separately (XB_EXP 1 and 6).
__device__ __forceinline__ void store_release(uint64_t* w, uint64_t v) {
  asm volatile("st.release.cta.shared.u64 [%0], %1;" ::"r"(mb::smem(w)), "l"(v) : "memory");
}
__device__ __forceinline__ bool cas64(uint64_t* w, uint64_t expected, uint64_t desired) {
  return platform::compare_exchange<cta>(w, expected, desired, xb::detail::mem_order::relaxed);
}

#endif

__global__ void rt(int variant, int features, unsigned rounds, unsigned long long* cycles, unsigned* wrong) {
#if XB_NATIVE_MBARRIER
  __shared__ uint64_t m, p, control;
  __shared__ unsigned claimed;
  if (threadIdx.x == 0) {
    mb::init(&m, blockDim.x + ((features & GATE) ? 1 : 0));
    mb::init(&p, 1);
    if (features & GATE) (void)arrive(&m);
    claimed = 0;
    control = 0;
  }
  __syncthreads();
  const bool lane0 = (threadIdx.x & 31) == 0;
  unsigned long long start = 0;
  for (unsigned r = 0; r < rounds; ++r) {
    if (r == rounds / 10) start = clock64();
    const uint32_t parity = r & 1;
    const uint64_t state = arrive(&m);
    if (variant == 0) {
      while (!mb::try_wait_parity(&m, parity)) {}
      continue;
    }
    if (variant == 4) while (!mb::try_wait_parity(&m, parity)) {}
    const unsigned lanes = __activemask();
    const bool looks = variant == 1 || lane0;
    if (features & CONTROL) {
      if (looks && mb::test_wait(&m, state)) {
        const uint64_t k = load_acquire(&control);
        if (!(k & 1) && mb::test_wait_parity(&m, uint32_t(k >> 1) & 1) && cas64(&control, k, k | 1)) {
          ++claimed;
          (void)arrive(&p);
          store_release(&control, k + 2 - 0);
          if (features & GATE) (void)arrive(&m);
        }
      }
    } else if (looks && mb::test_wait(&m, state) && claim(&claimed, r)) {
      (void)arrive(&p);
      if (features & GATE) (void)arrive(&m);
    }
    if (features & REJOIN) __syncwarp(lanes);
    if (features & LOOK) {
      const uint64_t d = load_acquire(&control) >> 1;
      const bool ended = mb::test_wait(&m, state);
      if ((load_acquire(&control) >> 1) != d && !ended) atomicAdd(wrong, 0u);  // keeps the reads
    }
    if (variant == 3) {
      while (!mb::test_wait_parity(&p, parity)) {}
    } else {
      while (!mb::try_wait_parity(&p, parity)) {}
    }
  }
  const unsigned long long took = clock64() - start;
  if (threadIdx.x == 0) {
    *cycles = took;
    if (variant != 0 && claimed != rounds) atomicAdd(wrong, 1u);
  }
#endif
}

int main() {
  const unsigned rounds = 20000;
  unsigned long long* cycles;
  unsigned* wrong;
  if (cudaMalloc(&cycles, 8) != cudaSuccess || cudaMalloc(&wrong, 4) != cudaSuccess) { std::printf("no device\n"); return 2; }
  cudaMemset(wrong, 0, 4);
  const char* names[] = {"one mbarrier (raw PTX)", "two, every lane looks", "two, lane 0 looks",
                         "two, lane 0 looks, poll P", "two, wait on M first"};
  struct { int variant, features; const char* name; } runs[] = {
      {0, 0, names[0]}, {1, 0, names[1]}, {2, 0, names[2]}, {3, 0, names[3]}, {4, 0, names[4]},
      {2, GATE, "2 + gate"}, {2, LOOK, "2 + look"}, {2, CONTROL, "2 + control"}, {2, REJOIN, "2 + rejoin"},
      {2, GATE | CONTROL, "2 + gate + control"}, {2, GATE | LOOK | CONTROL | REJOIN, "2 + all four"},
      {1, GATE | LOOK | CONTROL | REJOIN, "1 + all four"}};
  std::printf("%-28s %10s %10s %10s   (cycles per round trip)\n", "variant", "128", "256", "1024");
  for (const auto& run : runs) {
    std::printf("%-28s", run.name);
    for (unsigned threads : {128u, 256u, 1024u}) {
      rt<<<1, threads>>>(run.variant, run.features, rounds, cycles, wrong);
      unsigned long long c = 0;
      if (cudaDeviceSynchronize() != cudaSuccess) { std::printf(" launch failed\n"); return 1; }
      cudaMemcpy(&c, cycles, 8, cudaMemcpyDeviceToHost);
      std::printf(" %10.1f", double(c) / (rounds - rounds / 10));
    }
    std::printf("\n");
  }
  unsigned w = 0;
  cudaMemcpy(&w, wrong, 4, cudaMemcpyDeviceToHost);
  std::printf("claim counts wrong in %u runs\n", w);
  return w != 0;
}
