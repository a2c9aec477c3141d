//! The host-initiated collectives' kernels: the WGSL the host crate links and
//! launches ([`HostCollective::source`]), their arguments and workgroup sizes.

use super::{Kind, ReduceOp};

/// What a host-initiated collective's kernel does (its identity: one kernel
/// each). A call of it, with its own arguments, is a [`HostCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostCollective {
    /// broadcastmem.
    Broadcast,
    /// fcollectmem.
    Fcollect,
    /// collectmem.
    Collect,
    /// alltoallmem.
    Alltoall,
    /// alltoalls.
    Alltoalls,
    /// A reduction over elements of `kind`.
    Reduce(Kind),
}

/// One call of a host collective's kernel: the kernel and the arguments only
/// it takes, typed. [`HostCall::words`] lays them into [`HostArgs::params`],
/// in the order its kernel names them ([`HostCollective::params`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostCall {
    /// broadcastmem from member `root`; the root's own dest is left alone
    /// when `skip_root` (the active-set form, whose root keeps its dest).
    Broadcast {
        /// The root's index in the team.
        root: u32,
        /// Leave the root's dest alone.
        skip_root: bool,
    },
    /// fcollectmem.
    Fcollect,
    /// collectmem; every member's byte count is in the control region.
    Collect {
        /// Word address of the members' byte counts.
        counts_at: u32,
    },
    /// alltoallmem.
    Alltoall,
    /// alltoalls.
    Alltoalls {
        /// Bytes per element.
        elem_bytes: u32,
        /// Stride between dest elements, in elements.
        dst: u32,
        /// Stride between source elements, in elements.
        sst: u32,
    },
    /// A reduction.
    Reduce {
        /// The element kind.
        kind: Kind,
        /// The operation.
        op: ReduceOp,
    },
}

impl HostCall {
    /// Its kernel.
    pub fn kernel(&self) -> HostCollective {
        match *self {
            HostCall::Broadcast { .. } => HostCollective::Broadcast,
            HostCall::Fcollect => HostCollective::Fcollect,
            HostCall::Collect { .. } => HostCollective::Collect,
            HostCall::Alltoall => HostCollective::Alltoall,
            HostCall::Alltoalls { .. } => HostCollective::Alltoalls,
            HostCall::Reduce { kind, .. } => HostCollective::Reduce(kind),
        }
    }

    /// Its own arguments as [`HostArgs::params`] words, in the order of
    /// [`HostCollective::params`] (unused words 0).
    pub fn words(&self) -> [u32; 3] {
        match *self {
            HostCall::Broadcast { root, skip_root } => [root, u32::from(skip_root), 0],
            HostCall::Collect { counts_at } => [counts_at, 0, 0],
            HostCall::Alltoalls {
                elem_bytes,
                dst,
                sst,
            } => [elem_bytes, dst, sst],
            HostCall::Reduce { op, .. } => [op.code(), 0, 0],
            HostCall::Fcollect | HostCall::Alltoall => [0; 3],
        }
    }
}

/// Workgroup size of the host collectives' generic kernels, and of the wide
/// kernels on llvmpipe ([`WIDE_WORKGROUP_GPU`] elsewhere: the host chooses
/// each wide kernel's by device, `Context::wide_workgroup`).
pub const HOST_WORKGROUP: u32 = 64;

/// Workgroup size of the wide copies and pushes on GPUs. They move one vec4
/// per invocation per step, so a copy of 64 MiB (then the launch of a large
/// message's piece, [`WIDE_WINDOW_MAX_BYTES`](super::WIDE_WINDOW_MAX_BYTES) / 2) in workgroups of 64 is
/// 65535 of them, and starting that many workgroups, not memory, bounded it
/// on a GPU; 256 brings the copy close to torch's (benches/RESULTS.md, "Wide
/// workgroups on H200").
pub const WIDE_WORKGROUP_GPU: u32 = 256;

/// Workgroup size of the wide reductions on every device. Each of their
/// invocations reads every member's vec4, so starting workgroups costs less
/// per byte, and on a GPU 256 ran the half sums markedly slower than 64 and
/// the other sums no faster (benches/RESULTS.md, "Wide workgroups on H200").
pub const WIDE_REDUCE_WORKGROUP: u32 = HOST_WORKGROUP;

/// The immediates of a host collective's kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct HostArgs {
    /// The team: WORLD number of member 0.
    pub start: u32,
    /// The team's stride (i32 bits).
    pub stride: u32,
    /// The team's size.
    pub size: u32,
    /// This PE's number in the team.
    pub me: u32,
    /// Byte address of dest.
    pub dest: u32,
    /// Byte address of source.
    pub source: u32,
    /// Bytes (movement) or elements (reductions, alltoalls).
    pub n: u32,
    /// The call's own arguments ([`HostCall::words`]; WGSL fields `x`, `y`,
    /// `z`, which the kernel names after [`HostCollective::params`]).
    pub params: [u32; 3],
}

impl HostCollective {
    /// A name for caches and errors.
    pub fn name(&self) -> String {
        match self {
            HostCollective::Reduce(k) => format!("vkshmem_reduce_{}", k.name),
            other => format!("vkshmem_{other:?}").to_lowercase(),
        }
    }

