//! How the members of a team meet for a call: the seam between the two ways.
//!
//! - **The sync plane** ([`crate::sync`]): teams (they own a slot) and the
//!   deprecated active sets that were given one (`crate::collective::active`)
//!   of a job started by the launcher. Shared memory, no socket: each member
//!   publishes a descriptor of its call (and, for small collectives, its data)
//!   with its arrival, and reads everyone's after the sync.
//! - **The bootstrap socket**: active sets without a plane slot: an allgather
//!   of the descriptors through the endpoint.
//!
//! Either way a meeting returns every member's descriptor in team order, so the
//! callers (host syncs, host collectives) compare them the same way. Failures
//! come back as the same typed errors: a dead or finalized member is
//! [`Error::PeerFailed`](crate::Error::PeerFailed), a wait longer than `VKSHMEM_WAIT_TIMEOUT` is
//! [`Error::Timeout`](crate::Error::Timeout) naming the members not arrived.

use std::sync::atomic::{fence, Ordering};

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::lock::lock;
use crate::runtime::Runtime;
use crate::sync::{layout, Group, Stop, Ticket};

/// The PEs that meet for a call: a team (or an active set) as a collective or
/// sync sees it.
#[derive(Debug, Clone)]
pub(crate) struct Members {
    /// Who they are.
    pub shape: crate::team::shape::TeamShape,
    /// This PE's index among them.
    pub me: u32,
    /// The team's slot on the plane (an active set's past the team slots);
    /// `None` for an active set without one (it meets through the bootstrap
    /// socket).
    pub slot: Option<u32>,
    /// A failed check of an argument that is not the collective's own (an active
    /// set's pSync or pWrk): reported through the agreement like the others, so
    /// that no member leaves its peers waiting.
    pub deferred: Option<String>,
}

/// A team that spans nodes, as this PE's node sees it (a job of several
/// nodes under mpirun): the hierarchy its collectives' data goes through.
#[derive(Debug, Clone)]
pub(crate) struct NodePart {
    /// The team's members on this PE's node: a team of their own on the
    /// node's plane, in the team's slot.
    pub members: Members,
    /// Every node's part of the team (WORLD PEs in team order), nodes in the
    /// order of their first member in the team; this node's at `mine`.
    pub parts: Vec<Vec<u32>>,
    /// This node's index in `parts`.
    pub mine: usize,
}

impl NodePart {
    /// Each node's first member: the PEs that exchange over MPI.
    pub fn leaders(&self) -> Vec<u32> {
        self.parts.iter().map(|p| p[0]).collect()
    }

    /// Whether this PE is its node's first member.
    pub fn leader(&self) -> bool {
        self.members.me == 0
    }
}

/// Splits the team `shape` (this PE is member `me`) by node (`nodes`: every
/// PE's node): `None` when it lies on one node. Pure.
pub(crate) fn node_part(
    nodes: &[u32],
    shape: crate::team::shape::TeamShape,
    slot: Option<u32>,
    me: u32,
) -> Option<NodePart> {
    let my_node = nodes[shape.member(me) as usize];
    if shape.members().all(|p| nodes[p as usize] == my_node) {
        return None;
    }
    let mut parts: Vec<(u32, Vec<u32>)> = Vec::new();
    for p in shape.members() {
        let n = nodes[p as usize];
        match parts.iter_mut().find(|(m, _)| *m == n) {
            Some((_, v)) => v.push(p),
            None => parts.push((n, vec![p])),
        }
    }
    let mine = parts.iter().position(|(n, _)| *n == my_node)?;
    let part = &parts[mine].1;
    // Members of a strided team on a node whose PEs are strided: strided
    // (two arithmetic progressions meet in one), in team order.
    let mut sorted = part.clone();
    sorted.sort_unstable();
    let local = crate::team::shape::TeamShape::from_members(&sorted)?;
    let me_pe = shape.member(me);
    let members = Members {
        shape: local,
        me: local.index_of(me_pe)?,
        slot,
        deferred: None,
    };
    // The node's first member in the node part's own order leads.
    let parts = parts
        .into_iter()
        .map(|(_, mut v)| {
            v.sort_unstable();
            v
        })
        .collect();
    Some(NodePart {
        members,
        parts,
        mine,
    })
}

/// What a meeting returns.
pub(crate) struct Meeting<D> {
    /// Every member's descriptor, in team order.
    pub descs: Vec<D>,
    /// The plane's ticket when the meeting went through the plane: members' data
    /// slots for it are readable until this PE's next meeting on the team.
    pub ticket: Option<Ticket>,
}

/// A descriptor of a plain sync: its tag only, so that members in different
/// calls notice.
const SYNC_TAG: u32 = 0x5359_4e43;

