//! The conformance suite on every enabled backend (see xbarrier-conformance).
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, xbarrier_conformance::trials(xbarrier_conformance::Suite::Conformance)).exit();
}
