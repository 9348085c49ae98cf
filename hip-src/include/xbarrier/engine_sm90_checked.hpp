// xbarrier/engine_sm90_checked.hpp - the engine of CUDA sm_90 sanitizer builds (checked,
// XB_SANITIZER=1; XB_CHECKED_MBARRIER): block-scope barriers in shared memory run the checked protocol, and
// shadow mbarriers carry its synchronization. compute-sanitizer's racecheck orders
// shared-memory accesses through hardware barriers only (bar.sync, mbarrier), not through
// atomics on a word, so on the protocol alone it reports every hand-over of data as a race.
// Checked host builds with XB_SHADOW_MODEL=1 run it on the software mbarrier of
// platform/host_mbarrier_model.hpp. Empty on every other target and build.
//
// Words: w[0] the protocol word, w[1] the mbarrier M that mirrors it; with a completion
// function, w[2] the mbarrier P (count 1) on which each phase's step is published.
//
// 1. Checks first. Every operation runs on the protocol word first, whose checks report
//    misuse (and end the thread) before M sees it: what the hardware does with an
//    over-arrival or a tx overflow is undefined.
// 2. The mirror. Every operation is one compare-and-swap on the word (protocol.hpp's
//    tx_update; arrivals and drops too), which never lands while a phase is claimed: an
//    arrival during a completion step waits for its publish, as the protocol's tx updates
//    do, instead of counting early in the next phase. Right after its CAS (and its checks),
//    before any completion step, the thread makes the same operation on M, once M has
//    ended the phase before the one the word counted it in. So M sees each phase's
//    operations, and no others, as the word does: a phase ends on M when it ended on the
//    word and its mirrors have landed. The completer waits on M before the word publishes
//    (5.), so M is never two phases ahead of a thread that waits on it by parity, and the
//    wait before each mirror is also the wait synccheck asks of a thread between two
//    arrivals on one mbarrier (arrive-only threads drop their tokens; cuda::barrier allows
//    it). No deadlock: a mirror of phase k waits only for the mirrors of phase k-1.
// 3. Waits. A wait waits on M by parity, racecheck's edge from every arrival of the phase,
//    and with a completion function on P, then on the word. Each wait is bounded and leaves
//    when the launch faulted, as the protocol's are. M and P first: a suspended try_wait,
//    where polling the word would cost racecheck one checked load per poll. try_wait makes
//    one suspended try_wait on M (as the native try_wait does), then tests P and the word;
//    try_wait_for waits on M and P with the time left as the suspend hint, then polls the
//    word for the rest.
// 4. Copies. memcpy_async_tx from global memory is a bulk copy that completes on M, as on
//    the native path (racecheck models it); its bytes are completed on the word when the
//    copy is issued. The word may then end the phase before the bytes land, but no waiter
//    passes M before they do, and a completion step waits on M first (5.).
//    One gap: when a phase's arrivals are all in with a copy's bytes in flight and no
//    expect_tx yet covering them, M's phase ends before they land, as the native mbarrier's
//    would (a race on the hardware too), while the word waits for the expect; the next
//    mirror then waits on M past the bound, reported as a deadlock rather than as misuse.
// 5. Completion steps. The protocol's step is wrapped: the completer waits on M's phase
//    (every arrival's writes, every copy's bytes: racecheck's edge to the completer); with a
//    completion function it then waits on P's previous phase (the previous step, which
//    another thread may have run), runs the function, arrives on P and waits on it
//    (complete at once; synccheck's rule for the arrival). P's phase ends before the word
//    publishes, so a wait on P by parity is as exact as the word's.
// 6. Sleeping waiters. Under racecheck, one loop iteration takes ~100 us, and a warp whose
//    lanes spin in different wait loops can leave a lane that still has its mirror or its
//    completion step to run unscheduled until the others time out. Long sleeps in the loops
//    made it rare (with short sleeps, half of the launches of a bulk-copy round with a
//    completion function timed out under racecheck; with long ones, none), and a __syncwarp
//    meeting point after each call hung instead. So in sanitizer builds every wait loop
//    sleeps long: the shadow waits and the protocol's polls of the word (platform
//    wait_backoff, up to 1 ms), and a try_wait or try_wait_for that returns false (relax,
//    0-1 ms). Compare-and-swap retries keep the
//    short back-off: a failed CAS means another thread's CAS landed.
//
// The shadow costs 8 bytes per barrier without a completion function (16 in sanitizer builds
// against 8 in release builds, before the 8 of the phase count every checked build adds);
// with one, the 24 bytes of the native layout.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "engine_portable.hpp"
#include "platform.hpp"
#include "protocol.hpp"

