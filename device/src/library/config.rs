//! What the library's text depends on ([`LibraryConfig`]: the device and the
//! library's shape, never the job), the job's side ([`JobView`]: which heaps this
//! PE reaches and where its slots bind them, read at run time from the control
//! region), and the binding numbers and constants the pass and host share.

use super::is_one_row;
use crate::layout;

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

/// The binding a library heap view declared at `declared` lands on after the
/// pass (every view offset is a multiple of [`PLAIN_VIEW_OFFSET`], and the
/// library never binds that many).
pub fn heap_binding(declared: u32) -> u32 {
    declared % PLAIN_VIEW_OFFSET
}

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

/// What the generated library depends on: the device and the library's
/// shape. Nothing of the job (its PE count, this PE's number, which peers it
/// reaches directly, the heap's size) is here: device code reads those from
/// this PE's control region (`layout::ControlInit`, filled from [`JobView`]),
/// so that one pipeline serves every job whose [`JobView::slots`] and
/// [`JobView::chunks`] agree: every job whose slot span rounds to one power
/// of two, whatever its heap's size (in one binding) and direct peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LibraryConfig {
    /// Heap slots the library binds ([`JobView::slots`]): mostly a power of
    /// two. Slots without a PE reached directly are bound to this PE's own
    /// heap and never accessed (the direct-slot mask says so).
    pub slots: u32,
    /// Bindings per slot: the heap's chunks ([`JobView::chunks`]).
    pub chunks: u32,
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
    /// Device code reaches the PEs outside [`JobView::direct`] through this PE's proxy
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

/// The fewest heap slots a library binds. Each slot is a case of every
/// accessor's switch and a copy of each vec4 loop: on llvmpipe, 8 slots for
/// a job of 2 PEs made the device and queued forms 1.2-3.4x slower than its
/// own 2, where slots rounded up to a power of two cost nothing measurable
/// (benches/RESULTS.md, "Slots per library"). So jobs whose slot spans round
/// to one power of two (3 and 4 PEs; 5 to 8) share a library text, and so a
/// pipeline per kernel; padding to 8 on a GPU waits for a GPU measurement.
pub const MIN_SLOTS: u32 = 1;

/// Where a PE outside this PE's slot span has its slot ([`JobView::slot_of`],
/// `vks_slot`): no case of any switch.
pub const NO_SLOT: u32 = u32::MAX;

/// The job as one PE's device library sees it: this PE's number, the PE
/// count, the PEs whose heaps its device reaches directly, and the heap's
/// size. The library reads them at run time (the control header and the
/// direct-slot mask, [`JobView::control_init`]); the host binds the heaps by
/// [`JobView::bindings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobView {
    /// This PE's number.
    pub my_pe: u32,
    /// Number of PEs.
    pub n_pes: u32,
    /// The PEs whose heaps this PE's device reaches directly (the library
    /// binds those only); device code that touches another PE's heap raises
    /// `ERR_UNREACHABLE`, unless [`LibraryConfig::proxy`].
    pub direct: PeSet,
    /// Size of every PE's heap in bytes.
    pub heap_bytes: u64,
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
    /// slots count over ([`JobView::slot_span`]: the job, or this PE's node
    /// where it reaches exactly its node's block of PEs; 0: this PE's own
    /// heap): the number in the binding's names in the generated code.
    pub slot: u32,
    /// Byte offset of the window in the heap.
    pub offset: u64,
    /// Byte length of the window.
    pub bytes: u64,
    /// Whether `pe` is reached directly through it (false: a slot without
    /// such a PE, bound to this PE's own heap as padding).
    pub direct: bool,
}

/// The largest power of two a binding of at most `max_binding_bytes` covers:
/// the chunk of a heap in several.
fn chunk_bytes_within(max_binding_bytes: u64) -> u64 {
    1u64 << (63 - max_binding_bytes.max(4).leading_zeros())
}

impl LibraryConfig {
    /// Bytes per chunk where a heap takes several ([`LibraryConfig::chunks`]
    /// > 1): the largest power of two a binding can cover.
    pub fn chunk_bytes(&self) -> u64 {
        chunk_bytes_within(self.max_binding_bytes)
    }

    /// log2 of the words per chunk (meaningful when there are several chunks).
    pub fn chunk_word_shift(&self) -> u32 {
        self.chunk_bytes().trailing_zeros() - 2
    }

