//! Memory-model ISA tests for every AMDGPU target and compiler (no GPU needed): the
//! message-passing kernels (hip-src/kernels/lowering/memory_model.cpp: data store ->
//! synchronizing operation -> data load) are compiled, release and checked, for each target
//! with each compiler that knows it, and every path of each kernel must carry the release and acquire
//! sequence that AMDGPU's memory model prescribes at the barrier's scope
//! (lowering/src/memory_model.rs has the analysis; docs/amd-memory-model.md the table).
//!
//! Compilers: clang-19 (`$HIP_CLANG`, else clang-19: the build helper's default) and clang 22
//! (`$HIP_CLANG22`, else clang-22). Without one, its trials are reported ignored with the
//! reason, unless XBAR_REQUIRE_TOOLCHAINS=1 (tools/test.sh sets it), which makes that a failure.

mod common;

use std::path::PathBuf;

use libtest_mimic::{Arguments, Failed, Trial};
use xbarrier_lowering::memory_model::{self, Case, Rules, Scope};

/// The targets of each compiler: every CDNA2/CDNA3/CDNA4 and RDNA2/RDNA3/RDNA4 target the
/// project builds or documents, and the generic targets.
const CLANG_19_TARGETS: [&str; 12] = [
    "gfx90a",
    "gfx942",
    "gfx1030",
    "gfx1100",
    "gfx1101",
    "gfx1151",
    "gfx1200",
    "gfx1201",
    "gfx9-generic",
    "gfx10-3-generic",
    "gfx11-generic",
    "gfx12-generic",
];
const CLANG_22_ONLY: [&str; 2] = ["gfx950", "gfx1250"];

/// The memory-model family of a target: which code-sequence table applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// gfx900-gfx90c (gfx9-generic): one CU per workgroup, a write-through L1 per CU.
    Gfx9,
    /// gfx90a: as gfx9, with an L2 that is not coherent with the system.
    Gfx90a,
    /// gfx942, gfx950: L2 writeback and invalidate with sc0/sc1 scope bits.
    Gfx94,
    /// gfx10.3 and gfx11 in WGP mode: a workgroup's waves may use the L0s of two CUs.
    Gfx10,
    /// gfx12: scoped writeback and invalidate (`global_wb` / `global_inv scope:`).
    Gfx12,
    /// gfx1250.
    Gfx1250,
}

fn family(target: &str) -> Family {
    match target {
        "gfx90a" => Family::Gfx90a,
        "gfx942" | "gfx950" => Family::Gfx94,
        "gfx9-generic" => Family::Gfx9,
        "gfx1250" => Family::Gfx1250,
        t if t.starts_with("gfx10") || t.starts_with("gfx11") => Family::Gfx10,
        t if t.starts_with("gfx12") => Family::Gfx12,
        other => unreachable!("no memory-model family for {other}"),
    }
}

