// Transaction counts: barrier_arrive_tx, barrier_expect_tx and memcpy_async_tx.
#include "common.hpp"

using block_barrier = xb::barrier<xb::thread_scope_block>;

// Bulk copies of `bytes` into dynamic shared memory, issued in `pieces` by as many threads,
// with the whole size expected by thread 0's barrier_arrive_tx. Round r copies from src
// shifted by r*16 bytes; after the phase every thread checks its share against global memory.
XB_KERNEL void xbc_copy_tx(const unsigned* src, unsigned long long* report, unsigned bytes, unsigned pieces, unsigned rounds) {
  __shared__ block_barrier bar;
  unsigned* smem = xb::dynamic_shared<unsigned>();
  const unsigned n = xbc::block_threads(), t = threadIdx.x, words = bytes / 4;
  if (t == 0) init(&bar, n);
  __syncthreads();
  const unsigned piece = bytes / 16 / pieces * 16;  // whole 16-byte units; the last piece takes the rest
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned* from = src + r * 4;
    xb::arrival_token token = t == 0 ? xb::device::barrier_arrive_tx(bar, 1, bytes) : bar.arrive();
    if (t < pieces) {
      const unsigned begin = t * piece, size = t + 1 == pieces ? bytes - begin : piece;
      xb::device::memcpy_async_tx(smem + begin / 4, from + begin / 4, xb::aligned_size_t<16>(size), bar);
    }
    bar.wait(static_cast<xb::arrival_token&&>(token));
    for (unsigned w = t; w < words; w += n) xbc::expect_eq(report, r * 1000000ull + w, smem[w], from[w]);
    bar.arrive_and_wait();
  }
}

// expect_tx from a thread other than the copier: thread 0 expects, thread 1 copies; either
// may reach the barrier first, so the copy may land before its expect_tx.
XB_KERNEL void xbc_expect_other(const unsigned* src, unsigned long long* report, unsigned bytes, unsigned rounds) {
  __shared__ block_barrier bar;
  unsigned* smem = xb::dynamic_shared<unsigned>();
  const unsigned n = xbc::block_threads(), t = threadIdx.x, words = bytes / 4;
  if (t == 0) init(&bar, n);
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned* from = src + (r % 8) * 4;
    if (t == 0) xb::device::barrier_expect_tx(bar, bytes);
    if (t == 1) xb::device::memcpy_async_tx(smem, from, xb::aligned_size_t<16>(bytes), bar);
    bar.arrive_and_wait();
    for (unsigned w = t; w < words; w += n) xbc::expect_eq(report, r * 1000000ull + w, smem[w], from[w]);
    bar.arrive_and_wait();
  }
}

