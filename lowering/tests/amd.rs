//! ISA tests for the AMDGPU targets (no GPU needed): each operation compiled for gfx90a,
//! gfx942, gfx1100 and gfx1200 (clang-19) and gfx950 and gfx1250 (clang 22), checked and
//! unchecked, must use LDS atomics on the barrier
//! word, the `s_sleep` wait loop and each target's fence sequence, and must not use scratch
//! memory. `arrive` must be combined per wave (one lane's `ds_add_rtn_u64` for the wave);
//! `__syncthreads()` must be the hardware barrier (`s_barrier`, or `s_barrier_signal` and
//! `s_barrier_wait` on gfx12). Per target, the unchecked `arrive_and_wait` fast path
//! (fast_path.rs) is measured and listed in the trial's name.
//!
//! Without the compiler the trials are reported ignored with the reason, unless
//! XBAR_REQUIRE_TOOLCHAINS=1 (tools/test.sh sets it), which makes that a failure.

mod common;

use libtest_mimic::{Arguments, Trial};
use xbarrier_lowering::{fast_path, mnemonic, Lowering, Op, OpCode, Target, Variant};

/// Whole instructions (mnemonic and operands) an operation must and must not start with.
struct Expect {
    has: Vec<&'static str>,
    not: Vec<&'static str>,
}

/// LDS instruction names: gfx9 says write/read/cmpst, gfx11 and gfx12 store/load/cmpstore.
struct Lds {
    store_b64: &'static str,
    load_b64: &'static str,
    store_b128: &'static str,
    cmpswap_b64: &'static str,
}

fn lds(target: Target) -> Lds {
    match target {
        Target::Gfx90a | Target::Gfx942 | Target::Gfx950 => Lds {
            store_b64: "ds_write_b64",
            load_b64: "ds_read_b64",
            store_b128: "ds_write_b128",
            cmpswap_b64: "ds_cmpst_rtn_b64",
        },
        _ => Lds {
            store_b64: "ds_store_b64",
            load_b64: "ds_load_b64",
            store_b128: "ds_store_b128",
            cmpswap_b64: "ds_cmpstore_rtn_b64",
        },
    }
}

/// The cache operations of a sequentially consistent fence at each scope (AMDGPU's memory-model
/// code sequences; docs/amd-memory-model.md has the release and acquire ones).
fn fence(target: Target, op: Op) -> Expect {
    let has: Vec<&'static str> = match (target, op) {
        // One CU per workgroup on gfx9 (and no cache for workgroups to share on gfx1250):
        // workgroup fences need only waits.
        (Target::Gfx90a | Target::Gfx942 | Target::Gfx950 | Target::Gfx1250, Op::FenceCta) => vec![],
        (Target::Gfx1100, Op::FenceCta) => vec!["buffer_gl0_inv"],
        (Target::Gfx1200, Op::FenceCta) => vec!["global_wb scope:SCOPE_SE", "global_inv scope:SCOPE_SE"],
        (Target::Gfx90a, Op::FenceGl) => vec!["buffer_wbinvl1_vol"],
        (Target::Gfx942 | Target::Gfx950, Op::FenceGl) => vec!["buffer_wbl2 sc1", "buffer_inv sc1"],
        (Target::Gfx1100, Op::FenceGl) => vec!["buffer_gl1_inv", "buffer_gl0_inv"],
        (Target::Gfx1200 | Target::Gfx1250, Op::FenceGl) => {
            vec!["global_wb scope:SCOPE_DEV", "global_inv scope:SCOPE_DEV"]
        }
        (Target::Gfx90a, Op::FenceSys) => vec!["buffer_wbl2", "buffer_invl2", "buffer_wbinvl1_vol"],
        (Target::Gfx942 | Target::Gfx950, Op::FenceSys) => vec!["buffer_wbl2 sc0 sc1", "buffer_inv sc0 sc1"],
        (Target::Gfx1100, Op::FenceSys) => vec!["buffer_gl1_inv", "buffer_gl0_inv"],
        (Target::Gfx1200 | Target::Gfx1250, Op::FenceSys) => {
            vec!["global_wb scope:SCOPE_SYS", "global_inv scope:SCOPE_SYS"]
        }
        other => unreachable!("{other:?} is not a fence on an AMD target"),
    };
    // A workgroup fence on gfx9 touches no cache.
    let not =
        if matches!((target, op), (Target::Gfx90a | Target::Gfx942 | Target::Gfx950 | Target::Gfx1250, Op::FenceCta)) {
            vec!["buffer_", "global_"]
        } else {
            vec![]
        };
    Expect { has, not }
}

