//! The benchmark data and its exact sum, computed on the host to check the device.

/// Element `i` of the u32 array filled with `seed` (`xbb::pattern` in
/// hip-src/kernels/bench/common.hpp computes the same on the device).
pub fn value(i: u64, seed: u32) -> u32 {
    let mut z = i.wrapping_add(u64::from(seed)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= z >> 32;
    (z as u32) | 1
}

/// The sum of elements `0..n` as u64 (exact: n u32 values fit while n < 2^32), on every
/// core the host has.
pub fn sum(n: u64, seed: u32) -> u64 {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get() as u64).clamp(1, 64);
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..threads)
            .map(|t| {
                let (start, end) = ((t * chunk).min(n), ((t + 1) * chunk).min(n));
                scope.spawn(move || (start..end).map(|i| u64::from(value(i, seed))).sum::<u64>())
            })
            .collect();
        // A worker only adds numbers; if it panicked anyway, re-raise it here.
        parts.into_iter().map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_odd_and_not_periodic() {
        let first: Vec<u32> = (0..4).map(|i| value(i, 7)).collect();
        assert!(first.iter().all(|v| v % 2 == 1));
        assert_ne!(value(0, 7), value(4096, 7));
        assert_eq!(value(5, 2), value(6, 1));
    }

    #[test]
    fn parallel_sum_is_the_serial_sum() {
        for n in [0u64, 1, 7, 1000, 12_345] {
            let serial: u64 = (0..n).map(|i| u64::from(value(i, 3))).sum();
            assert_eq!(sum(n, 3), serial, "n = {n}");
        }
    }
}
