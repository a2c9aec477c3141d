//! Settings read from the environment: the user's settings
//! (`VKSHMEM_SYMMETRIC_SIZE`, `VKSHMEM_DEVICE`, …), the tuning and test
//! switches, the launcher's hand-over (`VKSHMEM_PE`, …) and the few variables
//! of other programs that vkshmem reads. Each is declared once, in
//! [`SETTINGS`] (its kind, type, default and meaning), and parsed here; [`env()`]
//! is the one place that reads the process environment, and every parser
//! takes a `get` (that reader in production, a map in the tests).
//!
//! Pure parsing, no Vulkan: unit-tested here. `docs/settings.md` lists the
//! table (`host/tests/settings_table.rs` checks it).

use crate::error::{Error, Result};

mod spec;
mod table;
pub use spec::*;
pub use table::{declared, setting, Kind, Setting, SETTINGS};

/// The process environment's value of `name` (`None` when unset or not
/// UTF-8): the one place vkshmem reads a variable, passed as the `get` of the
/// parsers here. `name` is declared in [`SETTINGS`] or is another launcher's
/// rank count ([`FOREIGN_LAUNCHERS`]).
pub fn env(name: &str) -> Option<String> {
    debug_assert!(
        declared(name),
        "{name} is read but not declared in config::SETTINGS"
    );
    std::env::var(name).ok()
}

/// Whether `name` is set at all (any value, UTF-8 or not).
pub fn is_set(name: &str) -> bool {
    debug_assert!(
        declared(name),
        "{name} is read but not declared in config::SETTINGS"
    );
    std::env::var_os(name).is_some()
}

/// Variable with this PE's number in the world team, set by `vkshmrun`.
pub const ENV_PE: &str = "VKSHMEM_PE";
/// Variable with the number of PEs in the job, set by `vkshmrun`.
pub const ENV_NPES: &str = "VKSHMEM_NPES";
/// Variable with the bootstrap endpoint (an abstract Unix socket name), set by `vkshmrun`.
pub const ENV_BOOTSTRAP: &str = "VKSHMEM_BOOTSTRAP";
/// Variable with the job's secret (hex), set by `vkshmrun`.
pub const ENV_SECRET: &str = "VKSHMEM_SECRET";
/// Size of each PE's symmetric heap, with an optional K/M/G/T suffix (powers of 1024).
pub const ENV_HEAP_SIZE: &str = "VKSHMEM_SYMMETRIC_SIZE";
/// Device choice: an index into the Vulkan physical device list or a name substring.
pub const ENV_DEVICE: &str = "VKSHMEM_DEVICE";
/// Ranks per node in a job started by `mpirun` (default: the ranks that share
/// memory); smaller nodes test the paths between nodes on one machine.
pub const ENV_NODE_SIZE: &str = "VKSHMEM_NODE_SIZE";

/// Default symmetric heap size per PE.
pub const DEFAULT_HEAP_SIZE: u64 = 256 << 20;

/// Parses a byte count such as `4096`, `64K`, `256M`, `1G`, `1.5G` (suffixes are powers
/// of 1024, case-insensitive, an optional trailing `B`/`iB` is accepted).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix("ib"))
        .or_else(|| t.strip_suffix(['B', 'b']))
        .unwrap_or(t);
    let (num, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        't' | 'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let num = num.trim();
    if num.is_empty() {
        return None;
    }
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(1u64 << shift);
    }
    // Fractions only with a suffix ("1.5G"); the result is rounded down to a byte.
    let f: f64 = num.parse().ok()?;
    if shift == 0 || !f.is_finite() || f < 0.0 {
        return None;
    }
    let bytes = f * (1u64 << shift) as f64;
    (bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// How this process learned its place in the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnv {
    /// This PE's number.
    pub pe: u32,
    /// Number of PEs.
    pub npes: u32,
    /// Bootstrap endpoint and secret, absent for a lone PE started without `vkshmrun`.
    pub bootstrap: Option<(String, Vec<u8>)>,
}

/// Reads the launcher's hand-over through `get` (the environment in production).
/// Without `VKSHMEM_PE`, the process is a job of one PE.
pub fn job_env(get: impl Fn(&str) -> Option<String>) -> Result<JobEnv> {
    let Some(pe_text) = get(ENV_PE) else {
        if let Some((launcher, var, ranks)) = foreign_launch(&get) {
            return Err(Error::ForeignLauncher {
                launcher,
                var,
                ranks,
            });
        }
        return Ok(JobEnv {
            pe: 0,
            npes: 1,
            bootstrap: None,
        });
    };
    let num = |var: &'static str, value: String| -> Result<u32> {
        value.trim().parse::<u32>().map_err(|e| Error::Config {
            var,
            value: value.clone(),
            why: e.to_string(),
        })
    };
    let pe = num(ENV_PE, pe_text)?;
    let npes_text = get(ENV_NPES).ok_or_else(|| Error::Config {
        var: ENV_NPES,
        value: String::new(),
        why: format!("missing while {ENV_PE} is set"),
    })?;
    let npes = num(ENV_NPES, npes_text.clone())?;
    if npes == 0 || pe >= npes {
        return Err(Error::Config {
            var: ENV_PE,
            value: pe.to_string(),
            why: format!("must be below {ENV_NPES}={npes_text}"),
        });
    }
    let endpoint = get(ENV_BOOTSTRAP);
    let secret = get(ENV_SECRET);
    let bootstrap = match (endpoint, secret) {
        (Some(ep), Some(secret)) => {
            let bytes = decode_hex(&secret).ok_or_else(|| Error::Config {
                var: ENV_SECRET,
                value: "<hidden>".into(),
                why: "not an even-length hex string".into(),
            })?;
            Some((ep, bytes))
        }
        (None, None) if npes == 1 => None,
        _ => {
            return Err(Error::Config {
                var: ENV_BOOTSTRAP,
                value: String::new(),
                why: format!("{ENV_BOOTSTRAP} and {ENV_SECRET} must both be set for a job of {npes} PEs (start it with vkshmrun)"),
            })
        }
    };
    Ok(JobEnv {
        pe,
        npes,
        bootstrap,
    })
}