#if XB_CHECKED_MBARRIER
namespace xb {
namespace detail {

template <bool Step>
struct checked_mbarrier_engine {
  using proto = protocol<platform, thread_scope_block>;
  using fallback = protocol_engine<thread_scope_block>;
  static constexpr mem_scope ms = mem_scope::block;

  // Whether `w` has a shadow: a barrier in shared memory, tested at run time (a folded test
  // would send some call sites past the mirror; platform/cuda.hpp).
  static XB_INLINE bool shadowed(const uint64_t* w) { return platform::is_shared_at_run_time(w); }
  // Whether the copy engine can read `src` (global memory); elsewhere the thread copies.
  static XB_INLINE bool bulk_source(const void* src) { return platform::is_global(src); }
  static XB_INLINE uint64_t* shadow(uint64_t* w) { return w + 1; }
  static XB_INLINE const uint64_t* shadow(const uint64_t* w) { return w + 1; }
  // P, on which each phase's completion step is published (5.).
  static XB_INLINE uint64_t* step_barrier(uint64_t* w) { return w + 2; }
  static XB_INLINE const uint64_t* step_barrier(const uint64_t* w) { return w + 2; }
  static XB_INLINE bool parity_of_r_bit(uint64_t r) { return r != 0; }

  // Until phase `parity` of mbarrier `m` ended; bounded as the protocol's waits are.
  static XB_DEVICE void shadow_wait(const uint64_t* w, const uint64_t* m, bool parity, uint32_t op) {
    if (mbarrier::try_wait_parity(m, parity)) return;
    const uint64_t start = platform::now_ns();
    uint32_t iteration = 0;
    while (!mbarrier::try_wait_parity(m, parity)) {
      platform::wait_backoff(iteration);  // long sleeps in sanitizer builds (6.); leaves a faulted launch
      const uint64_t elapsed = platform::now_ns() - start, bound = platform::wait_timeout_ns();
      if (bound && elapsed > bound)  // 0: unbounded, as the protocol's waits
        proto::fault(XB_FAULT_WAIT_TIMEOUT, op, w, platform::template load<ms>(w, mem_order::relaxed),
                     int64_t(elapsed), int64_t(bound));
    }
  }

  // The shadow waits of phase `parity` (3.).
  static XB_DEVICE void shadow_waits(const uint64_t* w, bool parity, uint32_t op) {
    shadow_wait(w, shadow(w), parity, op);
    if (Step) shadow_wait(w, step_barrier(w), parity, op);
  }

  // The operation of one call, repeated on M (2.): `arrivals` (a drop if `drop`), a tx
  // change, or a bulk copy whose bytes complete on M.
  struct mirror {
    uint64_t* w;
    uint32_t op;
    uint32_t arrivals;
    bool drop;
    int64_t tx;
    void* bulk_dst;
    const void* bulk_src;
    static XB_INLINE mirror arrival(uint64_t* w, uint32_t op, uint32_t arrivals, bool drop) {
      return {w, op, arrivals, drop, 0, nullptr, nullptr};
    }
    static XB_INLINE mirror tx_change(uint64_t* w, uint32_t op, uint32_t arrivals, int64_t tx, void* bulk_dst,
                                      const void* bulk_src) {
      return {w, op, arrivals, false, tx, bulk_dst, bulk_src};
    }
    XB_DEVICE void operator()(uint64_t r) const {
      shadow_wait(w, shadow(w), !parity_of_r_bit(r), op);
      if (bulk_dst) {
        mbarrier::bulk_load(bulk_dst, bulk_src, uint32_t(-tx), shadow(w));
      } else if (tx < 0) {
        platform::release_block();  // bytes this thread wrote: complete_tx is relaxed
        mbarrier::complete_tx(shadow(w), uint32_t(-tx));
      } else if (tx > 0) {
        mbarrier::expect_tx(shadow(w), uint32_t(tx));  // before the arrivals (the phase waits for it)
      }
      if (drop) (void)mbarrier::arrive_drop(shadow(w));
      else if (arrivals) (void)mbarrier::arrive(shadow(w), arrivals);
    }
  };

