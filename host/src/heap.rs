//! The symmetric heap: this PE's exported block and every reachable peer's block,
//! imported, indexed by PE.
//!
//! Set-up is collective: every PE allocates its block, the PEs allgather
//! `(deviceUUID, driverUUID, size, memory type)`, exchange fds, and each PE imports the
//! blocks of the PEs on its own physical device. A PE on another device (or every
//! peer, with `VKSHMEM_TRANSPORT=staged`) is reached through staging instead
//! ([`crate::transport`]); its block is not imported, nor is that of a PE on
//! another node (a job of several nodes under mpirun: `nodes`, whose fds
//! the node's endpoint does not carry). A final allgather of each
//! PE's outcome makes a failure anywhere an error everywhere.

use std::os::fd::AsFd;
use std::sync::Arc;

use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};
use crate::transport::{Mode, Transport};
use crate::vk::memory::SharedMemory;
use crate::vk::Gpu;

/// What each PE publishes about its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct BlockInfo {
    device_uuid: [u8; 16],
    driver_uuid: [u8; 16],
    /// The size every PE was asked for (VKSHMEM_SYMMETRIC_SIZE).
    requested: u64,
    /// The allocation's real size (requested, rounded up by the driver).
    size: u64,
    memory_type: u32,
    /// The transport mode this PE was asked for ([`Mode::code`]: 0 for
    /// `auto`, K for `staged:K`): every PE must ask the same, so that
    /// transports are symmetric.
    staged: u32,
    /// 1 where this PE's driver keeps kernels of several processes moving
    /// while one spins ([`crate::vk::DeviceInfo::cross_process_waits`]).
    cross_process_waits: u32,
    _pad: u32,
}

/// Whether two PEs of one node (`nodes[pe]`, one node when `None`) share a
/// device (the same device and driver UUIDs, whatever the transport mode)
/// whose driver cannot switch between processes while a kernel spins.
fn waits_blocked(infos: &[BlockInfo], nodes: Option<&[u32]>) -> bool {
    let node = |p: usize| nodes.and_then(|n| n.get(p).copied()).unwrap_or(0);
    (0..infos.len()).any(|i| {
        (0..i).any(|j| {
            node(i) == node(j)
                && infos[i].device_uuid == infos[j].device_uuid
                && infos[i].driver_uuid == infos[j].driver_uuid
                && infos[i].cross_process_waits == 0
        })
    })
}

/// How this PE reaches PE `i`'s block.
#[derive(Debug)]
pub enum Peer {
    /// Imported (or this PE's own block).
    Mapped(Arc<SharedMemory>),
    /// Reached through staging ([`Transport::Staged`]); why.
    Staged(String),
    /// On another node ([`Transport::Remote`]).
    Remote,
}

/// Every PE's heap block as seen from this PE.
#[derive(Debug)]
pub struct SymmetricHeap {
    me: u32,
    size: u64,
    peers: Vec<Peer>,
    /// Some two PEs of one node share a device whose driver cannot switch
    /// between processes while a kernel spins: the same on every PE.
    waits_blocked: bool,
}

