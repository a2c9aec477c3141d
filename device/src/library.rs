//! Generates the WGSL device library for one PE of one job.
//!
//! The library is two parts: a generated part (this module: the job's constants,
//! the heap bindings, the accessors that pick a peer's binding, and the typed
//! `shmem_<TYPE>_*` functions, all instantiated from the tables below) and a fixed
//! part (`shaders/vkshmem.wgsl`: waits, team sync, barriers).
//!
//! # How device code reaches the heaps
//!
//! One storage-buffer binding per (PE reached directly, chunk) in descriptor set
//! 0: PE `p`'s heap is cut into chunks of at most `maxStorageBufferRange` bytes
//! (lavapipe: 128 MiB); bindings are numbered from 0 in (slot, chunk) order,
//! where PE `p`'s slot is `(p - my_pe) mod k` (this PE's heap is slot 0; `k`
//! is the job's PEs, or the node's where this PE reaches exactly its node's
//! aligned block of PEs, `LibraryConfig::slot_span`),
//! and each accessor `switch`es on `vks_slot(pe)`, then on the chunk of
//! the address (so `VKS_SELF`, slot 0, folds to its own chunks). Every binding is declared twice, as
//! `array<atomic<u32>>` (`vks_a_S_C`) and `array<u32>` (`vks_w_S_C`); WGSL (naga)
//! refuses two variables on one binding, so the plain view is declared at binding
//! `PLAIN_VIEW_OFFSET + b` and the SPIR-V pass moves it onto `b` (Vulkan allows
//! aliased variables on one binding when both match the descriptor type). A
//! kernel that uses 64-bit atomics (on a device with
//! `shaderBufferInt64Atomics`) gets a third view, `array<atomic<u64>>`
//! (`vks_q_S_C`, declared at `QUAD_VIEW_OFFSET + b`), indexed by word address
//! / 2: 64-bit atomics need 8-byte alignment, so their word address is even.
//!
//! A binding array indexed by PE would be shorter, but Mesa 22.3 (lavapipe) has no
//! non-uniform indexing of buffer arrays and our collectives index by a PE that
//! differs between invocations; a `switch` over separate bindings is valid
//! everywhere, and the driver folds it when the PE is uniform.

use std::fmt::Write as _;

use crate::layout;

/// The fixed part of the library.
pub const FIXED_SOURCE: &str = include_str!("../../shaders/vkshmem.wgsl");

/// The plain (non-atomic) view of binding `b` is declared at this plus `b`.
pub const PLAIN_VIEW_OFFSET: u32 = 1000;

/// The 64-bit atomic view of binding `b` is declared at this plus `b` (moved
/// onto `b` by the SPIR-V pass, like the plain view).
pub const QUAD_VIEW_OFFSET: u32 = 2000;

/// The vec4 view of binding `b` (`array<vec4<u32>>`, or `array<vec2<u64>>`
/// where [`LibraryConfig::vec4_u64`]: the work_group forms' bulk copies, see
/// `vec4_copy`) is declared at this plus `b` (moved onto `b` by the SPIR-V
/// pass, like the plain view).
pub const VEC4_VIEW_OFFSET: u32 = 3000;

/// Invocations of a SIMD row on llvmpipe (8 of 32 bits on 256-bit vectors),
/// which runs a workgroup's rows one after another: the device forms' vec4
/// loops (`vec4_pieces`), the host wide kernels and the bench roofline's
/// share copy give each row one contiguous share, its lanes interleaved.
pub const ROW_LANES: u32 = 8;

/// Descriptor set of the library's bindings.
pub const LIBRARY_SET: u32 = 0;

/// The element type of the vec4 view under `cfg` ([`LibraryConfig::vec4_u64`]).
pub fn vec4_unit(cfg: &LibraryConfig) -> &'static str {
    if cfg.vec4_u64 && cfg.int64 {
        "vec2<u64>"
    } else {
        "vec4<u32>"
    }
}

/// Descriptor set of a user kernel's own buffers.
pub const USER_SET: u32 = 1;

/// What the generated library depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LibraryConfig {
    /// This PE's number.
    pub my_pe: u32,
    /// Number of PEs.
    pub n_pes: u32,
    /// Size of every PE's heap in bytes.
    pub heap_bytes: u64,
    /// The device's `maxStorageBufferRange`.
    pub max_binding_bytes: u64,
    /// The device has `shaderInt64` (64-bit integer functions are generated).
    pub int64: bool,
    /// The device has `shaderFloat64` (double functions are generated; needs int64).
    pub float64: bool,
    /// The device has `shaderBufferInt64Atomics` (and `shaderInt64`): the
    /// 64-bit atomics (`shmem_long_atomic_*` and the other 8-byte AMO types)
    /// are generated, on a third view of every heap binding
    /// (`array<atomic<u64>>`, see [`QUAD_VIEW_OFFSET`]).
    pub int64_atomics: bool,
    /// Fences may run in code that only some invocations of a workgroup execute.
    /// False on Mesa's llvmpipe (lavapipe), which turns every memory barrier into a
    /// workgroup control barrier (a coroutine switch), so a fence in one invocation
    /// desynchronises the workgroup and ends it early (seen on Mesa 22.3). There,
    /// fences in per-thread code are left out; llvmpipe runs on the host CPU, whose
    /// coherent memory and in-order atomics give the ordering (the litmus example
    /// checks it), and the work_group forms still fence in uniform code.
    pub divergent_fences: bool,
    /// The driver caps loop iterations: Mesa's llvmpipe (lavapipe) lets an
    /// invocation run at most 65535 loop iterations in all, then every loop exits
    /// as if its condition were false. With the cap, a wait polls
    /// [`CAPPED_POLLS_PER_ITERATION`] times per iteration so that it can last long
    /// enough, and every entry point ends with a check that raises
    /// `ERR_LOOPS_CUT` when the cap was reached (the user's loops may then have
    /// been cut too). Without it, a wait polls once per iteration, which keeps the
    /// wake-up latency at one load.
    pub loop_cap: bool,
    /// Mesa's llvmpipe: the invocations of one SIMD row, which it runs in
    /// lockstep on one thread (its subgroup size, 8 with AVX2); 0 elsewhere.
    /// A kernel whose workgroup is one row (`x <= row_lanes`, `y = z = 1`)
    /// is linked without its control and memory barriers (the SPIR-V pass,
    /// see `pass::run`): llvmpipe compiles a kernel with any barrier into
    /// coroutines, in which a copy loop runs at about half the speed
    /// (benches/RESULTS.md, "One-row workgroups on llvmpipe"), and one row
    /// needs none (its lanes execute each instruction together, in program
    /// order; the ordering across workgroups and PEs is the host CPU's, as for
    /// the per-thread code without fences,
    /// [`LibraryConfig::divergent_fences`]). The vec4 loops of such a kernel
    /// move [`UNROLL`] vec4s per iteration where loops are capped (the link
    /// generates its library so; for kernels of several rows it passes 0 here).
    pub row_lanes: u32,
    /// The PEs whose heaps this PE's device reaches directly (the library
    /// binds those only); device code that touches another PE's heap raises
    /// `ERR_UNREACHABLE`, unless [`LibraryConfig::proxy`].
    pub direct: PeSet,
    /// Device code reaches the PEs outside `direct` through this PE's proxy
    /// thread (the ring in the control region, see `layout::ProxyEntry`): word
    /// loads, stores and atomics, bulk copies, and reductions.
    pub proxy: bool,
    /// The vec4 view of every heap binding ([`VEC4_VIEW_OFFSET`]) is
    /// `array<vec2<u64>>` instead of `array<vec4<u32>>` (needs `int64`): the
    /// same 16-byte elements, which llvmpipe moves faster (the host sets it
    /// where its wide kernels move `vec2<u64>`, `VKSHMEM_WIDE_UNIT`: by
    /// default on llvmpipe, where the device forms then run faster;
    /// benches/RESULTS.md, "Wide unit on llvmpipe"). The device forms'
    /// reductions unpack them into words (`vks_unpack4`) or combine 64-bit
    /// lanes.
    pub vec4_u64: bool,
}

/// A set of PEs (numbers below [`PeSet::CAPACITY`]), small enough to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeSet {
    bits: [u64; 16],
}

impl PeSet {
    /// The largest PE count a set describes.
    pub const CAPACITY: u32 = 1024;

    /// PEs `0..n` (PEs at or past [`PeSet::CAPACITY`] are left out).
    pub fn all(n: u32) -> PeSet {
        PeSet::from_pes(0..n)
    }

