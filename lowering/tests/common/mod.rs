//! What the lowering test binaries share: turning one compile into trials.

use libtest_mimic::{Failed, Trial};
use xbarrier_lowering::{LowerError, Lowering, Op, OpCode};

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
        Err(error) if !toolchains_required() => {
            let reason = error.to_string().lines().next().unwrap_or("").to_owned();
            vec![Trial::test(format!("[{label}] lowering (ignored: no toolchain: {reason})"), || Ok(()))
                .with_ignored_flag(true)]
        }
        Err(error) => {
            let message = format!("XBAR_REQUIRE_TOOLCHAINS=1 but {label} could not be compiled: {error}");
            vec![Trial::test(format!("[{label}] lowering"), move || Err(message.into()))]
        }
    }
}
