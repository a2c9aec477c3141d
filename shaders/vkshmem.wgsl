// vkshmem device library: the part that does not depend on the job.
//
// It is appended to every kernel after the generated part (see
// device/src/library/), which defines vks_my_pe(), vks_n_pes(), vks_heap_words(), the
// control-region offsets (VKS_CTRL_*, VKS_TEAM_*), the heap bindings and the
// accessors vks_<op>(pe, addr, ...), which select the peer's binding with a switch.
//
// Addresses are symmetric *word* addresses: the byte offset of a symmetric object
// divided by 4 (SymBuffer::device_addr on the host).
//
// Names starting with `vks_` are private and get their real semantics from the
// SPIR-V pass (device/src/pass.rs):
//   vks_acquire_*   atomics become Acquire | UniformMemory at Device scope
//   vks_volatile_*  loads become Volatile (spin loops poll with them)
//   vks_fence_acq_rel  gets an OpMemoryBarrier(Device, AcquireRelease | UniformMemory)
//   every vks_* function but vks_loop_check loses naga's loop bounding (spin loops
//                      wait as long as needed)

const SHMEM_CMP_EQ: u32 = 0u;
const SHMEM_CMP_NE: u32 = 1u;
const SHMEM_CMP_GT: u32 = 2u;
const SHMEM_CMP_GE: u32 = 3u;
const SHMEM_CMP_LT: u32 = 4u;
const SHMEM_CMP_LE: u32 = 5u;

// vks_wait's comparison "has reached epoch".
const VKS_CMP_EPOCH: u32 = 6u;

// Replaced by the SPIR-V pass with a device-scope acquire-release fence. Only for
// code every invocation of the workgroup runs; code that may run in some
// invocations only uses vks_fence_any() (generated: the same fence, or nothing on
// drivers where a fence is a workgroup barrier, see LibraryConfig).
fn vks_fence_acq_rel() {}

// A release store: fence, then a relaxed store (see device/src/pass.rs for why
// not an atomic store with Release semantics).
fn vks_store_release(pe: u32, a: u32, x: u32) {
    vks_fence_any();
    vks_relaxed_store(pe, a, x);
}

// The leader's result, shared with the other invocations in _work_group forms.
var<workgroup> vks_wg_result: u32;

// A wait condition in branch-free form (see vks_cond_bit): a word v satisfies it
// when bit o of `mask` is set, where o is 0, 1 or 2 as (v - sub) ^ flip is less
// than, equal to or greater than y. Polls test it without branches, so that many
// of them fit in one loop iteration without nesting (lavapipe miscompiles ifs
// nested deeper than 80 levels).
struct VksCond {
    sub: u32,
    flip: u32,
    y: u32,
    mask: u32,
}

// The condition "v compares `cmp` (SHMEM_CMP_*) with `value`", as i32 when
// `signed` (flipping the sign bit maps signed order onto unsigned order); cmp
// VKS_CMP_EPOCH means "has reached epoch `value`" (wrapping: v - value >= 0 as i32).
fn vks_cond(cmp: u32, value: u32, signed: bool) -> VksCond {
    // Bits: 1 = less, 2 = equal, 4 = greater.
    var masks = array<u32, 7>(2u, 5u, 4u, 6u, 1u, 3u, 6u);
    let mask = masks[min(cmp, 6u)];
    if cmp == VKS_CMP_EPOCH {
        return VksCond(value, 0x80000000u, 0x80000000u, mask);
    }
    return VksCond(0u, select(0u, 0x80000000u, signed), value ^ select(0u, 0x80000000u, signed), mask);
}

// 1 when `v` satisfies `c`, else 0; no branches.
fn vks_cond_bit(c: VksCond, v: u32) -> u32 {
    let x = (v - c.sub) ^ c.flip;
    return (c.mask >> (u32(x >= c.y) + u32(x > c.y))) & 1u;
}

// True when the host asked every wait to give up (a peer failed).
fn vks_aborting() -> bool {
    return vks_volatile_load_own(VKS_CTRL_ABORT) != 0u;
}

