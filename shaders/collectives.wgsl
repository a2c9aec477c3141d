// vkshmem device library: the collectives' data movement (fixed part).
//
// Appended after vkshmem.wgsl. Every routine here moves or combines data only; the
// callers put the synchronisation around it: the host forms sync the team's PEs
// through the bootstrap before and after a dispatch of many workgroups, the
// per-thread and work_group forms (generated, see device/src/collectives/device_api.rs) call
// vks_team_sync before and after (only after, where the move pushes only this
// PE's own data: vks_pushes_only), the multi-workgroup forms vks_grid_sync
// before and after.
//
// Addresses here are BYTE addresses in the symmetric heap (u32: the first 4 GiB).
// Data moves use the direct accessors (vks_d_*): a PE reached through the
// proxy gets one bulk request instead (vks_copy_bytes; reductions: PX_REDUCE).
//
// Work is spread over `nth` cooperating invocations of this PE, `tid` being this
// one's number: the whole device for host forms, a workgroup for the work_group
// forms, one invocation for the per-thread forms. Every heap word written is
// written by exactly one invocation of one PE: whole words with a plain store,
// words shared with neighbouring data (sub-word types, unaligned edges) with an
// atomic AND then OR of just their own bytes, so neighbours written by other PEs
// at the same time stay intact.

// A team as the collectives see it: member i is WORLD PE start + i * stride.
struct VksTeam {
    start: u32,
    stride: u32, // i32 bits
    size: u32,
    me: u32, // this PE's number in the team
}

fn vks_team_pe(t: VksTeam, i: u32) -> u32 {
    return bitcast<u32>(bitcast<i32>(t.start) + bitcast<i32>(i) * bitcast<i32>(t.stride));
}

// The team in slot `team` of this PE's table (vks_team_ok first).
fn vks_team_of(team: u32) -> VksTeam {
    return VksTeam(
        vks_team_field(team, VKS_TEAM_START),
        vks_team_field(team, VKS_TEAM_STRIDE),
        vks_team_field(team, VKS_TEAM_SIZE),
        vks_team_field(team, VKS_TEAM_MY_INDEX),
    );
}

// Mask of the bytes [lo, hi) of a word (0 <= lo < hi <= 4).
fn vks_byte_mask(lo: u32, hi: u32) -> u32 {
    let top = select((1u << (hi * 8u)) - 1u, 0xffffffffu, hi >= 4u);
    return top & ~((1u << (lo * 8u)) - 1u);
}

// Writes the bytes of `v` selected by `mask` into word `w` of PE `pe`.
fn vks_store_masked(pe: u32, w: u32, v: u32, mask: u32) {
    if mask == 0xffffffffu {
        vks_d_plain_store(pe, w, v);
    } else {
        // Clear only the bits that change to 0, then set the ones: a byte
        // rewritten with its own value (an in-place broadcast at the root) never
        // reads as anything else to a peer pulling it at the same time.
        vks_d_fetch_and(pe, w, ~mask | v);
        vks_d_fetch_or(pe, w, v & mask);
    }
}

// The 4 bytes at byte address `b` of PE `pe` (any alignment) in the low bytes,
// reading only the words that hold bytes [b, b + len) (len 1..=4; the bytes
// above `len` are unspecified: callers mask them).
fn vks_load_bytes(pe: u32, b: u32, len: u32) -> u32 {
    let sh = (b & 3u) * 8u;
    var v = vks_d_plain_load(pe, b >> 2u) >> sh;
    if sh != 0u && (b & 3u) + len > 4u {
        v |= vks_d_plain_load(pe, (b >> 2u) + 1u) << (32u - sh);
    }
    return v;
}

// Destination word `w` of a copy of `n` bytes from (spe, s) to (dpe, d).
fn vks_copy_word(dpe: u32, d: u32, spe: u32, s: u32, n: u32, w: u32) {
    let lo = max(d, w * 4u);
    let hi = min(d + n, w * 4u + 4u);
    let v = vks_load_bytes(spe, lo - d + s, hi - lo) << ((lo & 3u) * 8u);
    vks_store_masked(dpe, w, v, vks_byte_mask(lo & 3u, hi - w * 4u));
}