/// Variables other launchers set for every rank of a job: (variable with the
/// number of ranks, the launcher).
pub const FOREIGN_LAUNCHERS: &[(&str, &str)] = &[
    ("OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"),
    (
        "PMI_SIZE",
        "an MPI launcher (MPICH's or Intel MPI's mpiexec, or another PMI launcher)",
    ),
    ("MV2_COMM_WORLD_SIZE", "MVAPICH's mpirun"),
    ("SLURM_STEP_NUM_TASKS", "Slurm's srun"),
    ("PALS_NRANKS", "PALS (Cray) mpiexec"),
];

/// Whether this process is one of several ranks started by an MPI launcher
/// (Open MPI's mpirun, a PMI launcher, MVAPICH's) and not by vkshmrun: with
/// the cargo feature `mpi`, such a job's PEs are its ranks.
pub fn mpi_launch(get: &impl Fn(&str) -> Option<String>) -> bool {
    get(ENV_PE).is_none()
        && foreign_launch(get).is_some_and(|(_, var, _)| {
            matches!(
                var,
                "OMPI_COMM_WORLD_SIZE" | "PMI_SIZE" | "MV2_COMM_WORLD_SIZE"
            )
        })
}

/// The launcher that started this process as one of several ranks, if any:
/// (launcher, variable, ranks). One rank (`mpirun -n 1`) is a job of one PE.
pub fn foreign_launch(
    get: &impl Fn(&str) -> Option<String>,
) -> Option<(&'static str, &'static str, u32)> {
    FOREIGN_LAUNCHERS.iter().find_map(|&(var, launcher)| {
        let ranks: u32 = get(var)?.trim().parse().ok()?;
        (ranks > 1).then_some((launcher, var, ranks))
    })
}

/// The heap's size in bytes ([`heap_size_setting`]: `VKSHMEM_SYMMETRIC_SIZE`,
/// else `SHMEM_SYMMETRIC_SIZE`, else the default).
pub fn heap_size(get: impl Fn(&str) -> Option<String>) -> Result<u64> {
    heap_size_setting(get).map(|h| h.bytes)
}

/// Seconds a device-side wait may take before it becomes an error; unset: no limit.
pub const ENV_WAIT_TIMEOUT: &str = "VKSHMEM_WAIT_TIMEOUT";

/// `VKSHMEM_WAIT_TIMEOUT` (seconds, fractions allowed), `None` when unset or 0.
pub fn wait_timeout(get: impl Fn(&str) -> Option<String>) -> Result<Option<std::time::Duration>> {
    match get(ENV_WAIT_TIMEOUT) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<f64>() {
            Ok(0.0) => Ok(None),
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => {
                Ok(Some(std::time::Duration::from_secs_f64(s)))
            }
            _ => Err(Error::Config {
                var: ENV_WAIT_TIMEOUT,
                value: v,
                why: "expected a number of seconds such as 30 or 0.5 (0: no limit)".into(),
            }),
        },
    }
}

/// Microseconds a submission's wait polls its fence before it blocks in
/// `vkWaitForFences`. A blocking wait wakes up later than the GPU finishes on
/// some drivers (NVIDIA: a blocked wait takes tens of microseconds to wake,
/// several times an empty submission's run; benches/RESULTS.md, "H200 one
/// submitter"); polling trades a core for that latency. Unset:
/// [`FENCE_SPIN_AUTO`] on drivers that time-slice processes (NVIDIA's) when the
/// node's PEs do not outnumber the cores this process may run on
/// (`available_parallelism`: its affinity, so a PE bound to one core, as under
/// `mpirun --bind-to core` with several PEs, does not poll unless asked), as
/// CUDA's default schedule spins when its contexts do not outnumber the cores;
/// 0 (block at once) elsewhere, such as on llvmpipe, whose driver threads need
/// the cores a poll would take.
pub const ENV_FENCE_SPIN: &str = "VKSHMEM_FENCE_SPIN_US";

/// The fence poll where `VKSHMEM_FENCE_SPIN_US` is unset and polling pays
/// (see [`ENV_FENCE_SPIN`]): long enough to cover a host collective up to
/// tens of MiB on a GPU, short enough that a PE waiting on a slow peer soon
/// blocks.
pub const FENCE_SPIN_AUTO: std::time::Duration = std::time::Duration::from_micros(250);

/// `VKSHMEM_FENCE_SPIN_US` (whole microseconds, at most one second); `None`
/// when unset (the context chooses, see [`ENV_FENCE_SPIN`]).
pub fn fence_spin(get: impl Fn(&str) -> Option<String>) -> Result<Option<std::time::Duration>> {
    micros_at_most_a_second(get, ENV_FENCE_SPIN)
}

/// `var` as whole microseconds from 0 to one second; `None` when unset.
fn micros_at_most_a_second(
    get: impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<std::time::Duration>> {
    match get(var) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(us) if us <= 1_000_000 => Ok(Some(std::time::Duration::from_micros(us))),
            _ => Err(Error::Config {
                var,
                value: v,
                why: "expected whole microseconds from 0 to 1000000, such as 50".into(),
            }),
        },
    }
}

/// The fence poll of a PE: `VKSHMEM_FENCE_SPIN_US` when set, else
/// [`FENCE_SPIN_AUTO`] on a time-sliced driver where the node's PEs
/// (`sharing`) each have a core (`cores`), else none.
pub fn fence_spin_or_auto(
    set: Option<std::time::Duration>,
    time_sliced: bool,
    sharing: u32,
    cores: usize,
) -> std::time::Duration {
    set.unwrap_or(if time_sliced && sharing as usize <= cores {
        FENCE_SPIN_AUTO
    } else {
        std::time::Duration::ZERO
    })
}

/// Microseconds a wait keeps polling with `sched_yield` after its spins
/// before it blocks: a submission's fence wait after the fence poll
/// ([`ENV_FENCE_SPIN`]), and a wait on the sync plane after its spins and
/// yields (`Plane::set_yield_for`). A blocked wait wakes tens of
/// microseconds after its event on NVIDIA, a fence's and a futex's alike
/// (benches/RESULTS.md, "H200 one-submission call"), so a call past the fence
/// poll's 250 us lost that much, and so did every member that waited out the
/// leader's submission. Unset: [`YIELD_POLL_AUTO`] where the fence poll is on
/// (a time-sliced driver where the node's PEs each have a core), else 0; a
/// yielding poll gives its core to any thread that needs it.
pub const ENV_YIELD_POLL: &str = "VKSHMEM_YIELD_POLL_US";

