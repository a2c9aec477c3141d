//! The device-initiated one-sided API: put and get (per-thread and
//! `_work_group` forms, typed and mem, strided), put-with-signal, the signal
//! calls and the point-to-point waits and tests, generated from the type
//! tables of [`crate::collectives`].
//!
//! # Addresses and values
//! As in the rest of the library: bulk calls (`putmem`, `getmem`, the typed
//! `put`/`get`, `iput`/`iget`) take *byte* addresses of symmetric objects
//! (`SymSlice::device_byte_addr` on the host); word calls (signals, `test`,
//! `wait_until_*`) take *word* addresses (`SymSlice::device_addr`), like
//! `shmem_<T>_p` and the atomics. The source of a put and the dest of a get
//! are in this PE's heap.
//!
//! A signal is OpenSHMEM's 64-bit word (8-byte aligned: word address even).
//! Device code updates it with 32-bit atomics, so that signals work on
//! devices without 64-bit atomics too:
//! `SHMEM_SIGNAL_SET` makes it the (32-bit) value, `SHMEM_SIGNAL_ADD` adds a
//! 32-bit value and carries into the high word. A reader never sees a value
//! below the one before an add, except across a carry out of the low 32 bits;
//! `shmem_signal_fetch` and `shmem_signal_wait_until` read the low 32 bits.
//! Host calls (`Context::put_signal`) update the whole 64-bit word.
//!
//! # Completion and ordering
//! - A put to a PE this device reaches directly is done with plain stores by
//!   the calling invocation (or spread over the workgroup); to a PE reached
//!   through the proxy it is one bulk request, made by invocation 0, that
//!   returns once the bytes have landed. So every put is complete at its
//!   target, in the device's memory model, when the call returns; the `_nbi`
//!   forms are the same calls. Gets return with the data in place.
//! - `put_signal` orders the data before the signal: a release fence (direct)
//!   or the landed bulk request (proxy), then an atomic update of the signal.
//!   The work_group form copies with the whole group, meets at a workgroup
//!   barrier, then invocation 0 updates the signal.
//! - `shmem_fence`/`shmem_quiet` (in the fixed library) order and complete
//!   what went through the proxy.
//!
//! Bad input raises the library's error bits, which the host turns into a
//! typed error when the kernel ends: a PE outside the job (`ERR_BAD_PE`), a
//! range outside the heap or a misaligned signal (`ERR_BAD_ADDRESS`), an
//! unknown signal operation or comparison (`ERR_BAD_ARGUMENT`).

use std::fmt::Write as _;

use crate::collectives::{kind, TYPES};

/// The mem forms and the signal and wait calls, always part of the library.
const FIXED: &str = "
// ---- one-sided communication (generated: device/src/rma.rs) ----
const SHMEM_SIGNAL_SET: u32 = 0u;
const SHMEM_SIGNAL_ADD: u32 = 1u;

// PE `pe` is in the job and bytes [b, b + n) lie in the heap; raises otherwise.
fn vks_rma_ok(pe: u32, b: u32, n: u32) -> bool {
    if pe >= vks_n_pes() {
        vks_raise(VKS_ERR_BAD_PE, pe, b >> 2u);
        return false;
    }
    if n != 0u && (n - 1u > 0xffffffffu - b || ((b + n - 1u) >> 2u) >= vks_heap_words()) {
        vks_raise(VKS_ERR_BAD_ADDRESS, pe, b >> 2u);
        return false;
    }
    return true;
}

// `n` bytes of this PE's `source` to PE `pe` at `dest`, spread over `nth`
// invocations (tid: this one's number); through the proxy, invocation 0
// makes one bulk request that returns when the bytes have landed.
fn vks_put_bytes(dest: u32, source: u32, n: u32, pe: u32, tid: u32, nth: u32) {
    if !vks_rma_ok(pe, dest, n) || !vks_rma_ok(vks_my_pe(), source, n) || n == 0u {
        return;
    }
    if vks_is_direct(pe) {
        vks_copy_out(pe, dest, source, n, tid, nth);
    } else if tid == 0u {
        vks_px_put(pe, dest, source, n);
    }
}