    /// The names its kernel gives [`HostArgs::params`], in order: one table
    /// with [`HostCall::words`] (a test checks that every call's words fill
    /// exactly these).
    pub fn params(&self) -> &'static [&'static str] {
        match self {
            HostCollective::Broadcast => &["root", "skip_root"],
            HostCollective::Collect => &["counts_at"],
            HostCollective::Alltoalls => &["elem_bytes", "dst", "sst"],
            HostCollective::Reduce(_) => &["op"],
            HostCollective::Fcollect | HostCollective::Alltoall => &[],
        }
    }

    /// The WGSL of its kernel (to be linked with the library).
    pub fn source(&self) -> String {
        let call = match self {
            HostCollective::Broadcast => {
                "vks_broadcast_move(t, a.dest, a.source, a.n, root, skip_root == 1u, false, tid, nth);"
                    .to_string()
            }
            HostCollective::Fcollect => {
                "vks_fcollect_move(t, a.dest, a.source, a.n, false, tid, nth);".into()
            }
            HostCollective::Collect => {
                "vks_collect_move(t, a.dest, a.source, counts_at, tid, nth);".into()
            }
            HostCollective::Alltoall => {
                "vks_alltoall_move(t, a.dest, a.source, a.n, false, tid, nth);".into()
            }
            HostCollective::Alltoalls => {
                "vks_alltoalls_move(t, a.dest, a.source, a.n, elem_bytes, dst, sst, false, tid, nth);"
                    .into()
            }
            HostCollective::Reduce(k) => format!(
                "vks_reduce_{}(t, op, a.dest, a.source, a.n, tid, nth);",
                k.name
            ),
        };
        let fields: String = HOST_ARGS_FIELDS
            .iter()
            .map(|f| format!("    {f}: u32,\n"))
            .collect();
        let params: String = self
            .params()
            .iter()
            .zip(["x", "y", "z"])
            .map(|(name, word)| format!("    let {name} = a.{word};\n"))
            .collect();
        format!(
            "struct HostArgs {{\n{fields}}}
var<immediate> args: HostArgs;
@compute @workgroup_size({HOST_WORKGROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
    let a = args;
    let t = VksTeam(a.start, a.stride, a.size, a.me);
    let tid = g.x;
    let nth = nw.x * {HOST_WORKGROUP}u;
{params}    {call}
}}
"
        )
    }
}

/// The WGSL fields of [`HostArgs`], in order (`params` is `x`, `y`, `z`).
const HOST_ARGS_FIELDS: [&str; 10] = [
    "start", "stride", "size", "me", "dest", "source", "n", "x", "y", "z",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::{ReduceOp, KINDS};
    use crate::LibraryConfig;

    #[test]
    fn every_host_kernel_links() {
        let cfg = LibraryConfig {
            slots: 8,
            chunks: 1,
            max_binding_bytes: 1 << 27,
            int64: true,
            float64: true,
            int64_atomics: true,
            divergent_fences: true,
            loop_cap: true,
            row_lanes: 0,
            proxy: false,
            vec4_u64: false,
        };
        let mut all = vec![
            HostCollective::Broadcast,
            HostCollective::Fcollect,
            HostCollective::Collect,
            HostCollective::Alltoall,
            HostCollective::Alltoalls,
        ];
        all.extend(KINDS.iter().map(|k| HostCollective::Reduce(*k)));
        for c in all {
            let linked = crate::link_kernel(&c.source(), &c.name(), None, &cfg)
                .unwrap_or_else(|e| panic!("{}: {e}", c.name()));
            assert_eq!(
                linked.immediate_bytes as usize,
                std::mem::size_of::<HostArgs>()
            );
            assert!(!linked.waits_on_peers, "{}", c.name());
        }
    }

    #[test]
    fn host_args_match_the_wgsl_struct() {
        let src = HostCollective::Fcollect.source();
        let fields = src.matches(": u32,").count();
        assert_eq!(fields * 4, std::mem::size_of::<HostArgs>());
        assert_eq!(fields, HOST_ARGS_FIELDS.len());
        assert_eq!(
            std::mem::offset_of!(HostArgs, params),
            4 * HOST_ARGS_FIELDS.iter().position(|f| *f == "x").unwrap()
        );
    }

    /// Every call's words fill exactly the parameters its kernel names, and
    /// the kernel reads each of them.
    #[test]
    fn host_calls_fill_the_params_their_kernel_names() {
        let k = KINDS[0];
        let calls = [
            HostCall::Broadcast {
                root: 3,
                skip_root: true,
            },
            HostCall::Fcollect,
            HostCall::Collect { counts_at: 7 },
            HostCall::Alltoall,
            HostCall::Alltoalls {
                elem_bytes: 4,
                dst: 2,
                sst: 5,
            },
            HostCall::Reduce {
                kind: k,
                op: ReduceOp::Max,
            },
        ];
        for c in calls {
            let names = c.kernel().params();
            let words = c.words();
            for (i, w) in words.iter().enumerate() {
                assert_eq!(*w != 0, i < names.len(), "{c:?}: word {i}");
            }
            let src = c.kernel().source();
            for n in names {
                assert!(src.contains(&format!(", {n}")), "{c:?} does not read {n}");
            }
        }
    }
}
