//! What can go wrong, typed.

/// The errors of `vkshmem-wgpu`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The adapter is not a Vulkan one (vkshmem shares memory and queues
    /// through Vulkan).
    #[error("adapter {name:?} is on {backend:?}, not Vulkan: vkshmem needs a Vulkan adapter (wgpu::Backends::VULKAN)")]
    NotVulkan {
        /// The adapter's name.
        name: String,
        /// Its backend.
        backend: wgpu::Backend,
    },
    /// wgpu found no Vulkan adapter.
    #[error("no Vulkan adapter: {0}")]
    NoAdapter(#[from] wgpu::RequestAdapterError),
    /// The adapter lacks a Vulkan device extension vkshmem needs.
    #[error("adapter {adapter:?} lacks {extension}, which vkshmem needs (its symmetric heap is shared between processes by file descriptor)")]
    MissingExtension {
        /// The adapter's name.
        adapter: String,
        /// The extension.
        extension: &'static str,
    },
    /// The device descriptor asks for what the adapter cannot give.
    #[error("adapter {adapter:?} cannot open the device asked for: {what}")]
    Unsupported {
        /// The adapter's name.
        adapter: String,
        /// What it lacks.
        what: String,
    },
    /// wgpu-hal could not open the device.
    #[error("opening the Vulkan device: {0}")]
    OpenDevice(#[from] wgpu::hal::DeviceError),
    /// wgpu refused the opened device.
    #[error("creating the wgpu device: {0}")]
    RequestDevice(#[from] wgpu::RequestDeviceError),
    /// Waiting for the device.
    #[error("polling the wgpu device: {0}")]
    Poll(#[from] wgpu::PollError),
    /// A symmetric buffer used with a [`crate::Shmem`] it was not allocated
    /// from: its offset means nothing in this one's heap.
    #[error(
        "a symmetric buffer of another vkshmem context (context {owner}) used with context {this}"
    )]
    ForeignBuffer {
        /// The context that allocated it.
        owner: u64,
        /// The context it was used with.
        this: u64,
    },
    /// A bad argument.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// vkshmem's own error.
    #[error(transparent)]
    Shmem(#[from] vkshmem::Error),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
