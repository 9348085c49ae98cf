//! Lowering tests for NVIDIA targets (no GPU needed): each operation, compiled as the build
//! helper compiles it, must produce the instructions listed here and must not touch local
//! memory. sm_90 native is the mbarrier lowering (with a completion function too); sm_90
//! emulated and sm_80 run the protocol.
//! `__syncthreads()` must be `BAR.SYNC`. Per configuration, the `arrive_and_wait` fast path
//! (fast_path.rs, one thread's walk) is measured and listed in the trial's name.
//!
//! Without nvcc/cuobjdump the trials are reported ignored with the reason, unless
//! XBAR_REQUIRE_TOOLCHAINS=1 (tools/test.sh sets it), which makes that a failure.

mod common;

use libtest_mimic::Arguments;
use xbarrier_lowering::{Lowering, Op, OpCode, Target, Variant};

/// What one operation must and must not contain, as SASS mnemonic prefixes and PTX text.
struct Expect {
    sass: &'static [&'static str],
    sass_not: &'static [&'static str],
    ptx: &'static [&'static str],
}

const NO_LOCAL: [&str; 2] = ["LDL", "STL"];

/// sm_90 native: the mbarrier object, no software protocol left behind (the `__isShared`
/// test folds away for a barrier in shared memory), no back-off sleep.
fn sm90_native(op: Op) -> Expect {
    const NOT_PROTOCOL: &[&str] = &["ATOM", "ATOMS", "RED", "NANOSLEEP", "LDL", "STL"];
    match op {
        Op::Init => {
            Expect { sass: &["SYNCS.EXCH.64"], sass_not: NOT_PROTOCOL, ptx: &["mbarrier.init.shared::cta.b64"] }
        }
        Op::Arrive => Expect {
            sass: &["SYNCS.ARRIVE.TRANS64"],
            sass_not: NOT_PROTOCOL,
            ptx: &["mbarrier.arrive.shared::cta.b64"],
        },
        Op::Wait => Expect {
            sass: &["SYNCS.PHASECHK.TRANS64.TRYWAIT"],
            sass_not: NOT_PROTOCOL,
            ptx: &["mbarrier.try_wait.shared::cta.b64"],
        },
        Op::ArriveAndWait => Expect {
            sass: &["SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64.TRYWAIT"],
            sass_not: NOT_PROTOCOL,
            ptx: &["mbarrier.arrive.shared::cta.b64", "mbarrier.try_wait.shared::cta.b64"],
        },
        Op::ArriveTx => Expect {
            sass: &["SYNCS.ARRIVE.TRANS64"],
            sass_not: NOT_PROTOCOL,
            ptx: &["mbarrier.arrive.expect_tx.shared::cta.b64"],
        },
        Op::ExpectTx => Expect {
            sass: &["SYNCS.ARRIVE.TRANS64.RED"],
            sass_not: NOT_PROTOCOL,
            ptx: &["mbarrier.expect_tx.relaxed.cta.shared::cta.b64"],
        },
        Op::MemcpyAsyncTx => Expect {
            sass: &["UBLKCP"],
            sass_not: &["ATOM", "ATOMS", "NANOSLEEP", "LDL", "STL", "STS", "LDG"],
            ptx: &["cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"],
        },
        Op::ArriveAndDrop => Expect {
            sass: &["SYNCS.ARRIVE.TRANS64.OPTOUT"],
            sass_not: NOT_PROTOCOL,
            ptx: &["mbarrier.arrive_drop.shared::cta.b64"],
        },
        // With a completion function (completion_engine.hpp): the same mbarrier arrival, a
        // test of its phase, the step's claim as a shared-memory CAS, and the wait on the
        // publishing mbarrier (its bounded suspend is NANOSLEEP.SYNCS); none of the
        // protocol's generic 64-bit add.
        Op::CompletionArriveAndWait => Expect {
            sass: &["SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64", "ATOMS.CAS.64"],
            sass_not: &["ATOM.E", "LDL", "STL"],
            ptx: &["mbarrier.arrive.shared::cta.b64", "mbarrier.test_wait.shared::cta.b64", "mbarrier.try_wait.parity"],
        },
        Op::Syncthreads => syncthreads(),
        fence => fences(fence),
    }
}

/// `__syncthreads()` is the hardware barrier on every NVIDIA path
/// (cuobjdump: `BAR.SYNC.DEFER_BLOCKING 0x0`).
fn syncthreads() -> Expect {
    Expect { sass: &["BAR.SYNC"], sass_not: &["ATOM", "SYNCS", "NANOSLEEP", "LDL", "STL"], ptx: &["bar.sync"] }
}

