// Property: arrive_and_wait() returns only after every arrival of its phase, seeing the data
// each thread wrote before arriving; the completer returns without polling. No completion
// function. 3 threads, 2 phases, expected count 3.
// Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device. With
// -DGM_WAVE=k thread 0 stands for a wave of k lanes that arrive together: one arrival of k
// by the group's leader (lane_group.hpp), so the expected count is 2 + k.
#include "platform.hpp"

#ifndef GM_WAVE
#define GM_WAVE 1
#endif
constexpr int N = 3, PHASES = 2, EXPECTED = N - 1 + GM_WAVE;
static uint64_t bar;
static int slot[PHASES][N];
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) xb::detail::genmc_wave_extra_lanes = GM_WAVE - 1;
  for (int k = 0; k < PHASES; ++k) {
    slot[k][i] = 10 * k + i + 1;
    gm::proto::arrive_and_wait(&bar, none);
    for (int j = 0; j < N; ++j) assert(slot[k][j] == 10 * k + j + 1);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, EXPECTED);
  gm::run_threads<N>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(f.parity() == bool(PHASES & 1) && f.pending() == EXPECTED && f.expected() == EXPECTED && f.tx() == 0);
  return 0;
}
