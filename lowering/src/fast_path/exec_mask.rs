//! One lane's bit of the AMDGPU masks (exec, vcc, scc and SGPRs that hold masks), so that
//! the fast-path search takes only walks a wave can take.
//!
//! Divergent code is an exec-masked if/else: `s_and_saveexec` enters the "then" lanes,
//! `s_xor` keeps the "else" lanes, `s_andn2_saveexec` (`s_and_not1_saveexec`) swaps to them,
//! and `s_cbranch_execz` skips an arm no lane runs. A plain graph search may skip both arms,
//! which no wave can do. The wave here is one lane, or a wave whose lanes all decide alike
//! (the fast path: nobody completes the phase, every first poll succeeds): each vector
//! compare picks its result for the lane, both ways, and the scalar mask instructions then
//! compute exec exactly, so `s_cbranch_execz` is taken only when the lane is masked off.
//! Registers the model cannot follow (loaded data, arithmetic) are unknown, and a branch on
//! an unknown bit may go either way, which learns the bit.

use std::collections::BTreeMap;

/// Which way the current instruction went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Not a branch (or an unconditional one).
    Next,
    /// A conditional branch, taken.
    Taken,
    /// A conditional branch, not taken (fall-through).
    NotTaken,
}

/// A register that may hold a lane mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Reg {
    Exec,
    Vcc,
    Scc,
    /// SGPRs `lo..=hi` (`s2` or `s[2:3]`).
    S(u16, u16),
}

impl Reg {
    fn parse(operand: &str) -> Option<Reg> {
        match operand {
            "exec" | "exec_lo" | "exec_hi" => return Some(Reg::Exec),
            "vcc" | "vcc_lo" | "vcc_hi" => return Some(Reg::Vcc),
            "scc" => return Some(Reg::Scc),
            _ => {}
        }
        let s = operand.strip_prefix('s')?;
        if let Some(range) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let (lo, hi) = range.split_once(':')?;
            return Some(Reg::S(lo.parse().ok()?, hi.parse().ok()?));
        }
        let n = s.parse().ok()?;
        Some(Reg::S(n, n))
    }

    fn overlaps(self, other: Reg) -> bool {
        match (self, other) {
            (Reg::S(a, b), Reg::S(c, d)) => a <= d && c <= b,
            (x, y) => x == y,
        }
    }
}

/// The lane's bit in each mask register the model knows (absent: unknown).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Lane {
    known: BTreeMap<Reg, bool>,
    /// Other lanes of the wave may be active where this one is not (a wave whose lanes do
    /// not decide alike): a branch on exec may then go either way while this lane is off.
    among_others: bool,
}

/// Binary mask operations by mnemonic stem (`s_<stem>_b64`, `s_<stem>_saveexec_b32`).
fn binary(stem: &str) -> Option<fn(bool, bool) -> bool> {
    Some(match stem {
        "and" => |a, b| a && b,
        "or" => |a, b| a || b,
        "xor" => |a, b| a != b,
        "andn2" | "and_not1" => |a, b| a && !b,
        "orn2" | "or_not1" => |a, b| a || !b,
        "andn1" | "and_not0" => |a, b| !a && b,
        "orn1" | "or_not0" => |a, b| !a || b,
        "nand" => |a, b| !(a && b),
        "nor" => |a, b| !(a || b),
        "xnor" => |a, b| a == b,
        _ => return None,
    })
}

/// `f` on three-valued bits: known when the known inputs decide it.
/// The result of an integer `v_cmp` whose two sources are the same register, if it is one.
fn self_compare(mnemonic: &str, a: &str, b: &str) -> Option<bool> {
    if a != b || a.is_empty() {
        return None;
    }
    let mut parts = mnemonic.split('_').skip(2);
    let (condition, kind) = (parts.next()?, parts.next()?);
    if !(kind.starts_with('u') || kind.starts_with('i')) {
        return None;
    }
    match condition {
        "eq" | "le" | "ge" => Some(true),
        "ne" | "lt" | "gt" | "lg" => Some(false),
        _ => None,
    }
}

fn apply(f: fn(bool, bool) -> bool, a: Option<bool>, b: Option<bool>) -> Option<bool> {
    let outcomes: Vec<bool> = [false, true]
        .into_iter()
        .filter(|&x| a.is_none_or(|a| a == x))
        .flat_map(|x| [false, true].into_iter().filter(move |&y| b.is_none_or(|b| b == y)).map(move |y| f(x, y)))
        .collect();
    let first = *outcomes.first()?;
    outcomes.iter().all(|&o| o == first).then_some(first)
}

impl Lane {
    /// At the kernel's entry the lane is active.
    pub(crate) fn entry() -> Lane {
        Lane { known: BTreeMap::from([(Reg::Exec, true)]), among_others: false }
    }

    /// At the kernel's entry, in a wave whose other lanes may decide otherwise.
    pub(crate) fn entry_among_others() -> Lane {
        Lane { among_others: true, ..Lane::entry() }
    }

    /// Whether the lane is active (its exec bit), where known.
    pub(crate) fn active(&self) -> Option<bool> {
        self.get(Reg::Exec)
    }

