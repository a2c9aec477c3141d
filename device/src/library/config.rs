//! The library's configuration ([`LibraryConfig`], [`PeSet`]), the heap bindings
//! derived from it, and the binding numbers and constants the pass and host share.

use super::is_one_row;

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
    /// move [`UNROLL`](super::UNROLL) vec4s per iteration where loops are capped (the link
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::library_source;
    use crate::library::tests::cfg;

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
}