// Copies `n` bytes from (spe, s) to (dpe, d), spread over the invocations.
// A copy from a PE reached through the proxy into this PE is one bulk get,
// made by invocation `tid` 0 (which returns when the bytes landed). A copy
// into another PE (a push) must reach it directly.
fn vks_copy_bytes(dpe: u32, d: u32, spe: u32, s: u32, n: u32, tid: u32, nth: u32) {
    if n == 0u {
        return;
    }
    if (dpe == VKS_SELF || dpe == vks_my_pe()) && !vks_is_direct(spe) {
        if tid == 0u {
            vks_px_get(d, spe, s, n);
        }
        return;
    }
    if (dpe == VKS_SELF || dpe == vks_my_pe()) && vks_copy_wide(VKS_SELF, d, spe, s, n, false, tid, nth) {
        return;
    }
    vks_copy_words(dpe, d, spe, s, n, tid, nth);
}

// A copy of `n` bytes from (spe, s) to (dpe, d) between objects equally placed
// in their 16 bytes: the middle as vec4s, a pull into this PE (vks_copy_vec4)
// or, with `push`, a push of this PE's bytes (vks_push_vec4; spe is this PE),
// the head and tail word by word. False, with nothing copied, where the
// objects are placed otherwise, `n` is below 64 or the kernel lacks the vec4
// view. `push` is a constant at every call site, so each inlined copy holds
// one vec4 loop.
fn vks_copy_wide(dpe: u32, d: u32, spe: u32, s: u32, n: u32, push: bool, tid: u32, nth: u32) -> bool {
    if (d & 15u) != (s & 15u) || n < 64u {
        return false;
    }
    let head = (16u - (d & 15u)) & 15u;
    let d4 = (d + head) >> 4u;
    let s4 = (s + head) >> 4u;
    let n4 = (n - head) >> 4u;
    var wide: bool;
    if push {
        wide = vks_push_vec4(dpe, d4, s4, n4, tid, nth);
    } else {
        wide = vks_copy_vec4(d4, spe, s4, n4, tid, nth);
    }
    if wide {
        vks_copy_ends(dpe, d, spe, s, n, tid, nth);
    }
    return wide;
}

// vks_copy_bytes word by word (whole words plain, shared ones masked).
fn vks_copy_words(dpe: u32, d: u32, spe: u32, s: u32, n: u32, tid: u32, nth: u32) {
    if n == 0u {
        return;
    }
    let w0 = d >> 2u;
    let words = ((d + n - 1u) >> 2u) - w0 + 1u;
    for (var i = tid; i < words; i += nth) {
        vks_copy_word(dpe, d, spe, s, n, w0 + i);
    }
}

// Whether the members of `t` can push `n` bytes from `s` into `blocks`
// consecutive places of `n` bytes from `d` on every member: every PE of the
// job is a member (vks_push_all_vec4 stores into all of them) and reached
// directly with the vec4 view (vks_push_all_ok: every kernel that names a
// broadcast, fcollect or collect has it, library::uses_vec4), each place as
// far off 16-byte alignment as the source, the objects inside the heaps.
// Alike on every member given the same places (job-wide facts, agreed
// arguments, symmetric offsets), so all push or all pull where that matters
// (broadcast, collect; vks_push_own asks for its own place only, and pushes
// either way).
fn vks_push_fits(t: VksTeam, d: u32, s: u32, n: u32, blocks: u32) -> bool {
    // Bytes a u32 address reaches (a heap of 4 GiB or more has more words).
    let heap = select(vks_heap_words() * 4u, 0xfffffffcu, vks_heap_words() >= 0x40000000u);
    return vks_push_all_ok() && t.size == vks_n_pes() && n >= 64u
        && (d & 15u) == (s & 15u) && (blocks == 1u || (n & 15u) == 0u)
        && s <= heap && n <= heap - s && d <= heap && n <= (heap - d) / blocks;
}

// The whole vec4s of `n` bytes from `s` pushed from PE `spe` into every
// member's place `d` (vks_push_fits), share `part` of `parts` of them; then
// this PE's own place's ends (vks_copy_ends).
fn vks_push_share(d: u32, spe: u32, s: u32, n: u32, part: u32, parts: u32, tid: u32, nth: u32) {
    let head = (16u - (d & 15u)) & 15u;
    let sh = vks_share((n - head) >> 4u, parts, part);
    // vks_push_fits checked what vks_push_all_vec4 refuses: a refusal here
    // would leave holes in every dest, so it is raised, not ignored.
    if sh.y > sh.x && !vks_push_all_vec4(spe, ((d + head) >> 4u) + sh.x, ((s + head) >> 4u) + sh.x, sh.y - sh.x, tid, nth) && tid == 0u {
        vks_raise(VKS_ERR_BAD_ARGUMENT, spe, d);
    }
    vks_copy_ends(VKS_SELF, d, spe, s, n, tid, nth);
}

