//! The kernels of queue-ordered collectives (`vkshmem_host::queue`): what a
//! collective recorded into a command buffer dispatches.
//!
//! A queued collective cannot meet its peers on the host: nothing runs on the
//! host between the user's commands. So its kernel does the whole collective on
//! the device, as the device-initiated forms do: a team sync (sources ready,
//! dests free), the move, a team sync (every member's part done). One kernel
//! per collective (and element kind and operation, for reductions), generated
//! here from the device library's per-thread and work_group forms
//! ([`crate::collectives::device_api`]), in two shapes ([`QueueForm`]).
//!
//! Addresses are byte offsets in the symmetric heap, as for the host
//! collectives' kernels ([`crate::collectives::HostArgs`]).

use crate::collectives::{Kind, ReduceOp, TYPES};

/// The immediates of a queue kernel (`var<immediate> q: QueueArgs` in WGSL,
/// laid out by [`QueueArgs::wgsl`]; a test compiles it against this struct).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct QueueArgs {
    /// The team's device handle (its slot).
    pub team: u32,
    /// Byte address of dest.
    pub dest: u32,
    /// Byte address of source.
    pub source: u32,
    /// Bytes (mem collectives) or elements (reductions, alltoalls).
    pub n: u32,
    /// broadcast: the root's index in the team; alltoalls: the dest stride.
    pub x: u32,
    /// alltoalls: the source stride.
    pub y: u32,
    /// alltoalls: bytes per element.
    pub z: u32,
    /// 0: run this call. `k > 0` (thread-form kernels that
    /// [`QueueCall::batches`]): run the `k` calls whose arguments are in this
    /// PE's batch area ([`crate::layout::BATCH_WORD`], at most
    /// [`crate::layout::BATCH_CALLS`]), in order; the other fields are unused.
    pub batch: u32,
}

/// The WGSL field names of [`QueueArgs`], in order.
const FIELDS: [&str; 8] = ["team", "dest", "source", "n", "x", "y", "z", "batch"];

impl QueueArgs {
    /// The WGSL declaration of the immediates.
    pub fn wgsl() -> String {
        let fields: String = FIELDS.iter().map(|f| format!("    {f}: u32,\n")).collect();
        format!("struct QueueArgs {{\n{fields}}}\nvar<immediate> q: QueueArgs;\n")
    }

    /// `queue_batch_call(i)`: entry `i` of this PE's batch area, as a QueueArgs.
    fn wgsl_batch_call() -> String {
        let loads: Vec<String> = (0..FIELDS.len())
            .map(|k| format!("vks_d_plain_load(VKS_SELF, w + {k}u)"))
            .collect();
        format!(
            "fn queue_batch_call(i: u32) -> QueueArgs {{
    let w = VKS_BATCH + i * VKS_BATCH_ENTRY_WORDS;
    return QueueArgs({});
}}
",
            loads.join(", ")
        )
    }
}

/// Which collective a queue kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueCall {
    /// A team barrier (quiet, sync, fences).
    Barrier,
    /// A team sync (no memory ordering beyond the sync's own).
    Sync,
    /// broadcastmem from member `x`.
    Broadcast,
    /// collectmem: `n` bytes from this member, in team order.
    Collect,
    /// fcollectmem.
    Fcollect,
    /// alltoallmem.
    Alltoall,
    /// alltoalls: strides `x`, `y` in elements of `z` bytes.
    Alltoalls,
    /// A reduction of `n` elements.
    Reduce(Kind, ReduceOp),
    /// UCC gather (gathermem): `n` bytes from every member into member
    /// `x`'s dest, in team order.
    Gather,
    /// UCC scatter (scattermem): block `j` of `n` bytes of member `x`'s
    /// source into member `j`'s dest.
    Scatter,
    /// UCC reduce_scatter: `n` elements per member; member `j` gets block
    /// `j` of every member's source combined.
    ReduceScatter(Kind, ReduceOp),
    /// A sum scan of `n` elements: inclusive (`true`) or exclusive.
    Scan(Kind, bool),
}

