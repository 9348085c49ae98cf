// xbarrier/protocol.hpp - the portable barrier protocol: cuda::barrier's phases, arrival
// counts and tx-count on one 8-byte word, written against a platform layer P
// (platform/host.hpp, platform/amdgcn.hpp, platform/cuda.hpp) that supplies scoped atomics,
// fences, back-off and fault reporting (docs/platform-interface.md). The same code runs on
// AMD GPUs, on NVIDIA GPUs (the "emulated" variant) and on CPU threads. The hardware
// behaviours it reproduces are cited as docs/mbarrier-semantics.md, P<n>.
//
// ---------------------------------------------------------------------------------------
// The word (block scope; device/system scope use the wide layout: no tx, 31-bit counts)
//
//   63   62    61   60 ........ 41   40 ........ 20   19 ......... 0
//   R    guard Z    A (20 bits)      T (21 bits)      E (20 bits)
//
//   E  expected count of the next phases (init's count, lowered by arrive_and_drop)
//   A  arrivals, counted up from 2^20 - E; the arrival that makes the count reach 2^20
//      carries into Z. Pending arrivals = 2^20 - A while Z is clear.
//   Z  all arrivals of the phase are in
//   T  tx-count of the phase, biased by 2^20 (so it may be negative: a copy may land before
//      its expect_tx, P1, P3)
//   R  parity of the phase in progress; it flips when a phase is published complete
//   guard  catches a carry out of Z (over-arrival) before it can reach R. The wide layout
//          (E and A of 31 bits, Z at 62) has no spare bit: there it takes 2^31 surplus arrivals.
//
// Why this is correct
//
// 1. A phase completes when Z is set and T == 0 ("claimed"). Arrivals change only A/Z/E
//    with one fetch_add; tx operations (arrive_tx, expect_tx, complete_tx) change T with a
//    compare-and-swap. Every operation that turns a non-claimed word into a claimed one
//    sees that transition in its own atomic result, and atomics on one word are totally
//    ordered, so exactly one operation claims each phase: its thread is the completer.
//    T must be exactly 0, not <= 0 (P1: pending 0 and tx -16 is not complete), and an
//    expect_tx alone can claim (P1, second step), because tx operations test for the claim
//    just as arrivals do.
// 2. The completer runs the completion function, then publishes with a single fetch_add
//    that flips R and subtracts E from Z:A (Z:A >= 2^20 > E, so nothing borrows). Waiters
//    return only when R differs from their token's parity, so the completion function has
//    finished before any waiter of that phase returns, and it ran exactly once (1.).
// 3. No arrival of phase k+1 is counted in phase k. While a phase is claimed but not yet
//    published, the word is in the claimed state and:
//    - tx operations see it in the value they would swap against and wait for the publish
//      (so T stays 0 until then: a second claim of the same phase is impossible);
//    - an arrival's fetch_add adds to A, which the claim left at 0: these arrivals are for
//      k+1. The publish subtracts E from Z:A instead of storing a fresh count, so they stay
//      counted (the commutative reload of CCCL's software barrier). The arriving thread sees
//      the claimed state in its own result, waits until the claim is published, and returns
//      the parity of k+1; without that wait its token would alias phase k. It waits for the
//      claim to go, not for R to flip: if its arrival completed k+1, the completer publishes
//      k and k+1 back to back and R flips twice (found by the TSAN stress test).
//    - if those arrivals already make up all of phase k+1 (and T is 0), the publish itself
//      lands in the claimed state: the completer sees that in its result and completes
//      k+1 as well (loop in complete()).
//    The publish uses E as seen at the claim: an arrive_and_drop counted in k+1 lowers E
//    only for k+2 on, which is what cuda::barrier specifies.
// 4. Memory ordering: arrivals and tx updates are acq_rel RMWs, the publish is an acq_rel
//    RMW later in the same word's modification order, and waiters poll with acquire (or
//    relaxed polls then one acquire fence, where the platform says so). Every RMW continues
//    the release sequences of the earlier ones, so a waiter that reads the published R
//    synchronizes with every arrival of the phase and with the completer.
// 5. Waits come last. On AMDGPU the lanes of a wave that take different branches run one
//    branch after the other, so a lane that spins before another lane of its wave has made
//    the progress it waits for (the completion step it is owed) would spin forever (CUDA's
//    independent thread scheduling lets the completer run anyway). So no function here polls
//    before the completion step its own call may run: settle() and the tx CAS loop never
//    wait, and their callers wait afterwards. On every platform, so that the H200's emulated
//    variant runs the code AMD runs.
// 6. One atomic per group of lanes. The lanes of a wave (warp) that make the same arrival on
//    the same barrier together form a group (lane_group.hpp; the platform forms it): its
//    leader adds the group's arrivals in one fetch_add, and every lane decides from that one
//    result, which the leader broadcasts. That is the same atomic step as the lanes' own
//    fetch_adds back to back: no other operation lands between them, so the claim (1.), the
//    early arrivals (3.) and the checks see the same states. The leader's release follows
//    every lane's writes (gather()). The whole group runs the completion path alike; its
//    leader alone runs the completion function and the publish, and the others wait for it
//    in the broadcast of the publish's result, before anyone polls (5.). Each lane acquires
//    by its own poll, except where the platform lets the leader's acquire stand for its
//    wave's (AMDGPU, whose waves issue loads and fences for all their lanes): there the
//    lanes take the leader's polled value, and a wave whose leader completed the phase
//    returns at once, as the leader does. On AMDGPU this keeps the result and every
//    decision on it in scalar registers: a wave knows that its lanes decide alike. Lanes
//    that do not agree on the barrier and the update arrive one by one (the platform gives
//    them groups of one). The one difference from back-to-back arrivals: a group is counted
//    whole in the phase its atomic lands in, so a group with more lanes than that phase
//    still expects (a warp straddling two phases) over-arrives, as a warp does on CUDA's
//    mbarrier, where checked builds report it; back to back, the excess would have counted
//    in the next phase.
// ---------------------------------------------------------------------------------------
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "lane_group.hpp"
#include "scope.hpp"

