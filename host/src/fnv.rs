//! FNV-1a (64-bit): the short, stable hash the crate names files and
//! fingerprints arguments with (prebuild profiles, compile turns, the
//! vectored collectives' argument checks). Stable across processes and
//! builds, unlike `std`'s `DefaultHasher`; not for adversarial input.

/// FNV-1a of `bytes`.
pub(crate) fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    /// The reference values of the FNV specification's test suite.
    #[test]
    fn matches_the_reference() {
        assert_eq!(super::fnv1a(*b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(*b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a(*b"foobar"), 0x8594_4171_f739_67e8);
    }
}