// Member `j`'s block (`n` bytes from `s` on its PE `pe`) into place `d` of
// every member (vks_push_fits): pushed whole by member j, each member pulling
// its own place's ends.
fn vks_push_block(t: VksTeam, j: u32, d: u32, pe: u32, s: u32, n: u32, tid: u32, nth: u32) {
    if j == t.me {
        vks_push_share(d, VKS_SELF, s, n, 0u, 1u, tid, nth);
    } else {
        vks_copy_ends(VKS_SELF, d, pe, s, n, tid, nth);
    }
}

// The bytes of a copy of `n` bytes from (spe, s) to (dpe, d) that a vec4 loop
// leaves out: the head before d's first 16-byte boundary and the tail past
// its last whole vec4, word by word (masked where shared).
fn vks_copy_ends(dpe: u32, d: u32, spe: u32, s: u32, n: u32, tid: u32, nth: u32) {
    let head = (16u - (d & 15u)) & 15u;
    let done = head + ((n - head) & ~15u);
    vks_copy_words(dpe, d, spe, s, head, tid, nth);
    vks_copy_words(dpe, d + done, spe, s + done, n - done, tid, nth);
}

// ---- pushes of this PE's own data (the one-sync device forms) ----
// A device form whose every member only reads its own source and writes
// other members' dests needs no opening sync: OpenSHMEM (and ishmem, and
// NVSHMEM's device collectives) leave the dests' readiness to the caller,
// and the closing sync orders every push before any member returns. The
// queue's collectives keep the opening sync (a stream promises more: a
// member's next command may still read the dest a faster peer would
// overwrite).

// Whether the moves of the device forms of fcollect, alltoall and alltoalls
// on (valid) team `team` push only this PE's own data: every member reached
// directly (a job-wide fact, alike on every member).
fn vks_pushes_only(team: u32) -> bool {
    return !vks_team_spans(vks_team_of(team));
}

// `n` bytes from this PE's `s` into PE `dpe`'s `d` (reached directly): the
// whole vec4s in one loop where both are equally placed in their 16 bytes
// and the kernel has the vec4 view (vks_push_vec4), the rest word by word.
fn vks_copy_out(dpe: u32, d: u32, s: u32, n: u32, tid: u32, nth: u32) {
    if !vks_copy_wide(dpe, d, VKS_SELF, s, n, true, tid, nth) {
        vks_copy_words(dpe, d, VKS_SELF, s, n, tid, nth);
    }
}

// This PE's `n` bytes from `s` into place `d` of every member of `t` (each
// reached directly), this PE's own place last and the others from the next
// member on (so members start on different peers): the whole vec4s in one
// loop over every PE's heap where vks_push_fits (each vec4 read once), else
// member by member (vks_copy_out).
fn vks_push_own(t: VksTeam, d: u32, s: u32, n: u32, tid: u32, nth: u32) {
    let head = (16u - (d & 15u)) & 15u;
    let all = vks_push_fits(t, d, s, n, 1u)
        && vks_push_all_vec4(VKS_SELF, (d + head) >> 4u, (s + head) >> 4u, (n - head) >> 4u, tid, nth);
    for (var k = 1u; k <= t.size; k++) {
        let pe = vks_team_pe(t, (t.me + k) % t.size);
        if all {
            vks_copy_ends(pe, d, VKS_SELF, s, n, tid, nth);
        } else {
            vks_copy_out(pe, d, s, n, tid, nth);
        }
    }
}

// broadcastmem: this PE's `dest` gets `n` bytes of the root's `source`: with
// `push` (the device forms: every member runs the same move between the same
// syncs), each member pushes its share of the root's source into every
// member's dest where vks_push_fits (the source read once: 3n bytes moved on 2
// PEs where a pull moves 4n), else each pulls (the host's generic kernels,
// which one process may run as each member in turn). The root copies too
// unless `skip_root` (the deprecated active-set form leaves the root's dest
// alone).
fn vks_broadcast_move(t: VksTeam, d: u32, s: u32, n: u32, root: u32, skip_root: bool, push: bool, tid: u32, nth: u32) {
    if push && !skip_root && vks_push_fits(t, d, s, n, 1u) {
        vks_push_share(d, vks_team_pe(t, root), s, n, t.me, t.size, tid, nth);
        return;
    }
    if skip_root && t.me == root {
        return;
    }
    vks_copy_bytes(VKS_SELF, d, vks_team_pe(t, root), s, n, tid, nth);
}

