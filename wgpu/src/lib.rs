//! vkshmem for wgpu programs, in safe Rust: a wgpu device and queue that
//! vkshmem shares, symmetric buffers as `wgpu::Buffer` bindings, and
//! collectives ordered with the program's wgpu work on the device, with no
//! host wait in between.
//!
//! ```no_run
//! use vkshmem_wgpu::{Collective, Shmem, Team};
//! # fn main() -> vkshmem_wgpu::Result<()> {
//! let adapter = vkshmem_wgpu::vulkan_adapter()?;
//! let shmem = Shmem::open(&adapter, &wgpu::DeviceDescriptor::default())?;
//! let grads = shmem.calloc::<f32>(1024)?;
//! let sum = shmem.calloc::<f32>(1024)?;
//! // ... a compute pass writes `grads` (bound with `grads.binding()`),
//! // submitted with `shmem.submit(..)` ...
//! let (s, g) = (shmem.slice(&sum)?, shmem.slice(&grads)?);
//! shmem.post(Team::WORLD, Collective::sum_reduce(&s, &g, 1024))?.wait()?;
//! # Ok(()) }
//! ```
//!
//! **One queue.** wgpu's queue is vkshmem's: a collective posted with
//! [`Shmem::post`] runs after every command buffer submitted before it, and
//! work submitted after it sees its result. `vkQueueSubmit` needs the queue
//! externally synchronized, and vkshmem submits from its own threads too, so
//! the program submits through [`Shmem::submit`] (which takes vkshmem's queue
//! lock), never through a `wgpu::Queue` of its own: `Shmem` does not hand one
//! out.
//!
//! **Lifetimes.** A [`SymBuffer`]'s wgpu binding is a range of this PE's heap
//! buffer, which lives as long as wgpu holds it (bind groups included), even
//! past [`Shmem::finalize`]. Freeing is collective, as in OpenSHMEM:
//! [`SymBuffer::free`] on every PE in the same order; a bind group still
//! holding a freed buffer's range then sees whatever is allocated there next.

mod error;
mod open;

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

use bytemuck::Pod;
use wgpu::hal::api::Vulkan;

pub use error::{Error, Result};
pub use vkshmem;
pub use vkshmem::{Collective, Request, Team};

/// Numbers the contexts of this process, so that a symmetric buffer used with
/// another context than its own is caught.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// wgpu's `minStorageBufferOffsetAlignment` at most (`wgpu::Limits`'
/// default, 256): every allocation starts on it, so its binding's offset is
/// valid on any device.
const BINDING_ALIGN: u64 = 256;

/// A PE of a vkshmem job on a wgpu device: the device, its queue, the
/// context and this PE's heap as a wgpu buffer.
pub struct Shmem {
    // Dropped in this order: the context (the heap buffer's drop callback
    // holds another handle, so vkshmem's objects go when wgpu lets the
    // buffer go), the heap buffer, the queue, the device last.
    ctx: vkshmem::Context,
    heap: wgpu::Buffer,
    id: u64,
    queue: wgpu::Queue,
    device: wgpu::Device,
}

impl std::fmt::Debug for Shmem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shmem")
            .field("id", &self.id)
            .field("my_pe", &self.ctx.my_pe())
            .field("n_pes", &self.ctx.n_pes())
            .finish()
    }
}

impl Shmem {
    /// Opens a wgpu device on `adapter` as `desc` asks, with what vkshmem
    /// needs added (`VK_KHR_external_memory_fd`), and joins the job on it
    /// (under `vkshmrun`, as `vkshmem::init` does). vkshmem uses the 64-bit,
    /// f64 and 16-bit shader features that `desc.required_features` turns on.
    ///
    /// # Errors
    /// [`Error::NotVulkan`] for an adapter that is not Vulkan;
    /// [`Error::MissingExtension`] when it lacks the extension;
    /// [`Error::Unsupported`] when it lacks `desc`'s features or limits;
    /// wgpu's errors opening the device; vkshmem's joining the job.
    pub fn open(adapter: &wgpu::Adapter, desc: &wgpu::DeviceDescriptor<'_>) -> Result<Shmem> {
        Shmem::open_with(adapter, desc, open::Join::Process)
    }

    /// Opens a wgpu device as `desc` asks on wgpu's default Vulkan adapter,
    /// of an instance of its own, and joins as the thread-PE `member` of a
    /// job of threads ([`run_threads`] gives it). Thread-PEs open one at a
    /// time, so that on lavapipe each knows its driver's threads (the ones
    /// its device waits nap; the other PEs' must run meanwhile).
    ///
    /// # Errors
    /// As [`vulkan_adapter`] and [`Shmem::open`].
    pub fn open_as(desc: &wgpu::DeviceDescriptor<'_>, member: &vkshmem::Member) -> Result<Shmem> {
        // Joining waits for the other PEs, which open after this one: only
        // the opening is one at a time.
        let (device, driver_threads) = member.open_device(|| {
            let adapter = vulkan_adapter()?;
            open::open_device(&adapter, desc)
        });
        let join = open::Join::Thread(member, driver_threads);
        Shmem::finish(open::join(device?, desc, join)?)
    }

