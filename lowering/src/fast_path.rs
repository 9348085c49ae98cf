//! The fast path of a round trip (`arrive_and_wait`): how many instructions it issues when
//! the caller is not the last arriver and its first poll already sees the phase complete.
//! This is the AMDGPU static cost the performance targets count (docs/performance.md), read
//! off the compiled listing.
//!
//! The listing becomes a control-flow graph over its instruction lines: a conditional
//! branch (`s_cbranch_*`; SASS `@P BRA`) goes to its label or to the next line, an
//! unconditional one (`s_branch`; `BRA`) only to its label, an end (`s_endpgm`; `EXIT`)
//! nowhere (a predicated `@P EXIT` may also fall through), and every other line to the next.
//! A breadth-first search over (line, atomic seen, poll seen, masks) finds the shortest walk
//! from the entry to an end that executes an LDS read-modify-write atomic (the arrival) and,
//! after it, an LDS load (the poll). The count is the number of lines on that walk, each
//! branch and the final end included; labels, directives and comments are not lines.
//!
//! On AMDGPU, branches are scalar, so the walk is what the whole wave issues. A block whose
//! lanes are all masked off is skipped by `s_cbranch_execz`, but a wave cannot skip both
//! arms of an if/else, which a bare graph search would do. The search therefore follows one
//! lane's bit of exec and the masks that feed it (`fast_path/exec_mask.rs`), with every
//! vector compare free to go either way. That is exact for a wave whose lanes all decide
//! alike, the fast path's case, with the followed lane the one that performs the wave's
//! atomic.
//!
//! Why the shortest such walk is the non-last arriver whose first poll succeeds: every way
//! through the kernel passes the arrival's atomic (or, skipping it, a later atomic on a
//! longer way). A last arriver returns without polling (and in the claimed layouts runs the
//! completion step's publish first), the first arrival of a phase arms it with a second
//! atomic, and a waiter whose poll fails takes the wait loop's back-edge and its sleeps;
//! walks that poll after all that are only longer, so the shortest walk leaves them out.
//! What remains is: arrive, find the phase neither completed nor to be armed, one poll
//! that succeeds, the acquire fence, end.
//! `xbar lower --fast-path` prints the walk, so that this can be read off.
//!
//! SASS branches are per thread: there the walk is one thread's (the lane that performs the
//! warp's atomic), with no mask model; a warp that diverges issues both sides of a branch.

pub(crate) mod exec_mask;

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

use exec_mask::{Lane, Outcome};

/// The instructions on a fast path, in the order they issue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FastPath {
    /// Each instruction as the listing writes it (AMDGPU assembly or SASS without address).
    pub instructions: Vec<String>,
}

impl FastPath {
    /// The number of instructions issued on the path (its static cost).
    pub fn count(&self) -> usize {
        self.instructions.len()
    }
}

/// The fast path of a kernel from its AMDGPU assembly (from its label to `.Lfunc_end`; the
/// text [`crate::OpCode::intermediate`] holds on AMD targets). `None` when no walk from the
/// entry reaches `s_endpgm` through an LDS atomic and then an LDS load, or when a branch
/// names a label the text lacks.
pub fn amd(function_asm: &str) -> Option<FastPath> {
    shortest(&amd_lines(function_asm), &AMD, Lane::entry(), 1, Poll::Required)
}

/// The walk of the wave whose leader completes a phase in a round trip: the shortest walk
/// from the entry to `s_endpgm` through the wave's arrival (an LDS read-modify-write
/// atomic) that polls nowhere after it, followed by the leader's exec bit; a block the
/// leader is masked off from may still run for the other lanes. The wave returns on its
/// leader's acquire (protocol.hpp 6.), so only the completing wave ends without a poll: in
/// the direct layouts its arrival carries into the phase bit, in the claimed layouts it
/// also passes the completion step's publish, a second atomic. The count is what that wave
/// issues when the step is empty (no completion function).
pub fn amd_completer(function_asm: &str) -> Option<FastPath> {
    shortest(&amd_lines(function_asm), &AMD, Lane::entry_among_others(), 1, Poll::Forbidden)
}

