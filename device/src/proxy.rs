//! The device side of the proxy ring: how device code asks this PE's proxy
//! thread (`vkshmem_host::transport::proxy`) to reach a PE it has no binding
//! for (a PE on another device).
//!
//! The ring lives in the control region (`layout::ProxyEntry`, at
//! `layout::PROXY_RING_WORD`), so it is one definition for host and device,
//! the device reaches it through its own heap binding, and its waits are
//! ordinary device waits (abort word, wait throttle, loop cap). These
//! functions touch the ring through the binding directly, never through the
//! accessors: the accessors call them for a PE outside `direct`, and WGSL
//! forbids recursion.
//!
//! Word loads, atomics and bulk copies wait for their answer; stores are
//! posted (the proxy forwards them in ticket order, so a later request to the
//! same PE lands after them); `shmem_quiet` waits until every earlier request
//! has landed.

use std::fmt::Write as _;

use crate::library::LibraryConfig;

/// Polls per iteration of a proxy wait where the driver does not cap loops
/// (where it does: [`crate::library::CAPPED_POLLS_PER_ITERATION`], spaced).
const PROXY_POLLS: u32 = 8;

/// The ring's functions (or, without a proxy, the bulk entry points the
/// collectives name, raising `ERR_UNREACHABLE`).
pub(crate) fn ring_api(s: &mut String, cfg: &LibraryConfig) {
    if !cfg.proxy {
        s.push_str(
            "fn vks_px_get(d: u32, spe: u32, sb: u32, n: u32) { vks_raise(VKS_ERR_UNREACHABLE, spe, sb >> 2u); }
fn vks_px_put(dpe: u32, d: u32, sb: u32, n: u32) { vks_raise(VKS_ERR_UNREACHABLE, dpe, d >> 2u); }
fn vks_px_iget(d: u32, dst: u32, spe: u32, sb: u32, sst: u32, es: u32, count: u32) { vks_raise(VKS_ERR_UNREACHABLE, spe, sb >> 2u); }
fn vks_px_iput(dpe: u32, d: u32, dst: u32, sb: u32, sst: u32, es: u32, count: u32) { vks_raise(VKS_ERR_UNREACHABLE, dpe, d >> 2u); }
fn vks_px_reduce(team: u32, d: u32, sb: u32, nelems: u32, kind: u32, op: u32) { vks_raise(VKS_ERR_UNREACHABLE, vks_my_pe(), d >> 2u); }
fn vks_px_reduce_own(team: u32, d: u32, sb: u32, nelems: u32, kind: u32, op: u32) { vks_raise(VKS_ERR_UNREACHABLE, vks_my_pe(), d >> 2u); }
fn vks_px_quiet() {}
",
        );
        return;
    }
    let me = "vks_a_0_0";
    let polls = if cfg.loop_cap {
        crate::library::CAPPED_POLLS_PER_ITERATION
    } else {
        PROXY_POLLS
    };
    let waits = format!(
        "// Waits until ring word `addr` has reached `e` (wrapping), like vks_wait but
// touching the ring only through this PE's binding, polling as vks_poll_many
// does (drivers inline every call, and each proxied accessor holds two of
// these waits), announced as a proxy wait (condition bit 512): where the
// driver caps loops, the host's wait throttle then naps the driver's threads
// at once, which gives the proxy thread the CPU it needs to answer. False
// after raising ERR_ABORTED or ERR_LOOPS_CUT.
{}
// The same with one poll per iteration: an entry is almost always free at
// once (the ring is long), so this wait's code stays short.
{}",
        wait_fn("vks_px_wait", polls, me, cfg.loop_cap),
        wait_fn("vks_px_wait_free", 1, me, cfg.loop_cap)
    );
    let _ = write!(
        s,
        "const VKS_PX_NONE: u32 = 0xffffffffu;

{waits}// Claims the next ticket, waits for its entry to be free, fills it and posts
// it. Returns the entry's word address, or VKS_PX_NONE when the wait gave up.
fn vks_px_post(op: u32, pe: u32, addr: u32, src: u32, bytes: u32, value: u32, cmp: u32) -> u32 {{
    return vks_px_post_strided(op, pe, addr, src, bytes, value, cmp, 0u, 0u, 0u);
}}

fn vks_px_post_strided(op: u32, pe: u32, addr: u32, src: u32, bytes: u32, value: u32, cmp: u32, count: u32, sstride: u32, dstride: u32) -> u32 {{
    let t = atomicAdd(&{me}[VKS_CTRL_PROXY_HEAD], 1u);
    let e = VKS_PX_RING + (t % VKS_PX_SLOTS) * VKS_PX_WORDS;
    let lap = t & ~(VKS_PX_SLOTS - 1u);
    if !vks_px_wait_free(e + VKS_PX_SEQ, lap) {{
        return VKS_PX_NONE;
    }}
    atomicStore(&{me}[e + VKS_PX_OP], op);
    atomicStore(&{me}[e + VKS_PX_PE], pe);
    atomicStore(&{me}[e + VKS_PX_ADDR], addr);
    atomicStore(&{me}[e + VKS_PX_SRC], src);
    atomicStore(&{me}[e + VKS_PX_BYTES], bytes);
    atomicStore(&{me}[e + VKS_PX_VALUE], value);
    atomicStore(&{me}[e + VKS_PX_CMP], cmp);
    atomicStore(&{me}[e + VKS_PX_COUNT], count);
    atomicStore(&{me}[e + VKS_PX_SSTRIDE], sstride);
    atomicStore(&{me}[e + VKS_PX_DSTRIDE], dstride);
    vks_fence_any();
    // An exchange, not a store: a read-modify-write keeps the fields above it
    // where fences are left out (see vks_team_sync).
    atomicExchange(&{me}[e + VKS_PX_SEQ], lap + 1u);
    return e;
}}

// Waits for the answer to the request posted at entry `e`, frees the entry
// and returns the result; a failed request raises its status bits (`pe`,
// `addr` name it).
// The result's low word is `x`, its high word (64-bit word ops) `y`.
fn vks_px_result2(e: u32, pe: u32, addr: u32) -> vec2<u32> {{
    if e == VKS_PX_NONE {{
        return vec2<u32>();
    }}
    let lap = atomicLoad(&{me}[e + VKS_PX_SEQ]) & ~(VKS_PX_SLOTS - 1u);
    if !vks_px_wait(e + VKS_PX_SEQ, lap + 2u) {{
        return vec2<u32>();
    }}
    let r = vec2<u32>(atomicLoad(&{me}[e + VKS_PX_VALUE]), atomicLoad(&{me}[e + VKS_PX_DSTRIDE]));
    let st = atomicLoad(&{me}[e + VKS_PX_CMP]);
    atomicExchange(&{me}[e + VKS_PX_SEQ], lap + VKS_PX_SLOTS);
    if st != 0u {{
        vks_raise(st, pe, addr);
    }}
    return r;
}}

fn vks_px_result(e: u32, pe: u32, addr: u32) -> u32 {{
    return vks_px_result2(e, pe, addr).x;
}}

fn vks_px_call(op: u32, pe: u32, addr: u32, src: u32, bytes: u32, value: u32, cmp: u32) -> u32 {{
    return vks_px_result(vks_px_post(op, pe, addr, src, bytes, value, cmp), pe, addr);
}}

// Bulk copies (byte addresses, any alignment): `n` bytes of PE `spe` at `sb`
// into this PE's heap at `d`; this PE's `sb` to PE `dpe` at `d`. Return when
// the bytes have landed.
fn vks_px_get(d: u32, spe: u32, sb: u32, n: u32) {{
    vks_px_call(VKS_PX_GET, spe, sb, d, n, 0u, 0u);
}}

// `count` elements of `es` bytes: element i of PE `spe` at `sb + i * sst`
// into this PE's heap at `d + i * dst` (byte strides).
fn vks_px_iget(d: u32, dst: u32, spe: u32, sb: u32, sst: u32, es: u32, count: u32) {{
    vks_px_result(vks_px_post_strided(VKS_PX_GET, spe, sb, d, es, 0u, 0u, count, sst, dst), spe, sb);
}}

// `count` elements of `es` bytes: element i of this PE's heap at
// `sb + i * sst` to PE `dpe` at `d + i * dst` (byte strides).
fn vks_px_iput(dpe: u32, d: u32, dst: u32, sb: u32, sst: u32, es: u32, count: u32) {{
    vks_px_result(vks_px_post_strided(VKS_PX_PUT, dpe, d, sb, es, 0u, 0u, count, sst, dst), dpe, d);
}}

fn vks_px_put(dpe: u32, d: u32, sb: u32, n: u32) {{
    vks_px_call(VKS_PX_PUT, dpe, d, sb, n, 0u, 0u);
}}

// This PE's share of a reduction of `nelems` elements of collectives kind
// `kind` with op `op` over the team in slot `team` (see PX_REDUCE); returns
// when every member's dest holds it.
fn vks_px_reduce(team: u32, d: u32, sb: u32, nelems: u32, kind: u32, op: u32) {{
    vks_px_call(VKS_PX_REDUCE, team, d, sb, nelems, kind | (op << 8u), 0u);
}}

// The reduce-scatter form: all `nelems` at `sb` of every member combined
// into this PE's dest only.
fn vks_px_reduce_own(team: u32, d: u32, sb: u32, nelems: u32, kind: u32, op: u32) {{
    let e = vks_px_post_strided(VKS_PX_REDUCE, team, d, sb, nelems, kind | (op << 8u), 0u, 1u, 0u, 0u);
    vks_px_result(e, team, d);
}}

// Every earlier request of this PE has landed at its target.
fn vks_px_quiet() {{
    vks_px_call(VKS_PX_QUIET, vks_my_pe(), 0u, 0u, 0u, 0u, 0u);
}}
"
    );
    if cfg.int64_atomics {
        // A 64-bit word op: `bytes` = 8, the operands' high words in `count`
        // and `sstride`, the result's in `dstride` (layout::ProxyEntry).
        s.push_str(
            "fn vks_px_call64(op: u32, pe: u32, addr: u32, x: u64, c: u64) -> u64 {
    let e = vks_px_post_strided(op, pe, addr, 0u, 8u, u32(x), u32(c), u32(x >> 32u), u32(c >> 32u), 0u);
    let r = vks_px_result2(e, pe, addr);
    return u64(r.x) | (u64(r.y) << 32u);
}
",
        );
    }
}

