//! Compiles kernels/*.cpp for every backend xbarrier was built with.
fn main() {
    xbarrier_build::Kernels::new("user_kernels").dir("kernels").build_or_exit();
}
