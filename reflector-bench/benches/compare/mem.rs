//! Memory probes: RSS from `/proc/self/status`, live heap from the counting allocator,
//! and a sampler thread for the heap's peak.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Bytes per MiB.
pub const MB: f64 = 1024.0 * 1024.0;

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes; 0 if unreadable.
pub fn status_bytes(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Current resident set size in bytes.
pub fn rss() -> u64 {
    status_bytes("VmRSS")
}

/// Peak resident set size in bytes since start or the last [`reset_hwm`].
pub fn hwm() -> u64 {
    status_bytes("VmHWM")
}

/// Resets `VmHWM` to the current RSS; false if the kernel refused.
pub fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Live heap bytes (allocated minus freed) counted by the global allocator.
#[cfg(not(feature = "bench-mimalloc"))]
pub fn heap() -> u64 {
    let s = crate::GLOBAL.stats();
    s.bytes_allocated.saturating_sub(s.bytes_deallocated) as u64
}

/// Not counted under mimalloc: 0.
#[cfg(feature = "bench-mimalloc")]
pub fn heap() -> u64 {
    0
}

/// Samples [`heap`] every 2 ms on a thread and keeps the maximum; stops when dropped.
pub struct HeapPeak {
    peak: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl HeapPeak {
    /// Starts sampling.
    pub fn start() -> Self {
        let peak = Arc::new(AtomicUsize::new(heap() as usize));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(heap() as usize, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        HeapPeak { peak, stop }
    }

    /// The largest live heap seen since start or the last reset.
    pub fn peak(&self) -> u64 {
        self.peak.fetch_max(heap() as usize, Ordering::Relaxed);
        self.peak.load(Ordering::Relaxed) as u64
    }

    /// Restarts the maximum from the current live heap.
    pub fn reset(&self) {
        self.peak.store(heap() as usize, Ordering::Relaxed);
    }
}

impl Drop for HeapPeak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
