//! Lowering tests for NVIDIA targets (no GPU needed): each operation, compiled as the build
//! helper compiles it, must produce the instructions listed here and must not touch local
//! memory. sm_90 native is the mbarrier lowering (with a completion function too); sm_90
//! emulated and sm_80 run the protocol.
//! `__syncthreads()` must be `BAR.SYNC`. Per configuration, the `arrive_and_wait` fast path
//! (fast_path.rs, one thread's walk) is measured and listed in the trial's name. One more
//! trial compiles a conformance kernel with nine `__shared__` barriers and checks that the
//! native lowering left none of its operations to the protocol.
//!
//! Without nvcc/cuobjdump the trials are reported ignored with the reason, unless
//! XBAR_REQUIRE_TOOLCHAINS=1 (tools/test.sh sets it), which makes that a failure.

mod common;

use std::path::Path;
use std::process::Command;

use libtest_mimic::{Arguments, Trial};
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
        // With a completion function (engine_sm90_completion.hpp): the same mbarrier arrival, a
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
        // Release only: arrive()'s arming (a phase's first arrival) is release too.
        Op::Arrive => {
            Expect { sass: &["ATOM.E.ADD.64.STRONG.SM"], sass_not: NOT_NATIVE, ptx: &["atom.add.release.cta.u64"] }
        }
        // A compare-and-swap, as a tx operation: a drop must not lower E in a phase that its
        // first arrival has not armed yet (protocol.hpp, the direct layouts, 3.).
        Op::ArriveAndDrop => {
            Expect { sass: &["ATOMS.CAS.64"], sass_not: NOT_NATIVE, ptx: &["atom.acq_rel.cta.shared.cas.b64"] }
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

/// sm_90 checked builds: the checked protocol alone, the code of sm_80 and of the emulated
/// variant (no mbarrier instruction).
fn sm90_checked(op: Op) -> Expect {
    protocol(op)
}

/// sm_90 sanitizer builds: the protocol's compare-and-swap on its word (the checks), with a
/// shadow mbarrier arrived on and waited for after them (engine_sm90_checked.hpp), so that
/// compute-sanitizer sees the synchronization; the tx-copy is a bulk copy.
fn sm90_sanitizer(op: Op) -> Expect {
    const NO_LOCAL_OR_GENERIC_TX: &[&str] = &["LDL", "STL"];
    match op {
        Op::ArriveAndWait | Op::CompletionArriveAndWait => Expect {
            sass: &["ATOMS.CAS.64", "SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64"],
            sass_not: NO_LOCAL_OR_GENERIC_TX,
            ptx: &["atom.acq_rel.cta.shared.cas.b64", "mbarrier.arrive.shared::cta.b64", "mbarrier.try_wait.parity"],
        },
        Op::ArriveTx => Expect {
            sass: &["ATOMS.CAS.64", "SYNCS.ARRIVE.TRANS64"],
            sass_not: NO_LOCAL_OR_GENERIC_TX,
            ptx: &["atom.acq_rel.cta.shared.cas.b64", "mbarrier.expect_tx", "mbarrier.arrive.shared::cta.b64"],
        },
        Op::MemcpyAsyncTx => Expect {
            sass: &["ATOMS.CAS.64", "UBLKCP"],
            sass_not: NO_LOCAL_OR_GENERIC_TX,
            ptx: &["cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"],
        },
        other => unreachable!("{other} has no checked expectation"),
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

/// Lane groups (config.hpp's XB_GROUP_LANES): a grouped arrival tests that its warp agrees
/// (`match.all.sync`) and hands the leader's result around (`shfl.sync`); one lane by lane
/// has neither in its PTX (ptxas combines the warp's atomics below PTX).
fn check_lane_groups(op: Op, code: &OpCode, grouped: bool) -> Result<(), String> {
    if !matches!(op, Op::Arrive | Op::ArriveAndWait | Op::ArriveAndDrop | Op::CompletionArriveAndWait) {
        return Ok(());
    }
    for marker in ["match.all.sync", "shfl.sync"] {
        if code.intermediate.contains(marker) != grouped {
            let how = if grouped { "lacks" } else { "has" };
            return Err(format!("grouped = {grouped}, but the PTX {how} `{marker}`:\n{}", code.intermediate));
        }
    }
    Ok(())
}

/// The native lowering leaves no operation on a `__shared__` barrier to the protocol. In a
/// kernel with nine such barriers and every tx operation (conformance `xbc_tx_sequences`),
/// sm_90's PTX must hold no atomic at all and one `mbarrier.complete_tx` per `complete_tx`
/// the kernel makes. nvcc has folded an engine's `__isShared` test to false at one call site
/// of this kernel (in the checked engine, which now tests at run time), which would send that
/// operation to the protocol.
fn shared_barriers_stay_native() -> Trial {
    const NAME: &str = "[sm_90 native] xbc_tx_sequences: every tx operation on an mbarrier";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let conformance = root.join("hip-src/kernels/conformance");
    let nvcc = match xbarrier_build::find_nvcc() {
        Ok(nvcc) => nvcc,
        Err(e) => return common::no_toolchain(NAME, &e),
    };
    Trial::test(NAME, move || {
        let source = std::fs::read_to_string(conformance.join("tx.cpp")).map_err(|e| format!("reading tx.cpp: {e}"))?;
        let start = source.find("XB_KERNEL void xbc_tx_sequences").ok_or("tx.cpp has no xbc_tx_sequences")?;
        let body = &source[start..start + source[start..].find("\n}\n").ok_or("xbc_tx_sequences has no end")?];
        // Each copy16() call completes bytes (the lambda holds one complete_tx, counted once
        // per call), and the kernel spells out the others.
        let spelled_out =
            body.matches("xb::detail::complete_tx(*bar,").count() - usize::from(body.contains("auto copy16"));
        let completions = body.matches("copy16();").count() + spelled_out;
        let ptx = std::env::temp_dir().join(format!("xbarrier-lower-tx-{}.ptx", std::process::id()));
        let output = Command::new(&nvcc)
            .args(["-x", "cu", "-std=c++17", "-O3", "-arch=sm_90", "-DXB_CHECKED=0", "-DXB_EMULATED=0", "-ptx", "-I"])
            .arg(env!("XBARRIER_INCLUDE"))
            .arg("-I")
            .arg(&conformance)
            .arg(conformance.join("tx.cpp"))
            .arg("-o")
            .arg(&ptx)
            .output()
            .map_err(|e| format!("running {}: {e}", nvcc.display()))?;
        if !output.status.success() {
            return Err(format!("nvcc failed on tx.cpp:\n{}", String::from_utf8_lossy(&output.stderr)).into());
        }
        let text = std::fs::read_to_string(&ptx).map_err(|e| format!("reading {}: {e}", ptx.display()));
        let _ = std::fs::remove_file(&ptx);
        let entry =
            xbarrier_lowering::ptx_entry(&text?, "xbc_tx_sequences").ok_or("the PTX has no xbc_tx_sequences")?;
        let atomics: Vec<&str> =
            entry.lines().map(str::trim).filter(|l| l.starts_with("atom.") || l.starts_with("red.")).collect();
        let completed = entry.matches("mbarrier.complete_tx").count();
        if !atomics.is_empty() || completed != completions {
            return Err(format!(
                "want no atomics and {completions} mbarrier.complete_tx; found {completed} and these atomics: {atomics:?}"
            )
            .into());
        }
        Ok(())
    })
}

fn main() {
    let args = Arguments::from_args();
    // Each with the arrival and the poll its fast path must take (the mbarrier's own, or
    // the protocol's shared-memory atomic and load) and the most instructions the fast
    // path may issue: the counts this code reaches, so that they can only go down. Lane by
    // lane (emulated, sm_80) ptxas combines the warp's atomics with an election and shuffles
    // of its own; the grouped bound also fails where ptxas combines the lane group leader's
    // atomic with the warp's again. The protocol's counts include one test of the word its
    // arrival made (armed: counted in an armed phase, not its last); everything else, the
    // arming by a phase's first arrival, the completion and a surplus arrival's token, lies
    // off the fast path (protocol.hpp 3.).
    // The last field: whether the protocol groups lanes (the grouped variant, checked builds).
    let configs = [
        (Target::Sm90, Variant::Default, sm90_native as fn(Op) -> Expect, "SYNCS.ARRIVE", "SYNCS.PHASECHK", 8, None),
        (Target::Sm90, Variant::Emulated, protocol, "ATOM.E.ADD.64", "LDS", 37, Some(false)),
        (Target::Sm90, Variant::Grouped, protocol, "ATOM.E.ADD.64", "LDS", 40, Some(true)),
        (Target::Sm80, Variant::Default, protocol, "ATOM.E.ADD.64", "LDS", 33, Some(false)),
    ];
    let mut trials = Vec::new();
    for (target, variant, expect, atomic, poll, bound, grouped) in configs {
        let compiled = Lowering::compile(target, variant, false);
        if let Ok(lowering) = &compiled {
            trials.push(common::fast_path_trial(&format!("{target} {variant}"), lowering, atomic, poll, "EXIT", bound));
        }
        trials.extend(common::trials(&format!("{target} {variant}"), compiled, &Op::ALL, move |op, code| {
            check(code, &expect(op))?;
            // Unchecked drops are compare-and-swaps lane by lane, grouped or not.
            let grouped = if op == Op::ArriveAndDrop { grouped.map(|_| false) } else { grouped };
            grouped.map_or(Ok(()), |grouped| check_lane_groups(op, code, grouped))
        }));
    }
    // Checked builds run the protocol on sm_90 too (the hardware traps where they report):
    // the grouped variant's code, and no mbarrier instruction.
    let compiled = Lowering::compile(Target::Sm90, Variant::Default, true);
    let checked_ops = [Op::ArriveAndWait, Op::CompletionArriveAndWait, Op::ArriveTx, Op::MemcpyAsyncTx];
    trials.extend(common::trials("sm_90 native checked", compiled, &checked_ops, |op, code| {
        check(code, &sm90_checked(op))?;
        check_lane_groups(op, code, true)
    }));
    // Sanitizer builds add shadow mbarriers for compute-sanitizer.
    let compiled = Lowering::compile_sanitizer(Target::Sm90);
    trials.extend(common::trials("sm_90 native sanitizer", compiled, &checked_ops, |op, code| {
        check(code, &sm90_sanitizer(op))
    }));
    trials.push(shared_barriers_stay_native());
    libtest_mimic::run(&args, trials).exit();
}
