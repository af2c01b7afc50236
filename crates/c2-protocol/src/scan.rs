//! Byte searches for the framing and the JSON pre-scan, without a CPU feature probe.
//!
//! `memchr::memchr` picks AVX2 or SSE2 at its first call by asking the CPU (`cpuid`, through
//! std's feature detection). A virtual machine traps `cpuid`: the probe costs 30 to 45 us of
//! every fresh process on the project's CI machines, which a plugin pays on the first line it
//! reads, inside its cold start. On x86_64 SSE2 is part of the target, so memchr's SSE2
//! searchers need no probe; elsewhere the generic entry points are used.

/// The offset of the first `needle` in `haystack`.
#[inline]
pub(crate) fn find(needle: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(searcher) = memchr::arch::x86_64::sse2::memchr::One::new(needle) {
        return searcher.find(haystack);
    }
    memchr::memchr(needle, haystack)
}

/// The offset of the first `a` or `b` in `haystack`.
#[inline]
pub(crate) fn find_either(a: u8, b: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(searcher) = memchr::arch::x86_64::sse2::memchr::Two::new(a, b) {
        return searcher.find(haystack);
    }
    memchr::memchr2(a, b, haystack)
}