namespace xb {

// The completion function of a barrier that has none.
struct empty_completion {
  XB_INLINE void operator()() const noexcept {}
};

namespace detail {

// Field widths of the two layouts.
struct block_layout {
  static constexpr unsigned count_bits = 20;  // PTX mbarrier limits: counts and tx < 2^20
  static constexpr bool has_tx = true;
  static constexpr unsigned t_shift = 20;
  static constexpr unsigned t_bits = 21;
  static constexpr unsigned a_shift = 41;
};
struct wide_layout {
  static constexpr unsigned count_bits = 31;  // int32 max, as cuda::barrier for wider scopes
  static constexpr bool has_tx = false;
  static constexpr unsigned t_shift = 0;
  static constexpr unsigned t_bits = 0;
  static constexpr unsigned a_shift = 31;
};

template <class L>
struct word {
  static constexpr uint64_t one = 1;
  static constexpr int64_t max_count = (int64_t(1) << L::count_bits) - 1;
  static constexpr uint64_t count_mask = uint64_t(max_count);
  static constexpr unsigned z_shift = L::a_shift + L::count_bits;
  static constexpr uint64_t r_bit = one << 63;
  static constexpr uint64_t z_bit = one << z_shift;
  static constexpr int64_t t_bias = L::has_tx ? (int64_t(1) << (L::t_bits - 1)) : 0;
  static constexpr uint64_t t_mask = L::has_tx ? ((one << L::t_bits) - 1) << L::t_shift : 0;

  static XB_INLINE constexpr uint64_t initial(uint64_t expected) {
    return (((one << L::count_bits) - expected) << L::a_shift) |
           (uint64_t(t_bias) << L::t_shift) | expected;
  }
  static XB_INLINE constexpr int64_t expected(uint64_t s) { return int64_t(s & count_mask); }
  static XB_INLINE constexpr uint64_t arrived(uint64_t s) { return (s >> L::a_shift) & count_mask; }
  static XB_INLINE constexpr bool all_arrived(uint64_t s) { return (s >> z_shift) & 1; }
  static XB_INLINE constexpr bool parity(uint64_t s) { return (s >> 63) != 0; }
  static XB_INLINE constexpr int64_t tx(uint64_t s) {
    return L::has_tx ? int64_t((s & t_mask) >> L::t_shift) - t_bias : 0;
  }
  static XB_INLINE constexpr int64_t pending(uint64_t s) {
    return all_arrived(s) ? 0 : (int64_t(1) << L::count_bits) - int64_t(arrived(s));
  }
  // All arrivals in and tx-count exactly 0: the phase is complete but not yet published.
  static XB_INLINE constexpr bool claimed(uint64_t s) { return all_arrived(s) && tx(s) == 0; }
  static XB_INLINE constexpr uint64_t with_tx(uint64_t s, int64_t t) {
    return (s & ~t_mask) | ((uint64_t(t + t_bias) << L::t_shift) & t_mask);
  }
};

// What tx_update() calls right after its compare-and-swap landed (and its checks passed),
// before any completion step, with the R bit (in place) of the phase it was counted in:
// nothing, except in CUDA's checked builds, which repeat the operation on a shadow mbarrier
// (engine_sm90_checked.hpp).
struct no_mirror {
  XB_INLINE void operator()(uint64_t) const {}
};

// The protocol for one platform P and one thread scope. All functions work on the word.
template <class P, thread_scope Scope>
struct protocol {
  static constexpr bool block_like = Scope == thread_scope_block || Scope == thread_scope_thread;
  struct layout_pick {
    static constexpr unsigned count_bits = block_like ? block_layout::count_bits : wide_layout::count_bits;
    static constexpr bool has_tx = block_like;
    static constexpr unsigned t_shift = block_like ? block_layout::t_shift : wide_layout::t_shift;
    static constexpr unsigned t_bits = block_like ? block_layout::t_bits : wide_layout::t_bits;
    static constexpr unsigned a_shift = block_like ? block_layout::a_shift : wide_layout::a_shift;
  };
  using L = layout_pick;
  using W = word<L>;
  static constexpr mem_scope ms = scope_of(Scope);
  static constexpr int64_t max_count = W::max_count;
  // Per-call limit of tx updates (PTX: 0..2^20-1), and of the phase's running tx-count.
  static constexpr int64_t max_tx = (int64_t(1) << 20) - 1;

  [[noreturn]] static XB_DEVICE void fault(uint32_t kind, uint32_t op, const uint64_t* w,
                                           uint64_t state, int64_t value, int64_t limit) {
    xb_fault_record r = {};
    r.kind = kind;
    r.op = op;
    r.barrier = reinterpret_cast<uint64_t>(w);
    r.value = value;
    r.limit = limit;
    r.pending = W::pending(state);
    r.tx = W::tx(state);
    r.expected = W::expected(state);
    r.phase_parity = W::parity(state);
    r.scope = static_cast<uint32_t>(Scope);
    P::fault(r);
  }

  // `limit`: the barrier type's max() (max_count, or one less where the native completion
  // engine gives one count to its gate).
  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit = max_count) {
    if (XB_CHECKED && (expected < 1 || expected > limit)) {
      xb_fault_record r = {};  // the word is not initialized yet: no state to report
      r.kind = XB_FAULT_INIT_COUNT;
      r.op = XB_OP_INIT;
      r.barrier = reinterpret_cast<uint64_t>(w);
      r.value = expected;
      r.limit = limit;
      r.pending = r.expected = -1;
      r.scope = static_cast<uint32_t>(Scope);
      P::fault(r);
    }
    P::template store<ms>(w, W::initial(uint64_t(expected)), mem_order::relaxed);
  }

  // Polls until done(state) holds; bounded in checked builds (a deadlock becomes a fault).
  // Every lane of `lanes` polls; where the leader's acquire stands for the group's, every
  // lane takes the leader's value, so that the group decides alike.
  template <class G>
  static XB_INLINE uint64_t poll_as(G lanes, const uint64_t* w) {
    const uint64_t s = P::template poll<ms>(w);
    return lanes.acquires_as_one() ? lanes.broadcast(s) : s;
  }
  template <class G, class Done>
  static XB_INLINE void poll_until(G lanes, const uint64_t* w, Done done, uint32_t op) {
    uint64_t s = poll_as(lanes, w);
    if (XB_LIKELY(done(s))) {
      P::template after_poll<ms>();
      return;
    }
    uint32_t iteration = 0;
    const uint64_t start = XB_CHECKED ? P::now_ns() : 0;
    const uint64_t bound = XB_CHECKED ? P::wait_timeout_ns() : 0;
    do {
      P::wait_backoff(iteration);
      if (XB_CHECKED && bound && (iteration & 15) == 0) {
        const uint64_t elapsed = P::now_ns() - start;
        if (elapsed > bound) fault(XB_FAULT_WAIT_TIMEOUT, op, w, s, int64_t(elapsed), int64_t(bound));
      }
      s = poll_as(lanes, w);
    } while (!done(s));
    P::template after_poll<ms>();
  }

