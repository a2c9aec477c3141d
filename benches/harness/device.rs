//! The thread and work_group scopes: a kernel per collective, element type and
//! form that calls the device collective `iters` times in a loop inside one
//! dispatch, timed with GPU timestamps.

use crate::elem::Elem;
use vkshmem::ReduceOp;

/// A device form of the collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `shmem_*`, called by one invocation (of a workgroup of 64: lavapipe cuts
    /// the loops of one-invocation workgroups short).
    Thread,
    /// `shmemx_*_work_group`, called by every invocation of one workgroup.
    WorkGroup,
    /// `shmemx_*_work_groups`, called by every invocation of every workgroup
    /// of the dispatch (as many as the device runs at once:
    /// `Context::resident_workgroups`).
    WorkGroups,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Thread => "thread",
            Scope::WorkGroup => "work_group",
            Scope::WorkGroups => "work_groups",
        }
    }
}

/// The kernel's immediates (the WGSL struct `P` below).
#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DeviceArgs {
    pub team: u32,
    pub dest: u32,
    pub source: u32,
    pub nelems: u32,
    pub root: u32,
    pub iters: u32,
}

/// The per-thread call of `coll` on elements `T` (the WGSL expression, returning
/// i32 0 on success), with the `shmem_` prefix.
fn call<T: Elem>(coll: &str, op: ReduceOp) -> String {
    let tn = T::NAME;
    match coll {
        "barrier" => "shmem_team_barrier(a.team)".into(),
        "sync" => "shmem_team_sync(a.team)".into(),
        "broadcast" => format!("shmem_{tn}_broadcast(a.team, a.dest, a.source, a.nelems, a.root)"),
        "collect" => format!("shmem_{tn}_collect(a.team, a.dest, a.source, a.nelems)"),
        "fcollect" => format!("shmem_{tn}_fcollect(a.team, a.dest, a.source, a.nelems)"),
        "alltoall" => format!("shmem_{tn}_alltoall(a.team, a.dest, a.source, a.nelems)"),
        "alltoalls" => format!("shmem_{tn}_alltoalls(a.team, a.dest, a.source, 1u, 1u, a.nelems)"),
        "gather" => format!("shmemx_{tn}_gather(a.team, a.dest, a.source, a.nelems, a.root)"),
        "scatter" => format!("shmemx_{tn}_scatter(a.team, a.dest, a.source, a.nelems, a.root)"),
        "reduce_scatter" => format!(
            "shmemx_{tn}_{}_reduce_scatter(a.team, a.dest, a.source, a.nelems)",
            op.name()
        ),
        "inscan" => format!("shmemx_{tn}_sum_inscan(a.team, a.dest, a.source, a.nelems)"),
        "exscan" => format!("shmemx_{tn}_sum_exscan(a.team, a.dest, a.source, a.nelems)"),
        _ => format!(
            "shmem_{tn}_{}_reduce(a.team, a.dest, a.source, a.nelems)",
            op.name()
        ),
    }
}

/// The kernel that calls `coll` `p.iters` times in `scope`: one workgroup of
/// `wg` invocations, or invocation 0 of a workgroup of 64 for the thread scope.
pub fn kernel_source<T: Elem>(coll: &str, op: ReduceOp, scope: Scope, wg: u32) -> String {
    let per_thread = call::<T>(coll, op);
    let (size, body) = match scope {
        Scope::Thread => (64, per_thread),
        Scope::WorkGroup => {
            // shmem_X(args) -> shmemx_X_work_group(args, li, wg)
            let open = per_thread.find('(').expect("a call");
            let name = per_thread[..open].replacen("shmem_", "shmemx_", 1);
            let args = &per_thread[open + 1..per_thread.len() - 1];
            let extra = if matches!(coll, "barrier" | "sync") {
                "li".to_string()
            } else {
                format!("li, {wg}u")
            };
            (wg, format!("{name}_work_group({args}, {extra})"))
        }
        Scope::WorkGroups => {
            // shmem_X(args) -> shmemx_X_work_groups(args, li, wg, g, groups);
            // barrier and sync have no multi-workgroup form: the work_group
            // one, called by the first workgroup alone (the bench skips these
            // rows; two workgroups of a PE in one barrier are a misuse).
            let open = per_thread.find('(').expect("a call");
            let name = per_thread[..open].replacen("shmem_", "shmemx_", 1);
            let args = &per_thread[open + 1..per_thread.len() - 1];
            if matches!(coll, "barrier" | "sync") {
                (wg, format!("{name}_work_group({args}, li)"))
            } else {
                (
                    wg,
                    format!("{name}_work_groups({args}, li, {wg}u, wid.x, nw.x)"),
                )
            }
        }
    };
    // Only invocation 0 makes per-thread calls; the others finish at once.
    let callers = match scope {
        Scope::Thread => " && li == 0u",
        Scope::WorkGroups if matches!(coll, "barrier" | "sync") => " && wid.x == 0u",
        Scope::WorkGroup | Scope::WorkGroups => "",
    };
    format!(
        "struct P {{ team: u32, dest: u32, source: u32, nelems: u32, root: u32, iters: u32 }}
var<immediate> p: P;
@compute @workgroup_size({size})
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let a = p;
    var failed = 0u;
    for (var k = 0u; k < a.iters{callers}; k++) {{
        // A failed call has raised a device error, which the launch reports.
        failed += u32({body} != 0);
    }}
}}
"
    )
}