/// The first word of a closing meeting's descriptor ([`Runtime::close_members`]).
const CLOSE_TAG: u32 = 0x434c_4f53;

/// What a closing meeting's descriptors (`[tag, ok, how]` of every member,
/// in team order; `pe` maps a member index to its PE) say about `call`.
fn closing_verdict(descs: &[[u32; 3]], call: &str, pe: impl Fn(usize) -> u32) -> Result<()> {
    if let Some(i) = descs.iter().position(|d| d[0] != CLOSE_TAG) {
        return Err(Error::InvalidArgument(format!(
            "collectives out of step on the team: this PE is closing {call}, team member {i} (PE {}) is in another call",
            pe(i)
        )));
    }
    if let Some(i) = descs.iter().position(|d| d[1] == 0) {
        return Err(Error::PeerFailed {
            pe: pe(i),
            how: format!("its part of {call} failed (team member {i}; its own error says why)"),
        });
    }
    if let Some(i) = descs.iter().position(|d| d[2] != descs[0][2]) {
        return Err(Error::InvalidArgument(format!(
            "{call}: team member {i} (PE {}) submitted its part differently from member 0 (PE {}): the members' plans disagree",
            pe(i),
            pe(0)
        )));
    }
    Ok(())
}

impl Runtime {
    /// Syncs the members of `m`. `desc` builds this PE's descriptor: it is given
    /// this PE's data slot on the plane (`None` on the socket) to stage data into
    /// first. Callers name their public call in errors (`Error::during`).
    pub(crate) fn meet<D: Pod>(
        &self,
        m: &Members,
        desc: &mut dyn FnMut(Option<*mut u8>) -> D,
    ) -> Result<Meeting<D>> {
        if let Some(why) = lock(&self.broken).clone() {
            return Err(Error::Broken(why));
        }
        let Some((plane, slot)) = self.plane_for(m) else {
            let mine = desc(None);
            let descs = self
                .gather_shape(m.shape, bytemuck::bytes_of(&mine))?
                .iter()
                .map(|b| bytemuck::try_pod_read_unaligned(b))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| Error::Bootstrap("a PE sent a malformed call descriptor".into()))?;
            return Ok(Meeting {
                descs,
                ticket: None,
            });
        };
        if lock(&self.boot).is_none() {
            return Err(Error::InvalidArgument("this PE has finalized".into()));
        }
        let g = Group {
            slot,
            shape: m.shape,
            me: m.me,
        };
        let t = plane.ticket(&g);
        let mine = desc(Some(plane.my_data(&t)));
        plane.put_desc(&t, bytemuck::bytes_of(&mine));
        fence(Ordering::SeqCst);
        if let Err(stop) = plane.arrive(&t) {
            return Err(self.stop_error(&t, stop));
        }
        fence(Ordering::SeqCst);
        let descs = (0..m.shape.size)
            .map(|i| {
                let mut d = D::zeroed();
                plane.desc(&t, i, bytemuck::bytes_of_mut(&mut d));
                d
            })
            .collect();
        Ok(Meeting {
            descs,
            ticket: Some(t),
        })
    }

    /// The plane and team slot that [`Runtime::meet`] meets `m` on: a team
    /// of more than one member on one node of a job with a plane. `None`:
    /// `m` meets through [`Runtime::gather_shape`] (an active set, a team
    /// that spans nodes: over MPI, a 1-member team, no plane). The same on
    /// every member.
    pub(crate) fn plane_for(&self, m: &Members) -> Option<(&crate::sync::Plane, u32)> {
        match (&self.plane, m.slot) {
            (Some(p), Some(slot)) if m.shape.size > 1 && self.node_part(m).is_none() => {
                Some((p.as_ref(), slot))
            }
            _ => None,
        }
    }

    /// A plain sync of the members of `m` (host `team_sync`, `barrier_all`, a
    /// collective's closing sync). `call` names the public call for errors.
    pub(crate) fn sync_members(&self, m: &Members, call: &str) -> Result<()> {
        if m.slot.is_none() || self.plane.is_none() || self.node_part(m).is_some() {
            // Through the socket (or MPI across nodes): a barrier of the member set.
            return self.gather_shape(m.shape, &[]).map(|_| ());
        }
        let met = self.meet(m, &mut |_| SYNC_TAG)?;
        if met.ticket.is_some() {
            if let Some(i) = met.descs.iter().position(|&d| d != SYNC_TAG) {
                return Err(Error::InvalidArgument(format!(
                    "collectives out of step on the team: this PE is in {call} (a sync), team member {i} (PE {}) in another call",
                    m.shape.member(i as u32)
                )));
            }
        }
        Ok(())
    }

    /// A public sync of `m` (barrier_all, sync_all, team_sync, a team's
    /// creation or end, named `what`), in the flight recorder.
    pub(crate) fn sync_call(&self, m: &Members, what: &str) -> Result<()> {
        let c = crate::sync::recorder::CallInfo {
            name: what,
            slot: m.slot,
            bytes: 0,
            root: None,
        };
        self.recorded(&c, || self.sync_members(m, what))
    }

    /// The closing meeting of a host collective on the kernel path: a sync
    /// of `m` that carries each member's outcome (`ok`) and how it submitted
    /// (`how`: `collective::part`). Returns an error when a member's part
    /// failed ([`Error::PeerFailed`](crate::Error::PeerFailed) naming it: its own error says why) or
    /// the members submitted differently (each would have left work undone or
    /// done twice).
    pub(crate) fn close_members(&self, m: &Members, call: &str, ok: bool, how: u32) -> Result<()> {
        let met = self.meet(m, &mut |_| [CLOSE_TAG, u32::from(ok), how])?;
        closing_verdict(&met.descs, call, |i| m.shape.member(i as u32))
    }

    /// `m` split by node when it spans nodes ([`node_part`]).
    pub(crate) fn node_part(&self, m: &Members) -> Option<NodePart> {
        let nodes = self.nodes.as_deref()?;
        node_part(nodes, m.shape, m.slot, m.me)
    }

    /// The error for a wait on the plane that gave up.
    fn stop_error(&self, t: &Ticket, stop: Stop) -> Error {
        let me = self.my_pe();
        let what = if t.slot() == 0 {
            format!("barrier #{}", t.epoch())
        } else if t.slot() as usize >= layout::SLOTS {
            format!("active-set sync #{} (plane slot {})", t.epoch(), t.slot())
        } else {
            format!("team sync #{} (team slot {})", t.epoch(), t.slot())
        };
        let seconds =
            |waited: std::time::Duration| self.wait_timeout.unwrap_or(waited).as_secs_f64();
        // The endpoint's account of a failure, already in the socket when it
        // raised the word.
        let reported = |word: u32| {
            let pe = word & layout::ABORT_PE_MASK;
            let how = lock(&self.boot)
                .as_mut()
                .and_then(|b| b.poll_abort())
                .map(|(_, how)| how)
                .unwrap_or_else(|| "failed (the job's abort word is raised)".into());
            Error::PeerFailed { pe, how }
        };
        match stop {
            Stop::AbortedBefore(word) => reported(word),
            Stop::Aborted {
                word,
                missing,
                waited,
            } if word & !layout::ABORT_PE_MASK == layout::ABORT_TIMEOUT => Error::Timeout {
                what,
                pe: me,
                seconds: seconds(waited),
                missing: crate::bootstrap::client::waiting_for(&missing),
            },
            Stop::Aborted { word, .. } => reported(word),
            Stop::Finalized(pe) => {
                // The endpoint's words for it, so every waiter reports the same.
                let how =
                    "finalized while other PEs wait in a collective, which can then never complete"
                        .to_string();
                if let Some(b) = lock(&self.boot).as_mut() {
                    b.report_finalized(pe, &how);
                }
                Error::PeerFailed { pe, how }
            }
            Stop::TimedOut { missing, waited } => {
                if let Some(b) = lock(&self.boot).as_mut() {
                    b.report_timeout(&what, waited, &missing);
                }
                if let Some(p) = &self.plane {
                    let first = missing.first().copied().unwrap_or(0);
                    p.raise_abort(layout::ABORT_TIMEOUT | (first & layout::ABORT_PE_MASK));
                }
                Error::Timeout {
                    what,
                    pe: me,
                    seconds: seconds(waited),
                    missing: crate::bootstrap::client::waiting_for(&missing),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{closing_verdict, CLOSE_TAG};
    use crate::error::Error;

    #[test]
    fn closing_meetings_report_a_failed_part_or_a_disagreement() {
        let pe = |i: usize| 10 + i as u32;
        let ok = [CLOSE_TAG, 1, 2];
        assert!(closing_verdict(&[ok, ok, ok], "fcollect", pe).is_ok());
        match closing_verdict(&[ok, [CLOSE_TAG, 0, 2], [CLOSE_TAG, 0, 2]], "reduce", pe) {
            Err(Error::PeerFailed { pe: 11, how }) => {
                assert!(how.contains("reduce") && how.contains("member 1"), "{how}")
            }
            other => panic!("{other:?}"),
        }
        let e = closing_verdict(&[ok, [CLOSE_TAG, 1, 1]], "broadcast", pe).unwrap_err();
        assert!(e.to_string().contains("differently"), "{e}");
        let e = closing_verdict(&[ok, [0x5359_4e43, 1, 2]], "broadcast", pe).unwrap_err();
        assert!(e.to_string().contains("out of step"), "{e}");
    }
}