// fcollectmem: this PE's dest gets every member's `n` source bytes, in team
// order: with `push` (the device forms) and every member reached directly,
// each member pushes its own source into its place in every member's dest
// (vks_push_own: nothing read but this PE's source, so the device forms
// need no opening sync, vks_pushes_only), else each pulls (the host's
// generic kernels, which one process may run as each member in turn, and
// teams that span devices).
fn vks_fcollect_move(t: VksTeam, d: u32, s: u32, n: u32, push: bool, tid: u32, nth: u32) {
    if push && !vks_team_spans(t) {
        vks_push_own(t, d + t.me * n, s, n, tid, nth);
        return;
    }
    for (var j = 0u; j < t.size; j++) {
        vks_copy_bytes(VKS_SELF, d + j * n, vks_team_pe(t, j), s, n, tid, nth);
    }
}

// collectmem: member j contributes counts[j] bytes; `counts` is the word address
// (in this PE's heap) of the members' byte counts, in team order.
fn vks_collect_move(t: VksTeam, d: u32, s: u32, counts: u32, tid: u32, nth: u32) {
    var off = 0u;
    for (var j = 0u; j < t.size; j++) {
        let n = vks_d_plain_load(VKS_SELF, counts + j);
        vks_copy_bytes(VKS_SELF, d + off, vks_team_pe(t, j), s, n, tid, nth);
        off += n;
    }
}

// alltoallmem: block j of this PE's dest gets block `me` of member j's source
// (blocks of `n` bytes). With `push` (the device forms) and every member
// reached directly, each member pushes its blocks (from the next member on,
// its own last), else each pulls.
fn vks_alltoall_move(t: VksTeam, d: u32, s: u32, n: u32, push: bool, tid: u32, nth: u32) {
    if push && !vks_team_spans(t) {
        for (var k = 1u; k <= t.size; k++) {
            let j = (t.me + k) % t.size;
            vks_copy_out(vks_team_pe(t, j), d + t.me * n, s + j * n, n, tid, nth);
        }
        return;
    }
    for (var j = 0u; j < t.size; j++) {
        vks_copy_bytes(VKS_SELF, d + j * n, vks_team_pe(t, j), s + t.me * n, n, tid, nth);
    }
}

// alltoalls: element k of block j (at dest + (j * nelems + k) * dst * es) gets
// element k of member j's block `me` (at source + (me * nelems + k) * sst * es);
// elements of `es` bytes, strides in elements. With `push` and every member
// reached directly, each member stores its elements into the others' dests
// (as alltoall), else each pulls.
fn vks_alltoalls_move(t: VksTeam, d: u32, s: u32, nelems: u32, es: u32, dst: u32, sst: u32, push: bool, tid: u32, nth: u32) {
    if dst == 1u && sst == 1u {
        // Unit strides: an alltoall of nelems * es bytes (its bulk copies).
        vks_alltoall_move(t, d, s, nelems * es, push, tid, nth);
        return;
    }
    let out = push && !vks_team_spans(t);
    let total = t.size * nelems;
    for (var i = tid; i < total; i += nth) {
        let j = i / nelems;
        let k = i % nelems;
        let pe = vks_team_pe(t, j);
        if !out && !vks_is_direct(pe) {
            continue;
        }
        // Pushed: element k of this PE's block j into block `me` of member
        // j's dest; pulled: member j's block `me` into this PE's block j.
        let db = d + (select(j, t.me, out) * nelems + k) * dst * es;
        let sb = s + (select(t.me, j, out) * nelems + k) * sst * es;
        vks_copy_bytes(select(VKS_SELF, pe, out), db, select(pe, VKS_SELF, out), sb, es, 0u, 1u);
    }
    // A member reached through the proxy: one strided get of its block.
    if tid == 0u && nelems > 0u && !out {
        for (var j = 0u; j < t.size; j++) {
            let pe = vks_team_pe(t, j);
            if !vks_is_direct(pe) {
                vks_px_iget(d + j * nelems * dst * es, dst * es, pe, s + t.me * nelems * sst * es, sst * es, es, nelems);
            }
        }
    }
}