/// What a release (before the synchronizing write) and an acquire (after the synchronizing
/// read) must contain, for global data, per family and barrier scope: AMDGPU's code
/// sequences for a release and an acquire at workgroup, agent and system scope (kernels
/// built as HIP builds them: not threadgroup-split on gfx90a/gfx94x, WGP mode on gfx10+).
/// LDS data needs none: a wave's LDS accesses complete in order.
fn rules(target: &str, case: &Case) -> Rules {
    use Family::*;
    let (release, acquire): (Vec<&'static str>, Vec<&'static str>) = match (family(target), case.scope) {
        (_, Scope::BlockLds) => (vec![], vec![]),
        // One CU runs the whole workgroup and its L1 is write-through: nothing to do.
        (Gfx9 | Gfx90a | Gfx94, Scope::Block) => (vec![], vec![]),
        // The other CU of the WGP has its own L0: stores must have completed, and the L0
        // must be invalidated.
        (Gfx10, Scope::Block) => (vec!["s_waitcnt_vscnt null, 0x0"], vec!["buffer_gl0_inv"]),
        (Gfx12, Scope::Block) => (vec!["s_wait_storecnt 0x0"], vec!["global_inv scope:SCOPE_SE"]),
        (Gfx1250, Scope::Block) => (vec!["s_wait_storecnt 0x0"], vec![]),
        // gfx9 counts stores in vmcnt; its L2 is coherent for the device (and, before gfx90a,
        // for the system), so only the L1 is invalidated.
        (Gfx9 | Gfx90a, Scope::Device) => (vec!["s_waitcnt vmcnt(0)"], vec!["buffer_wbinvl1_vol"]),
        (Gfx94, Scope::Device) => (vec!["buffer_wbl2 sc1", "s_waitcnt vmcnt(0)"], vec!["buffer_inv sc1"]),
        (Gfx10, Scope::Device | Scope::System) => {
            (vec!["s_waitcnt_vscnt null, 0x0"], vec!["buffer_gl1_inv", "buffer_gl0_inv"])
        }
        // gfx12 writes back only for the system (gfx1250 also for the device).
        (Gfx12, Scope::Device) => (vec!["s_wait_storecnt 0x0"], vec!["global_inv scope:SCOPE_DEV"]),
        (Gfx1250, Scope::Device) => {
            (vec!["global_wb scope:SCOPE_DEV", "s_wait_storecnt 0x0"], vec!["global_inv scope:SCOPE_DEV"])
        }
        (Gfx9, Scope::System) => (vec!["s_waitcnt vmcnt(0)"], vec!["buffer_wbinvl1_vol"]),
        (Gfx90a, Scope::System) => {
            (vec!["buffer_wbl2", "s_waitcnt vmcnt(0)"], vec!["buffer_invl2", "buffer_wbinvl1_vol"])
        }
        (Gfx94, Scope::System) => (vec!["buffer_wbl2 sc0 sc1", "s_waitcnt vmcnt(0)"], vec!["buffer_inv sc0 sc1"]),
        (Gfx12 | Gfx1250, Scope::System) => {
            (vec!["global_wb scope:SCOPE_SYS", "s_wait_storecnt 0x0"], vec!["global_inv scope:SCOPE_SYS"])
        }
    };
    Rules { release, acquire, one_sided: case.one_sided }
}

fn trials_for(compiler: &str, clang: Result<PathBuf, String>, targets: &[&'static str]) -> Vec<Trial> {
    let clang = match clang {
        Ok(clang) => clang,
        Err(error) => return vec![common::no_toolchain(&format!("[{compiler}] memory model"), &error)],
    };
    let mut trials = Vec::new();
    for &target in targets {
        for checked in [false, true] {
            let label = format!("{target} {compiler}{}", if checked { " checked" } else { "" });
            match memory_model::compile(&clang, target, checked) {
                Ok(cases) => {
                    for (case, listing) in cases {
                        let rules = rules(target, &case);
                        trials.push(Trial::test(format!("[{label}] {}", case.name), move || {
                            let gaps = memory_model::check(&listing, &rules).map_err(Failed::from)?;
                            if gaps.is_empty() {
                                return Ok(());
                            }
                            let found: Vec<String> = gaps.iter().map(ToString::to_string).collect();
                            Err(format!("{}\n  rules: {rules:?}", found.join("\n  ")).into())
                        }));
                    }
                }
                Err(error) => trials.push(common::no_toolchain(&format!("[{label}] memory model"), &error)),
            }
        }
    }
    trials
}

fn main() {
    let args = Arguments::from_args();
    let clang_19 = xbarrier_build::find_hip_clang().map_err(|e| e.to_string());
    let clang_22 = xbarrier_build::find_hip_clang_22().map_err(|e| e.to_string());
    let mut trials = trials_for("clang-19", clang_19, &CLANG_19_TARGETS);
    let every: Vec<&'static str> = CLANG_19_TARGETS.iter().chain(&CLANG_22_ONLY).copied().collect();
    trials.extend(trials_for("clang-22", clang_22, &every));
    libtest_mimic::run(&args, trials).exit();
}
