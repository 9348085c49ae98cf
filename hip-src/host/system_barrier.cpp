// hip-src/host/system_barrier.cpp - host threads on an xb::barrier<xb::thread_scope_system>
// that kernels use too. The xbarrier crate compiles this file (build.rs) for the Rust
// SystemBarrier: each entry point runs the host platform layer's protocol, the same source
// the kernels run, on the barrier's words in memory both sides reach.
//
// Calls come from plain OS threads, outside any launch. Each runs as a "foreign" kernel
// thread of its own: a launch record with no scheduler and no wait bound, so that a fault of
// a checked build unwinds to the entry point, which returns it, instead of ending the process.
// The Rust side polls xb_system_test for a phase with its own back-off. Where the protocol
// itself waits inside a call (an arrival that finds a completion step claimed but not yet
// published, in checked builds), every back-off step calls the caller's `give_up` check,
// which backs off and says whether a kernel that uses the barrier has failed: then the call
// unwinds and returns 2, since a failed kernel may never publish what it claimed.
#include <string.h>

#include <xbarrier/barrier.hpp>

#define XB_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using system_barrier = xb::barrier<xb::thread_scope_system>;
using token = system_barrier::arrival_token;

// What the Rust side keeps of a token: its bytes, opaque.
constexpr size_t token_capacity = 32;
static_assert(sizeof(token) <= token_capacity, "a token must fit the Rust side's buffer");

// Block and thread index of a host thread in a fault record: none of a launch's.
constexpr uint32_t host_index = 0xffffffffu;

struct foreign_thread {
  xb_host_launch launch;
  xb_host_block block;
  xb_host_thread thread;
};

// The caller's check, run at every back-off step of a wait inside a call: nonzero when the
// wait should give up.
typedef int (*xb_system_give_up)(void* context);
struct give_up_check {
  xb_system_give_up check;
  void* context;
  uint32_t* abort;
};
thread_local give_up_check current_check;

// The launch record's yield function for a foreign thread: the back-off step. Setting
// `abort` makes the host layer's next back-off unwind the call (host_platform::backoff).
void back_off_or_give_up(void*) {
  if (current_check.check && current_check.check(current_check.context)) *current_check.abort = 1;
}

// Runs `op` as this OS thread's foreign kernel thread: 0 when it returned, 1 with `*fault`
// filled when it faulted, 2 when `give_up` ended one of its waits.
template <class Op>
int as_host_thread(xb_fault_record* fault, xb_system_give_up give_up, void* context, Op op) {
  static thread_local foreign_thread self;
  memset(&self, 0, sizeof(self));
  for (int i = 0; i < 3; ++i) {
    self.block.index[i] = host_index;
    self.thread.index[i] = host_index;
  }
  self.thread.launch = &self.launch;
  self.thread.block = &self.block;
  self.launch.yield_fn = give_up ? back_off_or_give_up : nullptr;
  current_check = give_up_check{give_up, context, &self.launch.abort};
  xb_host_thread* const outer = xb::host::current_thread;
  xb::host::current_thread = &self.thread;
  int status = 0;
  try {
    op();
  } catch (const xb::host::kernel_aborted&) {
    *fault = self.launch.fault;
    status = self.launch.fault_claimed ? 1 : 2;
  }
  xb::host::current_thread = outer;
  current_check = give_up_check{};
  return status;
}

token load_token(const uint64_t* bytes) {
  token t;
  memcpy(static_cast<void*>(&t), bytes, sizeof(token));
  return t;
}

}  // namespace

// The layout the Rust side allocates and checks: sizes[0] the barrier's bytes, sizes[1] its
// alignment, sizes[2] a token's bytes, sizes[3] max(), sizes[4] whether checked.
XB_EXPORT void xb_system_layout(uint64_t* sizes) {
  sizes[0] = sizeof(system_barrier);
  sizes[1] = alignof(system_barrier);
  sizes[2] = sizeof(token);
  sizes[3] = uint64_t(system_barrier::max());
  sizes[4] = XB_CHECKED;
}

XB_EXPORT int xb_system_init(void* bar, int64_t expected, xb_fault_record* fault) {
  return as_host_thread(fault, nullptr, nullptr, [&] { init(static_cast<system_barrier*>(bar), ptrdiff_t(expected)); });
}

// The split form (engine_system.hpp): `host` is the host threads' barrier (memory only the
// host uses), `kernel` an image of the kernels' (which the caller copies to device memory
// before any launch), each zero-filled, of xb_system_layout's size; `host_slot` and `kernel_slot` are the
// zero-filled words where the host's and the kernels' counts are published, in memory both
// sides reach at the same address, each on a cache line of its own.
XB_EXPORT int xb_system_split_init(void* host, void* kernel, int64_t host_expected, int64_t kernel_expected,
                                   uint64_t* host_slot, uint64_t* kernel_slot, xb_fault_record* fault) {
  return as_host_thread(fault, nullptr, nullptr, [&] {
    using split = xb::detail::system_split;
    using access = xb::detail::barrier_access;
    auto* h = static_cast<system_barrier*>(host);
    auto* k = static_cast<system_barrier*>(kernel);
    init(h, ptrdiff_t(host_expected));  // the checks on the count, and the phase count's reset
    init(k, ptrdiff_t(kernel_expected));
    split::init_side(access::word(*h), ptrdiff_t(host_expected), host_slot, kernel_slot);
    split::init_side(access::word(*k), ptrdiff_t(kernel_expected), kernel_slot, host_slot);
  });
}

// Arrives with `update`; the token's bytes go to `out` (token_capacity bytes).
XB_EXPORT int xb_system_arrive(void* bar, int64_t update, uint64_t* out, xb_fault_record* fault,
                               xb_system_give_up give_up, void* context) {
  return as_host_thread(fault, give_up, context, [&] {
    const token t = static_cast<system_barrier*>(bar)->arrive(ptrdiff_t(update));
    memset(out, 0, token_capacity);
    memcpy(out, static_cast<const void*>(&t), sizeof(token));
  });
}

XB_EXPORT int xb_system_arrive_and_drop(void* bar, xb_fault_record* fault, xb_system_give_up give_up,
                                        void* context) {
  return as_host_thread(fault, give_up, context, [&] { static_cast<system_barrier*>(bar)->arrive_and_drop(); });
}

// Whether the phase of the token in `bytes` has completed (then with acquire ordering).
XB_EXPORT int xb_system_test(const void* bar, const uint64_t* bytes, uint32_t* done, xb_fault_record* fault) {
  return as_host_thread(fault, nullptr, nullptr, [&] {
    *done = static_cast<const system_barrier*>(bar)->try_wait(load_token(bytes)) ? 1u : 0u;
  });
}
