//! Compiles the benchmark kernels (xb implementations and baselines) for every backend
//! xbarrier was built with.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-src/kernels/bench");
    xbarrier_build::Kernels::new("bench").dir(dir).build_or_exit();
}