/// The protocol (sm_90 emulated, sm_80): shared-space loads, stores and CAS on the barrier
/// word (LDS/STS/ATOMS), arrivals as the generic 64-bit add (ATOM.E.ADD.64 at CTA scope: the
/// shared-space ATOMS has no 64-bit add, its CAS-spin loop stays only as nvcc's fallback), a
/// sleeping poll, and no mbarrier or bulk-copy instruction.
fn protocol(op: Op) -> Expect {
    const NOT_NATIVE: &[&str] = &["SYNCS", "UBLKCP", "LDL", "STL"];
    const NO_GENERIC: &[&str] = &["SYNCS", "UBLKCP", "LDL", "STL", "ATOM.E"];
    match op {
        Op::Init => Expect { sass: &["STS"], sass_not: NO_GENERIC, ptx: &["st.relaxed.cta.shared.u64"] },
        Op::Arrive | Op::ArriveAndDrop => {
            Expect { sass: &["ATOM.E.ADD.64.STRONG.SM"], sass_not: NOT_NATIVE, ptx: &["atom.add.acq_rel.cta.u64"] }
        }
        Op::Wait => Expect { sass: &["LDS", "NANOSLEEP"], sass_not: NO_GENERIC, ptx: &["nanosleep"] },
        // One fetch_add per lane, which nvcc combines per warp into one generic 64-bit add.
        Op::ArriveAndWait | Op::CompletionArriveAndWait => Expect {
            sass: &["ATOM.E.ADD.64.STRONG.SM", "NANOSLEEP"],
            sass_not: NOT_NATIVE,
            ptx: &["atom.add.acq_rel.cta.u64", "nanosleep"],
        },
        Op::ArriveTx | Op::ExpectTx => {
            Expect { sass: &["ATOMS.CAS.64"], sass_not: NOT_NATIVE, ptx: &["atom.acq_rel.cta.shared.cas.b64"] }
        }
        // The calling thread copies (16-byte stores to shared memory), then completes the bytes.
        Op::MemcpyAsyncTx => Expect { sass: &["STS.128", "ATOMS.CAS.64"], sass_not: NOT_NATIVE, ptx: &["atom."] },
        Op::Syncthreads => syncthreads(),
        fence => fences(fence),
    }
}

/// membar.{cta,gl,sys} (PTX: fence.sc at that scope) on every NVIDIA path.
fn fences(op: Op) -> Expect {
    match op {
        Op::FenceCta => Expect { sass: &["MEMBAR.SC.CTA"], sass_not: &NO_LOCAL, ptx: &["fence.sc.cta"] },
        Op::FenceGl => Expect { sass: &["MEMBAR.SC.GPU"], sass_not: &NO_LOCAL, ptx: &["fence.sc.gpu"] },
        Op::FenceSys => Expect { sass: &["MEMBAR.SC.SYS"], sass_not: &NO_LOCAL, ptx: &["fence.sc.sys"] },
        other => unreachable!("{other} is not a fence"),
    }
}

fn check(code: &OpCode, expect: &Expect) -> Result<(), String> {
    let listing = || code.instructions.join("\n    ");
    for want in expect.sass {
        if !code.has(want) {
            return Err(format!("no {want}* instruction in:\n    {}", listing()));
        }
    }
    for unwanted in expect.sass_not {
        if let Some(found) = code.matching(unwanted).next() {
            return Err(format!("unexpected `{found}` (no {unwanted}* allowed) in:\n    {}", listing()));
        }
    }
    for want in expect.ptx {
        if !code.intermediate.contains(want) {
            return Err(format!("the PTX lacks `{want}`:\n{}", code.intermediate));
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    // Each with the arrival and the poll its fast path must take: the mbarrier's own, or
    // the protocol's shared-memory atomic and load.
    let configs = [
        (Target::Sm90, Variant::Native, sm90_native as fn(Op) -> Expect, "SYNCS.ARRIVE", "SYNCS.PHASECHK"),
        (Target::Sm90, Variant::Emulated, protocol, "ATOM.E.ADD.64", "LDS"),
        (Target::Sm80, Variant::Native, protocol, "ATOM.E.ADD.64", "LDS"),
    ];
    let mut trials = Vec::new();
    for (target, variant, expect, atomic, poll) in configs {
        let compiled = Lowering::compile(target, variant, false);
        if let Ok(lowering) = &compiled {
            trials.push(common::fast_path_trial(&format!("{target} {variant}"), lowering, atomic, poll, "EXIT"));
        }
        trials.extend(common::trials(&format!("{target} {variant}"), compiled, &Op::ALL, move |op, code| {
            check(code, &expect(op))
        }));
    }
    // Checked builds run the protocol on sm_90 too (the hardware traps where they report).
    let compiled = Lowering::compile(Target::Sm90, Variant::Native, true);
    trials.extend(common::trials("sm_90 native checked", compiled, &[Op::ArriveAndWait], |op, code| {
        check(code, &protocol(op))
    }));
    libtest_mimic::run(&args, trials).exit();
}
