//! The control region: the words at the start of every PE's symmetric heap that
//! the device library and the host share (errors, the abort word, the team table,
//! WORLD's sync flags).
//!
//! One definition serves both sides: the `control_struct!` invocations below
//! produce the `#[repr(C)]` + bytemuck structs the host writes, the WGSL word
//! offsets the device library reads, and a WGSL struct declaration that a test lays
//! out with naga to prove the two agree.

use std::fmt::Write as _;

macro_rules! control_struct {
    ($(#[$meta:meta])* $name:ident, $wgsl:literal, $prefix:literal { $($(#[$fmeta:meta])* $field:ident),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: u32,)*
        }

        impl $name {
            /// (field name, word offset) of every field, in declaration order.
            pub fn fields() -> Vec<(&'static str, u32)> {
                vec![$((stringify!($field), (std::mem::offset_of!($name, $field) / 4) as u32),)*]
            }

            /// The WGSL struct with the same fields (every field a `u32`).
            pub fn wgsl_struct() -> String {
                let mut s = format!("struct {} {{\n", $wgsl);
                $(s.push_str(&format!("    {}: u32,\n", stringify!($field)));)*
                s.push_str("}\n");
                s
            }

            /// WGSL constants `<PREFIX><FIELD>: u32 = <word offset>` for every field.
            pub fn wgsl_offsets() -> String {
                let mut s = String::new();
                for (f, off) in Self::fields() {
                    let _ = writeln!(s, "const {}{}: u32 = {}u;", $prefix, f.to_uppercase(), off);
                }
                s
            }

            /// Size in 32-bit words.
            pub const WORDS: u32 = (std::mem::size_of::<$name>() / 4) as u32;
        }
    };
}

control_struct!(
    /// The header at word 0 of every PE's heap.
    ControlHeader, "VksControlHeader", "VKS_CTRL_" {
        /// [`CONTROL_MAGIC`] once the host has initialised the region.
        magic,
        /// [`LAYOUT_VERSION`].
        version,
        /// This PE's number in WORLD.
        my_pe,
        /// Number of PEs in WORLD.
        n_pes,
        /// Device-raised errors: an OR of the `ERR_*` bits (the host clears it).
        error,
        /// The PE argument of the first bad access.
        error_pe,
        /// The word address of the first bad access.
        error_addr,
        /// Nonzero: the host asks every device-side wait to give up (a peer failed).
        abort,
        /// Invocations of this PE now inside a device wait past its first polls
        /// (written only where the driver caps loops: the host's wait throttle
        /// reads it, see `vkshmem_host::throttle`).
        waiting,
        /// Device waits entered past their first polls so far (wrapping): the host
        /// sees a wait that lasts when this stays put while `waiting` is nonzero.
        wait_seq,
        /// Word address (in this PE's heap) the latest such wait polls: a hint for
        /// the host, which may stop throttling as soon as its condition holds.
        wait_addr,
        /// That wait's comparison: `SHMEM_CMP_*` or `VKS_CMP_EPOCH` (6), plus 256
        /// when it compares as signed.
        wait_cond,
        /// That wait's comparison value.
        wait_value,
        /// Proxy ring tickets claimed by device code so far (wrapping): ticket
        /// `t` owns entry `t % PROXY_SLOTS` of the ring (see [`ProxyEntry`]).
        proxy_head,
        /// The old value of the host's latest atomic done by a kernel (on a
        /// heap the host does not map, `vkshmem_host::rma::amo`): low word.
        amo_lo,
        /// Its high word (64-bit atomics).
        amo_hi,
        /// Workgroups of one dispatch this device is known to run at once (set
        /// by the host at init, `DeviceInfo::resident_workgroups`): the most
        /// that may call a multi-workgroup (`_work_groups`) device collective.
        max_groups,
        /// The multi-workgroup forms' grid sync: workgroups of this PE arrived
        /// at the current one (reset to 0 by the last to arrive, which then
        /// runs the team sync that the others wait on).
        grid_count,
        /// Words of every PE's heap that device code may address (the heap's
        /// size / 4, capped at `u32::MAX`): read at run time, so that one
        /// library serves every heap size.
        heap_words,
        /// The first PE of the block this PE's slots count over (see
        /// `vkshmem_device::JobView::slot_span`): 0 where they count over the job.
        slot_first,
        /// The PEs this PE's slots count over: the job's, or its node's.
        slot_span,
        /// 1 when this PE reaches every PE of the job directly.
        reaches_all,
    }
);

