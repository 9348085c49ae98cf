//! Compiles kernels/pipeline.cpp for every backend xbarrier was built with.
fn main() {
    xbarrier_build::Kernels::new("user_kernels").file("kernels/pipeline.cpp").build_or_exit();
}
