//! Compiles kernels/pipeline.cpp and kernels/readme.cpp for every backend xbarrier was built with.
fn main() {
    xbarrier_build::Kernels::new("user_kernels")
        .file("kernels/pipeline.cpp")
        .file("kernels/readme.cpp")
        .build_or_exit();
}