/// How many invocations a queue kernel spreads its move over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueForm {
    /// One invocation (0 of a workgroup): the per-thread form. Small calls
    /// (the sync is most of the time, and a workgroup barrier costs more than
    /// the move on CPU drivers).
    Thread,
    /// One workgroup of [`QUEUE_WORKGROUP`]: the work_group form.
    WorkGroup,
}

/// Invocations of a [`QueueForm::WorkGroup`] kernel.
pub const QUEUE_WORKGROUP: u32 = 64;

/// A TYPENAME of `kind` that has the reduction `op`.
fn typename(kind: &Kind, op: ReduceOp) -> Option<&'static str> {
    TYPES
        .iter()
        .find(|t| t.kind == kind.name && (t.bitwise || !op.bitwise()))
        .map(|t| t.name)
}

impl QueueCall {
    /// Whether its kernel in `form` runs a batch of calls in one dispatch
    /// ([`QueueArgs::batch`]): the thread forms, but for collect (whose
    /// kernel checks counts its own way).
    pub fn batches(&self, form: QueueForm) -> bool {
        form == QueueForm::Thread && *self != QueueCall::Collect
    }

    /// A name for caches and errors, unique per (call, form).
    pub fn name(&self, form: QueueForm) -> String {
        let call = match self {
            QueueCall::Reduce(k, op) => format!("{}_{}_reduce", k.name, op.name()),
            QueueCall::ReduceScatter(k, op) => {
                format!("{}_{}_reduce_scatter", k.name, op.name())
            }
            QueueCall::Scan(k, inclusive) => format!("{}_sum_{}", k.name, scan_name(*inclusive)),
            other => format!("{other:?}").to_lowercase(),
        };
        let form = match form {
            QueueForm::Thread => "thread",
            QueueForm::WorkGroup => "work_group",
        };
        format!("vkshmem_queue_{call}_{form}")
    }

    /// The WGSL of its kernel (to be linked with the library), or `None` for a
    /// reduction the type table does not have (a bitwise operation on a
    /// floating kind).
    pub fn source(&self, form: QueueForm) -> Option<String> {
        // (per-thread function, its arguments after the team)
        let (f, args) = match self {
            QueueCall::Barrier => ("shmem_team_barrier".to_string(), ""),
            QueueCall::Sync => ("shmem_team_sync".to_string(), ""),
            QueueCall::Broadcast => ("shmem_broadcastmem".into(), ", a.dest, a.source, a.n, a.x"),
            QueueCall::Collect => ("shmem_collectmem".into(), ", a.dest, a.source, a.n"),
            // The forms that may skip the opening sync, told to keep it: a
            // member's next command on its queue may read the dest that a
            // faster peer's next collective would overwrite.
            QueueCall::Fcollect => ("vks_fcollectmem".into(), ", a.dest, a.source, a.n"),
            QueueCall::Alltoall => ("vks_alltoallmem".into(), ", a.dest, a.source, a.n"),
            QueueCall::Alltoalls => (
                "vks_alltoalls".into(),
                ", a.dest, a.source, a.x, a.y, a.n, a.z",
            ),
            QueueCall::Reduce(k, op) => (
                format!("shmem_{}_{}_reduce", typename(k, *op)?, op.name()),
                ", a.dest, a.source, a.n",
            ),
            QueueCall::Gather => ("shmemx_gathermem".into(), ", a.dest, a.source, a.n, a.x"),
            QueueCall::Scatter => ("shmemx_scattermem".into(), ", a.dest, a.source, a.n, a.x"),
            QueueCall::ReduceScatter(k, op) => (
                format!("shmemx_{}_{}_reduce_scatter", typename(k, *op)?, op.name()),
                ", a.dest, a.source, a.n",
            ),
            QueueCall::Scan(k, inclusive) => (
                format!(
                    "shmemx_{}_sum_{}",
                    typename(k, ReduceOp::Sum)?,
                    scan_name(*inclusive)
                ),
                ", a.dest, a.source, a.n",
            ),
        };
        // Their last parameter, after the work_group form's own.
        let entry = if matches!(
            self,
            QueueCall::Fcollect | QueueCall::Alltoall | QueueCall::Alltoalls
        ) {
            ", true"
        } else {
            ""
        };
        let args_decl = QueueArgs::wgsl();
        if *self == QueueCall::Collect {
            return Some(format!("{args_decl}{}", collect_source(form)));
        }
        Some(match form {
            // Invocation 0 of a workgroup: llvmpipe cuts the loops of
            // one-invocation workgroups short (ARCHITECTURE.md, "lavapipe and
            // one-invocation workgroups").
            // One call site in a loop over the batch (llvmpipe inlines every
            // call, and each inlined wait costs compile time).
            QueueForm::Thread => format!(
                "{args_decl}{batch_call}@compute @workgroup_size({QUEUE_WORKGROUP})
fn main(@builtin(local_invocation_index) li: u32) {{
    let calls = max(q.batch, 1u);
    for (var i = 0u; i < calls && li == 0u; i++) {{
        var a = q;
        if q.batch != 0u {{
            a = queue_batch_call(i);
        }}
        {f}(a.team{args}{entry});
    }}
}}
",
                batch_call = QueueArgs::wgsl_batch_call()
            ),
            QueueForm::WorkGroup => {
                let wg = match self {
                    QueueCall::Barrier => "shmemx_team_barrier_work_group".to_string(),
                    QueueCall::Sync => "shmemx_team_sync_work_group".to_string(),
                    QueueCall::Alltoalls | QueueCall::Fcollect | QueueCall::Alltoall => {
                        format!("{f}_work_group")
                    }
                    _ => format!("{}_work_group", f.replacen("shmem_", "shmemx_", 1)),
                };
                let size = match self {
                    QueueCall::Barrier | QueueCall::Sync => "",
                    _ => ", 64u",
                };
                format!(
                    "{args_decl}@compute @workgroup_size({QUEUE_WORKGROUP})
fn main(@builtin(local_invocation_index) li: u32) {{
    let a = q;
    {wg}(a.team{args}, li{size}{entry});
}}
"
                )
            }
        })
    }
}