    fn get(&self, reg: Reg) -> Option<bool> {
        self.known.get(&reg).copied()
    }

    fn set(&mut self, reg: Reg, bit: Option<bool>) {
        self.known.retain(|&r, _| !r.overlaps(reg));
        if let Some(bit) = bit {
            self.known.insert(reg, bit);
        }
    }

    /// An operand's bit: a register's, or a constant's where it is the same in every lane.
    fn value(&self, operand: &str) -> Option<bool> {
        match operand {
            "-1" => Some(true),
            "0" => Some(false),
            _ => Reg::parse(operand).and_then(|r| self.get(r)),
        }
    }

    /// This state with `reg` set both ways (or the one way it is known).
    fn split(self, reg: Reg) -> Vec<Lane> {
        if self.get(reg).is_some() {
            return vec![self];
        }
        [false, true]
            .into_iter()
            .map(|bit| {
                let mut lane = self.clone();
                lane.set(reg, Some(bit));
                lane
            })
            .collect()
    }

    /// A branch on `reg` that goes when it is `when`: the states in which it goes `outcome`.
    fn branch(self, reg: Reg, when: bool, outcome: Outcome) -> Vec<Lane> {
        let want = match outcome {
            Outcome::Taken => when,
            Outcome::NotTaken => !when,
            Outcome::Next => return vec![self],
        };
        if reg == Reg::Exec && self.among_others && self.get(reg) == Some(false) {
            return vec![self];
        }
        match self.get(reg) {
            Some(bit) if bit != want => vec![],
            _ => {
                let mut lane = self;
                lane.set(reg, Some(want));
                vec![lane]
            }
        }
    }

    /// The states after `instruction` went `outcome` (none: it cannot go that way).
    pub(crate) fn step(&self, instruction: &str, outcome: Outcome) -> Vec<Lane> {
        let mut words = instruction.splitn(2, char::is_whitespace);
        let mnemonic = words.next().unwrap_or("");
        let operands: Vec<&str> = words.next().unwrap_or("").split(',').map(str::trim).collect();
        let operand = |i: usize| operands.get(i).copied().unwrap_or("");
        let mut lane = self.clone();

        if let Some(condition) = mnemonic.strip_prefix("s_cbranch_") {
            return match condition {
                "execz" => lane.branch(Reg::Exec, false, outcome),
                "execnz" => lane.branch(Reg::Exec, true, outcome),
                "vccz" => lane.branch(Reg::Vcc, false, outcome),
                "vccnz" => lane.branch(Reg::Vcc, true, outcome),
                "scc0" => lane.branch(Reg::Scc, false, outcome),
                "scc1" => lane.branch(Reg::Scc, true, outcome),
                _ => vec![lane],
            };
        }
        if let Some(rest) = mnemonic.strip_prefix("s_") {
            let width = rest.strip_suffix("_b64").or_else(|| rest.strip_suffix("_b32"));
            // D = exec; exec = f(S, exec); scc = exec.
            if let Some(f) = width.and_then(|r| r.strip_suffix("_saveexec")).and_then(binary) {
                let exec = apply(f, lane.value(operand(1)), lane.get(Reg::Exec));
                if let Some(d) = Reg::parse(operand(0)) {
                    lane.set(d, self.get(Reg::Exec));
                }
                lane.set(Reg::Exec, exec);
                lane.set(Reg::Scc, exec);
                return vec![lane];
            }
            // D = f(A, B); scc = D.
            if let Some(f) = width.and_then(binary) {
                let d = apply(f, lane.value(operand(1)), lane.value(operand(2)));
                if let Some(reg) = Reg::parse(operand(0)) {
                    lane.set(reg, d);
                }
                lane.set(Reg::Scc, d);
                return vec![lane];
            }
            let written = Reg::parse(operand(0));
            match width {
                Some("mov") => {
                    if let Some(reg) = written {
                        lane.set(reg, self.value(operand(1)));
                    }
                }
                Some("not") => {
                    let d = self.value(operand(1)).map(|b| !b);
                    if let Some(reg) = written {
                        lane.set(reg, d);
                    }
                    lane.set(Reg::Scc, d);
                }
                Some("cselect") => {
                    let (a, b) = (self.value(operand(1)), self.value(operand(2)));
                    let d = match self.get(Reg::Scc) {
                        Some(true) => a,
                        Some(false) => b,
                        None => a.filter(|_| a == b),
                    };
                    if let Some(reg) = written {
                        lane.set(reg, d);
                    }
                }
                // A scalar compare's result is the same for every lane: either way.
                _ if rest.starts_with("cmp") || rest.starts_with("bitcmp") => {
                    lane.set(Reg::Scc, None);
                    return lane.split(Reg::Scc);
                }
                // Other scalar ALU and memory instructions: their destination is data.
                _ => {
                    if let Some(reg) = written {
                        lane.set(reg, None);
                        lane.set(Reg::Scc, None);
                    }
                }
            }
            return vec![lane];
        }
        if mnemonic.starts_with("v_cmpx") {
            // exec &= the lane's compare (gfx9's e64 form also writes an SGPR pair).
            if let Some(reg) = Reg::parse(operand(0)) {
                lane.set(reg, None);
            }
            if lane.get(Reg::Exec) == Some(false) {
                return vec![lane];
            }
            lane.set(Reg::Exec, None);
            return lane.split(Reg::Exec);
        }
        if mnemonic.starts_with("v_cmp") {
            // The lane's compare, either way; a lane that is off writes 0.
            let Some(reg) = Reg::parse(operand(0)) else { return vec![lane] };
            if lane.get(Reg::Exec) == Some(false) {
                lane.set(reg, Some(false));
                return vec![lane];
            }
            // An integer compare of a register with itself (what a test that every lane
            // holds the first lane's value becomes for a value in a scalar register).
            if let Some(result) = self_compare(mnemonic, operand(1), operand(2)) {
                lane.set(reg, lane.get(Reg::Exec).map(|on| on && result));
                return if lane.get(Reg::Exec).is_some() { vec![lane] } else { lane.split(reg) };
            }
            lane.set(reg, None);
            return lane.split(reg);
        }
        if mnemonic.starts_with("v_") {
            // v_readfirstlane/v_readlane write data; carry-out operands write a mask the
            // model does not follow.
            if let Some(reg) = Reg::parse(operand(0)) {
                lane.set(reg, None);
            }
            let carry = mnemonic.contains("_co_")
                || mnemonic.starts_with("v_mad_u64_u32")
                || mnemonic.starts_with("v_mad_i64_i32")
                || mnemonic.starts_with("v_div_scale");
            if let Some(reg) = Reg::parse(operand(1)).filter(|_| carry) {
                lane.set(reg, None);
            }
        }
        vec![lane]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lane: Lane, instructions: &[&str]) -> Vec<Lane> {
        instructions.iter().fold(vec![lane], |lanes, i| lanes.iter().flat_map(|l| l.step(i, Outcome::Next)).collect())
    }