    fn open_with(
        adapter: &wgpu::Adapter,
        desc: &wgpu::DeviceDescriptor<'_>,
        join: open::Join<'_>,
    ) -> Result<Shmem> {
        Shmem::finish(open::open(adapter, desc, join)?)
    }

    fn finish(opened: open::Opened) -> Result<Shmem> {
        let open::Opened { device, queue, ctx } = opened;
        let heap = heap_buffer(&device, &ctx);
        Ok(Shmem {
            ctx,
            heap,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            queue,
            device,
        })
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The vkshmem context: every host call (put, get, teams, blocking
    /// collectives) of vkshmem's API.
    pub fn context(&self) -> &vkshmem::Context {
        &self.ctx
    }

    /// This PE's number.
    pub fn my_pe(&self) -> u32 {
        self.ctx.my_pe()
    }

    /// The job's PE count.
    pub fn n_pes(&self) -> u32 {
        self.ctx.n_pes()
    }

    /// `wgpu::Queue::submit` under vkshmem's queue lock: the one way to
    /// submit wgpu work on this device.
    pub fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(
        &self,
        command_buffers: I,
    ) -> wgpu::SubmissionIndex {
        self.ctx.with_queue(|_| self.queue.submit(command_buffers))
    }

    /// `wgpu::Queue::write_buffer`: staged, it goes to the device with the
    /// next submission (or post).
    pub fn write_buffer(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        self.queue.write_buffer(buffer, offset, data);
    }

    /// `wgpu::Queue::on_submitted_work_done`.
    pub fn on_submitted_work_done(&self, callback: impl FnOnce() + Send + 'static) {
        self.queue.on_submitted_work_done(callback);
    }

    /// `len` elements of `T` at the same offset of every PE's heap, zero on
    /// every PE on return, on a binding-aligned offset (collective, as
    /// `shmem_calloc`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `len` 0 (a wgpu binding holds at least
    /// one byte); as `vkshmem::Context::calloc`.
    pub fn calloc<T: Pod>(&self, len: usize) -> Result<SymBuffer<T>> {
        if len == 0 {
            return Err(Error::InvalidArgument(
                "a symmetric buffer for wgpu holds at least one element".into(),
            ));
        }
        let inner = self.ctx.align_zeroed::<T>(BINDING_ALIGN, len)?;
        Ok(SymBuffer {
            inner,
            heap: self.heap.clone(),
            owner: self.id,
            device: self.device.clone(),
        })
    }

    /// `buf` as a slice for vkshmem's calls on this context.
    ///
    /// # Errors
    /// [`Error::ForeignBuffer`] when `buf` was allocated by another `Shmem`.
    pub fn slice<'a, T: Pod>(&self, buf: &'a SymBuffer<T>) -> Result<vkshmem::SymSlice<'a, T>> {
        if buf.owner != self.id {
            return Err(Error::ForeignBuffer {
                owner: buf.owner,
                this: self.id,
            });
        }
        Ok(buf.inner.as_slice())
    }

    /// Elements `range` of `buf` as a slice for vkshmem's calls on this
    /// context.
    ///
    /// # Errors
    /// As [`Shmem::slice`]; [`Error::Shmem`] for a range past the buffer.
    pub fn slice_range<'a, T: Pod>(
        &self,
        buf: &'a SymBuffer<T>,
        range: std::ops::Range<usize>,
    ) -> Result<vkshmem::SymSlice<'a, T>> {
        self.slice(buf)?;
        Ok(buf.inner.slice(range)?)
    }

    /// Starts `coll` over `team` on the queue, after every command buffer
    /// submitted before (and the writes `write_buffer` staged), and returns
    /// at once; work submitted after it sees its result. Every member posts
    /// the same collectives on a team in the same order.
    ///
    /// # Errors
    /// As `vkshmem::Context::post`.
    pub fn post<'a>(&'a self, team: Team, coll: Collective<'a>) -> Result<Request<'a>> {
        // wgpu sends its staged writes with a submission: make one, so that
        // they precede the collective.
        self.submit(std::iter::empty());
        Ok(self.ctx.post(team, coll)?)
    }

    /// Waits until the device has done every submission (wgpu's
    /// `device.poll` with a wait), running wgpu's callbacks.
    ///
    /// # Errors
    /// wgpu's poll errors.
    pub fn wait_idle(&self) -> Result<()> {
        self.device.poll(wgpu::PollType::wait_indefinitely())?;
        Ok(())
    }

    /// Leaves the job (collective, as `vkshmem::Context::finalize`), after the
    /// device has done its work.
    ///
    /// # Errors
    /// As [`Shmem::wait_idle`] and `vkshmem::Context::finalize`.
    pub fn finalize(self) -> Result<()> {
        self.wait_idle()?;
        let Shmem { ctx, .. } = self;
        Ok(ctx.finalize()?)
    }
}

impl vkshmem::ThreadPe for Shmem {
    fn finalize(self) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(Shmem::finalize(self)?)
    }
}

