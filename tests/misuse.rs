//! Barrier misuse is reported as a typed fault, not a hang (checked builds).
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, xbarrier_conformance::trials(xbarrier_conformance::Suite::Misuse)).exit();
}