control_struct!(
    /// One entry of the device-visible team table (at [`TEAM_TABLE_WORD`]).
    TeamEntry, "VksTeamEntry", "VKS_TEAM_" {
        /// 1 when the entry describes a live team this PE belongs to.
        valid,
        /// WORLD PE number of the team's PE 0.
        start,
        /// WORLD distance between consecutive team members (two's complement: may
        /// be negative).
        stride,
        /// Number of PEs in the team.
        size,
        /// This PE's number in the team.
        my_index,
        /// Syncs this PE has completed on the team (device-owned; zero at creation).
        epoch,
        /// Word address of the team's sync flags (`size` words, symmetric).
        flags,
        /// Invocations of this PE currently inside a sync on this team (misuse check).
        busy,
        /// This PE's element count in the team's `collect` in progress (device
        /// forms publish it here; peers read it between the collective's syncs).
        count,
        /// Reserved; zero.
        reserved0,
        /// Reserved; zero.
        reserved1,
        /// Reserved; zero.
        reserved2,
        /// Reserved; zero.
        reserved3,
        /// Reserved; zero.
        reserved4,
        /// Reserved; zero.
        reserved5,
        /// Reserved; zero.
        reserved6,
    }
);

control_struct!(
    /// One entry of the proxy ring (at [`PROXY_RING_WORD`]): a request that
    /// device code posts to this PE's proxy thread (`vkshmem_host::transport`)
    /// for a PE it does not reach directly.
    ///
    /// Protocol for ticket `t` (its lap `L = t & !(PROXY_SLOTS - 1)`, so
    /// every value wraps with the u32 ticket): `seq` is `L` when the entry is
    /// free for ticket `t`; device code fills the other fields and stores
    /// `L + 1` (posted) after a release fence; the proxy reads them and, for
    /// a request that answers, writes `value` (the result) and `cmp` (the
    /// status: 0 or `ERR_*` bits) and stores `L + 2`; the waiting invocation
    /// reads them and stores `L + PROXY_SLOTS` (free for ticket
    /// `t + PROXY_SLOTS`). A request that does not answer ([`PX_STORE`]) is
    /// freed by the proxy once forwarded. The proxy serves tickets in order;
    /// it frees the entries of tickets that a finished kernel claimed and
    /// never posted or never collected.
    ProxyEntry, "VksProxyEntry", "VKS_PX_" {
        /// The entry's state (see above).
        seq,
        /// `PX_*`.
        op,
        /// The target PE (a team slot for [`PX_REDUCE`]).
        pe,
        /// Word ops: the word address on `pe`. Bulk ops: the byte address on
        /// `pe` (source of a get, dest of a put); [`PX_REDUCE`]: the dest.
        addr,
        /// Bulk ops: the byte address in this PE's heap (dest of a get, source
        /// of a put); [`PX_REDUCE`]: the source.
        src,
        /// Bulk ops: bytes; [`PX_REDUCE`]: elements; word ops: the word's
        /// size, 8 for a 64-bit word (else 4 or 0: 32 bits).
        bytes,
        /// The operand (stores, atomics; [`PX_REDUCE`]: kind | op << 8); the
        /// result when answered.
        value,
        /// The compare operand of [`PX_CAS`]; the status when answered.
        cmp,
        /// [`PX_GET`], [`PX_PUT`]: elements of `bytes` bytes each (0 counts
        /// as 1: a plain copy of `bytes`); 64-bit word ops: the operand's
        /// high word.
        count,
        /// [`PX_GET`], [`PX_PUT`]: bytes between source elements (on `pe`
        /// for a get, in this PE's heap for a put); 64-bit word ops: the
        /// compare operand's high word.
        sstride,
        /// [`PX_GET`], [`PX_PUT`]: bytes between dest elements (in this PE's
        /// heap for a get, on `pe` for a put); word ops: the result's high
        /// word when answered.
        dstride,
        /// Reserved; zero.
        reserved0,
    }
);

