//! Compiles the benchmark kernels (xb implementations and baselines) for every backend
//! xbarrier was built with.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-src/kernels/bench");
    let mut kernels = xbarrier_build::Kernels::new("bench");
    let mut sources: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cpp"))
        .collect();
    sources.sort();
    for source in sources {
        kernels = kernels.file(source);
    }
    println!("cargo:rerun-if-changed={}", dir.display());
    kernels.build_or_exit();
}