/// The yield-polling window where `VKSHMEM_YIELD_POLL_US` is unset and the
/// fence poll is on: one wait slice (longer waits block; their wake-up is a
/// small share of them).
pub const YIELD_POLL_AUTO: std::time::Duration = std::time::Duration::from_millis(20);

/// `VKSHMEM_YIELD_POLL_US` (whole microseconds, at most one second); `None`
/// when unset (see [`ENV_YIELD_POLL`]).
pub fn yield_poll(get: impl Fn(&str) -> Option<String>) -> Result<Option<std::time::Duration>> {
    micros_at_most_a_second(get, ENV_YIELD_POLL)
}

/// The yield-polling window of a PE: `VKSHMEM_YIELD_POLL_US` when set, else
/// [`YIELD_POLL_AUTO`] where its fence poll (`fence_spin`) is on, else none.
pub fn yield_poll_or_auto(
    set: Option<std::time::Duration>,
    fence_spin: std::time::Duration,
) -> std::time::Duration {
    set.unwrap_or(if fence_spin.is_zero() {
        std::time::Duration::ZERO
    } else {
        YIELD_POLL_AUTO
    })
}

/// Who submits the members' parts of a host collective on the kernel path
/// when the team shares one device (`collective::part`): `each` (every
/// member its own), `leader` (the team's first member every member's, in
/// one submission: the wide launches, and the generic kernels run as each
/// member where the first member reaches every PE's heap directly),
/// `auto` (the default:
/// `leader` on drivers that time-slice processes, where every submission of
/// another process costs a context switch: NVIDIA's; `each` elsewhere).
/// The members take `leader` only when all of them ask for it.
pub const ENV_SUBMIT: &str = "VKSHMEM_SUBMIT";

/// `VKSHMEM_SUBMIT`: `Some(true)` for `leader`, `Some(false)` for `each`,
/// `None` for `auto` (or unset).
pub fn submit(get: impl Fn(&str) -> Option<String>) -> Result<Option<bool>> {
    auto_or(get, ENV_SUBMIT, ("each", false), ("leader", true))
}

/// A setting of `auto` (or unset, or empty: `None`) or one of two words,
/// `a` and `b`, each naming its value; anything else an error that lists
/// the three.
fn auto_or(
    get: impl Fn(&str) -> Option<String>,
    var: &'static str,
    a: (&str, bool),
    b: (&str, bool),
) -> Result<Option<bool>> {
    one_of(
        get,
        var,
        None,
        &[("auto", None), (a.0, Some(a.1)), (b.0, Some(b.1))],
    )
}

/// A setting that names one of `choices` (its value trimmed; unset or
/// empty: `unset`); anything else an error that lists the words.
fn one_of<T: Copy>(
    get: impl Fn(&str) -> Option<String>,
    var: &'static str,
    unset: T,
    choices: &[(&str, T)],
) -> Result<T> {
    let Some(v) = get(var).filter(|v| !v.trim().is_empty()) else {
        return Ok(unset);
    };
    let v = v.trim();
    if let Some(&(_, t)) = choices.iter().find(|(w, _)| *w == v) {
        return Ok(t);
    }
    let words: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
    let why = match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("expected {} or {last}", rest.join(", ")),
        Some((last, _)) => format!("expected {last}"),
        None => "no value is accepted".into(),
    };
    Err(Error::Config {
        var,
        value: v.to_string(),
        why,
    })
}

/// Whether the host's direct path (a CPU device's large collectives) writes
/// dests with streaming stores that bypass the cache: `auto` (the default:
/// where the call's sources and dests take twice the last-level cache, see
/// `collective::copy::streams`), `on` or `off`.
pub const ENV_HOST_STREAM: &str = "VKSHMEM_HOST_STREAM";

/// `VKSHMEM_HOST_STREAM`: `Some(true)` for `on`, `Some(false)` for `off`,
/// `None` for `auto` (or unset).
pub fn host_stream(get: impl Fn(&str) -> Option<String>) -> Result<Option<bool>> {
    auto_or(get, ENV_HOST_STREAM, ("on", true), ("off", false))
}

/// Whether a PE records each submission of dispatches once and submits it
/// again while later calls' dispatches are the same (`crate::vk::submit`'s
/// reuse slots): `on` (the default) or `off` (every submission recorded
/// anew: for comparisons).
pub const ENV_REUSE_RECORDINGS: &str = "VKSHMEM_REUSE_RECORDINGS";

/// Where a trace of the job's calls goes (Chrome trace-event JSON, for
/// Perfetto or chrome://tracing; `crate::trace`): each PE writes its part
/// beside it, and the launcher merges them into this file at the end.
pub const ENV_TRACE: &str = "VKSHMEM_TRACE";

/// `VKSHMEM_TRACE`: the trace's path, if set and not empty.
pub fn trace(get: impl Fn(&str) -> Option<String>) -> Option<std::path::PathBuf> {
    get(ENV_TRACE)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
}

/// Whether each PE keeps its last calls in the node segment's flight
/// recorder (`crate::sync::recorder`): `on` (the default) or `off` (to
/// measure what recording costs).
pub const ENV_RECORD: &str = "VKSHMEM_RECORD";

/// `VKSHMEM_RECORD`: true unless `off`.
pub fn record(get: impl Fn(&str) -> Option<String>) -> Result<bool> {
    Ok(auto_or(get, ENV_RECORD, ("on", true), ("off", false))?.unwrap_or(true))
}

/// `VKSHMEM_REUSE_RECORDINGS`: true unless `off`.
pub fn reuse_recordings(get: impl Fn(&str) -> Option<String>) -> Result<bool> {
    Ok(auto_or(get, ENV_REUSE_RECORDINGS, ("on", true), ("off", false))?.unwrap_or(true))
}

/// How a PE's submissions tell it they finished: `fence` (the default: the
/// fence alone) or `word` (also a word in host memory that each submission's
/// last command sets, polled before the fence: for measuring a fence's
/// signal against a memory write on a GPU; see
/// `crate::vk::submit::Submitter::set_completion`).
pub const ENV_COMPLETION: &str = "VKSHMEM_COMPLETION";

