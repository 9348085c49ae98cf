// Message-passing kernels for the memory-model lowering tests (lowering/src/memory_model.rs):
// each thread stores data, synchronizes through one barrier operation, then loads data
// another thread stored. On a GPU the barrier is only correct if the compiled code makes
// each data store visible before the atomic that releases it and drops stale cached data
// after the atomic or poll that acquires it, at the barrier's scope, on every path.
//
// The data is 32-bit (`unsigned`); the barrier word is the only 64-bit location, which is
// how the tests tell the barrier's own accesses from the data's. A block-scope barrier
// lives in dynamic shared memory (LDS), assumed initialized by the caller; a device- or
// system-scope barrier is a kernel argument in global memory.
#include <xbarrier/barrier.hpp>

using block_barrier = xb::barrier<xb::thread_scope_block>;

XB_INLINE block_barrier& shared_barrier() { return *xb::dynamic_shared<block_barrier>(); }
XB_INLINE unsigned next_thread(unsigned n) { return (threadIdx.x + 1) % n; }

// Global data through a block-scope barrier, one kernel per synchronizing operation.
XB_KERNEL void xbmm_arrive_wait(unsigned* data, unsigned* out, unsigned n) {
  data[threadIdx.x] = threadIdx.x + 1;
  block_barrier& bar = shared_barrier();
  bar.wait(bar.arrive());
  out[threadIdx.x] = data[next_thread(n)];
}

XB_KERNEL void xbmm_arrive_and_wait(unsigned* data, unsigned* out, unsigned n) {
  data[threadIdx.x] = threadIdx.x + 1;
  shared_barrier().arrive_and_wait();
  out[threadIdx.x] = data[next_thread(n)];
}

XB_KERNEL void xbmm_wait_parity(unsigned* data, unsigned* out, unsigned n) {
  data[threadIdx.x] = threadIdx.x + 1;
  block_barrier& bar = shared_barrier();
  const bool parity = bar.arrive().parity();
  bar.wait_parity(parity);
  out[threadIdx.x] = data[next_thread(n)];
}

XB_KERNEL void xbmm_try_wait(unsigned* data, unsigned* out, unsigned n) {
  data[threadIdx.x] = threadIdx.x + 1;
  block_barrier& bar = shared_barrier();
  const xb::arrival_token token = bar.arrive();
  while (!bar.try_wait(xb::arrival_token(token))) {
  }
  out[threadIdx.x] = data[next_thread(n)];
}

XB_KERNEL void xbmm_try_wait_for(unsigned* data, unsigned* out, unsigned n) {
  data[threadIdx.x] = threadIdx.x + 1;
  block_barrier& bar = shared_barrier();
  const xb::arrival_token token = bar.arrive();
  while (!bar.try_wait_for(xb::arrival_token(token), xb::nanoseconds(1000))) {
  }
  out[threadIdx.x] = data[next_thread(n)];
}

// Thread 0 leaves the barrier; its store must still be released by the drop. The waits
// come after both branches: a lane of an AMD wave that waited inside its branch would wait
// for a drop its own wave runs only after that branch.
XB_KERNEL void xbmm_arrive_and_drop(unsigned* data, unsigned* out, unsigned n) {
  data[threadIdx.x] = threadIdx.x + 1;
  block_barrier& bar = shared_barrier();
  xb::arrival_token token;
  if (threadIdx.x == 0) bar.arrive_and_drop();
  else token = bar.arrive();
  if (threadIdx.x != 0) {
    bar.wait(static_cast<xb::arrival_token&&>(token));
    out[threadIdx.x] = data[next_thread(n)];
  }
}

XB_KERNEL void xbmm_arrive_tx(unsigned* data, unsigned* out, unsigned n, unsigned bytes) {
  data[threadIdx.x] = threadIdx.x + 1;
  block_barrier& bar = shared_barrier();
  bar.wait(xb::device::barrier_arrive_tx(bar, 1, threadIdx.x == 0 ? bytes : 0));
  out[threadIdx.x] = data[next_thread(n)];
}

