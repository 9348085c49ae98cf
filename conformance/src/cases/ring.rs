//! A producer/consumer ring over 10^5 stages (fewer under `XBAR_REPS_DIVISOR`), checked by a
//! checksum.

use xbarrier::{Backend, LaunchConfig};

use super::{case, Case};
use crate::harness::{launched, reps, CaseResult, Ctx, Pass};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    vec![case("producer_consumer_ring_100k_stages", "pipeline", ring::<B>)]
}

fn ring<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    const STAGES: u32 = 4; // kStages in ring.cpp
    let (chunk_words, src_chunks, stages_total, consumers) = (64u32, 37u32, reps(100_000, 64)?, 3u32);
    let src: Vec<u32> = (0..chunk_words * src_chunks).map(|i| i.wrapping_mul(40503) % 1000).collect();
    let src_buf = ctx.device.upload(&src).map_err(|e| e.to_string())?;
    let sums = ctx.device.alloc::<u64>(consumers as usize).map_err(|e| e.to_string())?;
    let config = LaunchConfig::new(1, consumers + 1).shared(STAGES * chunk_words * 4);
    let args = [src_buf.arg(), src_chunks.into(), chunk_words.into(), stages_total.into(), sums.arg()];
    // SAFETY: `xbc_ring(const unsigned* src, unsigned src_chunks, unsigned chunk_words,
    // unsigned stages_total, unsigned long long* sums)`; sums has one slot per consumer.
    launched(unsafe { ctx.launch("xbc_ring", config, &args) }, "xbc_ring")?;
    let got = sums.download().map_err(|e| e.to_string())?;
    let mut want = vec![0u64; consumers as usize];
    for i in 0..stages_total {
        let chunk = &src[((i % src_chunks) * chunk_words) as usize..][..chunk_words as usize];
        for (w, &v) in chunk.iter().enumerate() {
            want[w % consumers as usize] += u64::from(v) * u64::from(i % 7 + 1);
        }
    }
    if got != want {
        return Err(format!("consumer checksums {got:?}, expected {want:?}"));
    }
    Ok(Pass(format!("{stages_total} stages through a {STAGES}-stage ring, 1 producer (arrive_tx + memcpy_async_tx) / {consumers} consumers, checksums match")))
}