/// `VKSHMEM_COMPLETION`: true for `word`.
pub fn completion_words(get: impl Fn(&str) -> Option<String>) -> Result<bool> {
    one_of(
        get,
        ENV_COMPLETION,
        false,
        &[("fence", false), ("word", true)],
    )
}

/// Invocations per workgroup of the host collectives' wide copies and
/// pushes (the vec4 loops that move large messages; the reductions keep
/// `vkshmem_device::collectives::WIDE_REDUCE_WORKGROUP`): a power of two
/// from 1 to 1024, within the device's limits, or `auto` (the default: 64 on
/// llvmpipe, where each workgroup is a SIMD loop on one thread; 256
/// elsewhere, since the dispatch limit of 65535 workgroups of 64 caps a
/// large copy's parallelism on a GPU:
/// `vkshmem_device::collectives::WIDE_WORKGROUP_GPU`).
pub const ENV_WIDE_WORKGROUP: &str = "VKSHMEM_WIDE_WORKGROUP";

/// `VKSHMEM_WIDE_WORKGROUP`: `None` for `auto` (or unset).
pub fn wide_workgroup(get: impl Fn(&str) -> Option<String>) -> Result<Option<u32>> {
    match get(ENV_WIDE_WORKGROUP).as_deref().map(str::trim) {
        None | Some("") | Some("auto") => Ok(None),
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n.is_power_of_two() && n <= 1024 => Ok(Some(n)),
            _ => Err(Error::Config {
                var: ENV_WIDE_WORKGROUP,
                value: v.to_string(),
                why: "expected auto or a power of two from 1 to 1024".into(),
            }),
        },
    }
}

/// The element the host collectives' wide kernels move
/// (`vkshmem_device::collectives::WideUnit`): `u32` (`vec4<u32>`), `u64`
/// (`vec2<u64>`, where the device has `shaderInt64`), or `auto` (the
/// default: `u64` on llvmpipe, which moves memory faster through 64-bit
/// components (benches/RESULTS.md, "64-bit loads on llvmpipe"); `u32`
/// elsewhere, where no such gain is on record). The device library's vec4 view
/// (the device forms' bulk moves) takes the same unit
/// (`LibraryConfig::vec4_u64`).
pub const ENV_WIDE_UNIT: &str = "VKSHMEM_WIDE_UNIT";

/// `VKSHMEM_WIDE_UNIT`: `None` for `auto` (or unset).
pub fn wide_unit(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<vkshmem_device::collectives::WideUnit>> {
    use vkshmem_device::collectives::WideUnit;
    one_of(
        get,
        ENV_WIDE_UNIT,
        None,
        &[
            ("auto", None),
            ("u32", Some(WideUnit::Vec4U32)),
            ("u64", Some(WideUnit::Vec2U64)),
        ],
    )
}

/// `off`: the host never maps the symmetric heap, even where its memory is
/// host-visible, as on a GPU without a host-visible device-local heap; every
/// host access then goes through copies on the device. For testing those paths
/// on any device (lavapipe's heap is host memory). `auto` (the default): mapped
/// where the memory allows.
pub const ENV_HEAP_MAPPING: &str = "VKSHMEM_HEAP_MAPPING";

/// `VKSHMEM_HEAP_MAPPING`: whether the host may map the heap.
pub fn heap_mapping(get: impl Fn(&str) -> Option<String>) -> Result<bool> {
    one_of(
        get,
        ENV_HEAP_MAPPING,
        true,
        &[("auto", true), ("off", false)],
    )
}

/// Largest collective (bytes per member) run on the host through the mapped
/// heap and the sync plane, with no submission: in one sync through the
/// plane's data slot where it fits, else straight from the members' mapped
/// heaps or in rounds through the staging buffers (`collective::host_path`);
/// `0` forces every collective through a kernel.
pub const ENV_HOST_MAPPED_MAX: &str = "VKSHMEM_HOST_MAPPED_MAX";

/// The default of [`ENV_HOST_MAPPED_MAX`] on a CPU device (lavapipe): every
/// size. Its kernels run on the same cores as the host's memcpy, and copy
/// slower than it; the host path beat the kernels at every size
/// (benches/RESULTS.md, "Host path against kernels"), and straight from the
/// members' heaps (`collective/direct.rs`) beat those rounds
/// (benches/RESULTS.md, "Direct host path").
pub const HOST_MAPPED_MAX_CPU: u64 = u64::MAX;

/// The default of [`ENV_HOST_MAPPED_MAX`] where the heap is host memory that
/// a GPU computes on (integrated GPUs): every size the plane's data slot
/// holds (on lavapipe the host path beat the kernel at every one,
/// benches/RESULTS.md, "Host path against kernels"; not measured on such a
/// GPU).
pub const HOST_MAPPED_MAX_HOST_MEMORY: u64 = 16 << 10;

/// The default of [`ENV_HOST_MAPPED_MAX`] on a discrete GPU whose heap the host
/// maps through the PCIe BAR: host reads of device memory are uncached, so only
/// tiny calls (not yet measured on such a GPU).
pub const HOST_MAPPED_MAX_BAR: u64 = 256;

/// `VKSHMEM_HOST_MAPPED_MAX` in bytes (a size such as 4096 or 8K); `None` when
/// unset (the caller picks the device's default).
pub fn host_mapped_max(get: impl Fn(&str) -> Option<String>) -> Result<Option<u64>> {
    match get(ENV_HOST_MAPPED_MAX) {
        None => Ok(None),
        Some(v) if v.trim() == "0" => Ok(Some(0)),
        Some(v) => parse_size(&v).map(Some).ok_or_else(|| Error::Config {
            var: ENV_HOST_MAPPED_MAX,
            value: v,
            why: "expected a size in bytes such as 4096 or 8K (0: always a kernel)".into(),
        }),
    }
}

/// How this PE reaches a peer's heap: `auto` (the default: direct where the
/// peer shares this PE's device, staged elsewhere), `staged` (every peer
/// staged, as if each PE had a device of its own: the cross-device path,
/// testable on one device) or `staged:K` (PEs grouped K at a time by number,
/// `pe / K`, as if each group shared a device: direct within a group, staged
/// across; the mixed teams of a node with several GPUs and several PEs on
/// each). See `transport::Mode`.
pub const ENV_TRANSPORT: &str = "VKSHMEM_TRANSPORT";

/// `VKSHMEM_TRANSPORT`: `None` for `auto` (or unset, or empty), `Some(K)` for
/// `staged:K` (`staged`: `Some(1)`).
pub fn transport(get: impl Fn(&str) -> Option<String>) -> Result<Option<u32>> {
    match get(ENV_TRANSPORT).as_deref().map(str::trim) {
        None | Some("") | Some("auto") => Ok(None),
        Some("staged") => Ok(Some(1)),
        Some(v) => match v.strip_prefix("staged:").map(str::parse::<u32>) {
            Some(Ok(k)) if k >= 1 => Ok(Some(k)),
            _ => Err(Error::Config {
                var: ENV_TRANSPORT,
                value: v.into(),
                why: "use auto, staged or staged:K with K >= 1 PEs per group".into(),
            }),
        },
    }
}

/// The directory of the pipeline cache files (`vk::pipeline_cache`), the
/// prebuild profiles and the compile turns, or `0` (also `off`, `false`,
/// `no`) for none of them.
pub const ENV_PIPELINE_CACHE: &str = "VKSHMEM_PIPELINE_CACHE";
/// The XDG base directory of caches: the pipeline cache's parent where
/// [`ENV_PIPELINE_CACHE`] is unset.
pub const ENV_XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
/// The home directory: its `.cache` holds the pipeline cache where neither
/// [`ENV_PIPELINE_CACHE`] nor [`ENV_XDG_CACHE_HOME`] is set.
pub const ENV_HOME: &str = "HOME";

/// The directory of the pipeline cache files: [`ENV_PIPELINE_CACHE`] when
/// set (`None` when it turns the files off), else `$XDG_CACHE_HOME/vkshmem`
/// (an absolute path, as the XDG base directory specification requires),
/// else `$HOME/.cache/vkshmem`.
pub fn pipeline_cache_dir(get: impl Fn(&str) -> Option<String>) -> Option<std::path::PathBuf> {
    use std::path::{Path, PathBuf};
    if let Some(v) = get(ENV_PIPELINE_CACHE).filter(|v| !v.is_empty()) {
        return match v.as_str() {
            "0" | "off" | "false" | "no" => None,
            dir => Some(PathBuf::from(dir)),
        };
    }
    if let Some(xdg) = get(ENV_XDG_CACHE_HOME).filter(|v| Path::new(v).is_absolute()) {
        return Some(Path::new(&xdg).join("vkshmem"));
    }
    let home = get(ENV_HOME).filter(|v| Path::new(v).is_absolute())?;
    Some(Path::new(&home).join(".cache").join("vkshmem"))
}

/// Which host kernels are built in the background after `init` (`0`, `1` or
/// `all`; see `kernels::prebuild`).
pub const ENV_PREBUILD: &str = "VKSHMEM_PREBUILD";

/// What the background builder builds ([`ENV_PREBUILD`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prebuild {
    /// Nothing: every kernel is built by its first call.
    Off,
    /// The profile's kernels; without one, those a typical program calls
    /// first when there are CPUs to spare.
    Typical,
    /// The profile's kernels and every host collective's kernel for the world
    /// team.
    All,
}

