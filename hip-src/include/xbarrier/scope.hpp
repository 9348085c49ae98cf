// xbarrier/scope.hpp - thread scopes (CUDA's names and values) and the memory orders and
// scopes the platform layers are written against.
#pragma once
#include "config.hpp"

namespace xb {

// CUDA's values, written either way: xb::thread_scope::block or xb::thread_scope_block.
enum class thread_scope : int {
  system = 0,
  device = 1,
  block = 2,
  thread = 3,
};
constexpr thread_scope thread_scope_system = thread_scope::system;
constexpr thread_scope thread_scope_device = thread_scope::device;
constexpr thread_scope thread_scope_block = thread_scope::block;
constexpr thread_scope thread_scope_thread = thread_scope::thread;

namespace detail {

// C++ memory orders by their __ATOMIC_* values (every compiler we use predefines them).
enum class mem_order : int {
  relaxed = __ATOMIC_RELAXED,
  acquire = __ATOMIC_ACQUIRE,
  release = __ATOMIC_RELEASE,
  acq_rel = __ATOMIC_ACQ_REL,
  seq_cst = __ATOMIC_SEQ_CST,
};

// The set of threads an atomic or fence must be coherent with.
// block -> PTX .cta / AMDGPU "workgroup"; device -> .gpu / "agent"; system -> .sys / "".
enum class mem_scope : int { block, device, system };

XB_INLINE constexpr mem_scope scope_of(thread_scope s) {
  return s == thread_scope_system ? mem_scope::system
       : s == thread_scope_device ? mem_scope::device
                                  : mem_scope::block;  // thread scope is served by block scope
}

}  // namespace detail
}  // namespace xb