/// The walk of the wave whose arrival is its phase's first in a round trip, in the direct
/// layouts: the shortest walk from the entry to `s_endpgm` through two LDS read-modify-write
/// atomics (the wave's arrival, then the arming of the phase, protocol.hpp's direct layouts,
/// 3.) and then a poll that succeeds, followed by the leader's exec bit.
pub fn amd_arming(function_asm: &str) -> Option<FastPath> {
    shortest(&amd_lines(function_asm), &AMD, Lane::entry_among_others(), 2, Poll::Required)
}

/// One sleeping poll of a wait loop at its longest sleep: the shortest cycle from an LDS load
/// (the poll) through the loop's longest sleep (`s_sleep` with the largest immediate, or
/// gfx12's `s_sleep_var`) back to the same load, listed from the instruction after the load
/// and ending with it. This is what a wave
/// issues per poll once a long wait has backed off fully. The cycle follows the lane model
/// (exec_mask.rs) from a state where only the lane's exec bit is known, so flags the loop
/// sets itself are followed and the rest may go either way. `None` where no poll loop sleeps.
pub fn amd_sleeping_poll(function_asm: &str) -> Option<FastPath> {
    let lines = amd_lines(function_asm);
    let Graph { instructions, next, .. } = successors(&lines, &AMD)?;
    let longest = instructions.iter().filter_map(|i| sleep_length(i)).max()?;
    let is_longest = |i: &str| sleep_length(i) == Some(longest);
    let mut best: Option<Vec<usize>> = None;
    for poll in (0..instructions.len()).filter(|&at| amd_poll(instructions[at])) {
        // Breadth-first over (line, longest sleep passed, lane), from just after the poll.
        type Walk = (usize, bool, Lane);
        let mut previous: HashMap<Walk, Option<Walk>> = HashMap::new();
        let mut queue = VecDeque::new();
        for &(j, outcome) in &next[poll] {
            for lane in Lane::entry_among_others().step(instructions[poll], outcome) {
                let first = (j, false, lane);
                if !previous.contains_key(&first) {
                    previous.insert(first.clone(), None);
                    queue.push_back(first);
                }
            }
        }
        while let Some(state) = queue.pop_front() {
            let (at, slept, lane) = state.clone();
            if at == poll {
                if slept {
                    let mut cycle = vec![];
                    let mut walk = Some(state);
                    while let Some(w) = walk {
                        cycle.push(w.0);
                        walk = previous.get(&w).cloned().flatten();
                    }
                    // The poll itself, where the cycle starts and ends, counts once.
                    cycle.reverse();
                    if best.as_ref().is_none_or(|b| cycle.len() < b.len()) {
                        best = Some(cycle);
                    }
                    break;
                }
                continue;
            }
            let slept = slept || is_longest(instructions[at]);
            for &(j, outcome) in &next[at] {
                for machine in lane.step(instructions[at], outcome) {
                    let successor = (j, slept, machine);
                    if !previous.contains_key(&successor) {
                        if previous.len() >= MAX_STATES {
                            return None;
                        }
                        previous.insert(successor.clone(), Some(state.clone()));
                        queue.push_back(successor);
                    }
                }
            }
        }
    }
    best.map(|cycle| FastPath { instructions: cycle.into_iter().map(|at| instructions[at].to_owned()).collect() })
}

/// The sleep an instruction asks for, in units of 64 clocks: `s_sleep N` is N, gfx12's
/// `s_sleep_var` (a register's value, up to 127) counts as the longest of all.
fn sleep_length(instruction: &str) -> Option<u32> {
    match first_word(instruction) {
        "s_sleep" => last_word(instruction).parse().ok(),
        "s_sleep_var" => Some(u32::MAX),
        _ => None,
    }
}

