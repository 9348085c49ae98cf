//! Passes xbarrier's header directory (its `links` metadata) to the crate, which compiles the
//! operation kernels against it at run time.
fn main() {
    let include = std::env::var("DEP_XBARRIER_INCLUDE").expect("xbarrier is a direct dependency, so cargo sets this");
    println!("cargo:rustc-env=XBARRIER_INCLUDE={include}");
}
