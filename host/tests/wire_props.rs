//! Property tests of the bootstrap wire format (stable Rust, part of `cargo test`), and
//! the seed corpus of the cargo-fuzz targets in `fuzz/`.
//!
//! - arbitrary bytes never panic [`decode`], and whatever decodes re-encodes to the
//!   same bytes (the encoding is canonical);
//! - arbitrary well-formed messages of every kind, with fields up to their limits,
//!   round-trip;
//! - every byte flip, truncation and extension of an encoded message either decodes to
//!   a message that re-encodes to exactly the mutated bytes, or is an error;
//! - every file of `fuzz/corpus/wire_decode/` replays without a panic, and the seed
//!   files are exactly what [`seeds`] generates (`VKSHMEM_BLESS_CORPUS=1 cargo test -p
//!   vkshmem-host --test wire_props` rewrites them after a format change).

use std::path::{Path, PathBuf};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use vkshmem_host::bootstrap::wire::{
    decode, encode, Msg, WireError, MAX_BLOB, MAX_FDS_PER_FRAME, MAX_FRAME, MAX_PES, MAX_TEXT,
    SECRET_LEN,
};

const NPES: usize = MAX_PES as usize;

/// Decoding `bytes` must not panic; if it succeeds, the message must re-encode to
/// exactly `bytes` and round-trip.
fn check_canonical(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(msg) = decode(bytes) {
        prop_assert_eq!(
            encode(&msg),
            bytes,
            "{:?} re-encodes differently",
            msg.kind()
        );
        prop_assert_eq!(decode(&encode(&msg)), Ok(msg));
    }
    Ok(())
}

// ---------------------------------------------------------------- strategies

/// Text of at most `MAX_TEXT` bytes: short arbitrary text most of the time, text of
/// one (possibly multi-byte) char filled up to the limit, or ASCII exactly at it.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => vec(any::<char>(), 0..24).prop_map(String::from_iter),
        1 => any::<char>().prop_map(|c| c.to_string().repeat(MAX_TEXT / c.len_utf8())),
        1 => Just("x".repeat(MAX_TEXT)),
    ]
}

/// A blob of at most `MAX_BLOB` bytes, sometimes exactly at the limit.
fn blob() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => vec(any::<u8>(), 0..32),
        1 => any::<u8>().prop_map(|b| vec![b; MAX_BLOB]),
    ]
}

/// Up to `MAX_PES` blobs: a few of any size, or `MAX_PES` tiny ones.
fn blobs() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        6 => vec(blob(), 0..4),
        1 => vec(vec(any::<u8>(), 0..2), NPES),
    ]
}

/// A presence list of up to `MAX_PES` entries with at most `MAX_FDS_PER_FRAME` set.
fn present() -> impl Strategy<Value = Vec<bool>> {
    let spread = (0..=NPES, vec(any::<Index>(), 0..=MAX_FDS_PER_FRAME)).prop_map(|(n, set)| {
        let mut p = vec![false; n];
        if n > 0 {
            for i in set {
                p[i.index(n)] = true;
            }
        }
        p
    });
    prop_oneof![
        6 => vec(any::<bool>(), 0..32),
        2 => spread,
        1 => Just(vec![true; MAX_FDS_PER_FRAME]),
    ]
}

/// PE numbers missing from a collective: a few, or `MAX_PES` of them.
fn missing() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        6 => vec(any::<u32>(), 0..8),
        1 => vec(any::<u32>(), NPES),
    ]
}

