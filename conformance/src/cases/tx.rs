//! Transaction counts: arrive_tx with memcpy_async_tx, expect_tx from another thread, tx
//! landing first, the H200's edge cases, and try_wait_for.

use xbarrier::{Backend, LaunchConfig};

use super::{case, Case};
use crate::harness::{check_report, launched, reps, CaseResult, Ctx, Pass};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    vec![
        case("arrive_tx_memcpy_async_tx_16B_to_64KiB", "tx-count", copy_sizes::<B>),
        case("expect_tx_from_other_thread", "tx-count", expect_other::<B>),
        case("tx_edge_cases_match_h200", "tx-count", sequences::<B>),
        case("try_wait_for_times_out", "try_wait_for", try_wait_for::<B>),
        case("try_wait_until_times_out", "try_wait_until", try_wait_until::<B>),
        case("memcpy_async_thread_and_group", "copies", memcpy_async::<B>),
        case("completion_reads_bulk_copied_stage", "completion", completion_tx::<B>),
        case("shared_variables_in_device_functions", "tx-count", shared_in_helpers::<B>),
    ]
}

fn shared_in_helpers<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let blocks = 6u32;
    let src: Vec<u32> = (0..4).map(|i| 1000 * (i + 1)).collect();
    let src_buf = ctx.device.upload(&src).map_err(|e| e.to_string())?;
    let out = ctx.device.alloc::<u32>(2 * blocks as usize).map_err(|e| e.to_string())?;
    // SAFETY: `xbc_shared_in_helpers(const unsigned* src, unsigned* out)`: src has 4 words,
    // out two per block.
    let result =
        unsafe { ctx.launch("xbc_shared_in_helpers", LaunchConfig::new(blocks, 32), &[src_buf.arg(), out.arg()]) };
    launched(result, "xbc_shared_in_helpers")?;
    let got = out.download().map_err(|e| e.to_string())?;
    for b in 0..blocks {
        for (k, offset) in [(0usize, 1u32), (1, 2)] {
            let want = src[(b % 4) as usize] + b + offset;
            let seen = got[2 * b as usize + k];
            if seen != want {
                let helper = if k == 0 { "template" } else { "inline" };
                return Err(format!("block {b}, {helper} helper: read {seen}, want {want}"));
            }
        }
    }
    Ok(Pass(format!(
        "{blocks} blocks, each with its own __shared__ barrier, tile and mark in a template and an inline helper"
    )))
}

fn source(words: usize) -> Vec<u32> {
    (0..words as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995).collect()
}

fn copy_sizes<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let rounds = 4u32;
    for bytes in [16u32, 48, 256, 1024, 4096, 16384, 65536] {
        let src = ctx.device.upload(&source(bytes as usize / 4 + rounds as usize * 4)).map_err(|e| e.to_string())?;
        for (threads, pieces) in [(1u32, 1u32), (64, 1), (64, (bytes / 16).min(4)), (128, (bytes / 16).min(32))] {
            let report = ctx.report()?;
            let config = LaunchConfig::new(2, threads).shared(bytes);
            let args = [src.arg(), report.arg(), bytes.into(), pieces.into(), rounds.into()];
            // SAFETY: `xbc_copy_tx(const unsigned* src, unsigned long long* report, unsigned bytes,
            // unsigned pieces, unsigned rounds)`; src holds bytes + rounds*16 bytes.
            launched(unsafe { ctx.launch("xbc_copy_tx", config, &args) }, "xbc_copy_tx")?;
            check_report(&report, &format!("{bytes} B in {pieces} piece(s), {threads} threads"))?;
        }
    }
    Ok(Pass("sizes 16 B..64 KiB, 1..32 copies per phase, full compare of every byte".into()))
}

fn expect_other<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let rounds = reps(500, 8)?; // the kernel cycles through 8 source offsets
    for bytes in [16u32, 4096] {
        let src = ctx.device.upload(&source(bytes as usize / 4 + 32)).map_err(|e| e.to_string())?;
        let report = ctx.report()?;
        // SAFETY: `xbc_expect_other(const unsigned* src, unsigned long long* report, unsigned bytes, unsigned rounds)`.
        let result = unsafe {
            ctx.launch(
                "xbc_expect_other",
                LaunchConfig::new(1, 64).shared(bytes),
                &[src.arg(), report.arg(), bytes.into(), rounds.into()],
            )
        };
        launched(result, "xbc_expect_other")?;
        check_report(&report, &format!("expect_tx by thread 0, copy by thread 1, {bytes} B"))?;
    }
    Ok(Pass(format!("{rounds} rounds: thread 0 expects, thread 1 copies, in either order")))
}

