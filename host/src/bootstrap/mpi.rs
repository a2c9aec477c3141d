//! Jobs started by `mpirun` (cargo feature `mpi`): the PEs are the ranks of
//! `MPI_COMM_WORLD` (PE = rank).
//!
//! A **node** is the ranks that share memory (`MPI_Comm_split_type` with
//! `MPI_COMM_TYPE_SHARED`); `VKSHMEM_NODE_SIZE=K` splits them further into
//! nodes of `K` consecutive ranks, so that the paths between nodes can be
//! tested on one machine. The ranks of a node meet as a vkshmrun job's PEs
//! do, through a bootstrap endpoint ([`Server`]) that the node's first rank
//! runs in its own process; its name and secret reach the node's other ranks
//! by `MPI_Bcast` over the node's communicator. The fd exchange, the sync
//! plane and the staging buffers stay inside a node.
//!
//! In a job of **several nodes** the endpoint serves its node only, and
//! everything over PEs of several nodes goes over MPI:
//! - the job's own collectives (init, allocation and team agreement, the
//!   meetings of teams that span nodes): [`MpiWorld`], the bootstrap's
//!   [`JobWide`], on its own duplicate of `MPI_COMM_WORLD`, with a
//!   communicator per member set (`MPI_Comm_create_group`, made on first use
//!   and kept);
//! - the proxy threads' messages to PEs on other nodes (device code's
//!   requests, host RMA): [`ProxyLink`], on another duplicate.
//!
//! MPI is initialised here with `MPI_THREAD_MULTIPLE`: host collectives call
//! MPI from the thread that calls them, the proxy thread from its own, and
//! the context may be dropped on any thread.

use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::*;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mpi::request::{Request, StaticScope};
use mpi::Tag;

use super::client::JobWide;
use super::server::Server;
use super::wire::SECRET_LEN;
use crate::config::{node_size, JobEnv};
use crate::error::{Error, Result};

/// Longest endpoint name sent to the node's ranks (an abstract socket name).
const MAX_ENDPOINT: usize = 108;

/// This process's part of an MPI job: MPI itself (finalized when this goes),
/// the node's communicator and, on the node's first rank, the endpoint.
pub struct MpiJob {
    // Field order is drop order: the endpoint goes before MPI is finalized.
    server: Option<Server>,
    /// The node's communicator (freed before MPI is finalized).
    node: Option<SimpleCommunicator>,
    world: SimpleCommunicator,
    /// Every PE's node (the world rank of its node's first rank), by PE.
    nodes: Vec<u32>,
    timeout: Option<Duration>,
    finished: bool,
    /// MPI itself: finalized at drop after [`MpiJob::finish`], never
    /// otherwise (see `Drop`).
    universe: std::mem::ManuallyDrop<mpi::environment::Universe>,
}

// SAFETY: MPI is initialised with MPI_THREAD_MULTIPLE (checked in `join`), so
// its calls may come from any thread; the communicators are handles MPI owns,
// and `&self` methods make no MPI call (`finish` takes `&mut self`).
unsafe impl Send for MpiJob {}
// SAFETY: as above; no method taking `&self` touches MPI.
unsafe impl Sync for MpiJob {}

impl std::fmt::Debug for MpiJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiJob")
            .field("rank", &self.world.rank())
            .field("node_rank", &self.node.as_ref().map(|n| n.rank()))
            .field("node_size", &self.node.as_ref().map(|n| n.size()))
            .finish()
    }
}

/// Which ranks form this rank's node: those sharing memory with it, split into
/// groups of `node_size` consecutive world ranks when given (pure).
pub fn node_color(world_rank: u32, node_size: Option<u32>) -> u32 {
    match node_size {
        Some(k) => world_rank / k,
        None => 0,
    }
}