/// Entries of the proxy ring. More than the invocations that may wait on the
/// proxy at once on a driver whose invocations advance in lockstep (lavapipe
/// runs a workgroup's invocations as SIMD lanes, so one whose entry is not
/// free would wait for a lane that cannot run): a power of two.
pub const PROXY_SLOTS: u32 = 2048;

/// Proxy op: load a word (answers it).
pub const PX_LOAD: u32 = 1;
/// Proxy op: store a word (posted: no answer).
pub const PX_STORE: u32 = 2;
/// Proxy op: atomic add, answers the old value.
pub const PX_ADD: u32 = 3;
/// Proxy op: atomic and, answers the old value.
pub const PX_AND: u32 = 4;
/// Proxy op: atomic or, answers the old value.
pub const PX_OR: u32 = 5;
/// Proxy op: atomic xor, answers the old value.
pub const PX_XOR: u32 = 6;
/// Proxy op: atomic exchange, answers the old value.
pub const PX_SWAP: u32 = 7;
/// Proxy op: compare and swap, answers the old value.
pub const PX_CAS: u32 = 8;
/// Proxy op: copy bytes from `pe` into this PE's heap, contiguous or strided
/// (`count` elements; answers when done).
pub const PX_GET: u32 = 9;
/// Proxy op: copy bytes from this PE's heap to `pe` (answers when they landed).
pub const PX_PUT: u32 = 10;
/// Proxy op: answers once every earlier request has landed at its target.
pub const PX_QUIET: u32 = 11;
/// Proxy op: this PE's share of a reduction over the team in slot `pe`
/// (answers when every member's dest holds it). With `count` = 1, the
/// reduce-scatter form: all `bytes` elements at `src` of every member
/// combined into this PE's dest only (the caller points `src` at this
/// member's block).
pub const PX_REDUCE: u32 = 12;

/// Word address of the proxy ring (after the direct-slot mask).
pub const PROXY_RING_WORD: u32 = (DIRECT_WORD + DIRECT_WORDS).next_multiple_of(ProxyEntry::WORDS);

/// `"VKSH"`, little-endian.
pub const CONTROL_MAGIC: u32 = u32::from_le_bytes(*b"VKSH");
/// Version of this layout; bumped when it changes.
pub const LAYOUT_VERSION: u32 = 7;
/// Most teams a PE can be part of at once (the device table's length).
pub const MAX_TEAMS: u32 = 64;
/// Team handle of WORLD (entry 0 of the table).
pub const TEAM_WORLD: u32 = 0;
/// Word address of the team table.
pub const TEAM_TABLE_WORD: u32 = ControlHeader::WORDS;
/// Team handle of SHARED (entry 1): the PEs whose heaps this PE can load and store.
pub const TEAM_SHARED: u32 = 1;
/// Team handle of NODE (entry 2): the PEs on this node (every PE of the job).
pub const TEAM_NODE: u32 = 2;
/// The handle of no team (`SHMEM_TEAM_INVALID`).
pub const TEAM_INVALID: u32 = u32::MAX;
/// Word address of the direct-slot mask: bit `s % 32` of word `s / 32` is
/// set when this PE reaches the heap in its slot `s` directly (see
/// `vkshmem_device::JobView::bindings`; the other slots' bindings are padding).
/// Read at run time, so that one library serves every mix of direct and
/// proxied peers.
pub const DIRECT_WORD: u32 = TEAM_TABLE_WORD + MAX_TEAMS * TeamEntry::WORDS;
/// Words of the direct-slot mask: a bit for each of the most PEs a
/// `PeSet` holds (1024).
pub const DIRECT_WORDS: u32 = 32;
/// Word address of the teams' sync flags: entry `t` of the team table owns the
/// `n_pes` words from [`team_flags_word`]`(t, n_pes)` (a team uses the first
/// `size` of them). Symmetric: a team has the same entry on every member.
/// Every area whose size depends on the PE count comes after the fixed ones,
/// so that the fixed ones' addresses are constants in every job's library.
pub const TEAM_FLAGS_WORD: u32 = BATCH_WORD + BATCH_CALLS * BATCH_ENTRY_WORDS;
/// Word address of WORLD's sync flags (one word per PE).
pub const WORLD_FLAGS_WORD: u32 = TEAM_FLAGS_WORD;