// `n` bytes of PE `pe`'s `source` into this PE's `dest` (vks_copy_bytes takes
// the proxy for a PE not reached directly).
fn vks_get_bytes(dest: u32, source: u32, n: u32, pe: u32, tid: u32, nth: u32) {
    if !vks_rma_ok(pe, source, n) || !vks_rma_ok(vks_my_pe(), dest, n) {
        return;
    }
    vks_copy_bytes(VKS_SELF, dest, pe, source, n, tid, nth);
}

fn shmem_putmem(dest: u32, source: u32, nbytes: u32, pe: u32) {
    vks_put_bytes(dest, source, nbytes, pe, 0u, 1u);
}
fn shmem_putmem_nbi(dest: u32, source: u32, nbytes: u32, pe: u32) {
    vks_put_bytes(dest, source, nbytes, pe, 0u, 1u);
}
fn shmem_getmem(dest: u32, source: u32, nbytes: u32, pe: u32) {
    vks_get_bytes(dest, source, nbytes, pe, 0u, 1u);
}
fn shmem_getmem_nbi(dest: u32, source: u32, nbytes: u32, pe: u32) {
    vks_get_bytes(dest, source, nbytes, pe, 0u, 1u);
}

// Work-group forms: every invocation calls, in uniform control flow, with the
// same arguments; on return the whole group's copy is complete.
fn shmemx_putmem_work_group(dest: u32, source: u32, nbytes: u32, pe: u32, local_index: u32, group_size: u32) {
    vks_put_bytes(dest, source, nbytes, pe, local_index, group_size);
    vks_fence_acq_rel();
    workgroupBarrier();
}
fn shmemx_putmem_nbi_work_group(dest: u32, source: u32, nbytes: u32, pe: u32, local_index: u32, group_size: u32) {
    shmemx_putmem_work_group(dest, source, nbytes, pe, local_index, group_size);
}
fn shmemx_getmem_work_group(dest: u32, source: u32, nbytes: u32, pe: u32, local_index: u32, group_size: u32) {
    vks_get_bytes(dest, source, nbytes, pe, local_index, group_size);
    vks_fence_acq_rel();
    workgroupBarrier();
}
fn shmemx_getmem_nbi_work_group(dest: u32, source: u32, nbytes: u32, pe: u32, local_index: u32, group_size: u32) {
    shmemx_getmem_work_group(dest, source, nbytes, pe, local_index, group_size);
}

// Strided: element i (of `es` bytes) of this PE's `source + i * sst * es` to
// PE `pe` at `dest + i * dst * es` (strides in elements, > 0).
fn vks_iput(dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, es: u32, pe: u32) {
    if !vks_arg_ok(dst > 0u && sst > 0u) || nelems == 0u {
        return;
    }
    let span = nelems - 1u;
    if !vks_rma_ok(pe, dest, span * dst * es + es) || !vks_rma_ok(vks_my_pe(), source, span * sst * es + es) {
        return;
    }
    if !vks_is_direct(pe) {
        vks_px_iput(pe, dest, dst * es, source, sst * es, es, nelems);
        return;
    }
    for (var i = 0u; i < nelems; i++) {
        vks_copy_bytes(pe, dest + i * dst * es, VKS_SELF, source + i * sst * es, es, 0u, 1u);
    }
}

fn vks_iget(dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, es: u32, pe: u32) {
    if !vks_arg_ok(dst > 0u && sst > 0u) || nelems == 0u {
        return;
    }
    let span = nelems - 1u;
    if !vks_rma_ok(pe, source, span * sst * es + es) || !vks_rma_ok(vks_my_pe(), dest, span * dst * es + es) {
        return;
    }
    if !vks_is_direct(pe) {
        vks_px_iget(dest, dst * es, pe, source, sst * es, es, nelems);
        return;
    }
    for (var i = 0u; i < nelems; i++) {
        vks_copy_bytes(VKS_SELF, dest + i * dst * es, pe, source + i * sst * es, es, 0u, 1u);
    }
}

