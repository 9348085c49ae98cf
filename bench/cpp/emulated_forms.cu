// bench/cpp/emulated_forms.cu - where the emulated round trip's cycles go: the portable
// protocol on a __shared__ word (xb's emulated variant) beside CCCL's software barrier and
// software barriers stripped to parts of the protocol, one block per SM as in `xbar bench`.
// Not part of the cargo build: a standalone program for sm_90 (CI compiles it; it needs a
// GPU to run).
//
// Forms (every one is `iters` x arrive-and-wait of every thread of the block):
//   xb            xb::barrier, emulated (the direct block layout, lane by lane, each phase
//                 armed by its first arrival)
//   claimed       the claimed block layout's arrive_and_wait on a raw word (lane by lane):
//                 a claim, then a publish, as barriers with a completion function take
//   cccl fn       CCCL cuda::barrier with a completion function (its software barrier)
//   counter       one 64-bit counter that only grows: a warp's lanes each fetch_add (ptxas
//                 combines them), acquire polls of the same word until it reaches the target
//   two-rmw       the protocol's skeleton: a warp leader's acq_rel fetch_add counts the
//                 warp, the one that fills the count publishes with a second fetch_add
//                 (flips the top bit, takes the count back), waiters spin on the top bit
//   two-rmw lanes the same with every lane's own fetch_add (ptxas combines them)
//   two-rmw flag  the skeleton with the publish on a second word: the completer stores the
//                 reset count, then a release store of the parity on a 32-bit word the
//                 waiters poll (CCCL's shape)
//   two-rmw 32    the skeleton on the 32-bit high half (native shared 32-bit atomics)
//   two-rmw wait  the skeleton with the protocol's back-off in its wait loop (64 polls, then
//                 sleeps)
//   two-rmw match the skeleton after the lane groups' agreement test (two __match_all_sync)
//   xb grouped    the direct block layout's arrive_and_wait on a raw word with lane groups
//                 (the grouped variant, AMD's code path): what the lane groups cost or save
//   claimed grouped
//                 the claimed layout's, with lane groups
//   flag lanes    a skeleton of a claimed layout that publishes on a second word: lane by
//                 lane, the completer runs the step, release-stores the parity on a flag the
//                 waiters poll, then takes the count back with an RMW off their path
//   claimed flag  the claimed layout's arrival (lane by lane) with a completion step that
//                 publishes the phase on a second word, which waiters poll instead of the
//                 barrier word; the publish RMW follows off their path
//   claimed fn    the claimed layout's arrive_and_wait with a completion step that counts
//   claimed meet  claimed fn with the lanes that called together meeting (__syncwarp) after
//                 the arrival and any completion step, before any of them polls
//   xb meet       xb (the direct layout) lane by lane, meeting the same way
//   claimed flag b/o
//                 claimed flag, polling the flag with the protocol's back-off
//   step2 fn      two words: the count word carries into a 2-bit phase number, the completer
//                 runs the step, release-stores the phase number on a second word the
//                 waiters poll, then arms the count word (fn arm1st: arms, then adds to the
//                 phase word; no fn: without the step; fn b/o: with the protocol's back-off)
//   xb first arms the direct block layout's skeleton, each phase armed by its first arrival
//                 as xb arms it (two raw atomics, no lane tests)
//   claimed fn unawaited
//                 claimed fn whose completer does not wait for its publish's result: not a
//                 correct barrier (it cannot see a next phase completed during its step),
//                 a bound on what moving the publish off its path could save
//   step2 fn far u64
//                 step2 fn b/o with the phase word a 64-bit word 128 bytes from the count
//                 word, polled as the protocol polls
//   claimed fn cas
//                 claimed fn whose completer publishes with one shared-space compare-and-swap
//                 from the claimed state its own RMW made, the fetch_add only when that fails
//   claimed cas   the same without the completion step
//   direct fn     the direct block layout with a completion step, publishing on a second
//                 word: A carries into a 2-bit phase number, each phase is armed by its first
//                 arrival, the completer waits for the previous step's publish, runs the step
//                 and release-stores the publish word, which waiters poll (fn far: that word
//                 128 bytes away; no fn: without the step)
// Build and run from the repository root:
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include \
//        -o /tmp/emulated_forms bench/cpp/emulated_forms.cu
//   /tmp/emulated_forms   (cycles per round trip, per form and block size)
#include <cstdint>
#include <cstdio>

