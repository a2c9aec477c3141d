//! vkshmem's host side.
//!
//! See `ARCHITECTURE.md` at the repository root for the map. In short:
//! [`config`] reads the environment, [`bootstrap`] lets the PEs of a node meet,
//! [`alloc`] is the symmetric allocator's bookkeeping, [`vk`] is the thin Vulkan
//! layer, [`heap`] is the symmetric heap (own and imported peers), [`context`]
//! ties them into the per-PE [`Context`] that the facade crate exposes, and
//! [`user_kernel`] compiles and launches kernels that call the device library.

#![warn(missing_docs)]

pub mod alloc;
pub mod bootstrap;
pub mod config;
pub(crate) mod driver;
pub mod error;
pub(crate) mod fnv;
pub mod vk;

pub use error::{Error, Result};
pub mod collective;
pub(crate) mod combine;
pub mod context;
pub mod element;
pub mod heap;
pub mod interop;
pub(crate) mod kernels;
pub(crate) mod lock;
pub mod phases;
pub mod queue;
pub mod rma;
pub(crate) mod runtime;
pub use runtime::symbuf;
pub mod sync;
pub mod team;
pub mod threads;
pub mod trace;
pub mod transport;
pub mod user_kernel;

/// The Vulkan binding of the raw handles in vkshmem's API.
pub use ash;
pub use collective::active::ActiveSet;
pub use collective::reduce::{BitwiseReduce, Reduce, ReduceOp};
pub use context::{Context, HeapWindow};
/// The `half` crate whose `f16` and `bf16` the reductions take (see [`Reduce`]).
pub use half;
pub use kernels::DeviceKernel;
pub use phases::{Phase, PhaseStat};
pub use queue::{Collective, Persistent, Queued, Request};
pub use symbuf::{RawBuffer, SymBuffer, SymSlice, MAX_DEVICE_BYTE};
pub use team::{Team, TeamConfig, TeamShape};
pub use threads::{run_threads, run_threads_joining, Member, ThreadPe};
pub use transport::Transport;
pub use vk::kernel::Kernel;
pub use vk::UserDevice;
pub use vk::{DeviceCaps, DeviceInfo};
pub use vkshmem_device::{CompileError, UserBinding};
