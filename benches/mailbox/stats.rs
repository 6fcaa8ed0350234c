//! Latency samples and their summaries, process counters from /proc.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

pub fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Latency samples in microseconds.
#[derive(Default, Clone, Debug)]
pub struct Samples(pub Vec<u32>);

impl Samples {
    pub fn push(&mut self, d: Duration) {
        self.0.push(d.as_micros().min(u32::MAX as u128) as u32);
    }

    pub fn extend(&mut self, other: &Samples) {
        self.0.extend_from_slice(&other.0);
    }

    /// Nearest-rank percentile in milliseconds.
    fn pct_ms(sorted: &[u32], p: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank.min(sorted.len()) - 1] as f64 / 1000.0
    }

    pub fn summary(&self) -> Value {
        let mut v = self.0.clone();
        v.sort_unstable();
        let n = v.len();
        let mean = if n == 0 {
            0.0
        } else {
            v.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1000.0
        };
        json!({
            "n": n,
            "p50_ms": round3(Self::pct_ms(&v, 50.0)),
            "p90_ms": round3(Self::pct_ms(&v, 90.0)),
            "p99_ms": round3(Self::pct_ms(&v, 99.0)),
            "max_ms": round3(v.last().map_or(0.0, |&x| x as f64 / 1000.0)),
            "mean_ms": round3(mean),
        })
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Clock ticks per second of /proc/<pid>/stat times.
pub fn clk_tck() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

/// User + system CPU seconds of one process (0 when it is gone).
pub fn proc_cpu_secs(pid: u32, tck: f64) -> f64 {
    proc_cpu(pid, tck, false)
}

/// User + system CPU seconds of one process, plus those of its exited and reaped children when
/// `children` is set (PostgreSQL's postmaster reaps every backend, so a backend that has exited
/// still counts).
fn proc_cpu(pid: u32, tck: f64, children: bool) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // The command name may contain spaces: fields start after the last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14, stime 15.
    let utime = f.get(11).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    let stime = f.get(12).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    let (cutime, cstime) = if children {
        (
            f.get(13).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0),
            f.get(14).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0),
        )
    } else {
        (0.0, 0.0)
    };
    (utime + stime + cutime + cstime) / tck
}

/// Non-idle CPU seconds of the whole machine (all processes, ours and everybody else's).
pub fn machine_busy_secs(tck: f64) -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return 0.0;
    };
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice, already in user]
    let busy: f64 = v
        .iter()
        .enumerate()
        .filter(|(i, _)| ![3, 4, 8, 9].contains(i))
        .map(|(_, x)| x)
        .sum();
    busy / tck
}

/// CPU seconds of every process whose command name is `comm` (e.g. all PostgreSQL backends).
pub fn comm_cpu_secs(comm: &str, tck: f64) -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    let mut total = 0.0;
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if c.trim() == comm {
            total += proc_cpu(pid, tck, true);
        }
    }
    total
}

/// A field of /proc/<pid>/status in KiB (VmHWM, VmRSS).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// CPU time split between the server, the databases and the load generator over one phase.
pub struct CpuMeter {
    tck: f64,
    server_pid: u32,
    server: f64,
    postgres: f64,
    me: f64,
    machine: f64,
    /// Whether PostgreSQL works for this phase (false on SQLite phases: its CPU is then other
    /// people's, counted with the noise).
    postgres_is_ours: bool,
    wall: std::time::Instant,
}

impl CpuMeter {
    pub fn start(server_pid: u32, postgres_is_ours: bool) -> CpuMeter {
        let tck = clk_tck();
        CpuMeter {
            tck,
            server_pid,
            server: proc_cpu_secs(server_pid, tck),
            postgres: comm_cpu_secs("postgres", tck),
            me: proc_cpu_secs(std::process::id(), tck),
            machine: machine_busy_secs(tck),
            postgres_is_ours,
            wall: std::time::Instant::now(),
        }
    }

    /// CPU milliseconds per unit of work (task, operation) of each side.
    pub fn finish(&self, units: usize) -> Value {
        self.take().report(units)
    }

    /// The CPU seconds each side spent since `start`, to add up over several windows.
    pub fn take(&self) -> CpuTotals {
        let server = proc_cpu_secs(self.server_pid, self.tck) - self.server;
        let postgres = comm_cpu_secs("postgres", self.tck) - self.postgres;
        CpuTotals {
            wall: self.wall.elapsed().as_secs_f64(),
            server,
            postgres,
            me: proc_cpu_secs(std::process::id(), self.tck) - self.me,
            machine: machine_busy_secs(self.tck) - self.machine,
            postgres_is_ours: self.postgres_is_ours,
        }
    }
}

/// CPU seconds of each side over one or more measured windows.
#[derive(Default, Clone, Copy)]
pub struct CpuTotals {
    wall: f64,
    server: f64,
    postgres: f64,
    me: f64,
    machine: f64,
    postgres_is_ours: bool,
}

impl CpuTotals {
    pub fn add(&mut self, o: CpuTotals) {
        self.wall += o.wall;
        self.server += o.server;
        self.postgres += o.postgres;
        self.me += o.me;
        self.machine += o.machine;
        self.postgres_is_ours |= o.postgres_is_ours;
    }

    pub fn wall(&self) -> f64 {
        self.wall
    }

    pub fn report(&self, units: usize) -> Value {
        let CpuTotals {
            wall,
            server,
            postgres,
            me,
            machine,
            postgres_is_ours,
        } = *self;
        let ours = server + me + if postgres_is_ours { postgres } else { 0.0 };
        let per = |x: f64| round3(x * 1000.0 / units.max(1) as f64);
        json!({
            "wall_secs": round3(wall),
            "server_cpu_secs": round3(server),
            "postgres_cpu_secs": round3(postgres),
            "generator_cpu_secs": round3(me),
            "server_cpu_ms_per_unit": per(server),
            "postgres_cpu_ms_per_unit": if postgres_is_ours { json!(per(postgres)) } else { Value::Null },
            "generator_cpu_ms_per_unit": per(me),
            "cores_busy": round3(ours / wall.max(1e-9)),
            "machine_cores_busy": round3(machine / wall.max(1e-9)),
            "other_cores_busy": round3((machine - ours).max(0.0) / wall.max(1e-9)),
            "loadavg_end": crate::report::loadavg(),
            "note": "postgres = every process named postgres (exited backends included via the postmaster's reaped-children time; other users' backends too); other_cores_busy = the machine's busy CPU not spent by the server, postgres or this harness (other people's work: noise)",
        })
    }
}
