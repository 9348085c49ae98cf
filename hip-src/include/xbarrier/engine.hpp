// xbarrier/engine.hpp - how each kind of barrier is lowered. xb::barrier forwards every
// operation to engine_for<Scope, Completion>::type, one of:
//   protocol_engine  the portable protocol (engine_portable.hpp): every barrier on AMD GPUs
//                    and the host, the emulated CUDA variant, checked builds, and barriers
//                    the hardware cannot hold.
//   direct_engine    no completion function, unchecked builds, every target (but block
//                    scope on the native sm_90 path): the direct layouts (engine_portable.hpp).
//   mbarrier_engine  CUDA sm_90 release builds, block scope without a completion function:
//                    the PTX mbarrier object itself (engine_sm90_mbarrier.hpp).
//   mbarrier_completion_engine
//                    CUDA sm_90 release builds, block scope with a completion function: two
//                    mbarriers and a control word (engine_sm90_completion.hpp).
//   checked_mbarrier_engine
//                    CUDA sm_90 checked builds, block scope: the checked protocol, with
//                    shadow mbarriers that carry its synchronization for compute-sanitizer
//                    (engine_sm90_checked.hpp).
//   system_engine    system scope without a completion function, every build: the engine
//                    above that fits, or the split form shared with host threads
//                    (engine_system.hpp).
//
// Waits and tests take the completion function too: on the native completion path a
// waiter may be the one that sees a phase end (the copy engine ended it) and runs its step.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "engine_portable.hpp"
#include "engine_sm90_checked.hpp"
#include "engine_sm90_completion.hpp"
#include "engine_sm90_mbarrier.hpp"
#include "engine_system.hpp"
#include "platform.hpp"
#include "protocol.hpp"

namespace xb {
namespace detail {

// The waits as xb::barrier calls them, with the completion function: only the native
// completion engine's waits can run a step; the others' waits ignore it.
template <class Engine>
struct waits_of {
  template <class F>
  static XB_INLINE void wait(const uint64_t* w, uint64_t token, F&) { Engine::wait(w, token); }
  template <class F>
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity, F&) { Engine::wait_parity(w, parity); }
  template <class F>
  static XB_INLINE bool test(const uint64_t* w, uint64_t token, F&) { return Engine::test(w, token); }
  template <class F>
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity, F&) { return Engine::test_parity(w, parity); }
  template <class F>
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns, F&) {
    return Engine::wait_for(w, token, ns);
  }
  template <class F>
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns, F&) {
    return Engine::wait_parity_for(w, parity, ns);
  }
};

template <thread_scope Scope, class Completion>
struct engine_for {
  using type = protocol_engine<Scope>;
};
#if !XB_CHECKED
#if !XB_NATIVE_MBARRIER
template <>
struct engine_for<thread_scope_block, empty_completion> {
  using type = direct_engine<thread_scope_block>;
};
#endif
template <>
struct engine_for<thread_scope_thread, empty_completion> {
  using type = direct_engine<thread_scope_thread>;
};
template <>
struct engine_for<thread_scope_device, empty_completion> {
  using type = direct_engine<thread_scope_device>;
};
#endif
template <>
struct engine_for<thread_scope_system, empty_completion> {
  using type = system_engine<
#if XB_CHECKED
      protocol_engine<thread_scope_system>
#else
      direct_engine<thread_scope_system>
#endif
      >;
};
#if XB_NATIVE_MBARRIER
template <>
struct engine_for<thread_scope_block, empty_completion> {
  using type = mbarrier_engine;
};
template <class Completion>
struct engine_for<thread_scope_block, Completion> {
  using type = mbarrier_completion_engine;
};
template <>
struct waits_of<mbarrier_completion_engine> : mbarrier_completion_engine {};
#endif
#if XB_CHECKED_MBARRIER
template <>
struct engine_for<thread_scope_block, empty_completion> {
  using type = checked_mbarrier_engine<false>;
};
template <class Completion>
struct engine_for<thread_scope_block, Completion> {
  using type = checked_mbarrier_engine<true>;
};
#endif

// The shared -> global bulk copies (xb::device::bulk_store): the copy engine on the native
// path, the calling thread elsewhere.
#if XB_NATIVE_MBARRIER
using bulk_store_engine = mbarrier_bulk_store;
#else
using bulk_store_engine = synchronous_bulk_store;
#endif

}  // namespace detail
}  // namespace xb
