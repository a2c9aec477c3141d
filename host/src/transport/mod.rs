//! How this PE reaches each peer: the transports.
//!
//! - [`Transport::Direct`]: the peer's heap block is imported into this PE's
//!   device (same physical device and driver). Kernels bind it and load and
//!   store it; the host reaches it through the mapping when there is one.
//! - [`Transport::Staged`]: the peer is on another device (or
//!   `VKSHMEM_TRANSPORT=staged` pretends so). Its heap is not imported. Host
//!   collectives move the data through staging buffers in the node segment,
//!   host memory that every PE of the node maps
//!   (`crate::collective::staged`): each member copies its part from its own
//!   heap into its staging buffer, and every member copies what it needs from
//!   the others' buffers into its own heap. Nothing touches a peer's device
//!   memory. Where the heap is not host-mapped the device does those copies,
//!   with the staging buffers imported into it
//!   (`VK_EXT_external_memory_host`, `crate::vk::host_import`).
//!
//! The choice is made at init, from the device and driver UUIDs every PE
//! publishes (`crate::heap`), and is symmetric: PE a reaches PE b the way b
//! reaches a. `RUST_LOG=info` reports it; [`crate::Context::transport`] answers
//! for one peer.
//!
//! - [`Transport::Remote`]: the peer is on another node (mpirun, cargo
//!   feature `mpi`). Host collectives on a team that spans nodes run the
//!   staged transport's rounds hierarchically: within each node through its
//!   staging buffers, across nodes by an MPI allgather among the nodes'
//!   first members, which write the other nodes' parts into their node's
//!   staging buffers (`crate::collective::staged`).
//!
//! Device code reaches a staged peer through this PE's proxy thread
//! ([`proxy`]): requests posted into a ring in the control region, carried
//! to the peer's proxy through its inbox in the node segment, or over MPI
//! to a peer on another node.

pub mod proxy;
pub(crate) mod word;

use crate::error::Result;

/// How this PE reaches a peer's symmetric heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Through the heap itself: imported into this PE's device (or this PE's
    /// own heap).
    Direct,
    /// Through staging buffers in node shared memory: the peer is on another
    /// device of the node.
    Staged,
    /// Through MPI: the peer is on another node (a job of several nodes
    /// under mpirun, cargo feature `mpi`). Host collectives go through the
    /// node's staging buffers and MPI among the nodes' first members; device
    /// code's requests go through the proxy threads, which carry them over
    /// MPI.
    Remote,
}

impl Transport {
    /// Its name in logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Direct => "direct",
            Transport::Staged => "staged",
            Transport::Remote => "remote",
        }
    }
}

/// What `VKSHMEM_TRANSPORT` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Direct where the device is shared, staged elsewhere.
    Auto,
    /// Direct only within groups of this many consecutive PEs (`pe / K`),
    /// staged across them; `Staged(1)`: staged for every peer.
    Staged(u32),
}

impl Mode {
    /// Whether PEs `a` and `b` may be direct under this mode (they are when,
    /// besides, they share a device).
    pub fn groups_together(self, a: u32, b: u32) -> bool {
        match self {
            Mode::Auto => true,
            Mode::Staged(k) => a / k == b / k,
        }
    }

    /// The group size it asks for (0: `auto`), as published at init.
    pub fn code(self) -> u32 {
        match self {
            Mode::Auto => 0,
            Mode::Staged(k) => k,
        }
    }

    /// How it is written in `VKSHMEM_TRANSPORT`.
    pub fn name(self) -> String {
        match self {
            Mode::Auto => "auto".into(),
            Mode::Staged(1) => "staged".into(),
            Mode::Staged(k) => format!("staged:{k}"),
        }
    }
}

impl Mode {
    /// From `VKSHMEM_TRANSPORT` ([`crate::config::ENV_TRANSPORT`]).
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) for a value other than `auto`,
    /// `staged` or `staged:K`.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Mode> {
        Ok(match crate::config::transport(get)? {
            None => Mode::Auto,
            Some(k) => Mode::Staged(k),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ENV_TRANSPORT;
    use crate::error::Error;

    #[test]
    fn the_mode_is_read_and_bad_values_named() {
        let env = |v: Option<&'static str>| {
            move |k: &str| {
                (k == ENV_TRANSPORT)
                    .then_some(v)
                    .flatten()
                    .map(String::from)
            }
        };
        assert_eq!(Mode::from_env(env(None)).unwrap(), Mode::Auto);
        assert_eq!(Mode::from_env(env(Some("auto"))).unwrap(), Mode::Auto);
        assert_eq!(
            Mode::from_env(env(Some(" staged "))).unwrap(),
            Mode::Staged(1)
        );
        assert_eq!(
            Mode::from_env(env(Some("staged:3"))).unwrap(),
            Mode::Staged(3)
        );
        for bad in ["proxy", "staged:0", "staged:", "staged:x", "staged:-2"] {
            match Mode::from_env(env(Some(bad))) {
                Err(Error::Config { var, value, .. }) => {
                    assert_eq!((var, value.as_str()), (ENV_TRANSPORT, bad))
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn groups_are_consecutive_pes() {
        assert!(Mode::Auto.groups_together(0, 7));
        assert!(!Mode::Staged(1).groups_together(0, 1));
        assert!(Mode::Staged(1).groups_together(3, 3));
        let two = Mode::Staged(2);
        assert!(two.groups_together(0, 1) && two.groups_together(2, 3));
        assert!(!two.groups_together(1, 2) && !two.groups_together(0, 3));
        // A last group may be short (5 PEs in groups of 2: {0,1} {2,3} {4}).
        assert!(!two.groups_together(3, 4));
        assert_eq!((two.code(), two.name()), (2, "staged:2".to_string()));
        assert_eq!(Mode::Staged(1).name(), "staged");
    }
}