/// Every well-formed message: each variant of [`Msg`], fields up to their limits.
/// (The `match` in [`kind_index`] fails to compile when a variant is added, as a
/// reminder to add it here and to [`seeds`].)
fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        (any::<[u8; SECRET_LEN]>(), any::<u32>(), any::<u32>())
            .prop_map(|(secret, pe, npes)| Msg::Hello { secret, pe, npes }),
        Just(Msg::Welcome),
        text().prop_map(|reason| Msg::Refused { reason }),
        any::<u64>().prop_map(|seq| Msg::Barrier { seq }),
        any::<u64>().prop_map(|seq| Msg::BarrierDone { seq }),
        (any::<u64>(), blob()).prop_map(|(seq, data)| Msg::Gather { seq, data }),
        (
            any::<u32>(),
            any::<i32>(),
            any::<u32>(),
            any::<u64>(),
            blob()
        )
            .prop_map(|(start, stride, size, seq, data)| Msg::TeamGather {
                start,
                stride,
                size,
                seq,
                data
            }),
        (any::<u64>(), blobs()).prop_map(|(seq, blobs)| Msg::Gathered { seq, blobs }),
        (any::<u64>(), any::<bool>()).prop_map(|(seq, has_fd)| Msg::FdOffer { seq, has_fd }),
        (any::<u64>(), any::<u32>(), present()).prop_map(|(seq, first, present)| {
            Msg::FdChunk {
                seq,
                first,
                present,
            }
        }),
        (any::<u32>(), text()).prop_map(|(pe, reason)| Msg::Abort { pe, reason }),
        Just(Msg::Goodbye),
        any::<i32>().prop_map(|status| Msg::GlobalExit { status }),
        (text(), any::<u64>(), missing()).prop_map(|(what, waited_ms, missing)| {
            Msg::TimedOut {
                what,
                waited_ms,
                missing,
            }
        }),
    ]
}

/// The variant's position; exhaustive on purpose (see [`msg`]).
fn kind_index(m: &Msg) -> usize {
    match m {
        Msg::Hello { .. } => 0,
        Msg::Welcome => 1,
        Msg::Refused { .. } => 2,
        Msg::Barrier { .. } => 3,
        Msg::BarrierDone { .. } => 4,
        Msg::Gather { .. } => 5,
        Msg::TeamGather { .. } => 6,
        Msg::Gathered { .. } => 7,
        Msg::FdOffer { .. } => 8,
        Msg::FdChunk { .. } => 9,
        Msg::Abort { .. } => 10,
        Msg::Goodbye => 11,
        Msg::TimedOut { .. } => 12,
        Msg::GlobalExit { .. } => 13,
    }
}
const KINDS: usize = 14;

/// One change to an encoded message.
#[derive(Debug, Clone)]
enum Mutation {
    /// XOR one byte with a non-zero value.
    Flip(Index, u8),
    /// Keep only a prefix (strictly shorter).
    Truncate(Index),
    /// Append bytes.
    Extend(Vec<u8>),
    /// Overwrite four bytes (a length field, say) with a chosen value.
    Word(Index, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), 1..=u8::MAX).prop_map(|(i, x)| Mutation::Flip(i, x)),
        2 => any::<Index>().prop_map(Mutation::Truncate),
        1 => vec(any::<u8>(), 1..8).prop_map(Mutation::Extend),
        2 => (
            any::<Index>(),
            prop_oneof![
                Just(0u32),
                Just(1),
                Just(MAX_BLOB as u32),
                Just(MAX_BLOB as u32 + 1),
                Just(MAX_PES),
                Just(MAX_PES + 1),
                Just(u32::MAX),
                any::<u32>()
            ]
        )
            .prop_map(|(i, w)| Mutation::Word(i, w)),
    ]
}

