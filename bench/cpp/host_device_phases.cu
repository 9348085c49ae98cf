// bench/cpp/host_device_phases.cu - how fast one host thread and one kernel thread can meet,
// phase after phase, through memory both reach, on a GPU without hostNativeAtomicSupported:
// the shapes a system-scope barrier shared with host threads could take. Microseconds per
// phase: in each, both sides signal, then wait for the other's signal of the same phase (a
// barrier phase; the two crossings of the link overlap, where `xbar bench`'s flag baseline
// is a ping-pong whose two crossings follow each other). Median of 5 runs of 2000 phases,
// each after 200 untimed ones. Not part of the cargo build: a standalone
// program (CI compiles it; it needs a GPU to run). From the repository root:
//   nvcc -std=c++17 -arch=sm_90 -O3 -o /tmp/host_device_phases bench/cpp/host_device_phases.cu
//   /tmp/host_device_phases
//
// Forms:
//   managed flags    two phase counters in managed memory, each written by one side only
//   pinned flags     the same in pinned, mapped host memory (cudaHostAlloc)
//   split counters   each side counts its own arrivals with atomics in memory only it
//                    writes (host: pinned memory; kernel: device memory), and the arrival
//                    that completes its side's share (here each side's only one) stores the
//                    side's phase in pinned memory, which the other side polls: no atomic
//                    crosses the link
//   shared atomics   one counter in managed memory that both sides add to (what a protocol
//                    word written from both sides costs); the final count is checked
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include <cuda/atomic>
#include <cuda_runtime.h>

namespace {

using sys_ref = cuda::atomic_ref<unsigned, cuda::thread_scope_system>;
using dev_ref = cuda::atomic_ref<unsigned, cuda::thread_scope_device>;

// The kernel's side of `phases` phases. to_host: the kernel's phase counter the host
// polls; from_host: the host's. count: the kernel side's arrival counter (split counters),
// or the counter both sides add to (shared atomics).
template <int form>
__global__ void kernel_side(unsigned phases, unsigned* to_host, unsigned* from_host, unsigned* count) {
  for (unsigned k = 1; k <= phases; ++k) {
    if (form == 3) {
      sys_ref(*count).fetch_add(1, cuda::std::memory_order_acq_rel);
      while (sys_ref(*count).load(cuda::std::memory_order_acquire) < 2 * k) {
      }
      continue;
    }
    if (form == 2) {
      // One kernel-side participant: its arrival completes the kernel's share.
      if (dev_ref(*count).fetch_add(1, cuda::std::memory_order_acq_rel) + 1 == k)
        sys_ref(*to_host).store(k, cuda::std::memory_order_release);
    } else {
      sys_ref(*to_host).store(k, cuda::std::memory_order_release);
    }
    while (sys_ref(*from_host).load(cuda::std::memory_order_acquire) < k) {
    }
  }
}

// Microseconds per phase of the `phases` after the first `warm`.
double run(int form, unsigned warm, unsigned phases, unsigned* to_host, unsigned* from_host, unsigned* kernel_count,
           unsigned* host_count) {
  const unsigned total = warm + phases;
  *to_host = 0;
  *from_host = 0;
  if (form == 2) {
    cudaMemset(kernel_count, 0, sizeof(unsigned));
  } else if (form == 3) {
    *kernel_count = 0;
  }
  *host_count = 0;
  cudaDeviceSynchronize();
  auto start = std::chrono::steady_clock::now();
  switch (form) {
    case 0:
    case 1: kernel_side<0><<<1, 1>>>(total, to_host, from_host, kernel_count); break;
    case 2: kernel_side<2><<<1, 1>>>(total, to_host, from_host, kernel_count); break;
    default: kernel_side<3><<<1, 1>>>(total, to_host, from_host, kernel_count); break;
  }
  auto* host_flag = reinterpret_cast<std::atomic<unsigned>*>(from_host);
  auto* kernel_flag = reinterpret_cast<std::atomic<unsigned>*>(to_host);
  for (unsigned k = 1; k <= total; ++k) {
    if (k == warm + 1) start = std::chrono::steady_clock::now();
    if (form == 3) {
      auto* shared = reinterpret_cast<std::atomic<unsigned>*>(kernel_count);
      shared->fetch_add(1, std::memory_order_acq_rel);
      while (shared->load(std::memory_order_acquire) < 2 * k) {
      }
      continue;
    }
    if (form == 2) {
      auto* mine = reinterpret_cast<std::atomic<unsigned>*>(host_count);
      if (mine->fetch_add(1, std::memory_order_acq_rel) + 1 == k) host_flag->store(k, std::memory_order_release);
    } else {
      host_flag->store(k, std::memory_order_release);
    }
    while (kernel_flag->load(std::memory_order_acquire) < k) {
    }
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  if (form == 3 && *kernel_count != 2 * total) return -2;
  return us / phases;
}

}  // namespace

int main() {
  int native = 0, managed = 0;
  if (cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0) != cudaSuccess) {
    std::printf("no CUDA device\n");
    return 2;
  }
  cudaDeviceGetAttribute(&managed, cudaDevAttrConcurrentManagedAccess, 0);
  std::printf("hostNativeAtomicSupported %d, concurrentManagedAccess %d\n", native, managed);
  // The shared counter gets its own managed allocation (own pages), apart from the flags.
  unsigned *m_flags = nullptr, *m_count = nullptr, *p_flags = nullptr, *d_count = nullptr;
  if (cudaMallocManaged(&m_flags, 256) != cudaSuccess || cudaMallocManaged(&m_count, 256) != cudaSuccess ||
      cudaHostAlloc(&p_flags, 256, cudaHostAllocMapped) != cudaSuccess || cudaMalloc(&d_count, 256) != cudaSuccess) {
    std::printf("allocation failed\n");
    return 2;
  }
  // Each flag on its own 64-byte line.
  const char* names[] = {"managed flags", "pinned flags", "split counters", "shared atomics"};
  const unsigned warm = 200, phases = 2000;
  int failures = 0;
  std::printf("%-16s %12s   (us per phase, median of 5 runs of %u phases after %u untimed)\n", "form", "phase", phases,
              warm);
  for (int form = 0; form < 4; ++form) {
    unsigned* base = form == 0 || form == 3 ? m_flags : p_flags;
    unsigned* to_host = base;
    unsigned* from_host = base + 16;
    unsigned* host_count = base + 32;
    unsigned* kernel_count = form == 2 ? d_count : form == 3 ? m_count : base + 48;
    std::vector<double> samples;
    for (int rep = 0; rep < 5; ++rep)
      samples.push_back(run(form, warm, phases, to_host, from_host, kernel_count, host_count));
    std::sort(samples.begin(), samples.end());
    if (samples.front() < 0) {
      std::printf("%-16s %12s\n", names[form], samples.front() == -2 ? "WRONG COUNT" : "FAILED");
      ++failures;
      continue;
    }
    std::printf("%-16s %12.2f\n", names[form], samples[2]);
  }
  return failures == 0 ? 0 : 1;
}
