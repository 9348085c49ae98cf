// Property: in the direct layouts, a surplus arrival's call ends even when, before it
// looks, the phases of its window complete and everyone else drops out (the word then
// unarmed with nothing arrived and nothing expected). Block scope, or the wide layout with
// -DGM_DIRECT=gm::direct_device. Expected count 1, 2 threads:
//   thread 0 arrives (phase 0), says so, arrives again (phase 1 or 2), waits until phase 2
//     has completed (R reads 1, as after phase 0), then arrive_and_drops (phase 3; E is 0
//     after it);
//   thread 1, once phase 0 is in, arrives once and never waits on its token: where thread
//     0's second arrival came first and had not armed phase 1 yet, it is counted in phase 2.
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static gm::no_completion none;
static int started;  // atomic: phase 0's arrival is in

static void* thread(void* arg) {
  if (reinterpret_cast<long>(arg) == 0) {
    (void)D::arrive(&bar, 1, none, false);
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    (void)D::arrive(&bar, 1, none, false);
    D::wait_parity(&bar, false);
    (void)D::arrive(&bar, 1, none, true);
  } else {
    gm::await_at_least(&started, 1);
    (void)D::arrive(&bar, 1, none, false);
  }
  return nullptr;
}

int main() {
  D::init(&bar, 1);
  gm::run_threads<2>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == false && f.expected() == 0);
  return 0;
}