fn apply(bytes: &[u8], m: &Mutation) -> Vec<u8> {
    let mut b = bytes.to_vec();
    match m {
        Mutation::Flip(i, x) => {
            let i = i.index(b.len());
            b[i] ^= x;
        }
        Mutation::Truncate(i) => b.truncate(i.index(b.len())),
        Mutation::Extend(more) => b.extend_from_slice(more),
        Mutation::Word(i, w) => {
            if b.len() >= 4 {
                let i = i.index(b.len() - 3);
                b[i..i + 4].copy_from_slice(&w.to_le_bytes());
            }
        }
    }
    b
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// (a) Arbitrary bytes, half of them starting with a real tag.
    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(
        body in prop_oneof![
            vec(any::<u8>(), 0..96),
            (0u8..=15, vec(any::<u8>(), 0..96)).prop_map(|(t, mut b)| { b.insert(0, t); b }),
        ]
    ) {
        check_canonical(&body)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// (b) Every well-formed message round-trips.
    #[test]
    fn well_formed_messages_round_trip(m in msg()) {
        let bytes = encode(&m);
        prop_assert!(bytes.len() <= MAX_FRAME);
        prop_assert_eq!(decode(&bytes), Ok(m));
    }

    /// (c) Mutations of an encoded message: an error, or a message that re-encodes
    /// to exactly the mutated bytes.
    #[test]
    fn mutated_messages_decode_canonically_or_fail(
        m in msg(),
        muts in vec(mutation(), 1..24),
    ) {
        let bytes = encode(&m);
        for mu in &muts {
            let b = apply(&bytes, mu);
            check_canonical(&b)?;
            if let Mutation::Truncate(_) | Mutation::Extend(_) = mu {
                // Frames are self-delimiting: a strict prefix or an extension of a
                // valid body is never valid.
                prop_assert!(decode(&b).is_err(), "{:?} of {} decoded", mu, m.kind());
            }
        }
    }
}

/// The strategy of (b) and (c) reaches every variant.
#[test]
fn message_strategy_covers_every_kind() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = msg();
    let mut seen = [0usize; KINDS];
    for _ in 0..400 {
        seen[kind_index(&strategy.new_tree(&mut runner).unwrap().current())] += 1;
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
}

/// Every variant at once with every length field exactly at its limit (the largest
/// frame the format allows), and one past each limit refused.
#[test]
fn every_field_at_its_limit_round_trips() {
    let full = vec![
        Msg::Refused {
            reason: "é".repeat(MAX_TEXT / 2),
        },
        Msg::Gather {
            seq: u64::MAX,
            data: vec![0xa5; MAX_BLOB],
        },
        Msg::Gathered {
            seq: 0,
            blobs: vec![vec![7; MAX_BLOB]; NPES],
        },
        Msg::FdChunk {
            seq: 1,
            first: u32::MAX,
            present: (0..NPES).map(|i| i % 17 == 0 && i < 17 * 240).collect(),
        },
        Msg::TimedOut {
            what: "w".repeat(MAX_TEXT),
            waited_ms: u64::MAX,
            missing: (0..MAX_PES).collect(),
        },
    ];
    for m in full {
        let b = encode(&m);
        assert!(b.len() <= MAX_FRAME, "{} is {} bytes", m.kind(), b.len());
        assert_eq!(decode(&b).as_ref(), Ok(&m), "{}", m.kind());
    }
    for seed in seeds().into_iter().filter(|s| s.over_limit) {
        assert!(
            matches!(decode(&seed.bytes), Err(WireError::TooLong { .. })),
            "{}: {:?}",
            seed.name,
            decode(&seed.bytes)
        );
    }
}

// ---------------------------------------------------------------- the seed corpus

/// One seed file of `fuzz/corpus/wire_decode/`.
struct Seed {
    name: &'static str,
    bytes: Vec<u8>,
    /// Must decode (a per-kind sample); otherwise it must fail.
    valid: bool,
    /// Fails because a length is one past its limit.
    over_limit: bool,
}

/// One valid sample per message kind.
fn samples() -> Vec<(&'static str, Msg)> {
    vec![
        (
            "hello",
            Msg::Hello {
                secret: [7; SECRET_LEN],
                pe: 3,
                npes: 8,
            },
        ),
        ("welcome", Msg::Welcome),
        (
            "refused",
            Msg::Refused {
                reason: "wrong job secret".into(),
            },
        ),
        ("barrier", Msg::Barrier { seq: 42 }),
        ("barrier_done", Msg::BarrierDone { seq: u64::MAX }),
        (
            "gather",
            Msg::Gather {
                seq: 1,
                data: vec![1, 2, 3],
            },
        ),
        (
            "team_gather",
            Msg::TeamGather {
                start: 7,
                stride: -2,
                size: 3,
                seq: 9,
                data: vec![4; 10],
            },
        ),
        (
            "gathered",
            Msg::Gathered {
                seq: 2,
                blobs: vec![vec![], vec![9; 20], vec![0]],
            },
        ),
        (
            "fd_offer",
            Msg::FdOffer {
                seq: 3,
                has_fd: true,
            },
        ),
        (
            "fd_chunk",
            Msg::FdChunk {
                seq: 4,
                first: 0,
                present: vec![true, false, true],
            },
        ),
        (
            "abort",
            Msg::Abort {
                pe: 2,
                reason: "killed by SIGKILL".into(),
            },
        ),
        ("goodbye", Msg::Goodbye),
        ("global_exit", Msg::GlobalExit { status: 3 }),
        (
            "timed_out",
            Msg::TimedOut {
                what: "barrier #3 ⏱".into(),
                waited_ms: 2500,
                missing: vec![1, 3],
            },
        ),
    ]
}

fn le32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// The seed corpus: every sample, then malformed bodies.
fn seeds() -> Vec<Seed> {
    let mut out: Vec<Seed> = samples()
        .into_iter()
        .map(|(name, m)| Seed {
            name,
            bytes: encode(&m),
            valid: true,
            over_limit: false,
        })
        .collect();
    let tag = |name: &str| encode(&samples().into_iter().find(|s| s.0 == name).unwrap().1)[0];
    let mut bad = |name, over_limit, bytes| {
        out.push(Seed {
            name,
            bytes,
            valid: false,
            over_limit,
        })
    };
    // Oversize length fields (one past each limit; the bytes are not there).
    let mut b = vec![tag("gather")];
    b.extend_from_slice(&1u64.to_le_bytes());
    le32(&mut b, MAX_BLOB as u32 + 1);
    bad("bad_gather_blob_over_limit", true, b);
    let mut b = vec![tag("gathered")];
    b.extend_from_slice(&2u64.to_le_bytes());
    le32(&mut b, u32::MAX);
    bad("bad_gathered_count_u32_max", true, b);
    let mut b = vec![tag("refused")];
    le32(&mut b, MAX_TEXT as u32 + 1);
    bad("bad_refused_text_over_limit", true, b);
    let mut b = vec![tag("timed_out")];
    le32(&mut b, 1);
    b.push(b'x');
    b.extend_from_slice(&5u64.to_le_bytes());
    le32(&mut b, MAX_PES + 1);
    bad("bad_timed_out_missing_over_limit", true, b);
    // Within the count limit, but more descriptors than one frame may carry.
    let mut b = vec![tag("fd_chunk")];
    b.extend_from_slice(&4u64.to_le_bytes());
    le32(&mut b, 0);
    le32(&mut b, MAX_FDS_PER_FRAME as u32 + 1);
    b.resize(b.len() + MAX_FDS_PER_FRAME + 1, 1);
    bad("bad_fd_chunk_too_many_fds", true, b);
    // A length that fits its limit but runs past the end of the body.
    let mut b = vec![tag("gather")];
    b.extend_from_slice(&1u64.to_le_bytes());
    le32(&mut b, MAX_BLOB as u32);
    b.extend_from_slice(&[0; 5]);
    bad("bad_gather_blob_past_end", false, b);
    // Truncated and trailing.
    let hello = encode(&samples()[0].1);
    bad(
        "bad_hello_truncated",
        false,
        hello[..hello.len() - 1].to_vec(),
    );
    let mut b = encode(&samples()[0].1);
    b.push(0);
    bad("bad_hello_trailing_byte", false, b);
    bad("bad_empty", false, vec![]);
    // Unknown tags.
    bad("bad_tag_zero", false, vec![0]);
    bad("bad_tag_unknown", false, vec![200, 1, 2, 3]);
    // Text that is not UTF-8.
    let mut b = vec![tag("abort")];
    le32(&mut b, 1);
    le32(&mut b, 3);
    b.extend_from_slice(&[b'a', 0xc3, 0x28]);
    bad("bad_abort_text_not_utf8", false, b);
    // Flag bytes other than 0 and 1.
    let mut b = encode(&Msg::FdOffer {
        seq: 3,
        has_fd: true,
    });
    *b.last_mut().unwrap() = 2;
    bad("bad_fd_offer_flag", false, b);
    let mut b = encode(&Msg::FdChunk {
        seq: 4,
        first: 0,
        present: vec![true, false, true],
    });
    *b.last_mut().unwrap() = 0xff;
    bad("bad_fd_chunk_flag", false, b);
    out
}

/// A `frame_recv` seed: name, bytes, expected outcome (see [`frame_seeds`]).
type FrameSeed = (&'static str, Vec<u8>, Result<Vec<&'static str>, ()>);

/// The seeds of `fuzz/corpus/frame_recv/`: byte streams of a connection (length
/// prefix, body, next frame…), and what `transport::recv` makes of each: the kinds
/// received before the stream ended cleanly (`Ok`) or failed (`Err`).
fn frame_seeds() -> Vec<FrameSeed> {
    let frame = |body: &[u8]| {
        let mut f = (body.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(body);
        f
    };
    // Every kind back to back; FdOffer without a descriptor, as none is attached,
    // and no Welcome (it always carries the node segment's descriptor).
    let all: Vec<Msg> = samples()
        .into_iter()
        .filter(|(_, m)| *m != Msg::Welcome)
        .map(|(_, m)| match m {
            Msg::FdOffer { seq, .. } => Msg::FdOffer { seq, has_fd: false },
            Msg::FdChunk { seq, first, .. } => Msg::FdChunk {
                seq,
                first,
                present: vec![false; 3],
            },
            m => m,
        })
        .collect();
    let kinds = all.iter().map(Msg::kind).collect();
    let all_kinds = all.iter().flat_map(|m| frame(&encode(m))).collect();
    let hello = frame(&encode(&samples()[0].1));
    let mut oversize = ((MAX_FRAME + 1) as u32).to_le_bytes().to_vec();
    oversize.extend_from_slice(&hello[4..]);
    let mut fd_missing = hello.clone();
    fd_missing.extend(frame(&encode(&Msg::FdOffer {
        seq: 1,
        has_fd: true,
    })));
    vec![
        ("all_kinds", all_kinds, Ok(kinds)),
        (
            "hello_then_eof_mid_frame",
            [&hello[..], &hello[..9]].concat(),
            Err(()),
        ),
        ("len_over_max_frame", oversize, Err(())),
        ("len_u32_max", vec![0xff; 4], Err(())),
        ("len_prefix_cut", vec![0x29, 0], Err(())),
        ("body_unknown_tag", frame(&[200, 1, 2]), Err(())),
        ("fd_offer_without_fd", fd_missing, Err(())),
        ("welcome_without_fd", frame(&encode(&Msg::Welcome)), Err(())),
    ]
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/wire_decode")
}

/// The `frame_recv` seeds are what [`frame_seeds`] generates, and `transport::recv`
/// reads them as expected without waiting for bytes that are not there.
#[test]
fn frame_corpus_replays_through_recv() {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use vkshmem_host::bootstrap::transport;
    let dir = corpus_dir().join("../frame_recv");
    let bless = std::env::var_os("VKSHMEM_BLESS_CORPUS").is_some_and(|v| v == "1");
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for (name, bytes, want) in frame_seeds() {
        let path = dir.join(name);
        if bless {
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (VKSHMEM_BLESS_CORPUS=1 writes the seeds)",
                path.display()
            )
        });
        assert_eq!(on_disk, bytes, "{} is stale", path.display());
        let (mut tx, rx) = UnixStream::pair().unwrap();
        tx.write_all(&bytes).unwrap(); // small: fits the socket buffer
        drop(tx);
        let mut got = Vec::new();
        let end = loop {
            match transport::recv(&rx) {
                Ok(Some((m, fds))) => {
                    assert!(fds.is_empty());
                    got.push(m.kind());
                }
                Ok(None) => break Ok(got),
                Err(_) => break Err(()),
            }
        };
        assert_eq!(end, want, "{name}");
    }
}

