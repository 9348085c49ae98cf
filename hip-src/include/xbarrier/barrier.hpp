// xbarrier/barrier.hpp - the umbrella header: everything a kernel needs.
//
//   xb::barrier<scope, Completion>        cuda::barrier's interface
//   xb::device::barrier_arrive_tx / barrier_expect_tx / memcpy_async_tx / barrier_native_handle
//   xb::memcpy_async, xb::fence, xb::membar_cta/gl/sys, xb::fence_proxy_async
//   kernel portability macros (kernel.hpp)
#pragma once
#include "config.hpp"
#include "scope.hpp"
#include "platform.hpp"
#include "protocol.hpp"
#include "barrier_object.hpp"
#include "fence.hpp"
#include "copy.hpp"
#include "kernel.hpp"