// Thread 0 expects the bytes and completes them (as a copy's completion would).
XB_KERNEL void xbmm_expect_complete_tx(unsigned* data, unsigned* out, unsigned n, unsigned bytes) {
  data[threadIdx.x] = threadIdx.x + 1;
  block_barrier& bar = shared_barrier();
  if (threadIdx.x == 0) {
    xb::device::barrier_expect_tx(bar, bytes);
    xb::detail::complete_tx(bar, bytes);
  }
  bar.arrive_and_wait();
  out[threadIdx.x] = data[next_thread(n)];
}

// The completion function reads every thread's data and publishes a result all read. Its
// data are module globals: pointers kept in the barrier's LDS would be 64-bit LDS loads.
extern "C" {
__device__ unsigned xbmm_step_data[1024];
__device__ unsigned xbmm_step_result;
}
struct sum_step {
  unsigned n;
  XB_INLINE void operator()() noexcept {
    unsigned s = 0;
    for (unsigned i = 0; i < n; ++i) s += xbmm_step_data[i];
    xbmm_step_result = s;
  }
};
XB_KERNEL void xbmm_completion(unsigned* out, unsigned n) {
  xbmm_step_data[threadIdx.x] = threadIdx.x + 1;
  (*xb::dynamic_shared<xb::barrier<xb::thread_scope_block, sum_step>>()).arrive_and_wait();
  out[threadIdx.x] = xbmm_step_result + xbmm_step_data[next_thread(n)];
}

// LDS data through a block-scope barrier: ordered by LDS's own order within a wave, so no
// cache operation is needed, but the compiler must keep the accesses on their side.
XB_KERNEL void xbmm_lds_arrive_and_wait(unsigned* out, unsigned n) {
  unsigned* lds = xb::dynamic_shared<unsigned>() + 4;  // after the 8-byte barrier, 16-byte aligned
  lds[threadIdx.x] = threadIdx.x + 1;
  shared_barrier().arrive_and_wait();
  out[threadIdx.x] = lds[next_thread(n)];
}

// memcpy_async_tx: the copy's LDS stores are released by its complete_tx; the waiters read them.
XB_KERNEL void xbmm_memcpy_async_tx(const unsigned* src, unsigned* out, unsigned n) {
  unsigned* lds = xb::dynamic_shared<unsigned>() + 4;
  block_barrier& bar = shared_barrier();
  xb::arrival_token token;
  if (threadIdx.x == 0) {
    xb::device::memcpy_async_tx(lds, src, xb::aligned_size_t<16>(n * sizeof(unsigned)), bar);
    token = xb::device::barrier_arrive_tx(bar, 1, n * sizeof(unsigned));
  } else {
    token = bar.arrive();
  }
  bar.wait(static_cast<xb::arrival_token&&>(token));
  out[threadIdx.x] = lds[next_thread(n)];
}

// Device- and system-scope barriers in global memory (grid-wide handovers).
XB_KERNEL void xbmm_device_arrive_and_wait(xb::barrier<xb::thread_scope_device>* bar, unsigned* data, unsigned* out,
                                           unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  data[i] = i + 1;
  bar->arrive_and_wait();
  out[i] = data[(i + 1) % n];
}

XB_KERNEL void xbmm_device_arrive_wait(xb::barrier<xb::thread_scope_device>* bar, unsigned* data, unsigned* out,
                                       unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  data[i] = i + 1;
  bar->wait(bar->arrive());
  out[i] = data[(i + 1) % n];
}

XB_KERNEL void xbmm_system_arrive_and_wait(xb::barrier<xb::thread_scope_system>* bar, unsigned* data, unsigned* out,
                                           unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  data[i] = i + 1;
  bar->arrive_and_wait();
  out[i] = data[(i + 1) % n];
}