    /// The PEs of `pes`.
    pub fn from_pes(pes: impl IntoIterator<Item = u32>) -> PeSet {
        let mut bits = [0u64; 16];
        for p in pes.into_iter().filter(|&p| p < Self::CAPACITY) {
            bits[p as usize / 64] |= 1 << (p % 64);
        }
        PeSet { bits }
    }

    /// Whether `pe` is in the set.
    pub fn contains(&self, pe: u32) -> bool {
        pe < Self::CAPACITY && self.bits[pe as usize / 64] & (1 << (pe % 64)) != 0
    }
}

/// Polls per wait iteration where the driver caps loops, each followed by
/// [`CAPPED_DELAY_STEPS`] dependent square roots (see `capped_polls`): an
/// iteration takes about 2 us on llvmpipe, so one invocation may wait about
/// 130 ms of CPU time in all per dispatch before the cap, and longer once the
/// host's wait throttle naps it. That covers a barrier among more PEs than
/// cores (benches/RESULTS.md, "Capped waits and compile"). Polls are the costly
/// part to compile (llvmpipe expands each atomic per SIMD lane), square roots
/// are cheap.
pub const CAPPED_POLLS_PER_ITERATION: u32 = 4;
/// Square roots after each capped poll (see `capped_polls`): about 0.5 us.
pub const CAPPED_DELAY_STEPS: u32 = 160;

impl LibraryConfig {
    /// Whether a workgroup of `size` invocations is one SIMD row of
    /// [`LibraryConfig::row_lanes`] ([`is_one_row`]).
    pub fn is_one_row(&self, size: [u32; 3]) -> bool {
        is_one_row(self.row_lanes, size)
    }

    /// Whether this PE reaches every PE of the job directly (alike on every
    /// PE: direct reach is symmetric).
    pub fn reaches_all(&self) -> bool {
        (0..self.n_pes).all(|p| self.direct.contains(p))
    }

    /// Polls per wait-loop iteration (see [`LibraryConfig::loop_cap`]).
    pub fn polls_per_iteration(&self) -> u32 {
        if self.loop_cap {
            CAPPED_POLLS_PER_ITERATION
        } else {
            1
        }
    }
}

/// One library binding: a window of one PE's heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapBinding {
    /// Binding number in [`LIBRARY_SET`].
    pub binding: u32,
    /// Whose heap.
    pub pe: u32,
    /// Its place in this PE's view, `(pe - my_pe) mod k` over the PEs the
    /// slots count over ([`LibraryConfig::slot_span`]: the job, or this PE's
    /// node where it reaches exactly its node's block of PEs; 0: this PE's
    /// own heap): the number in the binding's names in the generated code,
    /// which therefore reads alike on every PE of a job, or of every node of
    /// one size (one compile per machine).
    pub slot: u32,
    /// Byte offset of the window in the heap.
    pub offset: u64,
    /// Byte length of the window.
    pub bytes: u64,
}

impl LibraryConfig {
    /// Bytes per chunk: the whole heap when it fits one binding, else the largest
    /// power of two a binding can cover.
    pub fn chunk_bytes(&self) -> u64 {
        if self.heap_bytes <= self.max_binding_bytes {
            self.heap_bytes
        } else {
            1u64 << (63 - self.max_binding_bytes.leading_zeros())
        }
    }

    /// Chunks per PE heap.
    pub fn chunks(&self) -> u32 {
        self.heap_bytes.div_ceil(self.chunk_bytes().max(1)) as u32
    }

    /// log2 of the words per chunk (meaningful when there are several chunks).
    pub fn chunk_word_shift(&self) -> u32 {
        self.chunk_bytes().trailing_zeros() - 2
    }

    /// Words of the heap device code can address (capped at `u32::MAX`).
    pub fn heap_words(&self) -> u32 {
        (self.heap_bytes / 4).min(u32::MAX as u64) as u32
    }

    /// The PEs this PE's slots count over ([`HeapBinding::slot`]): where the
    /// PEs it reaches directly are a block `[me - me % k, me - me % k + k)`
    /// of the job (its node, on a node of `k` PEs), `k`; else every PE of
    /// the job (`n_pes`). Both read the same from every PE of such a block,
    /// and `vks_slot` computes the block's first PE from `vks_my_pe()`, so
    /// PEs on equal nodes share one library text (one compile per machine,
    /// where counting over the job gave each PE of a node its own).
    pub fn slot_span(&self) -> u32 {
        self.slot_block().1
    }

    /// The first PE and the number of the PEs the slots count over
    /// ([`LibraryConfig::slot_span`]): `(0, n_pes)` over the job.
    fn slot_block(&self) -> (u32, u32) {
        let n = self.n_pes.max(1);
        let k = (0..n).filter(|&p| self.direct.contains(p)).count() as u32;
        if k > 0 && k < n {
            let first = self.my_pe - self.my_pe % k;
            if first + k <= n && (first..first + k).all(|p| self.direct.contains(p)) {
                return (first, k);
            }
        }
        (0, n)
    }

    /// PE `pe`'s place in this PE's view (see [`HeapBinding::slot`]), or
    /// `n_pes` for a PE outside the span its slots count over
    /// ([`LibraryConfig::slot_span`]): the same as `vks_slot` in device code.
    pub fn slot_of(&self, pe: u32) -> u32 {
        let (first, k) = self.slot_block();
        let (r, m) = (pe.wrapping_sub(first), self.my_pe - first);
        if r >= k {
            self.n_pes
        } else {
            (r + k - m) % k
        }
    }

    /// The library's bindings, in binding order: every chunk of every PE this
    /// PE reaches directly, numbered from 0, in slot order (this PE's own
    /// heap first, then the next PEs of its slot span, wrapping), so that PEs
    /// whose direct sets look alike from where each stands share one library
    /// source.
    pub fn bindings(&self) -> Vec<HeapBinding> {
        let (cb, chunks) = (self.chunk_bytes(), self.chunks());
        let mut v = Vec::new();
        debug_assert!(
            self.direct.contains(self.my_pe),
            "a PE always reaches its own heap (slot 0 holds vks_my_pe's word)"
        );
        let (first, k) = self.slot_block();
        for slot in 0..k {
            let pe = first + (self.my_pe - first + slot) % k;
            if !self.direct.contains(pe) {
                continue;
            }
            for c in 0..chunks {
                let offset = c as u64 * cb;
                v.push(HeapBinding {
                    binding: v.len() as u32,
                    pe,
                    slot,
                    offset,
                    bytes: cb.min(self.heap_bytes - offset),
                });
            }
        }
        v
    }
}

/// The element types of the typed API: (TYPENAME, WGSL type, words, needs).
#[derive(Clone, Copy)]
struct Ty {
    name: &'static str,
    wgsl: &'static str,
    /// 1 or 2 words.
    words: u32,
    /// Integer type with atomics (32-bit only).
    atomic: bool,
    signed: bool,
    needs_int64: bool,
    needs_float64: bool,
}

const TYPES: &[Ty] = &[
    Ty {
        name: "int32",
        wgsl: "i32",
        words: 1,
        atomic: true,
        signed: true,
        needs_int64: false,
        needs_float64: false,
    },
    Ty {
        name: "uint32",
        wgsl: "u32",
        words: 1,
        atomic: true,
        signed: false,
        needs_int64: false,
        needs_float64: false,
    },
    Ty {
        name: "float",
        wgsl: "f32",
        words: 1,
        atomic: false,
        signed: false,
        needs_int64: false,
        needs_float64: false,
    },
    Ty {
        name: "int64",
        wgsl: "i64",
        words: 2,
        atomic: false,
        signed: true,
        needs_int64: true,
        needs_float64: false,
    },
    Ty {
        name: "uint64",
        wgsl: "u64",
        words: 2,
        atomic: false,
        signed: false,
        needs_int64: true,
        needs_float64: false,
    },
    Ty {
        name: "double",
        wgsl: "f64",
        words: 2,
        atomic: false,
        signed: false,
        needs_int64: true,
        needs_float64: true,
    },
];

/// The accessors instantiated per (PE, chunk): (name, view, extra params, return
/// type, body with `{v}` for the element, the same through the proxy for a PE
/// outside `direct`).
/// (name, view, extra params, return type, body, proxied body).
type Accessor = (
    &'static str,
    char,
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static str,
);

