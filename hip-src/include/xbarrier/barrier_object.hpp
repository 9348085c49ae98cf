// xbarrier/barrier_object.hpp - xb::barrier (cuda::barrier's interface) and the
// cuda::device-style transaction-count functions. The checks CUDA leaves undefined live
// here; the lowering is engine.hpp's.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "engine.hpp"
#include "phase_count.hpp"
#include "platform.hpp"
#include "protocol.hpp"

namespace xb {

// A duration in nanoseconds; converts from std::chrono and cuda::std::chrono durations.
struct nanoseconds {
 public:
  int64_t ns;
  XB_INLINE constexpr explicit nanoseconds(int64_t n) : ns(n) {}
  template <class Duration, class Period = typename Duration::period>
  XB_INLINE constexpr nanoseconds(const Duration& d) : ns(saturate(double(d.count()) * 1e9 * double(Period::num) / double(Period::den))) {}

 private:
  // Any period (ps to hours), fractional counts, and durations beyond int64 nanoseconds.
  static XB_INLINE constexpr int64_t saturate(double v) {
    return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v);
  }
};

// A point in time on the clock try_wait_for measures with (xb::clock_ns(): the platform's
// monotonic clock, in nanoseconds), for try_wait_until. The _until forms also take a
// std::chrono or cuda::std::chrono time point whose clock can be read where the code runs.
struct time_point {
  uint64_t ns;
  XB_INLINE constexpr explicit time_point(uint64_t n) : ns(n) {}
};

// What arrive() returns: the barrier state at the arrival (the mbarrier state on the native
// path). parity() is the parity of the phase the arrival was counted in (an extension).
// Checked builds also carry the phase's number where the arrival could tell it
// (phase_count.hpp), so that a wait on a stale token is reported.
class arrival_token {
 public:
  arrival_token() = default;
  XB_INLINE explicit constexpr arrival_token(uint64_t state) : state_(state) {}
  XB_INLINE constexpr bool parity() const { return detail::parity_of_token(state_); }
  XB_INLINE constexpr uint64_t state() const { return state_; }
#if XB_CHECKED
  XB_INLINE constexpr arrival_token(uint64_t state, detail::token_phase phase) : state_(state), phase_(phase) {}
  XB_INLINE constexpr detail::token_phase phase() const { return phase_; }
#endif

 private:
  uint64_t state_ = 0;
#if XB_CHECKED
  detail::token_phase phase_ = {0, false};
#endif
};

namespace detail {

// Stores the completion function without costing space when it is empty (the common case
// keeps xb::barrier<thread_scope_block> at 8 bytes, the size of the PTX mbarrier).
template <class F, bool Empty = __is_empty(F) && !__is_final(F)>
struct completion_slot : private F {
  completion_slot() = default;
  XB_INLINE explicit completion_slot(const F& f) : F(f) {}
  XB_INLINE F& completion() { return *this; }
};
template <class F>
struct completion_slot<F, false> {
  completion_slot() = default;
  XB_INLINE explicit completion_slot(const F& f) : f_(f) {}
  XB_INLINE F& completion() { return f_; }
  F f_;
};

// The completion function as the engines run it: the user's, and in checked builds with
// the barrier's phase count stored before it (phase_count.hpp). 8 bytes more per barrier
// in checked builds.
template <class F, thread_scope Scope, bool Counted = XB_CHECKED>
struct step_slot : completion_slot<F> {
  step_slot() = default;
  XB_INLINE explicit step_slot(const F& f) : completion_slot<F>(f) {}
  XB_INLINE F& steps() { return this->completion(); }
  XB_INLINE void reset_phases() {}
};
template <class F, thread_scope Scope>
struct step_slot<F, Scope, true> : completion_slot<F> {
  using count = phase_count<platform, Scope>;
  step_slot() = default;
  XB_INLINE explicit step_slot(const F& f) : completion_slot<F>(f) {}
  XB_INLINE step_slot& steps() { return *this; }
  XB_INLINE const uint64_t* phases() const { return &phases_; }
  XB_INLINE void reset_phases() { count::reset(&phases_); }
  XB_INLINE void operator()() {
    count::count(&phases_);
    this->completion()();
  }
  uint64_t phases_;
};

struct barrier_access;

// A block-scope barrier with a completion function has three words: the native CUDA
// lowering's two mbarriers and control word (engine_sm90_completion.hpp), the first word alone
// elsewhere. Every target keeps that size, and max() one below the protocol's (the native
// lowering's gate takes one count), so portable code sees one barrier type. The exceptions:
// sm_90 sanitizer builds give a block-scope barrier without one a second word, its shadow
// mbarrier (engine_sm90_checked.hpp), so there it has 16 bytes, 8 in the host pass and on
// sm_80; and every checked build adds the phase count (step_slot). A barrier of system
// scope without one has four words on every target, for its split form (engine_system.hpp),
// whose objects the host side sets up for kernels. A barrier lives in shared memory, declared
// by device code, which is compiled per target; nothing outside it may rely on its size.
template <thread_scope Scope, class Completion>
struct state_words {
  static constexpr bool gated =
      (Scope == thread_scope_block || Scope == thread_scope_thread) && !__is_same(Completion, empty_completion);
  static constexpr bool system_split = Scope == thread_scope_system && __is_same(Completion, empty_completion);
  static constexpr unsigned value = gated ? 3
                                    : system_split ? 4
                                    : (XB_CHECKED_MBARRIER && Scope == thread_scope_block) ? 2
                                                                                           : 1;
};

}  // namespace detail

