//! # vkshmem
//!
//! OpenSHMEM / Intel SHMEM–style collectives on GPUs through Vulkan compute.
//!
//! A job is N processes (PEs) started by `vkshmrun -n N program`. Each PE calls
//! [`init`], which opens a Vulkan device, allocates this PE's block of the
//! symmetric heap and imports the blocks of every PE on the same device. Symmetric
//! allocations ([`Context::malloc`]) have the same offset in every block, so a
//! kernel on one PE can load and store another PE's copy directly.
//!
//! ```
//! # fn main() -> Result<(), vkshmem::Error> {
//! let ctx = vkshmem::init()?;
//! let (me, n) = (ctx.my_pe(), ctx.n_pes());
//! let buf = ctx.calloc::<u32>(1024)?;
//! // Write into the next PE's copy through the host mapping, then barrier.
//! buf.write_pe((me + 1) % n, &[me; 1024])?;
//! ctx.barrier_all()?;
//! assert_eq!(buf.to_vec()?[0], (me + n - 1) % n);
//! buf.free()?;
//! ctx.finalize()
//! # }
//! ```
//!
//! # Device-initiated synchronization
//!
//! Kernels written in WGSL can call the device library: `shmem_my_pe()`,
//! `shmem_TYPE_p/g`, atomics, `shmem_quiet()`, `shmem_barrier_all()` (one
//! invocation) and `shmemx_barrier_all_work_group(local_index)` (a whole
//! workgroup); the collectives in the same three forms: per thread,
//! `_work_group`, and `_work_groups` (every workgroup of a dispatch of at most
//! [`Context::resident_workgroups`], for large messages; see
//! `examples/collectives.rs`). Build them with [`Context::device_kernel`], run them with
//! [`Context::launch`]. The WGSL reference is the top of `shaders/vkshmem.wgsl` and
//! `device/src/library/`; the forward-progress rules are in `ARCHITECTURE.md`.
//! On a CPU driver (lavapipe) a workgroup runs on one thread and every SIMD row
//! of 8 invocations runs the library's wait code, so call the work_group(s)
//! forms from small workgroups there: 16 invocations, or 32 to 64 where a
//! call's data would pass lavapipe's 65535 loop iterations per invocation
//! (256 on a GPU). Each added row runs the wait code too, so a small call
//! costs several times more in a workgroup of 64 than of 16 there
//! (benches/RESULTS.md, "Workgroup of 16").
//!
//! ```no_run
//! # fn main() -> Result<(), vkshmem::Error> {
//! let ctx = vkshmem::init()?;
//! let data = ctx.calloc::<u32>(64)?;
//! let k = ctx.device_kernel(
//!     "struct P { data: u32 }
//!      var<immediate> p: P;
//!      @compute @workgroup_size(64)
//!      fn main(@builtin(local_invocation_index) li: u32) {
//!          let next = u32((shmem_my_pe() + 1) % shmem_n_pes());
//!          shmem_uint32_p(p.data + li, u32(shmem_my_pe()), next);   // put to the next PE
//!          shmemx_barrier_all_work_group(li);                       // quiet + sync, all PEs
//!      }",
//!     "ring",
//! )?;
//! ctx.launch(&k, [1, 1, 1], &[], bytemuck::bytes_of(&data.device_addr()?))?;
//! let prev = (ctx.my_pe() + ctx.n_pes() - 1) % ctx.n_pes();
//! assert!(data.to_vec()?.iter().all(|&v| v == prev));
//! # Ok(()) }
//! ```
//!
//! The crates underneath: `vkshmem-host` (bootstrap, Vulkan, heap, allocator,
//! launches) and `vkshmem-device` (the WGSL device library and the kernel
//! pipeline). See `ARCHITECTURE.md`.

#![warn(missing_docs)]

pub mod kernel;