const ACCESSORS: &[Accessor] = &[
    (
        "vks_plain_load",
        'w',
        "",
        Some("u32"),
        "return {v};",
        "return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u);",
    ),
    (
        "vks_plain_store",
        'w',
        ", x: u32",
        None,
        "{v} = x;",
        "vks_px_post(VKS_PX_STORE, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_relaxed_load",
        'a',
        "",
        Some("u32"),
        "return atomicLoad(&{v});",
        "return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u);",
    ),
    (
        "vks_relaxed_store",
        'a',
        ", x: u32",
        None,
        "atomicStore(&{v}, x);",
        "vks_px_post(VKS_PX_STORE, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_acquire_load",
        'a',
        "",
        Some("u32"),
        "return atomicLoad(&{v});",
        "return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u);",
    ),
    (
        "vks_fetch_add",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicAdd(&{v}, x);",
        "return vks_px_call(VKS_PX_ADD, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_fetch_and",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicAnd(&{v}, x);",
        "return vks_px_call(VKS_PX_AND, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_fetch_or",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicOr(&{v}, x);",
        "return vks_px_call(VKS_PX_OR, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_fetch_xor",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicXor(&{v}, x);",
        "return vks_px_call(VKS_PX_XOR, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_swap",
        'a',
        ", x: u32",
        Some("u32"),
        "return atomicExchange(&{v}, x);",
        "return vks_px_call(VKS_PX_SWAP, pe, a, 0u, 0u, x, 0u);",
    ),
    (
        "vks_compare_swap",
        'a',
        ", c: u32, x: u32",
        Some("u32"),
        "return atomicCompareExchangeWeak(&{v}, c, x).old_value;",
        "return vks_px_call(VKS_PX_CAS, pe, a, 0u, 0u, x, c);",
    ),
];

/// The 64-bit atomics (view `q`, word addresses that must be even), only
/// with [`LibraryConfig::int64_atomics`]. Through the proxy they are one
/// request with `bytes` = 8 (see `layout::ProxyEntry`). A 64-bit store is an
/// exchange there, so that it is ordered like the other atomics.
const ACCESSORS_64: &[Accessor] = &[
    (
        "vks_load64",
        'q',
        "",
        Some("u64"),
        "return atomicLoad(&{v});",
        "return vks_px_call64(VKS_PX_LOAD, pe, a, 0lu, 0lu);",
    ),
    (
        "vks_store64",
        'q',
        ", x: u64",
        None,
        "atomicStore(&{v}, x);",
        "vks_px_call64(VKS_PX_SWAP, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_add64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicAdd(&{v}, x);",
        "return vks_px_call64(VKS_PX_ADD, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_and64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicAnd(&{v}, x);",
        "return vks_px_call64(VKS_PX_AND, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_or64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicOr(&{v}, x);",
        "return vks_px_call64(VKS_PX_OR, pe, a, x, 0lu);",
    ),
    (
        "vks_fetch_xor64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicXor(&{v}, x);",
        "return vks_px_call64(VKS_PX_XOR, pe, a, x, 0lu);",
    ),
    (
        "vks_swap64",
        'q',
        ", x: u64",
        Some("u64"),
        "return atomicExchange(&{v}, x);",
        "return vks_px_call64(VKS_PX_SWAP, pe, a, x, 0lu);",
    ),
    (
        "vks_compare_swap64",
        'q',
        ", c: u64, x: u64",
        Some("u64"),
        "return atomicCompareExchangeWeak(&{v}, c, x).old_value;",
        "return vks_px_call64(VKS_PX_CAS, pe, a, x, c);",
    ),
];

/// The whole device library (generated part, then the fixed part) for `cfg`, with
/// every typed collective.
pub fn library_source(cfg: &LibraryConfig) -> String {
    library_source_for(cfg, None)
}

/// The device library for a kernel whose source is `uses`: the typed device
/// collectives it does not mention are left out (`None`: all of them).
pub fn library_source_for(cfg: &LibraryConfig, uses: Option<&str>) -> String {
    let mut s = String::new();
    s.push_str("\n// ======== vkshmem device library (generated) ========\n");
    // This PE's number is read from its control region, not compiled in: the
    // library (names by slot, see HeapBinding::slot) is then the same text on
    // every PE of a job whose direct sets look alike, and the driver compiles
    // each kernel once per job (`vkshmem_host::vk::compile_turn`).
    s.push_str(MY_PE_SOURCE);
    // Slots over the job: the text every single-node job has always had
    // (so their kernels stay in the drivers' caches); over the node, the
    // node's first PE from this PE's number.
    let span = cfg.slot_span();
    if span == cfg.n_pes {
        s.push_str(SLOT_OVER_JOB);
    } else {
        let _ = writeln!(s, "const VKS_SLOT_SPAN: u32 = {span}u;");
        s.push_str(SLOT_OVER_NODE);
    }
    let _ = writeln!(s, "const VKS_N_PES: u32 = {}u;", cfg.n_pes);
    let _ = writeln!(s, "const VKS_HEAP_WORDS: u32 = {}u;", cfg.heap_words());
    let _ = writeln!(
        s,
        "const VKS_PX_RING: u32 = {}u;",
        layout::proxy_ring_word(cfg.n_pes)
    );
    let _ = writeln!(s, "const VKS_LL: u32 = {}u;", layout::ll_word(cfg.n_pes));
    let _ = writeln!(
        s,
        "const VKS_BATCH: u32 = {}u;",
        layout::batch_word(cfg.n_pes)
    );
    s.push_str(&layout::wgsl());
    // The 64-bit atomic view only where a kernel uses it: its type needs
    // the device feature, and every view is one more variable to compile.
    let quad = cfg.int64_atomics && uses.map_or(true, crate::amo::uses_64bit_atomics);
    let vec4 = uses_vec4(uses);
    bindings(&mut s, cfg, quad, vec4);
    raise(&mut s, cfg);
    wait_announce(&mut s, cfg);
    poll_many(&mut s, cfg);
    if cfg.loop_cap {
        s.push_str(LOOP_CHECK);
    }
    if cfg.divergent_fences {
        s.push_str("fn vks_fence_any() { vks_fence_acq_rel(); }\n");
    } else {
        s.push_str("// llvmpipe: no fences in divergent code (see LibraryConfig::divergent_fences).\nfn vks_fence_any() {}\n");
    }
    for acc in ACCESSORS {
        accessor(&mut s, cfg, acc, true);
        // `vks_d_*`: the same without the proxy path, for code that checks
        // vks_is_direct first (the collectives' data movement): a proxied
        // path inlined at every call site makes kernels slow to compile.
        accessor(&mut s, cfg, acc, false);
    }
    if quad {
        for acc in ACCESSORS_64 {
            accessor(&mut s, cfg, acc, true);
        }
    }
    own_volatile_load(&mut s, cfg);
    vec4_copy(&mut s, cfg, vec4);
    vec4_push_all(&mut s, cfg, vec4);
    is_direct(&mut s, cfg);
    crate::proxy::ring_api(&mut s, cfg);
    for ty in TYPES {
        if (ty.needs_int64 && !cfg.int64) || (ty.needs_float64 && !cfg.float64) {
            continue;
        }
        typed(&mut s, ty);
    }
    s.push_str(&crate::amo::device_amo(quad, uses));
    s.push_str("\n// ======== vkshmem device library (fixed) ========\n");
    s.push_str(FIXED_SOURCE);
    s.push_str(&crate::collectives::library_part(cfg, uses));
    s.push_str(&crate::collectives::device_api(cfg, uses));
    s.push_str(&crate::rma::device_rma(uses));
    s
}

/// `vks_my_pe()` (this PE's number, from its control header), `VKS_SELF`
/// (what the library passes as the PE of an access to this PE's own heap: a
/// constant, so that the compiler folds that access's switch over the slots
/// to slot 0, as it did when this PE's number was compiled in),
/// `vks_user_pe(pe)` (a PE argument of the public API: VKS_SELF from a user
/// is a bad PE, raised with its own value, and handed on as another bad one),
/// `vks_pe_number(pe)` (the PE a library argument names) and `vks_slot(pe)`
/// (PE `pe`'s place in this PE's view, `VKS_N_PES` for a PE outside the
/// slot span, `LibraryConfig::slot_of`).
const MY_PE_SOURCE: &str = "fn vks_my_pe() -> u32 { return vks_w_0_0[VKS_CTRL_MY_PE]; }
const VKS_SELF: u32 = 0xffffffffu;
fn vks_pe_number(pe: u32) -> u32 { return select(pe, vks_my_pe(), pe == VKS_SELF); }
fn vks_user_pe(pe: u32) -> u32 {
    if pe == VKS_SELF { vks_raise(VKS_ERR_BAD_PE, pe, 0u); return VKS_SELF - 1u; }
    return pe;
}
";

/// `vks_slot(pe)` where the slots count over the job ([`LibraryConfig::slot_span`]
/// is `n_pes`).
const SLOT_OVER_JOB: &str = "fn vks_slot(pe: u32) -> u32 {
    let me = vks_my_pe();
    let s = select(select(pe + VKS_N_PES - me, pe - me, pe >= me), VKS_N_PES, pe >= VKS_N_PES);
    return select(s, 0u, pe == VKS_SELF);
}
";

