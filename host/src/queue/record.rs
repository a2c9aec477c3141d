//! Checking and recording queued collectives: [`Context::record`](crate::Context::record),
//! [`Context::post`](crate::Context::post), [`Context::persistent`](crate::Context::persistent).

use std::sync::Arc;
use std::time::Instant;

use ash::vk;
use vkshmem_device::collectives::{HostArgs, HostCall};
use vkshmem_device::layout;
use vkshmem_device::queue::{QueueArgs, QueueCall, QueueForm};

use super::request::{Persistent, Queued, Request};
use super::state::Pending;
use super::{Collective, THREAD_FORM_MAX_BYTES};
use crate::collective::reduce::ReduceOp;
use crate::collective::Span;
use crate::error::{Error, Result};
use crate::kernels::DeviceKernel;
use crate::lock::lock;
use crate::runtime::completion::{self, Completions};
use crate::runtime::Runtime;
use crate::team::Team;
use crate::vk::record::{OwnedCommands, Recorder, SemaphorePoint};

/// One dispatch of a queued collective.
struct Step {
    kernel: Arc<DeviceKernel>,
    sets: Vec<vk::DescriptorSet>,
    push: Vec<u8>,
    groups: u32,
    /// The call's arguments, where its kernel runs batches
    /// ([`QueueCall::batches`]): consecutive steps of one such kernel are
    /// recorded as one dispatch.
    batch: Option<QueueArgs>,
}

/// A queued collective ready to record: its dispatches, in order.
struct Prepared {
    steps: Vec<Step>,
    name: String,
}