/// Joins the MPI job this process is a rank of: initialises MPI, finds this
/// rank's node and meets its ranks' endpoint (run by the node's first rank).
/// `timeout`: the endpoint's watchdog ([`Server::start_with_timeout`]).
///
/// # Errors
/// [`Error::Mpi`](crate::Error::Mpi) when MPI was initialised already, lacks
/// `MPI_THREAD_MULTIPLE`, or the job spans several nodes;
/// [`Error::Config`](crate::Error::Config) for a bad `VKSHMEM_NODE_SIZE`; the endpoint's errors.
pub fn join(
    get: impl Fn(&str) -> Option<String>,
    timeout: Option<std::time::Duration>,
) -> Result<(JobEnv, MpiJob)> {
    let node_size = node_size(&get)?;
    let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Multiple)
        .ok_or_else(|| {
            Error::Mpi("MPI is initialised already: vkshmem initialises it itself (call vkshmem's init before any MPI call)".into())
        })?;
    if level < mpi::Threading::Multiple {
        return Err(Error::Mpi(format!(
            "this MPI gives thread level {level:?}; vkshmem needs MPI_THREAD_MULTIPLE"
        )));
    }
    let world = universe.world();
    let (rank, size) = (world.rank() as u32, world.size() as u32);
    if let Some((launcher, var, ranks)) = crate::config::foreign_launch(&get) {
        if ranks != size {
            return Err(Error::Mpi(format!(
                "{launcher} started this process as one of {ranks} ranks ({var}={ranks}), but MPI sees {size} rank{}: the launcher is not the one of the MPI library vkshmem was built with (Open MPI's mpirun for Open MPI)",
                if size == 1 { "" } else { "s" }
            )));
        }
    }
    let shared = world.split_shared(0);
    let color = Color::with_value(node_color(rank, node_size) as i32);
    let node = shared
        .split_by_color(color)
        .ok_or_else(|| Error::Mpi("MPI_Comm_split gave this rank no node".into()))?;
    // Every PE's node, named by its first rank; the node's PEs in order.
    let mut node_pes = vec![0i32; node.size() as usize];
    node.all_gather_into(&(rank as i32), &mut node_pes[..]);
    let node_pes: Vec<u32> = node_pes.iter().map(|&r| r as u32).collect();
    let mut nodes = vec![0u32; size as usize];
    world.all_gather_into(&node_pes[0], &mut nodes[..]);
    if node_pes.windows(2).any(|w| w[1] <= w[0]) {
        return Err(Error::Mpi(format!(
            "MPI ordered this node's ranks {node_pes:?} out of rank order"
        )));
    }
    // The node's first rank runs the endpoint for the node's PEs.
    let leader = node.process_at_rank(0);
    let mut name = [0u8; MAX_ENDPOINT + 1];
    let mut secret = [0u8; SECRET_LEN];
    let server = if node.rank() == 0 {
        let s = Server::start_for_node(size, &node_pes, timeout)?;
        if nodes.iter().any(|&n| n != nodes[0]) {
            // The other nodes' PEs do not hear this endpoint: a failure here
            // ends the whole job, naming the PE.
            let node_id = node_pes[0];
            s.on_failure(move |pe, how, calls| {
                // The node's PEs report the failure themselves first.
                std::thread::sleep(Duration::from_millis(300));
                eprintln!(
                    "vkshmem: the endpoint of the node of rank {node_id} aborts the MPI job: PE {pe} {how}; its node's calls then:\n{calls}"
                );
                SimpleCommunicator::world().abort(1);
            });
        }
        let ep = s.endpoint().as_bytes();
        if ep.len() > MAX_ENDPOINT {
            return Err(Error::Mpi(format!(
                "endpoint name {:?} too long",
                s.endpoint()
            )));
        }
        name[0] = ep.len() as u8;
        name[1..=ep.len()].copy_from_slice(ep);
        secret = *s.secret();
        Some(s)
    } else {
        None
    };
    leader.broadcast_into(&mut name[..]);
    leader.broadcast_into(&mut secret[..]);
    let len = usize::from(name[0]).min(MAX_ENDPOINT);
    let endpoint = String::from_utf8(name[1..=len].to_vec())
        .map_err(|_| Error::Mpi("the endpoint name is not UTF-8".into()))?;
    let job = JobEnv {
        pe: rank,
        npes: size,
        bootstrap: Some((endpoint, secret.to_vec())),
    };
    Ok((
        job,
        MpiJob {
            server,
            node: Some(node),
            world,
            nodes,
            timeout,
            finished: false,
            universe: std::mem::ManuallyDrop::new(universe),
        },
    ))
}

impl MpiJob {
    /// Every PE's node (the world rank of its first PE), by PE.
    pub fn nodes(&self) -> &[u32] {
        &self.nodes
    }

    /// Whether the job spans several nodes.
    pub fn several_nodes(&self) -> bool {
        self.nodes.iter().any(|&n| n != self.nodes[0])
    }

    /// The job's collectives over MPI (for [`super::Bootstrap::set_job`]),
    /// on a communicator of their own.
    pub fn job_wide(&self) -> Box<dyn JobWide> {
        Box::new(MpiWorld {
            comm: self.world.duplicate(),
            groups: HashMap::new(),
            timeout: self.timeout,
        })
    }

