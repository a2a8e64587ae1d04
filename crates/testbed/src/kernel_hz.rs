//! The tick rate of the running kernel (`CONFIG_HZ`), which sets how late Linux's TCP timers
//! fire (the simulator models it as `network.tcp.timer_hz`).
//!
//! Measured rather than read from the kernel's build configuration, which is not always
//! installed: the `jiffies` counter in `/proc/timer_list` (root only) is read twice, a known
//! time apart, and the rate is rounded to the nearest value Linux can be built with.

use anyhow::{bail, Context};
use std::time::{Duration, Instant};

/// The tick rates Linux can be built with (`CONFIG_HZ_100` … `CONFIG_HZ_1000`).
pub const KERNEL_HZ: [u32; 4] = [100, 250, 300, 1000];

/// How long the measurement waits between the two readings.
const WINDOW: Duration = Duration::from_millis(200);

/// The first `jiffies:` value in the text of `/proc/timer_list`.
fn jiffies(timer_list: &str) -> Option<u64> {
    timer_list.lines().find_map(|l| l.trim().strip_prefix("jiffies:")?.trim().parse().ok())
}

/// The tick rate in `KERNEL_HZ` nearest to `ticks` counted over `elapsed`.
pub fn nearest_hz(ticks: u64, elapsed: Duration) -> u32 {
    let rate = ticks as f64 / elapsed.as_secs_f64();
    *KERNEL_HZ
        .iter()
        .min_by(|a, b| (f64::from(**a) - rate).abs().total_cmp(&(f64::from(**b) - rate).abs()))
        .expect("not empty")
}

/// Measures the running kernel's tick rate (needs root).
pub fn measure() -> anyhow::Result<u32> {
    let read = || -> anyhow::Result<(u64, Instant)> {
        let text = std::fs::read_to_string("/proc/timer_list").context("cannot read /proc/timer_list (needs root)")?;
        let t = Instant::now();
        Ok((jiffies(&text).context("/proc/timer_list has no `jiffies:` line")?, t))
    };
    let (j0, t0) = read()?;
    std::thread::sleep(WINDOW);
    let (j1, t1) = read()?;
    if j1 <= j0 {
        bail!("the kernel's jiffies did not advance in {WINDOW:?} ({j0} → {j1})");
    }
    Ok(nearest_hz(j1 - j0, t1 - t0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_first_jiffies_line() {
        let text = "Timer List Version: v0.10\nnow at 123 nsecs\n\ncpu: 0\n  jiffies: 4296405623\n  next_timer: 1\n\ncpu: 1\n  jiffies: 4296405624\n";
        assert_eq!(jiffies(text), Some(4_296_405_623));
        assert_eq!(jiffies("nothing here"), None);
    }

    #[test]
    fn rounds_to_a_rate_linux_can_be_built_with() {
        let s = Duration::from_millis(200);
        assert_eq!(nearest_hz(50, s), 250);
        assert_eq!(nearest_hz(51, s), 250, "one tick of slack");
        assert_eq!(nearest_hz(200, s), 1000);
        assert_eq!(nearest_hz(60, s), 300);
        assert_eq!(nearest_hz(20, s), 100);
    }

    #[test]
    fn measures_this_kernel_when_root() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root to read /proc/timer_list");
            return;
        }
        let hz = measure().unwrap();
        assert!(KERNEL_HZ.contains(&hz), "{hz}");
        // Where the kernel publishes its build configuration, the measurement must match it.
        let config = std::process::Command::new("zcat").arg("/proc/config.gz").output();
        let built = config.ok().and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=")?.parse::<u32>().ok())
        });
        if let Some(built) = built {
            assert_eq!(hz, built, "measured vs CONFIG_HZ");
        }
    }
}
