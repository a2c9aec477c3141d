//! Jobs started by `mpirun` (cargo feature `mpi`): the PEs are the ranks of
//! `MPI_COMM_WORLD` (PE = rank), and the ranks of a node meet as a vkshmrun
//! job's PEs do, through a bootstrap endpoint ([`Server`]) that the node's
//! first rank runs in its own process; its name and secret reach the node's
//! other ranks by `MPI_Bcast` over the node's communicator.
//!
//! A **node** is the ranks that share memory (`MPI_Comm_split_type` with
//! `MPI_COMM_TYPE_SHARED`); `VKSHMEM_NODE_SIZE=K` splits them further into
//! nodes of `K` consecutive ranks, so that the paths between nodes can be
//! tested on one machine. The fd exchange and the sync plane stay inside a node.
//!
//! MPI is initialised here with `MPI_THREAD_MULTIPLE`: vkshmem makes its MPI
//! calls from the thread that calls init and finalize, and the context they
//! live in may be dropped on any thread.
//!
//! What is not built yet: jobs of several nodes (a transport between nodes,
//! driven by the proxy thread, and hierarchical host collectives). Such a job
//! fails at init with [`Error::Mpi`] naming the nodes.

use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::*;

use super::server::Server;
use super::wire::SECRET_LEN;
use crate::config::{JobEnv, ENV_NODE_SIZE};
use crate::error::{Error, Result};

/// Longest endpoint name sent to the node's ranks (an abstract socket name).
const MAX_ENDPOINT: usize = 108;

/// This process's part of an MPI job: MPI itself (finalized when this goes),
/// the node's communicator and, on the node's first rank, the endpoint.
pub struct MpiJob {
    // Field order is drop order: the endpoint goes before MPI is finalized.
    server: Option<Server>,
    node: SimpleCommunicator,
    world: SimpleCommunicator,
    finished: bool,
    _universe: mpi::environment::Universe,
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
            .field("node_rank", &self.node.rank())
            .field("node_size", &self.node.size())
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

/// Reads `VKSHMEM_NODE_SIZE` through `get`.
pub fn node_size(get: impl Fn(&str) -> Option<String>) -> Result<Option<u32>> {
    let Some(v) = get(ENV_NODE_SIZE) else {
        return Ok(None);
    };
    match v.trim().parse::<u32>() {
        Ok(k) if k > 0 => Ok(Some(k)),
        _ => Err(Error::Config {
            var: ENV_NODE_SIZE,
            value: v,
            why: "must be a number of ranks per node, at least 1".into(),
        }),
    }
}

/// Joins the MPI job this process is a rank of: initialises MPI, finds this
/// rank's node and meets its ranks' endpoint (run by the node's first rank).
/// `timeout`: the endpoint's watchdog ([`Server::start_with_timeout`]).
///
/// # Errors
/// [`Error::Mpi`] when MPI was initialised already, lacks
/// `MPI_THREAD_MULTIPLE`, or the job spans several nodes;
/// [`Error::Config`] for a bad `VKSHMEM_NODE_SIZE`; the endpoint's errors.
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
    let nodes = size / node.size() as u32;
    if node.size() as u32 != size {
        return Err(Error::Mpi(format!(
            "the job spans {nodes} or more nodes (this rank's node has {} of {size} ranks){}: jobs of several nodes are not supported yet; run all ranks on one node without VKSHMEM_NODE_SIZE",
            node.size(),
            if node_size.is_some() { " by VKSHMEM_NODE_SIZE" } else { "" }
        )));
    }
    // The node's first rank runs the endpoint, for the whole job (one node).
    let leader = node.process_at_rank(0);
    let mut name = [0u8; MAX_ENDPOINT + 1];
    let mut secret = [0u8; SECRET_LEN];
    let server = if node.rank() == 0 {
        let s = Server::start_with_timeout(size, timeout)?;
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
            node,
            world,
            finished: false,
            _universe: universe,
        },
    ))
}

impl MpiJob {
    /// After this PE said goodbye to the endpoint: waits for every rank of the
    /// node to have done so (`MPI_Barrier` on the node), then stops the
    /// endpoint. MPI is finalized when this is dropped.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.node.barrier();
        self.server.take();
    }

    /// Ends the whole MPI job at once (`MPI_Abort`), saying why on stderr.
    pub fn abort(&self, why: &str) -> ! {
        eprintln!(
            "vkshmem: PE {} aborts the MPI job: {why}",
            self.world.rank()
        );
        self.world.abort(1)
    }
}

impl Drop for MpiJob {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Peers may wait for this rank forever: end the job.
            self.abort("a panic while the context was live");
        }
        self.finish();
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

    #[test]
    fn node_size_is_checked() {
        let env = |v: &'static str| move |k: &str| (k == ENV_NODE_SIZE).then(|| v.to_string());
        assert_eq!(node_size(|_| None).unwrap(), None);
        assert_eq!(node_size(env("4")).unwrap(), Some(4));
        assert!(matches!(node_size(env("0")), Err(Error::Config { .. })));
        assert!(matches!(node_size(env("two")), Err(Error::Config { .. })));
    }
}