    #[test]
    fn registers_parse() {
        assert_eq!(Reg::parse("s[2:3]"), Some(Reg::S(2, 3)));
        assert_eq!(Reg::parse("s14"), Some(Reg::S(14, 14)));
        assert_eq!(Reg::parse("vcc_lo"), Some(Reg::Vcc));
        assert_eq!(Reg::parse("exec_lo"), Some(Reg::Exec));
        assert_eq!(Reg::parse("v2"), None);
        assert_eq!(Reg::parse("sendmsg(MSG_DEALLOC_VGPRS)"), None);
        assert!(Reg::S(2, 3).overlaps(Reg::S(3, 3)) && !Reg::S(2, 3).overlaps(Reg::S(4, 5)));
    }

    #[test]
    fn if_else_runs_exactly_one_arm() {
        // then-lanes, else-lanes, skip test: the lane is in exactly one arm.
        let lanes = run(
            Lane::entry(),
            &[
                "v_cmp_ne_u64_e32 vcc, s[6:7], v[2:3]",
                "s_and_saveexec_b64 s[2:3], vcc",
                "s_xor_b64 s[8:9], exec, s[2:3]",
            ],
        );
        assert_eq!(lanes.len(), 2);
        for lane in lanes {
            let then_runs = lane.get(Reg::Exec).expect("exec is known");
            // (The then-arm leaves exec as it found it.) The else-arm runs the other lanes.
            let at_else = lane.step("s_andn2_saveexec_b64 s[2:3], s[8:9]", Outcome::Next);
            assert_eq!(at_else[0].get(Reg::Exec), Some(!then_runs));
            // The skip branch goes one way only.
            assert_eq!(lane.step("s_cbranch_execz .LBB3_11", Outcome::Taken).len(), usize::from(!then_runs));
            assert_eq!(lane.step("s_cbranch_execz .LBB3_11", Outcome::NotTaken).len(), usize::from(then_runs));
        }
    }

    #[test]
    fn wave32_forms_and_unknown_data() {
        let lanes = run(Lane::entry(), &["s_mov_b32 s0, exec_lo", "v_cmpx_eq_u32_e32 0, v2"]);
        assert_eq!(lanes.len(), 2);
        assert!(lanes.iter().all(|l| l.get(Reg::S(0, 0)) == Some(true)));
        // Restoring exec from the saved copy re-enables the lane either way.
        let lanes =
            run(Lane::entry(), &["s_mov_b32 s0, exec_lo", "v_cmpx_eq_u32_e32 0, v2", "s_or_b32 exec_lo, exec_lo, s0"]);
        assert!(lanes.iter().all(|l| l.get(Reg::Exec) == Some(true)));
        // Loaded data is unknown: a branch on it may go either way, and learns it.
        let lane = Lane::entry().step("s_load_dwordx2 s[0:1], s[4:5], 0x0", Outcome::Next).remove(0);
        assert_eq!(lane.get(Reg::S(0, 1)), None);
        let taken = lane.step("s_cbranch_scc1 .LBB0_1", Outcome::Taken);
        assert_eq!(taken[0].get(Reg::Scc), Some(true));
    }
}