#define XB_EMULATED 1  // xb::barrier runs the portable protocol (config.hpp)

#include <cuda/atomic>
#include <cuda/barrier>
#include <xbarrier/barrier.hpp>

#include "probe_timing.hpp"

namespace {

using u64 = unsigned long long;
template <class T>
using block_ref = cuda::atomic_ref<T, cuda::thread_scope_block>;

struct count_steps {
  unsigned* steps;
  __device__ void operator()() noexcept { ++*steps; }
};

// The step of the "claimed flag" form: counts, then publishes the phase on a flag that
// waiters poll, before the protocol's publish RMW.
struct flag_step {
  unsigned* steps;
  unsigned* flag;
  __device__ void operator()() noexcept {
    ++*steps;
    cuda::atomic_ref<unsigned, cuda::thread_scope_block> f(*flag);
    f.store(f.load(cuda::std::memory_order_relaxed) ^ 1u, cuda::std::memory_order_release);
  }
};

using claimed = xb::detail::protocol<xb::detail::platform, xb::thread_scope_block>;
using direct = xb::detail::direct_protocol<xb::detail::platform, xb::thread_scope_block>;
constexpr u64 top = u64(1) << 63;
constexpr unsigned count_shift = 41;

__device__ __forceinline__ u64 load_acquire(u64* w) { return block_ref<u64>(*w).load(cuda::std::memory_order_acquire); }

// The skeleton's arrival for `n` lanes by one fetch_add; returns the word before it.
// Phase p's count starts at 2^22 - blockDim (in units of 2^41): it carries into bit 63 only
// through the publish, so the fill is tested on bits 41..62.
__device__ __forceinline__ bool fills(u64 old, u64 n, u64 expected) {
  return ((old >> count_shift) & ((u64(1) << 22) - 1)) + n == expected;
}

template <int form>
__global__ void rt(unsigned rounds, u64* cycles, unsigned* wrong) {
  __shared__ u64 word;
  __shared__ unsigned flag;
  __shared__ unsigned steps;
  __shared__ alignas(128) u64 far_flag;  // form 24: a 64-bit phase word 128 bytes from the rest
  __shared__ alignas(16) u64 pair[2];     // forms 27-29: the count word and its publish word
  __shared__ xb::barrier<xb::thread_scope_block> xbar;
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block, count_steps> cbar;
#pragma nv_diag_default static_var_with_dynamic_init
  const u64 expected = blockDim.x;
  if (threadIdx.x == 0) {
    word = 0;
    flag = 0;
    far_flag = 0;
    steps = 0;
    init(&xbar, blockDim.x);
    init(&cbar, blockDim.x, count_steps{&steps});
    if (form == 1) claimed::init(reinterpret_cast<uint64_t*>(&word), blockDim.x);
    if (form == 10) direct::init(reinterpret_cast<uint64_t*>(&word), blockDim.x);
    if (form == 11 || form == 13 || form == 14 || form == 15 || form == 17 || form == 23 || form == 25 || form == 26) claimed::init(reinterpret_cast<uint64_t*>(&word), blockDim.x);
    if (form == 16 || form == 22) direct::init(reinterpret_cast<uint64_t*>(&word), blockDim.x);
    pair[0] = (((u64(1) << 21) - expected) << 41) | (u64(1) << 40) | expected;
    pair[1] = 0;
    if (form == 28) word = pair[0];
    if ((form >= 18 && form <= 21) || form == 24) word = (((u64(1) << 21) - expected) << 41) | expected;
  }
  __syncthreads();
  u64 start = 0, target = 0;
  xb::empty_completion none;
  count_steps counted{&steps};
  flag_step flagged{&steps, &flag};
#pragma unroll 1
  for (unsigned r = 0; r < rounds; ++r) {
    probe::start_after_warm_up(r, rounds, start);
    if constexpr (form == 0) {
      xbar.arrive_and_wait();
    } else if constexpr (form == 10 || form == 11) {
      // As the protocol's arrive_and_wait forms the group where XB_GROUP_LANES is set.
      uint64_t* w = reinterpret_cast<uint64_t*>(&word);
      const xb::detail::cuda_platform::warp lanes{__activemask()};
      const bool agree = lanes.agree(w, 1);
      if (form == 10 && agree) direct::arrive_and_wait_as(lanes, w);
      else if (form == 10) direct::arrive_and_wait_as(xb::detail::single_lane(), w);
      else if (agree) claimed::arrive_and_wait_as(lanes, w, none);
      else claimed::arrive_and_wait_as(xb::detail::single_lane(), w, none);
    } else if constexpr (form == 1) {
      claimed::arrive_and_wait(reinterpret_cast<uint64_t*>(&word), none);
    } else if constexpr (form == 2) {
      cbar.arrive_and_wait();
    } else if constexpr (form == 3) {
      target += expected;
      block_ref<u64>(word).fetch_add(1, cuda::std::memory_order_release);
      while (int64_t(load_acquire(&word) - target) < 0) {}
    } else if constexpr (form == 4 || form == 5 || form == 8 || form == 9) {
      u64 old;
      u64 n;
      bool leader;
      const unsigned lanes = __activemask();
      bool agree = true;
      if (form == 9) {
        int same_a = 0, same_b = 0;
        (void)__match_all_sync(lanes, reinterpret_cast<u64>(&word), &same_a);
        (void)__match_all_sync(lanes, u64(1), &same_b);
        agree = same_a && same_b;
      }
      if (form != 5 && agree) {
        n = __popc(lanes);
        leader = (lanes & ((1u << (threadIdx.x & 31)) - 1)) == 0;
        __syncwarp(lanes);
        old = 0;
        if (leader) old = block_ref<u64>(word).fetch_add(n << count_shift, cuda::std::memory_order_acq_rel);
        __syncwarp(lanes);
        old = __shfl_sync(lanes, old, __ffs(lanes) - 1);
      } else {
        n = 1;
        leader = true;
        old = block_ref<u64>(word).fetch_add(u64(1) << count_shift, cuda::std::memory_order_acq_rel);
      }
      // The lane(s) whose arrival fills the count publish: flip bit 63, take the count back.
      if (fills(old, n, expected)) {
        if (leader) block_ref<u64>(word).fetch_add(top - (expected << count_shift), cuda::std::memory_order_acq_rel);
      } else if (form == 8) {
        uint32_t iteration = 0;
        while (((load_acquire(&word) ^ old) & top) == 0) xb::detail::platform::wait_backoff(iteration);
      } else {
        while (((load_acquire(&word) ^ old) & top) == 0) {}
      }
      if (form != 5) __syncwarp(lanes);
    } else if constexpr (form == 6) {
      const unsigned lanes = __activemask();
      const u64 n = __popc(lanes);
      const bool leader = (lanes & ((1u << (threadIdx.x & 31)) - 1)) == 0;
      const unsigned parity = r & 1;
      __syncwarp(lanes);
      u64 old = 0;
      if (leader) old = block_ref<u64>(word).fetch_add(n << count_shift, cuda::std::memory_order_acq_rel);
      __syncwarp(lanes);
      old = __shfl_sync(lanes, old, __ffs(lanes) - 1);
      if (fills(old, n, expected)) {
        if (leader) {
          block_ref<u64>(word).store(0, cuda::std::memory_order_relaxed);
          block_ref<unsigned>(flag).store(parity ^ 1, cuda::std::memory_order_release);
        }
      } else {
        while (block_ref<unsigned>(flag).load(cuda::std::memory_order_acquire) == parity) {}
      }
      __syncwarp(lanes);
    } else if constexpr (form == 13 || form == 17) {
      // The arrival as the protocol makes it (an early one waits for the publish inside);
      // then the flag, not the word, is polled for the phase's end.
      const bool parity = claimed::arrive(reinterpret_cast<uint64_t*>(&word), 1, flagged, false);
      if (form == 13) {
        while (block_ref<unsigned>(flag).load(cuda::std::memory_order_acquire) == unsigned(parity)) {}
      } else {
        uint32_t iteration = 0;
        while (block_ref<unsigned>(flag).load(cuda::std::memory_order_acquire) == unsigned(parity))
          xb::detail::platform::wait_backoff(iteration);
      }
    } else if constexpr (form == 14) {
      claimed::arrive_and_wait(reinterpret_cast<uint64_t*>(&word), counted);
    } else if constexpr (form == 15) {
      // claimed fn, lane by lane, with the lanes that called together meeting (__syncwarp)
      // after the arrival and any completion step, before anyone polls.
      uint64_t* w = reinterpret_cast<uint64_t*>(&word);
      const unsigned lanes = __activemask();
      const xb::detail::single_lane one;
      const uint64_t delta = uint64_t(1) << claimed::L::a_shift;
      const uint64_t old = claimed::group_add(one, w, delta);
      const bool collecting = claimed::still_collecting(old, delta);
      typename claimed::settled st{false, false};
      if (!collecting) st = claimed::settle(one, w, old, old + delta, 1, 0, counted);
      __syncwarp(lanes);
      if (collecting) {
        claimed::wait_r(one, w, old, XB_OP_WAIT);
      } else if (!st.completed) {
        uint64_t rr = old;
        if (st.early) {
          claimed::wait_claim_published(one, w, old & claimed::W::r_bit, XB_OP_ARRIVE);
          rr = ~old;
        }
        claimed::wait_r(one, w, rr, XB_OP_WAIT);
      }
    } else if constexpr (form == 16) {
      // xb (the direct layout), lane by lane, meeting after the arrival and any arming.
      uint64_t* w = reinterpret_cast<uint64_t*>(&word);
      const unsigned lanes = __activemask();
      const auto c = direct::arrive_as<true>(xb::detail::single_lane(), w, 1);
      __syncwarp(lanes);
      if (!c.completed) claimed::wait_r(xb::detail::single_lane(), w, c.old, XB_OP_WAIT);
    } else if constexpr (form == 12) {
      // Lane by lane; the completer runs the step, publishes on the flag, then takes the
      // count back with an RMW that arrivals of the next phase may precede (they count on).
      // A phase filling at 2E would need the completer's own next arrival before its
      // take-back: it cannot happen here, the test only keeps the skeleton honest.
      const unsigned parity = r & 1;
      const u64 old = block_ref<u64>(word).fetch_add(u64(1) << count_shift, cuda::std::memory_order_acq_rel);
      const u64 count = ((old >> count_shift) & ((u64(1) << 22) - 1)) + 1;
      if (count == expected || count == 2 * expected) {
        ++steps;
        block_ref<unsigned>(flag).store(parity ^ 1, cuda::std::memory_order_release);
        block_ref<u64>(word).fetch_add(u64(0) - (expected << count_shift), cuda::std::memory_order_relaxed);
      } else {
        while (block_ref<unsigned>(flag).load(cuda::std::memory_order_acquire) == parity) {}
      }
    } else if constexpr (form >= 18 && form <= 21) {
      // Two words: the count word carries into a 2-bit phase number (bits 62-63) and the
      // completer publishes on a second word P (phases published) that waiters poll. Lane
      // by lane. 18: fn, release-store P, then arm; 19: fn, arm, then a release add on P;
      // 20: as 18 without a step; 21: as 18 with the protocol's back-off in the wait.
      constexpr unsigned a_shift = 41;
      const u64 arming = ((u64(1) << 21) - expected) << a_shift;
      const u64 delta = u64(1) << a_shift;
      const u64 old = block_ref<u64>(word).fetch_add(delta, cuda::std::memory_order_acq_rel);
      const unsigned q = unsigned(old >> 62);
      if (((old ^ (old + delta)) >> 62) != 0) {
        unsigned published = q + 1;
        bool again;
        do {
          if (form != 20) ++steps;
          if (form == 19) {
            const u64 found = block_ref<u64>(word).fetch_add(arming, cuda::std::memory_order_acq_rel);
            block_ref<unsigned>(flag).fetch_add(1u, cuda::std::memory_order_release);
            again = ((found ^ (found + arming)) >> 62) != 0;
          } else {
            block_ref<unsigned>(flag).store(published, cuda::std::memory_order_release);
            const u64 found = block_ref<u64>(word).fetch_add(arming, cuda::std::memory_order_acq_rel);
            again = ((found ^ (found + arming)) >> 62) != 0;
          }
          ++published;
        } while (again);
      } else if (form == 21) {
        uint32_t iteration = 0;
        while (((block_ref<unsigned>(flag).load(cuda::std::memory_order_acquire) - q - 1) & 2) != 0)
          xb::detail::platform::wait_backoff(iteration);
      } else {
        while (((block_ref<unsigned>(flag).load(cuda::std::memory_order_acquire) - q - 1) & 2) != 0) {}
      }
    } else if constexpr (form == 24) {
      // step2 fn with the phase word a 64-bit word of its own, 128 bytes from the count
      // word, polled as the protocol polls (P::poll, the protocol's back-off).
      constexpr unsigned a_shift = 41;
      const u64 arming = ((u64(1) << 21) - expected) << a_shift;
      const u64 delta = u64(1) << a_shift;
      const u64 old = block_ref<u64>(word).fetch_add(delta, cuda::std::memory_order_acq_rel);
      const u64 q = old >> 62;
      if (((old ^ (old + delta)) >> 62) != 0) {
        u64 published = q + 1;
        bool again;
        do {
          ++steps;
          block_ref<u64>(far_flag).store(published, cuda::std::memory_order_release);
          const u64 found = block_ref<u64>(word).fetch_add(arming, cuda::std::memory_order_acq_rel);
          again = ((found ^ (found + arming)) >> 62) != 0;
          ++published;
        } while (again);
      } else {
        uint32_t iteration = 0;
        while (((xb::detail::platform::poll<xb::detail::mem_scope::block>(reinterpret_cast<uint64_t*>(&far_flag)) - q - 1) & 2) != 0)
          xb::detail::platform::wait_backoff(iteration);
      }
    } else if constexpr (form == 22) {
      // The direct block layout armed by each phase's first arrival (as device scope is),
      // not by its completer; lane by lane.
      uint64_t* w = reinterpret_cast<uint64_t*>(&word);
      const u64 delta = u64(1) << direct::a_shift;
      const u64 old = block_ref<u64>(word).fetch_add(delta, cuda::std::memory_order_acq_rel);
      bool completed = direct::carries(old, delta);
      if (direct::arrivals_of(old) == 0 && !direct::armed(old)) {
        const u64 arm = direct::arming(direct::expected_of(old));
        const u64 found = block_ref<u64>(word).fetch_add(arm, cuda::std::memory_order_acq_rel);
        completed = direct::carries(found, arm);
      }
      if (!completed) claimed::wait_r(xb::detail::single_lane(), w, old, XB_OP_WAIT);
    } else if constexpr (form == 23 || form == 25 || form == 26) {
      // The claimed layout's publish changed. 23: the completer does not wait for its
      // publish's result (it cannot learn whether arrivals during its step completed the
      // next phase: a bound on what a publish off its path could save, not a correct
      // barrier). 25: one shared-space compare-and-swap from the claimed state its own RMW
      // made (ATOMS.CAS.64), the fetch_add of the protocol only when an arrival or tx update
      // landed in between. 26: 25 without the completion step.
      uint64_t* w = reinterpret_cast<uint64_t*>(&word);
      const uint64_t delta = uint64_t(1) << claimed::L::a_shift;
      const uint64_t old = block_ref<u64>(word).fetch_add(delta, cuda::std::memory_order_acq_rel);
      if (claimed::still_collecting(old, delta)) {
        claimed::wait_r(xb::detail::single_lane(), w, old, XB_OP_WAIT);
      } else if (!claimed::W::all_arrived(old)) {
        if (form != 26) ++steps;
        uint64_t state = old + delta;
        const uint64_t publish = claimed::W::r_bit - (uint64_t(claimed::W::expected(state)) << claimed::L::a_shift);
        if (form == 23)
          block_ref<u64>(word).fetch_add(publish, cuda::std::memory_order_release);
        else if (!xb::detail::platform::compare_exchange<xb::detail::mem_scope::block>(w, state, state + publish,
                                                                                        xb::detail::mem_order::acq_rel))
          claimed::complete(xb::detail::single_lane(), w, old + delta, none);
      } else {
        claimed::wait_claim_published(xb::detail::single_lane(), w, old & claimed::W::r_bit, XB_OP_ARRIVE);
        claimed::wait_r(xb::detail::single_lane(), w, ~old, XB_OP_WAIT);
      }
    } else if constexpr (form >= 27 && form <= 29) {
      // The direct block layout with a completion step: A (bits 41..61) carries into a 2-bit
      // phase number Q (bits 62-63); each phase is armed by its first arrival; the completer
      // waits until step Q-1 is published (P == Q mod 4), runs the step and release-stores
      // P + 1 on the publish word, which waiters poll. 27: publish word next to the count
      // word; 28: the publish word 128 bytes away; 29: 27 without the step.
      u64* c = form == 28 ? &word : &pair[0];
      u64* pub = form == 28 ? &far_flag : &pair[1];
      constexpr unsigned a_shift = 41;
      const u64 delta = u64(1) << a_shift;
      const u64 old = block_ref<u64>(*c).fetch_add(delta, cuda::std::memory_order_acq_rel);
      bool completed = (((old ^ (old + delta)) >> 62) & 1) != 0;
      if (((old >> a_shift) & ((u64(1) << 21) - 1)) == 0) {
        const u64 arm = ((u64(1) << 21) - (old & ((u64(1) << 20) - 1))) << a_shift;
        const u64 found = block_ref<u64>(*c).fetch_add(arm, cuda::std::memory_order_acq_rel);
        completed = (((found ^ (found + arm)) >> 62) & 1) != 0;
      }
      const u64 q = old >> 62;
      uint64_t* pw = reinterpret_cast<uint64_t*>(pub);
      uint32_t iteration = 0;
      if (completed) {
        u64 d;
        while (((d = xb::detail::platform::poll<xb::detail::mem_scope::block>(pw)) - q) & 3)
          xb::detail::platform::wait_backoff(iteration);
        if (form != 29) ++steps;
        block_ref<u64>(*pub).store(d + 1, cuda::std::memory_order_release);
      } else {
        while (((xb::detail::platform::poll<xb::detail::mem_scope::block>(pw) - q - 1) & 2) != 0)
          xb::detail::platform::wait_backoff(iteration);
      }
    } else if constexpr (form == 7) {
      unsigned* high = reinterpret_cast<unsigned*>(&word) + 1;
      const unsigned lanes = __activemask();
      const unsigned n = __popc(lanes);
      const bool leader = (lanes & ((1u << (threadIdx.x & 31)) - 1)) == 0;
      __syncwarp(lanes);
      unsigned old = 0;
      if (leader) old = block_ref<unsigned>(*high).fetch_add(n << (count_shift - 32), cuda::std::memory_order_acq_rel);
      __syncwarp(lanes);
      old = __shfl_sync(lanes, old, __ffs(lanes) - 1);
      if (fills(u64(old) << 32, n, expected)) {
        if (leader)
          block_ref<unsigned>(*high).fetch_add(0x80000000u - unsigned(expected << (count_shift - 32)),
                                               cuda::std::memory_order_acq_rel);
      } else {
        while (((block_ref<unsigned>(*high).load(cuda::std::memory_order_acquire) ^ old) & 0x80000000u) == 0) {}
      }
      __syncwarp(lanes);
    }
  }
  const u64 took = clock64() - start;
  if (threadIdx.x == 0) cycles[blockIdx.x] = took;
  // Sanity: the skeletons' parity must have flipped once per round.
  if (threadIdx.x == 0 && (form == 4 || form == 5 || form == 8 || form == 9) && ((word >> 63) != (rounds & 1))) atomicAdd(wrong, 1u);
  if (threadIdx.x == 0 && (form == 7 || form == 10) && ((word >> 63) != (rounds & 1))) atomicAdd(wrong, 1u);
  if (threadIdx.x == 0 && (form == 2 || (form >= 12 && form <= 15) || form == 17 || form == 23 || form == 25) && steps != rounds) atomicAdd(wrong, 1u);
  if (threadIdx.x == 0 && form >= 27 && form <= 29 && (form == 28 ? far_flag : pair[1]) != rounds) atomicAdd(wrong, 1u);
  if (threadIdx.x == 0 && (form == 27 || form == 28) && steps != rounds) atomicAdd(wrong, 1u);
  if (threadIdx.x == 0 && form == 24 && ((far_flag & 3) != (rounds & 3) || steps != rounds)) atomicAdd(wrong, 1u);
  if (threadIdx.x == 0 && (form == 16 || form == 22) && ((word >> 63) != (rounds & 1))) atomicAdd(wrong, 1u);
  if (threadIdx.x == 0 && form >= 18 && form <= 21 && ((form == 19 ? flag : flag & 3) != (form == 19 ? rounds : rounds & 3) || (form != 20 && steps != rounds))) atomicAdd(wrong, 1u);
}

template <int form>
void launch(int sms, unsigned threads, unsigned rounds, u64* cycles, unsigned* wrong) {
  rt<form><<<sms, threads>>>(rounds, cycles, wrong);
}

}  // namespace

