//! The device-initiated collectives: the `shmem_*` and `shmemx_*` functions
//! (per-thread, `_work_group` and `_work_groups` forms) that kernels call.

use std::fmt::Write as _;

use super::reductions::scan_fn;
use super::{kind, kind_available, kind_index, ReduceOp, TYPES};
use crate::LibraryConfig;

/// One device-initiated mem collective: (name, extra params after `team`, the
/// move given team `team`, `t` = its VksTeam, and `tid`/`nth`, a check run before
/// the move (all members run it alike), a statement run before the opening sync,
/// and whether its move only pushes this PE's own data where every member is
/// reached directly, so that it may skip the opening sync: see [`both_forms`]).
struct MemCollective {
    name: &'static str,
    params: &'static str,
    pre: &'static str,
    check: &'static str,
    body: &'static str,
    early: bool,
}

const MEM_COLLECTIVES: [MemCollective; 4] = [
    MemCollective {
        name: "broadcastmem",
        params: "dest: u32, source: u32, nelems: u32, root: u32",
        pre: "",
        check: "vks_root_ok(team, root)",
        body: "vks_broadcast_move(t, dest, source, nelems, root, false, true, tid, nth);",
        early: false,
    },
    MemCollective {
        name: "collectmem",
        params: "dest: u32, source: u32, nelems: u32",
        pre: "if team < VKS_MAX_TEAMS { vks_relaxed_store(VKS_SELF, vks_team_base(team) + VKS_TEAM_COUNT, nelems); }",
        check: "true",
        body: "vks_collect_move_team(t, team, dest, source, true, tid, nth);",
        early: false,
    },
    MemCollective {
        name: "fcollectmem",
        params: "dest: u32, source: u32, nelems: u32",
        pre: "",
        check: "true",
        body: "vks_fcollect_move(t, dest, source, nelems, true, tid, nth);",
        early: true,
    },
    MemCollective {
        name: "alltoallmem",
        params: "dest: u32, source: u32, nelems: u32",
        pre: "",
        check: "true",
        body: "vks_alltoall_move(t, dest, source, nelems, true, tid, nth);",
        early: true,
    },
];

/// UCC's fixed-count gather and scatter (`shmemx_`: no OpenSHMEM name).
const UCC_MEM_COLLECTIVES: [MemCollective; 2] = [
    MemCollective {
        name: "gathermem",
        params: "dest: u32, source: u32, nelems: u32, root: u32",
        pre: "",
        check: "vks_root_ok(team, root)",
        body: "vks_gather_move(t, dest, source, nelems, root, tid, nth);",
        early: false,
    },
    MemCollective {
        name: "scattermem",
        params: "dest: u32, source: u32, nelems: u32, root: u32",
        pre: "",
        check: "vks_root_ok(team, root)",
        body: "vks_scatter_move(t, dest, source, nelems, root, tid, nth);",
        early: false,
    },
];

/// The one-sync form of a per-thread function (small reductions on teams
/// that do not span devices; see `layout::LL_BYTES`): WGSL expressions of the
/// bytes it sends, the source's byte address, and the statement that combines
/// the landing slots into dest after the sync.
struct OneSync {
    bytes: String,
    source: &'static str,
    combine: String,
}

