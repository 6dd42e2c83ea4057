//! When a watch with `allowWatchBookmarks=true` gets its periodic `BOOKMARK`s, as the real
//! watch cache schedules them.
//!
//! The real cacher keeps its bookmark watchers in one-second buckets and, on a timer that
//! ticks about once a second, hands a bookmark to every watcher whose bucket has come. A
//! watcher is due one bookmark frequency (one minute) after it was last queued, but no
//! later than 2 s before its deadline (`timeoutSeconds`); once that moment has passed it
//! gets no more. A watcher is queued when it starts and again after each bookmark, and
//! never into a bucket the timer has already passed, so the pre-timeout bookmark usually
//! comes twice: at the tick of the second it falls in, and at the next tick. A client that
//! waits for frequent bookmarks waits in vain.
//!
//! Here the ticks come every second (or every `interval`, when that is shorter), counted
//! from the server's start, without the real timer's jitter.

use std::time::Duration;

use tokio::time::Instant;

/// The real watch cache's bookmark timer period.
const TICK: Duration = Duration::from_secs(1);

/// How long before its deadline a watch gets its last bookmark.
const PRE_TIMEOUT: Duration = Duration::from_secs(2);

/// One watch's bookmark timing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BookmarkSchedule {
    /// Where the ticks are counted from (the server's start).
    epoch: Instant,
    /// Time between ticks.
    tick: Duration,
    /// The bookmark frequency (the real server's is one minute).
    interval: Duration,
    /// When the watch times out, if it does.
    deadline: Option<Instant>,
}

impl BookmarkSchedule {
    pub(crate) fn new(epoch: Instant, interval: Duration, deadline: Option<Instant>) -> Self {
        let interval = interval.max(Duration::from_millis(1));
        Self {
            epoch,
            tick: interval.min(TICK),
            interval,
            deadline,
        }
    }

    /// When the watch, queued at `now`, gets its next bookmark: at the first tick after
    /// `now` whose bucket holds the moment it is due; `None` when nothing is due any more.
    pub(crate) fn next_after(&self, now: Instant) -> Option<Instant> {
        let mut due = now + self.interval;
        if let Some(deadline) = self.deadline {
            let before_timeout = deadline.checked_sub(PRE_TIMEOUT)?;
            due = due.min(before_timeout);
            if due < now {
                return None;
            }
        }
        let bucket = self.ticks_to(due).max(self.ticks_to(now) + 1);
        Some(self.epoch + self.tick * bucket)
    }

    /// The number of whole ticks from the epoch to `at`.
    fn ticks_to(&self, at: Instant) -> u32 {
        let elapsed = at.saturating_duration_since(self.epoch);
        u32::try_from(elapsed.as_nanos() / self.tick.as_nanos()).unwrap_or(u32::MAX - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// The bookmark times (seconds from the epoch) of a watch started at `start` with
    /// `timeout`, under the real one-minute frequency.
    fn bookmarks(start: f64, timeout: Option<f64>) -> Vec<f64> {
        let epoch = Instant::now();
        let deadline = timeout.map(|t| epoch + secs(start + t));
        let schedule = BookmarkSchedule::new(epoch, Duration::from_secs(60), deadline);
        let mut at = epoch + secs(start);
        let mut times = Vec::new();
        while let Some(next) = schedule.next_after(at) {
            times.push((next - epoch).as_secs_f64());
            at = next;
            if times.len() == 5 {
                break;
            }
        }
        times
    }

    #[test]
    fn a_ten_second_watch_gets_two_bookmarks_shortly_before_its_timeout() {
        assert_eq!(bookmarks(0.3, Some(10.0)), [8.0, 9.0]);
        assert_eq!(bookmarks(0.0, Some(10.0)), [8.0, 9.0]);
    }

    #[test]
    fn a_long_watch_gets_one_a_minute_then_the_pre_timeout_ones() {
        assert_eq!(bookmarks(0.5, Some(100.0)), [60.0, 98.0, 99.0]);
        assert_eq!(bookmarks(0.5, None), [60.0, 120.0, 180.0, 240.0, 300.0]);
    }

    #[test]
    fn a_watch_shorter_than_two_seconds_gets_none() {
        assert!(bookmarks(0.2, Some(1.5)).is_empty());
    }
}
