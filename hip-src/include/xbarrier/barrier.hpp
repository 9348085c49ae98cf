// xbarrier/barrier.hpp - the umbrella header: everything a kernel needs.
//
//   xb::barrier<scope, Completion>        cuda::barrier's interface (barrier_object.hpp)
//   xb::device::barrier_arrive_tx / barrier_expect_tx / barrier_native_handle (barrier_object.hpp)
//   xb::memcpy_async, xb::device::memcpy_async_tx, xb::device::bulk_store* (copy.hpp)
//   xb::fence, xb::membar_cta/gl/sys, xb::fence_proxy_async (fence.hpp)
//   kernel portability (kernel.hpp)
#pragma once
#include "config.hpp"
#include "scope.hpp"
#include "platform.hpp"
#include "protocol.hpp"
#include "engine.hpp"
#include "barrier_object.hpp"
#include "fence.hpp"
#include "copy.hpp"
#include "kernel.hpp"
