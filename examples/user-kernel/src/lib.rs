//! The crate's kernels (kernels/*.cpp, compiled by `build.rs`)
//! with their typed launchers: `user_kernels::Kernels<B>` loads them on a device and has one
//! method per kernel, typed after its C++ signature.

xbarrier::kernels!(
    /// The kernels of kernels/*.cpp.
    pub mod user_kernels
);
