// xbarrier/platform/wide_copy.hpp - the calling thread's copy on the GPU platform layers:
// 16-byte vectors where both pointers and the size allow, bytes otherwise. Vec16 is the
// target's 16-byte vector type (CUDA's uint4, an ext_vector_type on AMDGPU).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "../config.hpp"

namespace xb {
namespace detail {

template <class Vec16>
XB_INLINE void wide_copy(void* dst, const void* src, size_t bytes) {
  static_assert(sizeof(Vec16) == 16, "wide_copy: a 16-byte vector type");
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes) & 15) == 0) {
    Vec16* d = static_cast<Vec16*>(dst);
    const Vec16* s = static_cast<const Vec16*>(src);
    for (size_t i = 0; i < bytes / 16; ++i) d[i] = s[i];
  } else {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    for (size_t i = 0; i < bytes; ++i) d[i] = s[i];
  }
}

}  // namespace detail
}  // namespace xb