  // The completion step as the protocol runs it (5.), for a barrier with a function and
  // without (then only the completer's wait on M). Inside the step the word's R bit is
  // still the parity of the phase being completed. `ran` tells the caller it completed one.
  template <class F>
  struct shadowed_step {
    uint64_t* w;
    F& f;
    uint32_t op;
    bool* ran;
    XB_DEVICE void operator()() const {
      *ran = true;
      const bool parity = proto::W::parity(platform::template load<ms>(w, mem_order::relaxed));
      shadow_wait(w, shadow(w), parity, op);
      if (!Step) return f();  // the empty function with the phase count (phase_count.hpp)
      shadow_wait(w, step_barrier(w), !parity, op);
      f();
      (void)mbarrier::arrive(step_barrier(w), 1);
      shadow_wait(w, step_barrier(w), parity, op);
    }
  };

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit) {
    proto::init(w, expected, limit);
    if (!shadowed(w)) return;
    mbarrier::init(shadow(w), uint32_t(expected));
    if (Step) mbarrier::init(step_barrier(w), 1);
    mbarrier::fence_init();
  }

  // arrive(update) and arrive_and_drop() as one compare-and-swap on the word (2.).
  template <class F>
  static XB_DEVICE bool arrive_on_both(uint64_t* w, ptrdiff_t update, F& completion, bool drop, bool* ran) {
    const uint32_t op = drop ? XB_OP_ARRIVE_AND_DROP : XB_OP_ARRIVE;
    if (update < 1 || update > proto::max_count)
      proto::fault(XB_FAULT_UPDATE_RANGE, op, w, platform::template load<ms>(w, mem_order::relaxed), update,
                   proto::max_count);
    shadowed_step<F> step = {w, completion, op, ran};
    return proto::tx_update(w, uint32_t(update), 0, step, op, drop, mirror::arrival(w, op, uint32_t(update), drop));
  }
  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& completion) {
    if (!shadowed(w)) return fallback::arrive(w, update, completion);
    bool ran = false;
    return token_of_parity(arrive_on_both(w, update, completion, false, &ran));
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& completion) {
    if (!shadowed(w)) return fallback::arrive_and_drop(w, completion);
    bool ran = false;
    (void)arrive_on_both(w, 1, completion, true, &ran);
  }
  // The completer returns at once, as the protocol's does: its step waited on M (and ran the
  // function), and a later phase may already have ended, which a parity wait would alias.
  template <class F>
  static XB_INLINE void arrive_and_wait(uint64_t* w, F& completion) {
    if (!shadowed(w)) return fallback::arrive_and_wait(w, completion);
    bool ran = false;
    const bool parity = arrive_on_both(w, 1, completion, false, &ran);
    if (!ran) wait_parity(w, parity);
  }