    /// Bindings of the library's heaps in set 0: a chunk of every slot.
    pub fn binding_count(&self) -> u32 {
        self.slots * self.chunks
    }

    /// `(binding, slot, chunk)` of every library binding, in binding order
    /// (the order of [`JobView::bindings`]).
    pub fn slot_bindings(&self) -> impl Iterator<Item = (u32, u32, u32)> {
        let chunks = self.chunks;
        (0..self.binding_count()).map(move |b| (b, b / chunks, b % chunks))
    }
}

impl JobView {
    /// Chunks per PE heap on a device whose bindings cover at most
    /// `max_binding_bytes`: one where the heap fits, else chunks of
    /// [`LibraryConfig::chunk_bytes`].
    pub fn chunks(&self, max_binding_bytes: u64) -> u32 {
        if self.heap_bytes <= max_binding_bytes {
            1
        } else {
            self.heap_bytes
                .div_ceil(chunk_bytes_within(max_binding_bytes)) as u32
        }
    }

    /// Heap slots the library binds on a device that allows `max_bindings`
    /// storage buffers per shader stage, with the heap in `chunks`: the slot
    /// span rounded up to a power of two (at least [`MIN_SLOTS`]), where that
    /// takes at most half of the device's bindings (the rest are the
    /// kernel's own: a wide kernel binds up to 17 windows); else the span
    /// itself, as few as the job needs (lavapipe allows 32: a heap in
    /// several chunks, or a span past 8 in two chunks, binds the span).
    pub fn slots(&self, max_bindings: u32, chunks: u32) -> u32 {
        let span = self.slot_span();
        let padded = span.next_power_of_two().max(MIN_SLOTS);
        if padded.saturating_mul(chunks) <= max_bindings / 2 {
            padded
        } else {
            span
        }
    }

    /// Words of the heap device code can address (capped at `u32::MAX`).
    pub fn heap_words(&self) -> u32 {
        (self.heap_bytes / 4).min(u32::MAX as u64) as u32
    }

    /// Whether this PE reaches every PE of the job directly (alike on every
    /// PE: direct reach is symmetric).
    pub fn reaches_all(&self) -> bool {
        (0..self.n_pes).all(|p| self.direct.contains(p))
    }

    /// Whether some PE of the job is reached only through a proxy.
    pub fn needs_proxy(&self) -> bool {
        !self.reaches_all()
    }

    /// The PEs this PE's slots count over ([`HeapBinding::slot`]): where the
    /// PEs it reaches directly are a block `[me - me % k, me - me % k + k)`
    /// of the job (its node, on a node of `k` PEs), `k`; else every PE of
    /// the job (`n_pes`). Both read the same from every PE of such a block.
    pub fn slot_span(&self) -> u32 {
        self.slot_block().1
    }

