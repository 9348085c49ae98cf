// Helpers shared by the conformance kernels: error counting and thread numbering.
#pragma once
#include <xbarrier/barrier.hpp>

namespace xbc {

// Counts a failed expectation in report[0] and keeps the first failure's details in
// report[1..3] (where, got, wanted), so the host can say what went wrong.
XB_INLINE void expect_eq(unsigned long long* report, unsigned long long where, unsigned long long got,
                         unsigned long long wanted) {
  if (got == wanted) return;
  using P = xb::detail::platform;
  if (P::fetch_add<xb::detail::mem_scope::device>(reinterpret_cast<uint64_t*>(report), 1, xb::detail::mem_order::relaxed) == 0) {
    report[1] = where;
    report[2] = got;
    report[3] = wanted;
  }
}

XB_INLINE unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
XB_INLINE unsigned global_thread() { return blockIdx.x * block_threads() + threadIdx.x; }

// Relaxed atomic word access for litmus tests and flags (plain accesses would be data races).
XB_INLINE uint64_t load_relaxed(const uint64_t* p) {
  return xb::detail::platform::load<xb::detail::mem_scope::system>(p, xb::detail::mem_order::relaxed);
}
XB_INLINE void store_relaxed(uint64_t* p, uint64_t v) {
  xb::detail::platform::store<xb::detail::mem_scope::system>(p, v, xb::detail::mem_order::relaxed);
}

XB_INLINE uint64_t fetch_add_relaxed(uint64_t* p, uint64_t v) {
  return xb::detail::platform::fetch_add<xb::detail::mem_scope::block>(p, v, xb::detail::mem_order::relaxed);
}

// Spins until `done()` or `ns` have passed, letting sibling threads run (host fibers yield,
// GPUs back off); returns done().
template <class Done>
XB_INLINE bool spin_until(Done done, uint64_t ns) {
  using P = xb::detail::platform;
  const uint64_t start = P::now_ns();
  uint32_t iteration = 0;
  while (!done()) {
    if (P::now_ns() - start > ns) return done();
    P::wait_backoff(iteration);
  }
  return true;
}

}  // namespace xbc
