//! What the lowering test binaries share: turning one compile into trials.
// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use libtest_mimic::{Failed, Trial};
use xbarrier_lowering::{mnemonic, LowerError, Lowering, Op, OpCode};

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

/// A trial on `arrive_and_wait`'s fast path, named with its length so that the run lists it:
/// the path must exist, perform the arrival (`atomic`) and the poll (`poll`) once each, in
/// that order (a non-last arrival whose first poll succeeds), end the kernel (`end`), and
/// issue at most `bound` instructions.
pub fn fast_path_trial(
    label: &str,
    lowering: &Lowering,
    atomic: &'static str,
    poll: &'static str,
    end: &'static str,
    bound: usize,
) -> Trial {
    let op = Op::ArriveAndWait;
    let path = lowering.op(op).fast_path.clone();
    let name = match &path {
        Some(path) => format!("[{label}] {op} fast path: {} instructions (at most {bound})", path.count()),
        None => format!("[{label}] {op} fast path"),
    };
    Trial::test(name, move || {
        let path = path.ok_or_else(|| format!("no fast path found in the listing of {op}"))?;
        let listing = || path.instructions.join("\n    ");
        if !(1..=bound).contains(&path.count()) {
            return Err(format!("{} instructions (at most {bound}):\n    {}", path.count(), listing()).into());
        }
        let is = |i: &String, prefix: &str| mnemonic(i).starts_with(prefix);
        let atomics = path.instructions.iter().filter(|i| is(i, atomic)).count();
        // A compare-and-swap arrival may load the word first: count the polls after the atomic.
        let after = path.instructions.iter().skip_while(|i| !is(i, atomic)).skip(1);
        let polls = after.filter(|i| is(i, poll)).count();
        let ends = path.instructions.last().is_some_and(|i| mnemonic(i) == end);
        if atomics != 1 || polls != 1 || !ends {
            return Err(format!("want one {atomic}*, then one {poll}*, then {end}:\n    {}", listing()).into());
        }
        Ok(())
    })
}

/// A trial on the AMD round trip of the lane that completes the phase (OpCode::completer),
/// named with its length: the walk must exist, make two `ds_add_rtn_u64` (the arrival and
/// the publish), end with `s_endpgm`, and issue at most `bound` instructions.
pub fn completer_trial(label: &str, lowering: &Lowering, bound: usize) -> Trial {
    let op = Op::ArriveAndWait;
    let path = lowering.op(op).completer.clone();
    let name = match &path {
        Some(path) => format!("[{label}] {op} completing wave: {} instructions (at most {bound})", path.count()),
        None => format!("[{label}] {op} completing wave"),
    };
    Trial::test(name, move || {
        let path = path.ok_or_else(|| format!("no completing walk found in the listing of {op}"))?;
        let listing = || path.instructions.join("\n    ");
        let adds = path.instructions.iter().filter(|i| mnemonic(i).starts_with("ds_add_rtn_u64")).count();
        let ends = path.instructions.last().is_some_and(|i| mnemonic(i) == "s_endpgm");
        if adds != 2 || !ends {
            return Err(format!("want two ds_add_rtn_u64 (arrival, publish), then s_endpgm:\n    {}", listing()).into());
        }
        if path.count() > bound {
            return Err(format!("{} instructions (at most {bound}):\n    {}", path.count(), listing()).into());
        }
        Ok(())
    })
}