/// Word address of the sync flags of team-table entry `slot`.
pub fn team_flags_word(slot: u32, n_pes: u32) -> u32 {
    TEAM_FLAGS_WORD + slot * n_pes
}

/// Word address of team-table entry `slot`.
pub fn team_entry_word(slot: u32) -> u32 {
    TEAM_TABLE_WORD + slot * TeamEntry::WORDS
}

/// Device error bit: a heap access named an address outside the heap.
pub const ERR_BAD_ADDRESS: u32 = 1;
/// Device error bit: a PE number outside WORLD.
pub const ERR_BAD_PE: u32 = 2;
/// Device error bit: an invalid team handle.
pub const ERR_BAD_TEAM: u32 = 4;
/// Device error bit: two invocations of one PE were inside a sync of the same team
/// at once (a per-thread collective called by more than one invocation).
pub const ERR_CONCURRENT_SYNC: u32 = 8;
/// Device error bit: a wait gave up because the host set the abort word.
pub const ERR_ABORTED: u32 = 16;

/// Device error bit: the driver cut the kernel's loops short (lavapipe stops every
/// loop of an invocation after 65535 iterations in total): a wait ended before its
/// condition held, or the check at the end of the entry point found the cap
/// reached, so the user's own loops may have been cut too.
pub const ERR_LOOPS_CUT: u32 = 32;

/// Device error bit: an argument of a device collective is invalid (a zero
/// stride).
pub const ERR_BAD_ARGUMENT: u32 = 64;

/// Device error bit: device code touched the heap of a PE it reaches only
/// through the staged transport (another device; `VKSHMEM_TRANSPORT=staged`)
/// while this PE runs no proxy (its heap is not host-mapped), or a bulk
/// request through the proxy named such a PE.
pub const ERR_UNREACHABLE: u32 = 128;

/// Describes device error bits in words.
pub fn describe_errors(bits: u32) -> Vec<&'static str> {
    let all = [
        (ERR_BAD_ADDRESS, "a heap access outside the symmetric heap"),
        (ERR_BAD_PE, "a PE number outside the job"),
        (
            ERR_UNREACHABLE,
            "an access to the heap of a PE on another device that device code cannot make: no proxy carries it (this PE's heap is not host-mapped), or the call has no form across devices (the device scans: use the host's)",
        ),
        (ERR_BAD_TEAM, "an invalid team handle"),
        (
            ERR_CONCURRENT_SYNC,
            "more than one invocation of a PE inside the same team's sync at once \
             (per-thread collectives are called by one invocation per PE)",
        ),
        (ERR_ABORTED, "a wait gave up because the job is aborting"),
        (
            ERR_BAD_ARGUMENT,
            "an invalid argument to a device collective (a zero stride)",
        ),
        (
            ERR_LOOPS_CUT,
            "the driver cut the kernel's loops short, so its results are not to be \
             trusted (lavapipe runs at most 65535 loop iterations per invocation: \
             split long loops and waits over several dispatches)",
        ),
    ];
    all.iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, s)| *s)
        .collect()
}

/// The most bytes a per-thread device reduction sends in its one-sync form:
/// each member pushes its source into every member's landing slot, then one
/// team sync, then each combines its own slots (no second sync). Larger
/// reductions, and teams that span devices, take the two-sync form.
pub const LL_BYTES: u32 = 128;
/// Words of one landing slot: [`LL_BYTES`] at the source's offset in its
/// first word (so whole words are copied), hence one word more.
pub const LL_SLOT_WORDS: u32 = LL_BYTES / 4 + 1;
// A slot holds LL_BYTES starting at any byte of its first word.
const _: () = assert!(LL_SLOT_WORDS * 4 >= LL_BYTES + 3);