/// A per-thread function and its `_work_group` twin around `body` (which sees
/// `team`, `t`, `tid`, `nth` and the parameters), and with `multi` the
/// multi-workgroup `_work_groups` form too (`wg_name` + `s`).
///
/// With `early` (a move that, where every member is reached directly, only
/// reads this PE's own source and writes members' dests: fcollect, alltoall,
/// alltoalls), the per-thread and work_group forms move before the one
/// closing sync (the work_group form after a workgroup barrier, which orders
/// its invocations' writes of the source), as ishmem's and NVSHMEM's device
/// collectives do: OpenSHMEM leaves the dests' readiness to the caller. The
/// multi-workgroup form keeps both syncs (see below). The functions then take a last parameter `entry_sync` (true
/// keeps the opening sync: the queue's collectives, whose stream order
/// promises more) under `vks_` names, and the public names call them with
/// false (a `name` that is already `vks_` gets no wrappers).
#[allow(clippy::too_many_arguments)]
fn both_forms(
    s: &mut String,
    name: &str,
    wg_name: &str,
    params: &str,
    pre: &str,
    check: &str,
    body: &str,
    one_sync: Option<&OneSync>,
    multi: bool,
    early: bool,
) {
    // One sync call site per function, in a three-step loop (sync; move;
    // sync), entered at the move where `early`: llvmpipe inlines every call,
    // and each inlined wait costs compile time. A `loop` rather than a `for`
    // whose move step `continue`s, which ran small calls slower on llvmpipe
    // (benches/RESULTS.md, "One-sync device forms"). A failed argument check
    // skips the move but not the closing sync (every member passes the same
    // arguments, so all skip alike) and returns -1. The one-sync form (small
    // reductions) pushes before the first sync and leaves after its own
    // combine. The price of the loop on llvmpipe, which compiles a shader with
    // barriers into coroutines: a move inside a loop that holds a barrier runs
    // slower than one outside, but with the grid syncs written out the kernel
    // compiled slower and the 2-PE forms, bound by one thread per PE there,
    // were no faster (benches/RESULTS.md, "One-sync device forms").
    let (decide, push, finish) = match one_sync {
        Some(o) => (
            format!("let ll = ok && vks_ll_ok(team, {});", o.bytes),
            format!("if ll {{ vks_ll_push(team, {}, {}); }}", o.source, o.bytes),
            format!("if ll {{ {} break; }}", o.combine),
        ),
        None => Default::default(),
    };
    let wrapped = early && !name.starts_with("vks_");
    let internal = |n: &str| {
        if wrapped {
            n.replacen("shmemx_", "vks_", 1)
                .replacen("shmem_", "vks_", 1)
        } else {
            n.to_string()
        }
    };
    let (iname, iwg) = (internal(name), internal(wg_name));
    let (entry, early) = if early {
        (
            ", entry_sync: bool",
            "!entry_sync && vks_team_ok(team) && vks_pushes_only(team)",
        )
    } else {
        ("", "false")
    };
    let _ = write!(
        s,
        "fn {iname}(team: u32, {params}{entry}) -> i32 {{
    {pre}
    var ok = vks_team_ok(team);
    var bad = false;
    {decide}
    var step = select(0u, 1u, {early});
    loop {{
        if step >= 3u || !ok {{
            break;
        }}
        if step == 1u {{
            if {check} {{
                let t = vks_team_of(team);
                let tid = 0u;
                let nth = 1u;
                {body}
            }} else {{
                bad = true;
            }}
        }} else {{
            {push}
            ok = vks_team_sync(team);
            if ok && step == 0u {{
                {finish}
            }}
        }}
        step++;
    }}
    return select(-1, 0, ok && !bad);
}}
fn {iwg}(team: u32, {params}, local_index: u32, group_size: u32{entry}) -> i32 {{
    {pre}
    var r = 0;
    var bad = false;
    let early = {early};
    if early {{
        // What the opening sync's barrier did: every invocation's writes of
        // the source before any invocation pushes them (ishmem's group
        // barrier).
        vks_fence_acq_rel();
        storageBarrier();
    }}
    var step = select(0u, 1u, early);
    loop {{
        if step == 1u {{
            if {check} {{
                let t = vks_team_of(team);
                let tid = local_index;
                let nth = group_size;
                {body}
            }} else {{
                bad = true;
            }}
        }} else {{
            vks_fence_acq_rel();
            r = shmemx_team_sync_work_group(team, local_index);
        }}
        step++;
        if step >= 3u || r != 0 {{
            break;
        }}
    }}
    return select(r, -1, bad);
}}
"
    );
    let args: Vec<&str> = params
        .split(',')
        .filter_map(|p| p.split(':').next())
        .map(str::trim)
        .collect();
    let args = args.join(", ");
    if wrapped {
        let _ = write!(
            s,
            "fn {name}(team: u32, {params}) -> i32 {{ return {iname}(team, {args}, false); }}
fn {wg_name}(team: u32, {params}, local_index: u32, group_size: u32) -> i32 {{ return {iwg}(team, {args}, local_index, group_size, false); }}
"
        );
    }
    if !multi {
        return;
    }
    // Every invocation of `groups` workgroups (numbered 0..groups) calls,
    // in uniform control flow, with the same arguments; the move is spread
    // over all of them. Always two syncs (`entry_sync` unused): an
    // invocation pushes source bytes that other workgroups of the dispatch
    // may have written just before, and only the opening grid sync orders
    // those writes (WGSL has no grid barrier for the caller to use). The grid sync (vks_grid_sync) gathers them around
    // one team sync, made by the last workgroup to arrive. A group count
    // the device cannot run at once fails before any wait, alike in every
    // group (vks_grid_ok).
    let _ = write!(
        s,
        "fn {iwg}s(team: u32, {params}, local_index: u32, group_size: u32, group: u32, groups: u32{entry}) -> i32 {{
    {pre}
    if !vks_grid_ok(group, groups, local_index) {{
        return -1;
    }}
    var r = 0;
    var bad = false;
    var step = 0u;
    loop {{
        if step == 1u {{
            if {check} {{
                let t = vks_team_of(team);
                let tid = group * group_size + local_index;
                let nth = groups * group_size;
                {body}
            }} else {{
                bad = true;
            }}
        }} else {{
            r = vks_grid_sync(team, local_index, groups);
        }}
        step++;
        if step >= 3u || r != 0 {{
            break;
        }}
    }}
    return select(r, -1, bad);
}}
"
    );
    if wrapped {
        let _ = writeln!(
            s,
            "fn {wg_name}s(team: u32, {params}, local_index: u32, group_size: u32, group: u32, groups: u32) -> i32 {{ return {iwg}s(team, {args}, local_index, group_size, group, groups, false); }}"
        );
    }
}

