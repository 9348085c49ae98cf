// xbarrier/lane_group.hpp - lane groups: the lanes of one wave (warp) that make the same
// barrier call together, so that one of them, the leader, makes the call's atomic for all.
//
// A platform layer's lanes_here() returns the group of the lanes that reached the call
// together (a single_lane where there are no lanes to group: host threads). They act as one
// only where they agree on the call's arguments: where agree(barrier, b) (b: the arrival's
// update, or the parity waited for) is false, each lane acts alone, as a single_lane. A group type
// G has:
//
//   bool agree(const void* barrier, uint64_t b) const
//                                    whether every lane of the group passes the same barrier
//                                    and b
//   uint32_t size() const            the lanes in the group, at least 1
//   bool leads() const               whether this lane is the group's leader; exactly one is
//   uint64_t broadcast(uint64_t v) const
//                                    the leader's v, on every lane of the group; every lane
//                                    calls it, and a lane's call returns after the leader's
//                                    (so what the leader did before it is done). It orders
//                                    no memory.
//   uint64_t agreed(uint64_t v) const
//                                    for a value every lane of the group loaded from the same
//                                    word at the same point (a poll): the leader's, where the
//                                    platform's memory model lets the leader's load and fences
//                                    stand for the group's (an AMDGPU wave's do); else v.
//   void gather() const              every lane's earlier memory accesses happen before the
//                                    leader's later ones (where the platform needs it), so
//                                    that the leader's release covers the group's writes.
//   uint64_t scalar(uint64_t v) const
//                                    in code only the leader runs (the completion step): v,
//                                    its own value, where the platform can tell the compiler
//                                    that it is one value for the group (AMDGPU: in scalar
//                                    registers); else v. Never a collective operation.
//   uint64_t* solo(uint64_t* w) const
//                                    w, for the atomic the leader makes for the group: the
//                                    compiler must not treat it as one lane's share of a
//                                    wave-wide atomic and combine it again.
//
// Why one leader may act for the group (protocol.hpp, 6.): the group's arrivals are one
// atomic step in the word's modification order, as if its lanes had arrived back to back;
// the leader's release follows every lane's writes (gather()), and every lane still acquires
// for itself, by its own poll, except where agreed() says that the leader's stands for it.
#pragma once
#include <stdint.h>

#include "abi.h"
#include "config.hpp"

namespace xb {
namespace detail {

// A group of one: the calling lane acts for itself.
struct single_lane {
  XB_INLINE bool agree(const void*, uint64_t) const { return true; }
  XB_INLINE uint32_t size() const { return 1; }
  XB_INLINE bool leads() const { return true; }
  XB_INLINE uint64_t broadcast(uint64_t v) const { return v; }
  XB_INLINE uint64_t agreed(uint64_t v) const { return v; }
  XB_INLINE void gather() const {}
  XB_INLINE uint64_t* solo(uint64_t* w) const { return w; }
  XB_INLINE uint64_t scalar(uint64_t v) const { return v; }
};

}  // namespace detail
}  // namespace xb
