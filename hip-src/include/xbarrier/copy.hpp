// xbarrier/copy.hpp - copies bound to a barrier: xb::memcpy_async (cuda::memcpy_async) and
// xb::device::memcpy_async_tx (cuda::device::memcpy_async_tx).
//
// On the native CUDA path (sm_90) the copy engine moves the bytes (cp.async.bulk) and
// completes them on the mbarrier's tx-count. On the protocol platforms the calling thread
// copies before the call returns and then completes the bytes, which is what the copy engine
// does when the data has landed. Either way the phase the copy is bound to cannot complete
// before the data is in place. bulk_store / bulk_store_commit / bulk_store_wait_read are the
// shared -> global direction (cp.async.bulk ... bulk_group), synchronous off the native path.
//
// Why gfx942/gfx950 do not use global_load_lds (DMA into LDS) for memcpy_async_tx. Its bytes
// land after the issuing wave's vmcnt wait, so the issuing thread would have to complete the
// tx-count later. Completing it inside the call (vmcnt(0), then complete_tx) is what the
// synchronous copy already does, and is slower here: memcpy_async_tx is called by one thread,
// and global_load_lds moves 4 bytes (gfx942; 16 on gfx950) per active lane into a
// wave-uniform LDS base, so a single lane copies 4-16 bytes per instruction against 16 for
// the wide copy. Completing it any later (at the thread's next barrier call) cannot be shown
// deadlock-free: waiters of the phase wait on bytes whose completion depends on the issuing
// thread reaching another barrier call, which may itself wait for those waiters (a
// producer waiting on an "empty" barrier that the consumers only arrive on after this
// phase). The DMA path would need an argument that no waiter can deadlock, which does not
// hold for a deferred completion, so the path is left out.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "barrier_object.hpp"
#include "engine.hpp"
#include "platform.hpp"
#include "protocol.hpp"

namespace xb {

// A size that promises the alignment of both pointers and of the size itself.
template <size_t Align>
struct aligned_size_t {
  static constexpr size_t align = Align;
  size_t value;
  XB_INLINE constexpr explicit aligned_size_t(size_t size) : value(size) {}
  XB_INLINE constexpr operator size_t() const { return value; }
};

namespace detail {
template <class Shape>
XB_INLINE size_t shape_bytes(Shape s) { return static_cast<size_t>(s); }

// Whether a shape promises what a bulk copy needs (16-byte alignment of both pointers and
// of the size): aligned_size_t<16> or wider.
template <class Shape>
struct bulk_aligned {
  static constexpr bool value = false;
};
template <size_t Align>
struct bulk_aligned<aligned_size_t<Align>> {
  static constexpr bool value = Align >= 16 && Align % 16 == 0;
};

// The bytes [begin, end) of a copy handled by thread `rank` of `count`, in 16-byte pieces
// where the size allows, so that each thread moves a contiguous slice.
XB_INLINE void group_slice(size_t bytes, unsigned rank, unsigned count, size_t& begin, size_t& end) {
  const size_t unit = (bytes % 16 == 0) ? 16 : 1;
  const size_t units = bytes / unit;
  const size_t per = (units + count - 1) / count;
  begin = per * rank * unit;
  end = begin + per * unit;
  if (begin > bytes) begin = bytes;
  if (end > bytes) end = bytes;
}
}  // namespace detail

namespace device {

// Copy `size` bytes from global to shared memory and complete them on `bar`'s tx-count.
// It does not expect the bytes: pair it with barrier_arrive_tx or barrier_expect_tx.
template <thread_scope S, class C>
XB_INLINE void memcpy_async_tx(void* dst, const void* src, aligned_size_t<16> size, barrier<S, C>& bar) {
  static_assert(S == thread_scope_block,
                "xb::device::memcpy_async_tx needs a barrier<thread_scope_block>: CUDA offers the tx-count "
                "only on block-scope barriers in shared memory");
  using proto = detail::protocol<detail::platform, S>;
  if (XB_CHECKED) {
    const uintptr_t misaligned = (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | size.value) & 15;
    uint64_t* w = detail::barrier_access::word(bar);
    if (misaligned || size.value > size_t(proto::max_tx))
      proto::fault(XB_FAULT_COPY_ARGS, XB_OP_MEMCPY_ASYNC_TX, w, *w, int64_t(size.value), proto::max_tx);
    if (!detail::platform::is_shared(dst))
      proto::fault(XB_FAULT_COPY_ARGS, XB_OP_MEMCPY_ASYNC_TX, w, *w, int64_t(size.value), 0);
  }
  detail::check_tx_barrier(bar, XB_OP_MEMCPY_ASYNC_TX);
  detail::engine_for<S, C>::type::copy_tx(dst, src, size.value, detail::barrier_access::word(bar),
                                          detail::barrier_access::completion(bar));
}

// Copy `size` bytes from shared to global memory. Native: a bulk copy the calling thread
// tracks with bulk_store_commit() / bulk_store_wait_read<N>(); elsewhere done on return.
// Writes to `src` by ordinary stores need fence_proxy_async() first (fence.hpp).
XB_INLINE void bulk_store(void* dst, const void* src, aligned_size_t<16> size) {
  detail::bulk_store_engine::store(dst, src, size.value);
}
// Closes the calling thread's bulk stores issued since the last commit into one group.
XB_INLINE void bulk_store_commit() { detail::bulk_store_engine::commit(); }
// Waits until at most N of the calling thread's committed groups still read their source.
template <int N>
XB_INLINE void bulk_store_wait_read() {
  detail::bulk_store_engine::wait_read<N>();
}
// Waits until at most N of the calling thread's committed groups are incomplete.
template <int N>
XB_INLINE void bulk_store_wait() {
  detail::bulk_store_engine::wait<N>();
}

}  // namespace device

// cuda::memcpy_async(dst, src, size, barrier): the copy is part of the barrier's current
// phase. On the native path a 16-byte-aligned shape becomes a bulk copy whose bytes the
// phase expects; elsewhere the copy is done before the call returns, so the caller's own
// arrive orders it.
template <class Shape, thread_scope S, class C>
XB_INLINE void memcpy_async(void* dst, const void* src, Shape size, barrier<S, C>& bar) {
  detail::engine_for<S, C>::type::copy_in_phase(dst, src, detail::shape_bytes(size), detail::barrier_access::word(bar),
                                                detail::bulk_aligned<Shape>::value);
}

// The group form: one bulk copy by thread 0 of `group` on the native path; elsewhere each
// thread copies its slice (Group needs thread_rank(), size()).
template <class Group, class Shape, thread_scope S, class C>
XB_INLINE void memcpy_async(const Group& group, void* dst, const void* src, Shape size, barrier<S, C>& bar) {
  using engine = typename detail::engine_for<S, C>::type;
  if (engine::bulk_possible(dst, src, detail::shape_bytes(size), detail::barrier_access::word(bar),
                            detail::bulk_aligned<Shape>::value)) {
    if (group.thread_rank() == 0) memcpy_async(dst, src, size, bar);
    return;
  }
  size_t begin, end;
  detail::group_slice(detail::shape_bytes(size), unsigned(group.thread_rank()), unsigned(group.size()), begin, end);
  if (end > begin)
    detail::platform::copy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
}

}  // namespace xb
