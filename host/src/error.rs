//! The typed errors of the host library.

use std::io;

/// Everything that can go wrong in a vkshmem host call.
///
/// Collective calls that fail because of a disagreement between PEs (for example
/// [`Error::AllocMismatch`]) fail identically on every PE, so a program can rely on
/// all PEs taking the same error path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The process was started by another launcher (mpirun, srun, …) as one of
    /// several ranks: without this error each rank would run as its own job of
    /// one PE and every collective would silently skip the others.
    #[error("this process is one of {ranks} ranks started by {launcher} ({var}={ranks}), but vkshmem cannot join such a job yet: each rank would run alone as a job of 1 PE. Start the job with `vkshmrun -n {ranks} PROGRAM [ARGS...]` instead, or build vkshmem with the cargo feature `mpi` (MPI launchers)")]
    ForeignLauncher {
        /// The launcher, as a person knows it.
        launcher: &'static str,
        /// The variable that gave it away.
        var: &'static str,
        /// How many ranks it started.
        ranks: u32,
    },
    /// An environment variable holds a value that cannot be used.
    #[error("environment variable {var}={value:?}: {why}")]
    Config {
        /// The variable's name.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// The Vulkan loader could not be found or opened.
    #[error("cannot load the Vulkan loader (libvulkan.so.1): {0}; install it with `apt-get install libvulkan1 mesa-vulkan-drivers`")]
    Loader(String),
    /// A Vulkan call failed.
    #[error("Vulkan call {call} failed: {result:?}")]
    Vulkan {
        /// The Vulkan entry point that failed.
        call: &'static str,
        /// The result code it returned.
        result: ash::vk::Result,
    },
    /// No usable Vulkan device (1.3, compute queue, external memory fd) was found,
    /// or the one asked for through `VKSHMEM_DEVICE` does not exist.
    #[error("no usable Vulkan device: {0}")]
    NoDevice(String),
    /// The device cannot do something the library needs.
    #[error("device {device:?} does not support {what}")]
    Unsupported {
        /// The device's name.
        device: String,
        /// The missing capability.
        what: String,
    },
    /// Talking to the job's bootstrap endpoint failed.
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    /// Joining a job started by an MPI launcher failed (cargo feature `mpi`).
    #[error("MPI: {0}")]
    Mpi(String),
    /// A malformed bootstrap message arrived.
    #[error("bootstrap protocol: {0}")]
    Wire(#[from] WireError),
    /// The bootstrap endpoint refused this PE (wrong secret, uid, PE number or count).
    #[error("bootstrap refused this PE: {0}")]
    Refused(String),
    /// Another PE of the job failed (died, exited without finalizing, or was aborted).
    #[error("PE {pe} failed: {how}")]
    PeerFailed {
        /// The PE that failed, in the world team.
        pe: u32,
        /// What happened to it.
        how: String,
    },
    /// PEs called a collective operation with different arguments.
    #[error("symmetric allocation mismatch: {0}")]
    AllocMismatch(String),
    /// The symmetric heap has no free range large enough.
    #[error("symmetric heap exhausted: asked for {requested} bytes (alignment {align}), largest free range is {largest_free} of {heap_size} bytes")]
    HeapExhausted {
        /// Bytes asked for.
        requested: u64,
        /// Alignment asked for.
        align: u64,
        /// Largest free contiguous range.
        largest_free: u64,
        /// Total heap size.
        heap_size: u64,
    },
    /// A kernel did not compile or link; the message names the line and column.
    #[error(transparent)]
    Kernel(#[from] vkshmem_device::CompileError),
    /// Device code raised an error during a dispatch (read from the control region
    /// after it finished): a bad PE or address, an invalid team, misuse of a
    /// per-thread collective, or an aborted wait.
    #[error("kernel {kernel:?} raised a device error on PE {pe}: {what} (first at PE argument {arg_pe}, word address {arg_addr})")]
    Device {
        /// The kernel's name.
        kernel: String,
        /// The PE that ran it.
        pe: u32,
        /// The raised `ERR_*` bits, in words.
        what: String,
        /// The raw bits.
        bits: u32,
        /// The PE argument of the first failing access (or the team, for a bad team).
        arg_pe: u32,
        /// The word address of the first failing access.
        arg_addr: u32,
    },
    /// A wait took longer than `VKSHMEM_WAIT_TIMEOUT`: a device wait inside a
    /// kernel launch, or a host collective whose last PEs did not arrive.
    #[error("{what} on PE {pe} waited longer than {seconds} s (VKSHMEM_WAIT_TIMEOUT){missing}")]
    Timeout {
        /// What waited: `kernel "name"`, or the collective
        /// (`barrier_all (barrier #12)`).
        what: String,
        /// This PE.
        pe: u32,
        /// The configured timeout.
        seconds: f64,
        /// Which PEs had not arrived, when known (", waiting for PEs 1, 3").
        missing: String,
    },
    /// Every slot of the team table is taken on some member of the parent team.
    #[error("no free team slot: a PE can be in at most {max} teams at once (destroy teams no longer used)")]
    TeamLimit {
        /// The table's size.
        max: u32,
    },
    /// An argument is out of range or malformed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An earlier launch of a kernel that waits on peers failed on this PE, so the
    /// PEs are out of step and this PE takes part in no further collective
    /// operation (a symmetric buffer dropped after that is not freed).
    #[error("this PE left the job's collectives after an earlier failure: {0}")]
    Broken(String),
    /// A PE number outside the job or a PE whose heap this PE cannot reach directly.
    #[error("PE {pe} is not reachable from PE {me}: {why}")]
    Unreachable {
        /// The PE asked for.
        pe: u32,
        /// This PE.
        me: u32,
        /// Why.
        why: String,
    },
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Result alias of the host library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Names the public call a [`Error::Timeout`] happened in (`what` becomes
    /// `call (what)`); other errors pass through.
    pub(crate) fn during(self, call: &str) -> Self {
        match self {
            Error::Timeout {
                what,
                pe,
                seconds,
                missing,
            } => Error::Timeout {
                what: format!("{call} ({what})"),
                pe,
                seconds,
                missing,
            },
            e => e,
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// Shorthand to turn a Vulkan result into [`Error::Vulkan`] naming the call.
pub(crate) trait VkContext<T> {
    fn vk(self, call: &'static str) -> Result<T>;
}

impl<T> VkContext<T> for std::result::Result<T, ash::vk::Result> {
    fn vk(self, call: &'static str) -> Result<T> {
        self.map_err(|result| Error::Vulkan { call, result })
    }
}

/// A malformed bootstrap frame (`crate::bootstrap::wire`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The frame ended before a field did.
    #[error("truncated message")]
    Truncated,
    /// Bytes were left after the last field.
    #[error("{0} trailing bytes after the message")]
    Trailing(usize),
    /// The tag names no message.
    #[error("unknown message tag {0}")]
    UnknownTag(u8),
    /// A length field is over its limit.
    #[error("{what} of {len} is over the limit of {max}")]
    TooLong {
        /// Which field.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A text field is not UTF-8.
    #[error("text field is not UTF-8")]
    BadText,
    /// A boolean field is neither 0 nor 1.
    #[error("flag byte {0} is neither 0 nor 1")]
    BadFlag(u8),
}