  // Wait until the phase of parity `parity` is published.
  static XB_DEVICE void wait_parity(const uint64_t* w, bool parity, uint32_t op = XB_OP_WAIT) {
    // The parity travels as a word: a captured bool stayed in scratch memory on AMDGPU.
    const uint64_t r = parity ? W::r_bit : 0;
    const auto lanes = P::lanes_here();
    // A group polls as one only where the leader's acquire stands for all; elsewhere each
    // lane polls alone anyway, and the agreement would cost collectives for nothing.
    if (lanes.acquires_as_one() && XB_LIKELY(lanes.agree(w, r))) wait_r(lanes, w, r, op);
    else wait_r(single_lane(), w, r, op);
  }
  // The same with the parity as the R bit of r, its sign bit (its other bits are ignored).
  template <class G>
  static XB_INLINE void wait_r(G lanes, const uint64_t* w, uint64_t r, uint32_t op) {
    // R compared alone, as a 32-bit value: AMDGPU then tests the high halves with scalar
    // instructions even where r comes from several ways (a 64-bit XOR and sign test went
    // to a vector compare there). (Tests of the XOR's sign bit as 32 bits crash GenMC
    // 0.11's load annotation.)
    static_assert(W::r_bit == uint64_t(1) << 63, "wait_r takes R as bit 63");
    const uint32_t rb = uint32_t(r >> 63);
    poll_until(lanes, w, [rb](uint64_t s) { return uint32_t(s >> 63) != rb; }, op);
  }

  // Wait until the claimed phase whose R bit is `r` has been published. Not "until R
  // flips": the completer may publish this phase and the next back to back, flipping R
  // twice before we look again; the claim is gone either way.
  template <class G>
  static XB_INLINE void wait_claim_published(G lanes, const uint64_t* w, uint64_t r, uint32_t op) {
    poll_until(lanes, w, [r](uint64_t s) { return !W::claimed(s) || (s & W::r_bit) != r; }, op);
  }

  // One probe. A failed probe lets the platform relax (the host yields the fiber, so that a
  // `while (!try_wait(...))` loop cannot starve the threads it waits for).
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity) {
    if (W::parity(P::template poll<ms>(w)) == parity) {
      P::relax();
      return false;
    }
    P::template after_poll<ms>();
    return true;
  }

