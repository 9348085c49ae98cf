//! What the CLI test binaries share: running the built `xbar` and reading its output.

use std::process::{Command, Output};

/// Runs the built `xbar` with `args`.
pub fn xbar(args: &[&str]) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_xbar")).args(args).output() {
        Ok(output) => output,
        Err(e) => panic!("could not run xbar {args:?}: {e}"),
    }
}

/// stdout and stderr as text.
pub fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}