/// Word address of the landing slots of the one-sync reductions (computed
/// alike by `vks_ll_slot` in `shaders/collectives.wgsl`): for team-table
/// entry `t`, epoch parity `p` and member index `i`, the slot at
/// [`ll_slot_word`]. Written only by member `i` (before it announces the
/// epoch), read only by the owner (after it saw every member announce it).
/// A slot is rewritten two epochs later, once the owner has announced the
/// epoch between (so it finished reading).
pub fn ll_word(n_pes: u32) -> u32 {
    host_counts_word(n_pes) + n_pes
}

/// Word address of member `i`'s landing slot for team-table entry `slot`, epoch
/// parity `parity` (see [`ll_word`]).
pub fn ll_slot_word(n_pes: u32, slot: u32, parity: u32, i: u32) -> u32 {
    ll_word(n_pes) + ((slot * 2 + parity) * n_pes + i) * LL_SLOT_WORDS
}

/// Calls one dispatch of a batched queue kernel runs at most (see
/// [`crate::queue::QueueArgs::batch`]): the batch area's entries.
pub const BATCH_CALLS: u32 = 64;
/// Where the driver caps loop iterations per invocation (llvmpipe), the
/// calls of a batch share that budget: batches stop at this many.
pub const CAPPED_BATCH_CALLS: u32 = 16;

/// Word address of the queue's batch area: the arguments of the calls of a
/// batched queue kernel, [`BATCH_CALLS`] entries of `QueueArgs`, written by
/// this PE's own recorded commands (vkCmdUpdateBuffer) just before the
/// dispatch that reads them, in queue order. Only this PE touches it.
pub const BATCH_WORD: u32 = PROXY_RING_WORD + PROXY_SLOTS * ProxyEntry::WORDS;

/// Words of one batch entry (`QueueArgs`).
pub const BATCH_ENTRY_WORDS: u32 = 8;

// The fixed areas follow one another without overlap.
const _: () = assert!(PROXY_RING_WORD >= DIRECT_WORD + DIRECT_WORDS);
const _: () = assert!(BATCH_WORD >= PROXY_RING_WORD + PROXY_SLOTS * ProxyEntry::WORDS);
const _: () = assert!(TEAM_FLAGS_WORD >= BATCH_WORD + BATCH_CALLS * BATCH_ENTRY_WORDS);

/// Bytes of the control region for a job of `n_pes` PEs.
pub fn control_bytes(n_pes: u32) -> u64 {
    (ll_word(n_pes) as u64 + (MAX_TEAMS * 2 * n_pes * LL_SLOT_WORDS) as u64) * 4
}

/// Word address of `n_pes` words that only this PE's host and kernels use: the
/// per-member byte counts of a host-initiated `collect` in progress.
pub fn host_counts_word(n_pes: u32) -> u32 {
    TEAM_FLAGS_WORD + MAX_TEAMS * n_pes
}

/// What a PE's control region starts with: the job's values that device code
/// reads at run time (the library's text depends on none of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlInit {
    /// This PE's number.
    pub my_pe: u32,
    /// PEs in the job.
    pub n_pes: u32,
    /// [`ControlHeader::max_groups`].
    pub max_groups: u32,
    /// [`ControlHeader::heap_words`].
    pub heap_words: u32,
    /// [`ControlHeader::slot_first`].
    pub slot_first: u32,
    /// [`ControlHeader::slot_span`].
    pub slot_span: u32,
    /// [`ControlHeader::reaches_all`].
    pub reaches_all: bool,
    /// The direct-slot mask ([`DIRECT_WORD`]).
    pub direct: [u32; DIRECT_WORDS as usize],
}