/// `vks_slot(pe)` where the slots count over this PE's node, the aligned
/// block of `VKS_SLOT_SPAN` PEs around it.
const SLOT_OVER_NODE: &str = "fn vks_slot(pe: u32) -> u32 {
    let me = vks_my_pe();
    let m = me % VKS_SLOT_SPAN;
    let r = pe - (me - m);
    let s = select(select(r + VKS_SLOT_SPAN - m, r - m, r >= m), VKS_N_PES, r >= VKS_SLOT_SPAN);
    return select(s, 0u, pe == VKS_SELF);
}
";

/// Whether a kernel whose source is `uses` (`None`: any kernel) gets the vec4
/// view and the vec4 bulk moves: where it calls a work_group(s) form (every
/// view is one more variable to compile, and the bulk loops are many), or any
/// form of broadcast, fcollect or collect (`shmem_broadcastmem`,
/// `shmem_int_fcollect`, ...): their device forms push where every kernel of
/// the job that calls them can (`vks_push_fits`), and one PE may call the
/// per-thread form where another calls a work_group form, so whether a
/// kernel has the view must not depend on the form. (The host's generic
/// kernels name `vks_broadcast_move(`, not these, and pull.)
pub(crate) fn uses_vec4(uses: Option<&str>) -> bool {
    uses.map_or(true, |u| {
        [
            "_work_group",
            "broadcast(",
            "broadcastmem",
            "collect(",
            "collectmem",
        ]
        .iter()
        .any(|k| u.contains(k))
    })
}

fn bindings(s: &mut String, cfg: &LibraryConfig, quad: bool, vec4: bool) {
    let unit = vec4_unit(cfg);
    if vec4 && cfg.vec4_u64 && cfg.int64 {
        s.push_str(
            "fn vks_unpack4(v: vec2<u64>) -> vec4<u32> {
    return vec4<u32>(u32(v.x), u32(v.x >> 32u), u32(v.y), u32(v.y >> 32u));
}
fn vks_pack2(v: vec4<u32>) -> vec2<u64> {
    return vec2<u64>(u64(v.x) | (u64(v.y) << 32u), u64(v.z) | (u64(v.w) << 32u));
}
",
        );
    }
    for b in cfg.bindings() {
        let c = b.offset / cfg.chunk_bytes();
        if vec4 {
            let _ = writeln!(
                s,
                "@group({LIBRARY_SET}) @binding({}) @coherent var<storage, read_write> vks_v_{}_{c}: array<{unit}>;",
                VEC4_VIEW_OFFSET + b.binding,
                b.slot
            );
        }
        if quad {
            let _ = writeln!(
                s,
                "@group({LIBRARY_SET}) @binding({}) @coherent var<storage, read_write> vks_q_{}_{c}: array<atomic<u64>>;",
                QUAD_VIEW_OFFSET + b.binding,
                b.slot
            );
        }
        let _ = writeln!(
            s,
            "@group({LIBRARY_SET}) @binding({}) @coherent var<storage, read_write> vks_a_{}_{c}: array<atomic<u32>>;",
            b.binding, b.slot
        );
        let _ = writeln!(
            s,
            "@group({LIBRARY_SET}) @binding({}) @coherent var<storage, read_write> vks_w_{}_{c}: array<u32>;",
            PLAIN_VIEW_OFFSET + b.binding,
            b.slot
        );
    }
}

/// Called by the SPIR-V pass before every return of the entry point where the
/// driver caps loops: a loop of two iterations that the compiler cannot count
/// (the control region's n_pes word is VKS_N_PES) runs only one once the cap has
/// been reached, and then ERR_LOOPS_CUT is raised. The SPIR-V pass leaves naga's
/// loop bound in this loop (see device/src/pass.rs).
///
/// Nothing in WGSL calls it, so an entry point of the library's own,
/// `vks_keep_alive`, does: it keeps the check (and what it uses) through the
/// linker's removal of unreachable code, and the linker drops that entry point
/// afterwards.
const LOOP_CHECK: &str = "@compute @workgroup_size(1)
fn vks_keep_alive() { vks_loop_check(); }
fn vks_loop_check() {
    let two = 2u + vks_volatile_load_own(VKS_CTRL_N_PES) - VKS_N_PES;
    var i = 0u;
    loop {
        i += 1u;
        if i >= two { break; }
    }
    if i < 2u { vks_raise(VKS_ERR_LOOPS_CUT, vks_my_pe(), 0u); }
    vks_flush_errors();
}
";

/// `vks_poll_many`: [`LibraryConfig::polls_per_iteration`] tests of a wait
/// condition in straight-line, branch-free code (no nested ifs: llvmpipe
/// miscompiles nesting deeper than 80), so that a wait spends few loop iterations
/// where the driver caps them.
///
/// Where the driver caps loops, each poll is an atomic add of 0 to the word
/// (`vks_poll_own`), and the polls are spaced by chains of square roots
/// ([`capped_polls`]), so the budget of 65535 iterations spans about 130 ms
/// of CPU time: plain loads leave a fast CPU through the budget in a few
/// milliseconds, which cuts staged waits short, and many atomic polls per
/// iteration make large kernels slow to compile (benches/RESULTS.md, "Capped
/// waits and compile").
fn poll_many(s: &mut String, cfg: &LibraryConfig) {
    let me = 0;
    let poll = if cfg.loop_cap {
        own_word_fn(s, cfg, "vks_poll_own", |w| {
            format!("atomicAdd(&vks_a_{me}_{w}, 0u)")
        });
        "vks_poll_own"
    } else {
        "vks_volatile_load_own"
    };
    // One bare poll: a wait's first test, which costs every invocation that
    // passes the wait, waiting or not (llvmpipe runs a workgroup's code once per
    // SIMD row of 8 invocations, masked rows included, so a padded
    // vks_poll_many there would cost every row its whole set of polls).
    let _ = writeln!(
        s,
        "fn vks_poll_once(addr: u32, c: VksCond) -> bool {{ return vks_cond_bit(c, {poll}(addr)) != 0u; }}"
    );
    s.push_str("fn vks_poll_many(addr: u32, c: VksCond) -> bool {\n    var hit = 0u;\n");
    if cfg.loop_cap {
        s.push_str(&capped_polls(
            &format!("vks_w_{me}_0[VKS_CTRL_N_PES]"),
            |a| format!("{poll}({a})"),
            "addr",
            cfg.polls_per_iteration(),
            "    ",
        ));
    } else {
        for _ in 0..cfg.polls_per_iteration() {
            let _ = writeln!(s, "    hit |= vks_cond_bit(c, {poll}(addr));");
        }
    }
    s.push_str("    return hit != 0u;\n}\n");
}

/// One iteration of a wait loop where the driver caps loop iterations: `polls`
/// tests `hit |= vks_cond_bit(c, POLL)` of word `addr` (`poll` writes the
/// access for a word-address expression), each followed by a dependent chain
/// of [`CAPPED_DELAY_STEPS`] square roots, so that an iteration lasts about
/// 2 µs and the budget of 65535 iterations about 130 ms of CPU time, while the
/// code stays short to compile (a chain of vector square roots is straight-line
/// code; polls are atomics that llvmpipe expands per lane, so many per
/// iteration make a large kernel several times slower to compile).
///
/// `n_pes_word` reads the control region's n_pes word, which holds
/// `VKS_N_PES` at run time: `zero` is 0 then but unknown to the compiler, so
/// neither the chain nor its use in the next poll's address folds away, and
/// each poll waits for the chain before it. Declares `zero` and `d`; the
/// caller declares `hit`.
pub(crate) fn capped_polls(
    n_pes_word: &str,
    poll: impl Fn(&str) -> String,
    addr: &str,
    polls: u32,
    indent: &str,
) -> String {
    let mut s =
        format!("{indent}let zero = {n_pes_word} - VKS_N_PES;\n{indent}var d = f32(zero) + 2.0;\n");
    for _ in 0..polls {
        let _ = writeln!(
            s,
            "{indent}hit |= vks_cond_bit(c, {});",
            poll(&format!("{addr} + (bitcast<u32>(d) & zero)"))
        );
        for _ in 0..CAPPED_DELAY_STEPS {
            let _ = writeln!(s, "{indent}d = sqrt(d + 1.0);");
        }
    }
    s
}

