// xbarrier/platform/interface.hpp - what a platform layer provides, checked at compile time.
//
// check_platform_interface<P>() holds when P has every primitive the protocol, the engines
// and the public headers call, each callable with the listed arguments and returning the
// listed type; otherwise the first missing or mistyped primitive fails a static_assert
// that names it. platform.hpp instantiates it for the chosen platform. What each primitive
// must guarantee is written down in docs/platform-interface.md.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "../abi.h"
#include "../scope.hpp"

namespace xb {
namespace detail {
namespace platform_interface {

template <class...>
struct make_void {
  using type = void;
};
template <class... T>
using void_t = typename make_void<T...>::type;

// A value of type T in an unevaluated operand (std::declval without <utility>).
template <class T>
T&& declval() noexcept;

// Every member of a lane group (lane_group.hpp), on a G: well-formed, with these types.
template <class G>
using lane_group_members = decltype(bool(declval<const G&>().agree(declval<const void*>(), uint64_t())), uint32_t(declval<const G&>().size()),
                                    bool(declval<const G&>().leads()), uint64_t(declval<const G&>().broadcast(uint64_t())),
                                    bool(declval<const G&>().acquires_as_one()),
                                    static_cast<uint64_t*>(declval<const G&>().solo(declval<uint64_t*>())),
                                    declval<const G&>().gather());
template <class G, class = void>
struct is_lane_group {
  static constexpr bool value = false;
};
template <class G>
struct is_lane_group<G, void_t<lane_group_members<G>>> {
  static constexpr bool value = true;
};

// A trivially copyable function object, for construct_copy.
struct probe_function {
  int state;
  void operator()() const {}
};

// has_NAME<P>::value: the expression CALL (written against P) is well-formed and has type
// RETURNS exactly. The scoped form checks the primitive at every mem_scope S.
#define XB_PRIMITIVE(name, returns, call)                                        \
  template <class P, class = void>                                              \
  struct has_##name {                                                           \
    static constexpr bool value = false;                                        \
  };                                                                            \
  template <class P>                                                            \
  struct has_##name<P, void_t<decltype(call)>> {                                \
    static constexpr bool value = __is_same(decltype(call), returns);           \
  };
#define XB_SCOPED_PRIMITIVE(name, returns, call)                                 \
  template <class P, mem_scope S, class = void>                                 \
  struct has_##name##_at {                                                      \
    static constexpr bool value = false;                                        \
  };                                                                            \
  template <class P, mem_scope S>                                               \
  struct has_##name##_at<P, S, void_t<decltype(call)>> {                        \
    static constexpr bool value = __is_same(decltype(call), returns);           \
  };                                                                            \
  template <class P>                                                            \
  struct has_##name {                                                           \
    static constexpr bool value = has_##name##_at<P, mem_scope::block>::value && \
                                  has_##name##_at<P, mem_scope::device>::value && \
                                  has_##name##_at<P, mem_scope::system>::value;  \
  };

// Scoped atomics on the 8-byte barrier word.
XB_SCOPED_PRIMITIVE(load, uint64_t, P::template load<S>(declval<const uint64_t*>(), mem_order::acquire))
XB_SCOPED_PRIMITIVE(store, void, P::template store<S>(declval<uint64_t*>(), uint64_t(), mem_order::release))
XB_SCOPED_PRIMITIVE(fetch_add, uint64_t, P::template fetch_add<S>(declval<uint64_t*>(), uint64_t(), mem_order::acq_rel))
XB_SCOPED_PRIMITIVE(compare_exchange, bool,
                    P::template compare_exchange<S>(declval<uint64_t*>(), declval<uint64_t&>(), uint64_t(), mem_order::acq_rel))
// Waiting.
XB_SCOPED_PRIMITIVE(poll, uint64_t, P::template poll<S>(declval<const uint64_t*>()))
XB_SCOPED_PRIMITIVE(after_poll, void, P::template after_poll<S>())
XB_PRIMITIVE(backoff, void, P::backoff(declval<uint32_t&>()))
XB_PRIMITIVE(wait_backoff, void, P::wait_backoff(declval<uint32_t&>()))
XB_PRIMITIVE(relax, void, P::relax())
XB_PRIMITIVE(notify, void, P::notify(declval<uint64_t*>()))
template <class P, class = void>
struct has_lanes_here {
  static constexpr bool value = false;
};
template <class P>
struct has_lanes_here<P, void_t<decltype(P::lanes_here())>> {
  static constexpr bool value = is_lane_group<decltype(P::lanes_here())>::value;
};
// Fences and time.
XB_PRIMITIVE(fence, void, P::fence(mem_scope::block, mem_order::seq_cst))
XB_PRIMITIVE(fence_proxy_async, void, P::fence_proxy_async())
// How a completer acquires: a constant expression (the protocol picks its orders at compile
// time), checked by using it as a template argument.
template <bool B>
struct compile_time_bool {
  static constexpr bool value = B;
};
XB_SCOPED_PRIMITIVE(acquiring_rmw_is_cheap, bool,
                    bool(compile_time_bool<P::template acquiring_rmw_is_cheap<S>()>::value))