template <thread_scope Scope, class Completion = empty_completion>
class barrier : private detail::step_slot<Completion, Scope> {
  using slot = detail::step_slot<Completion, Scope>;
  using phase_counter = detail::phase_count<detail::platform, Scope>;
  using proto = detail::protocol<detail::platform, Scope>;
  using engine = typename detail::engine_for<Scope, Completion>::type;
  friend struct detail::barrier_access;

 public:
  using arrival_token = xb::arrival_token;

  // Trivial, as CUDA's: a __shared__ barrier is set up by init() from one thread.
  barrier() = default;
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;

  // Explicit, as the standard barrier's: `barrier b = 5;` is not a barrier of 5.
  XB_INLINE explicit barrier(ptrdiff_t expected, Completion completion = Completion()) : slot(completion) {
    engine::init(state_, expected, max());
    this->reset_phases();
  }

  // Constructs the completion function in place: the barrier itself is trivially constructed
  // shared memory (the GPU platforms copy it bytewise, so there it must be trivially copyable).
  XB_INLINE friend void init(barrier* b, ptrdiff_t expected, Completion completion = Completion()) {
    detail::platform::construct_copy(b->completion_storage(), completion);
    engine::init(b->state_, expected, max());
    b->reset_phases();
  }

  [[nodiscard]] XB_INLINE arrival_token arrive(ptrdiff_t update = 1) {
    return counted([&] { return engine::arrive(state_, update, this->steps()); });
  }
  XB_INLINE void wait(arrival_token&& token) const {
    check_token(token);
    waits::wait(state_, token.state(), step());
  }
  XB_INLINE void wait_parity(bool parity) const { waits::wait_parity(state_, parity, step()); }
  [[nodiscard]] XB_INLINE bool try_wait(arrival_token&& token) const {
    check_token(token);
    return waits::test(state_, token.state(), step());
  }
  [[nodiscard]] XB_INLINE bool try_wait_parity(bool parity) const { return waits::test_parity(state_, parity, step()); }
  [[nodiscard]] XB_INLINE bool try_wait_for(arrival_token&& token, nanoseconds timeout) const {
    check_token(token);
    return waits::wait_for(state_, token.state(), timeout.ns < 0 ? 0 : uint64_t(timeout.ns), step());
  }
  [[nodiscard]] XB_INLINE bool try_wait_parity_for(bool parity, nanoseconds timeout) const {
    return waits::wait_parity_for(state_, parity, timeout.ns < 0 ? 0 : uint64_t(timeout.ns), step());
  }
  // Until a point in time: the time left, then the _for form (a deadline already passed
  // still tests once, as a zero timeout does).
  [[nodiscard]] XB_INLINE bool try_wait_until(arrival_token&& token, time_point deadline) const {
    return try_wait_for(static_cast<arrival_token&&>(token), nanoseconds(left_until(deadline)));
  }
  [[nodiscard]] XB_INLINE bool try_wait_parity_until(bool parity, time_point deadline) const {
    return try_wait_parity_for(parity, nanoseconds(left_until(deadline)));
  }
  template <class TimePoint, class Clock = typename TimePoint::clock>
  [[nodiscard]] XB_INLINE bool try_wait_until(arrival_token&& token, const TimePoint& deadline) const {
    return try_wait_for(static_cast<arrival_token&&>(token), nanoseconds(deadline - Clock::now()));
  }
  template <class TimePoint, class Clock = typename TimePoint::clock>
  [[nodiscard]] XB_INLINE bool try_wait_parity_until(bool parity, const TimePoint& deadline) const {
    return try_wait_parity_for(parity, nanoseconds(deadline - Clock::now()));
  }
  XB_INLINE void arrive_and_wait() { engine::arrive_and_wait(state_, this->steps()); }
  XB_INLINE void arrive_and_drop() { engine::arrive_and_drop(state_, this->steps()); }