fn sequences<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let src = ctx.device.upload(&source(16)).map_err(|e| e.to_string())?;
    let seen = ctx.device.alloc::<u64>(18).map_err(|e| e.to_string())?;
    // SAFETY: `xbc_tx_sequences(const unsigned* src, unsigned long long* seen)`; seen has 18 slots.
    let result = unsafe { ctx.launch("xbc_tx_sequences", LaunchConfig::new(1, 1), &[src.arg(), seen.arg()]) };
    launched(result, "xbc_tx_sequences")?;
    let s = seen.download().map_err(|e| e.to_string())?;
    // docs/mbarrier-semantics.md, as observed on the H200.
    let table: [(&str, u64); 18] = [
        ("P1 arrivals in, tx -16: not complete", 0),
        ("P1 then expect_tx(16) alone completes", 1),
        ("P2 tx balanced, one arrival pending: not complete", 0),
        ("P2 last arrival completes", 1),
        ("P3 copy first, arrive_tx completes", 1),
        ("P6 arrive_tx(16), complete 8: not complete", 0),
        ("P6 complete the other 8: complete", 1),
        ("P7 arrive_tx with tx 0 is a plain arrive", 1),
        ("P8 expect, complete, arrive(2): complete", 1),
        ("P9 phase 0 complete", 1),
        ("P9 tx landing in phase 1: not complete", 0),
        ("P9 expect_tx balances it: still an arrival pending", 0),
        ("P9 arrive completes phase 1", 1),
        ("P16 arrive + arrive_and_drop complete phase 0", 1),
        ("P16 phase 1 completes with one arrival", 1),
        ("P16 phase 2 completes with one arrival", 1),
        ("P13 init(2^20-1) + arrive(2^20-1) completes", 1),
        ("sequence ran to its end", 1),
    ];
    let wrong: Vec<String> = table
        .iter()
        .zip(&s)
        .filter(|((_, want), got)| *want != **got)
        .map(|((what, want), got)| format!("{what}: got {got}, H200 gives {want}"))
        .collect();
    if !wrong.is_empty() {
        return Err(wrong.join("; "));
    }
    Ok(Pass("P1-P3, P6-P9, P13, P16 of the H200 ground truth reproduced".into()))
}

fn try_wait_for<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let timeout_ns = 20_000_000u64;
    let seen = ctx.device.alloc::<u64>(3).map_err(|e| e.to_string())?;
    // SAFETY: `xbc_try_wait_for(unsigned long long* seen, unsigned long long timeout_ns)`.
    let result = unsafe { ctx.launch("xbc_try_wait_for", LaunchConfig::new(1, 2), &[seen.arg(), timeout_ns.into()]) };
    launched(result, "xbc_try_wait_for")?;
    let s = seen.download().map_err(|e| e.to_string())?;
    if s[0] != 0 {
        return Err("try_wait_for returned true although the phase could not complete".into());
    }
    if s[1] < timeout_ns {
        return Err(format!("try_wait_for gave up after {} ns, before its {timeout_ns} ns timeout", s[1]));
    }
    if s[2] != 1 {
        return Err("try_wait_parity_for returned false although the phase completed".into());
    }
    Ok(Pass(format!(
        "20 ms timeout honoured (returned after {:.1} ms), then true once the phase completed",
        s[1] as f64 * 1e-6
    )))
}

fn try_wait_until<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let timeout_ns = 20_000_000u64;
    let seen = ctx.device.alloc::<u64>(4).map_err(|e| e.to_string())?;
    // SAFETY: `xbc_try_wait_until(unsigned long long* seen, unsigned long long timeout_ns)`.
    let result = unsafe { ctx.launch("xbc_try_wait_until", LaunchConfig::new(1, 2), &[seen.arg(), timeout_ns.into()]) };
    launched(result, "xbc_try_wait_until")?;
    let s = seen.download().map_err(|e| e.to_string())?;
    if s[0] != 0 {
        return Err("try_wait_until returned true although the phase could not complete".into());
    }
    if s[1] != 1 {
        return Err("try_wait_until gave up before its deadline".into());
    }
    if s[2] != 0 {
        return Err("try_wait_parity_until with a passed deadline returned true, the phase incomplete".into());
    }
    if s[3] != 1 {
        return Err("try_wait_parity_until returned false although the phase completed".into());
    }
    Ok(Pass("a 20 ms deadline honoured, a passed one tested once, then true once the phase completed".into()))
}

fn memcpy_async<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let rounds = 6u32;
    for (words, threads) in [(1u32, 1u32), (37, 8), (4096, 256)] {
        let src = ctx.device.upload(&source((words + rounds) as usize)).map_err(|e| e.to_string())?;
        let report = ctx.report()?;
        let gdst = ctx.device.alloc::<u32>(2 * words as usize).map_err(|e| e.to_string())?;
        let config = LaunchConfig::new(2, threads).shared(words * 4);
        // SAFETY: `xbc_memcpy_async(const unsigned* src, unsigned long long* report, unsigned words,
        // unsigned rounds, unsigned* gdst)`; src holds words + rounds values, gdst 2 * words.
        let result = unsafe {
            ctx.launch("xbc_memcpy_async", config, &[src.arg(), report.arg(), words.into(), rounds.into(), gdst.arg()])
        };
        launched(result, "xbc_memcpy_async")?;
        check_report(&report, &format!("{words} words, {threads} threads"))?;
    }
    Ok(Pass(
        "single-thread and block-group copies of 4 B..16 KiB, unaligned sizes too, aligned_size_t<16> into shared and global memory"
            .into(),
    ))
}

fn completion_tx<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let rounds = reps(200, 4)?;
    for words in [4u32, 1024, 4096] {
        let src = ctx.device.upload(&source(words as usize + rounds as usize * 4)).map_err(|e| e.to_string())?;
        for threads in [1u32, 96] {
            let report = ctx.report()?;
            let config = LaunchConfig::new(2, threads).shared(words * 4);
            let args = [src.arg(), report.arg(), words.into(), rounds.into()];
            // SAFETY: `xbc_completion_tx(const unsigned* src, unsigned long long* report,
            // unsigned words, unsigned rounds)`; src holds words + rounds*4 words.
            launched(unsafe { ctx.launch("xbc_completion_tx", config, &args) }, "xbc_completion_tx")?;
            check_report(&report, &format!("{} B per phase, {threads} threads", words * 4))?;
        }
    }
    Ok(Pass(format!("{rounds} phases of 16 B..16 KiB: the step sums the copied stage before any waiter returns")))
}