/// What HIP's `__syncthreads()` is: workgroup release fence, the hardware barrier,
/// workgroup acquire fence; no LDS word and no polling.
fn syncthreads(target: Target) -> Expect {
    let mut not = vec!["ds_", "s_sleep"];
    let has = match target {
        // One CU per workgroup: the fences need no cache operation.
        Target::Gfx90a | Target::Gfx942 | Target::Gfx950 => {
            not.extend(["s_barrier_", "buffer_", "global_"]);
            vec!["s_barrier"]
        }
        Target::Gfx1100 => {
            not.push("s_barrier_");
            vec!["s_barrier", "buffer_gl0_inv"]
        }
        // gfx12 splits the barrier into signal and wait.
        Target::Gfx1200 => {
            vec!["global_wb scope:SCOPE_SE", "s_barrier_signal -1", "s_barrier_wait -1", "global_inv scope:SCOPE_SE"]
        }
        Target::Gfx1250 => {
            not.extend(["buffer_", "global_"]);
            vec!["s_barrier_signal -1", "s_barrier_wait -1"]
        }
        other => unreachable!("{other} is not an AMD target"),
    };
    Expect { has, not }
}

fn expect(target: Target, op: Op, checked: bool) -> Expect {
    let l = lds(target);
    let sleep = "s_sleep";
    match op {
        Op::Init => Expect { has: vec![l.store_b64], not: vec!["ds_add", sleep] },
        Op::Arrive => Expect { has: vec!["ds_add_rtn_u64"], not: vec![] },
        // Unchecked, a compare-and-swap, as a tx operation (protocol.hpp, the direct layouts,
        // 3.); checked, the claimed layout's fetch_add.
        Op::ArriveAndDrop if checked => Expect { has: vec!["ds_add_rtn_u64"], not: vec![] },
        Op::ArriveAndDrop => Expect { has: vec![l.cmpswap_b64], not: vec![] },
        Op::Wait => Expect { has: vec![l.load_b64, sleep], not: vec!["ds_add", "ds_cmp"] },
        Op::ArriveAndWait | Op::CompletionArriveAndWait => {
            Expect { has: vec!["ds_add_rtn_u64", l.load_b64, sleep], not: vec![] }
        }
        Op::ArriveTx | Op::ExpectTx => Expect { has: vec![l.cmpswap_b64], not: vec![] },
        // A wide copy by the calling thread, then complete_tx by compare-and-swap.
        Op::MemcpyAsyncTx => Expect { has: vec![l.store_b128, l.cmpswap_b64], not: vec![] },
        Op::Syncthreads => syncthreads(target),
        fence_op => fence(target, fence_op),
    }
}

/// Wave64 targets (CDNA); the others run wave32.
fn wave64(target: Target) -> bool {
    matches!(target, Target::Gfx90a | Target::Gfx942 | Target::Gfx950)
}

