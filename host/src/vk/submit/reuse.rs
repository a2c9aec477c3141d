//! Reuse: the recorded submissions of dispatches a submitter keeps, and
//! which of them a later call runs again.

use ash::vk::{self, Handle};

use super::{Dispatch, Readback, Submitter};
use crate::error::{Result, VkContext};

/// Recorded submissions of dispatches a submitter keeps to run again
/// ([`Submitter::set_reuse`]): a host collective repeated with the same
/// arguments (a training step's buckets, a benchmark's calls) records each
/// of its submissions once.
pub const REUSE_SLOTS: usize = 16;

/// What a recorded submission of dispatches is known by: every input of
/// its recording (kernel ids, workgroups, barriers, windows, push
/// constants, timestamps, read-back), each list's length before it, so two
/// keys are equal only where the recordings would be the same commands.
pub(super) fn key_of(items: &[Dispatch<'_>], timed: bool, read: Option<Readback>) -> Vec<u64> {
    let mut k = Vec::with_capacity(4 + items.len() * 24);
    k.push(u64::from(timed));
    match read {
        Some(r) => k.extend([1, r.buffer.as_raw(), r.offset, r.bytes]),
        None => k.push(0),
    }
    k.push(items.len() as u64);
    for it in items {
        k.push(it.kernel.id);
        k.extend(it.groups.map(u64::from));
        k.push(u64::from(it.barrier));
        k.push(it.sets.len() as u64);
        for set in it.sets {
            k.push(set.len() as u64);
            for w in *set {
                k.extend([w.buffer.as_raw(), w.offset, w.range]);
            }
        }
        push_words(&mut k, it.push);
    }
    k
}

/// Appends `bytes`' length, then its bytes eight at a time (the last word
/// zero-padded).
fn push_words(k: &mut Vec<u64>, bytes: &[u8]) {
    k.push(bytes.len() as u64);
    k.extend(bytes.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    }));
}

/// Which recorded submission to run again, or which slot to record over
/// (pure bookkeeping): at most `cap` slots, the least recently used
/// recorded over first.
#[derive(Debug)]
pub(super) struct Reuse {
    /// Each slot's key; `None` while it holds no finished recording.
    keys: Vec<Option<Vec<u64>>>,
    /// Each slot's last use ([`Reuse::tick`]).
    used: Vec<u64>,
    /// Calls of [`Reuse::find`] so far.
    tick: u64,
    cap: usize,
}

/// [`Reuse::find`]'s answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// This slot holds the recording: submit it again.
    Again(usize),
    /// Record into this slot (a new one where it is the slot count), then
    /// [`Reuse::recorded`].
    Record(usize),
}

impl Reuse {
    pub(super) fn new(cap: usize) -> Reuse {
        Reuse {
            keys: Vec::new(),
            used: Vec::new(),
            tick: 0,
            cap: cap.max(1),
        }
    }

    /// Where `key`'s submission is, or goes. A slot to record over loses
    /// its key until [`Reuse::recorded`], so a recording that fails halfway
    /// is never run again.
    pub(super) fn find(&mut self, key: &[u64]) -> Found {
        self.tick += 1;
        if let Some(i) = self.keys.iter().position(|k| k.as_deref() == Some(key)) {
            self.used[i] = self.tick;
            return Found::Again(i);
        }
        let i = if self.keys.len() < self.cap {
            self.keys.push(None);
            self.used.push(0);
            self.keys.len() - 1
        } else {
            // A slot without a recording first, else the least recently
            // used.
            (0..self.keys.len())
                .min_by_key(|&i| (self.keys[i].is_some(), self.used[i]))
                .expect("cap >= 1")
        };
        self.keys[i] = None;
        self.used[i] = self.tick;
        Found::Record(i)
    }

    /// Slot `i` now holds `key`'s recording.
    pub(super) fn recorded(&mut self, i: usize, key: Vec<u64>) {
        self.keys[i] = Some(key);
    }

    /// Slot `i` holds no recording to run again (its submission failed).
    pub(super) fn forget(&mut self, i: usize) {
        self.keys[i] = None;
    }

    /// Only the first `made` slots exist (making the next one failed).
    pub(super) fn truncate(&mut self, made: usize) {
        self.keys.truncate(made);
        self.used.truncate(made);
    }
}

/// One slot of recorded submissions: its command buffer and the pool of
/// its descriptor sets (sized for what it recorded, grown when a recording
/// needs more).
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) cmd: vk::CommandBuffer,
    pub(super) descriptors: vk::DescriptorPool,
    /// Sets and descriptors the pool holds.
    holds: (u32, u32),
}

