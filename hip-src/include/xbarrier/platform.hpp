// xbarrier/platform.hpp - picks the platform layer the protocol runs on (config.hpp says why).
#pragma once
#include "config.hpp"

#if defined(XB_PLATFORM_HOST)
#include "platform/host.hpp"
#elif defined(XB_PLATFORM_CUDA)
#if __has_include("platform/cuda.hpp")
#include "platform/cuda.hpp"
#else
#error "xbarrier: no CUDA platform layer in this version yet; build kernels for the host backend"
#endif
#elif defined(XB_PLATFORM_AMDGCN)
#if __has_include("platform/amdgcn.hpp")
#include "platform/amdgcn.hpp"
#else
#error "xbarrier: no AMDGPU platform layer in this version yet; build kernels for the host backend"
#endif
#endif