/// `VKSHMEM_PREBUILD`; an unknown value is the default, with a warning.
pub fn prebuild(get: impl Fn(&str) -> Option<String>) -> Prebuild {
    match get(ENV_PREBUILD).as_deref().map(str::trim) {
        None | Some("") | Some("1") => Prebuild::Typical,
        Some("0") | Some("off") | Some("false") | Some("no") => Prebuild::Off,
        Some("all") => Prebuild::All,
        Some(other) => {
            tracing::warn!("{ENV_PREBUILD}={other:?} is not 0, 1 or all: using 1");
            Prebuild::Typical
        }
    }
}

/// Overrides `vk::DeviceInfo::cross_process_waits`: `1` lets device code wait
/// for PEs of other processes on this device, `0` forbids it.
pub const ENV_CROSS_PROCESS_WAITS: &str = "VKSHMEM_CROSS_PROCESS_WAITS";

/// `VKSHMEM_CROSS_PROCESS_WAITS`: `Some(true)` for `1`, `Some(false)` for
/// `0`; unset or anything else `None` (the driver decides:
/// `vk::cross_process_waits`).
pub fn cross_process_waits(get: impl Fn(&str) -> Option<String>) -> Option<bool> {
    match get(ENV_CROSS_PROCESS_WAITS).as_deref().map(str::trim) {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => None,
    }
}

/// Overrides the workgroups the device runs at once
/// (`vk::DeviceInfo::resident_workgroups`): the most a launch of the
/// multi-workgroup forms may have.
pub const ENV_RESIDENT_WORKGROUPS: &str = "VKSHMEM_RESIDENT_WORKGROUPS";

/// `VKSHMEM_RESIDENT_WORKGROUPS` when it is a positive number; `None` when
/// unset, or with a warning when it is not one (the device's count holds).
pub fn resident_workgroups(get: impl Fn(&str) -> Option<String>) -> Option<u32> {
    let v = get(ENV_RESIDENT_WORKGROUPS)?;
    let n = v.trim().parse().ok().filter(|&n: &u32| n > 0);
    if n.is_none() {
        tracing::warn!("{ENV_RESIDENT_WORKGROUPS}={v:?} is not a positive number: ignored");
    }
    n
}

/// Mesa's llvmpipe threads: llvmpipe runs that many workgroups at once.
pub const ENV_LP_NUM_THREADS: &str = "LP_NUM_THREADS";

/// `LP_NUM_THREADS` when it is a number (else `None`: Mesa's default).
pub fn lp_num_threads(get: impl Fn(&str) -> Option<String>) -> Option<u32> {
    get(ENV_LP_NUM_THREADS)?.trim().parse().ok()
}

/// The sync plane's barrier (`sync::WaitPolicy`): `counter` (the default) or
/// `flags` (per-member flags that every waiter polls; for measurement).
pub const ENV_SYNC_ALGO: &str = "VKSHMEM_SYNC_ALGO";
/// Polls with a spin hint before a wait on the sync plane starts yielding.
pub const ENV_SYNC_SPIN: &str = "VKSHMEM_SYNC_SPIN";
/// `sched_yield` polls before a wait on the sync plane sleeps on its futex.
pub const ENV_SYNC_YIELDS: &str = "VKSHMEM_SYNC_YIELDS";

