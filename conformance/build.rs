//! Compiles the conformance and misuse kernels for every backend xbarrier was built with.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-src/kernels/conformance");
    xbarrier_build::Kernels::new("conformance").dir(dir).build_or_exit();
}