/// The seed files are what [`seeds`] generates (rewritten when
/// `VKSHMEM_BLESS_CORPUS=1`), cover every kind, and stay small.
#[test]
fn seed_corpus_matches_the_generator() {
    let dir = corpus_dir();
    let seeds = seeds();
    let bless = std::env::var_os("VKSHMEM_BLESS_CORPUS").is_some_and(|v| v == "1");
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut kinds = [false; KINDS];
    for s in &seeds {
        let path = dir.join(s.name);
        if bless {
            std::fs::write(&path, &s.bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (VKSHMEM_BLESS_CORPUS=1 writes the seeds)",
                path.display()
            )
        });
        assert_eq!(
            on_disk,
            s.bytes,
            "{} is stale (VKSHMEM_BLESS_CORPUS=1 rewrites it)",
            path.display()
        );
        match decode(&s.bytes) {
            Ok(m) => {
                assert!(s.valid, "{} decoded: {m:?}", s.name);
                kinds[kind_index(&m)] = true;
            }
            Err(e) => assert!(!s.valid, "{}: {e}", s.name),
        }
    }
    assert!(kinds.iter().all(|k| *k), "a kind has no seed: {kinds:?}");
    assert!(seeds.len() < 50);
    assert!(seeds.iter().map(|s| s.bytes.len()).sum::<usize>() < 100 * 1024);
}

/// Every file in the corpus (seeds, and any a fuzzing run added) replays without a
/// panic; whatever decodes is canonical.
#[test]
fn corpus_replays_without_panic() {
    let mut n = 0;
    for entry in std::fs::read_dir(corpus_dir()).expect("fuzz/corpus/wire_decode") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| check_canonical(&bytes));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{}: {e}", path.display()),
            Err(_) => panic!("{} panics the decoder", path.display()),
        }
        n += 1;
    }
    assert!(n >= KINDS, "only {n} corpus files");
}