// The edge cases of docs/mbarrier-semantics.md, one thread, each on a fresh barrier;
// seen[i] records try_wait_parity after each step (the host compares with the H200's table).
// "copy16" is a copy whose bytes complete on the barrier at a known point (a synchronous copy,
// then complete_tx, as the ground truth measured it): an asynchronous bulk copy could land
// after the next step, which would make the observations timing-dependent.
XB_KERNEL void xbc_tx_sequences(const unsigned* src, unsigned long long* seen) {
  __shared__ block_barrier bars[9];
  __shared__ __attribute__((aligned(16))) unsigned buf[4];
  if (threadIdx.x != 0) return;
  block_barrier* bar = nullptr;
  auto copy16 = [&] {
    for (int i = 0; i < 4; ++i) buf[i] = src[i];
    xb::detail::complete_tx(*bar, 16);
  };
  using xb::device::barrier_arrive_tx;
  using xb::device::barrier_expect_tx;
  // P1: all arrivals in with tx -16 is not complete; expect_tx alone then completes it.
  bar = &bars[0];
  init(bar, 2);
  copy16();
  (void)bar->arrive(2);
  seen[0] = bar->try_wait_parity(false);
  barrier_expect_tx(*bar, 16);
  seen[1] = bar->try_wait_parity(false);
  // P2: tx balanced but an arrival pending: not complete until it arrives.
  bar = &bars[1];
  init(bar, 2);
  (void)bar->arrive(1);
  copy16();
  barrier_expect_tx(*bar, 16);
  seen[2] = bar->try_wait_parity(false);
  (void)bar->arrive(1);
  seen[3] = bar->try_wait_parity(false);
  // P3: the copy lands first, arrive_tx then completes.
  bar = &bars[2];
  init(bar, 1);
  copy16();
  (void)barrier_arrive_tx(*bar, 1, 16);
  seen[4] = bar->try_wait_parity(false);
  // P6: arrive_tx(16) then two completions of 8.
  bar = &bars[3];
  init(bar, 1);
  (void)barrier_arrive_tx(*bar, 1, 16);
  xb::detail::complete_tx(*bar, 8);
  seen[5] = bar->try_wait_parity(false);
  xb::detail::complete_tx(*bar, 8);
  seen[6] = bar->try_wait_parity(false);
  // P7: arrive_tx with tx 0 is a plain arrive.
  bar = &bars[4];
  init(bar, 1);
  (void)barrier_arrive_tx(*bar, 1, 0);
  seen[7] = bar->try_wait_parity(false);
  // P8: expect, complete, then both arrivals at once.
  bar = &bars[5];
  init(bar, 2);
  barrier_expect_tx(*bar, 16);
  copy16();
  (void)bar->arrive(2);
  seen[8] = bar->try_wait_parity(false);
  // P9: tx of phase 1 does not complete phase 1 without its arrival.
  bar = &bars[6];
  init(bar, 1);
  (void)bar->arrive();
  seen[9] = bar->try_wait_parity(false);
  bar->wait_parity(false);  // done already; synccheck wants the wait before the next arrival
  copy16();
  seen[10] = bar->try_wait_parity(true);
  barrier_expect_tx(*bar, 16);
  seen[11] = bar->try_wait_parity(true);
  (void)bar->arrive();
  seen[12] = bar->try_wait_parity(true);
  // P16: arrive_and_drop lowers the expected count of later phases.
  bar = &bars[7];
  init(bar, 2);
  (void)bar->arrive(1);
  bar->arrive_and_drop();
  seen[13] = bar->try_wait_parity(false);
  bar->wait_parity(false);
  (void)bar->arrive(1);
  seen[14] = bar->try_wait_parity(true);
  bar->wait_parity(true);
  (void)bar->arrive(1);
  seen[15] = bar->try_wait_parity(false);
  // P13: the largest count, in one arrival.
  bar = &bars[8];
  init(bar, (1 << 20) - 1);
  (void)bar->arrive((1 << 20) - 1);
  seen[16] = bar->try_wait_parity(false);
  seen[17] = buf[3] == src[3] ? 1 : 2;  // reached the end, with the copied bytes in place
}

namespace xbc {
// Thread 0 arrives on a barrier of 2 and runs before(bar, token), while the phase cannot
// complete (thread 1 has not arrived); then lets thread 1 arrive and runs
// after(bar, parity), where it can.
template <class Before, class After>
XB_INLINE void timed_waits(Before before, After after) {
  __shared__ block_barrier bar, handoff;
  const unsigned t = threadIdx.x;
  if (t == 0) {
    init(&bar, 2);
    init(&handoff, 2);
  }
  __syncthreads();
  if (t == 0) {
    xb::arrival_token token = bar.arrive();
    const bool parity = token.parity();
    before(bar, static_cast<xb::arrival_token&&>(token));
    handoff.arrive_and_wait();  // let thread 1 arrive only now
    after(bar, parity);
  } else if (t == 1) {
    handoff.arrive_and_wait();
    bar.arrive_and_wait();
  }
}
}  // namespace xbc

// try_wait_for times out when nothing progresses, and succeeds once the phase completes.
XB_KERNEL void xbc_try_wait_for(unsigned long long* seen, unsigned long long timeout_ns) {
  xbc::timed_waits(
      [&](block_barrier& bar, xb::arrival_token&& token) {
        const uint64_t start = xb::clock_ns();
        seen[0] = bar.try_wait_for(static_cast<xb::arrival_token&&>(token), xb::nanoseconds(int64_t(timeout_ns)));
        seen[1] = xb::clock_ns() - start;
      },
      [&](block_barrier& bar, bool parity) {
        seen[2] = bar.try_wait_parity_for(parity, xb::nanoseconds(int64_t(60) * 1000000000));
      });
}

