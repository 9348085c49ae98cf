// Property: checked builds number each token's phase exactly from two reads of the phase
// count around the arrival (phase_count.hpp), and report a token as stale only when the
// barrier really is two phases past it.
// Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device.
// Expected count 2. 3 threads, 2 phases (as early_arrival):
//   phase 0: thread 0 arrives and waits, thread 1 arrives and checks its token once, without
//            waiting (phase 1 may or may not have ended by then); step 0 releases thread 2;
//   phase 1: thread 2 (maybe during step 0) arrives and waits; thread 0 arrives and waits.
// Every token of a thread that waits must be numbered (its reads cannot be more than one
// apart) with the phase it was counted in; thread 1's may be unknown, never wrong. A stale
// report for thread 1's token must come after step 1 (the barrier is in phase 2); main
// checks at the end that a token of phase 0 is stale then, and thread 0's of phase 1 not.
#include "platform.hpp"
#include "xbarrier/phase_count.hpp"

using count = xb::detail::phase_count<gm::P, xb::thread_scope_block>;

constexpr int PHASES = 2;
static uint64_t bar;
static uint64_t phases;  // the phase count C
static int steps;        // completion steps run so far
static int released;     // phases whose step has run (atomic)

struct step {
  void operator()() {
    count::count(&phases);
    const int k = steps;
    steps = k + 1;
    __atomic_store_n(&released, k + 1, __ATOMIC_RELEASE);
  }
};
static step completion;

// arrive() with the phase number a checked build gives its token.
static xb::detail::token_phase arrive(bool* parity) {
  const uint64_t before = count::read(&phases);
  *parity = gm::proto::arrive(&bar, 1, completion, false);
  return count::of_arrival(before, count::read(&phases), *parity);
}

// The stale test of a wait on a token of `phase` (barrier_object.hpp's check_token).
static bool stale(uint64_t phase) {
  const uint64_t c = count::read(&phases);
  const uint64_t s = __atomic_load_n(&bar, __ATOMIC_ACQUIRE);
  return count::stale(phase, c, gm::proto::W::parity(s));
}

static void arrive_and_wait_as(uint64_t truth) {
  bool parity = false;
  const xb::detail::token_phase t = arrive(&parity);
  assert(t.known && t.phase == truth);
  assert(!stale(t.phase));  // its own phase has not ended, or has just ended
  gm::proto::wait_parity(&bar, parity);
}

static uint64_t last_of_thread0;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    arrive_and_wait_as(0);
    bool parity = false;
    const xb::detail::token_phase t = arrive(&parity);
    assert(t.known && t.phase == 1);
    last_of_thread0 = t.phase;
    gm::proto::wait_parity(&bar, parity);
  } else if (i == 1) {
    bool parity = true;
    const xb::detail::token_phase t = arrive(&parity);
    // Phases 0 and 1 may both end between its reads (it does not wait): then it cannot tell.
    assert(parity == false && (!t.known || t.phase == 0));
    if (t.known && stale(t.phase)) assert(__atomic_load_n(&released, __ATOMIC_RELAXED) == 2);
  } else {
    gm::await_at_least(&released, 1);
    arrive_and_wait_as(1);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, 2);
  count::reset(&phases);
  gm::run_threads<3>(thread);
  assert(steps == PHASES && __atomic_load_n(&phases, __ATOMIC_RELAXED) == PHASES);
  assert(stale(0));                 // phase 2: a token of phase 0 is stale
  assert(!stale(last_of_thread0));  // and one of phase 1 is the previous phase's
  return 0;
}
