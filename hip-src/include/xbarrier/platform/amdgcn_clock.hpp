// xbarrier/platform/amdgcn_clock.hpp - the AMDGPU clock: ticks of the constant-rate counter
// in nanoseconds, at the rate the HIP runtime reports for the device.
//
// amdgcn_platform::now_ns() (amdgcn.hpp) reads the real-time counter with
// __builtin_readsteadycounter (s_memrealtime on gfx9, s_sendmsg_rtn_b64 on gfx11 and gfx12)
// and converts its ticks with xb_clock_ns_per_tick_q32, the module global defined below:
// nanoseconds per tick in 32.32 fixed point. Checked builds bound every wait with this clock
// (XB_DEFAULT_WAIT_TIMEOUT_NS) and try_wait_for counts its timeout with it, so a wrong rate
// stretches or shrinks both by its error.
//
// The rate. The counter ticks at a constant rate, independent of the shader clock: 100 MHz
// on gfx942 (CDNA 3) and on the RDNA 3 and 4 parts (gfx11, gfx12); earlier gfx9 parts run it
// at 25 MHz (27 MHz on Vega 10), and tables disagree on gfx90a (CDNA 2). So the runtime's value wins over any table: HIP reports
// the rate per device as hipDeviceAttributeWallClockRate (kHz, the kernel driver's timestamp
// frequency), and backend-hip writes the multiplier for it into every module it loads,
// before any kernel of the module runs (`xbar check --backend hip` prints the rate). A
// module loaded some other way, or on a runtime that does not report the rate (ROCm 5.2 has
// no such attribute; a runtime that cannot ask the driver answers 0), keeps the default:
// XB_CLOCK_DEFAULT_KHZ, 100 MHz.
//
// The arithmetic. ns = (ticks * q32) >> 32, modulo 2^64, from four 32x32->64-bit multiplies
// and three adds: no division, and no 128-bit type, so that the host compiler (tests) and the
// AMDGPU backend run the same code. It is exact where 10^6 kHz is a multiple of the rate
// (25 MHz: 40 ns a tick, 100 MHz: 10 ns, 1 GHz: 1 ns) and within ticks / 2^33 + 1 ns of the
// exact value otherwise (the multiplier is rounded to the nearest 2^-32 ns). Callers take
// differences (now_ns() - start), whose error is bounded the same way by the difference in
// ticks, and which stay right when the result wraps at 2^64 ns (584 years of counter time).
#pragma once
#include <stdint.h>

#include "../config.hpp"

// The counter rate assumed where the runtime's is not known: 100 MHz, in kHz.
#define XB_CLOCK_DEFAULT_KHZ 100000u

namespace xb {
namespace detail {

// Nanoseconds per tick at `khz` ticks per millisecond, in 32.32 fixed point, rounded to
// nearest; 0 for a rate of 0 (which callers never write: they fall back to the default).
XB_HOST_DEVICE constexpr uint64_t clock_ns_per_tick_q32(uint32_t khz) {
  return khz == 0 ? 0 : ((uint64_t(1000000) << 32) + khz / 2) / khz;
}

// `ticks` in nanoseconds at `ns_per_tick_q32` ns a tick (32.32 fixed point), modulo 2^64:
// bits 32..95 of the 128-bit product. The low halves' product contributes its high half;
// the cross products and the high halves' product (shifted) wrap modulo 2^64, as the
// result does.
XB_HOST_DEVICE constexpr uint64_t clock_ticks_to_ns(uint64_t ticks, uint64_t ns_per_tick_q32) {
  const uint64_t t_lo = ticks & 0xffffffffu, t_hi = ticks >> 32;
  const uint64_t m_lo = ns_per_tick_q32 & 0xffffffffu, m_hi = ns_per_tick_q32 >> 32;
  return ((t_hi * m_hi) << 32) + t_hi * m_lo + t_lo * m_hi + ((t_lo * m_lo) >> 32);
}

static_assert(clock_ns_per_tick_q32(XB_CLOCK_DEFAULT_KHZ) == uint64_t(10) << 32, "100 MHz is 10 ns a tick");
static_assert(clock_ticks_to_ns(123456789, clock_ns_per_tick_q32(25000)) == 123456789ull * 40, "25 MHz");

}  // namespace detail
}  // namespace xb

#if defined(XB_PLATFORM_AMDGCN)
extern "C" {
// The multiplier now_ns() converts with; backend-hip finds it with hipModuleGetGlobal and
// writes clock_ns_per_tick_q32(hipDeviceAttributeWallClockRate) at module load. Constant
// memory: kernels only read it, with scalar loads a launch may keep in registers.
__attribute__((constant)) uint64_t xb_clock_ns_per_tick_q32 = xb::detail::clock_ns_per_tick_q32(XB_CLOCK_DEFAULT_KHZ);
}
#endif
