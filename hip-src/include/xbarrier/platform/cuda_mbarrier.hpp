// xbarrier/platform/cuda_mbarrier.hpp - the PTX mbarrier and bulk-copy instructions the
// native lowering uses (sm_90, PTX ISA 8.0+), one function per instruction. The barrier
// word is the 8-byte mbarrier object; an arrival's token is the state `mbarrier.arrive`
// returns (bit 63 is the phase parity on sm_90, which conformance `phases` checks). Checked
// builds use them for their shadow mbarriers (engine_sm90_checked.hpp).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "../config.hpp"

#if XB_MBARRIER_ISA
namespace xb {
namespace detail {
namespace mbarrier {

XB_INLINE uint32_t smem(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

XB_INLINE void init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(count) : "memory");
}

// Makes an initialized mbarrier visible to the async proxy (the copy engine that completes
// bulk copies on it), as the CUDA guide's bulk-copy examples do after init.
XB_INLINE void fence_init() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Release semantics at CTA scope (the default): writes before it are visible to waiters.
XB_INLINE uint64_t arrive(uint64_t* bar, uint32_t count) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;" : "=l"(state) : "r"(smem(bar)), "r"(count) : "memory");
  return state;
}

XB_INLINE uint64_t arrive_drop(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem(bar)) : "memory");
  return state;
}

XB_INLINE uint64_t arrive_expect_tx(uint64_t* bar, uint32_t tx) {
  uint64_t state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
               : "=l"(state)
               : "r"(smem(bar)), "r"(tx)
               : "memory");
  return state;
}

XB_INLINE void expect_tx(uint64_t* bar, uint32_t tx) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(tx) : "memory");
}

XB_INLINE void complete_tx(uint64_t* bar, uint32_t tx) {
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(tx) : "memory");
}

// Non-blocking probes (acquire at CTA scope when they succeed).
XB_INLINE bool test_wait(const uint64_t* bar, uint64_t state) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(smem(bar)), "l"(state)
      : "memory");
  return done != 0;
}
XB_INLINE bool test_wait_parity(const uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(smem(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// Potentially blocking probes: the SYNCS unit suspends the thread until the phase completes
// or a hardware time limit (or `hint_ns`) passes, so a wait loop needs no back-off.
XB_INLINE bool try_wait(const uint64_t* bar, uint64_t state) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(smem(bar)), "l"(state)
      : "memory");
  return done != 0;
}
XB_INLINE bool try_wait_parity(const uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(smem(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
XB_INLINE bool try_wait_hint(const uint64_t* bar, uint64_t state, uint32_t hint_ns) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.shared::cta.b64 p, [%1], %2, %3; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(smem(bar)), "l"(state), "r"(hint_ns)
      : "memory");
  return done != 0;
}
XB_INLINE bool try_wait_parity_hint(const uint64_t* bar, uint32_t parity, uint32_t hint_ns) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(smem(bar)), "r"(parity), "r"(hint_ns)
      : "memory");
  return done != 0;
}

// Bulk copy global -> shared by the copy engine; its bytes complete on `bar`'s tx-count.
// dst, src and bytes are multiples of 16.
XB_INLINE void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem(dst)),
      "l"(src), "r"(bytes), "r"(smem(bar))
      : "memory");
}

// Bulk copy shared -> global, tracked by the issuing thread's bulk async-groups.
XB_INLINE void bulk_store(void* dst, const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem(src)), "r"(bytes)
               : "memory");
}
XB_INLINE void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most N committed groups are still reading their shared-memory source.
template <int N>
XB_INLINE void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Waits until at most N committed groups are incomplete (their writes done).
template <int N>
XB_INLINE void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace mbarrier
}  // namespace detail
}  // namespace xb
#endif