  XB_HOST_DEVICE static constexpr ptrdiff_t max() noexcept {
    return detail::state_words<Scope, Completion>::gated ? proto::max_count - 1 : proto::max_count;
  }

 private:
  using waits = detail::waits_of<engine>;
  static XB_INLINE int64_t left_until(time_point deadline) {
    const uint64_t now = detail::platform::now_ns();
    return deadline.ns > now ? int64_t(deadline.ns - now) : 0;
  }
  XB_INLINE Completion& completion_storage() { return this->completion(); }
  // The completion step for a wait that may run a phase's step (the waits are const, as
  // CUDA's, but a step is the barrier's own work).
  XB_INLINE auto& step() const { return const_cast<barrier*>(this)->steps(); }

  // The token of an arrival (`arrive` returns the engine's state); checked builds read the
  // phase count around it, to number the token's phase (phase_count.hpp).
  template <class Arrive>
  XB_INLINE arrival_token counted(Arrive arrive) {
#if XB_CHECKED
    const uint64_t before = phase_counter::read(this->phases());
    const uint64_t state = arrive();
    const uint64_t after = phase_counter::read(this->phases());
    return arrival_token(state, phase_counter::of_arrival(before, after, detail::parity_of_token(state)));
#else
    return arrival_token(arrive());
#endif
  }
  // Checked builds: a wait on a token two or more phases old is a fault, at once.
  XB_INLINE void check_token(const arrival_token& token) const {
#if XB_CHECKED
    const detail::token_phase t = token.phase();
    if (!t.known) return;
    if constexpr (detail::state_words<Scope, Completion>::system_split) {
      // The split form's phase is the slower side's: the token is stale once both sides
      // have completed the phase after it (its own side alone may have run ahead).
      using split = detail::system_split;
      if (split::is_split(state_)) {
        if (split::done(state_, t.phase + 1))
          proto::fault(XB_FAULT_STALE_TOKEN, XB_OP_WAIT, state_, *state_, int64_t(t.phase),
                       int64_t(split::current(state_)));
        return;
      }
    }
    const uint64_t c = phase_counter::read(this->phases());
    const uint64_t s = detail::platform::template load<proto::ms>(state_, detail::mem_order::acquire);
    if (phase_counter::stale(t.phase, c, proto::W::parity(s)))
      proto::fault(XB_FAULT_STALE_TOKEN, XB_OP_WAIT, state_, s, int64_t(t.phase),
                   int64_t(phase_counter::at_least(c, proto::W::parity(s))));
#else
    (void)token;
#endif
  }

  // The barrier words (the first is the mbarrier object on the native path).
  alignas(8) uint64_t state_[detail::state_words<Scope, Completion>::value];
};

