// xbarrier/engine_system.hpp - barriers of system scope without a completion function, in
// one of two forms, told apart at run time by their fourth word:
//
//   shared  one protocol word that every participant's atomics update, wherever it runs
//           (init() and the constructor make this form): the word of `Base`, the engine
//           the other scopes use (engine.hpp).
//   split   one share per side, host threads on one side and one device's kernel threads
//           on the other (the Rust SystemBarrier::split makes it, hip-src/host/
//           system_barrier.cpp): each side's threads count their arrivals with atomics on
//           their own side's object, and no atomic crosses the link. A PCIe GPU without
//           native host atomics migrates a page between the sides for every atomic the
//           other side made last; plain loads and stores cross it in microseconds.
//
// The split form's words, on each side:
//   w[0]  the side's share: the portable protocol (protocol.hpp), expecting that side's
//         participants
//   w[1]  the number of share phases this side has completed (C), with `left` set once
//         all its participants have left
//   w[2]  where this side publishes C for the other side (memory both sides reach)
//   w[3]  where the other side publishes its C
// Every atomic and fence is of system scope, as in the shared form: a side's arrivals are
// releases of system scope, so the AMDGPU memory-model tests hold each path to the shared
// form's rules, and no argument about scopes chaining is needed.
//
// Why this is cuda::barrier's phase: phase k completes when both sides' shares have
// completed their phase k, i.e. once both published counts exceed k.
// 1. The share's completion step stores C = k + 1 (with release) before the protocol
//    publishes the share's phase (protocol.hpp 2.), then stores it where w[2] points
//    (release). Completion steps of one share run one at a time in phase order (protocol.hpp
//    3.), so each C is a sequence of increasing stores by one writer at a time.
// 2. An arrival counted in share phase k reads C after its atomic: the atomic read the
//    publish that began phase k (or waited for it), which the store of k preceded, so C >= k;
//    and C <= k + 1 unless the share finished two more phases in between, which takes this
//    side's arrivals for phase k + 1 that do not wait for this one's read: threads arriving
//    for others (an update above their own share), or the same thread again. So k is C or
//    C - 1, whichever has the arrival's parity; the token carries k. (Where the share did
//    finish two more phases, the token names k + 2: a wait on it waits longer. In the shared
//    form, as on CUDA's hardware, such a token aliases the current phase the same way.)
// 3. A wait for phase k returns once this side's C and the other side's published C exceed
//    k, both read with acquire: the first synchronizes with this side's completer of k, which
//    acquired every arrival of its share (protocol.hpp 4.); the second with the other side's
//    completer, whose release at system scope follows its share's arrivals. So whatever
//    either side wrote before arriving in phase k is seen after the wait.
// 4. A side whose participants have all left (arrive_and_drop took its expected count to 0)
//    completes every later phase at once: the step of its last phase finds the share expecting
//    nobody and sets `left` in C, which puts C above every phase number while the bits
//    below keep the count, for waits on a parity once both sides have left. The step reads
//    the share's word for that with acquire: a drop counted in the next phase while the
//    step runs may be what took the count to 0, and the other side, which returns from its
//    waits on `left`, must see what the dropping thread wrote before its drop (with a
//    relaxed read, GenMC finds the other side's read of that data racing).
// 5. Each side's arrivals count in its own share only: one call with more arrivals than its
//    side's share still expects is an over-arrival of that share (a fault in checked
//    builds), even where the other side still owes arrivals; once a side's share of a phase
//    is in, its next arrivals count toward the next phase (the side runs ahead) while the
//    other side finishes. That is what the split form asks of its users: a participant is
//    a host thread or a kernel thread, counted on its own side. The barrier's phase is the
//    slower side's, so the waits on a parity name it (cuda::barrier's current or previous
//    phase); a thread whose side ran ahead waits on its token, which names its own phase.
// 6. Waits come after the arrival's completion step (protocol.hpp 5.): arrive() returns
//    before any poll, and the waits poll both counts with the platform's wait back-off.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "platform.hpp"
#include "protocol.hpp"

