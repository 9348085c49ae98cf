//! Writing to stdout without panicking on a closed pipe (`xbar check | head`).

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// Writes `text` to stdout. A reader that went away is not an error; anything else is
/// reported on stderr and turns `code` into a failure.
pub fn emit(text: &str, code: ExitCode) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => code,
        Err(e) if e.kind() == ErrorKind::BrokenPipe => code,
        Err(e) => {
            eprintln!("xbar: error: writing to stdout failed: {e}");
            ExitCode::from(2)
        }
    }
}
