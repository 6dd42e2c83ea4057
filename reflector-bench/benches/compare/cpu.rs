//! CPU probe: the process's CPU time (user + system, every thread, ended ones too) from
//! `/proc/self/stat`.

/// Clock ticks per second of `/proc/*/stat` times: Linux's `USER_HZ`, 100 on every
/// architecture it exports to user space (what `sysconf(_SC_CLK_TCK)` answers).
const TICKS_PER_SEC: f64 = 100.0;

/// CPU seconds this process has used so far (10 ms resolution); `NaN` if unreadable.
pub fn cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // The command name (field 2) is in parentheses and may hold spaces; `utime` and
    // `stime` are fields 14 and 15, so the 12th and 13th after the closing one.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return f64::NAN;
    };
    let mut fields = rest.split_whitespace().skip(11);
    let mut ticks = || fields.next()?.parse::<u64>().ok();
    match (ticks(), ticks()) {
        (Some(user), Some(system)) => (user + system) as f64 / TICKS_PER_SEC,
        _ => f64::NAN,
    }
}
