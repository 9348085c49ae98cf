// bench/cpp/grid_forms.cu - where the grid barrier's time goes: xb's device-scope barrier
// beside cooperative groups' grid.sync() and software grid barriers stripped to one choice
// each, on a cooperative grid of one block per SM (256 threads), as `xbar bench`'s
// grid-barrier row runs them: per barrier a block syncs, thread 0 crosses the grid barrier,
// the block syncs again. Nanoseconds per barrier from events around 20000 barriers, best of
// 5 launches. Not part of the cargo build: a standalone program for sm_90 (CI compiles it;
// it needs a GPU to run). From the repository root:
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include \
//        -o /tmp/grid_forms bench/cpp/grid_forms.cu
//   /tmp/grid_forms
//
// Forms:
//   grid.sync       cooperative groups
//   xb              xb::barrier<thread_scope_device>::arrive_and_wait (the direct wide
//                   layout: each phase's first arrival arms it with a second RMW)
//   designated      grid.sync's scheme on a 64-bit word with the protocol's atomics: block
//                   0 adds what makes each phase's total 2^63, the others 1; one acq_rel
//                   fetch_add each, acquire polls of the top bit
//   completer red   the direct wide layout's skeleton with the completer arming the next
//                   phase by an atomic whose result it does not wait for (safe here only
//                   because every block arrives in every phase: the completer's own next
//                   arrival lands after its arming, so the arming never completes a phase)
//   first arms      the skeleton of xb's scheme: the first arrival arms, waiting for both
//                   results
#include <cstdint>
#include <cstdio>

#include <cooperative_groups.h>
#include <cuda/atomic>
#include <xbarrier/barrier.hpp>

namespace {

using u64 = unsigned long long;
using gpu_ref = cuda::atomic_ref<u64, cuda::thread_scope_device>;
constexpr u64 top = u64(1) << 63;
constexpr unsigned a_shift = 31;               // the wide layout: E in bits 0..30, A above
constexpr u64 a_unit = u64(1) << a_shift;
constexpr u64 armed_bit = u64(1) << 62;

__device__ __forceinline__ u64 arming(u64 expected) { return ((u64(1) << 32) - expected) << a_shift; }

__device__ __forceinline__ void wait_flip(u64* w, u64 old) {
  uint32_t iteration = 0;
  while (((gpu_ref(*w).load(cuda::std::memory_order_acquire) ^ old) & top) == 0)
    xb::detail::platform::wait_backoff(iteration);
}

template <int form>
__global__ void grid(unsigned iters, u64* word, xb::barrier<xb::thread_scope_device>* bar) {
  cooperative_groups::grid_group g = cooperative_groups::this_grid();
  const u64 n = gridDim.x;
#pragma unroll 1
  for (unsigned i = 0; i < iters; ++i) {
    if (form == 0) {
      g.sync();
      continue;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      if (form == 1) {
        bar->arrive_and_wait();
      } else if (form == 2) {
        const u64 add = blockIdx.x == 0 ? top - (n - 1) : 1;
        const u64 old = gpu_ref(*word).fetch_add(add, cuda::std::memory_order_acq_rel);
        if (((old ^ (old + add)) & top) == 0) wait_flip(word, old);
      } else if (form == 3) {
        const u64 old = gpu_ref(*word).fetch_add(a_unit, cuda::std::memory_order_acq_rel);
        if (((old ^ (old + a_unit)) & top) != 0) {
          // Completer: arm the next phase; nothing reads the result, so ptxas issues a RED.
          (void)gpu_ref(*word).fetch_add(arming(n), cuda::std::memory_order_relaxed);
        } else {
          wait_flip(word, old);
        }
      } else {
        const u64 old = gpu_ref(*word).fetch_add(a_unit, cuda::std::memory_order_acq_rel);
        bool completed = ((old ^ (old + a_unit)) & top) != 0;
        if ((old & armed_bit) == 0 && ((old >> a_shift) & 0xffffffffu) == 0) {
          const u64 found = gpu_ref(*word).fetch_add(arming(n), cuda::std::memory_order_acq_rel);
          completed = ((found ^ (found + arming(n))) & top) != 0;
        }
        if (!completed) wait_flip(word, old);
      }
    }
    __syncthreads();
  }
}

// Each skeleton's phase bit must have flipped once per barrier.
__global__ void check(const u64* word, unsigned iters, int form, unsigned* wrong) {
  if (form >= 2 && ((*word >> 63) != (iters & 1))) *wrong += 1;
}

__global__ void init(u64* word, xb::barrier<xb::thread_scope_device>* bar, unsigned n, int form) {
  // Designated: the count starts at 0 (block 0's share makes each phase's total 2^63).
  // The wide-layout skeletons start armed, as the layout's init does.
  *word = form == 2 ? 0 : arming(n) | n;
  init(bar, n);
}

}  // namespace

int main() {
  int sms = 0, coop = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
    std::printf("no device\n");
    return 2;
  }
  cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0);
  if (!coop) {
    std::printf("no cooperative launch\n");
    return 2;
  }
  u64* word;
  unsigned* wrong;
  xb::barrier<xb::thread_scope_device>* bar;
  if (cudaMalloc(&word, 256) != cudaSuccess || cudaMalloc(&bar, 256) != cudaSuccess || cudaMalloc(&wrong, 4) != cudaSuccess)
    return 2;
  cudaMemset(wrong, 0, 4);
  const char* names[] = {"grid.sync", "xb", "designated", "completer red", "first arms"};
  unsigned iters = 20000;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf("%-16s %10s   (ns per barrier, %d blocks x 256 threads, best of 5)\n", "form", "ns", sms);
  int failures = 0;
  for (int form = 0; form < 5; ++form) {
    void* kernels[] = {(void*)grid<0>, (void*)grid<1>, (void*)grid<2>, (void*)grid<3>, (void*)grid<4>};
    float best = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
      init<<<1, 1>>>(word, bar, unsigned(sms), form);
      void* args[] = {&iters, &word, &bar};
      cudaEventRecord(start);
      cudaError_t e = cudaLaunchCooperativeKernel(kernels[form], dim3(sms), dim3(256), args, 0, nullptr);
      cudaEventRecord(stop);
      if (e != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess) {
        std::printf("%-16s launch failed: %s\n", names[form], cudaGetErrorString(cudaGetLastError()));
        ++failures;
        break;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (ms < best) best = ms;
      check<<<1, 1>>>(word, iters, form, wrong);
    }
    std::printf("%-16s %10.1f\n", names[form], double(best) * 1e6 / iters);
  }
  unsigned w = 0;
  cudaMemcpy(&w, wrong, 4, cudaMemcpyDeviceToHost);
  std::printf("wrong phase counts: %u\n", w);
  return failures == 0 && w == 0 ? 0 : 1;
}
