//! Reductions on teams that span nodes (mpirun, feature `mpi`), as the
//! three steps of a hierarchical allreduce:
//!
//! 1. **within each node**: the members there reduce into their dest (the
//!    staged transport's rounds on the node's part of the team, a team of its
//!    own on the node's plane);
//! 2. **across nodes**: the node's first members run `MPI_Allreduce` on
//!    their dest (on the heap's mapping where it has one), one call for the
//!    whole count;
//! 3. **within each node** again: the first member broadcasts the result to
//!    the node's other members.
//!
//! A closing sync over the team follows, as for every host collective. The
//! other families (and reductions of types MPI has no datatype for) take the
//! staged transport's hierarchical rounds (`staged.rs`). Every node combines
//! its members in team order and MPI combines the nodes, so every PE
//! computes the same bits for a given job; the order differs from the flat
//! one (floats may differ in the last bits from a reduction on one node).

use super::reduce::ReduceOp;
use super::{Desc, ElemType, Members, Which};
use crate::combine::ReduceFn;
use crate::error::{Error, Result};
use crate::runtime::rendezvous::NodePart;
use crate::runtime::Runtime;

/// The element types MPI reduces here, by their names ([`ElemType::name`]):
/// the MPI datatype's name for each (`JobWide::group_allreduce`). Not the 8-
/// and 16-bit integers: Open MPI 4.1's vectorised sum saturates them (its
/// `op/avx` component, measured here: 100 + 100 as `i8` gives 127), where
/// SHMEM's sum wraps; they take the staged rounds.
fn mpi_kind(ty: u32) -> Option<&'static str> {
    Some(match ElemType::name(ty).as_str() {
        "u32" => "u32",
        "i32" => "i32",
        "u64" | "usize" => "u64",
        "i64" | "isize" => "i64",
        "f32" => "f32",
        "f64" => "f64",
        _ => return None,
    })
}

impl Runtime {
    /// Runs an agreed reduction on a team that spans nodes (`h`: this PE's
    /// node's part) hierarchically (module docs). `Ok(false)`: not for this
    /// path (an element type or operation MPI does not reduce), decided
    /// alike on every member, before anything moved.
    pub(crate) fn reduce_across_nodes(
        &self,
        m: &Members,
        h: &NodePart,
        all: &[Desc],
        name: &str,
        combine: ReduceFn,
    ) -> Result<bool> {
        let d = all[m.me as usize];
        let Some(kind) = mpi_kind(d.ty) else {
            return Ok(false);
        };
        let Some(op) = ReduceOp::ALL.get(d.op as usize).copied() else {
            return Ok(false);
        };
        let float = kind.starts_with('f');
        if float && matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor) {
            return Ok(false);
        }
        // The node's members' descriptors, in the node part's order.
        let node: Vec<Desc> = h
            .members
            .shape
            .members()
            .map(|pe| all[m.shape.index_of(pe).expect("a member") as usize])
            .collect();
        // 1. Within the node.
        let reduced = self.staged_move(&h.members, &node, name, Some(combine));
        // 2. Across nodes, among the nodes' first members: even after a
        // failure in step 1 (the other nodes' first members are in the
        // MPI call; the failure is reported after step 3).
        let bytes = d.nelems * u64::from(d.es);
        let across = if h.leader() && bytes > 0 {
            self.allreduce_leaders(h, d.dest, bytes, kind, op)
        } else {
            Ok(())
        };
        // 3. Back within the node: the first member's dest to the others'.
        // Every member runs it (also after a failure above, reported at its
        // first meeting), so that nobody waits for one that left.
        let ok = u32::from(reduced.is_ok() && across.is_ok());
        let bcast: Vec<Desc> = node
            .iter()
            .map(|n| Desc {
                which: Which::Broadcast as u32,
                source: n.dest,
                root: 0,
                skip_root: 1,
                op: 0,
                ok,
                ..*n
            })
            .collect();
        let spread = self.staged_move(&h.members, &bcast, name, None);
        reduced?;
        across?;
        spread?;
        self.sync_members(m, name).map_err(|e| e.during(name))?;
        Ok(true)
    }

    /// `MPI_Allreduce` of this PE's `bytes` at `dest` among the nodes' first
    /// members, in place (through the heap's mapping, else a copy).
    fn allreduce_leaders(
        &self,
        h: &NodePart,
        dest: u64,
        bytes: u64,
        kind: &'static str,
        op: ReduceOp,
    ) -> Result<()> {
        let leaders = h.leaders();
        let n = usize::try_from(bytes)
            .map_err(|_| Error::InvalidArgument(format!("{bytes} bytes do not fit in memory")))?;
        let run = |buf: &mut [u8]| {
            self.with_boot((), |b| {
                let job = b.job().ok_or_else(|| {
                    Error::Bootstrap("a team spans nodes but this PE has no MPI".into())
                })?;
                job.group_allreduce(&leaders, buf, kind, op)
            })
        };
        match self.own_mapped(dest, bytes) {
            Some(p) => {
                // SAFETY: `dest..dest + bytes` lies in this PE's mapping
                // (own_mapped checked it); this PE's dest is its own to
                // write during the call (the node's members read it only in
                // step 3, after this), and no Rust reference to it exists.
                let buf = unsafe { std::slice::from_raw_parts_mut(p, n) };
                run(buf)
            }
            None => {
                let mut buf = vec![0u8; n];
                self.read_bytes(self.my_pe(), dest, &mut buf)?;
                run(&mut buf)?;
                self.write_bytes(self.my_pe(), dest, &buf)
            }
        }
    }
}