impl Submitter {
    /// Reuse slot `i` (made where `i` is the slot count), its descriptor
    /// pool holding at least the sets and descriptors of `items`.
    pub(super) fn slot_for(&mut self, i: usize, items: &[Dispatch<'_>]) -> Result<&Slot> {
        let d = &self.gpu.device;
        let sets: usize = items.iter().map(|it| it.sets.len()).sum();
        let descriptors: usize = items
            .iter()
            .flat_map(|it| it.sets.iter().map(|s| s.len()))
            .sum();
        let need = (sets.max(1) as u32, descriptors.max(1) as u32);
        if i == self.slots.len() {
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            // SAFETY: valid pool, used by this submitter's thread only (the
            // owner's mutex).
            let cmd =
                unsafe { d.allocate_command_buffers(&info) }.vk("vkAllocateCommandBuffers")?[0];
            self.slots.push(Slot {
                cmd,
                descriptors: vk::DescriptorPool::null(),
                holds: (0, 0),
            });
        }
        let slot = &mut self.slots[i];
        if slot.holds.0 < need.0 || slot.holds.1 < need.1 {
            let holds = (
                need.0.max(slot.holds.0).next_power_of_two(),
                need.1.max(slot.holds.1).next_power_of_two(),
            );
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(holds.1)];
            let info = vk::DescriptorPoolCreateInfo::default()
                .max_sets(holds.0)
                .pool_sizes(&sizes);
            // SAFETY: valid device. The old pool's sets are in no pending
            // submission (each completed before its call returned, and was
            // settled); the
            // slot's recording that used them is never submitted again
            // (Reuse::find dropped its key).
            unsafe {
                let pool = d
                    .create_descriptor_pool(&info, None)
                    .vk("vkCreateDescriptorPool")?;
                d.destroy_descriptor_pool(slot.descriptors, None);
                slot.descriptors = pool;
            }
            slot.holds = holds;
        }
        Ok(slot)
    }

    /// Whether submissions of dispatches are recorded once and submitted
    /// again when a later call's dispatches are the same (kernels,
    /// workgroups, windows, push constants: every input of the recording),
    /// in up to [`REUSE_SLOTS`] slots, the least recently used recorded
    /// over. Off in a new submitter; a context turns it on
    /// (`VKSHMEM_REUSE_RECORDINGS`, on by default): a repeated host
    /// collective skips the descriptor writes and the recording
    /// (benches/RESULTS.md, "Reuse recordings"). Only where every buffer its
    /// dispatches bind outlives the submitter (a recording binds buffers by
    /// handle, and a destroyed buffer's handle may come back for another).
    pub fn set_reuse(&mut self, on: bool) {
        self.reuse_on = on;
    }
}

#[cfg(test)]
mod tests {
    use super::{push_words, Found, Reuse};

    #[test]
    fn reuse_finds_recorded_keys_and_records_over_the_least_recently_used() {
        let mut r = Reuse::new(2);
        let (a, b, c) = (vec![1u64, 2], vec![1u64, 3], vec![4u64]);
        assert_eq!(r.find(&a), Found::Record(0));
        r.recorded(0, a.clone());
        assert_eq!(r.find(&a), Found::Again(0));
        assert_eq!(r.find(&b), Found::Record(1));
        r.recorded(1, b.clone());
        assert_eq!(r.find(&b), Found::Again(1));
        assert_eq!(r.find(&a), Found::Again(0));
        // Full: c goes over b, used longest ago.
        assert_eq!(r.find(&c), Found::Record(1));
        r.recorded(1, c.clone());
        assert_eq!(r.find(&b), Found::Record(0));
        // A recording that failed (never `recorded`) is never found, and
        // its slot is the first recorded over.
        assert_eq!(r.find(&b), Found::Record(0));
        assert_eq!(r.find(&a), Found::Record(0));
        r.recorded(0, a.clone());
        assert_eq!(r.find(&c), Found::Again(1));
        assert_eq!(r.find(&a), Found::Again(0));
        // A submission that failed is forgotten.
        r.forget(1);
        assert_eq!(r.find(&c), Found::Record(1));
        // A slot that could not be made is taken back: the next key asks
        // for the same new slot.
        let mut r = Reuse::new(4);
        assert_eq!(r.find(&a), Found::Record(0));
        r.truncate(0);
        assert_eq!(r.find(&b), Found::Record(0));
    }

    #[test]
    fn push_words_keep_lengths_apart() {
        let words = |b: &[u8]| {
            let mut k = Vec::new();
            push_words(&mut k, b);
            k
        };
        assert_eq!(words(&[]), vec![0]);
        assert_eq!(words(&[1, 0, 0, 0]), vec![4, 1]);
        // Zero bytes past the end differ from no bytes.
        assert_ne!(words(&[1, 0, 0, 0]), words(&[1, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(words(&[0; 9]), vec![9, 0, 0]);
        assert_eq!(words(&[1, 2, 3, 4, 5, 6, 7, 8, 9])[1], 0x0807060504030201);
    }
}