impl SymmetricHeap {
    /// Allocates this PE's block of `size` bytes and imports the blocks of the
    /// peers it reaches directly (`mode`), mapping them for the host where the
    /// memory allows and `map` (`VKSHMEM_HEAP_MAPPING`). Collective over the
    /// job when `boot` is given (else a job of one PE).
    pub fn create(
        gpu: &Arc<Gpu>,
        size: u64,
        me: u32,
        boot: Option<&mut Bootstrap>,
        mode: Mode,
        map: bool,
        nodes: Option<&[u32]>,
    ) -> Result<SymmetricHeap> {
        let own = Arc::new(SharedMemory::export_new(gpu, size, map)?);
        let Some(boot) = boot else {
            return Ok(SymmetricHeap {
                me,
                size,
                peers: vec![Peer::Mapped(own)],
                waits_blocked: false,
            });
        };
        let info = BlockInfo {
            device_uuid: gpu.info.device_uuid,
            driver_uuid: gpu.info.driver_uuid,
            requested: size,
            size: own.size(),
            memory_type: own.memory_type(),
            staged: mode.code(),
            cross_process_waits: u32::from(gpu.info.cross_process_waits),
            _pad: 0,
        };
        let blobs = boot.allgather(bytemuck::bytes_of(&info))?;
        let infos: Vec<BlockInfo> = blobs
            .iter()
            .map(|b| bytemuck::try_pod_read_unaligned(b))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Bootstrap("a PE published a malformed heap description".into()))?;
        if let Some((pe, odd)) = infos.iter().enumerate().find(|(_, i)| i.requested != size) {
            return Err(Error::Config {
                var: crate::config::ENV_HEAP_SIZE,
                value: size.to_string(),
                why: format!(
                    "PE {pe} asked for a heap of {} bytes; every PE must ask for the same size",
                    odd.requested
                ),
            });
        }
        if let Some((pe, _)) = infos
            .iter()
            .enumerate()
            .find(|(_, i)| i.staged != info.staged)
        {
            return Err(Error::Config {
                var: crate::config::ENV_TRANSPORT,
                value: mode.name(),
                why: format!(
                    "PE {pe} asked for another transport mode; every PE must ask for the same (transports are symmetric)"
                ),
            });
        }
        let waits_blocked = waits_blocked(&infos, nodes);
        let fd = own.export_fd()?;
        let fds = boot.exchange_fds(Some(fd.as_fd()))?;
        drop(fd);
        let mut peers = Vec::with_capacity(infos.len());
        let mut outcome: std::result::Result<(), String> = Ok(());
        for (pe, (info, fd)) in infos.iter().zip(fds).enumerate() {
            if pe as u32 == me {
                peers.push(Peer::Mapped(own.clone()));
                continue;
            }
            if nodes.is_some_and(|n| n.get(pe) != n.get(me as usize)) {
                peers.push(Peer::Remote);
                continue;
            }
            if info.device_uuid != gpu.info.device_uuid || info.driver_uuid != gpu.info.driver_uuid
            {
                peers.push(Peer::Staged(
                    "on another physical device or driver (staged transport)".into(),
                ));
                continue;
            }
            if !mode.groups_together(me, pe as u32) {
                peers.push(Peer::Staged(format!(
                    "reached through staging ({}={})",
                    crate::config::ENV_TRANSPORT,
                    mode.name()
                )));
                continue;
            }
            let Some(fd) = fd else {
                outcome = Err(format!("PE {pe} sent no heap descriptor"));
                peers.push(Peer::Staged("sent no heap descriptor".into()));
                continue;
            };
            match SharedMemory::import(gpu, fd, info.size, info.memory_type, map) {
                Ok(m) => peers.push(Peer::Mapped(Arc::new(m))),
                Err(e) => {
                    outcome = Err(format!("PE {me} cannot import the heap of PE {pe}: {e}"));
                    peers.push(Peer::Staged(e.to_string()));
                }
            }
        }
        // Agree on the outcome so that every PE fails together or none does.
        let status = match &outcome {
            Ok(()) => Vec::new(),
            Err(why) => why.as_bytes()[..why.len().min(1024)].to_vec(),
        };
        let all = boot.allgather(&status)?;
        if let Some(bad) = all.iter().find(|s| !s.is_empty()) {
            return Err(Error::Bootstrap(String::from_utf8_lossy(bad).into_owned()));
        }
        let reachable = peers
            .iter()
            .filter(|p| matches!(p, Peer::Mapped(_)))
            .count();
        let staged: Vec<usize> = (0..peers.len())
            .filter(|&p| matches!(peers[p], Peer::Staged(_)))
            .collect();
        let remote = peers.iter().filter(|p| matches!(p, Peer::Remote)).count();
        tracing::info!(
            "PE {me}: symmetric heap of {size} bytes ({}), {reachable} of {} PEs direct, staged: {staged:?}, {remote} on other nodes",
            if own.mapped().is_some() { "host-mapped" } else { "device-only" },
            peers.len()
        );
        Ok(SymmetricHeap {
            me,
            size,
            peers,
            waits_blocked,
        })
    }

    /// Whether some two PEs of one node share a device whose driver cannot
    /// keep several processes' kernels moving while one spins (NVIDIA's):
    /// then no device code may wait for another PE, on any PE of the job
    /// (`Context::device_waits_across_processes`). The same on every PE.
    pub fn device_waits_blocked(&self) -> bool {
        self.waits_blocked
    }

    /// Heap size in bytes (the same on every PE).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// PE `pe`'s block, if this PE can reach it directly.
    pub fn block(&self, pe: u32) -> Result<&Arc<SharedMemory>> {
        match self.peers.get(pe as usize) {
            Some(Peer::Mapped(m)) => Ok(m),
            Some(Peer::Staged(why)) => Err(Error::Unreachable {
                pe,
                me: self.me,
                why: why.clone(),
            }),
            Some(Peer::Remote) => Err(Error::Unreachable {
                pe,
                me: self.me,
                why: "on another node (reached through MPI)".into(),
            }),
            None => Err(Error::Unreachable {
                pe,
                me: self.me,
                why: format!("the job has only {} PEs", self.peers.len()),
            }),
        }
    }

    /// Whether PE `pe`'s block is directly reachable from this PE.
    pub fn reachable(&self, pe: u32) -> bool {
        matches!(self.peers.get(pe as usize), Some(Peer::Mapped(_)))
    }

    /// How this PE reaches PE `pe` (`None`: no such PE).
    pub fn transport(&self, pe: u32) -> Option<Transport> {
        self.peers.get(pe as usize).map(|p| match p {
            Peer::Mapped(_) => Transport::Direct,
            Peer::Staged(_) => Transport::Staged,
            Peer::Remote => Transport::Remote,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{waits_blocked, BlockInfo};

    fn info(device: u8, waits: bool) -> BlockInfo {
        BlockInfo {
            device_uuid: [device; 16],
            driver_uuid: [7; 16],
            requested: 1 << 20,
            size: 1 << 20,
            memory_type: 0,
            staged: 0,
            cross_process_waits: u32::from(waits),
            _pad: 0,
        }
    }

    #[test]
    fn waits_are_blocked_where_two_pes_share_a_blocking_device() {
        // One PE per GPU: nothing to block, on any driver.
        assert!(!waits_blocked(&[info(1, false), info(2, false)], None));
        // Two PEs on one NVIDIA GPU and a third alone on another: every PE
        // (the lone one too) gets the same answer.
        let job = [info(1, false), info(2, false), info(1, false)];
        assert!(waits_blocked(&job, None));
        // The same GPU UUID on two nodes is two devices.
        assert!(!waits_blocked(
            &[info(1, false), info(1, false)],
            Some(&[0, 1])
        ));
        assert!(waits_blocked(
            &[info(1, false), info(3, true), info(1, false)],
            Some(&[0, 1, 0])
        ));
        // A driver that switches between processes: shared is fine.
        assert!(!waits_blocked(&[info(1, true), info(1, true)], None));
    }
}