    /// The first PE and the number of the PEs the slots count over
    /// ([`JobView::slot_span`]): `(0, n_pes)` over the job.
    pub fn slot_block(&self) -> (u32, u32) {
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
    /// [`NO_SLOT`] for a PE outside the span its slots count over: the same
    /// as `vks_slot` in device code.
    pub fn slot_of(&self, pe: u32) -> u32 {
        let (first, k) = self.slot_block();
        let (r, m) = (pe.wrapping_sub(first), self.my_pe - first);
        if r >= k {
            NO_SLOT
        } else {
            (r + k - m) % k
        }
    }

    /// The PE in slot `slot` of this PE's view, if the slot span has one.
    fn pe_in(&self, slot: u32) -> Option<u32> {
        let (first, k) = self.slot_block();
        (slot < k).then(|| first + (self.my_pe - first + slot) % k)
    }

    /// The direct-slot mask (`layout::DIRECT_WORD`): bit `s` set where slot
    /// `s` holds a PE this PE reaches directly.
    pub fn direct_mask(&self) -> [u32; layout::DIRECT_WORDS as usize] {
        let mut mask = [0u32; layout::DIRECT_WORDS as usize];
        for slot in 0..self.slot_span().min(PeSet::CAPACITY) {
            if self.pe_in(slot).is_some_and(|p| self.direct.contains(p)) {
                mask[slot as usize / 32] |= 1 << (slot % 32);
            }
        }
        mask
    }

    /// This PE's control region's job values (with `max_groups`, the
    /// device's resident workgroups).
    pub fn control_init(&self, max_groups: u32) -> layout::ControlInit {
        let (slot_first, slot_span) = self.slot_block();
        layout::ControlInit {
            my_pe: self.my_pe,
            n_pes: self.n_pes,
            max_groups,
            heap_words: self.heap_words(),
            slot_first,
            slot_span,
            reaches_all: self.reaches_all(),
            direct: self.direct_mask(),
        }
    }

    /// The library's bindings under `cfg` ([`LibraryConfig::binding_count`]
    /// of them), in binding order: every chunk of every slot, numbered from
    /// 0 (slot 0, this PE's own heap, first; then the next PEs of its slot
    /// span, wrapping), so that PEs whose direct sets look alike from where
    /// each stands bind alike. A slot without a PE reached directly is bound
    /// to this PE's own heap (`direct` false): every binding must hold a
    /// valid buffer, and the direct-slot mask keeps device code off it.
    pub fn bindings(&self, cfg: &LibraryConfig) -> Vec<HeapBinding> {
        let cb = cfg.chunk_bytes();
        debug_assert!(
            self.direct.contains(self.my_pe),
            "a PE always reaches its own heap (slot 0 holds vks_my_pe's word)"
        );
        debug_assert!(
            self.slot_span() <= cfg.slots,
            "the library binds every slot"
        );
        let mut v = Vec::with_capacity(cfg.binding_count() as usize);
        for slot in 0..cfg.slots {
            let reached = self.pe_in(slot).filter(|&p| self.direct.contains(p));
            for c in 0..cfg.chunks {
                let (offset, bytes) = if cfg.chunks == 1 {
                    (0, self.heap_bytes)
                } else {
                    let offset = (c as u64 * cb).min(self.heap_bytes);
                    (offset, cb.min(self.heap_bytes - offset))
                };
                v.push(HeapBinding {
                    binding: v.len() as u32,
                    pe: reached.unwrap_or(self.my_pe),
                    slot,
                    offset,
                    bytes,
                    direct: reached.is_some(),
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
    use crate::library::tests::shape;

    /// The library's text depends on no value of the job but the power of
    /// two its slot span rounds to: every PE of every job of 1 to 8 PEs,
    /// whatever it reaches directly and whatever the heap's size (in one
    /// binding), gets one text per (power of two, proxy or not).
    #[test]
    fn one_library_serves_every_job_whose_span_rounds_alike() {
        let range = 128 << 20;
        let mut texts = std::collections::HashMap::new();
        for n in 1..=8u32 {
            for me in 0..n {
                let all: Vec<u32> = (0..n).collect();
                let pair: Vec<u32> = [me & !1, me | 1].into_iter().filter(|&p| p < n).collect();
                let odd: Vec<u32> = (0..n).filter(|&p| p == me || p % 3 == 1).collect();
                for direct in [all, pair, odd, vec![me]] {
                    for heap in [1u64 << 20, 64 << 20, 100 << 20] {
                        let (c, job) = shape(n, me, &direct, heap, range);
                        assert_eq!(c.slots, job.slot_span().next_power_of_two());
                        assert_eq!(c.chunks, 1);
                        let text = library_source(&c);
                        let want = texts
                            .entry((c.slots, c.proxy))
                            .or_insert_with(|| text.clone());
                        assert!(text == *want, "{n} PEs, PE {me}, {direct:?}, {heap} B");
                        assert_eq!(job.bindings(&c).len() as u32, c.binding_count());
                    }
                }
            }
        }
        // Slots 1, 2, 4 and 8, each with and without a proxy.
        assert_eq!(texts.len(), 8);
        let text = &texts[&(4, false)];
        assert!(!text.contains("VKS_N_PES") && !text.contains("VKS_HEAP_WORDS"));
        let (c, _) = shape(12, 5, &(0..12).collect::<Vec<_>>(), 1 << 20, range);
        assert_eq!(c.slots, 16);
        let (c, _) = shape(12, 5, &[4, 5, 6, 7], 1 << 20, range);
        assert_eq!(
            (c.slots, c.proxy),
            (4, true),
            "a node of 4 counts over the node"
        );
    }

    /// Bindings go in slot order (this PE's heap first); slots without a PE
    /// reached directly are padding on this PE's own heap, and the direct-slot
    /// mask and the control header say which are which.
    #[test]
    fn bindings_fill_every_slot_in_view_order() {
        let (c, r) = shape(3, 1, &[0, 1, 2], 256 << 20, 128 << 20);
        assert_eq!((c.slots, c.chunks), (4, 2));
        let b = r.bindings(&c);
        assert_eq!(b.len(), 8);
        assert_eq!(
            b[..6]
                .iter()
                .map(|b| (b.binding, b.pe, b.slot, b.offset, b.direct))
                .collect::<Vec<_>>(),
            [
                (0, 1, 0, 0, true),
                (1, 1, 0, 128 << 20, true),
                (2, 2, 1, 0, true),
                (3, 2, 1, 128 << 20, true),
                (4, 0, 2, 0, true),
                (5, 0, 2, 128 << 20, true)
            ]
        );
        assert!(b[6..].iter().all(|b| b.pe == 1 && !b.direct));
        assert_eq!(
            (r.slot_of(1), r.slot_of(2), r.slot_of(0), r.slot_of(3)),
            (0, 1, 2, NO_SLOT)
        );
        assert_eq!(r.direct_mask()[0], 0b111);
        // Nodes of 2: slots count within the node; PE 1 sees PE 0 at slot 1,
        // PE 2 (not reached) outside the span.
        let (c, r) = shape(3, 1, &[0, 1], 1 << 20, 128 << 20);
        assert_eq!((r.slot_span(), r.slot_block()), (2, (0, 2)));
        assert_eq!((r.slot_of(1), r.slot_of(0), r.slot_of(2)), (0, 1, NO_SLOT));
        assert_eq!(
            r.bindings(&c)
                .iter()
                .map(|b| (b.pe, b.slot, b.direct))
                .collect::<Vec<_>>(),
            [(1, 0, true), (0, 1, true)]
        );
        let init = r.control_init(4);
        assert_eq!(
            (
                init.slot_first,
                init.slot_span,
                init.reaches_all,
                init.direct[0]
            ),
            (0, 2, false, 0b11)
        );
        // A direct set that is no aligned block counts over the job, with
        // holes in the mask.
        let (c, r) = shape(4, 1, &[1, 2], 1 << 20, 128 << 20);
        assert_eq!(r.slot_span(), 4);
        assert_eq!((r.slot_of(1), r.slot_of(2), r.slot_of(0)), (0, 1, 3));
        assert_eq!(r.direct_mask()[0], 0b0011);
        assert!(!r.bindings(&c)[3].direct && r.bindings(&c)[3].pe == 1);
    }

    /// Padding takes at most half of the device's bindings: past that the
    /// library binds the span itself, as it always did.
    #[test]
    fn slots_pad_to_a_power_of_two_within_half_the_bindings() {
        let job = |n: u32| JobView {
            my_pe: 0,
            n_pes: n,
            direct: PeSet::all(n),
            heap_bytes: 1 << 20,
        };
        // lavapipe: 32 storage buffers per stage.
        assert_eq!(job(2).slots(32, 1), 2);
        assert_eq!(job(3).slots(32, 1), 4);
        assert_eq!(job(8).slots(32, 2), 8);
        assert_eq!(job(9).slots(32, 1), 16);
        assert_eq!(job(10).slots(32, 2), 10);
        assert_eq!(job(3).slots(32, 8), 3);
        // A GPU with room binds powers of two.
        assert_eq!(job(3).slots(1 << 20, 8), 4);
        assert_eq!(job(100).slots(1 << 20, 1), 128);
    }

    #[test]
    fn chunks_cover_the_heap() {
        let (c, r) = shape(3, 0, &[0, 1, 2], 256 << 20, 128 << 20);
        assert_eq!((c.chunk_bytes(), c.chunks), (128 << 20, 2));
        let b = r.bindings(&c);
        assert_eq!(
            b[3],
            HeapBinding {
                binding: 3,
                pe: 1,
                slot: 1,
                offset: 128 << 20,
                bytes: 128 << 20,
                direct: true,
            }
        );
        // An odd range: chunks are the largest power of two under it.
        let (c, r) = shape(2, 0, &[0, 1], 300 << 20, (128 << 20) + 12);
        assert_eq!((c.chunk_bytes(), c.chunks), (128 << 20, 3));
        assert_eq!(r.bindings(&c)[2].bytes, 44 << 20);
        // Fits in one binding: the whole heap.
        let (c, r) = shape(4, 0, &[0, 1, 2, 3], 1 << 20, u32::MAX as u64);
        assert_eq!((c.chunks, r.bindings(&c)[0].bytes), (1, 1 << 20));
        assert_eq!(r.heap_words(), 1 << 18);
    }
}