/// Whether some walk a wave can take from the kernel's entry reaches an instruction for which
/// `to` holds after one for which `from` holds; the first such pair found. The walks follow
/// one lane's bits of the masks (exec_mask.rs) among other lanes that may decide otherwise,
/// so a branch on a flag the structurizer set is taken only the way the flag says, and a
/// block the lane is masked off from may still run; data the model cannot follow lets a
/// branch go either way. `None` also where the listing's branches name missing labels, or
/// the walks' states run past the search's limit.
pub fn amd_reaches(
    function_asm: &str,
    from: impl Fn(&str) -> bool,
    to: impl Fn(&str) -> bool,
) -> Option<(String, String)> {
    let lines = amd_lines(function_asm);
    let Graph { instructions, next, .. } = successors(&lines, &AMD)?;
    if instructions.is_empty() {
        return None;
    }
    // A state: where the walk is, the `from` instruction it passed (if any), the lane.
    type Walk = (usize, Option<usize>, Lane);
    let start: Walk = (0, None, Lane::entry_among_others());
    let mut seen: HashSet<Walk> = HashSet::from([start.clone()]);
    let mut queue = VecDeque::from([start]);
    while let Some((at, passed, lane)) = queue.pop_front() {
        let instruction = instructions[at];
        if let Some(origin) = passed {
            if to(instruction) {
                return Some((instructions[origin].to_owned(), instruction.to_owned()));
            }
        }
        let passed = passed.or(from(instruction).then_some(at));
        for &(j, outcome) in &next[at] {
            for machine in lane.step(instruction, outcome) {
                let successor = (j, passed, machine);
                if !seen.contains(&successor) {
                    if seen.len() >= MAX_STATES {
                        return None;
                    }
                    seen.insert(successor.clone());
                    queue.push_back(successor);
                }
            }
        }
    }
    None
}

/// An AMDGPU function's lines: labels and instructions (comments and directives dropped).
fn amd_lines(function_asm: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    for line in function_asm.lines() {
        let code = line.split(';').next().unwrap_or("").trim();
        if let Some(label) = code.strip_suffix(':') {
            lines.push(Line::Label(label.to_owned()));
        } else if !code.is_empty() && !code.starts_with('.') {
            lines.push(Line::Instruction(code.to_owned()));
        }
    }
    lines
}

/// The fast path of a kernel from its SASS: (address, instruction) pairs as cuobjdump lists
/// them. The atomic is a shared-memory atomic (`ATOMS`, or the generic `ATOM.E` the protocol
/// adds a shared word with) or an mbarrier arrival (`SYNCS.ARRIVE`), the poll a shared-memory load (`LDS`) or an mbarrier phase test
/// (`SYNCS.PHASECHK`).
pub fn sass(listing: &[(u64, String)]) -> Option<FastPath> {
    // A branch may land on a NOP, which the listing leaves out (nvcc pads after the call
    // that `__syncwarp` becomes on sm_80, and `BRA.CONV` skips to the pad): such a target
    // names the next listed instruction.
    let listed: HashSet<u64> = listing.iter().map(|(address, _)| *address).collect();
    let mut unlisted: Vec<u64> = listing
        .iter()
        .filter_map(|(_, instruction)| sass_branch_target(instruction))
        .filter(|target| !listed.contains(target))
        .collect();
    unlisted.sort_unstable();
    unlisted.dedup();
    let mut unlisted = unlisted.into_iter().peekable();
    let mut lines = Vec::new();
    for (address, instruction) in listing {
        while let Some(target) = unlisted.next_if(|target| target < address) {
            lines.push(Line::Label(format!("{target:#x}")));
        }
        lines.push(Line::Label(format!("{address:#x}")));
        lines.push(Line::Instruction(instruction.clone()));
    }
    shortest(&lines, &SASS, Thread, 1, Poll::Required)
}

/// The address a SASS branch names, if the instruction is one.
fn sass_branch_target(instruction: &str) -> Option<u64> {
    match sass_flow(instruction) {
        Flow::Jump(label) | Flow::Branch(label) => u64::from_str_radix(label.strip_prefix("0x")?, 16).ok(),
        _ => None,
    }
}

/// A line of a listing: a branch target or an instruction.
enum Line {
    Label(String),
    Instruction(String),
}

/// Where control goes after an instruction.
enum Flow {
    Next,
    Jump(String),
    Branch(String),
    End,
    MaybeEnd,
}

/// What the search needs to know about one instruction set.
struct Isa {
    flow: fn(&str) -> Flow,
    atomic: fn(&str) -> bool,
    poll: fn(&str) -> bool,
}

const AMD: Isa = Isa { flow: amd_flow, atomic: amd_atomic, poll: amd_poll };
const SASS: Isa = Isa { flow: sass_flow, atomic: sass_atomic, poll: sass_poll };

fn first_word(instruction: &str) -> &str {
    instruction.split_whitespace().next().unwrap_or("")
}

fn last_word(instruction: &str) -> String {
    instruction.split_whitespace().last().unwrap_or("").trim_end_matches(',').to_owned()
}

