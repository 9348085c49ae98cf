// max() of each barrier type.
#include "common.hpp"

#if defined(XB_PLATFORM_HOST)
#include <chrono>
// try_wait_for's duration conversion: any period, fractional counts, saturation.
static_assert(xb::nanoseconds(std::chrono::seconds(2)).ns == 2000000000, "seconds");
static_assert(xb::nanoseconds(std::chrono::microseconds(7)).ns == 7000, "microseconds");
static_assert(xb::nanoseconds(std::chrono::duration<long long, std::pico>(5000)).ns == 5, "picoseconds");
static_assert(xb::nanoseconds(std::chrono::duration<double, std::milli>(1.5)).ns == 1500000, "fractional");
static_assert(xb::nanoseconds(std::chrono::hours::max()).ns == INT64_MAX, "saturates");
#endif

struct some_completion {
  int* p;
  XB_INLINE void operator()() noexcept { ++*p; }
};

// Both spellings of the scopes name the same barrier types.
static_assert(xb::thread_scope::block == xb::thread_scope_block && xb::thread_scope::system == xb::thread_scope_system,
              "scope spellings");
static_assert(sizeof(xb::barrier<xb::thread_scope::block>) == sizeof(xb::barrier<xb::thread_scope_block>), "same type");

XB_KERNEL void xbc_max(long long* out) {
  if (xbc::global_thread() != 0) return;
  out[0] = xb::barrier<xb::thread_scope_block>::max();
  out[1] = xb::barrier<xb::thread_scope_block, some_completion>::max();
  out[2] = xb::barrier<xb::thread_scope_thread>::max();
  out[3] = xb::barrier<xb::thread_scope_device>::max();
  out[4] = xb::barrier<xb::thread_scope_device, some_completion>::max();
  out[5] = xb::barrier<xb::thread_scope_system>::max();
  out[6] = sizeof(xb::barrier<xb::thread_scope_block>);
  out[7] = sizeof(xb::barrier<xb::thread_scope_block, some_completion>);
}