impl Runtime {
    /// Checks `c` on this PE and picks its kernel.
    fn prepare(&self, team: Team, c: &Collective) -> Result<Prepared> {
        if let Some(why) = lock(&self.broken).clone() {
            return Err(Error::Broken(why));
        }
        let name = c.name();
        let m = self.members(team).map_err(|e| e.during(&name))?;
        let size = u64::from(m.shape.size);
        if size > 1 && !self.device_waits_across_processes() {
            return Err(self.no_cross_process_waits(&name));
        }
        let es = c.dest.map_or(1, |d| d.es);
        let n = c.nelems;
        let span_check = |what: &str, s: &Option<Span>, count: u64| match s {
            Some(s) => self.check_span(&format!("{name} {what}"), s, count),
            None => Ok(()),
        };
        if let (Some(d), Some(s)) = (&c.dest, &c.source) {
            if d.es != s.es || d.ty != s.ty {
                return Err(Error::InvalidArgument(format!(
                    "{name}: dest holds {}, source {}",
                    d.ty, s.ty
                )));
            }
        }
        // (dest elements, source elements, bytes this member moves)
        let (dn, sn, moved) = match c.call {
            QueueCall::Barrier | QueueCall::Sync => (0, 0, 0),
            QueueCall::Broadcast | QueueCall::Gather | QueueCall::Scatter
                if c.root >= m.shape.size =>
            {
                return Err(Error::InvalidArgument(format!(
                    "{name}: root {} is not a member of a team of {size}",
                    c.root
                )));
            }
            QueueCall::Gather => (n * size, n, n * es * size),
            QueueCall::Scatter => (n, n * size, n * es * size),
            QueueCall::ReduceScatter(kind, op) => {
                self.check_kind(&name, &kind, op)?;
                (n, n * size, n * es * size)
            }
            QueueCall::Scan(kind, _) => {
                self.check_kind(&name, &kind, ReduceOp::Sum)?;
                if self.spans_devices(&m) {
                    return Err(Error::Unreachable {
                        pe: m.shape.start,
                        me: self.my_pe(),
                        why: format!(
                            "{name}: the device scans have no form across devices (the host's sum_inscan/sum_exscan serve every transport)"
                        ),
                    });
                }
                (n, n, n * es)
            }
            QueueCall::Broadcast => {
                if c.root >= m.shape.size {
                    return Err(Error::InvalidArgument(format!(
                        "{name}: root {} is not a member of a team of {size}",
                        c.root
                    )));
                }
                (n, n, n * es)
            }
            QueueCall::Collect => (n, n, n * es * size),
            QueueCall::Fcollect => (n * size, n, n * es * size),
            QueueCall::Alltoall => (n * size, n * size, n * es * size),
            QueueCall::Alltoalls => {
                if c.dst == 0 || c.sst == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "{name}: strides must be at least 1 (dst {}, sst {})",
                        c.dst, c.sst
                    )));
                }
                let span = |st: u64| if n == 0 { 0 } else { (size * n - 1) * st + 1 };
                (span(c.dst), span(c.sst), n * es * size)
            }
            QueueCall::Reduce(kind, op) => {
                self.check_kind(&name, &kind, op)?;
                (n, n, n * es)
            }
        };
        span_check("dest", &c.dest, dn)?;
        span_check("source", &c.source, sn)?;
        if let (QueueCall::ReduceScatter(..), Some(d), Some(s)) = (c.call, &c.dest, &c.source) {
            let (db, sb) = (n * es, n * es * size);
            if d.offset < s.offset + sb && s.offset < d.offset + db {
                return Err(Error::InvalidArgument(format!(
                    "{name}: dest (offset {}) overlaps source (offset {})",
                    d.offset, s.offset
                )));
            }
        }
        if let (QueueCall::Reduce(..) | QueueCall::Scan(..), Some(d), Some(s)) =
            (c.call, &c.dest, &c.source)
        {
            let bytes = n * es;
            if d.offset != s.offset && d.offset < s.offset + bytes && s.offset < d.offset + bytes {
                return Err(Error::InvalidArgument(format!(
                    "{name}: dest (offset {}) and source (offset {}) overlap without being the same object",
                    d.offset, s.offset
                )));
            }
        }
        let u32_of = |v: u64, what: &str| {
            u32::try_from(v).map_err(|_| {
                Error::InvalidArgument(format!(
                    "{name}: {what} {v} does not fit the device's 32 bits"
                ))
            })
        };
        let mem_bytes = u32_of(n * es, "byte count")?;
        let args = QueueArgs {
            team: team.device_handle(),
            dest: c.dest.map_or(0, |d| d.offset as u32),
            source: c.source.map_or(0, |s| s.offset as u32),
            n: match c.call {
                QueueCall::Reduce(..)
                | QueueCall::ReduceScatter(..)
                | QueueCall::Scan(..)
                | QueueCall::Alltoalls => u32_of(n, "element count")?,
                _ => mem_bytes,
            },
            x: match c.call {
                QueueCall::Broadcast | QueueCall::Gather | QueueCall::Scatter => c.root,
                QueueCall::Alltoalls => u32_of(c.dst, "dst")?,
                // collect: what dest holds, in bytes (the device checks the total).
                QueueCall::Collect => u32_of(c.dest.map_or(0, |d| d.len * d.es), "dest size")?,
                _ => 0,
            },
            y: if c.call == QueueCall::Alltoalls {
                u32_of(c.sst, "sst")?
            } else {
                0
            },
            z: if c.call == QueueCall::Alltoalls {
                es as u32
            } else {
                0
            },
            batch: 0,
        };
        let windows = self.library_windows()?;
        let queue_step = |call: QueueCall, form: QueueForm, args: &QueueArgs| -> Result<Step> {
            let kernel = self
                .library_kernel(&call.name(form), || call.source(form))?
                .ok_or_else(|| Error::InvalidArgument(format!("{name}: no such reduction")))?;
            Ok(Step {
                sets: kernel.kernel.fixed_sets(kernel.library_set(&windows))?,
                kernel,
                push: bytemuck::bytes_of(args).to_vec(),
                groups: 1,
                batch: call.batches(form).then_some(*args),
            })
        };
        let pull = if moved <= THREAD_FORM_MAX_BYTES || self.spans_devices(&m) {
            None
        } else {
            pull_call(c, &m, &args)
        };
        let steps = match pull {
            None if moved <= THREAD_FORM_MAX_BYTES => {
                vec![queue_step(c.call, QueueForm::Thread, &args)?]
            }
            // A collect (whose counts only the device learns) or a team that
            // spans devices (the proxy carries the device forms): one workgroup.
            None => vec![queue_step(c.call, QueueForm::WorkGroup, &args)?],
            // Larger calls: a device sync, the host collective's pull kernel
            // over the whole device, a device sync.
            Some((call, hargs, items)) => {
                let sync = queue_step(QueueCall::Sync, QueueForm::Thread, &args)?;
                let (kernel, hargs, groups) = self.host_kernel_call(call, hargs, items)?;
                let sync2 = queue_step(QueueCall::Sync, QueueForm::Thread, &args)?;
                vec![
                    sync,
                    Step {
                        sets: kernel.kernel.fixed_sets(kernel.library_set(&windows))?,
                        kernel,
                        push: bytemuck::bytes_of(&hargs).to_vec(),
                        groups,
                        batch: None,
                    },
                    sync2,
                ]
            }
        };
        Ok(Prepared { steps, name })
    }

    /// Records `ps`, in order, with completion slot `slot` (see the module
    /// docs): the slot gets the device error words after the last.
    fn record_prepared(&self, r: &Recorder, ps: &[Prepared], slot: u32) -> Result<()> {
        let q = self.queue_state()?;
        let own = self.heap.block(self.my_pe())?.buffer;
        let ring = q.completions.buffer();
        let at = Completions::offset(slot);
        let steps: Vec<&Step> = ps.iter().flat_map(|p| &p.steps).collect();
        let mut rest = &steps[..];
        while let Some(step) = rest.first() {
            // Consecutive calls of one batching kernel: one dispatch, their
            // arguments written into the batch area just before it (the
            // barriers order that write after the previous batch's reads and
            // before this one's).
            // On llvmpipe a batch shares one invocation's loop budget; waits
            // on peers reached through the proxy (other devices, other
            // nodes) take milliseconds each there, so those calls go one to
            // a dispatch, as the kernel forms do.
            let cap = match (self.gpu.info.is_llvmpipe(), self.proxy.get()) {
                (true, Some(_)) => 1,
                (true, None) => layout::CAPPED_BATCH_CALLS,
                (false, _) => layout::BATCH_CALLS,
            };
            let run = match step.batch {
                Some(_) => rest
                    .iter()
                    .take(cap as usize)
                    .take_while(|s| s.batch.is_some() && Arc::ptr_eq(&s.kernel, &step.kernel))
                    .count(),
                None => 1,
            };
            r.barrier(false);
            if run > 1 {
                let args: Vec<QueueArgs> = rest[..run].iter().filter_map(|s| s.batch).collect();
                r.update(
                    own,
                    u64::from(layout::BATCH_WORD) * 4,
                    bytemuck::cast_slice(&args),
                );
                r.barrier(false);
                let push = QueueArgs {
                    batch: run as u32,
                    ..Default::default()
                };
                r.dispatch(
                    &step.kernel.kernel,
                    &step.sets,
                    bytemuck::bytes_of(&push),
                    [1, 1, 1],
                );
            } else {
                r.dispatch(
                    &step.kernel.kernel,
                    &step.sets,
                    &step.push,
                    [step.groups, 1, 1],
                );
            }
            rest = &rest[run..];
        }
        r.barrier(false);
        r.copy(
            own,
            completion::HEADER_ERRORS_AT,
            ring,
            at + completion::ERRORS_AT,
            completion::ERRORS_BYTES,
        );
        r.barrier(false);
        // Clear error, error_pe and error_addr (the abort word stays: the host
        // owns it), then say done.
        r.fill(own, completion::HEADER_ERRORS_AT, 12, 0);
        r.fill(ring, at, 4, 1);
        r.barrier(true);
        Ok(())
    }

    pub(crate) unsafe fn record<'a>(
        &'a self,
        cmd: vk::CommandBuffer,
        team: Team,
        coll: Collective<'a>,
    ) -> Result<Queued<'a>> {
        let p = self.prepare(team, &coll)?;
        let q = self.queue_state()?;
        let slot = q.completions.take()?;
        // SAFETY: the caller's guarantee on `cmd`.
        let r = unsafe { Recorder::new(&self.gpu, cmd) };
        if let Err(e) = self.record_prepared(&r, std::slice::from_ref(&p), slot) {
            q.completions.give(slot);
            return Err(e);
        }
        q.progress.shared.add();
        Ok(Queued {
            p: Pending {
                ctx: self,
                slot,
                name: p.name,
                since: None,
                finished: false,
            },
        })
    }

    pub(crate) fn post<'a>(&'a self, team: Team, coll: Collective<'a>) -> Result<Request<'a>> {
        // SAFETY: no semaphores.
        unsafe { self.post_with(team, coll, &[], &[]) }
    }

    pub(crate) unsafe fn post_with<'a>(
        &'a self,
        team: Team,
        coll: Collective<'a>,
        waits: &[SemaphorePoint],
        signals: &[SemaphorePoint],
    ) -> Result<Request<'a>> {
        // SAFETY: the caller's guarantee on the semaphores.
        unsafe { self.post_prepared(vec![self.prepare(team, &coll)?], waits, signals) }
    }

    pub(crate) fn post_batch<'a>(
        &'a self,
        colls: &[(Team, Collective<'a>)],
    ) -> Result<Request<'a>> {
        if colls.is_empty() {
            return Err(Error::InvalidArgument("post_batch: no collectives".into()));
        }
        let ps = colls
            .iter()
            .map(|(t, c)| self.prepare(*t, c))
            .collect::<Result<Vec<_>>>()?;
        // SAFETY: no semaphores.
        unsafe { self.post_prepared(ps, &[], &[]) }
    }

    /// Records `ps` into a command buffer of the context's, submits it.
    ///
    /// # Safety
    /// As [`Context::post_with`](crate::Context::post_with) for the semaphores.
    unsafe fn post_prepared<'a>(
        &'a self,
        ps: Vec<Prepared>,
        waits: &[SemaphorePoint],
        signals: &[SemaphorePoint],
    ) -> Result<Request<'a>> {
        let q = self.queue_state()?;
        q.reap_abandoned();
        let mut cmds = match lock(&q.spare).pop() {
            Some(c) => c,
            None => OwnedCommands::new(&self.gpu)?,
        };
        let slot = q.completions.take()?;
        let name = if ps.len() == 1 {
            ps[0].name.clone()
        } else {
            format!("chain of {} queued collectives", ps.len())
        };
        let recorded = cmds
            .begin(false)
            .and_then(|r| self.record_prepared(&r, &ps, slot));
        let submitted = recorded
            .and_then(|_| cmds.end())
            .and_then(|_| cmds.submit(waits, signals));
        if let Err(e) = submitted {
            q.completions.give(slot);
            return Err(e);
        }
        q.progress.shared.add();
        Ok(Request {
            p: Pending {
                ctx: self,
                slot,
                name,
                since: Some(Instant::now()),
                finished: false,
            },
            cmds: Some(cmds),
        })
    }

    pub(crate) fn persistent<'a>(
        &'a self,
        team: Team,
        coll: Collective<'a>,
    ) -> Result<Persistent<'a>> {
        let p = self.prepare(team, &coll)?;
        let q = self.queue_state()?;
        let mut cmds = OwnedCommands::new(&self.gpu)?;
        let slot = q.completions.take()?;
        let recorded = cmds
            .begin(true)
            .and_then(|r| self.record_prepared(&r, std::slice::from_ref(&p), slot));
        if let Err(e) = recorded.and_then(|_| cmds.end()) {
            q.completions.give(slot);
            return Err(e);
        }
        Ok(Persistent {
            p: Pending {
                ctx: self,
                slot,
                name: p.name,
                since: None,
                finished: true,
            },
            cmds,
            running: false,
        })
    }
}