  static XB_INLINE void wait(const uint64_t* w, uint64_t token) { wait_parity(w, parity_of_token(token)); }
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity) {
    if (!shadowed(w)) return fallback::wait_parity(w, parity);
    shadow_waits(w, parity, XB_OP_WAIT);  // suspended in the SYNCS unit, bounded: a deadlock is a fault
    proto::wait_parity(w, parity);      // published on the word at once, or right after P
  }
  static XB_INLINE bool test(const uint64_t* w, uint64_t token) { return test_parity(w, parity_of_token(token)); }
  // A loop on try_wait that polled the word alone never let the launch finish under
  // racecheck (completion_reads_bulk_copied_stage ran past 120 s); the suspended try_wait
  // on M is what the native try_wait makes. A miss leaves a faulted launch (relax).
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity) {
    if (!shadowed(w)) return fallback::test_parity(w, parity);
    if (mbarrier::try_wait_parity(shadow(w), parity) && (!Step || mbarrier::test_wait_parity(step_barrier(w), parity)))
      return proto::test_parity(w, parity);  // relaxes on a miss itself
    platform::relax();
    return false;
  }
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns) {
    return wait_parity_for(w, parity_of_token(token), ns);
  }
  // Phase `parity` of `m` ended before `ns` from `start` passed: try_wait with the time left
  // as its suspend hint, and one last test at the end (as the native try_wait_for).
  static XB_DEVICE bool shadow_wait_until(const uint64_t* w, const uint64_t* m, bool parity, uint64_t start, uint64_t ns) {
    for (;;) {
      const uint64_t spent = platform::now_ns() - start;
      if (spent >= ns) return mbarrier::test_wait_parity(m, parity);
      const uint64_t left = ns - spent;
      if (mbarrier::try_wait_parity_hint(m, parity, left > 0xffffffffu ? 0xffffffffu : uint32_t(left)))
        return true;
      platform::relax();
    }
  }
  // A timeout relaxes too: a caller's loop on try_wait_for with a short bound is a loop on
  // try_wait (6.).
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    if (!shadowed(w)) return fallback::wait_parity_for(w, parity, ns);
    const uint64_t start = platform::now_ns();
    bool done = shadow_wait_until(w, shadow(w), parity, start, ns) &&
                (!Step || shadow_wait_until(w, step_barrier(w), parity, start, ns));
    if (done) {
      const uint64_t spent = platform::now_ns() - start;
      done = proto::wait_parity_for(w, parity, spent >= ns ? 0 : ns - spent);
    }
    if (!done) platform::relax();
    return done;
  }

  // One tx update on the word, then on M.
  template <class F>
  static XB_DEVICE bool tx_on_both(uint64_t* w, uint32_t arrivals, int64_t tx, F& completion, uint32_t op,
                                   void* bulk_dst = nullptr, const void* bulk_src = nullptr) {
    bool ran = false;
    shadowed_step<F> step = {w, completion, op, &ran};
    return proto::tx_update(w, arrivals, tx, step, op, false, mirror::tx_change(w, op, arrivals, tx, bulk_dst, bulk_src));
  }
  template <class F>
  static XB_INLINE uint64_t arrive_tx(uint64_t* w, ptrdiff_t arrivals, ptrdiff_t tx, F& completion) {
    if (!shadowed(w)) return fallback::arrive_tx(w, arrivals, tx, completion);
    return token_of_parity(tx_on_both(w, uint32_t(arrivals), tx, completion, XB_OP_ARRIVE_TX));
  }
  template <class F>
  static XB_INLINE void expect_tx(uint64_t* w, ptrdiff_t tx, F& completion) {
    if (!shadowed(w)) return fallback::expect_tx(w, tx, completion);
    (void)tx_on_both(w, 0, tx, completion, XB_OP_EXPECT_TX);
  }
  template <class F>
  static XB_INLINE void complete_tx(uint64_t* w, ptrdiff_t tx, F& completion, uint32_t op) {
    if (!shadowed(w)) return fallback::complete_tx(w, tx, completion, op);
    (void)tx_on_both(w, 0, -int64_t(tx), completion, op);
  }
  // memcpy_async_tx: a bulk copy completing on M when the source is global (4.), else the
  // calling thread copies and completes the bytes itself.
  template <class F>
  static XB_INLINE void copy_tx(void* dst, const void* src, size_t bytes, uint64_t* w, F& completion) {
    if (!shadowed(w)) return fallback::copy_tx(dst, src, bytes, w, completion);
    if (bytes == 0 || !bulk_source(src)) {
      platform::copy(dst, src, bytes);
      return complete_tx(w, ptrdiff_t(bytes), completion, XB_OP_MEMCPY_ASYNC_TX);
    }
    (void)tx_on_both(w, 0, -int64_t(bytes), completion, XB_OP_MEMCPY_ASYNC_TX, dst, src);
  }
  // memcpy_async: copied before the call returns, so the caller's own arrival orders it.
  static XB_INLINE void copy_in_phase(void* dst, const void* src, size_t bytes, uint64_t* w, bool) {
    fallback::copy_in_phase(dst, src, bytes, w, false);
  }
  static XB_INLINE bool bulk_possible(void*, const void*, size_t, const uint64_t*, bool) { return false; }
};

}  // namespace detail
}  // namespace xb
#endif
