//! Kernels linked with the device library: what a [`DeviceKernel`] is, how
//! one is linked ([`link`]) and built, the per-context cache that lets the
//! caller's thread and the background builder share builds ([`builds`]), and
//! the background builder of the host collectives' kernels ([`prebuild`]),
//! and the table of those kernels' names and sources ([`library`]).
//!
//! Launching a kernel (the user's API, its bindings, the device error words
//! and the watch while it runs) is `crate::user_kernel`'s; the host
//! collectives declare which kernels they launch (`crate::collective`), and
//! the façade hands those declarations to the builder at init. Both use
//! this module, which uses neither.

pub(crate) mod builds;
pub(crate) mod library;
pub(crate) mod prebuild;

use std::sync::Arc;

use vkshmem_device::{LibraryConfig, LinkedKernel, UserBinding};

use crate::error::{Error, Result};
use crate::vk::compile_turn::CompileTurn;
use crate::vk::kernel::Kernel;
use crate::vk::submit::{Dispatch, Submitter, Window};
use crate::vk::Gpu;

/// A compiled user kernel (a compute pipeline with the device library linked in).
/// Get one with [`Context::device_kernel`](crate::Context::device_kernel); launch it
/// with [`Context::launch`](crate::Context::launch).
pub struct DeviceKernel {
    pub(crate) name: String,
    pub(crate) linked: LinkedKernel,
    pub(crate) kernel: Kernel,
}

impl std::fmt::Debug for DeviceKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceKernel")
            .field("name", &self.name)
            .field("entry", &self.linked.entry)
            .field("user_bindings", &self.linked.user_bindings)
            .field("immediate_bytes", &self.linked.immediate_bytes)
            .finish()
    }
}

impl DeviceKernel {
    /// The name given at compilation (used in error messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The user's buffers (`@group(1)`), by binding number.
    pub fn user_bindings(&self) -> &[UserBinding] {
        &self.linked.user_bindings
    }

    /// Bytes of immediates (`var<immediate>`) a launch must pass.
    pub fn immediate_bytes(&self) -> u32 {
        self.linked.immediate_bytes
    }

    /// The entry point's `@workgroup_size`.
    pub fn workgroup_size(&self) -> [u32; 3] {
        self.linked.workgroup_size
    }

    /// Whether the kernel can wait on other PEs (calls a sync, barrier or
    /// wait_until). Such kernels must follow the forward-progress rules in
    /// ARCHITECTURE.md.
    pub fn waits_on_peers(&self) -> bool {
        self.linked.waits_on_peers
    }
}

/// Links `source` (entry `entry`, or its only one) with the device library of
/// `cfg` and checks that the library's bindings and the kernel's fit the device.
pub(crate) fn link(
    gpu: &Gpu,
    cfg: &LibraryConfig,
    source: &str,
    entry: Option<&str>,
    name: &str,
) -> Result<LinkedKernel> {
    let linked = vkshmem_device::link_kernel(source, name, entry, cfg)?;
    let library = cfg.binding_count();
    let user = linked.user_bindings.len() as u32;
    let limit = gpu.info.max_storage_buffers_per_stage;
    if library + user > limit {
        return Err(Error::InvalidArgument(format!(
            "kernel {name:?}: the device library needs {library} storage bindings ({} heap slots x {} chunks of the heap) and the kernel {user}, over this device's limit of {limit}; use fewer PEs per device or a smaller VKSHMEM_SYMMETRIC_SIZE (at most maxStorageBufferRange = {} bytes keeps one chunk per PE)",
            cfg.slots,
            cfg.chunks,
            cfg.max_binding_bytes
        )));
    }
    tracing::debug!(
        kernel = name,
        report = ?linked.report,
        words = linked.spirv.len(),
        "compiled user kernel"
    );
    Ok(linked)
}