/// The host collective's pull kernel call for `c` on `m` (`None`: none fits:
/// collect), with its arguments and work items (as the blocking forms
/// compute them, `crate::collective`).
fn pull_call(
    c: &Collective,
    m: &crate::runtime::rendezvous::Members,
    q: &QueueArgs,
) -> Option<(HostCall, HostArgs, u64)> {
    let size = u64::from(m.shape.size);
    let es = c.dest.map_or(1, |d| d.es);
    let n = c.nelems;
    let bytes = n * es;
    let mut a = HostArgs {
        start: m.shape.start,
        stride: m.shape.stride as u32,
        size: m.shape.size,
        me: m.me,
        dest: q.dest,
        source: q.source,
        ..Default::default()
    };
    let nonzero = |items: u64| if bytes == 0 { 0 } else { items };
    Some(match c.call {
        QueueCall::Broadcast => {
            a.n = bytes as u32;
            (
                HostCall::Broadcast {
                    root: c.root,
                    skip_root: false,
                },
                a,
                nonzero(bytes.div_ceil(4) + 1),
            )
        }
        QueueCall::Fcollect | QueueCall::Alltoall => {
            a.n = bytes as u32;
            let call = if c.call == QueueCall::Fcollect {
                HostCall::Fcollect
            } else {
                HostCall::Alltoall
            };
            (call, a, nonzero((bytes * size).div_ceil(4) + size))
        }
        QueueCall::Alltoalls => {
            a.n = n as u32;
            let call = HostCall::Alltoalls {
                elem_bytes: es as u32,
                dst: c.dst as u32,
                sst: c.sst as u32,
            };
            (call, a, n * size)
        }
        QueueCall::Reduce(kind, op) => {
            a.n = n as u32;
            let items = if kind.bytes == 8 {
                n.div_ceil(size)
            } else {
                bytes.div_ceil(4).div_ceil(size) + 1
            };
            (HostCall::Reduce { kind, op }, a, nonzero(items))
        }
        // UCC's calls: their device forms, in one workgroup at most.
        QueueCall::Barrier
        | QueueCall::Sync
        | QueueCall::Collect
        | QueueCall::Gather
        | QueueCall::Scatter
        | QueueCall::ReduceScatter(..)
        | QueueCall::Scan(..) => return None,
    })
}