/// `vks_wait_begin(addr, cond, value)` / `vks_wait_end()`: where the driver caps
/// loops (llvmpipe, whose "device" is the host's CPU threads), a wait that did
/// not end at its first polls says so in this PE's control header (`waiting`,
/// `wait_seq`, and the condition as a hint: `wait_addr`, `wait_cond`,
/// `wait_value`). The host's wait throttle (`vkshmem_host::throttle`) then puts
/// the driver's threads to sleep most of the time until the wait ends, so that a
/// wait spends its loop iterations slowly and lasts seconds, and the CPU goes to
/// the PEs it waits for. Elsewhere both are empty.
fn wait_announce(s: &mut String, cfg: &LibraryConfig) {
    if !cfg.loop_cap {
        s.push_str(
            "fn vks_wait_begin(addr: u32, cond: u32, value: u32) {}\nfn vks_wait_end() {}\n",
        );
        return;
    }
    let me = "vks_a_0_0";
    let _ = write!(
        s,
        "fn vks_wait_begin(addr: u32, cond: u32, value: u32) {{
    atomicAdd(&{me}[VKS_CTRL_WAITING], 1u);
    atomicStore(&{me}[VKS_CTRL_WAIT_ADDR], addr);
    atomicStore(&{me}[VKS_CTRL_WAIT_COND], cond);
    atomicStore(&{me}[VKS_CTRL_WAIT_VALUE], value);
    atomicAdd(&{me}[VKS_CTRL_WAIT_SEQ], 1u);
}}
fn vks_wait_end() {{
    atomicSub(&{me}[VKS_CTRL_WAITING], 1u);
}}
"
    );
}

/// `vks_raise(bits, pe, addr)`: device error `bits` for this PE's control
/// region (the first error names `pe` and `addr`). It writes the error words
/// directly (the accessors call it, so it cannot call them: WGSL has no
/// recursion), except where the driver caps loops (llvmpipe): there it notes
/// the error in this invocation's private `vks_err`, and `vks_loop_check`,
/// which the SPIR-V pass calls before every return of every entry point,
/// writes it once. llvmpipe expands every atomic into a branch per lane, and
/// the three atomics of a raise inlined at every check made kernels with
/// many calls compile about twice as slowly. The host reads the error words
/// once the kernel is done, so an error written at the invocation's end is
/// seen the same; an invocation that never returns has its loops cut by the
/// driver, and then returns.
fn raise(s: &mut String, cfg: &LibraryConfig) {
    let me = "vks_a_0_0";
    let write = |bits: &str, pe: &str, addr: &str| {
        format!(
            "if atomicOr(&{me}[VKS_CTRL_ERROR], {bits}) == 0u {{
        atomicStore(&{me}[VKS_CTRL_ERROR_PE], {pe});
        atomicStore(&{me}[VKS_CTRL_ERROR_ADDR], {addr});
    }}"
        )
    };
    if !cfg.loop_cap {
        let _ = writeln!(
            s,
            "fn vks_raise(bits: u32, pe: u32, addr: u32) {{\n    {}\n}}",
            write("bits", "pe", "addr")
        );
        return;
    }
    let _ = writeln!(
        s,
        "// This invocation's first error (bits, pe, addr), for vks_flush_errors.
var<private> vks_err: vec3<u32>;
fn vks_raise(bits: u32, pe: u32, addr: u32) {{
    vks_err = select(vks_err, vec3<u32>(0u, pe, addr), vks_err.x == 0u);
    vks_err.x |= bits;
}}
fn vks_flush_errors() {{
    if vks_err.x != 0u {{
        {}
        vks_err = vec3<u32>();
    }}
}}",
        write("vks_err.x", "vks_err.y", "vks_err.z")
    );
}

fn accessor(
    s: &mut String,
    cfg: &LibraryConfig,
    (name, view, params, ret, body, proxied): &Accessor,
    with_proxy: bool,
) {
    let name = if with_proxy {
        name.to_string()
    } else {
        name.replacen("vks_", "vks_d_", 1)
    };
    let chunks = cfg.chunks();
    let arrow = ret.map(|r| format!(" -> {r}")).unwrap_or_default();
    let fallback = ret.map_or("return;".to_string(), |r| format!("return {r}();"));
    let _ = writeln!(s, "fn {name}(pe: u32, a: u32{params}){arrow} {{");
    // Every check in one test and one `vks_raise`: a PE out of the job
    // (named as given), an address out of the heap or, in the 64-bit view,
    // odd (named with the PE's number), a PE not reached directly where no
    // proxy carries the access (as given). Each raise is three atomics,
    // which llvmpipe expands per lane into branches, so a raise per check
    // makes kernels that call many accessors far slower to compile. `&` and `|`
    // on bools do not branch (WGSL wants their comparisons in parentheses).
    let (odd, element) = if *view == 'q' {
        (" | ((a & 1u) != 0u)", "i >> 1u")
    } else {
        ("", "i")
    };
    let unreachable = if cfg.proxy && with_proxy {
        "0u"
    } else {
        "select(0u, VKS_ERR_UNREACHABLE, !vks_is_direct(pe))"
    };
    let _ = writeln!(
        s,
        "    let bad_pe = (pe >= VKS_N_PES) & (pe != VKS_SELF);
    let bad_addr = (a >= VKS_HEAP_WORDS){odd};
    let err = select(select({unreachable}, VKS_ERR_BAD_ADDRESS, bad_addr), VKS_ERR_BAD_PE, bad_pe);
    if err != 0u {{ vks_raise(err, select(pe, vks_pe_number(pe), err == VKS_ERR_BAD_ADDRESS), a); {fallback} }}"
    );
    // Two levels: the PE's slot, then the chunk of `a`. `vks_slot(VKS_SELF)`
    // folds to 0, so an access to this PE's own heap (most of the library's)
    // compiles to its chunk switch alone, without the other PEs' cases or
    // the proxy's path (one switch over (slot, chunk) pairs kept them all
    // in every such access of a heap in several chunks: the selector was
    // not a constant). `a` is below VKS_HEAP_WORDS here, so the last chunk
    // is the chunk switch's default.
    let (index, chunk) = if chunks == 1 {
        ("a".to_string(), String::new())
    } else {
        let shift = cfg.chunk_word_shift();
        (
            format!("a & {}u", (1u64 << shift) - 1),
            format!("a >> {shift}u"),
        )
    };
    let _ = writeln!(s, "    let i = {index};");
    let _ = writeln!(s, "    switch vks_slot(pe) {{");
    // A case per slot with bindings; a PE without them (not reached
    // directly) falls to the default.
    let bindings = cfg.bindings();
    for slot_bindings in bindings.chunk_by(|x, y| x.slot == y.slot) {
        let slot = slot_bindings[0].slot;
        let chunk_of = |b: &HeapBinding| (b.offset / cfg.chunk_bytes()) as u32;
        let access = |b: &HeapBinding| {
            body.replace(
                "{v}",
                &format!("vks_{view}_{}_{}[{element}]", b.slot, chunk_of(b)),
            )
        };
        if chunks == 1 {
            let _ = writeln!(
                s,
                "        case {slot}u: {{ {} }}",
                access(&slot_bindings[0])
            );
            continue;
        }
        let _ = writeln!(s, "        case {slot}u: {{\n            switch {chunk} {{");
        for (k, b) in slot_bindings.iter().enumerate() {
            let label = if k + 1 == slot_bindings.len() {
                "default".to_string()
            } else {
                format!("case {}u", chunk_of(b))
            };
            let _ = writeln!(s, "                {label}: {{ {} }}", access(b));
        }
        let _ = writeln!(s, "            }}\n        }}");
    }
    if cfg.proxy && with_proxy {
        let _ = writeln!(s, "        default: {{ {proxied} }}");
    } else {
        // Raised above.
        let _ = writeln!(s, "        default: {{}}");
    }
    let _ = writeln!(s, "    }}");
    if let Some(r) = ret {
        let _ = writeln!(s, "    return {r}();");
    }
    let _ = writeln!(s, "}}");
}

/// `vks_copy_vec4(d4, spe, s4, n4, tid, nth)`: copies `n4` vec4s from vec4
/// index `s4` of PE `spe` to vec4 index `d4` of this PE (the bulk of every
/// pull of the work_group(s) forms, `vks_copy_bytes`), and
/// `vks_push_vec4(dpe, d4, s4, n4, tid, nth)` the other way (the
/// reductions' results); both [`vec4_pieces`] loops, false (nothing copied)
/// without the vec4 view or for a PE not reached directly.
fn vec4_copy(s: &mut String, cfg: &LibraryConfig, vec4: bool) {
    // This PE's own heap is slot 0.
    let me = 0;
    // Pull: this PE's dest, any direct PE's source.
    vec4_pieces(
        s,
        cfg,
        vec4,
        "fn vks_copy_vec4(d4: u32, spe: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool",
        "spe",
        &|p, sc, dc| format!("vks_v_{me}_{dc}[di + i] = vks_v_{p}_{sc}[si + i];"),
        Chunk::Source,
    );
    // Push: this PE's source, any direct PE's dest (the reductions' results).
    vec4_pieces(
        s,
        cfg,
        vec4,
        "fn vks_push_vec4(dpe: u32, d4: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool",
        "dpe",
        &|p, dc, sc| format!("vks_v_{p}_{dc}[di + i] = vks_v_{me}_{sc}[si + i];"),
        Chunk::Dest,
    );
}

