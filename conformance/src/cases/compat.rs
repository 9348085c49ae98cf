//! A kernel written for CUDA's <cuda/barrier>, run unchanged through xbarrier/cuda_compat.hpp.
//! Only the host and HIP backends carry it: under nvcc that header is CCCL itself.

use xbarrier::{Backend, BackendKind, LaunchConfig};

use super::{case, Case};
use crate::harness::{check_report, launched, CaseResult, Ctx, Pass};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    if B::KIND == BackendKind::Cuda {
        return Vec::new();
    }
    vec![case("cuda_port_through_cuda_compat", "cuda_compat", cuda_port::<B>)]
}

fn cuda_port<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let rounds = 6u32;
    let words = 1024u32;
    let source: Vec<u32> = (0..words + 4 * rounds).map(|i| i.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995).collect();
    let src = ctx.device.upload(&source).map_err(|e| e.to_string())?;
    let report = ctx.report()?;
    let config = LaunchConfig::new(2, 128).shared(words * 4);
    // SAFETY: `xbc_cuda_port(const unsigned* src, unsigned long long* report, unsigned words,
    // unsigned rounds)`; src holds words + 4 * rounds values.
    let result =
        unsafe { ctx.launch("xbc_cuda_port", config, &[src.arg(), report.arg(), words.into(), rounds.into()]) };
    launched(result, "xbc_cuda_port")?;
    check_report(&report, "xbc_cuda_port")?;
    Ok(Pass(format!(
        "cuda::barrier, barrier_arrive_tx, barrier_expect_tx, memcpy_async_tx and cuda::memcpy_async: {rounds} rounds of {} KiB tiles",
        words * 4 / 1024
    )))
}