    /// The proxy thread's link to PEs on other nodes, on a communicator of
    /// its own. Collective over the job.
    pub fn proxy_link(&self) -> ProxyLink {
        let me = self.world.rank() as usize;
        ProxyLink {
            comm: self.world.duplicate(),
            remote: self.nodes.iter().map(|&n| n != self.nodes[me]).collect(),
            sends: Vec::new(),
        }
    }

    /// After this PE said goodbye to the endpoint: waits for every rank of the
    /// node to have done so (`MPI_Barrier` on the node), then stops the
    /// endpoint. MPI is finalized when this is dropped.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if let Some(n) = &self.node {
            n.barrier();
        }
        self.server.take();
    }

    /// Ends the whole MPI job at once (`MPI_Abort`), saying why on stderr.
    pub fn abort(&self, why: &str) -> ! {
        self.abort_with(1, why)
    }

    /// [`MpiJob::abort`] with `status` as the job's exit status.
    pub fn abort_with(&self, status: i32, why: &str) -> ! {
        eprintln!(
            "vkshmem: PE {} aborts the MPI job: {why}",
            self.world.rank()
        );
        self.world.abort(status)
    }
}

impl Drop for MpiJob {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Peers may wait for this rank forever: end the job.
            self.abort("a panic while the context was live");
        }
        if !self.finished {
            // Dropped without `finalize` (an error on this PE, most
            // likely): its peers may be waiting for it in a collective,
            // and MPI_Finalize (or the node's barrier) would wait for
            // them. Leave MPI unfinalized instead: the process exits, and
            // mpirun ends the job, as it does for any rank that exits
            // without MPI_Finalize. The endpoint stops first, so the
            // node's PEs hear of it.
            eprintln!(
                "vkshmem: PE {} leaves the MPI job without finalize (after an error?): the job ends",
                self.world.rank()
            );
            self.server.take();
            return;
        }
        // The node's communicator goes before MPI is finalized (the world's
        // is MPI's own).
        self.node.take();
        // SAFETY: dropped once, here; `universe` is not used after this.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.universe) };
    }
}

/// Waits for `req`, making MPI progress; past `timeout` the job ends
/// (`MPI_Abort`): the PEs of an MPI collective cannot be told apart when one
/// never arrives, and the others must not wait forever.
fn wait<'a, D: ?Sized, S: mpi::request::Scope<'a>>(
    comm: &SimpleCommunicator,
    mut req: Request<'a, D, S>,
    timeout: Option<Duration>,
    what: &str,
) {
    let start = Instant::now();
    let mut polls = 0u32;
    loop {
        match req.test() {
            Ok(_) => return,
            Err(r) => req = r,
        }
        polls = polls.wrapping_add(1);
        if polls % 64 == 0 {
            if let Some(t) = timeout.filter(|t| start.elapsed() > *t) {
                eprintln!(
                    "vkshmem: PE {} waited {:.1} s in {what} over MPI (VKSHMEM_WAIT_TIMEOUT): a PE of another node did not arrive; aborting the job",
                    comm.rank(),
                    t.as_secs_f64()
                );
                comm.abort(1);
            }
        }
        std::thread::yield_now();
    }
}

/// Every rank's `data` over `comm`, in rank order.
fn gather_on(
    comm: &SimpleCommunicator,
    data: &[u8],
    timeout: Option<Duration>,
    what: &str,
) -> Vec<Vec<u8>> {
    let n = comm.size() as usize;
    tracing::trace!("rank {} of {n}: {what}, {} bytes", comm.rank(), data.len());
    let len = i32::try_from(data.len()).unwrap_or(i32::MAX);
    let mut lens = vec![0i32; n];
    mpi::request::scope(|sc| {
        wait(
            comm,
            comm.immediate_all_gather_into(sc, &len, &mut lens[..]),
            timeout,
            what,
        );
    });
    let displs: Vec<i32> = lens
        .iter()
        .scan(0i32, |at, &l| {
            let d = *at;
            *at = at.saturating_add(l);
            Some(d)
        })
        .collect();
    let total = lens.iter().map(|&l| l as usize).sum();
    let mut all = vec![0u8; total];
    if total > 0 {
        let mut part = mpi::datatype::PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        mpi::request::scope(|sc| {
            wait(
                comm,
                comm.immediate_all_gather_varcount_into(sc, data, &mut part),
                timeout,
                what,
            );
        });
    }
    (0..n)
        .map(|i| {
            let at = displs[i] as usize;
            all[at..at + lens[i] as usize].to_vec()
        })
        .collect()
}