/// The most PEs a job may have for `vec4_push_all`'s loop, which stores
/// into every PE's heap (one store per PE in every case of its switch).
pub const PUSH_ALL_MAX_PES: u32 = 8;

/// `vks_push_all_ok()`: whether `vks_push_all_vec4` can run in this kernel
/// (the vec4 view, every PE of the job reached directly, at most
/// [`PUSH_ALL_MAX_PES`] of them): alike on every PE of the job, so the
/// collectives may choose a push with it. `vks_push_all_vec4(spe, d4, s4,
/// n4, tid, nth)`: copies `n4` vec4s from vec4 index `s4` of PE `spe` to vec4
/// index `d4` of every PE of the job, each vec4 read once (a [`vec4_pieces`]
/// loop whose body stores into every PE's heap): the device forms' pushes,
/// which move a broadcast's or fcollect's least traffic (a pull reads the
/// source once per member).
fn vec4_push_all(s: &mut String, cfg: &LibraryConfig, vec4: bool) {
    let ok = vec4 && cfg.n_pes <= PUSH_ALL_MAX_PES && cfg.reaches_all();
    let _ = writeln!(s, "fn vks_push_all_ok() -> bool {{ return {ok}; }}");
    let n = cfg.n_pes;
    vec4_pieces(
        s,
        cfg,
        ok,
        "fn vks_push_all_vec4(spe: u32, d4: u32, s4: u32, n4: u32, tid: u32, nth: u32) -> bool",
        "spe",
        &|p, sc, dc| {
            let mut b = format!("let r = vks_v_{p}_{sc}[si + i];");
            for slot in 0..n {
                let _ = write!(b, " vks_v_{slot}_{dc}[di + i] = r;");
            }
            b
        },
        Chunk::Source,
    );
}

/// vec4s a lane of the library's vec4 loops (`vec4_pieces`) moves per loop
/// iteration in a kernel of one SIMD row ([`LibraryConfig::row_lanes`])
/// where the driver caps loop iterations (llvmpipe: 65535 per invocation),
/// so that its row of 8 invocations moves two 4 MiB blocks in a call (a 2-PE
/// alltoall: 65536 vec4s per lane of one row, 32768 iterations). Each vec4
/// more per iteration is another copy of every vec4 loop's body for
/// llvmpipe to compile, so 2 is the least that moves the two blocks
/// (benches/RESULTS.md, "Device unroll").
pub const UNROLL: u32 = 2;

/// Whether a workgroup of `[x, y, z]` invocations is one SIMD row of
/// `row_lanes` invocations (never where `row_lanes` is 0): the kernels the
/// link builds without barriers (`LibraryConfig::row_lanes`).
pub fn is_one_row(row_lanes: u32, [x, y, z]: [u32; 3]) -> bool {
    row_lanes > 0 && x <= row_lanes && y == 1 && z == 1
}

/// Which side's chunk a binding of [`vec4_pieces`]'s cases stands for (the
/// other side is this PE's own heap, every chunk of it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunk {
    Source,
    Dest,
}