/// `arrive` is combined per wave by LLVM's atomic optimizer (the protocol relies on it): the
/// wave's first active lane (its `v_mbcnt` rank is 0) adds the wave's count (`s_bcnt1` of
/// exec) with the one `ds_add_rtn_u64` of the arrival, with exec masked to it, and every
/// lane rebuilds its own result from the broadcast (`v_readfirstlane`) and its rank.
fn aggregated(target: Target, code: &OpCode) -> Result<(), String> {
    let listing = || code.instructions.join("\n    ");
    let at = |prefix: &str| code.instructions.iter().position(|i| i.starts_with(prefix));
    let add = at("ds_add_rtn_u64").ok_or_else(|| format!("no ds_add_rtn_u64 in:\n    {}", listing()))?;
    let (before, after) = code.instructions.split_at(add);
    let rank: &[&str] =
        if wave64(target) { &["v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32"] } else { &["v_mbcnt_lo_u32_b32"] };
    let count = if wave64(target) { "s_bcnt1_i32_b64" } else { "s_bcnt1_i32_b32" };
    let has_before = |prefix: &str| before.iter().any(|i| i.starts_with(prefix));
    for want in rank.iter().chain([&count]) {
        if !has_before(want) {
            return Err(format!("no {want} before the arrival's ds_add_rtn_u64 in:\n    {}", listing()));
        }
    }
    if !wave64(target) && has_before("v_mbcnt_hi") {
        return Err(format!("a wave32 target ranks lanes over 64 bits:\n    {}", listing()));
    }
    // The election (rank == 0) sets exec to the elected lane: a `v_cmpx` writes exec itself,
    // a `v_cmp` is followed by `s_and_saveexec`. (An `s_cbranch_execz` may skip the add when
    // no lane is elected; clang 22 leaves it out where the block is short.)
    let election = before
        .iter()
        .rposition(|i| (i.starts_with("v_cmp_eq_u32") || i.starts_with("v_cmpx_eq_u32")) && i.contains(" 0, v"));
    let masked = election.is_some_and(|e| {
        before[e].starts_with("v_cmpx") || before[e..].iter().any(|i| i.starts_with("s_and_saveexec"))
    });
    if !masked {
        return Err(format!("the ds_add_rtn_u64 is not under a one-lane election:\n    {}", listing()));
    }
    if !after.iter().any(|i| i.starts_with("v_readfirstlane_b32")) {
        return Err(format!("the add's result is not broadcast (v_readfirstlane_b32):\n    {}", listing()));
    }
    Ok(())
}

/// protocol.hpp's "waits come last" (5.): a wave runs divergent branches one after the other,
/// so a lane that polled before its wave's completer published, or before the arrival that
/// arms the phase armed it, would spin forever. In the arrivals no walk a wave can take
/// leads from a wait loop's `s_sleep` to an LDS read-modify-write (after an arrival, the
/// only ones are the completion step's publish and the direct layout's arming). The walks
/// follow the structurizer's flags but not the data, and let a block the lane is masked off
/// from run for other lanes, so they include walks no wave takes: this is stricter than the
/// rule. In the tx operations the CAS loop's own back-off comes before the CAS (it waits for
/// no other lane), and the claim wait's sleeps follow the last publish in the listing. The
/// direct layout's tx operations make no RMW but their compare-and-swap, which may arm an
/// untouched phase; no call ever waits for such an arming (a phase a swap armed is never
/// reached and unarmed), so their sleeps precede nothing another lane waits for. The direct
/// layout's arrivals wait for a surplus arrival's token only after their own arming and
/// completion: the walks check that too.
fn waits_come_last(op: Op, code: &OpCode) -> Result<(), String> {
    let listing = || code.instructions.join("\n    ");
    let publish = code.instructions.iter().rposition(|i| i.starts_with("ds_add_rtn_u64"));
    let sleeps: Vec<usize> =
        code.instructions.iter().enumerate().filter(|(_, i)| i.starts_with("s_sleep")).map(|(n, _)| n).collect();
    // No wait loop: nothing to order.
    let Some(&last) = sleeps.last() else { return Ok(()) };
    let arrival = matches!(op, Op::Arrive | Op::ArriveAndWait | Op::CompletionArriveAndWait);
    let Some(publish) = publish else {
        // The direct layout's tx operations make their one RMW, a compare-and-swap that may
        // also arm the phase, and wait only for an arming another call makes before it waits.
        let cas = code.instructions.iter().any(|i| mnemonic(i).starts_with("ds_cmpst"));
        if !arrival && cas {
            return Ok(());
        }
        return Err(format!("a wait loop (s_sleep) but no publish or arming (ds_add_rtn_u64) in:\n    {}", listing()));
    };
    if arrival {
        let sleep = |i: &str| matches!(mnemonic(i), "s_sleep" | "s_sleep_var");
        let rmw = |i: &str| mnemonic(i).starts_with("ds_") && mnemonic(i).contains("_rtn_");
        if let Some((from, to)) = fast_path::amd_reaches(&code.intermediate, sleep, rmw) {
            return Err(format!("a wait loop (`{from}`) leads to `{to}` in:\n    {}", listing()));
        }
    } else if last < publish {
        return Err(format!("a wait loop (s_sleep) precedes the completion step's publish in:\n    {}", listing()));
    }
    Ok(())
}