  // Poll until the phase is published or `timeout_ns` has passed.
  static XB_DEVICE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t timeout_ns) {
    const uint64_t start = P::now_ns();
    uint32_t iteration = 0;
    for (;;) {
      if (W::parity(P::template poll<ms>(w)) != parity) {
        P::template after_poll<ms>();
        return true;
      }
      if (P::now_ns() - start >= timeout_ns) return false;
      P::wait_backoff(iteration);
    }
  }

  // The completion step and publish of a claimed phase (see 2. and 3. above), by a group
  // of lanes: its leader runs the completion function and the publish, and every lane gets
  // the word as the publish found it, so the group decides alike and leaves together.
  template <class G, class Completion>
  static XB_INLINE void complete(G lanes, uint64_t* w, uint64_t claimed_state, Completion& completion) {
    bool again;
    do {
      if (lanes.leads()) completion();
      const uint64_t delta = W::r_bit - (uint64_t(W::expected(claimed_state)) << L::a_shift);
      const uint64_t found = leader_add(lanes, w, delta, mem_order::acq_rel);
      const uint64_t now = found + delta;
      P::notify(w);
      if (XB_CHECKED && W::all_arrived(now) && W::arrived(now) != 0)
        fault(XB_FAULT_OVER_ARRIVAL, XB_OP_ARRIVE, w, now,
              int64_t(W::arrived(now)) + W::expected(claimed_state), W::expected(claimed_state));
      // Arrivals made during the completion step completed the next phase as well (Z is
      // set again: rare, so it is tested first, alone, as still_collecting tests it, on the
      // high halves where it can); a barrier everyone dropped from expects nobody, and
      // stays as it is.
      again = XB_UNLIKELY(!still_collecting(found, delta)) && W::claimed(now) && W::expected(claimed_state) != 0;
      claimed_state = now;
    } while (again);
  }

  // arrive(update) and arrive_and_drop(): one fetch_add per group of lanes (6. above).
  // Returns the parity of the phase the arrival was counted in.
  template <class Completion>
  static XB_DEVICE bool arrive(uint64_t* w, ptrdiff_t update, Completion& completion, bool drop) {
    if (XB_CHECKED && (update < 1 || update > max_count))
      fault(XB_FAULT_UPDATE_RANGE, drop ? XB_OP_ARRIVE_AND_DROP : XB_OP_ARRIVE, w,
            P::template load<ms>(w, mem_order::relaxed), update, max_count);
    const auto lanes = P::lanes_here();
    const counted c = XB_LIKELY(lanes.agree(w, uint64_t(update) << 1 | uint64_t(drop)))
                          ? arrive_as(lanes, w, update, completion, drop)
                          : arrive_as(single_lane(), w, update, completion, drop);
    // The wait comes after the two ways join (5. above): where the compiler cannot see that
    // a wave takes one way only, it runs them one after the other, and a wait inside the
    // first would spin before the second's lanes arrive. A drop returns no token, so it need
    // not wait for the claim.
    if (XB_UNLIKELY(c.early) && !drop) wait_claim_published(single_lane(), w, c.r, XB_OP_ARRIVE);
    return ((c.early ? W::r_bit : 0) ^ c.r) != 0;
  }
  // An arrival's outcome: `r`, the R bit the group's atomic found; `early`, counted in the
  // next phase while this one's completion step ran (3. above): its token is the flip of
  // `r`, handed out once the claim is published.
  struct counted {
    uint64_t r;
    bool early;
  };
  template <class G, class Completion>
  static XB_INLINE counted arrive_as(G lanes, uint64_t* w, ptrdiff_t update, Completion& completion, bool drop) {
    // arrive_and_drop also lowers E by one per lane for later phases.
    const uint64_t n = lanes.size();
    const uint64_t delta = ((uint64_t(update) << L::a_shift) - (drop ? 1 : 0)) * n;
    const uint64_t old = group_add(lanes, w, delta);
    bool early = false;
    if (XB_UNLIKELY(!still_collecting(old, delta)))
      early = settle(lanes, w, old, old + delta, int64_t(update) * int64_t(n), drop ? uint32_t(n) : 0, completion).early;
    return {old & W::r_bit, early};
  }

  // The group's arrivals in one fetch_add by its leader; every lane gets the word as that
  // RMW found it.
  template <class G>
  static XB_INLINE uint64_t group_add(G lanes, uint64_t* w, uint64_t delta) {
    lanes.gather();
    return leader_add(lanes, w, delta, mem_order::acq_rel);
  }
  // A fetch_add by the leader alone; its result on every lane, each of which returns after
  // the leader's RMW.
  template <class G>
  static XB_INLINE uint64_t leader_add(G lanes, uint64_t* w, uint64_t delta, mem_order order) {
    uint64_t old = 0;
    if (lanes.leads()) old = P::template fetch_add<ms>(lanes.solo(w), delta, order);
    return lanes.broadcast(old);
  }

  // The common case costs one bit test: Z is still clear after this arrival, so it was clear
  // before (no completion step was running), this arrival did not complete the phase, and
  // it did not over-arrive (that would have carried into Z). Testing the claim of the old
  // and new states instead cost ~20 vector instructions per wave on AMDGPU.
  static XB_INLINE bool still_collecting(uint64_t old, uint64_t delta) {
    // Z and A lie in the high half: where delta's low half is 0 (arrivals without drops in
    // the block layout), the high halves' sum decides, and AMDGPU is spared a 64-bit add.
    if (L::a_shift >= 32 && uint32_t(delta) == 0)
      return ((uint32_t(old >> 32) + uint32_t(delta >> 32)) >> (W::z_shift - 32) & 1) == 0;
    return !W::all_arrived(old + delta);
  }

  // What an arrival that was not still_collecting found: `completed`, its group completed
  // the phase (the completion step has run and is published); `early`, counted in the next
  // phase while this one's completion step runs, so that the caller must wait for that claim
  // to be published (3. above) before handing out the token (the R bit it was counted under
  // is the flip of `old`'s); neither, counted in a phase a tx-count still holds open.
  // settle() itself never waits (5. above). Every lane of the group runs it alike, on the
  // word the group's arrival found; `arrivals` (the update of all lanes together) and
  // `drops` (how many of them dropped) are for the checks. Straight-line, with no early
  // return: AMDGPU's structured control flow turned returns into flags to test again.
  struct settled {
    bool completed;
    bool early;
  };
  template <class G, class Completion>
  static XB_INLINE settled settle(G lanes, uint64_t* w, uint64_t old, uint64_t now, int64_t arrivals,
                                  uint32_t drops, Completion& completion) {
    const uint32_t op = drops ? XB_OP_ARRIVE_AND_DROP : XB_OP_ARRIVE;
    // Arrivals leave T as it is, so both outcomes are tests of old's Z and T. This arrival
    // claims the phase (`completes`) where Z was clear and no tx-count is left (Z is set in
    // `now`: the caller's still_collecting failed), one masked compare. Claimed before this
    // arrival (`early`): a completion step runs, or everyone dropped out. Written as a
    // second masked compare, `early` made the compiler merge the two into a range test.
    const uint64_t zt = old & (W::z_bit | W::t_mask);
    const uint64_t idle_tx = uint64_t(W::t_bias) << L::t_shift;
    const bool completes = zt == idle_tx;
    const bool early = !completes && W::all_arrived(old) && W::claimed(old);
    if (XB_CHECKED) {
      // Everyone dropped out: nobody may arrive any more (the barrier never completes again).
      if (early && W::expected(old) == 0)
        fault(drops ? XB_FAULT_DROP_EMPTY : XB_FAULT_OVER_ARRIVAL, op, w, old, arrivals, 0);
      if (!early && arrivals > W::pending(old)) fault(XB_FAULT_OVER_ARRIVAL, op, w, old, arrivals, W::pending(old));
      if (!early && int64_t(drops) > W::expected(old))
        fault(XB_FAULT_DROP_EMPTY, op, w, old, drops, W::expected(old));
    }
    if (completes) complete(lanes, w, now, completion);
    return {completes, early};
  }

  // arrive() then wait(). The fast case waits on the R bit as the arrival found it, with no
  // detour through a bool. The completer returns at once: it published the phase itself, and
  // its claiming acq_rel RMW read from the release sequence of every arrival and tx update of
  // the phase, so it has seen them all; polling would only re-read its own publish (one
  // device-scope round trip for a wide barrier). The other lanes of its group return with
  // it where the leader's acquire stands for theirs (AMDGPU waves); elsewhere each polls
  // once for its own. Both waits come after settle() (5. above).
  template <class Completion>
  static XB_DEVICE void arrive_and_wait(uint64_t* w, Completion& completion) {
    const auto lanes = P::lanes_here();
    if (XB_LIKELY(lanes.agree(w, 1))) arrive_and_wait_as(lanes, w, completion);
    else arrive_and_wait_as(single_lane(), w, completion);
  }
  template <class G, class Completion>
  static XB_INLINE void arrive_and_wait_as(G lanes, uint64_t* w, Completion& completion) {
    const uint64_t n = lanes.size();
    const uint64_t delta = n << L::a_shift;
    const uint64_t old = group_add(lanes, w, delta);
    if (XB_LIKELY(still_collecting(old, delta))) {
      wait_r(lanes, w, old, XB_OP_WAIT);
      return;
    }
    // One wait loop for the other outcomes, on the R bit (the sign) of `r`: AMDGPU's control
    // flow must be structured, and a loop per outcome cost it flags and branches to merge.
    const settled s = settle(lanes, w, old, old + delta, int64_t(n), 0, completion);
    if (s.completed) {
      // The other lanes acquire by a poll of their own where the leader's does not stand
      // for theirs; the phase is published, so they wait only for the claim to be gone (R
      // may have flipped twice, where the step completed the next phase as well).
      if (!(lanes.acquires_as_one() || lanes.leads())) wait_claim_published(lanes, w, old & W::r_bit, XB_OP_WAIT);
      return;
    }
    uint64_t r = old;
    if (s.early) {
      wait_claim_published(lanes, w, old & W::r_bit, XB_OP_ARRIVE);
      r = ~old;  // the next phase's R bit
    }
    wait_r(lanes, w, r, XB_OP_WAIT);
  }

  // arrive_tx (arrivals > 0), expect_tx (arrivals 0, tx > 0) and complete_tx (tx < 0), each
  // one compare-and-swap so that the arrival and the tx change are a single atomic step
  // (CUDA's checked builds also send arrivals and drops this way: `drop` lowers E). The
  // CAS loop never waits: a lane that finds the previous phase claimed leaves it, lets the
  // completion step run (it may be another lane's of this wave), waits for the publish, and
  // tries again (5. above).
  template <class Completion, class Mirror = no_mirror>
  static XB_DEVICE bool tx_update(uint64_t* w, uint32_t arrivals, int64_t tx_delta, Completion& completion,
                                  uint32_t op, bool drop = false, Mirror mirror = Mirror()) {
    for (;;) {
      uint64_t old = P::template load<ms>(w, mem_order::relaxed);
      uint64_t now = 0;
      bool blocked = false;
      uint32_t iteration = 0;
      for (;;) {
        if (W::claimed(old)) {  // the previous phase's completion step is running (3. above)
          if (XB_CHECKED && W::expected(old) == 0)  // everyone dropped out: it never completes again
            fault(arrivals && !drop ? XB_FAULT_OVER_ARRIVAL : XB_FAULT_DROP_EMPTY, op, w, old, arrivals, 0);
          blocked = true;
          break;
        }
        if (XB_CHECKED && int64_t(arrivals) > W::pending(old))
          fault(XB_FAULT_OVER_ARRIVAL, op, w, old, arrivals, W::pending(old));
        if (XB_CHECKED && drop && W::expected(old) == 0) fault(XB_FAULT_DROP_EMPTY, op, w, old, 1, 0);
        const int64_t t = W::tx(old) + tx_delta;
        if (XB_CHECKED && (t > max_tx || t < -max_tx))
          fault(XB_FAULT_TX_OVERFLOW, op, w, old, t, t > 0 ? max_tx : -max_tx);
        now = W::with_tx(old + (uint64_t(arrivals) << L::a_shift) - (drop ? 1 : 0), t);
        if (P::template compare_exchange<ms>(w, old, now, mem_order::acq_rel)) break;
        P::backoff(iteration);  // not wait_backoff: a failed CAS means another thread's CAS landed
      }
      if (!blocked) {
        mirror(old & W::r_bit);
        if (W::claimed(now)) complete(single_lane(), w, now, completion);
        return W::parity(old);
      }
      wait_claim_published(single_lane(), w, old & W::r_bit, op);
    }
  }
};