// A signal word (word address `sig`, even) of PE `pe` is valid; raises otherwise.
fn vks_signal_ok(sig: u32, op: u32, pe: u32) -> bool {
    if !vks_arg_ok(op <= SHMEM_SIGNAL_ADD) {
        return false;
    }
    if (sig & 1u) != 0u || sig >= vks_heap_words() {
        vks_raise(VKS_ERR_BAD_ADDRESS, pe, sig);
        return false;
    }
    return vks_rma_ok(pe, sig << 2u, 8u);
}

// Updates PE `pe`'s signal after everything this invocation wrote before
// (release). Read-modify-writes, which also keep earlier plain stores above
// them where fences are left out (see vks_team_sync); to a PE reached through
// the proxy, stores posted in order after the landed data.
fn vks_signal_update(sig: u32, signal: u32, op: u32, pe: u32) {
    vks_fence_any();
    if op == SHMEM_SIGNAL_ADD {
        let old = vks_fetch_add(pe, sig, signal);
        if old + signal < old {
            vks_fetch_add(pe, sig + 1u, 1u);
        }
    } else if vks_is_direct(pe) {
        vks_swap(pe, sig + 1u, 0u);
        vks_swap(pe, sig, signal);
    } else {
        vks_relaxed_store(pe, sig + 1u, 0u);
        vks_relaxed_store(pe, sig, signal);
    }
}

// putmem, then PE `pe`'s signal at word `sig` updated by `sig_op` with
// `signal` once the data is in place there.
fn shmem_putmem_signal(dest: u32, source: u32, nbytes: u32, sig: u32, signal: u32, sig_op: u32, pe: u32) {
    if !vks_signal_ok(sig, sig_op, pe) {
        return;
    }
    vks_put_bytes(dest, source, nbytes, pe, 0u, 1u);
    vks_signal_update(sig, signal, sig_op, pe);
}
fn shmem_putmem_signal_nbi(dest: u32, source: u32, nbytes: u32, sig: u32, signal: u32, sig_op: u32, pe: u32) {
    shmem_putmem_signal(dest, source, nbytes, sig, signal, sig_op, pe);
}
fn shmemx_putmem_signal_work_group(dest: u32, source: u32, nbytes: u32, sig: u32, signal: u32, sig_op: u32, pe: u32, local_index: u32, group_size: u32) {
    let ok = vks_signal_ok(sig, sig_op, pe);
    if ok {
        vks_put_bytes(dest, source, nbytes, pe, local_index, group_size);
    }
    vks_fence_acq_rel();
    workgroupBarrier();
    if ok && local_index == 0u {
        vks_signal_update(sig, signal, sig_op, pe);
    }
    workgroupBarrier();
}
fn shmemx_putmem_signal_nbi_work_group(dest: u32, source: u32, nbytes: u32, sig: u32, signal: u32, sig_op: u32, pe: u32, local_index: u32, group_size: u32) {
    shmemx_putmem_signal_work_group(dest, source, nbytes, sig, signal, sig_op, pe, local_index, group_size);
}

// The low 32 bits of this PE's signal at word `sig`.
fn shmem_signal_fetch(sig: u32) -> u32 {
    if !vks_signal_ok(sig, 0u, vks_my_pe()) {
        return 0u;
    }
    let v = vks_volatile_load_own(sig);
    vks_fence_any();
    return v;
}

