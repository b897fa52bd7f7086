//! Memory hints shared by the engines: cache-line prefetches and transparent huge pages.
//!
//! Both engines walk large arrays at random (graph rows and links; the flow engine's key slab
//! with a million keys), where a cache miss costs ~100 ns and, with 4 KiB pages, most accesses
//! also miss the TLB. These are hints only: they never change what a program computes.

/// Prefetches the cache line holding `data[index]` into every cache level (a hint;
/// out-of-range indices are ignored).
#[inline(always)]
pub(crate) fn prefetch<T>(data: &[T], index: usize) {
    if let Some(item) = data.get(index) {
        prefetch_line(std::ptr::from_ref(item).cast::<u8>());
    }
}

/// Prefetches every cache line `item` occupies (a value of up to two lines spans at most three),
/// so the misses of a value that straddles lines overlap instead of following each other.
#[inline(always)]
pub(crate) fn prefetch_all<T>(item: &T) {
    let start = std::ptr::from_ref(item).cast::<u8>();
    prefetch_line(start);
    if size_of::<T>() > 1 {
        // `wrapping_add` stays inside `item` (size - 1 < size), so no pointer leaves it.
        prefetch_line(start.wrapping_add(size_of::<T>() - 1));
    }
    if size_of::<T>() > 64 {
        prefetch_line(start.wrapping_add(64));
    }
}

#[inline(always)]
fn prefetch_line(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: callers pass pointers into a live value; a prefetch never faults and never
    // changes memory, and SSE (which provides it) is part of the x86-64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(ptr.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Buffers below this many bytes are left on normal pages (a huge page is 2 MiB).
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Asks Linux to back the whole 2 MiB pages of `buffer`'s allocation (its capacity, not just
/// its length) with transparent huge pages. Random access across a large buffer misses the
/// TLB on almost every visit with 4 KiB pages (66 MB of vectors are 16k pages, far beyond the
/// TLB); with 2 MiB pages the whole set fits. Only a hint: it does nothing on other systems,
/// for small buffers, or when THP is off, and failures are ignored. Call it again after a
/// reallocation (the advice follows the mapping).
pub(crate) fn advise_huge_pages<T>(buffer: &Vec<T>) {
    let bytes = buffer.capacity() * size_of::<T>();
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const MADV_HUGEPAGE: i32 = 14;
        const MADV_COLLAPSE: i32 = 25;
        unsafe extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        let start = buffer.as_ptr() as usize;
        let first = start.next_multiple_of(PAGE);
        let end = (start + bytes) & !(PAGE - 1);
        if end > first {
            // SAFETY: [first, end) lies inside the Vec's live allocation (its capacity), page
            // aligned as madvise requires; MADV_HUGEPAGE changes no contents and no mapping
            // permissions, only how the kernel backs the pages, so no Rust reference is
            // affected. The return value is ignored on purpose (a hint).
            unsafe {
                madvise(first as *mut std::ffi::c_void, end - first, MADV_HUGEPAGE);
                madvise(first as *mut std::ffi::c_void, end - first, MADV_COLLAPSE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_accept_any_index_and_value() {
        let v = vec![1u64; 10];
        prefetch(&v, 0);
        prefetch(&v, 9);
        prefetch(&v, 10); // out of range: ignored
        prefetch::<u8>(&[], 0);
        prefetch_all(&[0u8; 200]);
        prefetch_all(&());
        let big = vec![0u8; 8 << 20];
        advise_huge_pages(&big);
        assert!(big.iter().all(|&b| b == 0), "hints change no contents");
    }
}
