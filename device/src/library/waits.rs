//! The wait loops' polls (`vks_poll_once`, `vks_poll_many`, capped polls) and
//! the waits' announcements to the host's throttle (`vks_wait_begin`/`_end`).

use std::fmt::Write as _;

use super::heap::own_word_fn;
use super::{LibraryConfig, CAPPED_DELAY_STEPS};

/// `vks_poll_many`: [`LibraryConfig::polls_per_iteration`] tests of a wait
/// condition in straight-line, branch-free code (no nested ifs: llvmpipe
/// miscompiles nesting deeper than 80), so that a wait spends few loop iterations
/// where the driver caps them.
///
/// Where the driver caps loops, each poll is an atomic add of 0 to the word
/// (`vks_poll_own`), and the polls are spaced by chains of square roots
/// ([`capped_polls`]), so the budget of 65535 iterations spans about 130 ms
/// of CPU time: plain loads leave a fast CPU through the budget in a few
/// milliseconds, which cuts staged waits short, and many atomic polls per
/// iteration make large kernels slow to compile (benches/RESULTS.md, "Capped
/// waits and compile").
pub(super) fn poll_many(s: &mut String, cfg: &LibraryConfig) {
    let me = 0;
    let poll = if cfg.loop_cap {
        own_word_fn(s, cfg, "vks_poll_own", |w| {
            format!("atomicAdd(&vks_a_{me}_{w}, 0u)")
        });
        "vks_poll_own"
    } else {
        "vks_volatile_load_own"
    };
    // One bare poll: a wait's first test, which costs every invocation that
    // passes the wait, waiting or not (llvmpipe runs a workgroup's code once per
    // SIMD row of 8 invocations, masked rows included, so a padded
    // vks_poll_many there would cost every row its whole set of polls).
    let _ = writeln!(
        s,
        "fn vks_poll_once(addr: u32, c: VksCond) -> bool {{ return vks_cond_bit(c, {poll}(addr)) != 0u; }}"
    );
    s.push_str("fn vks_poll_many(addr: u32, c: VksCond) -> bool {\n    var hit = 0u;\n");
    if cfg.loop_cap {
        s.push_str(&capped_polls(
            &format!("vks_w_{me}_0[VKS_CTRL_MAGIC]"),
            |a| format!("{poll}({a})"),
            "addr",
            cfg.polls_per_iteration(),
            "    ",
        ));
    } else {
        for _ in 0..cfg.polls_per_iteration() {
            let _ = writeln!(s, "    hit |= vks_cond_bit(c, {poll}(addr));");
        }
    }
    s.push_str("    return hit != 0u;\n}\n");
}

/// One iteration of a wait loop where the driver caps loop iterations: `polls`
/// tests `hit |= vks_cond_bit(c, POLL)` of word `addr` (`poll` writes the
/// access for a word-address expression), each followed by a dependent chain
/// of [`CAPPED_DELAY_STEPS`] square roots, so that an iteration lasts about
/// 2 µs and the budget of 65535 iterations about 130 ms of CPU time, while the
/// code stays short to compile (a chain of vector square roots is straight-line
/// code; polls are atomics that llvmpipe expands per lane, so many per
/// iteration make a large kernel several times slower to compile).
///
/// `magic_word` reads the control region's magic word, which holds
/// `VKS_CONTROL_MAGIC` at run time: `zero` is 0 then but unknown to the compiler, so
/// neither the chain nor its use in the next poll's address folds away, and
/// each poll waits for the chain before it. Declares `zero` and `d`; the
/// caller declares `hit`.
pub(crate) fn capped_polls(
    magic_word: &str,
    poll: impl Fn(&str) -> String,
    addr: &str,
    polls: u32,
    indent: &str,
) -> String {
    let mut s = format!(
        "{indent}let zero = {magic_word} - VKS_CONTROL_MAGIC;\n{indent}var d = f32(zero) + 2.0;\n"
    );
    for _ in 0..polls {
        let _ = writeln!(
            s,
            "{indent}hit |= vks_cond_bit(c, {});",
            poll(&format!("{addr} + (bitcast<u32>(d) & zero)"))
        );
        for _ in 0..CAPPED_DELAY_STEPS {
            let _ = writeln!(s, "{indent}d = sqrt(d + 1.0);");
        }
    }
    s
}

/// `vks_wait_begin(addr, cond, value)` / `vks_wait_end()`: where the driver caps
/// loops (llvmpipe, whose "device" is the host's CPU threads), a wait that did
/// not end at its first polls says so in this PE's control header (`waiting`,
/// `wait_seq`, and the condition as a hint: `wait_addr`, `wait_cond`,
/// `wait_value`). The host's wait throttle (`vkshmem_host::throttle`) then puts
/// the driver's threads to sleep most of the time until the wait ends, so that a
/// wait spends its loop iterations slowly and lasts seconds, and the CPU goes to
/// the PEs it waits for. Elsewhere both are empty.
pub(super) fn wait_announce(s: &mut String, cfg: &LibraryConfig) {
    if !cfg.loop_cap {
        s.push_str(
            "fn vks_wait_begin(addr: u32, cond: u32, value: u32) {}\nfn vks_wait_end() {}\n",
        );
        return;
    }
    let me = "vks_a_0_0";
    let _ = write!(
        s,
        "fn vks_wait_begin(addr: u32, cond: u32, value: u32) {{
    atomicAdd(&{me}[VKS_CTRL_WAITING], 1u);
    atomicStore(&{me}[VKS_CTRL_WAIT_ADDR], addr);
    atomicStore(&{me}[VKS_CTRL_WAIT_COND], cond);
    atomicStore(&{me}[VKS_CTRL_WAIT_VALUE], value);
    atomicAdd(&{me}[VKS_CTRL_WAIT_SEQ], 1u);
}}
fn vks_wait_end() {{
    atomicSub(&{me}[VKS_CTRL_WAITING], 1u);
}}
"
    );
}