// gathermem (UCC gather, fixed counts): the root's dest gets every member's
// `n` source bytes in team order (the root pulls; the others move nothing).
fn vks_gather_move(t: VksTeam, d: u32, s: u32, n: u32, root: u32, tid: u32, nth: u32) {
    if t.me == root {
        for (var j = 0u; j < t.size; j++) {
            vks_copy_bytes(VKS_SELF, d + j * n, vks_team_pe(t, j), s, n, tid, nth);
        }
    }
}

// scattermem (UCC scatter, fixed counts): this member's dest gets block `me`
// (`n` bytes) of the root's source.
fn vks_scatter_move(t: VksTeam, d: u32, s: u32, n: u32, root: u32, tid: u32, nth: u32) {
    vks_copy_bytes(VKS_SELF, d, vks_team_pe(t, root), s + t.me * n, n, tid, nth);
}

// The share of `items` work items that member `me` of `size` takes in a
// reduction: [first, end).
fn vks_share(items: u32, size: u32, me: u32) -> vec2<u32> {
    let per = (items + size - 1u) / size;
    let first = min(me * per, items);
    return vec2<u32>(first, min(first + per, items));
}

// ---- device-initiated forms: what runs between the syncs ----

// collectmem with the counts published in each member's team entry (device
// forms): member j's count is the `count` word of the same team slot on PE j.
// With `push`, a block that vks_push_fits its place is pushed by its member
// into every member's dest (each source read once), the others pulled; every
// member reads the same counts, so all decide alike. (Without: each member
// pulls, as where a member may find its own dest too small and skip the move
// while the others would push into it.)
fn vks_collect_move_team(t: VksTeam, team: u32, d: u32, s: u32, push: bool, tid: u32, nth: u32) {
    var off = 0u;
    let at = vks_team_base(team) + VKS_TEAM_COUNT;
    for (var j = 0u; j < t.size; j++) {
        let pe = vks_team_pe(t, j);
        let n = vks_relaxed_load(pe, at);
        if push && vks_push_fits(t, d + off, s, n, 1u) {
            vks_push_block(t, j, d + off, pe, s, n, tid, nth);
        } else {
            vks_copy_bytes(VKS_SELF, d + off, pe, s, n, tid, nth);
        }
        off += n;
    }
}

// ---- the one-sync form of small per-thread reductions ----
// Each member pushes its source into its landing slot on every member (the
// slots of the epoch the next sync announces), syncs once, and combines its own
// slots into its dest: no second sync, as nobody reads its source or writes its
// dest. Slots alternate by epoch parity: a slot is rewritten two epochs later,
// after its owner announced the epoch between, which it does only once it
// finished combining (layout::ll_word).

// Word address of member i's landing slot of (valid) team `team`, parity `parity`.
fn vks_ll_slot(team: u32, parity: u32, i: u32) -> u32 {
    let n = vks_n_pes();
    let slot = (vks_team_field(team, VKS_TEAM_FLAGS) - VKS_WORLD_FLAGS) / n;
    // layout::ll_word: after the teams' flags and the host's counts.
    let ll = VKS_WORLD_FLAGS + (VKS_MAX_TEAMS + 1u) * n;
    return ll + ((slot * 2u + parity) * n + i) * VKS_LL_SLOT_WORDS;
}

// Whether a per-thread reduction of `n` bytes on (valid) team `team` takes the
// one-sync form: small, and every member reached directly.
fn vks_ll_ok(team: u32, n: u32) -> bool {
    return n <= VKS_LL_BYTES && !vks_team_spans(vks_team_of(team));
}

// Pushes this PE's `n` bytes at `s` into its landing slot on every member, for
// the epoch the team's next sync announces (whose release orders them before
// the announcement). Whole words: the slot keeps s's offset in its first word.
fn vks_ll_push(team: u32, s: u32, n: u32) {
    if n == 0u {
        return;
    }
    let t = vks_team_of(team);
    let at = vks_ll_slot(team, (vks_team_field(team, VKS_TEAM_EPOCH) + 1u) & 1u, t.me);
    let w0 = s >> 2u;
    let words = ((s + n - 1u) >> 2u) - w0 + 1u;
    for (var j = 0u; j < t.size; j++) {
        let pe = vks_team_pe(t, j);
        for (var i = 0u; i < words; i++) {
            vks_d_plain_store(pe, at + i, vks_d_plain_load(VKS_SELF, w0 + i));
        }
    }
}

// Per-thread forms: one invocation per PE calls; the others may be anywhere.
// Begin: a valid team and a sync (sources ready, dests free); end: a sync (every
// member's part done). Returns false / -1 after raising a device error.
fn vks_pt_begin(team: u32) -> bool {
    return vks_team_ok(team) && vks_team_sync(team);
}

