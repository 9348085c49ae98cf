//! Compiles the benchmark kernels (xb implementations and baselines) for every backend
//! xbarrier was built with, xb's round trips once more as checked code, and the host backend's C++20 `std::barrier` baseline
//! (bench/cpp/std_barrier.cpp) into this crate.
fn main() {
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-src/kernels");
    // Launched untyped (the benchmarks pick kernels by name); the typed ones' signatures are
    // still checked by the compilers.
    xbarrier_build::Kernels::new("bench").dir(kernels.join("bench")).warn_untyped(false).build_or_exit();
    // xb's round trips as checked device code, whatever this build is, to time them against
    // the release code of the bench bundle (a checked build's own rows are checked already).
    xbarrier_build::Kernels::new("bench_checked")
        .dir(kernels.join("bench_checked"))
        .checked(true)
        .warn_untyped(false)
        .build_or_exit();
    std_barrier();
}

/// Builds the C++ baseline with `g++ -std=c++20 -O2` (the level of the host kernels, in every
/// profile) and sets `cfg(xbb_std_barrier)`. A compiler without C++20's `<barrier>` leaves the
/// cfg unset: the row then says it was skipped, and the rest of the benchmarks still build.
fn std_barrier() {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cpp/std_barrier.cpp");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rustc-check-cfg=cfg(xbb_std_barrier)");
    let built = cc::Build::new()
        .cpp(true)
        .std("c++20")
        .opt_level(2)
        .flag("-pthread")
        .warnings(true)
        .file(&source)
        .try_compile("xbb_std_barrier");
    match built {
        Ok(()) => println!("cargo:rustc-cfg=xbb_std_barrier"),
        Err(e) => println!(
            "cargo:warning=the C++20 std::barrier baseline is not built ({e}); `xbar bench` on the host skips its rows"
        ),
    }
}