/// The job's collectives over MPI ([`JobWide`]): a job of several nodes,
/// whose endpoints serve one node each.
pub struct MpiWorld {
    comm: SimpleCommunicator,
    /// A communicator per member set, made at its first use.
    groups: HashMap<Vec<u32>, SimpleCommunicator>,
    timeout: Option<Duration>,
}

// SAFETY: MPI runs at MPI_THREAD_MULTIPLE (checked in `join`): its handles
// may be used from any thread; this one is used by one thread at a time
// (`&mut self`, under the context's bootstrap lock).
unsafe impl Send for MpiWorld {}

impl std::fmt::Debug for MpiWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiWorld")
            .field("rank", &self.comm.rank())
            .field("groups", &self.groups.len())
            .finish()
    }
}

/// The tag of `MPI_Comm_create_group` for member sets.
const GROUP_TAG: Tag = 0x766b;

impl JobWide for MpiWorld {
    fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(gather_on(
            &self.comm,
            data,
            self.timeout,
            "an allgather of the job",
        ))
    }

    fn barrier(&mut self) -> Result<()> {
        // An allgather of nothing, not MPI_Ibarrier: every job collective is
        // then the same MPI operation, so ranks out of step (one in a
        // barrier, another in an allocation's agreement) meet, and the
        // caller's comparison reports it, where mixed MPI collectives on one
        // communicator would fail inside MPI (MPI_ERR_TRUNCATE).
        gather_on(&self.comm, &[], self.timeout, "a barrier of the job");
        Ok(())
    }

    fn group_allgather(&mut self, members: &[u32], data: &[u8]) -> Result<Vec<Vec<u8>>> {
        let me = self.comm.rank() as u32;
        if !members.contains(&me) {
            return Err(Error::InvalidArgument(format!(
                "PE {me} gathers over {members:?}, which it is not in"
            )));
        }
        if members.len() == 1 {
            return Ok(vec![data.to_vec()]);
        }
        let timeout = self.timeout;
        let comm = self.comm_for(members)?;
        Ok(gather_on(
            comm,
            data,
            timeout,
            "a meeting of PEs on several nodes",
        ))
    }

    fn group_allreduce(
        &mut self,
        members: &[u32],
        buf: &mut [u8],
        kind: &str,
        op: vkshmem_device::collectives::ReduceOp,
    ) -> Result<()> {
        let comm = self.comm_for(members)?;
        match kind {
            "u8" => allreduce::<u8>(comm, buf, op),
            "i8" => allreduce::<i8>(comm, buf, op),
            "u16" => allreduce::<u16>(comm, buf, op),
            "i16" => allreduce::<i16>(comm, buf, op),
            "u32" => allreduce::<u32>(comm, buf, op),
            "i32" => allreduce::<i32>(comm, buf, op),
            "u64" => allreduce::<u64>(comm, buf, op),
            "i64" => allreduce::<i64>(comm, buf, op),
            "f32" => allreduce::<f32>(comm, buf, op),
            "f64" => allreduce::<f64>(comm, buf, op),
            _ => Err(Error::Mpi(format!(
                "no MPI reduction for elements of {kind}"
            ))),
        }
    }
}

impl MpiWorld {
    /// The communicator of `members` (job PEs, this PE among them), made
    /// (`MPI_Comm_create_group`, collective over them) at its first use.
    fn comm_for(&mut self, members: &[u32]) -> Result<&SimpleCommunicator> {
        let me = self.comm.rank() as u32;
        if members.len() as i32 == self.comm.size()
            && members.iter().enumerate().all(|(i, &p)| p == i as u32)
        {
            return Ok(&self.comm);
        }
        if !self.groups.contains_key(members) {
            let ranks: Vec<i32> = members.iter().map(|&p| p as i32).collect();
            let group = self.comm.group().include(&ranks);
            let comm = self
                .comm
                .split_by_subgroup_with_tag(&group, GROUP_TAG)
                .ok_or_else(|| {
                    Error::Mpi(format!(
                        "MPI_Comm_create_group over {members:?} gave PE {me} no communicator"
                    ))
                })?;
            self.groups.insert(members.to_vec(), comm);
        }
        Ok(&self.groups[members])
    }
}