fn amd_flow(instruction: &str) -> Flow {
    let mnemonic = first_word(instruction);
    if mnemonic == "s_branch" {
        Flow::Jump(last_word(instruction))
    } else if mnemonic.starts_with("s_cbranch_") {
        Flow::Branch(last_word(instruction))
    } else if mnemonic.starts_with("s_endpgm") {
        Flow::End
    } else {
        Flow::Next
    }
}

/// LDS read-modify-write atomics, by the word after `ds_` (gfx9 and gfx11/12 spellings).
fn amd_atomic(instruction: &str) -> bool {
    const RMW: &str = "add sub rsub inc dec min max and or xor mskor wrxchg wrxchg2 wrxchg2st64 storexchg \
                       cmpst cmpstore cmpswap condxchg32 pk";
    let stem = first_word(instruction).strip_prefix("ds_").and_then(|rest| rest.split('_').next());
    stem.is_some_and(|stem| RMW.split_whitespace().any(|op| op == stem))
}

fn amd_poll(instruction: &str) -> bool {
    let mnemonic = first_word(instruction);
    mnemonic.starts_with("ds_read") || mnemonic.starts_with("ds_load")
}

fn sass_flow(instruction: &str) -> Flow {
    let predicated = first_word(instruction).starts_with('@');
    let mnemonic = crate::mnemonic(instruction);
    let operands = instruction.split_once(mnemonic).map_or("", |(_, rest)| rest).split(',').count();
    if mnemonic.starts_with("BRA") || mnemonic.starts_with("JMP") {
        // `BRA 0x80` always jumps; `@!P0 BRA 0x80` and `BRA P0, 0x80` may not.
        if predicated || operands > 1 {
            Flow::Branch(last_word(instruction))
        } else {
            Flow::Jump(last_word(instruction))
        }
    } else if mnemonic == "EXIT" {
        if predicated {
            Flow::MaybeEnd
        } else {
            Flow::End
        }
    } else {
        Flow::Next
    }
}

fn sass_atomic(instruction: &str) -> bool {
    let mnemonic = crate::mnemonic(instruction);
    mnemonic.starts_with("ATOMS") || mnemonic.starts_with("ATOM.") || mnemonic.starts_with("SYNCS.ARRIVE")
}

fn sass_poll(instruction: &str) -> bool {
    let mnemonic = crate::mnemonic(instruction);
    mnemonic == "LDS" || mnemonic.starts_with("LDS.") || mnemonic.starts_with("SYNCS.PHASECHK")
}

/// What the search follows besides the position: the states after an instruction went one
/// way (none: it cannot go that way).
trait Machine: Clone + Eq + Hash {
    fn step(&self, instruction: &str, outcome: Outcome) -> Vec<Self>;
}

impl Machine for Lane {
    fn step(&self, instruction: &str, outcome: Outcome) -> Vec<Lane> {
        Lane::step(self, instruction, outcome)
    }
}

/// One SASS thread: every branch may go either way.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Thread;

impl Machine for Thread {
    fn step(&self, _: &str, _: Outcome) -> Vec<Thread> {
        vec![Thread]
    }
}

/// Where the search gives up (a listing whose mask states multiply without end).
const MAX_STATES: usize = 1 << 20;

#[derive(Clone, PartialEq, Eq, Hash)]
struct State<M> {
    at: usize,
    atomics: u8,
    poll: bool,
    machine: M,
}

/// A listing's instructions and, for each, its successors (with the way it went there) and
/// whether a walk may end there.
struct Graph<'a> {
    instructions: Vec<&'a str>,
    next: Vec<Vec<(usize, Outcome)>>,
    ends: Vec<bool>,
}