/// The control region's initial contents under `init`, as words.
pub fn initial_control(init: &ControlInit) -> Vec<u32> {
    let n_pes = init.n_pes;
    let mut words = vec![0u32; (control_bytes(n_pes) / 4) as usize];
    let header = ControlHeader {
        magic: CONTROL_MAGIC,
        version: LAYOUT_VERSION,
        my_pe: init.my_pe,
        n_pes,
        max_groups: init.max_groups,
        heap_words: init.heap_words,
        slot_first: init.slot_first,
        slot_span: init.slot_span,
        reaches_all: u32::from(init.reaches_all),
        ..Default::default()
    };
    words[..ControlHeader::WORDS as usize]
        .copy_from_slice(bytemuck::cast_slice(bytemuck::bytes_of(&header)));
    let world = TeamEntry {
        valid: 1,
        start: 0,
        stride: 1,
        size: n_pes,
        my_index: init.my_pe,
        epoch: 0,
        flags: WORLD_FLAGS_WORD,
        ..Default::default()
    };
    let at = TEAM_TABLE_WORD as usize;
    words[at..at + TeamEntry::WORDS as usize]
        .copy_from_slice(bytemuck::cast_slice(bytemuck::bytes_of(&world)));
    let at = DIRECT_WORD as usize;
    words[at..at + DIRECT_WORDS as usize].copy_from_slice(&init.direct);
    words
}