pub use kernel::compile_kernel;
/// WGSL → SPIR-V words, for the program's own pipelines (no device library).
pub use vkshmem_device::compile_wgsl;
pub use vkshmem_device::layout::{
    ERR_ABORTED, ERR_BAD_ADDRESS, ERR_BAD_ARGUMENT, ERR_BAD_PE, ERR_BAD_TEAM, ERR_CONCURRENT_SYNC,
    ERR_LOOPS_CUT, ERR_UNREACHABLE,
};
pub use vkshmem_device::CompileError;
/// The deprecated active-set collectives' constants (`SHMEM_*_SYNC_SIZE`, ...).
pub use vkshmem_host::collective::active as active_set;
/// `dst = src` as the host collectives' direct path copies, with streaming
/// stores where asked: the bench's copy roofline (not a stable API).
#[doc(hidden)]
pub use vkshmem_host::collective::copy::copy_slice as host_copy;
/// Queue-ordered, nonblocking and persistent collectives (see the module).
pub use vkshmem_host::queue;
/// One-sided communication from the host: put/get, atomics, signals and
/// point-to-point waits (see the module).
pub use vkshmem_host::rma;
/// Traces of a job's calls (`VKSHMEM_TRACE`): the format, and merging the
/// PEs' parts.
pub use vkshmem_host::trace;
pub use vkshmem_host::{
    ash, half, ActiveSet, BitwiseReduce, Collective, Context, DeviceCaps, DeviceInfo, DeviceKernel,
    Error, HeapWindow, Kernel, Member, Persistent, Phase, PhaseStat, Queued, RawBuffer, Reduce,
    ReduceOp, Request, Result, SymBuffer, SymSlice, Team, TeamConfig, TeamShape, ThreadPe,
    Transport, UserBinding, UserDevice, MAX_DEVICE_BYTE,
};

/// Joins the job: see [`Context::init`].
///
/// When `RUST_LOG` (or OpenSHMEM's `SHMEM_DEBUG`) is set and the program has not
/// installed a `tracing` subscriber of its own, this installs one that writes to
/// stderr, so that `RUST_LOG=info` shows which device each PE took and why, with
/// no code in the program.
///
/// # Errors
/// As [`Context::init`].
pub fn init() -> Result<Context> {
    log_to_stderr();
    Context::init()
}

/// Joins the job on a Vulkan device the program created: see
/// [`Context::init_on_device`] (and `docs/own-device.md`). Logs as [`init`]
/// does.
///
/// # Safety
/// As [`Context::init_on_device`].
///
/// # Errors
/// As [`Context::init_on_device`].
pub unsafe fn init_on_device(dev: UserDevice) -> Result<Context> {
    log_to_stderr();
    // SAFETY: the caller's guarantee.
    unsafe { Context::init_on_device(dev) }
}

/// Runs a whole job of `npes` PEs as threads of this process, each with its
/// own [`Context`]: see [`vkshmem_host::run_threads`] (how the threads share
/// devices, and how a PE fails the job). Logs as [`init`] does.
///
/// ```no_run
/// # fn main() -> vkshmem::Result<()> {
/// let pes = vkshmem::run_threads(4, |ctx| {
///     ctx.barrier_all()?;
///     Ok(ctx.my_pe())
/// })?;
/// assert_eq!(pes, [0, 1, 2, 3]);
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`vkshmem_host::run_threads`].
pub fn run_threads<T, F>(npes: u32, body: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(&Context) -> std::result::Result<T, vkshmem_host::threads::PeError> + Sync,
{
    log_to_stderr();
    vkshmem_host::run_threads(npes, body)
}

/// [`run_threads`] where each thread joins with `join`, for PEs on devices
/// the program opens (a wgpu device per thread, say): see
/// [`vkshmem_host::run_threads_joining`]. Logs as [`init`] does.
///
/// # Errors
/// As [`vkshmem_host::run_threads`].
pub fn run_threads_joining<S, T, J, F>(npes: u32, join: J, body: F) -> Result<Vec<T>>
where
    S: ThreadPe,
    T: Send,
    J: Fn(&Member) -> std::result::Result<S, vkshmem_host::threads::PeError> + Sync,
    F: Fn(&S) -> std::result::Result<T, vkshmem_host::threads::PeError> + Sync,
{
    log_to_stderr();
    vkshmem_host::run_threads_joining(npes, join, body)
}

fn log_to_stderr() {
    if let Some(filter) = vkshmem_host::config::log_filter(vkshmem_host::config::env) {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init();
    }
}

/// The README's and the guides' Rust examples, compiled and run by
/// `cargo test --doc` (the README's as a job of one PE), so that they follow
/// the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
#[doc = include_str!("../docs/own-device.md")]
#[doc = include_str!("../docs/device-code.md")]
pub struct DocExamples;