// try_wait_until and try_wait_parity_until: the same, with deadlines on xb::clock_ns().
XB_KERNEL void xbc_try_wait_until(unsigned long long* seen, unsigned long long timeout_ns) {
  xbc::timed_waits(
      [&](block_barrier& bar, xb::arrival_token&& token) {
        const bool parity = token.parity();
        const uint64_t deadline = xb::clock_ns() + timeout_ns;
        seen[0] = bar.try_wait_until(static_cast<xb::arrival_token&&>(token), xb::time_point(deadline));
        const uint64_t now = xb::clock_ns();
        seen[1] = now >= deadline ? 1 : 0;
        // A deadline already passed: one test, false while the phase cannot complete.
        seen[2] = bar.try_wait_parity_until(parity, xb::time_point(now - 1));
      },
      [&](block_barrier& bar, bool parity) {
        seen[3] = bar.try_wait_parity_until(parity, xb::time_point(xb::clock_ns() + uint64_t(60) * 1000000000));
      });
}

// xb::memcpy_async (cuda::memcpy_async): one thread's copy, and a group's copy split over
// the block, into shared memory; rounds 2 and 3 promise 16-byte alignment (aligned_size_t<16>,
// a bulk copy on the native path when the destination is shared), and round 3 copies into
// global memory (`gdst`, `words` per block), which the copy engine path must not take.
XB_KERNEL void xbc_memcpy_async(const unsigned* src, unsigned long long* report, unsigned words, unsigned rounds,
                                unsigned* gdst) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  unsigned* smem = xb::dynamic_shared<unsigned>();
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) init(&bar, n);
  __syncthreads();
  const auto block = xb::this_thread_block();
  const bool aligned = words % 4 == 0;
  unsigned* global_out = gdst + blockIdx.x * words;
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned kind = r % 4;
    const bool promise = aligned && kind >= 2;
    const unsigned* from = promise ? src : src + r;
    unsigned* to = promise && kind == 3 ? global_out : smem;
    const size_t bytes = words * sizeof(unsigned);
    if (kind == 0 || (kind == 2 && !promise)) {
      if (t == 0) xb::memcpy_async(to, from, bytes, bar);
    } else if (!promise) {
      xb::memcpy_async(block, to, from, bytes, bar);
    } else if (kind == 2) {
      if (t == 0) xb::memcpy_async(to, from, xb::aligned_size_t<16>(bytes), bar);
    } else {
      xb::memcpy_async(block, to, from, xb::aligned_size_t<16>(bytes), bar);
    }
    bar.arrive_and_wait();
    for (unsigned w = t; w < words; w += n) xbc::expect_eq(report, r * 1000000ull + w, to[w], from[w]);
    bar.arrive_and_wait();
  }
}

// A completion function reads what a bulk copy brought: the phase ends when the bytes
// land, after every arrival, so on the native path no arrival sees it end and a waiter runs
// the step. Waiters use wait, a try_wait loop and a try_wait_for loop (a test that sees the
// phase end must run the step too). Every waiter then checks the step's sum against global
// memory and the step count.
struct sum_stage {
  const unsigned* stage;
  unsigned words;
  unsigned* sums;
  unsigned* count;
  XB_INLINE void operator()() noexcept {
    unsigned s = 0;
    for (unsigned i = 0; i < words; ++i) s += stage[i];
    sums[*count & 1] = s;
    ++*count;
  }
};

using completion_barrier = xb::barrier<xb::thread_scope_block, sum_stage>;