/// How many calls one dispatch may make on a driver that caps loop iterations
/// (lavapipe: 65535 per invocation, all loops together; the library reports a
/// capped loop as an error). `data_iters` estimates the loop iterations one call's
/// data movement costs each invocation; waits get a fixed allowance per call,
/// large when PEs share cores (a wait then spins through the scheduler's time
/// slices). `None` when one call does not fit.
pub fn calls_per_dispatch(
    capped: bool,
    oversubscribed: bool,
    data_iters: u64,
    iters: u32,
) -> Option<u32> {
    if !capped {
        return Some(iters.max(1));
    }
    const BUDGET: u64 = 60_000;
    let waits = if oversubscribed { 40_000 } else { 6_000 };
    let per_call = waits + data_iters;
    let k = BUDGET / per_call;
    (k > 0).then(|| (k as u32).min(iters.max(1)))
}

/// Workgroup sizes the work_group(s) forms may get on a CPU driver, smallest
/// first ([`cpu_workgroup_size`]).
const CPU_WORKGROUP_SIZES: [u32; 4] = [8, 16, 32, 64];

/// The work_group(s) forms' workgroup size on a CPU driver (llvmpipe): the
/// smallest of [`CPU_WORKGROUP_SIZES`] with which one call of `coll` at
/// `max_bytes` on a team of `n` fits the driver's loop budget
/// ([`calls_per_dispatch`], its waits long with `long_waits`: PEs sharing
/// cores, or a proxy's round trips), else the largest. llvmpipe runs a
/// workgroup's SIMD rows of 8 one after another on one thread, every row
/// through the library's straight-line code (its waits, its branches, masked
/// rows included), so each row costs a call a fixed time while the data moves
/// no faster with more rows (benches/RESULTS.md, "Workgroup of 16"). And a
/// workgroup of one row (8) is linked without barriers
/// (`LibraryConfig::row_lanes`), whose coroutines halve the copy loops' speed
/// (benches/RESULTS.md, "One-row workgroups on llvmpipe"). Above 8 the loop
/// budget cuts the largest rows off (a collect of 4 MiB on 8 PEs).
/// `row`: the driver's SIMD row ([`vec4_unroll`]).
pub fn cpu_workgroup_size(coll: &str, max_bytes: u64, n: u64, long_waits: bool, row: u32) -> u32 {
    let fits = |wg: u32| {
        let data = data_iters(coll, max_bytes, n, wg as u64, true, vec4_unroll(wg, row));
        calls_per_dispatch(true, long_waits, data, 1).is_some()
    };
    CPU_WORKGROUP_SIZES
        .into_iter()
        .find(|&wg| fits(wg))
        .unwrap_or(CPU_WORKGROUP_SIZES[CPU_WORKGROUP_SIZES.len() - 1])
}

/// Loop iterations one invocation of `nth` spends on the data movement of one call
/// moving `bytes` per PE contribution on `n` PEs (an overestimate).
///
/// Word loops (`vec4` false: the per-thread forms, and collectives without a
/// vec4 path): every word the PE reads or writes, times the members for
/// reductions, which read every member's element once per item, plus a loop
/// over the members. Vec4 loops (`vec4`: the work_group forms of the bulk
/// collectives, whose kernels get the library's vec4 view): one iteration per
/// `unroll` vec4s copied or combined ([`vec4_unroll`]; a reduction combines
/// its share of every member, then pushes it to the others: twice the
/// object, budgeted three times), plus, per copy, the word loops of its unaligned head and tail and one pass
/// of each (PE, chunk, chunk) case of the copy's switch, which llvmpipe runs
/// masked (budgeted at 8 per member).
pub fn data_iters(coll: &str, bytes: u64, n: u64, nth: u64, vec4: bool, unroll: u64) -> u64 {
    if vec4 && has_vec4_path(coll) {
        let units = bytes.div_ceil(16) + 1;
        let (touched, copies) = match coll {
            "broadcast" => (units, 1),
            "collect" | "fcollect" | "alltoall" | "alltoalls" => (n * units, n),
            _ => (3 * units, 2 * n),
        };
        return touched.div_ceil(nth * unroll.max(1)) + copies * (8 + 8 * n) + 4 * n;
    }
    let words = bytes.div_ceil(4) + 1;
    let touched = match coll {
        "barrier" | "sync" => 0,
        "broadcast" => 2 * words,
        "collect" | "fcollect" => words + n * words,
        "alltoall" | "alltoalls" => 2 * n * words,
        _ => (n + 2) * words,
    };
    touched.div_ceil(nth) + 4 * n
}

