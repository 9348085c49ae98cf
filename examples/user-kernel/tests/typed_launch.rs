//! Typed launches reject at compile time what the kernel's signature rules out: a wrong
//! element type, scalar type or argument count, a shared buffer for a pointer the kernel
//! writes, and dropping or reading a buffer while a launch that uses it may still run. Each
//! case in tests/compile-fail/ must fail with the error in its .stderr file; the case in
//! tests/compile-pass/ is the same launch written right, and must build and run.

#[test]
fn typed_launches_reject_what_the_signature_rules_out() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile-fail/*.rs");
    cases.pass("tests/compile-pass/*.rs");
}