// Waits until this PE's signal at word `sig` compares `cmp` (SHMEM_CMP_*) with
// `value` (the low 32 bits, unsigned) and returns the value it read then.
fn shmem_signal_wait_until(sig: u32, cmp: u32, value: u32) -> u32 {
    if !vks_signal_ok(sig, 0u, vks_my_pe()) {
        return 0u;
    }
    // The satisfying value: read once the wait has seen it, and waited on
    // again if a later update moved it out of the condition meanwhile.
    var v = 0u;
    var ok = true;
    for (var k = 0u; k < 4u && ok; k++) {
        ok = vks_wait_cmp(sig, cmp, value, false);
        v = vks_volatile_load_own(sig);
        if vks_cond_bit(vks_cond(cmp, value, false), v) != 0u {
            break;
        }
    }
    return v;
}

// The work_group form: invocation 0 waits, then every invocation of the group
// sees what was written before the signal (acquire) and gets its value.
fn shmemx_signal_wait_until_work_group(sig: u32, cmp: u32, value: u32, local_index: u32) -> u32 {
    storageBarrier();
    if local_index == 0u {
        vks_wg_result = shmem_signal_wait_until(sig, cmp, value);
    }
    storageBarrier();
    let v = workgroupUniformLoad(&vks_wg_result);
    vks_fence_acq_rel();
    return v;
}
";

/// The typed forms for every TYPENAME: put/get (per-thread, `_nbi`,
/// `_work_group`) and strided iput/iget as byte copies of the type's size;
/// and, for 32-bit integer types, `test` and the `wait_until`/`test` vector
/// families over this PE's words. Generated only when `uses` mentions them
/// (`None`: all).
fn typed(s: &mut String, uses: Option<&str>) {
    let wanted = |name: &str| uses.map_or(true, |u| u.contains(name));
    for ty in TYPES {
        let n = ty.name;
        let k = kind(ty.kind).expect("a kind of KINDS");
        let es = k.bytes;
        for (dir, call) in [("put", "vks_put_bytes"), ("get", "vks_get_bytes")] {
            for nbi in ["", "_nbi"] {
                let f = format!("shmem_{n}_{dir}{nbi}");
                if wanted(&f) {
                    let _ = writeln!(
                        s,
                        "fn {f}(dest: u32, source: u32, nelems: u32, pe: u32) {{ {call}(dest, source, nelems * {es}u, pe, 0u, 1u); }}"
                    );
                }
                let f = format!("shmemx_{n}_{dir}{nbi}_work_group");
                if wanted(&f) {
                    let _ = writeln!(
                        s,
                        "fn {f}(dest: u32, source: u32, nelems: u32, pe: u32, local_index: u32, group_size: u32) {{ shmemx_{dir}mem_work_group(dest, source, nelems * {es}u, pe, local_index, group_size); }}"
                    );
                }
            }
            let f = format!("shmem_{n}_i{dir}");
            if wanted(&f) {
                let _ = writeln!(
                    s,
                    "fn {f}(dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, pe: u32) {{ vks_i{dir}(dest, source, dst, sst, nelems, {es}u, pe); }}"
                );
            }
        }
        let f = format!("shmem_{n}_put_signal");
        if wanted(&f) {
            let _ = writeln!(
                s,
                "fn {f}(dest: u32, source: u32, nelems: u32, sig: u32, signal: u32, sig_op: u32, pe: u32) {{ shmem_putmem_signal(dest, source, nelems * {es}u, sig, signal, sig_op, pe); }}"
            );
        }
        let f = format!("shmemx_{n}_put_signal_work_group");
        if wanted(&f) {
            let _ = writeln!(
                s,
                "fn {f}(dest: u32, source: u32, nelems: u32, sig: u32, signal: u32, sig_op: u32, pe: u32, local_index: u32, group_size: u32) {{ shmemx_putmem_signal_work_group(dest, source, nelems * {es}u, sig, signal, sig_op, pe, local_index, group_size); }}"
            );
        }
        if es == 4 && !k.float {
            waits(s, n, k.signed, &wanted);
        }
    }
}