// Spins until this PE's word `addr` satisfies vks_cond(cmp, value, signed), then
// fences (acquire). False when it gave up: because of the abort word
// (VKS_ERR_ABORTED), because the driver cut the loop off (VKS_ERR_LOOPS_CUT), or
// because `addr` is outside the heap (VKS_ERR_BAD_ADDRESS).
//
// Lavapipe (Mesa 22.3) ends every loop of an invocation once the invocation has
// run 65535 loop iterations in total, all loops together, and carries on after
// the loop as if it had exited normally. So each iteration here polls many times
// there (vks_poll_many, generated branch-free: LibraryConfig::loop_cap), and a
// loop that ends without the condition or the abort is reported, never taken for
// success. The loop leaves by `break` only: a `return` from inside a loop in code
// only some invocations run also ends the workgroup early on that driver.
fn vks_wait(addr: u32, cmp: u32, value: u32, signed: bool) -> bool {
    if addr >= vks_heap_words() {
        vks_raise(VKS_ERR_BAD_ADDRESS, vks_my_pe(), addr);
        return false;
    }
    let c = vks_cond(cmp, value, signed);
    // A wait that ends at its first poll costs nothing more; a longer one is
    // announced to the host (vks_wait_begin/end: only where the driver caps loops,
    // whose host throttles the CPU threads that run a long wait, see
    // LibraryConfig::loop_cap).
    var done = vks_poll_once(addr, c);
    var aborted = false;
    if !done {
        vks_wait_begin(addr, cmp | select(0u, 256u, signed), value);
        loop {
            if vks_poll_many(addr, c) {
                done = true;
                break;
            }
            if vks_aborting() {
                aborted = true;
                break;
            }
        }
        vks_wait_end();
    }
    let ok = done && !aborted;
    if ok {
        // Keeps later loads below the wait where fences are left out (a
        // read-modify-write is a full compiler barrier), then the acquire fence.
        vks_fetch_or(VKS_SELF, addr, 0u);
        vks_fence_any();
    } else if aborted {
        vks_raise(VKS_ERR_ABORTED, vks_my_pe(), addr);
    } else {
        vks_raise(VKS_ERR_LOOPS_CUT, vks_my_pe(), addr);
    }
    return ok;
}

fn vks_wait_cmp(addr: u32, cmp: u32, value: u32, signed: bool) -> bool {
    if cmp > SHMEM_CMP_LE {
        vks_raise(VKS_ERR_BAD_ADDRESS, vks_my_pe(), addr);
        return false;
    }
    return vks_wait(addr, cmp, value, signed);
}

// Spins until this PE's word `addr` has reached epoch `e` (wrapping compare).
fn vks_wait_epoch(addr: u32, e: u32) -> bool {
    return vks_wait(addr, VKS_CMP_EPOCH, e, false);
}

fn vks_team_base(team: u32) -> u32 {
    return VKS_TEAM_TABLE + team * VKS_TEAM_WORDS;
}

// Raises VKS_ERR_BAD_TEAM and returns false unless `team` is a live team of this PE.
fn vks_team_ok(team: u32) -> bool {
    if team >= VKS_MAX_TEAMS
        || vks_relaxed_load(VKS_SELF, vks_team_base(team) + VKS_TEAM_VALID) != 1u {
        vks_raise(VKS_ERR_BAD_TEAM, team, 0u);
        return false;
    }
    return true;
}

fn vks_team_field(team: u32, field: u32) -> u32 {
    return vks_relaxed_load(VKS_SELF, vks_team_base(team) + field);
}

// WORLD number of member `i` of the team whose table entry starts at `base`.
fn vks_team_member(base: u32, i: u32) -> u32 {
    let start = bitcast<i32>(vks_relaxed_load(VKS_SELF, base + VKS_TEAM_START));
    let stride = bitcast<i32>(vks_relaxed_load(VKS_SELF, base + VKS_TEAM_STRIDE));
    return bitcast<u32>(start + bitcast<i32>(i) * stride);
}

