//! Compiles the conformance and misuse kernels for every backend xbarrier was built with.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-src/kernels/conformance");
    // Launched untyped (the suites pick kernels by name); the typed ones' signatures are still
    // checked by the compilers.
    xbarrier_build::Kernels::new("conformance").dir(dir).warn_untyped(false).build_or_exit();
}