/// `test` and the vector waits and tests of one 32-bit integer TYPENAME.
/// `ivars` is the word address of `nelems` words of this PE; `status` the
/// word address of `nelems` words of this PE whose nonzero entries leave
/// their ivar out, or 0 for none (word 0 is the control region, never an
/// object); `values` (the `_vector` forms) holds one comparison value per
/// ivar; `indices` (the `_some` forms) receives the satisfied indices.
///
/// The loops test without branches (`&`, `select`, own-heap loads that need
/// no switch over PEs): llvmpipe miscompiles deeply nested branches, and an
/// accessor's switch inlined under short-circuit conditions in a loop ended
/// kernels early on 8 PEs.
fn waits(s: &mut String, n: &str, signed: bool, wanted: &dyn Fn(&str) -> bool) {
    let t = if signed { "i32" } else { "u32" };
    let to = if signed { "bitcast<u32>" } else { "" };
    let sg = if signed { "true" } else { "false" };
    // int32 and uint32 have theirs in the library's typed part.
    let f = format!("shmem_{n}_wait_until");
    if !matches!(n, "int32" | "uint32") && wanted(&f) {
        let _ = writeln!(
            s,
            "fn {f}(ivar: u32, cmp: u32, value: {t}) -> bool {{ return vks_wait_cmp(ivar, cmp, {to}(value), {sg}); }}"
        );
    }
    let f = format!("shmem_{n}_test");
    if wanted(&f) {
        let _ = writeln!(
            s,
            "fn {f}(ivar: u32, cmp: u32, value: {t}) -> i32 {{
    if !vks_vector_ok(ivar, 1u, 0u, 0u, cmp) {{
        return 0;
    }}
    let hit = vks_test(ivar, cmp, {to}(value), {sg});
    vks_fence_any();
    return hit;
}}"
        );
    }
    // (suffix, the value of element i, the parameter, the values' address)
    for (vec, value, vparam, values) in [
        ("", format!("{to}(value)"), format!("value: {t}"), "0u"),
        (
            "_vector",
            "vks_volatile_load_own(values + i)".to_string(),
            "values: u32".to_string(),
            "values",
        ),
    ] {
        let check = format!("vks_vector_ok(ivars, nelems, status, {values}, cmp)");
        let f = format!("shmem_{n}_wait_until_all{vec}");
        if wanted(&f) {
            let _ = writeln!(
                s,
                "fn {f}(ivars: u32, nelems: u32, status: u32, cmp: u32, {vparam}) {{
    var ok = {check};
    for (var i = 0u; i < nelems && ok; i++) {{
        if !vks_masked(status, i) {{
            ok = vks_wait_cmp(ivars + i, cmp, {value}, {sg});
        }}
    }}
}}"
            );
        }
        for (form, ret, none, body) in [
            (
                "test_all",
                "i32",
                "0",
                "var all = 1;\n    for (var i = 0u; i < nelems; i++) {\n        all &= select(vks_test(ivars + i, cmp, VALUE, SIGNED), 1, vks_masked(status, i));\n    }\n    vks_fence_any();\n    return all;",
            ),
            (
                "test_any",
                "u32",
                "0xffffffffu",
                "var found = 0xffffffffu;\n    for (var i = 0u; i < nelems; i++) {\n        let hit = (found == 0xffffffffu) & !vks_masked(status, i) & (vks_test(ivars + i, cmp, VALUE, SIGNED) != 0);\n        found = select(found, i, hit);\n    }\n    vks_fence_any();\n    return found;",
            ),
        ] {
            let f = format!("shmem_{n}_{form}{vec}");
            if wanted(&f) {
                let body = body.replace("VALUE", &value).replace("SIGNED", sg);
                let _ = writeln!(
                    s,
                    "fn {f}(ivars: u32, nelems: u32, status: u32, cmp: u32, {vparam}) -> {ret} {{\n    if !{check} {{\n        return {none};\n    }}\n    {body}\n}}"
                );
            }
        }
        // Waits for any: vks_wait_vector polls every unmasked ivar.
        let f = format!("shmem_{n}_wait_until_any{vec}");
        if wanted(&f) {
            let _ = writeln!(
                s,
                "fn {f}(ivars: u32, nelems: u32, status: u32, cmp: u32, {vparam}) -> u32 {{
    if !{check} {{
        return 0xffffffffu;
    }}
    return vks_wait_vector(ivars, nelems, status, cmp, {scalar}, {values}, {sg});
}}",
                scalar = if vec.is_empty() {
                    format!("{to}(value)")
                } else {
                    "0u".into()
                },
            );
        }
        let f = format!("shmem_{n}_wait_until_some{vec}");
        if wanted(&f) {
            let _ = writeln!(
                s,
                "fn {f}(ivars: u32, nelems: u32, indices: u32, status: u32, cmp: u32, {vparam}) -> u32 {{
    if !{check} || !vks_vector_ok(indices, nelems, 0u, 0u, cmp) {{
        return 0u;
    }}
    if vks_wait_vector(ivars, nelems, status, cmp, {scalar}, {values}, {sg}) == 0xffffffffu {{
        return 0u;
    }}
    return vks_test_some(ivars, nelems, indices, status, cmp, {scalar}, {values}, {sg});
}}",
                scalar = if vec.is_empty() { format!("{to}(value)") } else { "0u".into() },
            );
        }
        let f = format!("shmem_{n}_test_some{vec}");
        if wanted(&f) {
            let _ = writeln!(
                s,
                "fn {f}(ivars: u32, nelems: u32, indices: u32, status: u32, cmp: u32, {vparam}) -> u32 {{
    if !{check} || !vks_vector_ok(indices, nelems, 0u, 0u, cmp) {{
        return 0u;
    }}
    return vks_test_some(ivars, nelems, indices, status, cmp, {scalar}, {values}, {sg});
}}",
                scalar = if vec.is_empty() { format!("{to}(value)") } else { "0u".into() },
            );
        }
    }
}