/// The round trip's instruction bounds per target: the fast path, the completing wave, the
/// wave whose arrival arms its phase and one sleeping poll, each the count this code
/// reaches, so that they can only go down. The targets (docs/performance.md): the fast path
/// at most AMD's libhipcxx barrier (35, 35, 41, 44 on gfx90a, gfx942, gfx1100, gfx1200) and
/// the completing wave at most 1.5x libhipcxx's (59, 59, 66, 71), which every bound here
/// meets; a sleeping poll cheaper than the 21-instruction branch chain that chose among
/// s_sleep 1/2/4/8. gfx950 and gfx1250 have no peer count. The arming wave has no peer: a
/// libhipcxx barrier's completer resets the count itself, within its 39 / 39 / 44 / 47.
struct RoundTrip {
    fast: usize,
    completing: usize,
    arming: usize,
    sleeping_poll: usize,
}

fn round_trip_bounds(target: Target) -> RoundTrip {
    let (fast, completing, arming, sleeping_poll) = match target {
        Target::Gfx90a | Target::Gfx942 => (33, 41, 70, 17),
        Target::Gfx950 => (31, 39, 68, 17),
        Target::Gfx1100 => (38, 48, 81, 20),
        Target::Gfx1200 => (38, 45, 81, 19),
        _ => (35, 40, 71, 19),
    };
    RoundTrip { fast, completing, arming, sleeping_poll }
}

/// The trial on one poll of the round trip's wait loop at its longest sleep
/// (OpCode::sleeping_poll): one poll, one sleep.
fn sleeping_poll_trial(label: &str, lowering: &Lowering, target: Target, bound: usize) -> Trial {
    let walk = lowering.op(Op::ArriveAndWait).sleeping_poll.clone();
    let load = lds(target).load_b64;
    common::walk_trial(label, "sleeping poll", walk, bound, move |instructions| {
        let polls = instructions.iter().filter(|i| mnemonic(i) == load).count();
        let sleeps = instructions.iter().filter(|i| mnemonic(i).starts_with("s_sleep")).count();
        if polls != 1 || sleeps != 1 {
            return Err(format!("one {load} and one s_sleep*"));
        }
        Ok(())
    })
}

fn check(code: &OpCode, expect: &Expect) -> Result<(), String> {
    let listing = || code.instructions.join("\n    ");
    if code.scratch_bytes != Some(0) {
        return Err(format!("uses {:?} bytes of scratch:\n    {}", code.scratch_bytes, listing()));
    }
    if let Some(found) = code.instructions.iter().find(|i| i.starts_with("scratch_")) {
        return Err(format!("scratch access `{found}` in:\n    {}", listing()));
    }
    for want in &expect.has {
        if !code.has_instruction(want) {
            return Err(format!("no `{want}` in:\n    {}", listing()));
        }
    }
    for unwanted in &expect.not {
        if let Some(found) = code.instructions.iter().find(|i| i.starts_with(unwanted)) {
            return Err(format!("unexpected `{found}` (no {unwanted}* allowed) in:\n    {}", listing()));
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for target in Target::ALL.into_iter().filter(|t| t.is_amd()) {
        for checked in [false, true] {
            let label = format!("{target}{}", if checked { " checked" } else { "" });
            let compiled = Lowering::compile(target, Variant::Default, checked);
            if let (Ok(lowering), false) = (&compiled, checked) {
                let bounds = round_trip_bounds(target);
                trials.push(common::fast_path_trial(
                    &label,
                    lowering,
                    "ds_add_rtn_u64",
                    lds(target).load_b64,
                    "s_endpgm",
                    bounds.fast,
                ));
                trials.push(common::completer_trial(&label, lowering, bounds.completing));
                trials.push(common::arming_trial(&label, lowering, bounds.arming));
                trials.push(sleeping_poll_trial(&label, lowering, target, bounds.sleeping_poll));
            }
            trials.extend(common::trials(&label, compiled, &Op::ALL, move |op, code| {
                check(code, &expect(target, op, checked))?;
                if op == Op::Arrive {
                    aggregated(target, code)?;
                }
                if matches!(
                    op,
                    Op::Arrive | Op::ArriveAndWait | Op::CompletionArriveAndWait | Op::ArriveTx | Op::ExpectTx
                ) {
                    waits_come_last(op, code)?;
                }
                Ok(())
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