impl DeviceKernel {
    /// Builds the pipeline of `linked` and runs `warm_up` on it (which
    /// dispatches it over zero workgroups: llvmpipe compiles at a pipeline's
    /// first dispatch, other drivers at its creation; it returns whether it
    /// dispatched) in this machine's turn for that pipeline
    /// (`crate::vk::compile_turn`): the other PEs of the job build the same
    /// pipeline now, and the first to get here compiles it alone, the others
    /// then find it in the driver's cache. `warm_up` gets the turn, to call
    /// [`CompileTurn::watch_warm_up`] while it waits for the queue (see
    /// [`DeviceKernel::warm_up_on`]).
    pub(crate) fn build_in_turn(
        gpu: &Arc<Gpu>,
        cfg: &LibraryConfig,
        linked: LinkedKernel,
        name: &str,
        warm_up: impl FnOnce(&DeviceKernel, &mut CompileTurn) -> Result<bool>,
    ) -> Result<DeviceKernel> {
        let sets = Self::set_sizes(cfg, &linked);
        let key = crate::vk::compile_turn::pipeline_key(
            &linked.spirv,
            &linked.entry,
            &sets,
            linked.immediate_bytes,
        );
        let started = std::time::Instant::now();
        let mut turn = gpu
            .pipeline_cache
            .turn_file(key)
            .map_or_else(CompileTurn::none, |f| CompileTurn::take(&f));
        let k = DeviceKernel::build(gpu, sets, linked, name)?;
        // A driver that compiled at creation is done: the turn goes before
        // the warm-up, which may queue behind this PE's other device work.
        if !gpu.info.is_llvmpipe() {
            turn.done(name);
        }
        if warm_up(&k, &mut turn)? {
            turn.done(name);
        }
        tracing::debug!(
            kernel = name,
            key = format_args!("{key:016x}"),
            ms = started.elapsed().as_millis(),
            "built in turn"
        );
        Ok(k)
    }

    /// The bindings of set 0 (the library's that the kernel uses: a prefix
    /// of `cfg`'s, so that a kernel that reaches no peer's heap keys one
    /// pipeline whatever the library's slot count) and set 1 (the kernel's
    /// own).
    fn set_sizes(cfg: &LibraryConfig, linked: &LinkedKernel) -> [u32; 2] {
        debug_assert!(linked.library_bindings <= cfg.binding_count());
        [linked.library_bindings, linked.user_bindings.len() as u32]
    }

    /// The part of the library's windows `all` (every binding of set 0, in
    /// binding order) that this kernel's set 0 binds.
    pub(crate) fn library_set<'a>(&self, all: &'a [Window]) -> &'a [Window] {
        &all[..(self.kernel.sets()[0] as usize).min(all.len())]
    }

    /// Builds the pipeline of `linked` with `sets` bindings in set 0 (the
    /// library's) and set 1 (the kernel's own: [`DeviceKernel::set_sizes`]).
    fn build(
        gpu: &Arc<Gpu>,
        sets: [u32; 2],
        linked: LinkedKernel,
        name: &str,
    ) -> Result<DeviceKernel> {
        let kernel = Kernel::new(
            gpu,
            &linked.spirv,
            &linked.entry,
            &sets,
            linked.immediate_bytes,
        )?;
        Ok(DeviceKernel {
            name: name.to_string(),
            linked,
            kernel,
        })
    }

    /// Dispatches the kernel over zero workgroups with `submit`, every binding
    /// on `window` (see `Runtime::warm_up`: nothing runs, but every descriptor
    /// must be valid).
    pub(crate) fn warm_up_with(
        &self,
        submit: &mut Submitter,
        window: Window,
        turn: &mut CompileTurn,
    ) -> Result<()> {
        let library = vec![window; self.kernel.sets()[0] as usize];
        self.warm_up_on(submit, &library, window, turn)
    }

    /// Dispatches the kernel over zero workgroups with `submit`, `library` in
    /// set 0 and `user` on every user binding, telling `turn` while it waits
    /// whether the queue has reached the dispatch (a turn whose warm-up
    /// waits behind this PE's other work lets the other builders go).
    pub(crate) fn warm_up_on(
        &self,
        submit: &mut Submitter,
        library: &[Window],
        user: Window,
        turn: &mut CompileTurn,
    ) -> Result<()> {
        let user = vec![user; self.linked.user_bindings.len()];
        let immediates = vec![0u8; self.linked.immediate_bytes as usize];
        let item = Dispatch {
            kernel: &self.kernel,
            groups: [0, 0, 0],
            sets: &[self.library_set(library), &user],
            push: &immediates,
            barrier: false,
        };
        submit.dispatch_noting_start(&item, &mut |started, _| {
            turn.watch_warm_up(started);
            None
        })
    }
}
