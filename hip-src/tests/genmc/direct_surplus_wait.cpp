// Property: in the direct layouts, an arrive_and_wait counted in a later phase than the one
// its atomic found (a surplus arrival) waits for that later phase. Block scope, or the wide
// layout with -DGM_DIRECT=gm::direct_device. Expected count 3, 2 threads, 3 phases:
//   phase 0 (armed by init): thread 0 arrives with update 2, thread 1 with 1; both wait,
//     and each waits for the other to have left the wait (so that no later phase laps it);
//   then thread 0 arrives with update 1 (token t), reads `left_wait`, and arrives with
//     update 2; thread 1 arrives with update 2, then arrive_and_waits (update 1) and sets
//     `left_wait`.
// Every order of those four arrivals splits them into two whole phases. Where thread 0's
// update 1 is counted in phase 1 (t reads phase 1's parity), phase 1 is it and an update 2
// of either thread, so thread 1's arrive_and_wait is phase 2's and returns only after
// thread 0's last arrival: thread 0 must read `left_wait` as 0. The surplus case: thread
// 0's update 1 is phase 1's first arrival and has not armed it when both of thread 1's
// land (with the token of the phase its atomic found, the wait returns early, or never
// where phase 2 completes before it polls).
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static gm::no_completion none;
static int left[2];   // atomic: thread i has left phase 0's wait
static int left_wait; // atomic: thread 1's arrive_and_wait after phase 0 has returned

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) D::wait_parity(&bar, D::arrive(&bar, 2, none, false));
  else D::arrive_and_wait(&bar, none);
  __atomic_store_n(&left[i], 1, __ATOMIC_RELEASE);
  gm::await_at_least(&left[1 - i], 1);
  if (i == 0) {
    const bool t = D::arrive(&bar, 1, none, false);
    const int seen = __atomic_load_n(&left_wait, __ATOMIC_ACQUIRE);
    if (t) assert(seen == 0);
    (void)D::arrive(&bar, 2, none, false);
  } else {
    (void)D::arrive(&bar, 2, none, false);
    D::arrive_and_wait(&bar, none);
    __atomic_store_n(&left_wait, 1, __ATOMIC_RELEASE);
  }
  return nullptr;
}

int main() {
  D::init(&bar, 3);
  gm::run_threads<2>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == true && f.pending() == 3 && f.expected() == 3);
  return 0;
}