XB_PRIMITIVE(now_ns, uint64_t, P::now_ns())
XB_PRIMITIVE(wait_timeout_ns, uint64_t, P::wait_timeout_ns())
// Memory.
XB_PRIMITIVE(is_shared, bool, P::is_shared(declval<const void*>()))
XB_PRIMITIVE(copy, void, P::copy(declval<void*>(), declval<const void*>(), size_t()))
XB_PRIMITIVE(dynamic_shared, unsigned char*, P::dynamic_shared())
XB_PRIMITIVE(construct_copy, void, P::construct_copy(declval<probe_function&>(), declval<const probe_function&>()))
// Faults.
XB_PRIMITIVE(fault, void, P::fault(declval<xb_fault_record&>()))
// What the checked shadow-mbarrier engine adds (engine_sm90_checked.hpp).
XB_PRIMITIVE(is_shared_at_run_time, bool, P::is_shared_at_run_time(declval<const void*>()))
XB_PRIMITIVE(is_global, bool, P::is_global(declval<const void*>()))
XB_PRIMITIVE(release_block, void, P::release_block())

#undef XB_PRIMITIVE
#undef XB_SCOPED_PRIMITIVE

#define XB_REQUIRE(name, signature) \
  static_assert(has_##name<P>::value, "xbarrier platform layer: missing or mistyped primitive `" signature "`")

template <class P, bool CheckedMbarrier = XB_CHECKED_MBARRIER != 0>
constexpr bool check() {
  XB_REQUIRE(load, "template <mem_scope> static uint64_t load(const uint64_t*, mem_order)");
  XB_REQUIRE(store, "template <mem_scope> static void store(uint64_t*, uint64_t, mem_order)");
  XB_REQUIRE(fetch_add, "template <mem_scope> static uint64_t fetch_add(uint64_t*, uint64_t, mem_order)");
  XB_REQUIRE(compare_exchange,
             "template <mem_scope> static bool compare_exchange(uint64_t*, uint64_t& expected, uint64_t, mem_order)");
  XB_REQUIRE(poll, "template <mem_scope> static uint64_t poll(const uint64_t*)");
  XB_REQUIRE(after_poll, "template <mem_scope> static void after_poll()");
  XB_REQUIRE(acquiring_rmw_is_cheap, "template <mem_scope> static constexpr bool acquiring_rmw_is_cheap()");
  XB_REQUIRE(backoff, "static void backoff(uint32_t& iteration)");
  XB_REQUIRE(wait_backoff, "static void wait_backoff(uint32_t& iteration)");
  XB_REQUIRE(relax, "static void relax()");
  XB_REQUIRE(notify, "static void notify(uint64_t*)");
  XB_REQUIRE(lanes_here, "static G lanes_here(), G a lane group (lane_group.hpp)");
  XB_REQUIRE(fence, "static void fence(mem_scope, mem_order)");
  XB_REQUIRE(fence_proxy_async, "static void fence_proxy_async()");
  XB_REQUIRE(now_ns, "static uint64_t now_ns()");
  XB_REQUIRE(wait_timeout_ns, "static uint64_t wait_timeout_ns()");
  XB_REQUIRE(is_shared, "static bool is_shared(const void*)");
  XB_REQUIRE(copy, "static void copy(void*, const void*, size_t)");
  XB_REQUIRE(dynamic_shared, "static unsigned char* dynamic_shared()");
  XB_REQUIRE(construct_copy, "template <class F> static void construct_copy(F& slot, const F&)");
  XB_REQUIRE(fault, "[[noreturn]] static void fault(xb_fault_record)");
  static_assert(!CheckedMbarrier || has_is_shared_at_run_time<P>::value,
                "xbarrier platform layer: missing or mistyped primitive `static bool is_shared_at_run_time(const "
                "void*)` (the checked mbarrier engine runs here)");
  static_assert(!CheckedMbarrier || has_is_global<P>::value,
                "xbarrier platform layer: missing or mistyped primitive `static bool is_global(const void*)` "
                "(the checked mbarrier engine runs here)");
  static_assert(!CheckedMbarrier || has_release_block<P>::value,
                "xbarrier platform layer: missing or mistyped primitive `static void release_block()` "
                "(the checked mbarrier engine runs here)");
  return true;
}

#undef XB_REQUIRE

}  // namespace platform_interface

// Whether P is a complete platform layer; a missing primitive is a compile error naming it.
template <class P>
constexpr bool check_platform_interface() {
  return platform_interface::check<P>();
}

}  // namespace detail
}  // namespace xb