// ---------------------------------------------------------------------------------------
// The direct layouts: barriers without a completion function, in unchecked builds. Here
// nothing has to run between a phase's last arrival and its waiters, so the RMW that
// completes a phase publishes it in the same atomic, and waiters wait for one atomic, not
// for a claim and a publish. A second RMW arms the phase, made by its first arrival, off
// the completer's path (3.).
//
//   block and thread scope (with a tx-count):
//   63   62 ........... 42   41    40 ........... 20   19 .......... 0
//   R    A (21 bits)         -     T (21 bits)         E (20 bits)
//
//   device and system scope (no tx-count):
//   63   62 .................... 31   30 ............ 0
//   R    A (32 bits)                  E (31 bits)
//
// 1. An armed phase has A = 2^a - E + (its arrivals so far) - (1 while T != 0), where a is
//    A's width. An arrival adds its count to A (a drop also takes 1 from E, for later
//    phases); the RMW that makes A reach 2^a carries into R, which flips: the phase is
//    complete, in that single RMW, and A wraps to 0 (to more only on over-arrival, which is
//    undefined). Atomics on one word are totally ordered, so exactly one RMW carries per
//    phase; its thread sees R differ between its old and new value: it is the completer.
// 2. The tx-count T (biased by 2^20; block layout) holds one arrival back while it is not 0:
//    the compare-and-swap that moves T away from 0 also takes 1 from A, the one that brings
//    it back to 0 gives it back. So A carries exactly when every arrival is in and T is 0
//    (docs/mbarrier-semantics.md, P1: pending 0 and tx -16 is not complete), whichever
//    operation gets there last. A phase ends with T = 0, so the next starts with T = 0.
// 3. Phase 0 is armed by init; every later phase by its first operation. After the carry
//    the word is unarmed with A = 0 (1.). The arrival that finds A = 0 in its own RMW's
//    result is the phase's first, and adds 2^a - E with E from that same result: no
//    operation of the phase preceded it, so no drop of this phase has lowered E yet, and
//    drops counted in the completed phase have, so a drop lowers the count from the phase
//    after the one it is counted in, as cuda::barrier says. Arrivals that land between the
//    first one's RMW and its arming count on from 1; if they make up the phase, the arming
//    RMW carries and its thread is the completer. If more arrived than the phase expects
//    (threads that arrive without waiting), the carry leaves the surplus in A: they are the
//    next phase's, whose first arrival has come and gone, so the thread whose arming
//    carried arms that phase too, and again while its arming carries with a surplus
//    (arm_spill()). A surplus arrival knows itself from its own RMW's result (unarmed, at
//    least E in) and which phase it is counted in (A / E phases on); its token names that
//    phase, handed out once the armings have reached it (surplus_token()). A drop
//    lowers E in its own RMW, so drops are compare-and-swaps (4.), never counted before an
//    arming: E stays the count the phase after began with. Armed, A >= 2^a - E - 1 > 0,
//    so the test fires once per phase and never in an armed one. Why the first arrival and
//    not the completer: a completer that armed would make a second dependent RMW before its
//    own next arrival, and that arrival is the last of the next phase as often as not (it
//    learns of the phase's end first but leaves last), so every phase would wait for the
//    arming; the first arrival's arming overlaps the other arrivals of its phase instead
//    (docs/performance.md has the cycles).
// 4. Armed and unarmed phases tell apart by bit 62: armed, A >= 2^a - E - 1 >= 2^(a-1)
//    (E < 2^(a-1)); unarmed, A holds the arrivals counted before the arming, fewer than
//    2^(a-1) (a window of 2^(a-1) arrivals or more, possible only with E close to its
//    maximum and surplus arrivals, 3., reads as armed: a known limit). A tx operation compare-and-swaps
//    on an armed phase, or on an unarmed one that nothing has reached yet (A = 0), which its
//    swap arms as a first arrival would (3.); so does arrive_and_drop. One that finds
//    arrivals in an unarmed phase waits for the first arrival's arming, which that arrival
//    makes before anything its own call waits for (protocol 5.). Arrivals do not wait for
//    it, their fetch_add needs no armed phase, but for a surplus arrival's token (3.).
// 5. Waiters poll R as in the claimed layouts. The carrying RMW continues the release
//    sequences of every arrival and tx update of its phase (all are RMWs on the word), so a
//    waiter that reads the flipped R synchronizes with all of them. No arrival reads what
//    others published (there is no completion function), so arrivals and armings are
//    release RMWs (an arming's thread released its data by its arrival already, but on
//    AMDGPU its own release keeps the compiled code checkable: the ISA tests' lane model
//    cannot tell that the lane that arms is the one that made the wave's arrival, whose
//    release may sit inside that lane's branch). But arrive_and_wait's completer returns
//    without polling, so there the RMW it completes the phase with, its arrival or its
//    arming, must acquire: both are acq_rel where the platform finds that cheaper (CUDA,
//    the host), else the completer fences with acquire once it knows (AMDGPU, where an
//    acquire invalidates caches, on every arrival if the RMW carried it). Everyone dropped
//    out (E = 0): the barrier never completes again, and nothing is armed.
// 6. Lane groups (protocol 6.): the group's arrivals are one fetch_add by its leader, the
//    result is broadcast, and the whole group decides alike; its leader arms. A group that
//    completes a phase with lanes left over (a warp straddling two phases: over-arrival,
//    protocol 6.) arms the phase they are counted in, as an arming with a surplus does.
// Checked builds keep the claimed layouts, whose state tells the checks how many arrivals
// are pending at any time.
// ---------------------------------------------------------------------------------------
template <class P, thread_scope Scope>
struct direct_protocol {
  using claimed = protocol<P, Scope>;
  static constexpr mem_scope ms = scope_of(Scope);
  static constexpr bool has_tx = claimed::block_like;
  static constexpr unsigned a_shift = has_tx ? 42 : 31;
  static constexpr unsigned a_bits = 63 - a_shift;  // A carries into R, bit 63
  static constexpr unsigned e_bits = has_tx ? 20 : 31;
  static constexpr unsigned t_shift = 20;
  static constexpr unsigned t_bits = has_tx ? 21 : 0;
  static constexpr uint64_t one = 1;
  static constexpr uint64_t e_mask = (one << e_bits) - 1;
  static constexpr uint64_t a_mask = (one << a_bits) - 1;
  static constexpr uint64_t r_bit = one << 63;
  static constexpr uint64_t armed_bit = one << 62;  // A >= 2^(a - 1) (4. above)
  static constexpr uint64_t t_mask = has_tx ? ((one << t_bits) - 1) << t_shift : 0;
  static constexpr int64_t t_bias = has_tx ? int64_t(1) << (t_bits - 1) : 0;
  static constexpr int64_t max_count = int64_t(e_mask);
  static_assert(has_tx ? e_bits <= t_shift && t_shift + t_bits <= a_shift : e_bits <= a_shift,
                "direct layout: the fields overlap");

