//! The table of settings: one entry for every environment variable vkshmem
//! reads (or its launcher and tests hand over), with its kind, type, default
//! and meaning. `docs/settings.md` is this table rendered, and the README's
//! environment table lists its user settings; `host/tests/settings_table.rs`
//! checks both.

use super::*;

/// Who sets a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A user's choice: listed in the README.
    User,
    /// The OpenSHMEM specification's variables, read beside ours.
    Spec,
    /// A switch for measuring and tuning on a device: the default is the
    /// measured choice (`benches/RESULTS.md`).
    Tuning,
    /// A hook for the tests: a path a device would not take by itself, or the
    /// test programs' own variables.
    Test,
    /// The launcher's hand-over to each PE: set by `vkshmrun`, not by hand.
    Internal,
    /// Another program's variable that vkshmem reads too.
    External,
}

impl Kind {
    /// Every kind, in the order the listing gives them.
    pub const ALL: [Kind; 6] = [
        Kind::User,
        Kind::Spec,
        Kind::Tuning,
        Kind::Test,
        Kind::Internal,
        Kind::External,
    ];

    /// Its name in one word.
    pub fn name(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Spec => "spec",
            Kind::Tuning => "tuning",
            Kind::Test => "test",
            Kind::Internal => "internal",
            Kind::External => "external",
        }
    }

    /// A heading for its settings.
    pub fn title(self) -> &'static str {
        match self {
            Kind::User => "User settings",
            Kind::Spec => "OpenSHMEM's variables",
            Kind::Tuning => "Tuning",
            Kind::Test => "Test hooks",
            Kind::Internal => "Internal: the launcher's hand-over",
            Kind::External => "Other programs' variables",
        }
    }

    /// Who sets its settings, and why, in a sentence.
    pub fn about(self) -> &'static str {
        match self {
            Kind::User => "What a user sets; the README lists them too.",
            Kind::Spec => {
                "The OpenSHMEM 1.5 specification's variables, read beside the `VKSHMEM_*` \
                 ones (C and Rust programs alike). Where both spellings are set and \
                 disagree, the `VKSHMEM_*` one wins and a warning says so. A switch is on \
                 when set to anything but `0`, `false`, `no` or `off`."
            }
            Kind::Tuning => {
                "Switches for measuring and tuning on a device. Each default is the \
                 measured choice (`benches/RESULTS.md`); set one to compare, or to tune \
                 a device not measured yet."
            }
            Kind::Test => {
                "Paths a device would not take by itself, for the tests, and the test \
                 programs' own variables."
            }
            Kind::Internal => {
                "Set by `vkshmrun` for each PE it starts. Without `VKSHMEM_PE` a program \
                 is a job of one PE, or a rank of an MPI job (cargo feature `mpi`)."
            }
            Kind::External => "Variables of other programs that vkshmem reads too.",
        }
    }
}

/// One environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The variable.
    pub name: &'static str,
    /// Who sets it.
    pub kind: Kind,
    /// The values it takes.
    pub ty: &'static str,
    /// What holds while it is unset.
    pub default: &'static str,
    /// What it does, in one line.
    pub meaning: &'static str,
}

const fn s(
    name: &'static str,
    kind: Kind,
    ty: &'static str,
    default: &'static str,
    meaning: &'static str,
) -> Setting {
    Setting {
        name,
        kind,
        ty,
        default,
        meaning,
    }
}

use Kind::{External, Internal, Spec, Test, Tuning, User};