/// The helpers the typed waits share.
const WAIT_HELPERS: &str = "
// 1 when this PE's word `ivar` compares `cmp` with `value` now, else 0 (no
// branches; the caller checked the arguments).
fn vks_test(ivar: u32, cmp: u32, value: u32, signed: bool) -> i32 {
    return i32(vks_cond_bit(vks_cond(cmp, value, signed), vks_volatile_load_own(ivar)));
}

// The comparison value of ivar i: `value`, or word i of `values` when not 0.
fn vks_value_of(value: u32, values: u32, i: u32) -> u32 {
    return select(value, vks_volatile_load_own(values + i), values != 0u);
}

// test_some: writes the indices of the unmasked ivars that satisfy the
// comparison to `indices` and returns how many.
fn vks_test_some(ivars: u32, nelems: u32, indices: u32, status: u32, cmp: u32, value: u32, values: u32, signed: bool) -> u32 {
    var found = 0u;
    for (var i = 0u; i < nelems; i++) {
        let hit = !vks_masked(status, i) & (vks_test(ivars + i, cmp, vks_value_of(value, values, i), signed) != 0);
        // A miss rewrites the next free index with itself: no branch.
        let at = indices + found;
        vks_volatile_store_own(at, select(vks_volatile_load_own(at), i, hit));
        found += u32(hit);
    }
    vks_fence_any();
    return found;
}