/// Runs a job of `npes` PEs as threads of this process, each on its own
/// wgpu device opened as `desc` asks ([`Shmem::open_as`]), and returns each
/// PE's value, by PE: `vkshmem::run_threads` on wgpu devices. A PE that
/// fails fails the job, as there.
///
/// # Errors
/// As `vkshmem::run_threads`.
pub fn run_threads<T, F>(npes: u32, desc: &wgpu::DeviceDescriptor<'_>, body: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(&Shmem) -> std::result::Result<T, Box<dyn std::error::Error + Send + Sync>> + Sync,
{
    let join = |m: &vkshmem::Member| -> std::result::Result<Shmem, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Shmem::open_as(desc, m)?)
    };
    Ok(vkshmem::run_threads_joining(npes, join, body)?)
}

/// wgpu's default adapter among the Vulkan ones (every PE takes the same;
/// on a machine of several GPUs, pick one per PE with wgpu's
/// `Instance::enumerate_adapters` and [`Shmem::open`] it).
///
/// # Errors
/// [`Error::NoAdapter`] when wgpu finds no Vulkan adapter.
pub fn vulkan_adapter() -> Result<wgpu::Adapter> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    Ok(block_on(instance.request_adapter(&Default::default()))?)
}

/// Runs a wgpu future to its end: on native backends they are ready at once
/// or after the device makes progress.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

/// This PE's heap as a wgpu buffer that wgpu does not own: its drop
/// callback holds a context handle, so the heap outlives every wgpu use.
fn heap_buffer(device: &wgpu::Device, ctx: &vkshmem::Context) -> wgpu::Buffer {
    let raw = ctx.heap_vk_buffer();
    let keep = ctx.clone();
    // SAFETY: `raw.buffer` outlives the hal buffer (wgpu-hal's rule for
    // externally owned buffers): the context owns it, and the callback,
    // which wgpu runs when it drops the hal buffer, holds the context until
    // then. wgpu never maps it (it is not created mappable).
    let hal = unsafe {
        wgpu::hal::vulkan::Buffer::from_raw_externally_owned(
            raw.buffer,
            Box::new(move || drop(keep)),
        )
    };
    // SAFETY: the buffer was created on this device (vkshmem's heap on the
    // VkDevice wgpu opened), with STORAGE_BUFFER | TRANSFER_SRC |
    // TRANSFER_DST usage (wgpu's STORAGE | COPY_SRC | COPY_DST) and at
    // least `raw.bytes` bytes, bound to memory vkshmem initialized (the
    // control region; calloc zeroes every allocation); never zero-sized.
    unsafe {
        device.create_buffer_from_hal::<Vulkan>(
            hal,
            &wgpu::BufferDescriptor {
                label: Some("vkshmem heap"),
                size: raw.bytes,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            },
        )
    }
}

/// `len` elements of `T` at the same offset of every PE's heap
/// ([`Shmem::calloc`]), which wgpu binds as a range of this PE's heap buffer.
pub struct SymBuffer<T: Pod> {
    // The allocation (it holds the context) goes before the device.
    inner: vkshmem::SymBuffer<T>,
    heap: wgpu::Buffer,
    owner: u64,
    device: wgpu::Device,
}

impl<T: Pod> std::fmt::Debug for SymBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymBuffer")
            .field("offset", &self.inner.offset())
            .field("len", &self.inner.len())
            .field("owner", &self.owner)
            .finish()
    }
}

impl<T: Pod> SymBuffer<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether it holds no element (never: [`Shmem::calloc`] refuses 0).
    pub fn is_empty(&self) -> bool {
        self.inner.len() == 0
    }

    /// Bytes.
    pub fn bytes(&self) -> u64 {
        (self.inner.len() * std::mem::size_of::<T>()) as u64
    }

    /// Its byte offset in the heap buffer ([`SymBuffer::buffer`]).
    pub fn offset(&self) -> u64 {
        self.inner.offset()
    }

    /// This PE's heap as a wgpu buffer, which holds this allocation at
    /// [`SymBuffer::offset`] (for `copy_buffer_to_buffer` and the like).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.heap
    }

    /// This allocation as a storage binding, for the program's bind groups.
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.heap,
            offset: self.inner.offset(),
            size: NonZeroU64::new(self.bytes()),
        })
    }

    /// Copies this PE's elements to the host (vkshmem's host read: it
    /// does not wait for wgpu work; submit and wait for it first).
    ///
    /// # Errors
    /// As `vkshmem::SymBuffer::to_vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.inner.to_vec()?)
    }

    /// Copies `src` into this PE's first elements from the host.
    ///
    /// # Errors
    /// As `vkshmem::SymBuffer::write`.
    pub fn write(&self, src: &[T]) -> Result<()> {
        Ok(self.inner.write(src)?)
    }

    /// Frees it on every PE (collective, in the same order everywhere).
    ///
    /// # Errors
    /// As `vkshmem::SymBuffer::free`.
    pub fn free(self) -> Result<()> {
        let SymBuffer { inner, device, .. } = self;
        inner.free()?;
        drop(device);
        Ok(())
    }
}