namespace xb {
namespace detail {

// The split form's words (above) and what both sides run on them.
struct system_split {
  using share = protocol<platform, thread_scope_system>;
  static constexpr mem_scope ms = mem_scope::system;
  static constexpr uint64_t left = uint64_t(1) << 62;  // 4.; above every phase number
  static constexpr uint64_t token_phase_mask = ~uint64_t(0) >> 1;  // a token's phase number

  static XB_INLINE bool is_split(const uint64_t* w) { return w[3] != 0; }
  static XB_INLINE uint64_t* count(uint64_t* w) { return &w[1]; }
  static XB_INLINE const uint64_t* count(const uint64_t* w) { return &w[1]; }
  static XB_INLINE uint64_t* mirror(uint64_t* w) { return reinterpret_cast<uint64_t*>(w[2]); }
  static XB_INLINE const uint64_t* other(const uint64_t* w) { return reinterpret_cast<const uint64_t*>(w[3]); }

  // A token names the phase: its number below bit 63, its parity in bit 63 (the parity
  // every engine's token has there).
  static XB_INLINE constexpr uint64_t token_of(uint64_t phase) { return (phase & token_phase_mask) | (phase << 63); }
  static XB_INLINE constexpr uint64_t phase_of(uint64_t token) { return token & token_phase_mask; }

  // One side's share of a fresh barrier, expecting `expected` of that side's arrivals per
  // phase; `published` is this side's slot, `other` the other side's (both zero-filled).
  static XB_INLINE void init_side(uint64_t* w, ptrdiff_t expected, uint64_t* published, const uint64_t* other) {
    share::init(w, expected);
    platform::store<ms>(count(w), 0, mem_order::relaxed);
    w[2] = reinterpret_cast<uint64_t>(published);
    w[3] = reinterpret_cast<uint64_t>(other);
  }

  // The share's completion step (1., 4.): the caller's step (checked builds count the share's
  // phases there), then C for this side and the other.
  template <class F>
  struct publish_step {
    uint64_t* w;
    F& inner;
    XB_INLINE void operator()() {
      inner();
      const uint64_t next = platform::load<ms>(count(w), mem_order::acquire) + 1;
      const bool gone = share::W::expected(platform::load<ms>(w, mem_order::acquire)) == 0;
      const uint64_t c = gone ? next | left : next;
      platform::store<ms>(count(w), c, mem_order::release);
      platform::store<ms>(mirror(w), c, mem_order::release);
    }
  };

  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& f) {
    publish_step<F> step{w, f};
    const bool parity = share::arrive(w, update, step, false);
    const uint64_t c = platform::load<ms>(count(w), mem_order::acquire);
    return token_of((c & 1) == uint64_t(parity) ? c : c - 1);  // 2.
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& f) {
    publish_step<F> step{w, f};
    (void)share::arrive(w, 1, step, true);
  }

  // Whether phase `phase` has completed on both sides (3.); acquire where it has.
  static XB_INLINE bool done(const uint64_t* w, uint64_t phase) {
    return platform::poll<ms>(count(w)) > phase && platform::poll<ms>(other(w)) > phase;
  }
  // The phase in progress: the lower of the two counts (a side that ran ahead waits for the
  // other); once both sides have left, the higher one: the side that left last completed
  // the last phase alone, and the barrier stays at its successor.
  static XB_INLINE uint64_t current(const uint64_t* w) {
    const uint64_t mine = platform::poll<ms>(count(w));
    const uint64_t theirs = platform::poll<ms>(other(w));
    if ((mine & theirs & left) != 0) return (mine > theirs ? mine : theirs) & ~left;
    return mine < theirs ? mine : theirs;
  }

