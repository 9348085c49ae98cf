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
  static_assert(Align != 0 && (Align & (Align - 1)) == 0, "xb::aligned_size_t<Align>: Align must be a power of two");
  static constexpr size_t align = Align;
  size_t value;
  XB_INLINE constexpr explicit aligned_size_t(size_t size) : value(size) {}
  XB_INLINE constexpr operator size_t() const { return value; }
};

namespace detail {
template <class Shape>
XB_INLINE size_t shape_bytes(Shape s) { return static_cast<size_t>(s); }

// What a copy of T objects needs of T: the alignment its pointers carry, and that bytes may
// stand for objects. Untyped (void) copies are bytes.
template <class T>
struct copied {
  static constexpr size_t align = alignof(T);
  static constexpr bool bytewise = __is_trivially_copyable(T);
};
template <>
struct copied<void> {
  static constexpr size_t align = 1;
  static constexpr bool bytewise = true;
};

// The alignment a shape promises (1 for a plain size).
template <class Shape>
struct promised_align {
  static constexpr size_t value = 1;
};
template <size_t Align>
struct promised_align<aligned_size_t<Align>> {
  static constexpr size_t value = Align;
};
// What a copy of T objects with shape Shape may assume of both pointers and the size: the
// larger of alignof(T) and the shape's promise (a size of whole objects is a multiple of
// alignof(T)).
template <class T, class Shape>
struct assumed_align {
  static constexpr size_t value =
      copied<T>::align > promised_align<Shape>::value ? copied<T>::align : promised_align<Shape>::value;
};

// Checked builds: a copy's pointers and size keep the alignment promised (`align`), and its
// source and destination do not overlap; else a fault in `op` on `bar`.
template <thread_scope S, class C>
XB_INLINE void check_copy(const void* dst, const void* src, size_t bytes, size_t align, barrier<S, C>& bar,
                          uint32_t op) {
  using proto = protocol<platform, S>;
  uint64_t* w = barrier_access::word(bar);
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if ((d | s | bytes) & (align - 1)) proto::fault(XB_FAULT_COPY_ALIGN, op, w, *w, int64_t(bytes), int64_t(align));
  if (bytes > 0 && d < s + bytes && s < d + bytes) proto::fault(XB_FAULT_COPY_OVERLAP, op, w, *w, int64_t(bytes), 0);
}

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
// It does not expect the bytes: pair it with barrier_arrive_tx or barrier_expect_tx. As
// CUDA's: T trivially copyable, and aligned_size_t<Align> with Align at least 16 and at
// least alignof(T); T may also be void (bytes), and pointers of two types go as void.
template <class T, size_t Align, thread_scope S, class C>
XB_INLINE void memcpy_async_tx(T* dst, const T* src, aligned_size_t<Align> size, barrier<S, C>& bar) {
  static_assert(S == thread_scope_block,
                "xb::device::memcpy_async_tx needs a barrier<thread_scope_block>: CUDA offers the tx-count "
                "only on block-scope barriers in shared memory");
  static_assert(Align >= 16, "xb::device::memcpy_async_tx needs aligned_size_t<16> or wider (16-byte aligned "
                             "pointers and size)");
  static_assert(Align >= detail::copied<T>::align,
                "xb::device::memcpy_async_tx: the promised alignment must be at least alignof(T)");
  static_assert(detail::copied<T>::bytewise, "xb::device::memcpy_async_tx needs a trivially copyable type");
  using proto = detail::protocol<detail::platform, S>;
  if (XB_CHECKED) {
    // The whole promise, not only the 16 bytes the copy needs: a broken promise is a bug.
    detail::check_copy(dst, src, size.value, Align, bar, XB_OP_MEMCPY_ASYNC_TX);
    uint64_t* w = detail::barrier_access::word(bar);
    // The copy engine reads global memory and writes the block's shared memory. (A platform
    // that takes even a null pointer for shared, the host's bare driver with no launch,
    // cannot tell the source's memory.)
    const bool source_shared = detail::platform::is_shared(src) && !detail::platform::is_shared(nullptr);
    if (size.value > size_t(proto::max_tx) || !detail::platform::is_shared(dst) || source_shared)
      proto::fault(XB_FAULT_COPY_ARGS, XB_OP_MEMCPY_ASYNC_TX, w, *w, int64_t(size.value), proto::max_tx);
  }
  detail::check_tx_barrier(bar, XB_OP_MEMCPY_ASYNC_TX);
  detail::engine_for<S, C>::type::copy_tx(dst, src, size.value, detail::barrier_access::word(bar),
                                          detail::barrier_access::completion(bar));
}
template <size_t Align, thread_scope S, class C>
XB_INLINE void memcpy_async_tx(void* dst, const void* src, aligned_size_t<Align> size, barrier<S, C>& bar) {
  memcpy_async_tx<void>(dst, src, size, bar);
}

// Copy `size` bytes from shared to global memory. Native: a bulk copy the calling thread
// tracks with bulk_store_commit() / bulk_store_wait_read<N>(); elsewhere done on return.
// Writes to `src` by ordinary stores need fence_proxy_async() first (fence.hpp).
template <size_t Align>
XB_INLINE void bulk_store(void* dst, const void* src, aligned_size_t<Align> size) {
  static_assert(Align >= 16, "xb::device::bulk_store needs aligned_size_t<16> or wider");
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
// arrive orders it. As CUDA's: T trivially copyable, and the alignment the copy may assume
// is the larger of alignof(T) and the shape's promise.
template <class T, class Shape, thread_scope S, class C>
XB_INLINE void memcpy_async(T* dst, const T* src, Shape size, barrier<S, C>& bar) {
  static_assert(detail::copied<T>::bytewise, "xb::memcpy_async needs a trivially copyable type");
  if (XB_CHECKED)
    detail::check_copy(dst, src, detail::shape_bytes(size), detail::promised_align<Shape>::value, bar,
                       XB_OP_MEMCPY_ASYNC);
  detail::engine_for<S, C>::type::copy_in_phase(dst, src, detail::shape_bytes(size), detail::barrier_access::word(bar),
                                                detail::assumed_align<T, Shape>::value % 16 == 0);
}
template <class Shape, thread_scope S, class C>
XB_INLINE void memcpy_async(void* dst, const void* src, Shape size, barrier<S, C>& bar) {
  memcpy_async<void>(dst, src, size, bar);
}

// The group form: one bulk copy by thread 0 of `group` on the native path; elsewhere each
// thread copies its slice (Group needs thread_rank(), size()).
template <class Group, class T, class Shape, thread_scope S, class C>
XB_INLINE void memcpy_async(const Group& group, T* dst, const T* src, Shape size, barrier<S, C>& bar) {
  static_assert(detail::copied<T>::bytewise, "xb::memcpy_async needs a trivially copyable type");
  if (XB_CHECKED)
    detail::check_copy(dst, src, detail::shape_bytes(size), detail::promised_align<Shape>::value, bar,
                       XB_OP_MEMCPY_ASYNC);
  using engine = typename detail::engine_for<S, C>::type;
  if (engine::bulk_possible(dst, src, detail::shape_bytes(size), detail::barrier_access::word(bar),
                            detail::assumed_align<T, Shape>::value % 16 == 0)) {
    if (group.thread_rank() == 0) memcpy_async(dst, src, size, bar);
    return;
  }
  size_t begin, end;
  detail::group_slice(detail::shape_bytes(size), unsigned(group.thread_rank()), unsigned(group.size()), begin, end);
  if (end > begin)
    detail::platform::copy(static_cast<char*>(static_cast<void*>(dst)) + begin,
                           static_cast<const char*>(static_cast<const void*>(src)) + begin, end - begin);
}
template <class Group, class Shape, thread_scope S, class C>
XB_INLINE void memcpy_async(const Group& group, void* dst, const void* src, Shape size, barrier<S, C>& bar) {
  memcpy_async<Group, void>(group, dst, src, size, bar);
}

}  // namespace xb