// xbc_completion_tx's rounds, on the kernel's shared barrier and step results. Thread t waits
// the way t % 3 picks: 0 wait, 1 a loop on try_wait, 2 a loop on try_wait_for.
XB_INLINE void completion_tx(completion_barrier& bar, unsigned (&sums)[2], unsigned& count, const unsigned* src,
                             unsigned long long* report, unsigned words, unsigned rounds) {
  unsigned* stage = xb::dynamic_shared<unsigned>();
  const unsigned n = xbc::block_threads(), t = threadIdx.x, bytes = words * 4;
  if (t == 0) {
    count = 0;
    init(&bar, n, sum_stage{stage, words, sums, &count});
  }
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned* from = src + r * 4;
    xb::arrival_token token = t == 0 ? xb::device::barrier_arrive_tx(bar, 1, bytes) : bar.arrive();
    if (t == 0) xb::device::memcpy_async_tx(stage, from, xb::aligned_size_t<16>(bytes), bar);
    const unsigned kind = t % 3;
    if (kind == 0) {
      bar.wait(static_cast<xb::arrival_token&&>(token));
    } else if (kind == 1) {
      while (!bar.try_wait(static_cast<xb::arrival_token&&>(token))) {
        xb::detail::platform::relax();
      }
    } else {
      while (!bar.try_wait_for(static_cast<xb::arrival_token&&>(token), xb::nanoseconds(1000))) {
      }
    }
    xbc::expect_eq(report, r, count, r + 1);
    unsigned want = 0;
    for (unsigned i = 0; i < words; ++i) want += from[i];
    xbc::expect_eq(report, 1000000 + r, sums[r & 1], want);
  }
}

XB_KERNEL void xbc_completion_tx(const unsigned* src, unsigned long long* report, unsigned words, unsigned rounds) {
  __shared__ completion_barrier bar;
  __shared__ unsigned sums[2], count;
  completion_tx(bar, sums, count, src, report, words, rounds);
}

// __shared__ variables declared in device functions, as CUDA allows: a template and an inline
// function each hold a block barrier with a tx copy and a mark. Each block must get its own
// (the mark reads back its block's value), and they must be shared memory (checked builds
// accept the tx operations on the barrier and the copy into the tile).
namespace xbc {
template <unsigned K>
XB_INLINE unsigned shared_in_template(const unsigned* src) {
  __shared__ block_barrier bar;
  __shared__ __attribute__((aligned(16))) unsigned tile[4];
  __shared__ unsigned mark;
  const unsigned t = threadIdx.x;
  if (t == 0) {
    init(&bar, block_threads());
    mark = blockIdx.x + K;
  }
  __syncthreads();
  // The expect before thread 0's own arrival: the phase cannot end without the bytes (after
  // it, the other threads' arrivals could have ended the phase with tx 0 already).
  if (t == 0) xb::device::barrier_expect_tx(bar, 16);
  xb::arrival_token token = bar.arrive();
  if (t == 0) xb::device::memcpy_async_tx(tile, src, xb::aligned_size_t<16>(16), bar);
  bar.wait(static_cast<xb::arrival_token&&>(token));
  const unsigned seen = tile[blockIdx.x % 4] + mark;
  __syncthreads();  // everyone has read before the next use of the block's variables
  return seen;
}
XB_INLINE unsigned shared_in_inline(const unsigned* src) {
  __shared__ block_barrier bar;
  __shared__ __attribute__((aligned(16))) unsigned tile[4];
  __shared__ unsigned mark;
  const unsigned t = threadIdx.x;
  if (t == 0) {
    init(&bar, block_threads());
    mark = blockIdx.x + 2;
  }
  __syncthreads();
  xb::arrival_token token = t == 0 ? xb::device::barrier_arrive_tx(bar, 1, 16) : bar.arrive();
  if (t == 0) xb::device::memcpy_async_tx(tile, src, xb::aligned_size_t<16>(16), bar);
  bar.wait(static_cast<xb::arrival_token&&>(token));
  const unsigned seen = tile[blockIdx.x % 4] + mark;
  __syncthreads();
  return seen;
}
}  // namespace xbc

// out[2 * block + k]: what helper k (0 the template, 1 the inline function) saw.
XB_KERNEL void xbc_shared_in_helpers(const unsigned* src, unsigned* out) {
  const unsigned a = xbc::shared_in_template<1>(src);
  const unsigned b = xbc::shared_in_inline(src);
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = a;
    out[2 * blockIdx.x + 1] = b;
  }
}