/// `VKSHMEM_SYNC_ALGO`: true for `flags`.
pub fn sync_flags(get: impl Fn(&str) -> Option<String>) -> Result<bool> {
    match get(ENV_SYNC_ALGO).as_deref() {
        None | Some("counter") => Ok(false),
        Some("flags") => Ok(true),
        Some(v) => Err(Error::Config {
            var: ENV_SYNC_ALGO,
            value: v.into(),
            why: "use counter or flags".into(),
        }),
    }
}

/// `VKSHMEM_SYNC_SPIN`; `None` when unset.
pub fn sync_spin(get: impl Fn(&str) -> Option<String>) -> Result<Option<u32>> {
    count(get, ENV_SYNC_SPIN)
}

/// `VKSHMEM_SYNC_YIELDS`; `None` when unset.
pub fn sync_yields(get: impl Fn(&str) -> Option<String>) -> Result<Option<u32>> {
    count(get, ENV_SYNC_YIELDS)
}

/// `var` as a count; `None` when unset.
fn count(get: impl Fn(&str) -> Option<String>, var: &'static str) -> Result<Option<u32>> {
    match get(var) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| Error::Config {
            var,
            value: v.clone(),
            why: "not a count".into(),
        }),
    }
}

/// `VKSHMEM_NODE_SIZE` ([`ENV_NODE_SIZE`]); `None` when unset.
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

/// Test hook: turns a bootstrap unit test's child process into a stranger
/// that speaks raw frames to an endpoint (`ENDPOINT SECRET_HEX`).
pub const ENV_TEST_RAW_STRANGER: &str = "VKSHMEM_TEST_RAW_STRANGER";

/// The `tracing` filter of vkshmem's log on stderr; unset: no log.
pub const ENV_RUST_LOG: &str = "RUST_LOG";

/// The C compiler `oshcc` runs.
pub const ENV_OSHCC_CC: &str = "OSHCC_CC";

/// `OSHCC_CC`, else `cc`.
pub fn oshcc_cc(get: impl Fn(&str) -> Option<String>) -> String {
    get(ENV_OSHCC_CC).unwrap_or_else(|| "cc".into())
}

