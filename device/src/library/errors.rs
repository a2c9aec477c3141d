//! Device errors: `vks_raise` (and `vks_flush_errors` where the driver caps
//! loops) and the loop-cap check run before every return of an entry point.

use std::fmt::Write as _;

use super::LibraryConfig;

/// Called by the SPIR-V pass before every return of the entry point where the
/// driver caps loops: a loop of two iterations that the compiler cannot count
/// (the control region's magic word is VKS_CONTROL_MAGIC) runs only one once the cap has
/// been reached, and then ERR_LOOPS_CUT is raised. The SPIR-V pass leaves naga's
/// loop bound in this loop (see device/src/pass.rs).
///
/// Nothing in WGSL calls it, so an entry point of the library's own,
/// `vks_keep_alive`, does: it keeps the check (and what it uses) through the
/// linker's removal of unreachable code, and the linker drops that entry point
/// afterwards.
pub(super) const LOOP_CHECK: &str = "@compute @workgroup_size(1)
fn vks_keep_alive() { vks_loop_check(); }
fn vks_loop_check() {
    let two = 2u + vks_volatile_load_own(VKS_CTRL_MAGIC) - VKS_CONTROL_MAGIC;
    var i = 0u;
    loop {
        i += 1u;
        if i >= two { break; }
    }
    if i < 2u { vks_raise(VKS_ERR_LOOPS_CUT, vks_my_pe(), 0u); }
    vks_flush_errors();
}
";

/// `vks_raise(bits, pe, addr)`: device error `bits` for this PE's control
/// region (the first error names `pe` and `addr`). It writes the error words
/// directly (the accessors call it, so it cannot call them: WGSL has no
/// recursion), except where the driver caps loops (llvmpipe): there it notes
/// the error in this invocation's private `vks_err`, and `vks_loop_check`,
/// which the SPIR-V pass calls before every return of every entry point,
/// writes it once. llvmpipe expands every atomic into a branch per lane, and
/// the three atomics of a raise inlined at every check made kernels with
/// many calls compile about twice as slowly. The host reads the error words
/// once the kernel is done, so an error written at the invocation's end is
/// seen the same; an invocation that never returns has its loops cut by the
/// driver, and then returns.
pub(super) fn raise(s: &mut String, cfg: &LibraryConfig) {
    let me = "vks_a_0_0";
    let write = |bits: &str, pe: &str, addr: &str| {
        format!(
            "if atomicOr(&{me}[VKS_CTRL_ERROR], {bits}) == 0u {{
        atomicStore(&{me}[VKS_CTRL_ERROR_PE], {pe});
        atomicStore(&{me}[VKS_CTRL_ERROR_ADDR], {addr});
    }}"
        )
    };
    if !cfg.loop_cap {
        let _ = writeln!(
            s,
            "fn vks_raise(bits: u32, pe: u32, addr: u32) {{\n    {}\n}}",
            write("bits", "pe", "addr")
        );
        return;
    }
    let _ = writeln!(
        s,
        "// This invocation's first error (bits, pe, addr), for vks_flush_errors.
var<private> vks_err: vec3<u32>;
fn vks_raise(bits: u32, pe: u32, addr: u32) {{
    vks_err = select(vks_err, vec3<u32>(0u, pe, addr), vks_err.x == 0u);
    vks_err.x |= bits;
}}
fn vks_flush_errors() {{
    if vks_err.x != 0u {{
        {}
        vks_err = vec3<u32>();
    }}
}}",
        write("vks_err.x", "vks_err.y", "vks_err.z")
    );
}

#[cfg(test)]
mod tests {
    use crate::library::library_source;
    use crate::library::tests::cfg;

    /// Where the driver caps loops, a raise is noted in the invocation's
    /// private `vks_err` (no atomics at each check) and written once by
    /// `vks_loop_check`, which runs before every return of every entry
    /// point; elsewhere it writes the error words at once.
    #[test]
    fn raises_are_written_once_per_invocation_where_loops_are_capped() {
        let body = |src: &str, f: &str| {
            src.split(&format!("fn {f}("))
                .nth(1)
                .and_then(|b| b.split("\n}\n").next())
                .unwrap_or_else(|| panic!("{f}"))
                .to_string()
        };
        let mut c = cfg(2, 1 << 20, 128 << 20);
        c.loop_cap = true;
        let src = library_source(&c);
        assert!(!body(&src, "vks_raise").contains("atomic"));
        assert!(body(&src, "vks_flush_errors")
            .contains("atomicOr(&vks_a_0_0[VKS_CTRL_ERROR], vks_err.x)"));
        assert!(body(&src, "vks_loop_check").ends_with("vks_flush_errors();"));
        c.loop_cap = false;
        let src = library_source(&c);
        assert!(body(&src, "vks_raise").contains("atomicOr(&vks_a_0_0[VKS_CTRL_ERROR], bits)"));
        assert!(!src.contains("vks_flush_errors") && !src.contains("fn vks_loop_check("));
    }
}