/// The control-flow graph of `lines`; `None` where a branch names a label the text lacks.
fn successors<'a>(lines: &'a [Line], isa: &Isa) -> Option<Graph<'a>> {
    let mut instructions: Vec<&str> = Vec::new();
    let mut labels: HashMap<&str, usize> = HashMap::new();
    for line in lines {
        match line {
            Line::Label(name) => {
                labels.insert(name.as_str(), instructions.len());
            }
            Line::Instruction(text) => instructions.push(text),
        }
    }
    let target = |name: &str| labels.get(name).copied().filter(|&i| i < instructions.len());
    let mut next: Vec<Vec<(usize, Outcome)>> = Vec::with_capacity(instructions.len());
    let mut ends = Vec::with_capacity(instructions.len());
    for (i, instruction) in instructions.iter().enumerate() {
        let fall = (i + 1 < instructions.len()).then_some(i + 1);
        let (successors, end) = match (isa.flow)(instruction) {
            Flow::Next => (fall.map(|j| (j, Outcome::Next)).into_iter().collect(), false),
            Flow::Jump(label) => (vec![(target(&label)?, Outcome::Next)], false),
            Flow::Branch(label) => {
                let taken = (target(&label)?, Outcome::Taken);
                (std::iter::once(taken).chain(fall.map(|j| (j, Outcome::NotTaken))).collect(), false)
            }
            Flow::End => (vec![], true),
            Flow::MaybeEnd => (fall.map(|j| (j, Outcome::NotTaken)).into_iter().collect(), true),
        };
        next.push(successors);
        ends.push(end);
    }
    Some(Graph { instructions, next, ends })
}

/// What a walk does with polls after its last atomic.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Poll {
    /// It polls (the fast path).
    Required,
    /// It never polls (the completing wave).
    Forbidden,
}

