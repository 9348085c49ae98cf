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
  out[8] = xb::barrier<xb::thread_scope_thread, some_completion>::max();
  out[9] = XB_CHECKED_MBARRIER;  // whether block barriers have a shadow mbarrier (sanitizer builds)
}

// Where xb::dynamic_shared lands after 24 bytes of static shared memory: out[0] is its
// address modulo 128 (0 expected: stages that straddle 128-byte lines slow the copy engine,
// kernel.hpp), out[1] the static bytes read back (keeps them in the kernel).
XB_KERNEL void xbc_dynamic_shared_alignment(long long* out) {
  __shared__ unsigned char fixed[24];
  unsigned char* dynamic = xb::dynamic_shared<unsigned char>();
  if (threadIdx.x < 24) fixed[threadIdx.x] = static_cast<unsigned char>(threadIdx.x + 1);
  dynamic[threadIdx.x] = 0;
  __syncthreads();
  if (threadIdx.x != 0) return;
  out[0] = static_cast<long long>(reinterpret_cast<uintptr_t>(dynamic) % 128);
  long long sum = 0;
  for (int i = 0; i < 24; ++i) sum += fixed[i];
  out[1] = sum;
}