/// vec4s per lane and loop iteration of the library's vec4 loops in a
/// workgroup of `wg` invocations, on a driver whose SIMD row is `row`
/// invocations where it caps loops (0 elsewhere): a workgroup of one row
/// unrolls them (`vkshmem_device::library::UNROLL`, see
/// `LibraryConfig::row_lanes`).
pub fn vec4_unroll(wg: u32, row: u32) -> u64 {
    if vkshmem_device::library::is_one_row(row, [wg, 1, 1]) {
        vkshmem_device::library::UNROLL as u64
    } else {
        1
    }
}

/// Whether the library moves `coll`'s data in vec4s in a work_group form
/// (device/src/library/vec4.rs, device/src/collectives/reductions.rs: the bulk
/// moves; alltoalls with the bench's unit strides is an alltoall).
fn has_vec4_path(coll: &str) -> bool {
    matches!(
        coll,
        "broadcast" | "collect" | "fcollect" | "alltoall" | "alltoalls" | "reduce"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_group_source_names_the_work_group_form() {
        let s = kernel_source::<f32>("reduce", ReduceOp::Sum, Scope::WorkGroup, 128);
        assert!(s.contains(
            "shmemx_float_sum_reduce_work_group(a.team, a.dest, a.source, a.nelems, li, 128u)"
        ));
        assert!(s.contains("@workgroup_size(128)"));
        let s = kernel_source::<i16>("fcollect", ReduceOp::Sum, Scope::WorkGroups, 64);
        assert!(s.contains(
            "shmemx_int16_fcollect_work_groups(a.team, a.dest, a.source, a.nelems, li, 64u, wid.x, nw.x)"
        ));
        let s = kernel_source::<u8>("barrier", ReduceOp::Sum, Scope::WorkGroup, 64);
        assert!(s.contains("shmemx_team_barrier_work_group(a.team, li)"));
        let s = kernel_source::<i64>("broadcast", ReduceOp::Sum, Scope::Thread, 64);
        assert!(s.contains("shmem_int64_broadcast(a.team, a.dest, a.source, a.nelems, a.root)"));
        assert!(s.contains("@workgroup_size(64)"));
    }

    #[test]
    fn cpu_workgroup_size_is_the_smallest_that_fits() {
        // Small rows: one SIMD row.
        assert_eq!(cpu_workgroup_size("broadcast", 1 << 20, 2, false, 8), 8);
        assert_eq!(cpu_workgroup_size("reduce", 1 << 20, 2, false, 8), 8);
        // A 4 MiB alltoall on 2 PEs: 2 blocks of 262144 vec4s, 32768
        // iterations per invocation of one row of 8 (2 vec4s each).
        assert_eq!(cpu_workgroup_size("alltoall", 4 << 20, 2, false, 8), 8);
        // Without the row's unrolled loops (a driver row of 4), 16.
        assert_eq!(cpu_workgroup_size("alltoall", 4 << 20, 2, false, 4), 16);
        // A 4 MiB collect on 4 PEs moves 16 MiB into each dest: 65536
        // iterations per invocation of 8 (2 vec4s each) or 16 (one), past
        // the budget; 32768 with 32.
        assert_eq!(cpu_workgroup_size("collect", 4 << 20, 4, false, 8), 32);
        // Each collective by its own need: a broadcast of the same size
        // moves one object, and fits with 8.
        assert_eq!(cpu_workgroup_size("broadcast", 4 << 20, 8, false, 8), 8);
        // Nothing fits: the largest (the rows are skipped and listed).
        assert_eq!(cpu_workgroup_size("collect", 1 << 30, 8, true, 8), 64);
        // Collectives without a vec4 path count their word loops.
        assert_eq!(cpu_workgroup_size("barrier", 4 << 20, 2, false, 8), 8);
    }

    #[test]
    fn loop_budget() {
        assert_eq!(calls_per_dispatch(false, true, 1 << 40, 7), Some(7));
        assert_eq!(calls_per_dispatch(true, false, 0, 100), Some(10));
        assert_eq!(calls_per_dispatch(true, true, 0, 100), Some(1));
        assert_eq!(calls_per_dispatch(true, true, 30_000, 100), None);
        assert!(data_iters("reduce", 1 << 20, 2, 1, false, 1) > 1 << 18);
        assert_eq!(data_iters("barrier", 0, 4, 256, false, 1), 16);
        // Vec4 loops: a 4 MiB broadcast over 256 invocations is 1024 vec4s each.
        let b = data_iters("broadcast", 4 << 20, 2, 256, true, 1);
        assert!((1025..1100).contains(&b), "{b}");
        assert!(data_iters("reduce", 4 << 20, 2, 256, true, 1) >= 2048);
        // One row of 8, 2 vec4s per iteration: 16384 iterations.
        assert_eq!(vec4_unroll(8, 8), 2);
        let b = data_iters("broadcast", 4 << 20, 2, 8, true, vec4_unroll(8, 8));
        assert!((16385..16500).contains(&b), "{b}");
        assert_eq!((vec4_unroll(16, 8), vec4_unroll(8, 0)), (1, 1));
        assert_eq!(
            data_iters("barrier", 0, 4, 256, true, 1),
            data_iters("barrier", 0, 4, 256, false, 1)
        );
    }
}