  // Polls until `ready` holds or, with a timeout, `timeout_ns` has passed. Untimed waits are
  // bounded in checked builds as the protocol's are (a deadlock becomes a fault); a timed
  // one ends at its own timeout, however long.
  template <class Ready>
  static XB_INLINE bool poll_until(const uint64_t* w, Ready ready, bool timed, uint64_t timeout_ns) {
    uint32_t iteration = 0;
    const uint64_t start = (XB_CHECKED || timed) ? platform::now_ns() : 0;
    const uint64_t bound = XB_CHECKED && !timed ? platform::wait_timeout_ns() : 0;
    while (!ready()) {
      if (timed || (XB_CHECKED && bound != 0 && (iteration & 15) == 0)) {
        const uint64_t elapsed = platform::now_ns() - start;
        if (timed && elapsed >= timeout_ns) return false;
        if (XB_CHECKED && bound != 0 && elapsed > bound)
          share::fault(XB_FAULT_WAIT_TIMEOUT, XB_OP_WAIT, w, platform::load<ms>(w, mem_order::relaxed),
                       int64_t(elapsed), int64_t(bound));
      }
      platform::wait_backoff(iteration);
    }
    platform::after_poll<ms>();
    return true;
  }

  static XB_INLINE void wait(const uint64_t* w, uint64_t token) {
    const uint64_t phase = phase_of(token);
    (void)poll_until(w, [=] { return done(w, phase); }, false, 0);
  }
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns) {
    const uint64_t phase = phase_of(token);
    return poll_until(w, [=] { return done(w, phase); }, true, ns);
  }
  static XB_INLINE bool test(const uint64_t* w, uint64_t token) {
    if (done(w, phase_of(token))) {
      platform::after_poll<ms>();
      return true;
    }
    platform::relax();
    return false;
  }
  // The phase of parity `parity` (the current one or the one before) has completed when the
  // phase in progress has the other parity.
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity) {
    (void)poll_until(w, [=] { return (current(w) & 1) != uint64_t(parity); }, false, 0);
  }
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    return poll_until(w, [=] { return (current(w) & 1) != uint64_t(parity); }, true, ns);
  }
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity) {
    if ((current(w) & 1) != uint64_t(parity)) {
      platform::after_poll<ms>();
      return true;
    }
    platform::relax();
    return false;
  }
};

// barrier<thread_scope_system> without a completion function: the split form where its
// fourth word says so, else `Base` on its first word (the shared form). The copies bound to
// a phase are Base's for both forms: they are done before the call returns (no barrier of
// system scope takes bulk copies), so the caller's own arrival orders them.
template <class Base>
struct system_engine : Base {
  using split = system_split;

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit) {
    Base::init(w, expected, limit);
    w[1] = w[2] = w[3] = 0;
  }
  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& f) {
    return split::is_split(w) ? split::arrive(w, update, f) : Base::arrive(w, update, f);
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& f) {
    if (split::is_split(w)) split::arrive_and_drop(w, f);
    else Base::arrive_and_drop(w, f);
  }
  template <class F>
  static XB_INLINE void arrive_and_wait(uint64_t* w, F& f) {
    if (split::is_split(w)) split::wait(w, split::arrive(w, 1, f));
    else Base::arrive_and_wait(w, f);
  }
  static XB_INLINE void wait(const uint64_t* w, uint64_t token) {
    if (split::is_split(w)) split::wait(w, token);
    else Base::wait(w, token);
  }
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity) {
    if (split::is_split(w)) split::wait_parity(w, parity);
    else Base::wait_parity(w, parity);
  }
  static XB_INLINE bool test(const uint64_t* w, uint64_t token) {
    return split::is_split(w) ? split::test(w, token) : Base::test(w, token);
  }
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity) {
    return split::is_split(w) ? split::test_parity(w, parity) : Base::test_parity(w, parity);
  }
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns) {
    return split::is_split(w) ? split::wait_for(w, token, ns) : Base::wait_for(w, token, ns);
  }
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    return split::is_split(w) ? split::wait_parity_for(w, parity, ns) : Base::wait_parity_for(w, parity, ns);
  }
};

}  // namespace detail
}  // namespace xb
