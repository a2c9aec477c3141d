//! The symmetric allocator: pure bookkeeping of one heap's address range.
//!
//! Every PE runs the same deterministic allocator over a heap of the same size, so
//! the same sequence of requests yields the same offsets on every PE: that is what
//! makes an allocation *symmetric*. The collective layer ([`crate::context`]) makes
//! sure every PE sees the same sequence (it compares the requests across PEs before
//! applying them).
//!
//! First fit over an address-ordered free list, with coalescing on free. Sizes are
//! rounded up to the granule, so a zero-byte request still gets its own offset.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Bookkeeping of free and used ranges of a heap `[0, size)`.
#[derive(Debug, Clone)]
pub struct Allocator {
    size: u64,
    granule: u64,
    /// Free ranges: offset -> length. Never adjacent (coalesced).
    free: BTreeMap<u64, u64>,
    /// Live allocations: offset -> rounded length.
    used: BTreeMap<u64, u64>,
}

impl Allocator {
    /// A heap of `size` bytes whose allocations are aligned and sized in multiples of
    /// `granule` (a power of two; use at least the device's storage buffer offset alignment).
    pub fn new(size: u64, granule: u64) -> Result<Self> {
        if !granule.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "allocator granule {granule} is not a power of two"
            )));
        }
        let usable = size / granule * granule;
        let mut free = BTreeMap::new();
        if usable > 0 {
            free.insert(0, usable);
        }
        Ok(Allocator {
            size: usable,
            granule,
            free,
            used: BTreeMap::new(),
        })
    }

    /// Usable heap size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The granule all offsets and sizes are multiples of.
    pub fn granule(&self) -> u64 {
        self.granule
    }

    /// Allocates `bytes` at an offset that is a multiple of `align` (a power of two;
    /// alignments below the granule are raised to it).
    pub fn alloc(&mut self, bytes: u64, align: u64) -> Result<u64> {
        if !align.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "alignment {align} is not a power of two"
            )));
        }
        let align = align.max(self.granule);
        let exhausted = || Error::HeapExhausted {
            requested: bytes,
            align,
            largest_free: self.largest_free(),
            heap_size: self.size,
        };
        let len = match bytes.max(1).checked_next_multiple_of(self.granule) {
            Some(len) if len <= self.size => len,
            _ => return Err(exhausted()),
        };
        let found = self.free.iter().find_map(|(&start, &flen)| {
            let at = start.checked_next_multiple_of(align)?;
            (at.checked_add(len)? <= start + flen).then_some((start, flen, at))
        });
        let Some((start, flen, at)) = found else {
            return Err(exhausted());
        };
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        let end = at + len;
        if end < start + flen {
            self.free.insert(end, start + flen - end);
        }
        self.used.insert(at, len);
        Ok(at)
    }

    /// Frees the allocation that starts at `offset`.
    pub fn free(&mut self, offset: u64) -> Result<()> {
        let len = self.used.remove(&offset).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "offset {offset} is not the start of a live symmetric allocation"
            ))
        })?;
        let (mut start, mut end) = (offset, offset + len);
        if let Some((&pstart, &plen)) = self.free.range(..offset).next_back() {
            if pstart + plen == start {
                self.free.remove(&pstart);
                start = pstart;
            }
        }
        if let Some(&nlen) = self.free.get(&end) {
            self.free.remove(&end);
            end += nlen;
        }
        self.free.insert(start, end - start);
        Ok(())
    }

    /// Length (rounded to the granule) of the live allocation at `offset`.
    pub fn allocation_len(&self, offset: u64) -> Option<u64> {
        self.used.get(&offset).copied()
    }

    /// Whether `[offset, offset + bytes)` lies inside one live allocation.
    pub fn is_live(&self, offset: u64, bytes: u64) -> bool {
        match self.used.range(..=offset).next_back() {
            Some((&start, &len)) => offset
                .checked_add(bytes)
                .is_some_and(|end| end <= start + len),
            None => false,
        }
    }

    /// Largest contiguous free range in bytes.
    pub fn largest_free(&self) -> u64 {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// Total free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }

    /// Number of live allocations.
    pub fn live(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_and_granule() {
        let mut a = Allocator::new(1 << 20, 256).unwrap();
        let x = a.alloc(1, 1).unwrap();
        let y = a.alloc(0, 1).unwrap();
        assert_eq!(x % 256, 0);
        assert_ne!(x, y, "zero-byte allocations still get their own offset");
        for align in [512u64, 4096, 65536] {
            let o = a.alloc(100, align).unwrap();
            assert_eq!(o % align, 0, "align {align}");
        }
        assert!(matches!(a.alloc(8, 3), Err(Error::InvalidArgument(_))));
        assert!(Allocator::new(1024, 100).is_err());
    }

    #[test]
    fn no_overlap_under_random_churn() {
        // Deterministic pseudo-random sequence; checks every live range is disjoint
        // and inside the heap, and that everything coalesces back at the end.
        let mut a = Allocator::new(1 << 20, 64).unwrap();
        let mut live: Vec<(u64, u64)> = Vec::new();
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..5000 {
            if live.len() < 40 && rnd() % 3 != 0 {
                let bytes = rnd() % 20000;
                let align = 1u64 << (rnd() % 13);
                if let Ok(o) = a.alloc(bytes, align) {
                    assert_eq!(o % align.max(64), 0);
                    live.push((o, bytes.max(1)));
                }
            } else if !live.is_empty() {
                let i = (rnd() as usize) % live.len();
                let (o, _) = live.swap_remove(i);
                a.free(o).unwrap();
            }
            let mut sorted = live.clone();
            sorted.sort();
            for w in sorted.windows(2) {
                assert!(w[0].0 + w[0].1 <= w[1].0, "overlap {:?}", w);
            }
            if let Some(last) = sorted.last() {
                assert!(last.0 + last.1 <= a.size());
            }
        }
        for (o, _) in live.drain(..) {
            a.free(o).unwrap();
        }
        assert_eq!(a.live(), 0);
        assert_eq!(
            a.largest_free(),
            a.size(),
            "free ranges coalesce back to one"
        );
    }

    #[test]
    fn fragmentation_and_reuse() {
        let mut a = Allocator::new(4096, 256).unwrap();
        let blocks: Vec<u64> = (0..16).map(|_| a.alloc(256, 1).unwrap()).collect();
        assert!(a.alloc(1, 1).is_err(), "full");
        // Free every other block: 2 KiB free but no 512-byte hole.
        for b in blocks.iter().step_by(2) {
            a.free(*b).unwrap();
        }
        assert_eq!(a.free_bytes(), 2048);
        match a.alloc(512, 1) {
            Err(Error::HeapExhausted { largest_free, .. }) => assert_eq!(largest_free, 256),
            other => panic!("expected exhaustion, got {other:?}"),
        }
        // A freed hole is reused first-fit.
        assert_eq!(a.alloc(200, 1).unwrap(), blocks[0]);
        // Freeing a neighbour coalesces into a 768-byte hole at blocks[1]..blocks[4].
        a.free(blocks[3]).unwrap();
        a.free(blocks[1]).unwrap();
        assert_eq!(a.alloc(768, 1).unwrap(), blocks[1]);
    }

    #[test]
    fn live_ranges_end_with_their_allocation() {
        let mut a = Allocator::new(1 << 20, 256).unwrap();
        let x = a.alloc(1000, 256).unwrap();
        let y = a.alloc(256, 256).unwrap();
        assert!(a.is_live(x, 1000) && a.is_live(x + 8, 1016) && a.is_live(y, 256));
        assert!(!a.is_live(x + 8, 1024), "runs past the allocation");
        a.free(x).unwrap();
        assert!(!a.is_live(x, 4) && a.is_live(y, 4));
        assert!(!a.is_live(u64::MAX, 1));
    }

    #[test]
    fn exhaustion_and_bad_free() {
        let mut a = Allocator::new(1 << 16, 256).unwrap();
        assert!(matches!(
            a.alloc(1 << 17, 1),
            Err(Error::HeapExhausted { .. })
        ));
        assert!(matches!(
            a.alloc(u64::MAX, 1),
            Err(Error::HeapExhausted { .. })
        ));
        let o = a.alloc(1 << 16, 1).unwrap();
        assert_eq!(o, 0);
        assert!(a.alloc(1, 1).is_err());
        a.free(o).unwrap();
        assert!(a.free(o).is_err(), "double free is an error");
        assert!(a.free(12345).is_err());
    }

    #[test]
    fn deterministic_across_instances() {
        // Two PEs applying the same sequence get the same offsets.
        let seq = |a: &mut Allocator| -> Vec<u64> {
            let x = a.alloc(1000, 1).unwrap();
            let y = a.alloc(3000, 4096).unwrap();
            a.free(x).unwrap();
            let z = a.alloc(10, 64).unwrap();
            vec![x, y, z]
        };
        let mut a = Allocator::new(1 << 20, 256).unwrap();
        let mut b = Allocator::new(1 << 20, 256).unwrap();
        assert_eq!(seq(&mut a), seq(&mut b));
    }
}
