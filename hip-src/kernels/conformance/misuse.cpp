// One kernel per misuse that checked builds must report (and CUDA leaves undefined or traps
// on: docs/mbarrier-semantics.md, P5, P10-P15). Thread `ft` of block `fb` commits it, so the
// host can check that the fault names the right block and thread. A tx function on a barrier
// of another scope than the block's is no run-time misuse: it does not compile.
#include "common.hpp"

using block_barrier = xb::barrier<xb::thread_scope_block>;

XB_INLINE bool culprit(unsigned fb, unsigned ft) { return blockIdx.x == fb && threadIdx.x == ft; }

XB_KERNEL void xbm_init_zero(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) init(&bar, 0);
}

XB_KERNEL void xbm_init_too_many(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) init(&bar, block_barrier::max() + 1);  // P14
}

// A block-scope barrier with a completion function holds one count less (its gate).
struct no_op {
  XB_INLINE void operator()() noexcept {}
};
XB_KERNEL void xbm_init_completion_too_many(unsigned fb, unsigned ft) {
  __shared__ xb::barrier<xb::thread_scope_block, no_op> bar;
  if (culprit(fb, ft)) init(&bar, xb::barrier<xb::thread_scope_block, no_op>::max() + 1, no_op{});
}

XB_KERNEL void xbm_arrive_zero(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    (void)bar.arrive(0);
  }
}

XB_KERNEL void xbm_over_arrival(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    (void)bar.arrive(3);  // P5
  }
}

XB_KERNEL void xbm_arrive_while_tx_pending(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 2);
    (void)xb::device::barrier_arrive_tx(bar, 1, 16);
    (void)bar.arrive(1);  // all arrivals in, tx 16 outstanding
    (void)bar.arrive(1);  // P12: one arrival too many
  }
}

XB_KERNEL void xbm_arrive_tx_too_large(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    (void)xb::device::barrier_arrive_tx(bar, 1, 1 << 20);  // P10
  }
}

XB_KERNEL void xbm_expect_tx_too_large(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::device::barrier_expect_tx(bar, 1 << 20);
  }
}

XB_KERNEL void xbm_tx_count_overflow(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::device::barrier_expect_tx(bar, (1 << 20) - 1);
    xb::device::barrier_expect_tx(bar, 1);  // P11: the hardware gives no signal at all
  }
}

XB_KERNEL void xbm_tx_count_underflow(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::detail::complete_tx(bar, (1 << 20) - 1);
    xb::detail::complete_tx(bar, 1);  // P15
  }
}

XB_KERNEL void xbm_tx_on_global_memory(block_barrier* bar, unsigned fb, unsigned ft) {
  if (culprit(fb, ft)) {
    init(bar, 1);
    xb::device::barrier_expect_tx(*bar, 16);
  }
}

XB_KERNEL void xbm_copy_misaligned(const unsigned* src, unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  __shared__ __attribute__((aligned(16))) unsigned buf[16];
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::device::memcpy_async_tx(buf, src, xb::aligned_size_t<16>(24), bar);
  }
}

// A promise of 32-byte alignment that the destination, 16 bytes into a 32-byte line,
// breaks: enough for the copy itself, but checked builds hold the caller to its promise.
XB_KERNEL void xbm_copy_breaks_promise(const unsigned* src, unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  __shared__ __attribute__((aligned(32))) unsigned buf[32];
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::device::memcpy_async_tx(buf + 4, src, xb::aligned_size_t<32>(64), bar);
  }
}

// memcpy_async_tx reads global memory: a source in shared memory is reported.
XB_KERNEL void xbm_copy_from_shared(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  __shared__ __attribute__((aligned(16))) unsigned buf[16], other[16];
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::device::memcpy_async_tx(buf, other, xb::aligned_size_t<16>(64), bar);
  }
}

// xb::memcpy_async promising 8-byte alignment with a source 2 bytes off.
XB_KERNEL void xbm_memcpy_async_breaks_promise(const unsigned* src, unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  __shared__ __attribute__((aligned(16))) unsigned buf[16];
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::memcpy_async(buf, reinterpret_cast<const char*>(src) + 2, xb::aligned_size_t<8>(16), bar);
  }
}

// xb::memcpy_async with overlapping source and destination.
XB_KERNEL void xbm_memcpy_async_overlap(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  __shared__ unsigned buf[32];
  if (culprit(fb, ft)) {
    init(&bar, 1);
    xb::memcpy_async(buf, buf + 4, 64, bar);
  }
}

XB_KERNEL void xbm_drop_when_empty(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    bar.arrive_and_drop();  // the only participant leaves
    bar.arrive_and_drop();  // and tries to leave again
  }
}

// Every thread waits for one arrival more than the block has: a deadlock, which checked
// builds turn into a fault with the barrier's state once the wait bound passes. All threads
// have arrived before anyone waits, so the state is exactly "1 pending".
// A token two phases old: with an expected count of 1 each arrival completes a phase, so the
// barrier is at phase 2 when the token of phase 0 is waited on. Its parity is the phase in
// progress, so the hardware would wait for phase 2 to end; checked builds report it at once.
XB_KERNEL void xbm_stale_token_wait(unsigned fb, unsigned ft) {
  __shared__ block_barrier bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    auto t0 = bar.arrive();
    (void)bar.arrive();
    bar.wait(static_cast<xb::arrival_token&&>(t0));
  }
}

// The same through try_wait, with a completion function (on sm_90 checked builds the engine
// that runs it), and the token from barrier_arrive_tx.
XB_KERNEL void xbm_stale_token_try_wait(unsigned fb, unsigned ft) {
  __shared__ xb::barrier<xb::thread_scope_block, no_op> bar;
  if (culprit(fb, ft)) {
    init(&bar, 1, no_op{});
    auto t0 = xb::device::barrier_arrive_tx(bar, 1, 0);
    (void)bar.arrive();
    (void)bar.try_wait(static_cast<xb::arrival_token&&>(t0));
  }
}

// Device scope (the wide layout), three phases on, through try_wait_for.
XB_KERNEL void xbm_stale_token_try_wait_for(unsigned fb, unsigned ft) {
  __shared__ xb::barrier<xb::thread_scope_device> bar;
  if (culprit(fb, ft)) {
    init(&bar, 1);
    auto t0 = bar.arrive();
    (void)bar.arrive();
    (void)bar.arrive();
    (void)bar.try_wait_for(static_cast<xb::arrival_token&&>(t0), xb::nanoseconds(1000));
  }
}

XB_KERNEL void xbm_deadlock() {
  __shared__ block_barrier bar;
  if (threadIdx.x == 0) init(&bar, xbc::block_threads() + 1);
  __syncthreads();
  auto token = bar.arrive();
  __syncthreads();
  bar.wait(static_cast<xb::arrival_token&&>(token));
}

#if defined(XB_PLATFORM_HOST)
// Host only: a C++ exception escaping a kernel must end the launch with an error, not unwind
// into the backend's Rust frames.
XB_KERNEL void xbh_throws(unsigned fb, unsigned ft) {
  if (culprit(fb, ft)) throw 42;
  __syncthreads();  // the others must not wait for the thread that threw
}
#endif
