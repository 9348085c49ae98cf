//! Message-passing litmus tests for each fence scope.

use xbarrier::{Backend, LaunchConfig};

use super::{case, Case};
use crate::harness::{launched, CaseResult, Ctx, Pass};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    vec![
        case("litmus_mp_membar_cta", "fences", |ctx| mp(ctx, 0)),
        case("litmus_mp_membar_gl", "fences", |ctx| mp(ctx, 1)),
        case("litmus_mp_membar_sys", "fences", |ctx| mp(ctx, 2)),
    ]
}

const ITERATIONS: u32 = 100_000;

fn mp<B: Backend>(ctx: &Ctx<B>, scope: u32) -> CaseResult {
    let wave = ctx.device.info().wave_size.max(1);
    let threads = (2 * wave).max(2);
    // cta: two threads of one block in different waves; gl/sys: thread 0 of two blocks.
    let (blocks, writer, reader) = if scope == 0 { (1u32, 0u32, wave) } else { (2, 0, threads) };
    let words = ctx.device.alloc::<u64>(64).map_err(|e| e.to_string())?;
    let report = ctx.report()?;
    let args = [words.arg(), report.arg(), ITERATIONS.into(), scope.into(), writer.into(), reader.into()];
    // SAFETY: `xbc_litmus_mp(uint64_t* words, unsigned long long* report, unsigned iterations,
    // unsigned scope, unsigned writer, unsigned reader)`; words has 64 slots.
    let result = unsafe { ctx.launch("xbc_litmus_mp", LaunchConfig::new(blocks, threads).cooperative(), &args) };
    launched(result, "xbc_litmus_mp")?;
    let r = report.download().map_err(|e| e.to_string())?;
    let (violations, observed, last) = (r[4], r[5], r[6]);
    if violations != 0 {
        return Err(format!("{violations} message-passing violations (flag newer than data)"));
    }
    if observed < u64::from(ITERATIONS) / 256 {
        return Err(format!("the reader saw only {observed} flag value(s): writer and reader did not overlap"));
    }
    if last != u64::from(ITERATIONS) {
        return Err(format!("the reader saw flag {last}, never the writer's last value {ITERATIONS}"));
    }
    Ok(Pass(format!("{ITERATIONS} messages, reader observed {observed} distinct flags, 0 violations")))
}