fn vks_pt_end(team: u32) -> i32 {
    return select(-1, 0, vks_team_sync(team));
}

// Work-group forms: every invocation of the workgroup calls, in uniform control
// flow, with the same arguments; the data moves are spread over the group; the
// fence before the closing sync orders every invocation's stores before
// invocation 0 announces.
fn vks_wg_begin(team: u32, li: u32) -> bool {
    return shmemx_team_sync_work_group(team, li) == 0;
}

fn vks_wg_end(team: u32, li: u32) -> i32 {
    vks_fence_acq_rel();
    return shmemx_team_sync_work_group(team, li);
}

// Multi-workgroup forms (`_work_groups`): every invocation of `groups`
// workgroups of one dispatch calls, in uniform control flow, with the same
// arguments. They can wait for each other only if the device runs them all at
// once: at most VKS_CTRL_MAX_GROUPS (the host's DeviceInfo::resident_workgroups),
// checked alike in every group before any wait.
fn vks_grid_ok(group: u32, groups: u32, li: u32) -> bool {
    let ok = groups >= 1u && group < groups
        && groups <= vks_relaxed_load(VKS_SELF, VKS_CTRL_MAX_GROUPS);
    if !ok && li == 0u {
        vks_raise(VKS_ERR_BAD_ARGUMENT, vks_my_pe(), groups);
    }
    return ok;
}

// The grid sync of the multi-workgroup forms: every group arrives (after its
// invocations' stores); the last to arrive resets the count and runs the team
// sync; the others wait on that sync's own condition (every member's flag,
// this PE's included, at the epoch it announces), so each group leaves once the
// team sync is complete, and the throttle's hint is the same for all of them
// (see host/src/throttle.rs). The team sync starts once every group of this PE
// has arrived: its sources are ready (every form opens with it), its dest free. One grid per PE at a time
// (the count is a per-PE word of the control header). 0 or -1.
fn vks_grid_sync(team: u32, li: u32, groups: u32) -> i32 {
    vks_fence_acq_rel();
    storageBarrier();
    if li == 0u {
        var ok = vks_team_ok(team);
        if ok {
            let base = vks_team_base(team);
            // Acquire: the arrival below cannot come before this read, so it
            // reads the epoch before the last group's sync raises it.
            let e = vks_acquire_load(VKS_SELF, base + VKS_TEAM_EPOCH) + 1u;
            if vks_fetch_add(VKS_SELF, VKS_CTRL_GRID_COUNT, 1u) == groups - 1u {
                // Before the sync's announcements: no group arrives at the next
                // grid sync before it saw this PE's own announcement.
                vks_relaxed_store(VKS_SELF, VKS_CTRL_GRID_COUNT, 0u);
                ok = vks_team_sync(team);
            } else {
                let size = vks_relaxed_load(VKS_SELF, base + VKS_TEAM_SIZE);
                let flags = vks_relaxed_load(VKS_SELF, base + VKS_TEAM_FLAGS);
                for (var i = 0u; i < size && ok; i = i + 1u) {
                    ok = vks_wait_epoch(flags + i, e);
                }
            }
        }
        vks_wg_result = select(1u, 0u, ok);
    }
    storageBarrier();
    let r = workgroupUniformLoad(&vks_wg_result);
    vks_fence_acq_rel();
    return -i32(r);
}

// False, and VKS_ERR_BAD_ARGUMENT raised, unless `ok`.
fn vks_arg_ok(ok: bool) -> bool {
    if !ok {
        vks_raise(VKS_ERR_BAD_ARGUMENT, vks_my_pe(), 0u);
    }
    return ok;
}

// False, and VKS_ERR_BAD_ADDRESS raised, unless both byte addresses are
// multiples of the element size `es`.
fn vks_aligned(d: u32, s: u32, es: u32) -> bool {
    if (d % es) != 0u || (s % es) != 0u {
        vks_raise(VKS_ERR_BAD_ADDRESS, vks_my_pe(), select(s, d, (d % es) != 0u));
        return false;
    }
    return true;
}

// A root outside the team raises VKS_ERR_BAD_PE (every member passes the same
// root, so all skip the move alike).
fn vks_root_ok(team: u32, root: u32) -> bool {
    if root >= vks_team_field(team, VKS_TEAM_SIZE) {
        vks_raise(VKS_ERR_BAD_PE, root, 0u);
        return false;
    }
    return true;
}
