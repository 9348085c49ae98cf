fn main() {
    for (t, p) in [(4u32, 10u32), (256, 100), (1024, 1000)] {
        let v = xbarrier_conformance::smoke::<xbarrier::Host>(t, p).expect("smoke");
        let n = t as u64;
        for (i, x) in v.iter().enumerate() {
            let tid = (i as u64) % n;
            let nb = (tid + 1) % n;
            let expect: u64 = (0..p as u64).map(|q| q + nb).sum::<u64>() + 3;
            assert_eq!(*x as u64, expect, "thread {i}");
        }
    }
    println!("ok");
}