/// Lower-case hex of `bytes`.
pub fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of a hex string, or `None` when it is not hex of even length.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn several_ranks_of_another_launcher_are_refused() {
        let env = |k: &'static str, v: &'static str| move |q: &str| (q == k).then(|| v.to_string());
        for (var, _) in FOREIGN_LAUNCHERS {
            let e = job_env(env(var, "4")).unwrap_err().to_string();
            assert!(e.contains("vkshmrun -n 4") && e.contains(var), "{e}");
            // One rank is a job of one PE.
            assert_eq!(job_env(env(var, "1")).unwrap().npes, 1);
        }
        let e = job_env(env("OMPI_COMM_WORLD_SIZE", "2"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("Open MPI's mpirun"), "{e}");
        // Under vkshmrun the launcher's variables win.
        let both = |q: &str| match q {
            "OMPI_COMM_WORLD_SIZE" => Some("2".to_string()),
            ENV_PE => Some("0".into()),
            ENV_NPES => Some("1".into()),
            _ => None,
        };
        assert_eq!(job_env(both).unwrap().npes, 1);
    }

    #[test]
    fn wait_timeout_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert_eq!(wait_timeout(|_| None).unwrap(), None);
        assert_eq!(wait_timeout(env("0")).unwrap(), None);
        assert_eq!(
            wait_timeout(env("2.5")).unwrap(),
            Some(std::time::Duration::from_millis(2500))
        );
        for bad in ["-1", "x", "inf", "NaN"] {
            assert!(wait_timeout(env(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn submit_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert_eq!(submit(|_| None).unwrap(), None);
        assert_eq!(submit(env("auto")).unwrap(), None);
        assert_eq!(submit(env(" leader ")).unwrap(), Some(true));
        assert_eq!(submit(env("each")).unwrap(), Some(false));
        let e = submit(env("all")).unwrap_err().to_string();
        assert!(
            e.contains("VKSHMEM_SUBMIT") && e.contains("auto, each or leader"),
            "{e}"
        );
    }

    #[test]
    fn host_stream_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert_eq!(host_stream(|_| None).unwrap(), None);
        assert_eq!(host_stream(env("auto")).unwrap(), None);
        assert_eq!(host_stream(env(" on")).unwrap(), Some(true));
        assert_eq!(host_stream(env("off")).unwrap(), Some(false));
        let e = host_stream(env("1")).unwrap_err().to_string();
        assert!(
            e.contains("VKSHMEM_HOST_STREAM") && e.contains("auto, on or off"),
            "{e}"
        );
    }

    #[test]
    fn reuse_recordings_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert!(reuse_recordings(|_| None).unwrap());
        assert!(reuse_recordings(env("auto")).unwrap());
        assert!(reuse_recordings(env("on ")).unwrap());
        assert!(!reuse_recordings(env("off")).unwrap());
        let e = reuse_recordings(env("no")).unwrap_err().to_string();
        assert!(e.contains("VKSHMEM_REUSE_RECORDINGS"), "{e}");
    }

    #[test]
    fn completion_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert!(!completion_words(|_| None).unwrap());
        assert!(!completion_words(env("fence")).unwrap());
        assert!(completion_words(env(" word")).unwrap());
        let e = completion_words(env("auto")).unwrap_err().to_string();
        assert!(
            e.contains("VKSHMEM_COMPLETION") && e.contains("fence or word"),
            "{e}"
        );
    }

    #[test]
    fn wide_workgroup_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert_eq!(wide_workgroup(|_| None).unwrap(), None);
        assert_eq!(wide_workgroup(env("auto")).unwrap(), None);
        assert_eq!(wide_workgroup(env(" 256 ")).unwrap(), Some(256));
        assert_eq!(wide_workgroup(env("1")).unwrap(), Some(1));
        for bad in ["0", "96", "2048", "-64", "big"] {
            let e = wide_workgroup(env(bad)).unwrap_err().to_string();
            assert!(e.contains("VKSHMEM_WIDE_WORKGROUP"), "{bad}: {e}");
        }
    }

    #[test]
    fn heap_mapping_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert!(heap_mapping(|_| None).unwrap());
        assert!(heap_mapping(env(" ")).unwrap());
        assert!(heap_mapping(env("auto")).unwrap());
        assert!(!heap_mapping(env(" off")).unwrap());
        let e = heap_mapping(env("on")).unwrap_err().to_string();
        assert!(
            e.contains("VKSHMEM_HEAP_MAPPING") && e.contains("auto or off"),
            "{e}"
        );
    }

    #[test]
    fn wide_unit_values() {
        use vkshmem_device::collectives::WideUnit;
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert_eq!(wide_unit(|_| None).unwrap(), None);
        assert_eq!(wide_unit(env("auto")).unwrap(), None);
        assert_eq!(wide_unit(env(" u64 ")).unwrap(), Some(WideUnit::Vec2U64));
        assert_eq!(wide_unit(env("u32")).unwrap(), Some(WideUnit::Vec4U32));
        for bad in ["vec4", "64", "U64"] {
            let e = wide_unit(env(bad)).unwrap_err().to_string();
            assert!(
                e.contains("VKSHMEM_WIDE_UNIT") && e.contains("auto, u32 or u64"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn fence_spin_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        assert_eq!(fence_spin(|_| None).unwrap(), None);
        assert_eq!(
            fence_spin(env(" 50 ")).unwrap(),
            Some(std::time::Duration::from_micros(50))
        );
        assert_eq!(
            fence_spin(env("0")).unwrap(),
            Some(std::time::Duration::ZERO)
        );
        // Unset: a poll only on a time-sliced driver with a core per PE.
        let zero = std::time::Duration::ZERO;
        assert_eq!(fence_spin_or_auto(None, true, 4, 16), FENCE_SPIN_AUTO);
        assert_eq!(fence_spin_or_auto(None, true, 16, 16), FENCE_SPIN_AUTO);
        assert_eq!(fence_spin_or_auto(None, true, 17, 16), zero);
        assert_eq!(fence_spin_or_auto(None, false, 2, 16), zero);
        // Set: as set, whatever the driver.
        assert_eq!(fence_spin_or_auto(Some(zero), true, 2, 16), zero);
        let us = std::time::Duration::from_micros(7);
        assert_eq!(fence_spin_or_auto(Some(us), false, 2, 1), us);
        for bad in ["-1", "2.5", "x", "1000001"] {
            let e = fence_spin(env(bad)).unwrap_err().to_string();
            assert!(e.contains(ENV_FENCE_SPIN), "{bad}: {e}");
        }
    }

    #[test]
    fn yield_poll_values() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        let zero = std::time::Duration::ZERO;
        let us = std::time::Duration::from_micros;
        assert_eq!(yield_poll(|_| None).unwrap(), None);
        assert_eq!(yield_poll(env("300")).unwrap(), Some(us(300)));
        // Unset: where the fence poll is on, and only there.
        assert_eq!(yield_poll_or_auto(None, FENCE_SPIN_AUTO), YIELD_POLL_AUTO);
        assert_eq!(yield_poll_or_auto(None, us(1)), YIELD_POLL_AUTO);
        assert_eq!(yield_poll_or_auto(None, zero), zero);
        // Set: as set, fence poll or not.
        assert_eq!(yield_poll_or_auto(Some(zero), FENCE_SPIN_AUTO), zero);
        assert_eq!(yield_poll_or_auto(Some(us(9)), zero), us(9));
        for bad in ["-1", "x", "1000001"] {
            let e = yield_poll(env(bad)).unwrap_err().to_string();
            assert!(e.contains(ENV_YIELD_POLL), "{bad}: {e}");
        }
    }
    use std::collections::HashMap;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("256m"), Some(256 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size(" 8MB "), Some(8 << 20));
        // sysfs cache sizes (`collective::copy` reads the last level's).
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        for bad in ["", "G", "x", "-1", "1.5", "12Q", "99999999999T"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }

    /// An environment of `pairs` alone, for the parsers' `get`.
    pub(crate) fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn job_env_parsing() {
        assert_eq!(job_env(env(&[])).unwrap().npes, 1);
        let j = job_env(env(&[
            (ENV_PE, "2"),
            (ENV_NPES, "3"),
            (ENV_BOOTSTRAP, "@x"),
            (ENV_SECRET, "00ff"),
        ]))
        .unwrap();
        assert_eq!(
            (j.pe, j.npes, j.bootstrap),
            (2, 3, Some(("@x".into(), vec![0, 255])))
        );
        assert!(job_env(env(&[(ENV_PE, "3"), (ENV_NPES, "3")])).is_err());
        assert!(job_env(env(&[(ENV_PE, "0"), (ENV_NPES, "2")])).is_err());
        assert!(job_env(env(&[(ENV_PE, "x"), (ENV_NPES, "2")])).is_err());
        assert!(job_env(env(&[
            (ENV_PE, "0"),
            (ENV_NPES, "2"),
            (ENV_BOOTSTRAP, "@x"),
            (ENV_SECRET, "0g")
        ]))
        .is_err());
    }

    #[test]
    fn heap_size_env() {
        assert_eq!(heap_size(env(&[])).unwrap(), DEFAULT_HEAP_SIZE);
        assert_eq!(heap_size(env(&[(ENV_HEAP_SIZE, "1M")])).unwrap(), 1 << 20);
        assert!(heap_size(env(&[(ENV_HEAP_SIZE, "0")])).is_err());
    }

    #[test]
    fn hex_roundtrip() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(decode_hex(&encode_hex(&b)).unwrap(), b);
    }

    #[test]
    fn transport_values() {
        let one = |v: &'static str| move |k: &str| (k == ENV_TRANSPORT).then(|| v.to_string());
        assert_eq!(transport(|_| None).unwrap(), None);
        assert_eq!(transport(one("")).unwrap(), None);
        assert_eq!(transport(one("auto")).unwrap(), None);
        assert_eq!(transport(one(" staged ")).unwrap(), Some(1));
        assert_eq!(transport(one("staged:3")).unwrap(), Some(3));
        for bad in ["proxy", "staged:0", "staged:", "staged:x", "staged:-2"] {
            match transport(one(bad)) {
                Err(Error::Config { var, value, why }) => {
                    assert_eq!((var, value.as_str()), (ENV_TRANSPORT, bad));
                    assert!(why.contains("auto, staged or staged:K"), "{why}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_pipeline_cache_directory_comes_from_the_environment() {
        use std::path::PathBuf;
        let dir = |pairs: &[(&str, &str)]| pipeline_cache_dir(env(pairs));
        assert_eq!(
            dir(&[(ENV_HOME, "/home/u")]),
            Some(PathBuf::from("/home/u/.cache/vkshmem"))
        );
        assert_eq!(
            dir(&[(ENV_HOME, "/home/u"), (ENV_XDG_CACHE_HOME, "/c")]),
            Some(PathBuf::from("/c/vkshmem"))
        );
        // A relative XDG_CACHE_HOME is ignored (XDG base directory specification).
        assert_eq!(
            dir(&[(ENV_HOME, "/home/u"), (ENV_XDG_CACHE_HOME, "c")]),
            Some(PathBuf::from("/home/u/.cache/vkshmem"))
        );
        assert_eq!(
            dir(&[(ENV_HOME, "/h"), (ENV_PIPELINE_CACHE, "/elsewhere")]),
            Some(PathBuf::from("/elsewhere"))
        );
        // Empty: as if unset.
        assert_eq!(
            dir(&[(ENV_HOME, "/h"), (ENV_PIPELINE_CACHE, "")]),
            Some(PathBuf::from("/h/.cache/vkshmem"))
        );
        for off in ["0", "off", "false", "no"] {
            assert_eq!(dir(&[(ENV_HOME, "/h"), (ENV_PIPELINE_CACHE, off)]), None);
        }
        assert_eq!(dir(&[]), None);
        assert_eq!(dir(&[(ENV_HOME, "relative")]), None);
    }

    #[test]
    fn prebuild_values() {
        let one = |v: &'static str| move |k: &str| (k == ENV_PREBUILD).then(|| v.to_string());
        assert_eq!(prebuild(|_| None), Prebuild::Typical);
        assert_eq!(prebuild(one(" 1 ")), Prebuild::Typical);
        assert_eq!(prebuild(one("")), Prebuild::Typical);
        for off in ["0", "off", "false", "no"] {
            assert_eq!(prebuild(one(off)), Prebuild::Off, "{off}");
        }
        assert_eq!(prebuild(one("all")), Prebuild::All);
        // Unknown: the default (with a warning).
        assert_eq!(prebuild(one("everything")), Prebuild::Typical);
    }

    #[test]
    fn cross_process_waits_values() {
        let one =
            |v: &'static str| move |k: &str| (k == ENV_CROSS_PROCESS_WAITS).then(|| v.to_string());
        assert_eq!(cross_process_waits(|_| None), None);
        assert_eq!(cross_process_waits(one("1")), Some(true));
        assert_eq!(cross_process_waits(one(" 0 ")), Some(false));
        // Anything else is ignored: the driver decides.
        assert_eq!(cross_process_waits(one("yes")), None);
    }

    #[test]
    fn resident_workgroups_and_llvmpipe_threads() {
        let one =
            |k0: &'static str, v: &'static str| move |k: &str| (k == k0).then(|| v.to_string());
        let rw = ENV_RESIDENT_WORKGROUPS;
        assert_eq!(resident_workgroups(|_| None), None);
        assert_eq!(resident_workgroups(one(rw, " 12 ")), Some(12));
        // Not a positive number: ignored (with a warning).
        for bad in ["0", "-3", "many", ""] {
            assert_eq!(resident_workgroups(one(rw, bad)), None, "{bad}");
        }
        let lp = ENV_LP_NUM_THREADS;
        assert_eq!(lp_num_threads(|_| None), None);
        assert_eq!(lp_num_threads(one(lp, "3")), Some(3));
        assert_eq!(lp_num_threads(one(lp, "0")), Some(0));
        assert_eq!(lp_num_threads(one(lp, "x")), None);
    }

    #[test]
    fn sync_values() {
        assert!(!sync_flags(env(&[])).unwrap());
        assert!(!sync_flags(env(&[(ENV_SYNC_ALGO, "counter")])).unwrap());
        assert!(sync_flags(env(&[(ENV_SYNC_ALGO, "flags")])).unwrap());
        let e = sync_flags(env(&[(ENV_SYNC_ALGO, "ring")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(ENV_SYNC_ALGO) && e.contains("counter or flags"),
            "{e}"
        );
        assert_eq!(sync_spin(env(&[])).unwrap(), None);
        assert_eq!(sync_spin(env(&[(ENV_SYNC_SPIN, " 0 ")])).unwrap(), Some(0));
        assert_eq!(
            sync_yields(env(&[(ENV_SYNC_YIELDS, "500")])).unwrap(),
            Some(500)
        );
        for bad in ["-1", "x", "1.5"] {
            let e = sync_yields(env(&[(ENV_SYNC_YIELDS, bad)]))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(ENV_SYNC_YIELDS) && e.contains("not a count"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn node_size_is_checked() {
        assert_eq!(node_size(env(&[])).unwrap(), None);
        assert_eq!(node_size(env(&[(ENV_NODE_SIZE, "4")])).unwrap(), Some(4));
        for bad in ["0", "two"] {
            match node_size(env(&[(ENV_NODE_SIZE, bad)])) {
                Err(Error::Config { var, .. }) => assert_eq!(var, ENV_NODE_SIZE),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn oshcc_runs_cc_unless_told() {
        assert_eq!(oshcc_cc(env(&[])), "cc");
        assert_eq!(oshcc_cc(env(&[(ENV_OSHCC_CC, "clang")])), "clang");
    }

    #[test]
    fn the_environment_reader_reads_declared_variables() {
        // PATH is not a setting; HOME is declared (the pipeline cache's
        // fallback) and set for the test programs.
        assert_eq!(super::env(ENV_HOME), std::env::var(ENV_HOME).ok());
        assert_eq!(is_set(ENV_HOME), std::env::var_os(ENV_HOME).is_some());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not declared")]
    fn an_undeclared_variable_is_not_read() {
        let _ = super::env("PATH");
    }
}