/// A vec4 loop between this PE's heap and PE `pe` (the signature's PE
/// parameter, reached directly) over `n4` vec4s from vec4 indices `d4` and
/// `s4`, generated with the switch outside the loop: one loop per (PE,
/// source chunk, dest chunk), whose body `body(slot, chunk, own chunk)` sees
/// `di + i` and `si + i` (indices in the chunks' arrays). Returns
/// false (nothing done) where the kernel has no vec4 view or `pe` is not
/// reached directly.
///
/// Which invocation handles vec4 `g` depends only on `g`, `tid` and `nth`,
/// never on where the chunk boundaries cut (the reductions accumulate one
/// vec4 over several calls, which must fall to the same invocation): on a
/// GPU `g % nth == tid` (consecutive invocations on consecutive vec4s:
/// coalesced); on a CPU driver (llvmpipe, where loops are capped), a
/// contiguous share per SIMD row of 8 invocations (`tid / 8`), its lanes
/// interleaved in it (lane `tid % 8` on every 8th vec4, `width` where the
/// grid's last row is narrower). llvmpipe runs a workgroup's rows one after
/// another, so the GPU pattern swept the whole object once per row, 128
/// bytes in every 4 KiB; and it moves each lane's element apart, so a share
/// per invocation walked 8 places at once per row, where a share per row
/// walks one (benches/RESULTS.md, "Row shares").
#[allow(clippy::too_many_arguments)]
pub(crate) fn vec4_pieces(
    s: &mut String,
    cfg: &LibraryConfig,
    vec4: bool,
    sig: &str,
    pe: &str,
    body: &dyn Fn(u32, u32, u32) -> String,
    side: Chunk,
) {
    let _ = writeln!(s, "{sig} {{");
    if !vec4 || !cfg.direct.contains(cfg.my_pe) {
        s.push_str("    return false;\n}\n");
        return;
    }
    let chunks = cfg.chunks();
    let _ = writeln!(s, "    if !vks_is_direct({pe}) {{ return false; }}");
    // In range: whole vec4s inside the heap (its size is a multiple of 16).
    s.push_str("    let end = VKS_HEAP_WORDS >> 2u;\n");
    s.push_str(
        "    if d4 >= end || s4 >= end || n4 > end - d4 || n4 > end - s4 { return false; }\n",
    );
    let shift = if chunks == 1 {
        31
    } else {
        cfg.chunk_word_shift() - 2
    };
    let (from, to, first, step) = if cfg.loop_cap {
        // Rows of 8 (the grid's last may be narrower); `per` a multiple of
        // 8, so that every row's share starts on a row boundary of vec4s.
        let (l, m, sh) = (ROW_LANES, ROW_LANES - 1, ROW_LANES.trailing_zeros());
        let _ = write!(
            s,
            "    let rows = (nth + {m}u) >> {sh}u;
    let width = min({l}u, nth - (tid & ~{m}u));
    let lane = tid & {m}u;
    let per = (((n4 + rows - 1u) / rows) + {m}u) & ~{m}u;
    let lo = min((tid >> {sh}u) * per, n4);
    let hi = min(lo + per, n4);
"
        );
        (
            "lo",
            "hi",
            "(lane + width - (done - lo) % width) % width",
            "width",
        )
    } else {
        ("0u", "n4", "(tid + nth - done % nth) % nth", "nth")
    };
    let _ = writeln!(
        s,
        "    var done = {from};
    loop {{
        if done >= {to} {{ break; }}
        let dv = d4 + done;
        let sv = s4 + done;
        let dc = dv >> {shift}u;
        let sc = sv >> {shift}u;
        let k = min({to} - done, min(((dc + 1u) << {shift}u) - dv, ((sc + 1u) << {shift}u) - sv));
        let di = dv - (dc << {shift}u);
        let si = sv - (sc << {shift}u);
        let first = {first};
        switch (vks_slot({pe}) * {chunks}u + {c}) * {chunks}u + {own} {{",
        c = if side == Chunk::Source { "sc" } else { "dc" },
        own = if side == Chunk::Source { "dc" } else { "sc" },
    );
    for b in cfg.bindings() {
        let c = (b.offset / cfg.chunk_bytes()) as u32;
        for own in 0..chunks {
            // The selector above: (slot, its chunk, this PE's chunk).
            let case = (b.slot * chunks + c) * chunks + own;
            let body = body(b.slot, c, own);
            if cfg.loop_cap && cfg.row_lanes > 0 {
                // UNROLL vec4s of the lane per iteration, each past the first
                // where it is below `k`: the driver caps loop iterations,
                // not work, so a lane moves UNROLL times more per call
                // within the cap (the same vec4s, in the same order). Each
                // body costs llvmpipe compile time (every case of every vec4
                // loop of a kernel).
                let more: String = (1..UNROLL)
                    .map(|j| format!(" {{ let i = i0 + {j}u * {step}; if i < k {{ {body} }} }}"))
                    .collect();
                let _ = writeln!(
                    s,
                    "            case {case}u: {{ for (var i0 = first; i0 < k; i0 += {UNROLL}u * {step}) {{ {{ let i = i0; {body} }}{more} }} }}",
                );
            } else {
                let _ = writeln!(
                    s,
                    "            case {case}u: {{ for (var i = first; i < k; i += {step}) {{ {body} }} }}"
                );
            }
        }
    }
    s.push_str(
        "            default: { }\n        }\n        done += k;\n    }\n    return true;\n}\n",
    );
}

/// `vks_is_direct(pe)`: whether this PE's device reaches `pe`'s heap through
/// a binding (a constant `true` when it reaches every PE, which the driver
/// folds away).
fn is_direct(s: &mut String, cfg: &LibraryConfig) {
    let staged: Vec<u32> = (0..cfg.n_pes)
        .filter(|&p| !cfg.direct.contains(p))
        .collect();
    if staged.is_empty() {
        s.push_str("fn vks_is_direct(pe: u32) -> bool { return true; }\n");
        s.push_str("fn vks_team_spans(t: VksTeam) -> bool { return false; }\n");
        return;
    }
    // Whether some member of `t` is reached through the proxy.
    s.push_str(
        "fn vks_team_spans(t: VksTeam) -> bool {
    var spans = false;
    for (var i = 0u; i < t.size; i++) {
        spans = spans || !vks_is_direct(vks_team_pe(t, i));
    }
    return spans;
}
",
    );
    let mut slots: Vec<u32> = (0..cfg.n_pes)
        .filter(|&p| cfg.direct.contains(p))
        .map(|p| cfg.slot_of(p))
        .collect();
    slots.sort_unstable();
    let cases: Vec<String> = slots.iter().map(|p| format!("{p}u")).collect();
    if cases.is_empty() {
        s.push_str("fn vks_is_direct(pe: u32) -> bool { return false; }\n");
        return;
    }
    let _ = writeln!(
        s,
        "fn vks_is_direct(pe: u32) -> bool {{\n    switch vks_slot(pe) {{\n        case {}: {{ return true; }}\n        default: {{ return false; }}\n    }}\n}}",
        cases.join(", ")
    );
}

/// `vks_volatile_load_own(a)`: a volatile load of this PE's heap word `a` (in
/// range), switching over this PE's chunks only; the pass makes it volatile.
fn own_volatile_load(s: &mut String, cfg: &LibraryConfig) {
    let me = 0;
    // Control words live in chunk 0.
    let _ = writeln!(
        s,
        "fn vks_volatile_store_own(a: u32, x: u32) {{ vks_w_{me}_0[a] = x; }}"
    );
    own_word_fn(s, cfg, "vks_volatile_load_own", |w| {
        format!("vks_w_{me}_{w}")
    });
}

/// `fn NAME(a: u32) -> u32` returning `access(word)` for this PE's heap word
/// `a`, where `word` is `C[i]` (chunk `C`, index `i`: the chunk switch of a
/// heap bound in several bindings).
fn own_word_fn(s: &mut String, cfg: &LibraryConfig, name: &str, access: impl Fn(String) -> String) {
    let _ = writeln!(s, "fn {name}(a: u32) -> u32 {{");
    if cfg.chunks() == 1 {
        let _ = writeln!(s, "    return {};", access("0[a]".into()));
    } else {
        let shift = cfg.chunk_word_shift();
        let mask = (1u64 << shift) - 1;
        let _ = writeln!(s, "    switch a >> {shift}u {{");
        for c in 0..cfg.chunks() {
            let _ = writeln!(
                s,
                "        case {c}u: {{ return {}; }}",
                access(format!("{c}[a & {mask}u]"))
            );
        }
        let _ = writeln!(s, "        default: {{ return 0u; }}\n    }}");
    }
    let _ = writeln!(s, "}}");
}

/// The typed API for one element type: `shmem_T_g/p` for every type, the
/// atomics, acquire/release and `wait_until` for 32-bit integers.
fn typed(s: &mut String, ty: &Ty) {
    let (n, t) = (ty.name, ty.wgsl);
    if ty.words == 1 {
        let from = if t == "u32" {
            "w".to_string()
        } else {
            format!("bitcast<{t}>(w)")
        };
        let to = if t == "u32" {
            "value".to_string()
        } else {
            "bitcast<u32>(value)".to_string()
        };
        let _ = write!(
            s,
            "fn shmem_{n}_g(source: u32, pe: u32) -> {t} {{ let w = vks_plain_load(vks_user_pe(pe), source); return {from}; }}
fn shmem_{n}_p(dest: u32, value: {t}, pe: u32) {{ vks_plain_store(vks_user_pe(pe), dest, {to}); }}
"
        );
    } else {
        let (from, to) = match t {
            "u64" => ("bits", "value"),
            "i64" => ("bitcast<i64>(bits)", "bitcast<u64>(value)"),
            _ => ("bitcast<f64>(bits)", "bitcast<u64>(value)"),
        };
        let _ = write!(
            s,
            "fn shmem_{n}_g(source: u32, pe: u32) -> {t} {{
    let bits = u64(vks_plain_load(vks_user_pe(pe), source)) | (u64(vks_plain_load(vks_user_pe(pe), source + 1u)) << 32u);
    return {from};
}}
fn shmem_{n}_p(dest: u32, value: {t}, pe: u32) {{
    let bits = {to};
    vks_plain_store(vks_user_pe(pe), dest, u32(bits));
    vks_plain_store(vks_user_pe(pe), dest + 1u, u32(bits >> 32u));
}}
"
        );
    }
    if !ty.atomic {
        return;
    }
    let (from, to) = if ty.signed {
        ("bitcast<i32>", "bitcast<u32>")
    } else {
        ("", "")
    };
    let cmp = if ty.signed { "true" } else { "false" };
    let _ = write!(
        s,
        "fn shmemx_{n}_load_acquire(source: u32, pe: u32) -> {t} {{ return {from}(vks_acquire_load(vks_user_pe(pe), source)); }}
fn shmemx_{n}_store_release(dest: u32, value: {t}, pe: u32) {{ vks_store_release(vks_user_pe(pe), dest, {to}(value)); }}
fn shmem_{n}_wait_until(ivar: u32, cmp: u32, value: {t}) -> bool {{ return vks_wait_cmp(ivar, cmp, {to}(value), {cmp}); }}
"
    );
}

#[cfg(test)]
mod tests {

    #[test]
    fn every_form_of_a_pushing_collective_gets_the_vec4_view() {
        // A PE may call the per-thread form where another calls a work_group
        // form: all must push (they have the view) or all pull.
        for call in [
            "shmem_broadcastmem(SHMEM_TEAM_WORLD, 0u, 0u, 64u, 0u)",
            "shmem_int_broadcast(t, d, s, n, 0u)",
            "shmem_fcollectmem(t, d, s, n)",
            "shmem_float_fcollect(t, d, s, n)",
            "shmem_collectmem(t, d, s, n)",
            "shmem_uint_collect(t, d, s, n)",
            "shmemx_broadcastmem_work_group(t, d, s, n, 0u, li, 64u)",
            "shmemx_fcollectmem_work_groups(t, d, s, n, li, 64u, g, ng)",
        ] {
            assert!(uses_vec4(Some(call)), "{call}");
        }
        // The host's generic kernels pull (one process may run them as each
        // member in turn): no view.
        for c in [
            crate::collectives::HostCollective::Broadcast,
            crate::collectives::HostCollective::Fcollect,
            crate::collectives::HostCollective::Collect,
        ] {
            assert!(!uses_vec4(Some(&c.source())), "{c:?}");
        }
        assert!(!uses_vec4(Some("shmem_int_p(0u, 1, 0u)")));
    }
    use super::*;

    fn cfg(n: u32, heap: u64, range: u64) -> LibraryConfig {
        LibraryConfig {
            my_pe: 0,
            n_pes: n,
            heap_bytes: heap,
            max_binding_bytes: range,
            int64: true,
            float64: true,
            int64_atomics: true,
            divergent_fences: true,
            loop_cap: false,
            row_lanes: 0,
            direct: PeSet::all(n),
            proxy: false,
            vec4_u64: false,
        }
    }

    /// A PE outside `direct` gets no bindings, the others are numbered from 0,
    /// and an access to it raises ERR_UNREACHABLE.
    #[test]
    fn peers_not_reached_directly_get_no_bindings() {
        let mut c = cfg(3, 256 << 20, 128 << 20);
        c.direct = PeSet::from_pes([0, 2]);
        let b = c.bindings();
        assert_eq!(b.len(), 4);
        assert_eq!(
            b.iter()
                .map(|b| (b.binding, b.pe, b.offset))
                .collect::<Vec<_>>(),
            [(0, 0, 0), (1, 0, 128 << 20), (2, 2, 0), (3, 2, 128 << 20)]
        );
        let src = library_source(&c);
        // One check and one raise, then slot, then chunk (the last chunk
        // the default): PE 2 is slot 2, PE 1 (slot 1) is not reached.
        let load = src
            .split("fn vks_plain_load(pe: u32, a: u32) -> u32 {\n")
            .nth(1)
            .and_then(|f| f.split("\n}\n").next())
            .expect("vks_plain_load");
        let body = "    let bad_pe = (pe >= VKS_N_PES) & (pe != VKS_SELF);
    let bad_addr = (a >= VKS_HEAP_WORDS);
    let err = select(select(select(0u, VKS_ERR_UNREACHABLE, !vks_is_direct(pe)), VKS_ERR_BAD_ADDRESS, bad_addr), VKS_ERR_BAD_PE, bad_pe);
    if err != 0u { vks_raise(err, select(pe, vks_pe_number(pe), err == VKS_ERR_BAD_ADDRESS), a); return u32(); }
    let i = a & 33554431u;
    switch vks_slot(pe) {
        case 0u: {
            switch a >> 25u {
                case 0u: { return vks_w_0_0[i]; }
                default: { return vks_w_0_1[i]; }
            }
        }
        case 2u: {
            switch a >> 25u {
                case 0u: { return vks_w_2_0[i]; }
                default: { return vks_w_2_1[i]; }
            }
        }
        default: {}
    }
    return u32();";
        assert!(load.ends_with(body), "{load}");
        assert!(!src.contains("vks_a_1_0"), "PE 1 is bound");
        // With a proxy the same access becomes a ring request; the direct-only
        // accessors (vks_d_*) keep raising.
        c.proxy = true;
        let src = library_source(&c);
        assert!(
            src.contains("default: { return vks_px_call(VKS_PX_LOAD, pe, a, 0u, 0u, 0u, 0u); }")
        );
        assert!(src.contains("fn vks_d_plain_load(pe: u32, a: u32) -> u32 {"));
        assert!(
            src.contains("case 0u, 2u: { return true; }"),
            "vks_is_direct"
        );
        let all = PeSet::all(70);
        assert!(all.contains(69) && !all.contains(70) && !PeSet::all(0).contains(0));
    }

    /// Bindings go in slot order (this PE's heap first), and the library's
    /// text is the same on every PE of a job whose direct sets look alike
    /// from where each PE stands: one compile per job. PEs in pairs on a
    /// device (direct {0, 1} and {2, 3}) share it position by position.
    #[test]
    fn every_pe_of_a_job_gets_the_same_library() {
        let on = |n: u32, me: u32, direct: &[u32]| {
            let mut c = cfg(n, 256 << 20, 128 << 20);
            c.my_pe = me;
            c.direct = PeSet::from_pes(direct.iter().copied());
            c.proxy = direct.len() < n as usize;
            c
        };
        let c = on(3, 1, &[0, 1, 2]);
        assert_eq!(
            c.bindings()
                .iter()
                .map(|b| (b.binding, b.pe, b.slot, b.offset))
                .collect::<Vec<_>>(),
            [
                (0, 1, 0, 0),
                (1, 1, 0, 128 << 20),
                (2, 2, 1, 0),
                (3, 2, 1, 128 << 20),
                (4, 0, 2, 0),
                (5, 0, 2, 128 << 20)
            ]
        );
        assert_eq!((c.slot_of(1), c.slot_of(2), c.slot_of(0)), (0, 1, 2));
        for n in [1u32, 2, 3, 5, 8] {
            let all: Vec<u32> = (0..n).collect();
            let first = library_source(&on(n, 0, &all));
            assert!(!first.contains("VKS_MY_PE") && !first.contains("VKS_SLOT_SPAN"));
            for me in 1..n {
                assert!(
                    library_source(&on(n, me, &all)) == first,
                    "{n} PEs: PE {me}"
                );
            }
        }
        // Nodes of 2: every PE of an equal node shares one text; a node of
        // one PE (the last of 3 or 5) has its own.
        let pairs = |n: u32, me: u32| {
            let direct: Vec<u32> = [me & !1, me | 1].into_iter().filter(|&p| p < n).collect();
            on(n, me, &direct)
        };
        for n in [3u32, 4, 5, 8] {
            let whole = n & !1;
            let first = library_source(&pairs(n, 0));
            assert!(first.contains("const VKS_SLOT_SPAN: u32 = 2u;"));
            for me in 1..whole {
                assert!(library_source(&pairs(n, me)) == first, "{n} PEs: PE {me}");
            }
            if whole < n {
                assert!(library_source(&pairs(n, n - 1)) != first);
            }
        }
        // Slots count within the node: PE 1 sees PE 0 at slot 1, PE 2 (not
        // reached) outside the span.
        let c = pairs(3, 1);
        assert_eq!(c.slot_span(), 2);
        assert_eq!((c.slot_of(1), c.slot_of(0), c.slot_of(2)), (0, 1, 3));
        assert_eq!(
            c.bindings()
                .iter()
                .map(|b| (b.pe, b.slot))
                .collect::<Vec<_>>(),
            [(1, 0), (1, 0), (0, 1), (0, 1)]
        );
        // A direct set that is no aligned block counts over the job.
        let c = on(4, 1, &[1, 2]);
        assert_eq!(c.slot_span(), 4);
        assert_eq!((c.slot_of(1), c.slot_of(2), c.slot_of(0)), (0, 1, 3));
    }

    #[test]
    fn chunks_cover_the_heap() {
        let c = cfg(3, 256 << 20, 128 << 20);
        assert_eq!((c.chunk_bytes(), c.chunks()), (128 << 20, 2));
        let b = c.bindings();
        assert_eq!(b.len(), 6);
        assert_eq!(
            b[3],
            HeapBinding {
                binding: 3,
                pe: 1,
                slot: 1,
                offset: 128 << 20,
                bytes: 128 << 20
            }
        );
        // An odd range: chunks are the largest power of two under it.
        let c = cfg(2, 300 << 20, (128 << 20) + 12);
        assert_eq!((c.chunk_bytes(), c.chunks()), (128 << 20, 3));
        assert_eq!(c.bindings()[2].bytes, 44 << 20);
        // Fits in one binding.
        let c = cfg(4, 1 << 20, u32::MAX as u64);
        assert_eq!((c.chunk_bytes(), c.chunks()), (1 << 20, 1));
    }

    /// Where the driver caps loops, a raise is noted in the invocation's
    /// private `vks_err` (no atomics at each check) and written once by
    /// `vks_loop_check`, which runs before every return of every entry
    /// point; elsewhere it writes the error words at once.
    #[test]
    fn raises_are_written_once_per_invocation_where_loops_are_capped() {
        let body = |src: &str, f: &str| {
            src.split(&format!("fn {f}("))
                .nth(1)
                .and_then(|b| b.split("\n}\n").next())
                .unwrap_or_else(|| panic!("{f}"))
                .to_string()
        };
        let mut c = cfg(2, 1 << 20, 128 << 20);
        c.loop_cap = true;
        let src = library_source(&c);
        assert!(!body(&src, "vks_raise").contains("atomic"));
        assert!(body(&src, "vks_flush_errors")
            .contains("atomicOr(&vks_a_0_0[VKS_CTRL_ERROR], vks_err.x)"));
        assert!(body(&src, "vks_loop_check").ends_with("vks_flush_errors();"));
        c.loop_cap = false;
        let src = library_source(&c);
        assert!(body(&src, "vks_raise").contains("atomicOr(&vks_a_0_0[VKS_CTRL_ERROR], bits)"));
        assert!(!src.contains("vks_flush_errors") && !src.contains("fn vks_loop_check("));
    }

    #[test]
    fn library_compiles_alone_in_every_shape() {
        for (n, heap, range, wide) in [
            (1, 1 << 20, 128 << 20, true),
            (3, 256 << 20, 128 << 20, true),
            (8, 64 << 20, 128 << 20, false),
        ] {
            for proxy in [false, true] {
                let mut c = cfg(n, heap, range);
                c.my_pe = n - 1;
                c.int64 = wide;
                c.float64 = wide;
                c.int64_atomics = wide;
                if proxy {
                    // Every peer on another device, reached through the proxy.
                    c.direct = PeSet::from_pes([n - 1]);
                    c.proxy = true;
                    c.loop_cap = true;
                }
                let src = format!(
                    "{}\n@compute @workgroup_size(1) fn main() {{ shmem_barrier_all(); }}",
                    library_source(&c)
                );
                if let Err(e) = crate::compile_wgsl(&src, "lib") {
                    panic!("{e}");
                }
                assert_eq!(src.contains("fn vks_px_call("), proxy);
            }
        }
    }
}
