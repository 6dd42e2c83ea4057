//! CPU probe: the process's CPU time (user + system, every thread, ended ones too) from
//! `/proc/self/stat`.

/// Clock ticks per second of `/proc/*/stat` times: Linux's `USER_HZ`, 100 on every
/// architecture it exports to user space (what `sysconf(_SC_CLK_TCK)` answers).
const TICKS_PER_SEC: f64 = 100.0;

/// CPU seconds this process has used so far (10 ms resolution), and how many of them
/// in the kernel; both `NaN` if unreadable.
#[derive(Debug, Clone, Copy)]
pub struct Cpu {
    /// User and system time.
    pub total: f64,
    /// System time: the kernel working for the process (page faults, `mprotect`,
    /// socket reads, scheduling).
    pub system: f64,
}

impl Cpu {
    /// The CPU time between `earlier` and `self`.
    pub fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            total: self.total - earlier.total,
            system: self.system - earlier.system,
        }
    }
}

/// The process's CPU time so far.
pub fn cpu() -> Cpu {
    let unreadable = Cpu {
        total: f64::NAN,
        system: f64::NAN,
    };
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return unreadable;
    };
    // The command name (field 2) is in parentheses and may hold spaces; `utime` and
    // `stime` are fields 14 and 15, so the 12th and 13th after the closing one.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return unreadable;
    };
    let mut fields = rest.split_whitespace().skip(11);
    let mut ticks = || fields.next()?.parse::<u64>().ok();
    match (ticks(), ticks()) {
        (Some(user), Some(system)) => Cpu {
            total: (user + system) as f64 / TICKS_PER_SEC,
            system: system as f64 / TICKS_PER_SEC,
        },
        _ => unreadable,
    }
}

/// CPU seconds this process has used so far (user + system); `NaN` if unreadable.
pub fn cpu_secs() -> f64 {
    cpu().total
}