/// The device-initiated collectives: per-thread `shmem_*` and work_group
/// `shmemx_*_work_group` forms of every mem collective, and the typed forms of
/// ishmem's TYPENAMEs (broadcast, collect, fcollect, alltoall, alltoalls, every
/// reduction the type table allows, UCC's gather, scatter and reduce_scatter,
/// and the scans `shmemx_<T>_sum_inscan`/`_exscan`). Typed forms are generated
/// only when `uses` mentions them (a kernel's own source), to keep kernels
/// small; `None` generates all.
pub fn device_api(cfg: &LibraryConfig, uses: Option<&str>) -> String {
    let mut s = String::from("\n// ---- device-initiated collectives (generated) ----\n");
    // The multi-workgroup forms only in kernels that name one.
    let multi = uses.map_or(true, |u| u.contains("_work_groups"));
    let prefixed = MEM_COLLECTIVES
        .iter()
        .map(|c| ("shmem", c))
        .chain(UCC_MEM_COLLECTIVES.iter().map(|c| ("shmemx", c)));
    for (prefix, c) in prefixed {
        let wg = format!("shmemx_{}_work_group", c.name);
        both_forms(
            &mut s,
            &format!("{prefix}_{}", c.name),
            &wg,
            c.params,
            c.pre,
            c.check,
            c.body,
            None,
            multi,
            c.early,
        );
    }
    both_forms(
        &mut s,
        "vks_alltoalls",
        "vks_alltoalls_work_group",
        "dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, es: u32",
        "",
        "vks_arg_ok(dst > 0u && sst > 0u)",
        "vks_alltoalls_move(t, dest, source, nelems, es, dst, sst, true, tid, nth);",
        None,
        multi,
        true,
    );
    let wanted = |name: &str| uses.map_or(true, |u| u.contains(name));
    // The kinds whose scan driver is already in `s`.
    let mut scans = std::collections::HashSet::new();
    for ty in TYPES {
        let kind = kind(ty.kind).expect("table");
        if !kind_available(cfg, &kind) {
            continue;
        }
        let (n, es) = (ty.name, kind.bytes);
        for c in [
            "broadcast",
            "collect",
            "fcollect",
            "alltoall",
            "gather",
            "scatter",
        ] {
            // UCC's have no OpenSHMEM name: shmemx_ in both forms.
            let p = if matches!(c, "gather" | "scatter") {
                "shmemx"
            } else {
                "shmem"
            };
            let (pt, wg) = (format!("{p}_{n}_{c}"), format!("shmemx_{n}_{c}_work_group"));
            let rooted = matches!(c, "broadcast" | "gather" | "scatter");
            let root = if rooted { ", root: u32" } else { "" };
            let root_arg = if rooted { ", root" } else { "" };
            if wanted(&pt) {
                let _ = writeln!(
                    s,
                    "fn {pt}(team: u32, dest: u32, source: u32, nelems: u32{root}) -> i32 {{ return {p}_{c}mem(team, dest, source, nelems * {es}u{root_arg}); }}"
                );
            }
            if wanted(&wg) {
                let _ = writeln!(
                    s,
                    "fn {wg}(team: u32, dest: u32, source: u32, nelems: u32{root}, local_index: u32, group_size: u32) -> i32 {{ return shmemx_{c}mem_work_group(team, dest, source, nelems * {es}u{root_arg}, local_index, group_size); }}"
                );
            }
            if wanted(&format!("{wg}s")) {
                let _ = writeln!(
                    s,
                    "fn {wg}s(team: u32, dest: u32, source: u32, nelems: u32{root}, local_index: u32, group_size: u32, group: u32, groups: u32) -> i32 {{ return shmemx_{c}mem_work_groups(team, dest, source, nelems * {es}u{root_arg}, local_index, group_size, group, groups); }}"
                );
            }
        }
        let (pt, wg) = (
            format!("shmem_{n}_alltoalls"),
            format!("shmemx_{n}_alltoalls_work_group"),
        );
        if wanted(&pt) {
            let _ = writeln!(
                s,
                "fn {pt}(team: u32, dest: u32, source: u32, dst: u32, sst: u32, nelems: u32) -> i32 {{ return vks_alltoalls(team, dest, source, dst, sst, nelems, {es}u, false); }}"
            );
        }
        if wanted(&wg) {
            let _ = writeln!(
                s,
                "fn {wg}(team: u32, dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, local_index: u32, group_size: u32) -> i32 {{ return vks_alltoalls_work_group(team, dest, source, dst, sst, nelems, {es}u, local_index, group_size, false); }}"
            );
        }
        if wanted(&format!("{wg}s")) {
            let _ = writeln!(
                s,
                "fn {wg}s(team: u32, dest: u32, source: u32, dst: u32, sst: u32, nelems: u32, local_index: u32, group_size: u32, group: u32, groups: u32) -> i32 {{ return vks_alltoalls_work_groups(team, dest, source, dst, sst, nelems, {es}u, local_index, group_size, group, groups, false); }}"
            );
        }
        // Scans (ishmem 1.5's sum_inscan / sum_exscan): not on a team that
        // spans devices (ERR_UNREACHABLE; the host form serves every transport).
        for (scan, excl) in [("inscan", false), ("exscan", true)] {
            let (pt, wg) = (
                format!("shmemx_{n}_sum_{scan}"),
                format!("shmemx_{n}_sum_{scan}_work_group"),
            );
            if !wanted(&pt) && !wanted(&wg) {
                continue;
            }
            if scans.insert(kind.name) {
                scan_fn(&mut s, &kind);
            }
            let body = format!(
                "if vks_team_spans(t) {{ if tid == 0u {{ vks_raise(VKS_ERR_UNREACHABLE, vks_my_pe(), dest >> 2u); }} }} else {{ vks_scan_{k}(t, {excl}, dest, source, nelems, tid, nth); }}",
                k = kind.name,
            );
            both_forms(
                &mut s,
                &pt,
                &wg,
                "dest: u32, source: u32, nelems: u32",
                "",
                "true",
                &body,
                None,
                multi,
                false,
            );
        }
        for op in ReduceOp::ALL {
            if op.bitwise() && !ty.bitwise {
                continue;
            }
            let o = op.name();
            // UCC reduce_scatter: `nreduce` elements per member; member i
            // combines block i of every member's source into its own dest
            // (on a team that spans devices, through the proxy: one
            // request, PX_REDUCE's own form).
            let (pt, wg) = (
                format!("shmemx_{n}_{o}_reduce_scatter"),
                format!("shmemx_{n}_{o}_reduce_scatter_work_group"),
            );
            if wanted(&pt) || wanted(&wg) {
                let body = format!(
                    "let own = source + t.me * nreduce * {es}u; if vks_team_spans(t) {{ if tid == 0u {{ vks_px_reduce_own(team, dest, own, nreduce, {ki}u, {c}u); }} }} else {{ vks_reduce_own_{k}(t, {c}u, dest, own, nreduce, tid, nth); }}",
                    k = kind.name,
                    ki = kind_index(kind.name).expect("a kind of KINDS"),
                    c = op.code()
                );
                both_forms(
                    &mut s,
                    &pt,
                    &wg,
                    "dest: u32, source: u32, nreduce: u32",
                    "",
                    "true",
                    &body,
                    None,
                    multi,
                    false,
                );
            }
            let (pt, wg) = (
                format!("shmem_{n}_{o}_reduce"),
                format!("shmemx_{n}_{o}_reduce_work_group"),
            );
            if !wanted(&pt) && !wanted(&wg) {
                continue;
            }
            // A team that spans devices: this PE's share through the proxy
            // (one request; see layout::PX_REDUCE).
            let body = format!(
                "if vks_team_spans(t) {{ if tid == 0u {{ vks_px_reduce(team, dest, source, nreduce, {k}u, {c}u); }} }} else {{ vks_reduce_{n}(t, {c}u, dest, source, nreduce, tid, nth); }}",
                k = kind_index(kind.name).expect("a kind of KINDS"),
                n = kind.name,
                c = op.code()
            );
            let one_sync = OneSync {
                bytes: format!("nreduce * {es}u"),
                source: "source",
                combine: format!(
                    "vks_ll_reduce_{}(team, {}u, dest, source, nreduce);",
                    kind.name,
                    op.code()
                ),
            };
            both_forms(
                &mut s,
                &pt,
                &wg,
                "dest: u32, source: u32, nreduce: u32",
                "",
                "true",
                &body,
                Some(&one_sync),
                multi,
                false,
            );
        }
    }
    s
}
