//! The kernels' clock arithmetic (`hip-src/include/xbarrier/platform/amdgcn_clock.hpp`), the
//! C++ itself, against exact integer math, and against the multiplier this crate writes.
//!
//! Builds `hip-src/tests/clock_conversion.cpp` with the host C++ compiler (`$CXX`, else
//! `c++`) from the header AMDGPU kernels compile, feeds it rates and tick counts, and checks
//! every answer: the multiplier is 10^6 kHz / rate rounded to the nearest 2^-32 ns, the
//! conversion is bits 32..95 of ticks times it, within ticks / 2^33 + 1 ns of exact (equal
//! where the rate divides 10^6 kHz), and differences survive the 2^64 ns wrap.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use xbarrier_backend_hip::{ns_per_tick_q32, CLOCK_SYMBOL, DEFAULT_WALL_CLOCK_KHZ};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The conversion program, built on first use (the tests share one build).
fn program() -> &'static PathBuf {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("clock-conversion-{}", std::process::id()));
        let source = repository().join("hip-src/tests/clock_conversion.cpp");
        let cxx = std::env::var("CXX").ok().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "c++".to_owned());
        let status = Command::new(&cxx)
            .args(["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(repository().join("hip-src/include"))
            .arg(&source)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap_or_else(|e| panic!("this test needs a C++17 compiler (`{cxx}`, or set CXX): {e}"));
        assert!(status.success(), "{cxx} failed on {}", source.display());
        out
    })
}

/// The program's answer to each line of `input`, as two numbers per line.
fn ask(program: &Path, input: &[String]) -> Vec<(u64, u64)> {
    let mut child = Command::new(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    for line in input {
        writeln!(stdin, "{line}").unwrap_or_else(|e| panic!("writing to the program: {e}"));
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "the program failed: {output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let answers: Vec<(u64, u64)> = text
        .lines()
        .map(|line| {
            let mut words = line.split(' ').map(|w| w.parse::<u64>().unwrap_or_else(|e| panic!("{line:?}: {e}")));
            match (words.next(), words.next(), words.next()) {
                (Some(first), Some(second), None) => (first, second),
                _ => panic!("{line:?}: want two numbers"),
            }
        })
        .collect();
    assert_eq!(answers.len(), input.len(), "{text}");
    answers
}

/// 25 MHz, 100 MHz (the default), 1 GHz and 1 kHz divide 10^6 kHz; the others do not.
const EXACT_RATES: [u32; 4] = [25_000, 100_000, 1_000_000, 1];
const ODD_RATES: [u32; 5] = [99_999, 27_000, 100_001, 3, u32::MAX];

/// Tick counts: small, around 2^32 (where the halves split), realistic uptimes (one second,
/// ten hours and a year at 100 MHz) and the top of the 64-bit range.
fn tick_counts() -> Vec<u64> {
    let mut ticks = vec![
        0,
        1,
        2,
        999,
        (1 << 32) - 1,
        1 << 32,
        (1 << 32) + 1,
        100_000_000,
        3_600_000_000_000,
        3_153_600_000_000_000,
    ];
    ticks.extend([(1 << 40) + 12_345, (1 << 53) + 1, (1 << 62) + 7, 1 << 63, u64::MAX - 1, u64::MAX]);
    // And some that exercise every bit of both halves (a fixed xorshift sequence).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ticks.push(x);
    }
    ticks
}

#[test]
fn the_cpp_conversion_matches_exact_integer_math() {
    let program = program();
    let rates: Vec<u32> = EXACT_RATES.into_iter().chain(ODD_RATES).collect();
    let ticks = tick_counts();
    let input: Vec<String> = rates.iter().flat_map(|khz| ticks.iter().map(move |t| format!("{khz} {t}"))).collect();
    let answers = ask(program, &input);
    for ((khz, t), (q32, ns)) in rates.iter().flat_map(|&khz| ticks.iter().map(move |&t| (khz, t))).zip(answers) {
        // The multiplier: nearest to 10^6 * 2^32 / khz, and what this crate writes.
        let ideal = 1_000_000u128 << 32;
        let off = (u128::from(q32) * u128::from(khz)).abs_diff(ideal);
        assert!(off * 2 <= u128::from(khz), "{khz} kHz: q32 {q32} is not the nearest multiplier");
        assert_eq!(q32, ns_per_tick_q32(khz), "{khz} kHz: C++ and Rust multipliers differ");
        // The conversion: bits 32..95 of the 128-bit product, exactly.
        let product = u128::from(t) * u128::from(q32);
        assert_eq!(ns, (product >> 32) as u64, "{khz} kHz, {t} ticks: not the product's bits 32..95");
        // Against the exact value, modulo 2^64 like the result.
        let exact = (u128::from(t) * 1_000_000 / u128::from(khz)) as u64;
        let error = ns.wrapping_sub(exact).min(exact.wrapping_sub(ns));
        if EXACT_RATES.contains(&khz) {
            assert_eq!(ns, exact, "{khz} kHz divides 10^6 kHz: {t} ticks must convert exactly");
        } else {
            assert!(error <= (t >> 33) + 1, "{khz} kHz, {t} ticks: {ns} ns is {error} ns from {exact}");
        }
    }
}

#[test]
fn differences_survive_the_wrap_of_the_result() {
    let program = program();
    // At 25 MHz (40 ns a tick) the result wraps at 2^64 / 40 ticks; at 99.999 MHz near
    // 2^64 / 10.0001.
    let mut input = Vec::new();
    for (khz, wrap) in [(25_000u32, (1u128 << 64) / 40), (99_999, (1u128 << 64) * 99_999 / 1_000_000)] {
        let wrap = wrap as u64;
        input.push(format!("{khz} {}", wrap - 1_000));
        input.push(format!("{khz} {}", wrap + 1_000));
    }
    let answers = ask(program, &input);
    assert!(answers[1].1 < answers[0].1, "the 25 MHz pair straddles the wrap: {answers:?}");
    assert_eq!(answers[1].1.wrapping_sub(answers[0].1), 2_000 * 40);
    let spent = answers[3].1.wrapping_sub(answers[2].1);
    // 2000 ticks of 10.0001 ns.
    assert!(spent.abs_diff(20_000) <= 1, "{spent} ns for 2000 ticks at 99.999 MHz");
}

#[test]
fn the_default_and_the_symbol_agree_with_this_crate() {
    let answers = ask(program(), &["default".to_owned()]);
    assert_eq!(answers[0], (u64::from(DEFAULT_WALL_CLOCK_KHZ), 10 << 32), "XB_CLOCK_DEFAULT_KHZ and its multiplier");
    let header = repository().join("hip-src/include/xbarrier/platform/amdgcn_clock.hpp");
    let text = std::fs::read_to_string(&header).unwrap_or_else(|e| panic!("{}: {e}", header.display()));
    assert!(
        text.contains(&format!(" uint64_t {CLOCK_SYMBOL} = ")),
        "{} does not define {CLOCK_SYMBOL}",
        header.display()
    );
}