/// The WGSL declarations of the layout: structs, word offsets, constants.
pub fn wgsl() -> String {
    let mut s = String::new();
    s.push_str(&ControlHeader::wgsl_offsets());
    s.push_str(&TeamEntry::wgsl_offsets());
    s.push_str(&ProxyEntry::wgsl_offsets());
    let _ = writeln!(s, "const VKS_PX_WORDS: u32 = {}u;", ProxyEntry::WORDS);
    let _ = writeln!(s, "const VKS_PX_SLOTS: u32 = {PROXY_SLOTS}u;");
    let _ = writeln!(s, "const VKS_PX_RING: u32 = {PROXY_RING_WORD}u;");
    let _ = writeln!(s, "const VKS_BATCH: u32 = {BATCH_WORD}u;");
    let _ = writeln!(s, "const VKS_DIRECT: u32 = {DIRECT_WORD}u;");
    let _ = writeln!(s, "const VKS_CONTROL_MAGIC: u32 = {CONTROL_MAGIC}u;");
    for (name, v) in [
        ("LOAD", PX_LOAD),
        ("STORE", PX_STORE),
        ("ADD", PX_ADD),
        ("AND", PX_AND),
        ("OR", PX_OR),
        ("XOR", PX_XOR),
        ("SWAP", PX_SWAP),
        ("CAS", PX_CAS),
        ("GET", PX_GET),
        ("PUT", PX_PUT),
        ("QUIET", PX_QUIET),
        ("REDUCE", PX_REDUCE),
    ] {
        let _ = writeln!(s, "const VKS_PX_{name}: u32 = {v}u;");
    }
    let _ = writeln!(s, "const VKS_TEAM_WORDS: u32 = {}u;", TeamEntry::WORDS);
    let _ = writeln!(s, "const VKS_MAX_TEAMS: u32 = {MAX_TEAMS}u;");
    let _ = writeln!(s, "const VKS_TEAM_TABLE: u32 = {TEAM_TABLE_WORD}u;");
    let _ = writeln!(s, "const VKS_WORLD_FLAGS: u32 = {WORLD_FLAGS_WORD}u;");
    let _ = writeln!(s, "const VKS_LL_BYTES: u32 = {LL_BYTES}u;");
    let _ = writeln!(s, "const VKS_LL_SLOT_WORDS: u32 = {LL_SLOT_WORDS}u;");
    let _ = writeln!(
        s,
        "const VKS_BATCH_ENTRY_WORDS: u32 = {BATCH_ENTRY_WORDS}u;"
    );
    let _ = writeln!(s, "const SHMEM_TEAM_WORLD: u32 = {TEAM_WORLD}u;");
    let _ = writeln!(s, "const SHMEM_TEAM_SHARED: u32 = {TEAM_SHARED}u;");
    let _ = writeln!(s, "const SHMEM_TEAM_NODE: u32 = {TEAM_NODE}u;");
    let _ = writeln!(s, "const SHMEM_TEAM_INVALID: u32 = {TEAM_INVALID}u;");
    for (name, v) in [
        ("BAD_ADDRESS", ERR_BAD_ADDRESS),
        ("BAD_PE", ERR_BAD_PE),
        ("BAD_TEAM", ERR_BAD_TEAM),
        ("CONCURRENT_SYNC", ERR_CONCURRENT_SYNC),
        ("ABORTED", ERR_ABORTED),
        ("LOOPS_CUT", ERR_LOOPS_CUT),
        ("BAD_ARGUMENT", ERR_BAD_ARGUMENT),
        ("UNREACHABLE", ERR_UNREACHABLE),
    ] {
        let _ = writeln!(s, "const VKS_ERR_{name}: u32 = {v}u;");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lays out the WGSL struct with naga and compares every member offset with the
    /// Rust struct's.
    fn check<T>(wgsl: String, name: &str, fields: Vec<(&str, u32)>) {
        let module = naga::front::wgsl::parse_str(&wgsl).expect("struct parses");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).unwrap();
        let (handle, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .expect("struct present");
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("not a struct")
        };
        assert_eq!(*span as usize, std::mem::size_of::<T>(), "size of {name}");
        assert_eq!(layouter[handle].size as usize, std::mem::size_of::<T>());
        assert_eq!(members.len(), fields.len());
        for (m, (f, word)) in members.iter().zip(fields) {
            assert_eq!(m.name.as_deref(), Some(f));
            assert_eq!(m.offset, word * 4, "offset of {name}.{f}");
        }
    }

    #[test]
    fn wgsl_structs_match_rust_layouts() {
        check::<ControlHeader>(
            ControlHeader::wgsl_struct(),
            "VksControlHeader",
            ControlHeader::fields(),
        );
        check::<TeamEntry>(
            TeamEntry::wgsl_struct(),
            "VksTeamEntry",
            TeamEntry::fields(),
        );
        check::<ProxyEntry>(
            ProxyEntry::wgsl_struct(),
            "VksProxyEntry",
            ProxyEntry::fields(),
        );
    }

    #[test]
    fn initial_control_has_world() {
        let mut direct = [0; DIRECT_WORDS as usize];
        direct[1] = 0x8000_0001;
        let w = initial_control(&ControlInit {
            my_pe: 2,
            n_pes: 5,
            max_groups: 3,
            heap_words: 1 << 20,
            slot_first: 0,
            slot_span: 5,
            reaches_all: false,
            direct,
        });
        assert_eq!(w.len() as u64 * 4, control_bytes(5));
        assert_eq!(w[0], CONTROL_MAGIC);
        assert_eq!(w[2], 2);
        assert_eq!(w[3], 5);
        assert_eq!(w[(std::mem::offset_of!(ControlHeader, max_groups) / 4)], 3);
        let e = TEAM_TABLE_WORD as usize;
        assert_eq!(&w[e..e + 9], &[1, 0, 1, 5, 2, 0, WORLD_FLAGS_WORD, 0, 0]);
        assert!(w[WORLD_FLAGS_WORD as usize..].iter().all(|&x| x == 0));
        let h = |f: &str| w[ControlHeader::fields().iter().find(|x| x.0 == f).unwrap().1 as usize];
        assert_eq!(
            (h("heap_words"), h("slot_span"), h("reaches_all")),
            (1 << 20, 5, 0)
        );
        assert_eq!(w[DIRECT_WORD as usize + 1], 0x8000_0001);
    }

    #[test]
    fn landing_slots_and_batch_area_are_disjoint_and_inside() {
        for n in [1, 2, 3, 8, 64] {
            let first = ll_slot_word(n, 0, 0, 0);
            assert!(host_counts_word(n) >= team_flags_word(MAX_TEAMS - 1, n) + n);
            assert!(first >= host_counts_word(n) + n);
            let last = ll_slot_word(n, MAX_TEAMS - 1, 1, n - 1) + LL_SLOT_WORDS;
            assert_eq!(last as u64 * 4, control_bytes(n));
            // Slots do not overlap: consecutive members, parities and teams.
            assert_eq!(ll_slot_word(n, 0, 0, 1) - first, LL_SLOT_WORDS);
            assert_eq!(ll_slot_word(n, 0, 1, 0) - first, n * LL_SLOT_WORDS);
            assert_eq!(ll_slot_word(n, 1, 0, 0) - first, 2 * n * LL_SLOT_WORDS);
        }
    }

    #[test]
    fn describes_every_bit() {
        assert_eq!(describe_errors(0x7f).len(), 7);
        assert!(describe_errors(0).is_empty());
    }
}
