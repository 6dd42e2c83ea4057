//! Room made in a decoding thread's heap before a batch's objects are allocated there.
//!
//! glibc's malloc gives every thread but the main one an arena of its own, and grows
//! such an arena's heap only as far as each allocation needs: a page or so at a time,
//! with one `mprotect` call each time (the main thread's heap grows by `brk`, with
//! 128 KiB to spare). Decoding 100k ConfigMaps allocates ~300 MB of objects on the
//! blocking pool's threads, which made ~72,000 `mprotect` calls per sync. Each one takes
//! the process's memory-map lock for writing, so the other decoding thread's page faults
//! wait for it.
//!
//! Before a batch is decoded, [`make_room`] allocates blocks of [`BLOCK`] bytes, as many
//! bytes as the batch's objects may take, and frees them at once. The heap then
//! grows once per block (15 pages), and the objects are allocated in the room the blocks
//! leave at its top without growing it again. glibc may hand the untouched pages of that
//! room back with `madvise` when the blocks are freed; it keeps their protection, so
//! growing into them again needs no `mprotect`.
//!
//! The sync of 100k ConfigMaps makes ~15,000 calls instead, and takes ~15% less CPU
//! (BENCHMARKS.md, session 12).
//!
//! Room is made only on Linux with glibc (`target_os = "linux"`, `target_env = "gnu"`;
//! on Windows that env is MinGW's). A program there that sets another global allocator
//! (mimalloc, jemalloc) pays a few allocations and frees of 60 KiB per batch for no
//! gain. Under mimalloc, the compare bench's medians were 0.39–0.47 s with the blocks and
//! 0.36–0.46 s without them (four interleaved rounds).

/// The size of one block: 60 KiB. It is below glibc's mmap threshold (128 KiB by
/// default), so a block comes from the thread's own heap and not from a mapping of its
/// own. It is also below glibc's 64 KiB threshold for consolidating a freed chunk on its
/// own, so a block freed alone does not trim the heap.
const BLOCK: usize = 60 * 1024;

/// Bytes of decoded objects per byte of their JSON, at most about: a ConfigMap of
/// ~1.4 KiB of JSON takes ~5.9 KiB once decoded with its managedFields (~3 KiB without
/// them). Room the objects do not need is used by the next batch. (Twice the JSON
/// instead synced `keep_managed_fields()` ~4% slower and the default no faster:
/// BENCHMARKS.md, session 12.)
const OBJECT_BYTES_PER_JSON_BYTE: usize = 4;

/// The most room made for one batch: 16 MiB (a batch is ~256 KiB of JSON plus one read
/// chunk; only a single huge object makes a bigger one).
const MAX_ROOM: usize = 16 * 1024 * 1024;

/// Makes room in this thread's heap for the objects of `json_bytes` of JSON about to be
/// decoded here.
pub(crate) fn make_room(json_bytes: usize) {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return;
    }
    let blocks: Vec<Vec<u8>> = (0..blocks_for(json_bytes))
        .map(|_| Vec::with_capacity(BLOCK))
        .collect();
    // Allocations never used could be optimized away.
    std::hint::black_box(&blocks);
}

/// How many blocks make room for the objects of `json_bytes` of JSON.
fn blocks_for(json_bytes: usize) -> usize {
    json_bytes
        .saturating_mul(OBJECT_BYTES_PER_JSON_BYTE)
        .min(MAX_ROOM)
        .div_ceil(BLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of the decoder's usual size (256 KiB) makes room in 18 blocks, an empty
    /// one in none, and a huge one (one object of 100 MB) in no more than 16 MiB's.
    #[test]
    fn room_is_made_in_blocks_for_four_times_the_json() {
        assert_eq!(blocks_for(256 * 1024), 18);
        assert_eq!(blocks_for(0), 0);
        assert_eq!(blocks_for(1), 1);
        assert_eq!(blocks_for(100_000_000), 274);
        assert_eq!(blocks_for(usize::MAX), 274);
    }
}
