// Message passing for each fence scope: the writer stores data, fences, stores a flag; the
// reader loads the flag, fences, loads the data. Seeing a flag newer than the data is the
// forbidden outcome. scope 0: membar.cta between two threads of a block; 1: membar.gl and
// 2: membar.sys between threads of different blocks.
#include "common.hpp"

XB_INLINE void fence_for(unsigned scope) {
  if (scope == 0) xb::membar_cta();
  else if (scope == 1) xb::membar_gl();
  else xb::membar_sys();
}

XB_KERNEL void xbc_litmus_mp(uint64_t* words, unsigned long long* report, unsigned iterations, unsigned scope,
                             unsigned writer, unsigned reader) {
  uint64_t* data = words;
  uint64_t* flag = words + 32;   // another cache line
  // The reader publishes the last flag it saw; the writer never runs more than kLag messages
  // ahead of it, so the two loops overlap even on a loaded machine.
  uint64_t* seen = words + 48;
  constexpr uint64_t kLag = 256;
  const unsigned g = xbc::global_thread();
  if (g == writer) {
    for (uint64_t i = 1; i <= iterations; ++i) {
      if (i > kLag && xbc::load_relaxed(seen) + kLag < i) {
        const uint64_t start = xb::clock_ns();  // wait for the reader, but never for long
        while (xbc::load_relaxed(seen) + kLag < i && xb::clock_ns() - start < 10000000ull) {
        }
      }
      xbc::store_relaxed(data, i);
      fence_for(scope);
      xbc::store_relaxed(flag, i);
    }
  } else if (g == reader) {
    uint64_t last = 0, observed = 0, violations = 0;
    const uint64_t start = xb::clock_ns();
    while (last < iterations && xb::clock_ns() - start < 30000000000ull) {
      const uint64_t f = xbc::load_relaxed(flag);
      fence_for(scope);
      const uint64_t d = xbc::load_relaxed(data);
      if (d < f) ++violations;
      if (f != last) {
        ++observed;
        last = f;
        xbc::store_relaxed(seen, f);
      }
    }
    report[4] = violations;
    report[5] = observed;
    report[6] = last;
  }
}
