//! Exports where the device headers are, which backends are enabled and whether device code
//! is checked, to the build scripts of crates that depend on xbarrier directly (cargo's
//! `links` metadata: DEP_XBARRIER_INCLUDE, DEP_XBARRIER_BACKENDS, ...). The build helper
//! (xbarrier-build) reads them to compile kernels for the selected backends.

fn main() {
    let root = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let include = root.join("hip-src").join("include");
    let runtime = root.join("hip-src").join("host").join("runtime.cpp");
    println!("cargo:rerun-if-changed=hip-src/include");
    println!("cargo:rerun-if-changed=hip-src/host");
    println!("cargo:rerun-if-env-changed=XBAR_CHECKED");

    // The host backend runs on Linux x86-64 and AArch64 only (elsewhere it builds and reports
    // Error::Unsupported), so only there are host kernels compiled.
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    let host_runs = target("CARGO_CFG_TARGET_OS") == "linux"
        && matches!(target("CARGO_CFG_TARGET_ARCH").as_str(), "x86_64" | "aarch64");
    let backends: Vec<&str> =
        [("host", "CARGO_FEATURE_HOST"), ("cuda", "CARGO_FEATURE_CUDA"), ("hip", "CARGO_FEATURE_HIP")]
            .into_iter()
            .filter(|(_, feature)| std::env::var_os(feature).is_some())
            .filter(|(name, _)| *name != "host" || host_runs)
            .map(|(name, _)| name)
            .collect();
    // Checked device code: the `checked` feature, XBAR_CHECKED=1, or any debug build.
    let checked = match std::env::var("XBAR_CHECKED").ok().as_deref() {
        Some("1") => true,
        Some("0") => false,
        _ => std::env::var_os("CARGO_FEATURE_CHECKED").is_some() || std::env::var("PROFILE").as_deref() == Ok("debug"),
    };
    system_barrier_shim(&include, &root, host_runs, checked);
    println!("cargo:include={}", include.display());
    println!("cargo:host_runtime={}", runtime.display());
    println!("cargo:backends={}", backends.join(","));
    println!("cargo:checked={}", u8::from(checked));
    println!("cargo:rustc-env=XBAR_BUILD_CHECKED={}", u8::from(checked));
    println!("cargo:rustc-env=XBAR_BUILD_BACKENDS={}", backends.join(","));
}

/// Compiles the host side of `SystemBarrier` (hip-src/host/system_barrier.cpp: the host
/// platform layer's protocol, checked as the kernels are) and links it in, where the host
/// platform layer builds (Linux on x86-64 and AArch64). Elsewhere, or without a C++17
/// compiler, `SystemBarrier::new` reports `Error::Unsupported` with the reason
/// (`XBAR_SYSTEM_SHIM_MISSING`) rather than failing the build.
fn system_barrier_shim(include: &std::path::Path, root: &std::path::Path, host_runs: bool, checked: bool) {
    println!("cargo::rustc-check-cfg=cfg(xbarrier_system_shim)");
    if !host_runs {
        println!(
            "cargo:rustc-env=XBAR_SYSTEM_SHIM_MISSING=host threads on a system barrier need Linux on x86-64 or AArch64"
        );
        return;
    }
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .file(root.join("hip-src").join("host").join("system_barrier.cpp"))
        .include(include)
        .define("XB_CHECKED", if checked { "1" } else { "0" })
        .flag_if_supported("-fvisibility=hidden")
        .opt_level(2)
        .cargo_warnings(false);
    match build.try_compile("xbarrier_system_barrier") {
        Ok(()) => {
            println!("cargo:rustc-cfg=xbarrier_system_shim");
            println!("cargo:rustc-env=XBAR_SYSTEM_SHIM_MISSING=");
        }
        Err(e) => {
            println!("cargo:warning=xbarrier: SystemBarrier unavailable: compiling hip-src/host/system_barrier.cpp failed: {e}");
            println!(
                "cargo:rustc-env=XBAR_SYSTEM_SHIM_MISSING=its host side did not compile (install a C++17 compiler, e.g. g++, or set CXX): {}",
                e.to_string().replace('\n', " ")
            );
        }
    }
}
