// xbarrier/platform.hpp - the platform layer of this compile (config.hpp picks the target),
// as xb::detail::platform, checked against the interface every layer provides
// (platform/interface.hpp; docs/platform-interface.md). Each target is one file:
//   platform/host.hpp     CPU threads (backend-host), with its mbarrier model
//   platform/cuda.hpp     NVIDIA GPUs, with the sm_90 mbarrier instructions (cuda_mbarrier.hpp)
//   platform/amdgcn.hpp   AMD GPUs, with the clock (amdgcn_clock.hpp)
#pragma once
#include "config.hpp"

#if defined(XB_PLATFORM_HOST)
#include "platform/host.hpp"
#elif defined(XB_PLATFORM_CUDA)
#include "platform/cuda.hpp"
#elif defined(XB_PLATFORM_AMDGCN)
#include "platform/amdgcn.hpp"
#endif
#include "platform/interface.hpp"

static_assert(xb::detail::check_platform_interface<xb::detail::platform>(),
              "xbarrier: the platform layer is incomplete");
