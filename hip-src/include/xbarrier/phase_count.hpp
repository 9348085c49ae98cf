// xbarrier/phase_count.hpp - checked builds: how many phases a barrier has completed, kept
// beside its completion function, so that a token carries the number of the phase it was
// made in and a wait on a token two or more phases old is reported at once ("stale token")
// instead of waiting on a later phase of the same parity until the deadlock bound.
//
// The count C (one 64-bit word) is written only by the completer of each phase, in the
// completion step: the step of phase k stores k + 1 after the claim and before the publish
// (protocol.hpp 1.-3.; the engines run the step exactly once per phase). Hence, for a call
// whose arrival is counted in phase k (every order below is protocol.hpp 4.'s, and C is
// stored with release and read with acquire):
//   - C read before the arrival is <= k: a read of j + 1 follows the claim of phase j, so
//     the arrival's atomic lands after that claim, in phase j + 1 or later;
//   - C read after the arrival is >= k: the arrival read the publish that began phase k (or
//     waited for it, if it landed while the step ran), and the step stored k before it.
//   So two reads c1 <= k <= c2 and the token's parity name k when c2 - c1 <= 1. Further
//   apart (other threads completed phases during the call) k is unknown, and the token is
//   not checked: a wait on it reports a deadlock at the bound, as before.
// A wait on a token of phase k reads C (c) and then the word: the word is then in phase
// c - 1 or later (the claim of phase c - 1 precedes the store of c). So the token is stale
// (the barrier is two or more phases past it, which cuda::barrier leaves undefined) when
// c >= k + 3, or when c == k + 2 and the word has the token's parity (the hardware would
// wait for phase k + 2 to end). Never reported falsely; not seen when the barrier moves on
// during the wait, which then ends at the deadlock bound.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "config.hpp"
#include "scope.hpp"

namespace xb {
namespace detail {

// A token's phase number, when its arrival could tell (known).
struct token_phase {
  uint64_t phase;
  bool known;
};

template <class P, thread_scope Scope>
struct phase_count {
  static constexpr mem_scope ms = scope_of(Scope);

  static XB_INLINE uint64_t read(const uint64_t* c) { return P::template load<ms>(c, mem_order::acquire); }

  // The phase of an arrival with parity `parity`, from reads of C before (c1) and after (c2).
  static XB_INLINE constexpr token_phase of_arrival(uint64_t c1, uint64_t c2, bool parity) {
    return c2 - c1 > 1 ? token_phase{0, false}
           : (c2 & 1) == uint64_t(parity) ? token_phase{c2, true}
           : (c1 & 1) == uint64_t(parity) ? token_phase{c1, true}
                                           : token_phase{0, false};
  }

  // Whether a token of phase `phase` is stale: `c` read first, then the word's parity. The
  // word is in phase c - 1 or later; two phases on only if it also has the token's parity.
  static XB_INLINE constexpr bool stale(uint64_t phase, uint64_t c, bool word_parity) {
    return int64_t(c - phase) >= 3 || (int64_t(c - phase) == 2 && (phase & 1) == uint64_t(word_parity));
  }
  // The earliest phase the word can be in (for the report): c - 1 or later, of its parity.
  static XB_INLINE constexpr uint64_t at_least(uint64_t c, bool word_parity) {
    return ((c - 1) & 1) == uint64_t(word_parity) ? c - 1 : c;
  }

  // What the completion step adds: C becomes the number of the next phase. Only completers
  // store C, one per phase, each after the publish the previous one made, so any load reads
  // the last store; an acquire one, so that no read of the barrier's memory is left without
  // an acquire after it before the completion function's data loads (the AMDGPU memory-model
  // tests check every path for that).
  // Sanitizer builds (XB_SANITIZER, on whichever platform sets it) count with one acq_rel
  // read-modify-write instead, which orders the same: compute-sanitizer's racecheck takes a
  // release store and an acquire load (st/ld, not atom) for plain accesses and would report
  // each count as racing with the reads.
  static XB_INLINE void count(uint64_t* c) {
    if (XB_SANITIZER) {
      (void)P::template fetch_add<ms>(c, 1, mem_order::acq_rel);
      return;
    }
    P::template store<ms>(c, P::template load<ms>(c, mem_order::acquire) + 1, mem_order::release);
  }
  static XB_INLINE void reset(uint64_t* c) { P::template store<ms>(c, 0, mem_order::relaxed); }
};

}  // namespace detail
}  // namespace xb
