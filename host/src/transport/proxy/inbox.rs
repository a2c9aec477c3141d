//! The inboxes in the node segment: one per PE, cells of
//! [`CELL_BYTES`](crate::sync::layout::CELL_BYTES), many producers and one
//! consumer (see `crate::sync::layout`).

use std::sync::atomic::Ordering;

use crate::sync::layout::{INBOX_BELL_AT, INBOX_CELLS, INBOX_SLEEPERS_AT, INBOX_TAIL_AT};
use crate::sync::segment::{futex_wake, Segment};

use super::wire::{payload_len, stamped, Header, HEADER_BYTES, PAYLOAD};

/// Puts a message from `from` into PE `to`'s inbox (see `sync::layout`);
/// false when the inbox is full. Many producers may call it at once.
pub(super) fn inbox_send(seg: &Segment, from: u32, to: u32, h: Header, payload: &[u8]) -> bool {
    debug_assert!(payload.len() <= PAYLOAD);
    let l = seg.layout();
    let inbox = l.inbox(to);
    let tail = seg.word(inbox + INBOX_TAIL_AT);
    let mut pos = tail.load(Ordering::Relaxed);
    loop {
        let i = pos % INBOX_CELLS;
        let cell = l.cell(to, i);
        let seq = seg.word(cell).load(Ordering::Acquire).wrapping_add(i);
        let dif = seq.wrapping_sub(pos) as i32;
        if dif < 0 {
            return false; // the cell still holds the message of a lap ago
        }
        if dif > 0 {
            pos = tail.load(Ordering::Relaxed); // another producer took pos
            continue;
        }
        if let Err(now) = tail.compare_exchange_weak(
            pos,
            pos.wrapping_add(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            pos = now;
            continue;
        }
        let h = stamped(h, from, payload);
        // The header after the sequence word, then the payload; the sequence
        // word last (release) publishes them.
        seg.write(cell + 4, &bytemuck::bytes_of(&h)[4..]);
        seg.write(cell + HEADER_BYTES, payload);
        seg.word(cell)
            .store(pos.wrapping_add(1).wrapping_sub(i), Ordering::Release);
        let bell = seg.word(inbox + INBOX_BELL_AT);
        bell.fetch_add(1, Ordering::SeqCst);
        if seg.word(inbox + INBOX_SLEEPERS_AT).load(Ordering::SeqCst) != 0 {
            futex_wake(bell);
        }
        return true;
    }
}

/// The message at position `pos` of PE `pe`'s inbox, if it has arrived; its
/// cell is freed for position `pos + INBOX_CELLS`. Only `pe`'s proxy calls
/// it, with consecutive positions.
pub(super) fn inbox_recv(seg: &Segment, pe: u32, pos: u32) -> Option<(Header, Vec<u8>)> {
    let i = pos % INBOX_CELLS;
    let cell = seg.layout().cell(pe, i);
    if seg.word(cell).load(Ordering::Acquire).wrapping_add(i) != pos.wrapping_add(1) {
        return None;
    }
    let mut h = Header::default();
    seg.read(cell, bytemuck::bytes_of_mut(&mut h));
    let mut payload = vec![0u8; payload_len(&h).min(PAYLOAD)];
    if !payload.is_empty() {
        seg.read(cell + HEADER_BYTES, &mut payload);
    }
    seg.word(cell).store(
        pos.wrapping_add(INBOX_CELLS).wrapping_sub(i),
        Ordering::Release,
    );
    Some((h, payload))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::wire::M_PUT;
    use super::*;

    /// Producers on threads fill PE 0's inbox past its capacity while it
    /// drains: every message arrives once, each producer's in order, payloads
    /// intact (lengths from 0 to a full cell).
    #[test]
    fn the_inbox_keeps_every_message_and_each_senders_order() {
        let (seg, _fd) = Segment::create(3).expect("segment");
        let seg = Arc::new(seg);
        const EACH: u32 = 3000;
        let payload = |from: u32, k: u32| -> Vec<u8> {
            let n = ((k as usize * 977) + from as usize * 131) % (PAYLOAD + 1);
            (0..n).map(|b| (b as u32 ^ k ^ (from << 7)) as u8).collect()
        };
        let producers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|from| {
                let seg = seg.clone();
                std::thread::spawn(move || {
                    for k in 0..EACH {
                        let h = Header {
                            kind: M_PUT,
                            token: k,
                            ..Default::default()
                        };
                        let p = payload(from, k);
                        while !inbox_send(&seg, from, 0, h, &p) {
                            std::thread::yield_now(); // full: the consumer is behind
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u32; 3];
        let mut pos = 0u32;
        while next[1] < EACH || next[2] < EACH {
            let Some((h, p)) = inbox_recv(&seg, 0, pos) else {
                std::thread::yield_now();
                continue;
            };
            pos += 1;
            let from = h.from as usize;
            assert!(from == 1 || from == 2, "sender {from}");
            assert_eq!(h.token, next[from], "PE {from}'s messages in order");
            assert_eq!(
                p,
                payload(h.from, h.token),
                "payload {} from PE {from}",
                h.token
            );
            next[from] += 1;
        }
        for t in producers {
            t.join().unwrap();
        }
        assert!(inbox_recv(&seg, 0, pos).is_none(), "nothing more");
        assert_eq!(pos, 2 * EACH);
    }
}
