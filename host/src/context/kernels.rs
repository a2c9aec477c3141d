//! The façade of the program's kernels: WGSL or SPIR-V with the device library, launches,
//! heap windows (`crate::user_kernel`, `crate::runtime::dispatch`).

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::kernels::DeviceKernel;
use crate::runtime::HeapWindow;
use crate::vk::kernel::Kernel;
use vkshmem_device::LibraryConfig;

use super::Context;

impl Context {
    /// The device library's shape for this PE: it binds the heaps of the PEs
    /// this PE reaches directly ([`Context::transport`](crate::Context::transport)); device code that
    /// touches another PE's heap raises a device error. Fixed at init (it
    /// depends only on the job and the device).
    ///
    /// # Errors
    /// None today (kept fallible for shapes a device cannot take).
    pub fn library_config(&self) -> Result<LibraryConfig> {
        self.rt.library_config()
    }

    /// Compiles `source` (WGSL with one `@compute` entry point that may call the
    /// device library) for this PE, or returns the copy compiled earlier in this
    /// process. `name` labels errors, which give the line and column in `source`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = vkshmem_host::Context::init()?;
    /// let counters = ctx.calloc::<u32>(ctx.n_pes() as usize)?;
    /// let k = ctx.device_kernel(
    ///     "struct P { counters: u32 }
    ///      var<immediate> p: P;
    ///      @compute @workgroup_size(64)
    ///      fn main(@builtin(local_invocation_index) li: u32) {
    ///          if li == 0u {
    ///              // Count ourselves in on every PE, then wait for everyone.
    ///              for (var pe = 0; pe < shmem_n_pes(); pe++) {
    ///                  shmem_uint32_atomic_inc(p.counters + u32(shmem_my_pe()), u32(pe));
    ///              }
    ///          }
    ///          shmemx_barrier_all_work_group(li);
    ///      }",
    ///     "count_in",
    /// )?;
    /// ctx.launch(&k, [1, 1, 1], &[], bytemuck::bytes_of(&counters.device_addr()?))?;
    /// assert!(counters.to_vec()?.iter().all(|&c| c == 1));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Kernel`](crate::Error::Kernel) for WGSL that does not compile or link (with the line and
    /// column), [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the library's bindings plus the user's exceed
    /// the device's storage-buffer limit, Vulkan errors.
    pub fn device_kernel(&self, source: &str, name: &str) -> Result<Arc<DeviceKernel>> {
        self.rt.device_kernel(source, name)
    }

    /// Like [`Context::device_kernel`](crate::Context::device_kernel) for a module with several entry points.
    ///
    /// # Errors
    /// As [`Context::device_kernel`](crate::Context::device_kernel); [`Error::Kernel`](crate::Error::Kernel) when `entry` is not a
    /// compute entry point of `source`.
    pub fn device_kernel_entry(
        &self,
        source: &str,
        entry: &str,
        name: &str,
    ) -> Result<Arc<DeviceKernel>> {
        self.rt.device_kernel_entry(source, entry, name)
    }

    /// Runs `kernel` over `groups` workgroups with `buffers` bound to its
    /// `@group(1)` bindings 0..n and `immediates` as its `var<immediate>`, and
    /// waits for it. A kernel that waits on peers must be launched on every PE (see
    /// the forward-progress rules in ARCHITECTURE.md).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a buffer count, immediate size or workgroup
    /// count that does not match the kernel or the device, a window that is
    /// empty, misaligned, too large or outside the heap, or a kernel compiled on
    /// another context; [`Error::Unreachable`](crate::Error::Unreachable) for a window on a PE this PE cannot
    /// reach; [`Error::Device`](crate::Error::Device) when device code raised an error;
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when another PE died while this kernel waited for it;
    /// [`Error::Timeout`](crate::Error::Timeout) when `VKSHMEM_WAIT_TIMEOUT` expired. After any error from
    /// a kernel that waits on peers, in a job of several PEs, the PEs are out of
    /// step: this PE leaves the job's collectives and later calls that need them
    /// return [`Error::Broken`](crate::Error::Broken).
    pub fn launch(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
    ) -> Result<()> {
        self.rt.launch_user(kernel, groups, buffers, immediates)
    }

    /// Like [`Context::launch`](crate::Context::launch), returning the GPU time of the dispatch measured with
    /// timestamps (from the start of the dispatch to the end of its last workgroup).
    ///
    /// # Errors
    /// As [`Context::launch`](crate::Context::launch); [`Error::Unsupported`](crate::Error::Unsupported) when the queue has no timestamps.
    pub fn launch_timed(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
    ) -> Result<Duration> {
        self.rt.launch_timed(kernel, groups, buffers, immediates)
    }

    /// Builds a compute kernel from SPIR-V with `bindings` storage buffers in set 0
    /// and `push_bytes` of push constants.
    ///
    /// The module is parsed and checked for what would otherwise be undefined
    /// behaviour in the driver: a SPIR-V header, a `GLCompute` entry point named
    /// `entry`, every resource in set 0 at a binding below `bindings`, and no push
    /// constants unless `push_bytes` > 0. It is not otherwise validated: pass
    /// modules from a validating compiler (as [`crate::Kernel`]s from WGSL are).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a module that fails those checks, more
    /// bindings than the device's `maxPerStageDescriptorStorageBuffers`, or
    /// `push_bytes` that is not a multiple of 4 or exceeds
    /// `maxPushConstantsSize`; Vulkan errors.
    pub fn kernel_from_spirv(
        &self,
        spirv: &[u32],
        entry: &str,
        bindings: u32,
        push_bytes: u32,
    ) -> Result<Kernel> {
        self.rt
            .kernel_from_spirv(spirv, entry, bindings, push_bytes)
    }

    /// Runs `kernel` on this PE's device over `groups` workgroups, with heap
    /// `windows` bound to its bindings 0..n (any reachable PE's heap) and `push` as
    /// push constants, and waits for it to finish.
    ///
    /// # Errors
    /// [`Error::Unreachable`](crate::Error::Unreachable) for a window on a PE this PE cannot reach,
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a window outside the heap, empty, misaligned
    /// (offsets must be multiples of the device's `minStorageBufferOffsetAlignment`;
    /// [`Context::granule`](crate::Context::granule) always is) or larger than the device's
    /// `maxStorageBufferRange`, a binding/push-constant count mismatch, a
    /// workgroup count of 0 or over the device's `maxComputeWorkGroupCount`, or a
    /// kernel built on another context's device; Vulkan errors.
    pub fn dispatch(
        &self,
        kernel: &Kernel,
        groups: [u32; 3],
        windows: &[HeapWindow],
        push: &[u8],
    ) -> Result<()> {
        self.rt.dispatch(kernel, groups, windows, push)
    }

    /// Submits an empty command buffer and waits for it: the floor of every
    /// host-initiated device operation, for benchmarks.
    ///
    /// # Errors
    /// Vulkan errors.
    pub fn empty_submit(&self) -> Result<()> {
        self.rt.empty_submit()
    }
}