/// `MPI_Allreduce` of `buf` (elements of `T`, aligned) over `comm`, in
/// place. Blocking: MPI's own collective algorithms, at its speed (a rank
/// that dies ends the job through mpirun; the wait timeout does not apply).
fn allreduce<T>(
    comm: &SimpleCommunicator,
    buf: &mut [u8],
    op: vkshmem_device::collectives::ReduceOp,
) -> Result<()>
where
    T: bytemuck::Pod + mpi::datatype::Equivalence,
{
    use mpi::collective::SystemOperation as S;
    use vkshmem_device::collectives::ReduceOp as R;
    let op = match op {
        R::Sum => S::sum(),
        R::Prod => S::product(),
        R::Max => S::max(),
        R::Min => S::min(),
        R::And => S::bitwise_and(),
        R::Or => S::bitwise_or(),
        R::Xor => S::bitwise_xor(),
    };
    let n = buf.len() / std::mem::size_of::<T>();
    let mut send = vec![T::zeroed(); n];
    bytemuck::cast_slice_mut::<T, u8>(&mut send)
        .copy_from_slice(&buf[..n * std::mem::size_of::<T>()]);
    let recv: &mut [T] = bytemuck::try_cast_slice_mut(buf).map_err(|e| {
        Error::Mpi(format!(
            "a reduction's buffer is not aligned for its elements: {e}"
        ))
    })?;
    comm.all_reduce_into(&send[..], recv, op);
    Ok(())
}

/// The proxy thread's messages to PEs on other nodes
/// ([`crate::transport::proxy::RemoteLink`]): `MPI_Isend` of each message
/// (header and payload, at most one inbox cell) to the PE's rank, probed for
/// and received on the other side. MPI keeps each pair's messages in order,
/// as the inboxes do.
pub struct ProxyLink {
    comm: SimpleCommunicator,
    remote: Vec<bool>,
    /// Sends in flight and the buffer each reads (leaked until it completes).
    sends: Vec<(Request<'static, [u8]>, *mut [u8])>,
}

// SAFETY: MPI_THREAD_MULTIPLE (see MpiWorld); the link is used by the proxy
// thread alone once handed to it; the buffers in `sends` are owned by it.
unsafe impl Send for ProxyLink {}

/// The tag of proxy messages.
const PROXY_TAG: Tag = 0x7078;

impl crate::transport::proxy::RemoteLink for ProxyLink {
    fn remote(&self, pe: u32) -> bool {
        self.remote.get(pe as usize) == Some(&true)
    }

    fn send(&mut self, to: u32, bytes: Vec<u8>) {
        let buf: &'static mut [u8] = Box::leak(bytes.into_boxed_slice());
        let ptr: *mut [u8] = buf;
        let req = self
            .comm
            .process_at_rank(to as i32)
            .immediate_send_with_tag(StaticScope, &*buf, PROXY_TAG);
        self.sends.push((req, ptr));
    }

    fn poll(&mut self) -> Option<Vec<u8>> {
        for (req, ptr) in std::mem::take(&mut self.sends) {
            match req.test() {
                Ok(_) => {
                    // SAFETY: `ptr` came from Box::leak in `send`, and MPI
                    // is done reading it (the request completed).
                    drop(unsafe { Box::from_raw(ptr) });
                }
                Err(req) => self.sends.push((req, ptr)),
            }
        }
        use mpi::point_to_point::MatchedReceiveVec;
        let probed = self
            .comm
            .any_process()
            .immediate_matched_probe_with_tag(PROXY_TAG)?;
        Some(probed.matched_receive_vec::<u8>().0)
    }

    fn idle(&self) -> bool {
        self.sends.is_empty()
    }
}

impl Drop for ProxyLink {
    fn drop(&mut self) {
        // Sends still in flight at the end: give them a moment, then leak
        // their buffers rather than free memory MPI may read.
        let start = Instant::now();
        while !self.sends.is_empty() && start.elapsed() < Duration::from_millis(500) {
            let _ = crate::transport::proxy::RemoteLink::poll(self);
        }
        for (req, _) in self.sends.drain(..) {
            std::mem::forget(req);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_of_k_consecutive_ranks() {
        assert_eq!(node_color(5, None), 0);
        assert_eq!(
            (0..6).map(|r| node_color(r, Some(2))).collect::<Vec<_>>(),
            [0, 0, 1, 1, 2, 2]
        );
        assert_eq!(
            (0..5).map(|r| node_color(r, Some(3))).collect::<Vec<_>>(),
            [0, 0, 0, 1, 1]
        );
    }
}