/// Every variable, once. The parsers of this module read them (through
/// [`env`](super::env) in production).
pub const SETTINGS: &[Setting] = &[
    s(
        ENV_HEAP_SIZE,
        User,
        "bytes, with an optional K/M/G/T suffix (powers of 1024)",
        "`256M`",
        "Size of each PE's symmetric heap.",
    ),
    s(
        ENV_DEVICE,
        User,
        "a device index, or a substring of its name",
        "GPUs round-robin over the PEs, else the CPU device",
        "The Vulkan device each PE opens.",
    ),
    s(
        ENV_WAIT_TIMEOUT,
        User,
        "seconds, fractions allowed (`0`: no limit)",
        "off",
        "How long any wait may take (set-up, syncs, collectives, kernels that wait on peers) before it fails naming the PEs that did not arrive.",
    ),
    s(
        ENV_PIPELINE_CACHE,
        User,
        "a directory, or `0` (also `off`, `false`, `no`) for none",
        "`$XDG_CACHE_HOME/vkshmem`, else `~/.cache/vkshmem`",
        "Where the Vulkan pipeline cache, the prebuild profiles and the compile turns are kept.",
    ),
    s(
        ENV_PREBUILD,
        User,
        "`0`, `1` or `all`",
        "`1`",
        "Host collectives' kernels built in the background after init: none, the program's profile (or a typical set), or every one.",
    ),
    s(
        ENV_CROSS_PROCESS_WAITS,
        User,
        "`0` or `1`",
        "`0` on NVIDIA's proprietary driver, else `1`",
        "Whether device code may wait for PEs of other processes on its device (NVIDIA's driver cannot switch away from such a kernel).",
    ),
    s(
        ENV_NODE_SIZE,
        User,
        "ranks per node, at least 1",
        "the ranks that share memory",
        "Under mpirun (feature `mpi`): consecutive ranks make a node of this many, which tests the paths between nodes on one machine.",
    ),
    s(
        ENV_SHMEM_SYMMETRIC_SIZE,
        Spec,
        "bytes, an integer or a floating-point number, with an optional K/M/G/T suffix (powers of 1024)",
        "unset",
        "Size of each PE's symmetric heap where `VKSHMEM_SYMMETRIC_SIZE` is unset.",
    ),
    s(
        ENV_SHMEM_VERSION,
        Spec,
        "a switch",
        "off",
        "PE 0 prints the library's version (and the OpenSHMEM version it follows) at init, on stdout.",
    ),
    s(
        ENV_SHMEM_INFO,
        Spec,
        "a switch",
        "off",
        "PE 0 prints the version and every user, OpenSHMEM and tuning setting with its value at init, on stdout.",
    ),
    s(
        ENV_SHMEM_DEBUG,
        Spec,
        "a switch",
        "off",
        "Where `RUST_LOG` is unset: vkshmem's debug log on stderr (`tracing` at level debug for vkshmem's crates).",
    ),
    s(
        ENV_FENCE_SPIN,
        Tuning,
        "whole microseconds, 0 to 1000000",
        "`250` on drivers that time-slice processes (NVIDIA's) where the node's PEs each have a core, else `0`",
        "How long a submission's wait polls its fence before it blocks in `vkWaitForFences`.",
    ),
    s(
        ENV_YIELD_POLL,
        Tuning,
        "whole microseconds, 0 to 1000000",
        "`20000` where the fence poll is on, else `0`",
        "How long a wait (on a fence, on the sync plane) keeps polling with `sched_yield` before it blocks.",
    ),
    s(
        ENV_SUBMIT,
        Tuning,
        "`auto`, `each` or `leader`",
        "`auto`: `leader` on drivers that time-slice processes (NVIDIA's), else `each`",
        "Who submits the members' parts of a host collective on a team that shares a device: each member its own, or the first member all in one submission.",
    ),
    s(
        ENV_HOST_STREAM,
        Tuning,
        "`auto`, `on` or `off`",
        "`auto`: `on` where a call's sources and dests take twice the last-level cache",
        "Whether the host's direct path writes dests with streaming stores that bypass the cache.",
    ),
    s(
        ENV_REUSE_RECORDINGS,
        Tuning,
        "`auto`, `on` or `off`",
        "`on`",
        "Whether a submission of dispatches is recorded once and submitted again while later calls' dispatches are the same.",
    ),
    s(
        ENV_COMPLETION,
        Tuning,
        "`fence` or `word`",
        "`fence`",
        "How a PE learns that its submission finished: the fence alone, or also a word in host memory its last command sets.",
    ),
    s(
        ENV_WIDE_WORKGROUP,
        Tuning,
        "`auto`, or a power of two from 1 to 1024",
        "`auto`: 64 on llvmpipe, 256 elsewhere, halved to the device's limit",
        "Invocations per workgroup of the host collectives' wide copies and pushes.",
    ),
    s(
        ENV_WIDE_UNIT,
        Tuning,
        "`auto`, `u32` or `u64`",
        "`auto`: `u64` on llvmpipe (with `shaderInt64`), else `u32`",
        "The element the wide kernels and the device forms' bulk moves load and store: `vec4<u32>` or `vec2<u64>`.",
    ),
    s(
        ENV_HOST_MAPPED_MAX,
        Tuning,
        "bytes, with an optional K/M/G/T suffix (`0`: always a kernel)",
        "every size on CPU devices, `16K` where the heap is host memory, `256` on discrete GPUs",
        "Largest host collective (bytes per member) run on the host through the mapped heaps and the sync plane, with no submission.",
    ),
    s(
        ENV_RESIDENT_WORKGROUPS,
        Tuning,
        "a positive count",
        "llvmpipe's threads (at most 16), a GPU's SMs or CUs, else 1",
        "Workgroups the device runs at once: the most a launch of the multi-workgroup forms may have.",
    ),
    s(
        ENV_SYNC_SPIN,
        Tuning,
        "a count",
        "`200`, or `0` where the node's PEs outnumber the cores",
        "Polls with a spin hint before a wait on the sync plane starts yielding.",
    ),
    s(
        ENV_SYNC_YIELDS,
        Tuning,
        "a count",
        "`200`",
        "`sched_yield` polls before a wait on the sync plane sleeps on its futex.",
    ),
    s(
        ENV_SYNC_ALGO,
        Tuning,
        "`counter` or `flags`",
        "`counter`",
        "The sync plane's barrier: a central counter, or per-member flags that every waiter polls.",
    ),
    s(
        ENV_TRANSPORT,
        Test,
        "`auto`, `staged` or `staged:K`",
        "`auto`: direct on a shared device, staged across devices",
        "How a PE reaches its peers: `staged` takes the cross-device path on one device, `staged:K` groups PEs K at a time as if each group shared a device.",
    ),
    s(
        ENV_TRACE,
        User,
        "a file path",
        "unset",
        "Writes a trace of every PE's calls there (Chrome trace-event JSON for Perfetto or chrome://tracing, a lane per PE); vkshmrun merges the PEs' parts at the end.",
    ),
    s(
        ENV_RECORD,
        Test,
        "`auto`, `on` or `off`",
        "`on`",
        "`off`: no PE keeps its calls in the flight recorder that the launcher's stuck-job report reads (to measure what recording costs).",
    ),
    s(
        ENV_HEAP_MAPPING,
        Test,
        "`auto` or `off`",
        "`auto`",
        "`off`: the host never maps the symmetric heap, so host access takes the paths of a GPU whose memory is not host-visible.",
    ),
    s(
        ENV_TEST_RAW_STRANGER,
        Test,
        "an endpoint and a secret in hex",
        "unset",
        "Turns a bootstrap unit test's child process into a stranger that speaks raw frames to that endpoint.",
    ),
    s(
        "VKSHMEM_TEST_JOB",
        Test,
        "a mark",
        "unset",
        "Set by the integration tests on each mpirun job they start, to find its processes afterwards.",
    ),
    s(
        "VKSHMEM_TEST_TIMES",
        Test,
        "a file",
        "unset",
        "The launcher tests append to this file how long each test held the lock that runs their spinning jobs one at a time.",
    ),
    s(
        "VKSHMEM_BLESS_CORPUS",
        Test,
        "`1`",
        "unset",
        "`host/tests/wire_props.rs` rewrites the fuzz corpus's seeds instead of checking them.",
    ),
    s(
        ENV_PE,
        Internal,
        "a PE number",
        "unset: a job of one PE",
        "This PE's number in the world team, set by `vkshmrun`.",
    ),
    s(
        ENV_NPES,
        Internal,
        "a count",
        "needed with `VKSHMEM_PE`",
        "The number of PEs in the job, set by `vkshmrun`.",
    ),
    s(
        ENV_BOOTSTRAP,
        Internal,
        "an abstract Unix socket name",
        "needed for several PEs",
        "The job's bootstrap endpoint, set by `vkshmrun`.",
    ),
    s(
        ENV_SECRET,
        Internal,
        "hex",
        "needed for several PEs",
        "The job's secret, which admits a PE at the endpoint, set by `vkshmrun`.",
    ),
    s(
        ENV_RUST_LOG,
        External,
        "a `tracing` filter, such as `info`",
        "unset: no log",
        "vkshmem's log on stderr: which device each PE took and why, the heap's set-up, the transport to each peer.",
    ),
    s(
        ENV_LP_NUM_THREADS,
        External,
        "a count",
        "Mesa's: the CPUs, at most 16",
        "Mesa's llvmpipe threads: llvmpipe's resident workgroups.",
    ),
    s(
        ENV_XDG_CACHE_HOME,
        External,
        "an absolute path",
        "unset",
        "The pipeline cache directory's parent where `VKSHMEM_PIPELINE_CACHE` is unset.",
    ),
    s(
        ENV_HOME,
        External,
        "an absolute path",
        "unset",
        "Its `.cache` holds the pipeline cache directory where neither `VKSHMEM_PIPELINE_CACHE` nor `XDG_CACHE_HOME` is set.",
    ),
    s(
        ENV_OSHCC_CC,
        External,
        "a C compiler",
        "`cc`",
        "The compiler `oshcc` runs.",
    ),
];