/// The shortest walk from the entry to an end through `atomics` atomics, with a poll after
/// the last as `polls` says. Breadth-first search: every instruction costs one, so the first
/// end reached that way ends a shortest walk.
fn shortest<M: Machine>(lines: &[Line], isa: &Isa, entry: M, atomics: u8, polls: Poll) -> Option<FastPath> {
    let Graph { instructions, next, ends } = successors(lines, isa)?;
    if instructions.is_empty() {
        return None;
    }

    let start = State { at: 0, atomics: 0, poll: polls == Poll::Forbidden, machine: entry };
    let mut previous: HashMap<State<M>, Option<State<M>>> = HashMap::from([(start.clone(), None)]);
    let mut queue = VecDeque::from([start]);
    while let Some(state) = queue.pop_front() {
        let instruction = instructions[state.at];
        let is_atomic = (isa.atomic)(instruction);
        // A poll counts after the last atomic; a walk that must not poll ends at one.
        let polls_here = state.atomics == atomics && (isa.poll)(instruction);
        if polls == Poll::Forbidden && polls_here {
            continue;
        }
        let poll = state.poll || polls_here;
        let seen = state.atomics + u8::from(is_atomic && state.atomics < atomics);
        if ends[state.at] && seen == atomics && poll {
            let mut walk = vec![instruction.to_owned()];
            let mut at = previous.get(&state).cloned().flatten();
            while let Some(s) = at {
                walk.push(instructions[s.at].to_owned());
                at = previous.get(&s).cloned().flatten();
            }
            walk.reverse();
            return Some(FastPath { instructions: walk });
        }
        for &(j, outcome) in &next[state.at] {
            for machine in state.machine.step(instruction, outcome) {
                let successor = State { at: j, atomics: seen, poll, machine };
                if !previous.contains_key(&successor) {
                    if previous.len() >= MAX_STATES {
                        return None;
                    }
                    previous.insert(successor.clone(), Some(state.clone()));
                    queue.push_back(successor);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(asm: &str) -> Option<usize> {
        amd(asm).map(|p| p.count())
    }

    #[test]
    fn straight_line_counts_every_instruction() {
        let asm = "k:\n\ts_mov_b32 s0, 0 ; comment\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\ts_waitcnt lgkmcnt(0)\n\
                   \tds_read_b64 v[2:3], v0\n\ts_endpgm\n";
        assert_eq!(count(asm), Some(5));
    }

    #[test]
    fn the_completing_wave_polls_nowhere() {
        let asm = "k:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\ts_cbranch_scc1 .LBB0_1\n\tds_read_b64 v[2:3], v0\n\
                   \ts_endpgm\n.LBB0_1:\n\ts_add_u32 s0, s0, 1\n\ts_endpgm\n";
        assert_eq!(count(asm), Some(4));
        assert_eq!(amd_completer(asm).map(|p| p.count()), Some(4));
        assert_eq!(
            amd_completer(asm).map(|p| p.instructions),
            Some(vec![
                "ds_add_rtn_u64 v[0:1], v0, v[0:1]".to_owned(),
                "s_cbranch_scc1 .LBB0_1".to_owned(),
                "s_add_u32 s0, s0, 1".to_owned(),
                "s_endpgm".to_owned()
            ])
        );
        assert_eq!(amd_arming(asm), None);
        // Every way to the end polls: no completing walk.
        assert_eq!(
            amd_completer("k:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\tds_read_b64 v[2:3], v0\n\ts_endpgm\n"),
            None
        );
    }

    #[test]
    fn a_poll_before_the_atomic_does_not_count() {
        let asm = "k:\n\tds_read_b64 v[2:3], v0\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\ts_endpgm\n";
        assert_eq!(count(asm), None);
        assert_eq!(count("k:\n\ts_endpgm\n"), None);
        assert_eq!(count(""), None);
    }

    #[test]
    fn diamond_takes_the_shorter_arm() {
        // A uniform if (...) { 3 instructions } else { 1 instruction }, then the poll.
        let asm = "k:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\ts_cmp_eq_u32 s0, 0\n\ts_cbranch_scc1 .LBB0_2\n\
                   ; %bb.1:\n\tv_mov_b32 v0, 1\n\tv_mov_b32 v0, 2\n\ts_branch .LBB0_3\n\
                   .LBB0_2:\n\tv_mov_b32 v0, 3\n\
                   .LBB0_3:\n\tds_load_b64 v[2:3], v0\n\ts_endpgm\n";
        let path = amd(asm).expect("a path");
        assert_eq!(
            path.instructions,
            [
                "ds_add_rtn_u64 v[0:1], v0, v[0:1]",
                "s_cmp_eq_u32 s0, 0",
                "s_cbranch_scc1 .LBB0_2",
                "v_mov_b32 v0, 3",
                "ds_load_b64 v[2:3], v0",
                "s_endpgm"
            ]
        );
        // The arm that holds the atomic is taken although it is longer.
        let asm = "k:\n\ts_cmp_eq_u32 s0, 0\n\ts_cbranch_scc1 .LBB0_2\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\
                   \tv_mov_b32 v0, 1\n.LBB0_2:\n\tds_read_b64 v[2:3], v0\n\ts_endpgm\n";
        assert_eq!(count(asm), Some(6));
        // A lane that is active cannot skip the block exec-masked for it.
        let asm = "k:\n\ts_cbranch_execz .LBB0_2\n\tv_mov_b32 v0, 1\n\
                   .LBB0_2:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\tds_read_b64 v[2:3], v0\n\ts_endpgm\n";
        assert_eq!(count(asm), Some(5));
    }

    #[test]
    fn a_wave_runs_one_arm_of_an_if_else_at_least() {
        // if (cond) { 2 instructions } else { 2 instructions } as exec-masked code: a graph
        // search could skip both arms (2 + 2 + 1 + 2 lines); the wave runs one of them.
        let asm = "k:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\tv_cmp_ne_u64_e32 vcc, 0, v[0:1]\n\
                   \ts_and_saveexec_b64 s[2:3], vcc\n\ts_xor_b64 s[8:9], exec, s[2:3]\n\ts_cbranch_execz .LBB0_2\n\
                   \tv_mov_b32 v0, 1\n\tv_mov_b32 v0, 2\n\
                   .LBB0_2:\n\ts_andn2_saveexec_b64 s[2:3], s[8:9]\n\ts_cbranch_execz .LBB0_4\n\
                   \tv_mov_b32 v0, 3\n\tv_mov_b32 v0, 4\n\
                   .LBB0_4:\n\ts_or_b64 exec, exec, s[2:3]\n\tds_read_b64 v[2:3], v0\n\ts_endpgm\n";
        let path = amd(asm).expect("a path");
        assert_eq!(path.count(), 12, "{:#?}", path.instructions);
        assert!(path.instructions.iter().any(|i| i.starts_with("v_mov_b32")));
        // The leader election: the lane that adds is active in the guarded block.
        let asm = "k:\n\ts_mov_b64 s[2:3], exec\n\tv_cmp_eq_u32_e32 vcc, 0, v2\n\ts_and_saveexec_b64 s[0:1], vcc\n\
                   \ts_cbranch_execz .LBB0_2\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\
                   .LBB0_2:\n\ts_or_b64 exec, exec, s[0:1]\n\tds_read_b64 v[2:3], v0\n\ts_endpgm\n";
        assert_eq!(count(asm), Some(8));
    }

    #[test]
    fn a_loop_runs_once_when_the_first_poll_succeeds() {
        // arrive; poll: load, test, sleep and branch back while not done; end.
        let asm = "k:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\
                   .LBB0_1:\n\tds_read_b64 v[2:3], v0\n\tv_cmp_eq_u64 vcc, v[0:1], v[2:3]\n\
                   \ts_cbranch_vccz .LBB0_3\n\ts_sleep 1\n\ts_branch .LBB0_1\n\
                   .LBB0_3:\n\ts_endpgm\n";
        assert_eq!(count(asm), Some(5));
        // A poll only reachable over the back-edge: the loop body runs twice.
        let asm = "k:\n.LBB0_1:\n\tds_read_b64 v[2:3], v0\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\
                   \ts_cmp_lg_u32 s0, 0\n\ts_cbranch_scc0 .LBB0_1\n\ts_endpgm\n";
        assert_eq!(count(asm), Some(9));
    }

    #[test]
    fn unknown_labels_give_no_path() {
        let asm = "k:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\ts_branch .LBB9_9\n\tds_read_b64 v[2:3], v0\n\ts_endpgm\n";
        assert_eq!(count(asm), None);
    }

    #[test]
    fn sass_branches_exits_and_native_arrivals() {
        // sm_90 native arrive_and_wait as cuobjdump lists it.
        let listing: Vec<(u64, String)> = [
            (0x00, "LDC R1, c[0x0][0x28]"),
            (0x10, "S2UR UR5, SR_CgaCtaId"),
            (0x20, "UMOV UR4, 0x400"),
            (0x30, "ULEA UR4, UR5, UR4, 0x18"),
            (0x40, "SYNCS.ARRIVE.TRANS64.A1T0 R2, [UR4], RZ"),
            (0x50, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3"),
            (0x60, "@!P0 BRA 0x80"),
            (0x70, "EXIT"),
            (0x80, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3"),
            (0x90, "@!P0 BRA 0x80"),
            (0xa0, "BRA 0x70"),
            (0xb0, "BRA 0xb0"),
        ]
        .into_iter()
        .map(|(a, i)| (a, i.to_owned()))
        .collect();
        assert_eq!(sass(&listing).map(|p| p.count()), Some(8));
        // A predicated EXIT may end the walk; so may the plain one after it.
        let listing: Vec<(u64, String)> =
            [(0x0, "ATOMS.ADD R0, [UR4], R1"), (0x10, "LDS R2, [UR4]"), (0x20, "@P0 EXIT"), (0x30, "EXIT")]
                .into_iter()
                .map(|(a, i)| (a, i.to_owned()))
                .collect();
        assert_eq!(sass(&listing).map(|p| p.count()), Some(3));
    }

    #[test]
    fn a_sass_branch_to_a_left_out_nop_lands_on_the_next_instruction() {
        // sm_80's __syncwarp: converged threads skip the call to the pad after it (a NOP,
        // which the listing leaves out).
        let listing: Vec<(u64, String)> = [
            (0x00, "ATOM.E.ADD.64.STRONG.SM P0, R6, [R2.64], R6"),
            (0x10, "BRA.CONV UR6, 0x40"),
            (0x20, "MOV R2, 0x40"),
            (0x30, "CALL.REL.NOINC 0x80"),
            (0x50, "LDS.64 R6, [RZ]"),
            (0x60, "EXIT"),
            (0x80, "WARPSYNC R3"),
            (0x90, "RET.REL.NODEC R2 0x0"),
        ]
        .into_iter()
        .map(|(a, i)| (a, i.to_owned()))
        .collect();
        let path = sass(&listing).expect("a fast path through the pad");
        assert_eq!(path.count(), 4, "{:?}", path.instructions);
        assert_eq!(path.instructions[2], "LDS.64 R6, [RZ]");
    }

    #[test]
    fn unlisted_sass_targets_before_one_instruction_and_past_the_end() {
        let listing =
            |items: &[(u64, &str)]| -> Vec<(u64, String)> { items.iter().map(|&(a, i)| (a, i.to_owned())).collect() };
        // Two pads (0x30, 0x40) in front of the poll: both branches land on it.
        let two = listing(&[
            (0x00, "ATOMS.ADD R0, [UR4], R1"),
            (0x10, "@P0 BRA 0x30"),
            (0x20, "BRA 0x40"),
            (0x50, "LDS R2, [UR4]"),
            (0x60, "EXIT"),
        ]);
        assert_eq!(sass(&two).map(|p| p.count()), Some(4)); // atomic, @P0 BRA (taken), poll, EXIT
                                                            // The same with only the second pad's branch on the way.
        let second = listing(&[
            (0x00, "ATOMS.ADD R0, [UR4], R1"),
            (0x10, "BRA 0x40"),
            (0x20, "BRA 0x30"),
            (0x50, "LDS R2, [UR4]"),
            (0x60, "EXIT"),
        ]);
        assert_eq!(sass(&second).map(|p| p.count()), Some(4));
        // A target past the last instruction names nothing: no fast path, as before.
        let past =
            listing(&[(0x00, "ATOMS.ADD R0, [UR4], R1"), (0x10, "BRA 0x80"), (0x20, "LDS R2, [UR4]"), (0x30, "EXIT")]);
        assert_eq!(sass(&past).map(|p| p.count()), None);
    }

    fn sleep_reaches_rmw(asm: &str) -> bool {
        amd_reaches(asm, |i| i.starts_with("s_sleep"), |i| i.starts_with("ds_add_rtn")).is_some()
    }

    #[test]
    fn reaches_follows_the_structurizers_flags() {
        // A wait loop, then a flow block that enters the publish only where s4 is set; s4
        // is cleared on the way, so no wave goes from the loop to the publish.
        let guarded = "k:\n\ts_mov_b32 s4, 0\n.LBB0_1:\n\ts_sleep 1\n\tds_read_b64 v[2:3], v0\n\
                       \ts_cbranch_scc1 .LBB0_1\n\ts_and_b32 vcc_lo, exec_lo, s4\n\ts_cbranch_vccz .LBB0_2\n\
                       \tds_add_rtn_u64 v[0:1], v0, v[0:1]\n.LBB0_2:\n\ts_endpgm\n";
        assert!(!sleep_reaches_rmw(guarded));
        // The same with s4 set: the publish follows the wait.
        assert!(sleep_reaches_rmw(&guarded.replace("s_mov_b32 s4, 0", "s_mov_b32 s4, -1")));
        // A flag the model cannot know (data) lets the branch go either way.
        assert!(sleep_reaches_rmw(&guarded.replace("s_mov_b32 s4, 0", "s_load_dword s4, s[0:1], 0x0")));
    }

    #[test]
    fn sleeping_poll_is_the_cycle_through_the_longest_sleep() {
        // A wait loop: poll, test, then either s_sleep 1 (the first polls) or s_sleep 8.
        let asm = "k:\n.LBB0_1:\n\tds_read_b64 v[2:3], v0\n\ts_cmp_lt_i32 s0, 0\n\ts_cbranch_scc1 .LBB0_4\n\
                   \ts_cmp_lt_u32 s2, 12\n\ts_cbranch_scc1 .LBB0_3\n\ts_sleep 8\n\ts_branch .LBB0_1\n\
                   .LBB0_3:\n\ts_sleep 1\n\ts_branch .LBB0_1\n.LBB0_4:\n\ts_endpgm\n";
        let path = amd_sleeping_poll(asm).expect("a cycle");
        assert_eq!(
            path.instructions,
            [
                "s_cmp_lt_i32 s0, 0",
                "s_cbranch_scc1 .LBB0_4",
                "s_cmp_lt_u32 s2, 12",
                "s_cbranch_scc1 .LBB0_3",
                "s_sleep 8",
                "s_branch .LBB0_1",
                "ds_read_b64 v[2:3], v0"
            ]
        );
        // gfx12's s_sleep_var counts as the longest, here on the taken branch; no sleep, no
        // cycle.
        let var = amd_sleeping_poll(&asm.replace("s_sleep 1", "s_sleep_var s3")).expect("a cycle");
        assert_eq!(var.instructions[4], "s_sleep_var s3");
        assert_eq!(amd_sleeping_poll(&asm.replace("s_sleep 8", "s_nop 0").replace("s_sleep 1", "s_nop 0")), None);
    }
}