// Waits until some unmasked ivar satisfies the comparison and returns the
// first such index, or 0xffffffff when every ivar is masked (at once) or the
// wait gave up (ERR_ABORTED, or ERR_LOOPS_CUT where the driver caps loops:
// each round polls every ivar once, so a long wait there runs out sooner
// than a single-word wait).
fn vks_wait_vector(ivars: u32, nelems: u32, status: u32, cmp: u32, value: u32, values: u32, signed: bool) -> u32 {
    var live = 0u;
    for (var i = 0u; i < nelems; i++) {
        live += u32(!vks_masked(status, i));
    }
    if live == 0u {
        return 0xffffffffu;
    }
    var found = 0xffffffffu;
    var aborted = false;
    vks_wait_begin(ivars, cmp | select(0u, 256u, signed), value);
    loop {
        for (var i = 0u; i < nelems; i++) {
            let hit = (found == 0xffffffffu) & !vks_masked(status, i) & (vks_test(ivars + i, cmp, vks_value_of(value, values, i), signed) != 0);
            found = select(found, i, hit);
        }
        if found != 0xffffffffu {
            break;
        }
        if vks_aborting() {
            aborted = true;
            break;
        }
    }
    vks_wait_end();
    if found == 0xffffffffu {
        vks_raise(select(VKS_ERR_LOOPS_CUT, VKS_ERR_ABORTED, aborted), vks_my_pe(), ivars);
    }
    vks_fence_any();
    return found;
}

// Entry i of the status array at word `status` leaves its ivar out (0: none;
// then word i of the control region is read and ignored).
fn vks_masked(status: u32, i: u32) -> bool {
    return (status != 0u) & (vks_volatile_load_own(select(i, status + i, status != 0u)) != 0u);
}

// The words [a, a + n) of ivars, and of status and values when not 0, lie in
// this PE's heap, and `cmp` is a comparison; raises otherwise.
fn vks_vector_ok(a: u32, n: u32, status: u32, values: u32, cmp: u32) -> bool {
    if !vks_arg_ok(cmp <= SHMEM_CMP_LE) {
        return false;
    }
    let top = max(a, max(status, values));
    if n > vks_heap_words() || top > vks_heap_words() - n {
        vks_raise(VKS_ERR_BAD_ADDRESS, vks_my_pe(), top);
        return false;
    }
    return true;
}
";

/// The one-sided part of the device library for a kernel whose source is
/// `uses` (`None`: all of it).
pub fn device_rma(uses: Option<&str>) -> String {
    let mut s = String::from(FIXED);
    s.push_str(WAIT_HELPERS);
    typed(&mut s, uses);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::{library_source, LibraryConfig};

    fn cfg(proxy: bool) -> LibraryConfig {
        LibraryConfig {
            slots: 8,
            chunks: 1,
            max_binding_bytes: 1 << 27,
            int64: true,
            float64: true,
            int64_atomics: true,
            divergent_fences: true,
            loop_cap: false,
            row_lanes: 0,
            proxy,
            vec4_u64: false,
        }
    }

    /// The whole library, with every typed form, parses and validates, on a
    /// job reached directly and on one with proxied PEs.
    #[test]
    fn every_form_validates() {
        for c in [cfg(false), cfg(true)] {
            let src = format!(
                "{}\n@compute @workgroup_size(1) fn main() {{}}\n",
                library_source(&c)
            );
            crate::parse_validate(&src, "rma").unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn typed_forms_follow_the_type_table() {
        let s = device_rma(None);
        for ty in TYPES {
            for f in ["put", "get", "put_nbi", "iget", "put_signal"] {
                assert!(s.contains(&format!("fn shmem_{}_{f}(", ty.name)), "{f}");
            }
        }
        assert!(s.contains("fn shmem_int32_wait_until_all_vector("));
        assert!(s.contains("fn shmem_uint_test_some("));
        assert!(s.contains("fn shmem_int_wait_until_any_vector("));
        assert!(s.contains("fn shmem_uint32_wait_until_some("));
        assert!(!s.contains("fn shmem_float_test("));
        assert!(s.contains("fn shmem_double_get(dest: u32, source: u32, nelems: u32, pe: u32) { vks_get_bytes(dest, source, nelems * 8u"));
        // Only what a kernel names.
        let few = device_rma(Some("shmem_int_put(a, b, 1u, 1u)"));
        assert!(few.contains("fn shmem_int_put("));
        assert!(!few.contains("fn shmem_long_put("));
    }
}