// The flat team sync: announce epoch e to every member (a store after a release
// fence into its copy of the team's flags, at this PE's index), then wait until
// every member has announced e here (acquire). One cross-PE store per member and one
// round of local polling. False on a bad team, misuse or abort (error raised).
fn vks_team_sync(team: u32) -> bool {
    if !vks_team_ok(team) {
        return false;
    }
    let base = vks_team_base(team);
    if vks_fetch_add(VKS_SELF, base + VKS_TEAM_BUSY, 1u) != 0u {
        vks_fetch_add(VKS_SELF, base + VKS_TEAM_BUSY, 0xffffffffu);
        vks_raise(VKS_ERR_CONCURRENT_SYNC, vks_my_pe(), base);
        return false;
    }
    let size = vks_relaxed_load(VKS_SELF, base + VKS_TEAM_SIZE);
    let me = vks_relaxed_load(VKS_SELF, base + VKS_TEAM_MY_INDEX);
    let flags = vks_relaxed_load(VKS_SELF, base + VKS_TEAM_FLAGS);
    let e = vks_relaxed_load(VKS_SELF, base + VKS_TEAM_EPOCH) + 1u;
    vks_relaxed_store(VKS_SELF, base + VKS_TEAM_EPOCH, e);
    vks_fence_any(); // release: one fence for all the announcements
    for (var i = 0u; i < size; i = i + 1u) {
        // An atomic exchange rather than a store: a read-modify-write is a full
        // barrier for the compiler on drivers without divergent fences (llvmpipe
        // otherwise sinks earlier plain stores below the announcement).
        // A member reached through the proxy gets a posted store (the proxy
        // forwards in order, so it lands after this PE's earlier requests).
        let pe = vks_team_member(base, i);
        if vks_is_direct(pe) {
            vks_swap(pe, flags + me, e);
        } else {
            vks_relaxed_store(pe, flags + me, e);
        }
    }
    var ok = true;
    for (var i = 0u; i < size && ok; i = i + 1u) {
        // Its own flag holds e already (this PE's exchange above).
        if i != me {
            ok = vks_wait_epoch(flags + i, e);
        }
    }
    vks_fetch_add(VKS_SELF, base + VKS_TEAM_BUSY, 0xffffffffu);
    return ok;
}

// ---------------------------------------------------------------- public API

// This PE's number in WORLD.
fn shmem_my_pe() -> i32 {
    return i32(vks_my_pe());
}

// Number of PEs in WORLD.
fn shmem_n_pes() -> i32 {
    return i32(vks_n_pes());
}

// This PE's number in `team`, or -1 (and a device error) for an invalid team.
fn shmem_team_my_pe(team: u32) -> i32 {
    if !vks_team_ok(team) {
        return -1;
    }
    return i32(vks_team_field(team, VKS_TEAM_MY_INDEX));
}

// Number of PEs in `team`, or -1 (and a device error) for an invalid team.
fn shmem_team_n_pes(team: u32) -> i32 {
    if !vks_team_ok(team) {
        return -1;
    }
    return i32(vks_team_field(team, VKS_TEAM_SIZE));
}

// Orders this invocation's earlier heap stores before its later ones, as seen by
// every PE (a device-scope acquire-release fence).
fn shmem_fence() {
    vks_fence_any();
}

// Completes this invocation's earlier heap stores: they are visible to every PE
// that synchronizes with this one afterwards (including those the proxy
// carries to PEs on another device).
fn shmem_quiet() {
    vks_fence_any();
    vks_px_quiet();
}

// Per-thread forms: called by one invocation per PE; other invocations may be
// anywhere. Returns 0, or -1 after raising a device error.

fn shmem_team_sync(team: u32) -> i32 {
    return select(-1, 0, vks_team_sync(team));
}

fn shmem_sync_all() {
    vks_team_sync(SHMEM_TEAM_WORLD);
}

fn shmem_barrier_all() {
    vks_fence_any();
    vks_px_quiet();
    vks_team_sync(SHMEM_TEAM_WORLD);
    vks_fence_any();
}

fn shmem_team_barrier(team: u32) -> i32 {
    vks_fence_any();
    vks_px_quiet();
    let ok = vks_team_sync(team);
    vks_fence_any();
    return select(-1, 0, ok);
}

// Work-group forms (ishmemx_*_work_group): every invocation of the workgroup calls
// them in uniform control flow with the same arguments and its
// local_invocation_index; invocation 0 does the cross-PE part between two
// workgroup barriers.

fn shmemx_team_sync_work_group(team: u32, local_index: u32) -> i32 {
    storageBarrier();
    if local_index == 0u {
        vks_wg_result = select(1u, 0u, vks_team_sync(team));
    }
    storageBarrier();
    return -i32(workgroupUniformLoad(&vks_wg_result));
}

fn shmemx_sync_all_work_group(local_index: u32) {
    shmemx_team_sync_work_group(SHMEM_TEAM_WORLD, local_index);
}

fn shmemx_team_barrier_work_group(team: u32, local_index: u32) -> i32 {
    vks_fence_acq_rel();
    // Every invocation's requests are posted before invocation 0's quiet.
    storageBarrier();
    if local_index == 0u {
        vks_px_quiet();
    }
    let r = shmemx_team_sync_work_group(team, local_index);
    vks_fence_acq_rel();
    return r;
}

fn shmemx_barrier_all_work_group(local_index: u32) {
    shmemx_team_barrier_work_group(SHMEM_TEAM_WORLD, local_index);
}
