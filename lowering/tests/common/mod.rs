//! What the lowering test binaries share: turning one compile into trials.
// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use libtest_mimic::{Failed, Trial};
use xbarrier_lowering::{mnemonic, FastPath, LowerError, Lowering, Op, OpCode};

/// XBAR_REQUIRE_TOOLCHAINS=1 (tools/test.sh) turns a missing compiler into a failure.
fn toolchains_required() -> bool {
    std::env::var("XBAR_REQUIRE_TOOLCHAINS").is_ok_and(|v| v == "1")
}

/// One trial per op in `ops`, named `[label] op`, each running `check` on that op's code. If
/// the compile failed: one trial reported ignored with the reason, or a failing one when
/// toolchains are required.
pub fn trials<C>(label: &str, compiled: Result<Lowering, LowerError>, ops: &[Op], check: C) -> Vec<Trial>
where
    C: Fn(Op, &OpCode) -> Result<(), String> + Clone + Send + 'static,
{
    match compiled {
        Ok(lowering) => ops
            .iter()
            .map(|&op| {
                let code = lowering.op(op).clone();
                let check = check.clone();
                Trial::test(format!("[{label}] {op}"), move || check(op, &code).map_err(Failed::from))
            })
            .collect(),
        Err(error) => vec![no_toolchain(&format!("[{label}] lowering"), &error)],
    }
}

/// The trial `name` when its toolchain is missing (`error`): ignored with the reason, or
/// failing when toolchains are required.
pub fn no_toolchain(name: &str, error: &dyn std::fmt::Display) -> Trial {
    if toolchains_required() {
        let message = format!("XBAR_REQUIRE_TOOLCHAINS=1 but {name} could not be compiled: {error}");
        return Trial::test(name, move || Err(message.into()));
    }
    let reason = error.to_string().lines().next().unwrap_or("").to_owned();
    Trial::test(format!("{name} (ignored: no toolchain: {reason})"), || Ok(())).with_ignored_flag(true)
}

/// A trial on one walk through `arrive_and_wait` (`what`: "fast path", "completing wave",
/// ...), named with its length so that the run lists it: the walk must exist, issue at most
/// `bound` instructions, and pass `shape` (an error says what it wants).
pub fn walk_trial(
    label: &str,
    what: &'static str,
    walk: Option<FastPath>,
    bound: usize,
    shape: impl Fn(&[String]) -> Result<(), String> + Send + 'static,
) -> Trial {
    let op = Op::ArriveAndWait;
    let name = match &walk {
        Some(walk) => format!("[{label}] {op} {what}: {} instructions (at most {bound})", walk.count()),
        None => format!("[{label}] {op} {what}"),
    };
    Trial::test(name, move || {
        let walk = walk.ok_or_else(|| format!("no {what} found in the listing of {op}"))?;
        let listing = || walk.instructions.join("\n    ");
        if !(1..=bound).contains(&walk.count()) {
            return Err(format!("{} instructions (at most {bound}):\n    {}", walk.count(), listing()).into());
        }
        shape(&walk.instructions).map_err(|want| format!("want {want}:\n    {}", listing()).into())
    })
}

/// The fast-path trial: one arrival (`atomic`), then one poll (`poll`), then `end` (a
/// non-last arrival whose first poll succeeds).
pub fn fast_path_trial(
    label: &str,
    lowering: &Lowering,
    atomic: &'static str,
    poll: &'static str,
    end: &'static str,
    bound: usize,
) -> Trial {
    let walk = lowering.op(Op::ArriveAndWait).fast_path.clone();
    walk_trial(label, "fast path", walk, bound, move |instructions| {
        let is = |i: &String, prefix: &str| mnemonic(i).starts_with(prefix);
        let atomics = instructions.iter().filter(|i| is(i, atomic)).count();
        // A compare-and-swap arrival may load the word first: count the polls after the atomic.
        let after = instructions.iter().skip_while(|i| !is(i, atomic)).skip(1);
        let polls = after.filter(|i| is(i, poll)).count();
        let ends = instructions.last().is_some_and(|i| mnemonic(i) == end);
        if atomics != 1 || polls != 1 || !ends {
            return Err(format!("one {atomic}*, then one {poll}*, then {end}"));
        }
        Ok(())
    })
}

/// The AMD completing wave's trial (OpCode::completer): two `ds_add_rtn_u64` (the arrival
/// and the publish), then `s_endpgm`.
pub fn completer_trial(label: &str, lowering: &Lowering, bound: usize) -> Trial {
    let walk = lowering.op(Op::ArriveAndWait).completer.clone();
    walk_trial(label, "completing wave", walk, bound, |instructions| {
        let (adds, polls) = lds_atomics_and_loads(instructions);
        let ends = instructions.last().is_some_and(|i| mnemonic(i) == "s_endpgm");
        if adds != 1 || polls != 0 || !ends {
            return Err("one ds_add_rtn_u64 (the arrival that completes the phase), no poll, then s_endpgm".into());
        }
        Ok(())
    })
}

/// The barrier-word atomics (`ds_add_rtn_u64`) and LDS loads (polls: `ds_read*`, `ds_load*`)
/// on an AMD walk.
fn lds_atomics_and_loads(instructions: &[String]) -> (usize, usize) {
    let count =
        |prefix: &[&str]| instructions.iter().filter(|i| prefix.iter().any(|p| mnemonic(i).starts_with(p))).count();
    (count(&["ds_add_rtn_u64"]), count(&["ds_read", "ds_load"]))
}

/// The walk of the wave whose arrival is its phase's first, which arms it (AMD targets;
/// see [`xbarrier_lowering::fast_path::amd_arming`]), within `bound` instructions.
pub fn arming_trial(label: &str, lowering: &Lowering, bound: usize) -> Trial {
    let walk = lowering.op(Op::ArriveAndWait).arming.clone();
    walk_trial(label, "arming wave", walk, bound, |instructions| {
        let (adds, polls) = lds_atomics_and_loads(instructions);
        let ends = instructions.last().is_some_and(|i| mnemonic(i) == "s_endpgm");
        if adds != 2 || polls == 0 || !ends {
            return Err("two ds_add_rtn_u64 (the arrival, the arming), a poll, then s_endpgm".into());
        }
        Ok(())
    })
}
