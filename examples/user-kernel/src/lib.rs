//! The crate's kernels (kernels/pipeline.cpp and kernels/readme.cpp, compiled by `build.rs`)
//! with their typed launchers: `user_kernels::Kernels<B>` loads them on a device and has one
//! method per kernel, typed after its C++ signature.

xbarrier::kernels!(
    /// The kernels of kernels/pipeline.cpp and kernels/readme.cpp.
    pub mod user_kernels
);