/// A proxy wait function named `name` that polls `polls` times per loop
/// iteration (see `vks_px_wait`); `me` is this PE's atomic binding.
fn wait_fn(name: &str, polls: u32, me: &str, capped: bool) -> String {
    // Each poll an atomic read-modify-write of the ring word (adding 0), which
    // takes the cache line. Where the driver caps loop iterations (lavapipe:
    // 65535 per invocation, shared by every wait of a dispatch), the polls
    // are spaced by chains of square roots (`library::capped_polls`), so the
    // budget spans about 130 ms of CPU time until the host's wait throttle
    // naps the driver's threads. Bare polls would spend it in a few
    // milliseconds on a fast CPU, and staged halos, ping-pongs and queued
    // reductions would fail with loops cut whenever the host thread is not
    // scheduled soon enough.
    let polls = if capped {
        crate::library::capped_polls(
            &format!("atomicLoad(&{me}[VKS_CTRL_MAGIC])"),
            |a| format!("atomicAdd(&{me}[{a}], 0u)"),
            "addr",
            polls,
            "        ",
        )
    } else {
        format!("        hit |= vks_cond_bit(c, atomicAdd(&{me}[addr], 0u));\n")
            .repeat(polls as usize)
    };
    format!(
        "fn {name}(addr: u32, e: u32) -> bool {{
    let c = vks_cond(VKS_CMP_EPOCH, e, false);
    var done = false;
    var aborted = false;
    vks_wait_begin(addr, VKS_CMP_EPOCH | 512u, e);
    loop {{
        var hit = 0u;
{polls}        if hit != 0u {{
            done = true;
            break;
        }}
        if vks_aborting() {{
            aborted = true;
            break;
        }}
    }}
    vks_wait_end();
    if done {{
        atomicOr(&{me}[addr], 0u);
        vks_fence_any();
    }} else {{
        vks_raise(select(VKS_ERR_LOOPS_CUT, VKS_ERR_ABORTED, aborted), vks_my_pe(), addr);
    }}
    return done;
}}
"
    )
}