  static XB_INLINE constexpr uint64_t arming(uint64_t expected) { return ((one << a_bits) - expected) << a_shift; }
  static XB_INLINE constexpr bool parity(uint64_t s) { return (s >> 63) != 0; }
  static XB_INLINE constexpr uint64_t arrivals_of(uint64_t s) { return (s >> a_shift) & a_mask; }
  static XB_INLINE constexpr uint64_t expected_of(uint64_t s) { return s & e_mask; }
  static XB_INLINE constexpr bool armed(uint64_t s) { return (s & armed_bit) != 0; }
  static XB_INLINE constexpr int64_t tx(uint64_t s) {
    return has_tx ? int64_t((s & t_mask) >> t_shift) - t_bias : 0;
  }
  static XB_INLINE constexpr uint64_t with_tx(uint64_t s, int64_t t) {
    return (s & ~t_mask) | ((uint64_t(t + t_bias) << t_shift) & t_mask);
  }
  // Arrivals still missing (for tests that read the word): armed, 2^a - A less the one a
  // tx-count other than 0 holds back (1., 2.); unarmed, E less the arrivals counted so far.
  static XB_INLINE constexpr int64_t pending(uint64_t s) {
    return armed(s) ? (int64_t(1) << a_bits) - int64_t(arrivals_of(s)) - (tx(s) != 0 ? 1 : 0)
                    : int64_t(expected_of(s)) - int64_t(arrivals_of(s));
  }

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected) {
    P::template store<ms>(w, arming(uint64_t(expected)) | (uint64_t(t_bias) << t_shift) | uint64_t(expected),
                          mem_order::relaxed);
  }

  // Whether the RMW that added `delta` to `old` carried into R (1.). Where delta's low half
  // is 0 (arrivals without drops), the high halves' sum decides: AMDGPU is spared a 64-bit
  // add.
  static XB_INLINE bool carries(uint64_t old, uint64_t delta) {
    if (uint32_t(delta) == 0) {
      const uint32_t high = uint32_t(old >> 32);
      return ((high ^ (high + uint32_t(delta >> 32))) >> 31) != 0;
    }
    return ((old ^ (old + delta)) >> 63) != 0;
  }

  // The phase's first operation finds it unarmed with nothing arrived (3.), unless
  // everyone dropped out (E = 0), after which nothing is armed.
  static XB_INLINE constexpr bool first_of_phase(uint64_t s) { return no_arrivals(s) && expected_of(s) != 0; }
  // A = 0; where A lies in the high half, tested there alone (AMDGPU: one 32-bit test, not
  // a 64-bit compare).
  static XB_INLINE constexpr bool no_arrivals(uint64_t s) {
    if constexpr (a_shift >= 32) return (uint32_t(s >> 32) & uint32_t(a_mask << (a_shift - 32))) == 0;
    return arrivals_of(s) == 0;
  }
  // How arrive_and_wait's RMWs acquire (5.): acq_rel where the platform finds that cheaper,
  // else release and an acquire fence once the thread has completed the phase, so that
  // the arrivals that do not complete it need no acquire.
  static constexpr bool acquire_in_rmw = P::template acquiring_rmw_is_cheap<ms>();

  // arrive(update) by a group of lanes (arrive_and_drop() is a compare-and-swap, 3.).
  // Returns the word as the group's RMW found it (its R bit is the token, but for a surplus
  // arrival's: arrive() takes that after its two ways join, arrive_and_wait_as() on its
  // slow path) and whether the group completed the phase. `waits`: the caller returns
  // without polling when the group completed the phase (arrive_and_wait), so the RMW it
  // completed the phase with must acquire, or the caller fence (5.).
  struct counted {
    uint64_t old;
    bool completed;
  };
  template <bool waits = false, class G>
  static XB_INLINE counted arrive_as(G lanes, uint64_t* w, ptrdiff_t update) {
    const added a = add_arrivals<waits>(lanes, w, update);
    if (XB_LIKELY(counted_in_armed(a.old, a.delta))) return {a.old, false};
    return settle<waits>(lanes, w, a.old, a.delta);
  }

  // The group's arrivals in one fetch_add by its leader: the word it found, and what it added.
  struct added {
    uint64_t old;
    uint64_t delta;
  };
  template <bool waits, class G>
  static XB_INLINE added add_arrivals(G lanes, uint64_t* w, ptrdiff_t update) {
    const uint64_t n = lanes.size();
    const uint64_t delta = (uint64_t(update) << a_shift) * n;
    lanes.gather();
    const mem_order order = waits && acquire_in_rmw ? mem_order::acq_rel : mem_order::release;
    return {claimed::leader_add(lanes, w, delta, order), delta};
  }

  // Whether the RMW that added `delta` to `old` found the phase armed and did not complete
  // it: all there is to do. That is where the word it made reads armed: a carry leaves
  // A = (the update's excess) < 2^(a-1), and an unarmed phase holds fewer arrivals than
  // 2^(a-1) before and after (more would over-arrive by about 2^(a-1)).
  // Where delta's low half is 0 (arrivals without drops), on the high halves alone.
  static XB_INLINE bool counted_in_armed(uint64_t old, uint64_t delta) {
    if (uint32_t(delta) == 0) return ((uint32_t(old >> 32) + uint32_t(delta >> 32)) & uint32_t(armed_bit >> 32)) != 0;
    return armed(old + delta);
  }

  // The rest of an arrival (`old`: the word its RMW found): the arming by the phase's first
  // arrival and the completion, in that order, with no wait. A surplus arrival's token
  // (surplus_token(), which waits) is its callers', after this returns (protocol 5.).
  template <bool waits, class G>
  static XB_INLINE counted settle(G lanes, uint64_t* w, uint64_t old, uint64_t delta) {
    bool completed = carries(old, delta);
    uint64_t after = old + delta;  // the word the RMW that completed the phase made
    // The A test alone first, E's inside: the completer tests one half of the word.
    if (no_arrivals(old)) {
      if (expected_of(old) != 0) {  // the phase's first arrival arms it (3.)
        const uint64_t arm = arming(expected_of(old));
        const mem_order arm_order = waits && acquire_in_rmw ? mem_order::acq_rel : mem_order::release;
        const uint64_t found = claimed::leader_add(lanes, w, arm, arm_order);
        completed = carries(found, arm);
        after = found + arm;
      }
    }
    if (completed) {
      // Arrivals left over after the carry (3.; a group straddling two phases, 6., leaves
      // some too).
      if (!no_arrivals(after)) arm_spill(lanes, w, after);
      P::notify(w);  // wake parked waiters (the host backend parks idle workers)
    }
    return {old, completed};
  }

  // Arrivals that landed in the phase after this one before the first arrival armed this
  // one (more arrivals than it expects, 3.) count there, in a phase whose first arrival has
  // come and gone: the thread whose RMW carried with arrivals left over (`s`, the word its
  // RMW made) arms that phase, and again while its arming carries with some left over.
  // Nothing else arms such a phase: arrivals find A != 0, tx operations and drops wait for
  // the arming (4.). Arrivals left over are fewer than 2^(a-1): a word that reads armed
  // after a carry holds an over-arrival (undefined), and is left as it is.
  template <class G>
  static XB_INLINE void arm_spill(G lanes, uint64_t* w, uint64_t s) {
    while (!no_arrivals(s) && !armed(s) && expected_of(s) != 0) {
      const uint64_t arm = arming(expected_of(s));
      const uint64_t found = claimed::leader_add(lanes, w, arm, mem_order::release);
      s = found + arm;
      if (!carries(found, arm)) break;
      P::notify(w);
    }
  }

  // A surplus arrival (3.): its RMW found the phase unarmed with at least E arrivals in, so
  // it is counted in a later phase, the m-th after the one its RMW found (m = A / E, the
  // arrivals before it in whole phases), which the arming and its spill reach without any
  // help from its thread. `E != 0 && A >= E` as one unsigned subtraction: E = 0 leaves
  // A - E = A, and E > A wraps above A. NVIDIA's emulated round trip runs this form faster
  // than the two comparisons, and AMDGPU compiles both alike (docs/performance.md).
  static XB_INLINE constexpr bool surplus(uint64_t old) {
    return !armed(old) && arrivals_of(old) - expected_of(old) < arrivals_of(old);
  }
  // A surplus arrival's token: waits until the word has left such windows (armed, fewer
  // arrivals than E in an unarmed phase, or none: every phase of the window before its own
  // holds E arrivals or more until it completes, its own too while the spill runs past
  // it), then returns `old` with R flipped once per phase it was counted ahead. No wait of
  // its own call precedes this: a surplus arrival neither arms nor completes (protocol 5.).
  // Where the window held whole phases after its own, they have completed by then, and the
  // token is as far behind as a token whose holder waits only after those arrivals (on
  // CUDA's mbarrier too, a parity two phases behind reads as the phase in progress).
  template <class G>
  static XB_INLINE uint64_t surplus_token(G lanes, uint64_t* w, uint64_t old) {
    claimed::poll_until(
        lanes, w, [](uint64_t s) { return armed(s) || arrivals_of(s) < expected_of(s) || no_arrivals(s); },
        XB_OP_ARRIVE);
    const uint32_t ahead = uint32_t(arrivals_of(old)) / uint32_t(expected_of(old));
    return old ^ (uint64_t(ahead & 1) << 63);
  }

  // arrive(update), and arrive_and_drop() by compare-and-swap (as a tx operation, 4.): a
  // drop's RMW lowers E at once, and in a phase not yet armed it would lower the count the
  // first arrival arms with, or that of a spilled-into phase (arm_spill()).
  static XB_DEVICE bool arrive(uint64_t* w, ptrdiff_t update, bool drop) {
    if (drop) return parity(tx_update(w, 1, 0, true));
    const auto lanes = P::lanes_here();
    const counted c = XB_LIKELY(lanes.agree(w, uint64_t(update) << 1))
                          ? arrive_as(lanes, w, update)
                          : arrive_as(single_lane(), w, update);
    // After the two ways join, as claimed::arrive() waits (protocol 5.).
    if (XB_UNLIKELY(!c.completed && surplus(c.old))) return parity(surplus_token(single_lane(), w, c.old));
    return parity(c.old);
  }

  // arrive() then wait(). The completer's carrying RMW (its arrival, or its arming as the
  // phase's first arrival; acq_rel, or followed by an acquire fence, 5.) read from the
  // release sequence of every arrival and tx update of the phase, so it returns without
  // the poll that would re-read its own carry. The other lanes of its group acquire by one
  // poll of their own where the leader's acquire does not stand for theirs, whatever it
  // reads: the broadcast follows the leader's RMW, so the poll reads that RMW's value or a
  // later one, and every value from there on continues the release sequences of the
  // phase's arrivals. Every wait comes after settle(), where the call runs it: settle()
  // arms and completes without waiting (protocol 5.); a surplus arrival waits for its token
  // first (surplus_token()).
  static XB_DEVICE void arrive_and_wait(uint64_t* w) {
    const auto lanes = P::lanes_here();
    if (XB_LIKELY(lanes.agree(w, 1))) arrive_and_wait_as(lanes, w);
    else arrive_and_wait_as(single_lane(), w);
  }
  template <class G>
  static XB_INLINE void arrive_and_wait_as(G lanes, uint64_t* w) {
    // arrive_as() spelt out: the fast path goes from its test to a wait of its own, which
    // NVIDIA's emulated round trip runs faster than one wait for both paths
    // (docs/performance.md has the cycles).
    const added a = add_arrivals<true>(lanes, w, 1);
    if (XB_LIKELY(counted_in_armed(a.old, a.delta))) {
      claimed::wait_r(lanes, w, a.old, XB_OP_WAIT);
      return;
    }
    const counted c = settle<true>(lanes, w, a.old, a.delta);
    if (!c.completed) {
      const uint64_t token = XB_UNLIKELY(surplus(a.old)) ? surplus_token(lanes, w, a.old) : a.old;
      claimed::wait_r(lanes, w, token, XB_OP_WAIT);
      return;
    }
    // After the join, so that the compiled code shows it on every way the completer
    // returns; after the spill's RMWs, which it then also follows.
    if (!acquire_in_rmw) P::fence(ms, mem_order::acquire);
    if (!(lanes.acquires_as_one() || lanes.leads())) {
      (void)P::template poll<ms>(w);
      P::template after_poll<ms>();
    }
  }

  // arrive_tx (arrivals > 0), expect_tx (arrivals 0, tx > 0), complete_tx (tx < 0) and
  // arrive_and_drop (`drop`: one arrival that also lowers E for later phases; no tx-count
  // in the wide layout), each one compare-and-swap on an armed phase, or on an unarmed one
  // nothing has reached yet, which the swap arms (2., 4.). A lane that finds arrivals in an
  // unarmed phase leaves the loop, waits for the first arrival's arming and tries again;
  // its own call arms nothing then, so the wait comes after anything its call must run
  // (protocol 5.). It waits for the word to read armed, R to flip or A to drain to 0: a
  // window with surplus arrivals may flip R twice or more and end unarmed with nothing in
  // it (3.), where R alone would read as no progress. Returns the parity of the phase it
  // counted in.
  static XB_DEVICE bool tx_update(uint64_t* w, uint32_t arrivals, int64_t tx_delta, bool drop = false) {
    for (;;) {
      uint64_t old = P::template load<ms>(w, mem_order::relaxed);
      uint32_t iteration = 0;
      while (armed(old) || first_of_phase(old)) {
        const uint64_t base = armed(old) ? old : old + arming(expected_of(old));
        const int64_t t = tx(base) + tx_delta;
        // T leaving 0 holds one arrival back, T coming back to 0 gives it back (2.).
        const int64_t held = (tx(base) == 0 && t != 0) ? 1 : (tx(base) != 0 && t == 0) ? -1 : 0;
        const uint64_t now = with_tx(base + (uint64_t(int64_t(arrivals) - held) << a_shift) - (drop ? 1 : 0), t);
        if (P::template compare_exchange<ms>(w, old, now, mem_order::acq_rel)) {
          if (((old ^ now) >> 63) != 0) P::notify(w);  // it completed the phase
          return parity(old);
        }
        P::backoff(iteration);  // another thread's atomic landed
      }
      const uint64_t r = old & r_bit;
      claimed::poll_until(
          single_lane(), w, [r](uint64_t s) { return armed(s) || no_arrivals(s) || (s & r_bit) != r; }, XB_OP_WAIT);
    }
  }
};

}  // namespace detail
}  // namespace xb
