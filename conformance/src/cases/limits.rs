//! max() of each barrier type.

use xbarrier::{Backend, BackendKind, LaunchConfig, Variant};

use super::{case, Case};
use crate::harness::{launched, CaseResult, Ctx, Pass};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    vec![case("max_values", "limits", max::<B>), case("dynamic_shared_alignment", "limits", dynamic_shared::<B>)]
}

fn max<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let out = ctx.device.alloc::<i64>(10).map_err(|e| e.to_string())?;
    // SAFETY: `xbc_max(long long* out)`; out has 10 slots.
    launched(unsafe { ctx.launch("xbc_max", LaunchConfig::new(1, 1), &[out.arg()]) }, "xbc_max")?;
    let got = out.download().map_err(|e| e.to_string())?;
    let block = (1i64 << 20) - 1;
    let int32 = i64::from(i32::MAX);
    // cuda::barrier: block scope (1<<20)-1 with or without completion; other scopes int32 max.
    // With a completion function at block scope one count goes to the native lowering's gate
    // (engine_sm90_completion.hpp), on every target alike. For other scopes with a completion
    // function CCCL documents ptrdiff max; here the counts share one 64-bit word, so it is
    // int32 max as well. Thread scope is block scope's, as CUDA makes it without a completion
    // function (docs/porting-cuda-barrier.md, "What differs from CUDA"). Sizes: the mbarrier's
    // 8 bytes (plus 8 where the kernel says block barriers have a shadow mbarrier: sanitizer
    // builds of the default variant on sm_90, engine_sm90_checked.hpp, and checked host
    // builds with XB_SHADOW_MODEL=1); three words and a pointer-sized completion function;
    // every checked build adds the 8-byte phase count (phase_count.hpp).
    let info = ctx.device.info();
    let sm90_or_later = info.arch.strip_prefix("sm_").and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n >= 90);
    let shadowed = got[9] != 0;
    let shadow_possible = ctx.module.checked()
        && match B::KIND {
            BackendKind::Cuda => ctx.module.variant() == Variant::Default && sm90_or_later,
            BackendKind::Host => true,
            _ => false,
        };
    if shadowed && !shadow_possible {
        return Err(format!("a shadow mbarrier where none can be ({}, {:?})", info.arch, ctx.module.variant()));
    }
    let phase_count = if ctx.module.checked() { 8 } else { 0 };
    let shadow = if shadowed { 8 } else { 0 };
    let want = [block, block - 1, block, int32, int32, int32, 8 + shadow + phase_count, 32 + phase_count, block - 1];
    let names = [
        "block",
        "block+completion",
        "thread",
        "device",
        "device+completion",
        "system",
        "sizeof(block barrier)",
        "sizeof(block barrier with completion)",
        "thread+completion",
    ];
    for ((name, want), got) in names.iter().zip(want).zip(&got) {
        if want != *got {
            return Err(format!("{name}: got {got}, want {want}"));
        }
    }
    Ok(Pass(format!(
        "block/thread 2^20-1 (2^20-2 with completion), device/system 2^31-1, {} and {} bytes",
        want[6], want[7]
    )))
}

fn dynamic_shared<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let out = ctx.device.alloc::<i64>(2).map_err(|e| e.to_string())?;
    let config = LaunchConfig::new(1, 64).shared(256);
    // SAFETY: `xbc_dynamic_shared_alignment(long long* out)`; out has 2 slots; the kernel
    // touches 64 bytes of the 256 dynamic bytes it is given.
    let result = unsafe { ctx.launch("xbc_dynamic_shared_alignment", config, &[out.arg()]) };
    launched(result, "xbc_dynamic_shared_alignment")?;
    let got = out.download().map_err(|e| e.to_string())?;
    if got[1] != (1..=24).sum::<i64>() {
        return Err(format!("the kernel's static shared bytes read back as {}, expected 300", got[1]));
    }
    if got[0] != 0 {
        return Err(format!("xb::dynamic_shared is {} bytes past a 128-byte boundary after 24 static bytes", got[0]));
    }
    Ok(Pass("xb::dynamic_shared is 128-byte aligned after a kernel's static shared variables".into()))
}
