// xbarrier/platform.hpp - picks the platform layer the protocol runs on (config.hpp says why).
#pragma once
#include "config.hpp"

#if defined(XB_PLATFORM_HOST)
#include "platform/host.hpp"
#elif defined(XB_PLATFORM_CUDA)
#include "platform/cuda.hpp"
#elif defined(XB_PLATFORM_AMDGCN)
#include "platform/amdgcn.hpp"
#endif
