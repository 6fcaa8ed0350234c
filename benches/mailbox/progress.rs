//! A progress display on stderr: one line redrawn in place on a terminal, a line every few
//! seconds otherwise (CI logs).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Inner {
    label: String,
    total: u64,
    done: AtomicU64,
    stop: AtomicBool,
    start: Instant,
}

#[derive(Clone)]
pub struct Progress(Arc<Inner>);

impl Progress {
    pub fn start(label: impl Into<String>, total: u64) -> Progress {
        let p = Progress(Arc::new(Inner {
            label: label.into(),
            total,
            done: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            start: Instant::now(),
        }));
        let q = p.clone();
        tokio::spawn(async move {
            let tty = std::io::stderr().is_terminal();
            let every = if tty {
                Duration::from_millis(250)
            } else {
                Duration::from_secs(5)
            };
            loop {
                tokio::time::sleep(every).await;
                if q.0.stop.load(Ordering::Relaxed) {
                    break;
                }
                q.draw(tty, false);
            }
        });
        p
    }

    pub fn inc(&self, n: u64) {
        self.0.done.fetch_add(n, Ordering::Relaxed);
    }

    fn draw(&self, tty: bool, last: bool) {
        let i = &self.0;
        let done = i.done.load(Ordering::Relaxed);
        let secs = i.start.elapsed().as_secs_f64();
        let rate = done as f64 / secs.max(1e-9);
        let pct = if i.total > 0 {
            100.0 * done as f64 / i.total as f64
        } else {
            100.0
        };
        let eta = if rate > 0.0 && done < i.total {
            format!("eta {:.0}s", (i.total - done) as f64 / rate)
        } else {
            String::new()
        };
        let line = if i.total > 0 {
            format!(
                "  {:<34} {:>9}/{:<9} {:>5.1}% {:>9.0}/s {:>6.1}s {}",
                i.label, done, i.total, pct, rate, secs, eta
            )
        } else {
            // A timed loop: no total, no percentage.
            format!(
                "  {:<34} {:>9} done        {:>9.0}/s {:>6.1}s",
                i.label, done, rate, secs
            )
        };
        let mut err = std::io::stderr().lock();
        if tty {
            let _ = write!(err, "\r\x1b[2K{line}");
            if last {
                let _ = writeln!(err);
            }
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    pub fn finish(&self) {
        self.0.stop.store(true, Ordering::Relaxed);
        self.draw(std::io::stderr().is_terminal(), true);
    }
}
