// hip-src/host/runtime.cpp - linked into every kernel shared object built for the host
// backend: the entry points backend-host calls (see xbarrier/host_abi.h).
#include <xbarrier/barrier.hpp>

#define XB_EXPORT extern "C" __attribute__((visibility("default")))

// Layout check: backend-host compares these sizes with its repr(C) mirrors at load time.
XB_EXPORT uint32_t xb_host_abi(uint64_t* sizes) {
  sizes[0] = sizeof(xb_host_launch);
  sizes[1] = sizeof(xb_host_block);
  sizes[2] = sizeof(xb_host_thread);
  sizes[3] = sizeof(xb_fault_record);
  return XB_HOST_ABI_VERSION;
}

// The kernel thread the calling OS thread runs from now on (set before every resume).
XB_EXPORT void xb_host_set_current(xb_host_thread* t) { xb::host::current_thread = t; }

// Prepares a block before its threads start: the word behind __syncthreads().
XB_EXPORT void xb_host_block_init(xb_host_block* b) {
  using word = xb::detail::protocol<xb::detail::host_platform, xb::thread_scope_block>::W;
  b->syncthreads_word = word::initial(b->threads);
}

// Calls a kernel whose parameters are integers/pointers and floating-point values, laid out
// by the caller as the x86-64 System V / AArch64 calling conventions assign them: the first
// integer arguments in integer registers, the first floating-point ones in vector
// registers, the rest on the stack in parameter order. Calling through this wider prototype
// fills exactly those registers and stack slots, as libffi would.
typedef void (*xb_wide_kernel)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                               double, double, double, double, double, double, double, double,
                               uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                               uint64_t, uint64_t, uint64_t, uint64_t);
static_assert(XB_HOST_MAX_INT_ARGS == 6 && XB_HOST_MAX_FLOAT_ARGS == 8 && XB_HOST_MAX_STACK_ARGS == 10,
              "xb_wide_kernel must match the argument limits");

// Returns 0 when the kernel thread ran to its end, 1 when it was unwound by a fault/abort,
// 2 when the kernel let another C++ exception escape (which must not unwind into Rust).
XB_EXPORT int xb_host_invoke(void* kernel, const uint64_t* i, const double* f, const uint64_t* s) {
  try {
    reinterpret_cast<xb_wide_kernel>(kernel)(i[0], i[1], i[2], i[3], i[4], i[5], f[0], f[1], f[2],
                                             f[3], f[4], f[5], f[6], f[7], s[0], s[1], s[2], s[3],
                                             s[4], s[5], s[6], s[7], s[8], s[9]);
  } catch (const xb::host::kernel_aborted&) {
    return 1;
  } catch (...) {
    return 2;
  }
  return 0;
}
