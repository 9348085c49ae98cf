// xbarrier/lane_group.hpp - lane groups: the lanes of one wave (warp) that make the same
// barrier call together, so that one of them, the leader, makes the call's atomic for all.
//
// A platform layer's lanes_here() returns the group of the lanes that reached the call
// together (a single_lane where there are no lanes to group: host threads). They act as one
// only where they agree on the call's arguments: where agree(barrier, b) (b: the arrival's
// update, or the parity waited for) is false, each lane acts alone, as a single_lane. A
// group type G has:
//
//   bool agree(const void* barrier, uint64_t b) const
//                                    whether every lane of the group passes the same barrier
//                                    and b
//   uint32_t size() const            the lanes in the group, at least 1
//   bool leads() const               whether this lane is the group's leader; exactly one is
//   uint64_t broadcast(uint64_t v) const
//                                    the leader's v, on every lane of the group; every lane
//                                    calls it, and a lane's call returns after the leader's:
//                                    the leader's earlier accesses happen before the lane's
//                                    later ones (so a poll after it reads the word no older
//                                    than the leader's RMW found it).
//   bool acquires_as_one() const     whether the leader's acquire (a poll and the fence
//                                    after it, or an acq_rel read-modify-write) acts for every
//                                    lane of the group, as an AMDGPU wave's loads and fences
//                                    do: then the lanes take the leader's polled value, and a
//                                    group whose leader completed a phase returns without
//                                    polling. A constant.
//   void gather() const              every lane's earlier memory accesses happen before the
//                                    leader's later ones (where the platform needs it), so
//                                    that the leader's release covers the group's writes.
//   uint64_t* solo(uint64_t* w) const
//                                    w, for the atomic the leader makes for the group: the
//                                    compiler must not treat it as one lane's share of a
//                                    wave-wide atomic and combine it again.
//
// Why one leader may act for the group (protocol.hpp, 6.): the group's arrivals are one
// atomic step in the word's modification order, as if its lanes had arrived back to back;
// the leader's release follows every lane's writes (gather()), and every lane still acquires
// for itself, by its own poll, except where acquires_as_one() says that the leader's acquire
// stands for it.
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
  XB_INLINE constexpr bool acquires_as_one() const { return true; }
  XB_INLINE void gather() const {}
  XB_INLINE uint64_t* solo(uint64_t* w) const { return w; }
};

}  // namespace detail
}  // namespace xb