/// `inscan` or `exscan`.
fn scan_name(inclusive: bool) -> &'static str {
    if inclusive {
        "inscan"
    } else {
        "exscan"
    }
}

/// collectmem with a check of the total against what this member's dest
/// holds (`x` bytes): the counts are published in the team entries before
/// the opening sync, so every member knows the total after it, and one whose
/// dest is too small raises `VKS_ERR_BAD_ARGUMENT` and skips the move (it
/// still takes part in the closing sync). Built like the library's forms:
/// one sync call site in a two-phase loop (llvmpipe inlines every wait).
fn collect_source(form: QueueForm) -> String {
    let (attrs, li, sync, tid, nth) = match form {
        QueueForm::Thread => (
            format!(
                "@workgroup_size({QUEUE_WORKGROUP})\nfn main(@builtin(local_invocation_index) li: u32)"
            ),
            "li == 0u",
            "ok = li == 0u && vks_team_sync(a.team);",
            "0u",
            "1u".to_string(),
        ),
        QueueForm::WorkGroup => (
            format!(
                "@workgroup_size({QUEUE_WORKGROUP})\nfn main(@builtin(local_invocation_index) li: u32)"
            ),
            "li == 0u",
            "vks_fence_acq_rel();\n        ok = shmemx_team_sync_work_group(a.team, li) == 0;",
            "li",
            format!("{QUEUE_WORKGROUP}u"),
        ),
    };
    format!(
        "@compute {attrs} {{
    let a = q;
    if {li} && a.team < VKS_MAX_TEAMS {{
        vks_relaxed_store(VKS_SELF, vks_team_base(a.team) + VKS_TEAM_COUNT, a.n);
    }}
    var ok = true;
    for (var phase = 0u; phase < 2u && ok; phase++) {{
        {sync}
        if ok && phase == 0u {{
            let t = vks_team_of(a.team);
            let at = vks_team_base(a.team) + VKS_TEAM_COUNT;
            var total = 0u;
            for (var j = 0u; j < t.size; j++) {{
                total += vks_relaxed_load(vks_team_pe(t, j), at);
            }}
            if total <= a.x {{
                vks_collect_move_team(t, a.team, a.dest, a.source, false, {tid}, {nth});
            }} else if {li} {{
                vks_raise(VKS_ERR_BAD_ARGUMENT, vks_my_pe(), a.dest);
            }}
        }}
    }}
}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::KINDS;

    fn all_calls() -> Vec<QueueCall> {
        let mut all = vec![
            QueueCall::Barrier,
            QueueCall::Sync,
            QueueCall::Broadcast,
            QueueCall::Collect,
            QueueCall::Fcollect,
            QueueCall::Alltoall,
            QueueCall::Alltoalls,
            QueueCall::Gather,
            QueueCall::Scatter,
        ];
        for k in KINDS {
            for op in ReduceOp::ALL {
                if !(op.bitwise() && k.float) {
                    all.push(QueueCall::Reduce(k, op));
                    all.push(QueueCall::ReduceScatter(k, op));
                }
            }
            all.push(QueueCall::Scan(k, true));
            all.push(QueueCall::Scan(k, false));
        }
        all
    }

    #[test]
    fn every_call_has_a_kernel_with_a_unique_name() {
        let mut names = std::collections::HashSet::new();
        for c in all_calls() {
            for form in [QueueForm::Thread, QueueForm::WorkGroup] {
                assert!(c.source(form).is_some(), "{c:?} {form:?}");
                assert!(names.insert(c.name(form)), "{c:?} {form:?}");
            }
        }
        let f32 = crate::collectives::kind("f32").unwrap();
        assert!(QueueCall::Reduce(f32, ReduceOp::Xor)
            .source(QueueForm::Thread)
            .is_none());
    }

    #[test]
    fn every_kernel_links_and_waits_on_peers() {
        let cfg = crate::LibraryConfig {
            slots: 8,
            chunks: 1,
            max_binding_bytes: 1 << 27,
            int64: true,
            float64: true,
            int64_atomics: true,
            divergent_fences: true,
            loop_cap: true,
            row_lanes: 0,
            proxy: true,
            vec4_u64: false,
        };
        // Every call in the thread form, a few in the work_group form (each
        // link generates and validates a whole library: seconds in debug).
        let wg = [
            QueueCall::Barrier,
            QueueCall::Collect,
            QueueCall::Alltoalls,
            QueueCall::Gather,
        ];
        // The UCC reductions' kernels are the device forms' (checked there):
        // one operation each here.
        let calls = all_calls()
            .into_iter()
            .filter(|c| match c {
                QueueCall::ReduceScatter(_, op) => *op == ReduceOp::Sum,
                QueueCall::Scan(_, inclusive) => *inclusive,
                _ => true,
            })
            .map(|c| (c, QueueForm::Thread));
        for (c, form) in calls.chain(wg.into_iter().map(|c| (c, QueueForm::WorkGroup))) {
            let name = c.name(form);
            let linked = crate::link_kernel(&c.source(form).unwrap(), &name, None, &cfg)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                linked.immediate_bytes as usize,
                std::mem::size_of::<QueueArgs>()
            );
            assert!(linked.waits_on_peers, "{name}");
        }
    }

    #[test]
    fn the_immediates_match_the_rust_struct() {
        assert_eq!(FIELDS.len() * 4, std::mem::size_of::<QueueArgs>());
        let src = format!(
            "{}@compute @workgroup_size(1) fn main() {{ let a = q; }}",
            QueueArgs::wgsl()
        );
        let module = naga::front::wgsl::parse_str(&src).unwrap();
        let ty = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("QueueArgs"))
            .unwrap()
            .1;
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("not a struct")
        };
        assert_eq!(*span as usize, std::mem::size_of::<QueueArgs>());
        for (m, name) in members.iter().zip(FIELDS) {
            assert_eq!(m.name.as_deref(), Some(name));
        }
        assert_eq!(
            members[4].offset as usize,
            std::mem::offset_of!(QueueArgs, x)
        );
    }
}