/// The entry of `name`, if it is declared.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// Whether the library may read `name`: a declared setting, or another
/// launcher's rank count ([`FOREIGN_LAUNCHERS`]).
pub fn declared(name: &str) -> bool {
    setting(name).is_some() || FOREIGN_LAUNCHERS.iter().any(|(v, _)| *v == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variable_is_declared_once_with_every_field() {
        let mut names = std::collections::HashSet::new();
        for s in SETTINGS {
            assert!(names.insert(s.name), "{} is declared twice", s.name);
            for (field, text) in [
                ("type", s.ty),
                ("default", s.default),
                ("meaning", s.meaning),
            ] {
                assert!(!text.trim().is_empty(), "{}: no {field}", s.name);
                // One line of a markdown table.
                assert!(
                    !text.contains('|') && !text.contains('\n'),
                    "{}: its {field} breaks a table row",
                    s.name
                );
            }
            let ours = s.name.starts_with("VKSHMEM_");
            assert_eq!(
                ours,
                !matches!(s.kind, Kind::External | Kind::Spec),
                "{}",
                s.name
            );
            if s.kind == Kind::Spec {
                assert!(s.name.starts_with("SHMEM_"), "{}", s.name);
            }
        }
        for (var, _) in FOREIGN_LAUNCHERS {
            assert!(setting(var).is_none() && declared(var), "{var}");
        }
        assert!(!declared("PATH"));
    }

    #[test]
    fn the_listed_defaults_are_the_parsers_defaults() {
        let unset = |_: &str| None;
        let default = |name| setting(name).unwrap().default.trim_matches('`');
        assert_eq!(parse_size(default(ENV_HEAP_SIZE)), Some(DEFAULT_HEAP_SIZE));
        assert_eq!(heap_size(unset).unwrap(), DEFAULT_HEAP_SIZE);
        assert_eq!(default(ENV_PREBUILD), "1");
        assert_eq!(prebuild(unset), Prebuild::Typical);
        assert_eq!(default(ENV_REUSE_RECORDINGS), "on");
        assert!(reuse_recordings(unset).unwrap());
        assert_eq!(default(ENV_COMPLETION), "fence");
        assert!(!completion_words(unset).unwrap());
        assert_eq!(default(ENV_HEAP_MAPPING), "auto");
        assert!(heap_mapping(unset).unwrap());
        assert_eq!(default(ENV_SYNC_ALGO), "counter");
        assert!(!sync_flags(unset).unwrap());
        assert_eq!(wait_timeout(unset).unwrap(), None);
        assert!(setting(ENV_FENCE_SPIN)
            .unwrap()
            .default
            .starts_with(&format!("`{}`", FENCE_SPIN_AUTO.as_micros())));
        assert!(setting(ENV_YIELD_POLL)
            .unwrap()
            .default
            .starts_with(&format!("`{}`", YIELD_POLL_AUTO.as_micros())));
        assert_eq!(default(ENV_OSHCC_CC), "cc");
        assert_eq!(oshcc_cc(unset), "cc");
    }
}
