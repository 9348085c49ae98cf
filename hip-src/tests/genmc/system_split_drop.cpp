// Property: a side of the split form (engine_system.hpp) whose participants have all left
// (arrive_and_drop took its share's expected count to 0) no longer holds the other side
// back: the other side completes every later phase (the step of the side's last phase sets
// `left` in its count, point 4), and a drop is an arrival of its phase, whose data the other
// side's waiters of that phase see.
// 3 threads, 3 phases: side A (thread 0, expected 1) arrives and waits in phases 0-2; side B
// (threads 1 and 2, expected 2):
//   phase 0: thread 2 drops (B expects 1 from phase 1 on); thread 1 arrives and waits for
//            its token (with -DGM_EARLY_DROP=1: does not wait, but awaits B's step of phase 0);
//   phase 1: thread 1 drops (with GM_EARLY_DROP, maybe while that step runs: the drop then
//            lands in the claimed share and counts in phase 1 already): B is empty;
//   phase 2: A alone.
// With GM_EARLY_DROP, the step of B's phase 0 may find the share expecting nobody already
// and set `left`, which releases A's waits of phases 1 and 2 before B's phase 1 is
// published: A's read of what thread 1 wrote before its drop then rests on the step's
// acquire read of the share's word (the check that found it read relaxed).
#include "system_split.hpp"

#ifndef GM_EARLY_DROP
#define GM_EARLY_DROP 0
#endif

constexpr int PHASES = 3;
static int slot[PHASES][3];  // what each arriver of phase k wrote before arriving
static gm::share_steps steps_a;
static int released_b;  // B's share phases whose step has run (atomic)
struct b_steps {
  int n = 0;
  void operator()() {
    ++n;
    __atomic_store_n(&released_b, n, __ATOMIC_RELEASE);
  }
};
static b_steps steps_b;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    for (int k = 0; k < PHASES; ++k) {
      slot[k][0] = 10 * k + 1;
      if (k == 1) {
        gm::sys::arrive_and_wait(gm::side_a, steps_a);
      } else {
        const uint64_t token = gm::sys::arrive(gm::side_a, 1, steps_a);
        assert(gm::phase_of(token) == uint64_t(k));
        gm::sys::wait(gm::side_a, token);
      }
      if (k == 0) assert(slot[0][1] == 2 && slot[0][2] == 3);
      if (k == 1) assert(slot[1][1] == 12);
    }
  } else if (i == 1) {
    slot[0][1] = 2;
    const uint64_t token = gm::sys::arrive(gm::side_b, 1, steps_b);
    assert(gm::phase_of(token) == 0 && !gm::parity_of(token));
    if (!GM_EARLY_DROP) {
      gm::sys::wait(gm::side_b, token);
      assert(slot[0][0] == 1 && slot[0][2] == 3);
    } else {
      gm::await_at_least(&released_b, 1);
    }
    slot[1][1] = 12;
    gm::sys::arrive_and_drop(gm::side_b, steps_b);
  } else {
    slot[0][2] = 3;
    gm::sys::arrive_and_drop(gm::side_b, steps_b);
  }
  return nullptr;
}

int main() {
  gm::split_init(1, 2);
  gm::run_threads<3>(thread);
  assert(steps_a.n == PHASES && steps_b.n == 2);
  assert(gm::side_a[1] == PHASES && gm::slot_a == PHASES);
  // B's count keeps its two phases below `left`.
  assert(gm::side_b[1] == (2 | gm::split::left) && gm::slot_b == (2 | gm::split::left));
  return 0;
}