int main() {
  const unsigned rounds = 20000;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
    std::printf("no device\n");
    return 2;
  }
  u64* cycles;
  unsigned* wrong;
  if (cudaMalloc(&cycles, 8 * sms) != cudaSuccess || cudaMalloc(&wrong, 4) != cudaSuccess) return 2;
  cudaMemset(wrong, 0, 4);
  const char* names[] = {"xb",      "claimed",      "cccl fn",      "counter",
                         "two-rmw", "two-rmw lanes", "two-rmw flag", "two-rmw 32",
                         "two-rmw wait", "two-rmw match", "xb grouped", "claimed grouped", "flag lanes", "claimed flag", "claimed fn", "claimed meet", "xb meet", "claimed flag b/o",
                         "step2 fn", "step2 fn arm1st", "step2 no fn", "step2 fn b/o", "xb first arms", "claimed fn unawaited", "step2 fn far u64", "claimed fn cas", "claimed cas",
                         "direct fn", "direct fn far", "direct fn no fn"};
  std::printf("%-16s %10s %10s %10s   (cycles per round trip, mean of %d blocks, best of 5)\n", "form", "128", "256",
              "1024", sms);
  for (int form = 0; form < 30; ++form) {
    std::printf("%-16s", names[form]);
    for (unsigned threads : {128u, 256u, 1024u}) {
      const auto run = [&] {
        switch (form) {
          case 0: launch<0>(sms, threads, rounds, cycles, wrong); break;
          case 1: launch<1>(sms, threads, rounds, cycles, wrong); break;
          case 2: launch<2>(sms, threads, rounds, cycles, wrong); break;
          case 3: launch<3>(sms, threads, rounds, cycles, wrong); break;
          case 4: launch<4>(sms, threads, rounds, cycles, wrong); break;
          case 5: launch<5>(sms, threads, rounds, cycles, wrong); break;
          case 6: launch<6>(sms, threads, rounds, cycles, wrong); break;
          case 7: launch<7>(sms, threads, rounds, cycles, wrong); break;
          case 8: launch<8>(sms, threads, rounds, cycles, wrong); break;
          case 9: launch<9>(sms, threads, rounds, cycles, wrong); break;
          case 10: launch<10>(sms, threads, rounds, cycles, wrong); break;
          case 11: launch<11>(sms, threads, rounds, cycles, wrong); break;
          case 12: launch<12>(sms, threads, rounds, cycles, wrong); break;
          case 13: launch<13>(sms, threads, rounds, cycles, wrong); break;
          case 14: launch<14>(sms, threads, rounds, cycles, wrong); break;
          case 15: launch<15>(sms, threads, rounds, cycles, wrong); break;
          case 16: launch<16>(sms, threads, rounds, cycles, wrong); break;
          case 17: launch<17>(sms, threads, rounds, cycles, wrong); break;
          case 18: launch<18>(sms, threads, rounds, cycles, wrong); break;
          case 19: launch<19>(sms, threads, rounds, cycles, wrong); break;
          case 20: launch<20>(sms, threads, rounds, cycles, wrong); break;
          case 21: launch<21>(sms, threads, rounds, cycles, wrong); break;
          case 22: launch<22>(sms, threads, rounds, cycles, wrong); break;
          case 23: launch<23>(sms, threads, rounds, cycles, wrong); break;
          case 24: launch<24>(sms, threads, rounds, cycles, wrong); break;
          case 25: launch<25>(sms, threads, rounds, cycles, wrong); break;
          case 26: launch<26>(sms, threads, rounds, cycles, wrong); break;
          case 27: launch<27>(sms, threads, rounds, cycles, wrong); break;
          case 28: launch<28>(sms, threads, rounds, cycles, wrong); break;
          default: launch<29>(sms, threads, rounds, cycles, wrong); break;
        }
      };
      if (!probe::print_best_of_five(run, cycles, sms, rounds)) return 1;
    }
    std::printf("\n");
  }
  unsigned w = 0;
  cudaMemcpy(&w, wrong, 4, cudaMemcpyDeviceToHost);
  std::printf("wrong phase counts: %u\n", w);
  return w == 0 ? 0 : 1;
}