namespace detail {
struct barrier_access {
  template <thread_scope S, class C>
  static XB_INLINE uint64_t* word(barrier<S, C>& b) { return b.state_; }
  // The completion step as the engines run it (with the phase count in checked builds).
  template <thread_scope S, class C>
  static XB_INLINE auto& completion(barrier<S, C>& b) { return b.steps(); }
  template <thread_scope S, class C, class Arrive>
  static XB_INLINE arrival_token counted(barrier<S, C>& b, Arrive arrive) { return b.counted(arrive); }
};

// The tx functions are valid only on block-scope barriers in shared memory (cuda::barrier's
// rule). The scope is the type's, so another scope does not compile (a static_assert in each
// function); where the barrier lives is known at run time, and checked builds report a
// barrier outside shared memory as a fault rather than leaving it undefined.
template <thread_scope S, class C>
XB_INLINE void check_tx_barrier(barrier<S, C>& b, uint32_t op) {
  uint64_t* w = barrier_access::word(b);
  if (XB_CHECKED && !platform::is_shared(w)) protocol<platform, S>::fault(XB_FAULT_TX_NOT_SHARED, op, w, *w, 0, 0);
}

template <thread_scope S, class C>
XB_INLINE void check_tx_range(barrier<S, C>& b, ptrdiff_t tx, uint32_t op) {
  using proto = protocol<platform, S>;
  if (XB_CHECKED && (tx < 0 || tx > proto::max_tx)) {
    uint64_t* w = barrier_access::word(b);
    proto::fault(XB_FAULT_TX_RANGE, op, w, *w, tx, proto::max_tx);
  }
}

// complete_tx: what the end of an asynchronous copy does to the barrier.
template <thread_scope S, class C>
XB_INLINE void complete_tx(barrier<S, C>& b, ptrdiff_t bytes, uint32_t op = XB_OP_COMPLETE_TX) {
  static_assert(S == thread_scope_block, "complete_tx needs a barrier<thread_scope_block>");
  check_tx_barrier(b, op);
  check_tx_range(b, bytes, op);
  engine_for<S, C>::type::complete_tx(barrier_access::word(b), bytes, barrier_access::completion(b), op);
}
}  // namespace detail

namespace device {

// The 8-byte barrier word: the PTX mbarrier object on the native CUDA path (the protocol's
// word in checked builds). As in CCCL, only for a block-scope barrier without a completion
// function.
template <thread_scope S, class C>
XB_INLINE uint64_t* barrier_native_handle(barrier<S, C>& b) {
  static_assert(S == thread_scope_block && __is_same(C, empty_completion),
                "barrier_native_handle: only barrier<thread_scope_block> has a native handle");
  return detail::barrier_access::word(b);
}

// Arrive with `arrive_count_update` arrivals and raise the tx-count by
// `transaction_count_update`, atomically (cuda::device::barrier_arrive_tx).
template <thread_scope S, class C>
[[nodiscard]] XB_INLINE arrival_token barrier_arrive_tx(barrier<S, C>& b, ptrdiff_t arrive_count_update,
                                                        ptrdiff_t transaction_count_update) {
  static_assert(S == thread_scope_block,
                "xb::device::barrier_arrive_tx needs a barrier<thread_scope_block>: CUDA offers the tx-count "
                "only on block-scope barriers in shared memory");
  using proto = detail::protocol<detail::platform, S>;
  uint64_t* w = detail::barrier_access::word(b);
  if (XB_CHECKED && (arrive_count_update < 1 || arrive_count_update > barrier<S, C>::max()))
    proto::fault(XB_FAULT_UPDATE_RANGE, XB_OP_ARRIVE_TX, w, *w, arrive_count_update, barrier<S, C>::max());
  detail::check_tx_barrier(b, XB_OP_ARRIVE_TX);
  detail::check_tx_range(b, transaction_count_update, XB_OP_ARRIVE_TX);
  return detail::barrier_access::counted(b, [&] {
    return detail::engine_for<S, C>::type::arrive_tx(w, arrive_count_update, transaction_count_update,
                                                     detail::barrier_access::completion(b));
  });
}

// Raise the tx-count of the current phase (cuda::device::barrier_expect_tx).
template <thread_scope S, class C>
XB_INLINE void barrier_expect_tx(barrier<S, C>& b, ptrdiff_t transaction_count_update) {
  static_assert(S == thread_scope_block,
                "xb::device::barrier_expect_tx needs a barrier<thread_scope_block>: CUDA offers the tx-count "
                "only on block-scope barriers in shared memory");
  detail::check_tx_barrier(b, XB_OP_EXPECT_TX);
  detail::check_tx_range(b, transaction_count_update, XB_OP_EXPECT_TX);
  detail::engine_for<S, C>::type::expect_tx(detail::barrier_access::word(b), transaction_count_update,
                                            detail::barrier_access::completion(b));
}

}  // namespace device
}  // namespace xb
