//! CPU time spent by the database's backends over a measured stretch, read from
//! `/proc`, so only where the measuring process runs on the database's machine (the
//! benches, `tasklane load` beside a local database); elsewhere it reads no backend
//! and the load report says `n/a`.
//!
//! CPU time per task is what a change to the hot path saves, and it leaves out what the
//! wall clock counts besides: waiting on locks, on the network, and time the
//! hypervisor steals. It does not make a noisy box quiet (a shared CPU's caches and
//! clock still vary): compare it within one round, as the rates.

use std::collections::HashMap;

use tokio_postgres::Client;

/// The CPU time of each backend connected to one database, at one moment.
#[derive(Debug, Clone, Default)]
pub struct Backends {
    seconds: HashMap<i32, f64>,
}

impl Backends {
    /// The other backends connected to `client`'s database (the fleet's, the load
    /// generator's), each with the CPU seconds it has used so far.
    pub async fn read(client: &Client) -> anyhow::Result<Backends> {
        let seconds = super::store::backend_pids(client)
            .await?
            .into_iter()
            .filter(|pid| is_postgres(*pid))
            .filter_map(|pid| Some((pid, super::fleet::cpu_seconds(pid as u32)?)))
            .collect();
        Ok(Backends { seconds })
    }

    /// Whether no backend's CPU time could be read (the database runs elsewhere).
    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }

    /// CPU seconds the backends of `later` used since `self`, backend by backend: one
    /// that connected meanwhile counts from zero. A backend that disconnected meanwhile
    /// is missed (pools keep their connections for a run, so few are).
    pub fn used_until(&self, later: &Backends) -> f64 {
        later
            .seconds
            .iter()
            .map(|(pid, now)| now - self.seconds.get(pid).copied().unwrap_or(0.0))
            .filter(|used| *used > 0.0)
            .sum()
    }
}

/// CPU seconds the whole PostgreSQL server has used so far: the postmaster, every live
/// child (backends, autovacuum workers, the checkpointer, the WAL writer) and the
/// children it has reaped (`cutime`, `cstime`), so the work of autovacuum workers and
/// connections that came and went is counted too. `backend` is any backend's pid; None
/// where the server runs elsewhere.
pub fn server_seconds(backend: i32) -> Option<f64> {
    if !is_postgres(backend) {
        return None;
    }
    let postmaster = stat_fields(backend as u32)?.get(1)?.parse::<u32>().ok()?;
    let own = stat_fields(postmaster)?;
    let ticks = |fields: &[String], from: usize, to: usize| -> f64 {
        (from..to)
            .filter_map(|i| fields.get(i)?.parse::<f64>().ok())
            .sum()
    };
    let mut total = ticks(&own, 11, 15);
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(fields) = stat_fields(pid) else {
            continue;
        };
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(postmaster) {
            total += ticks(&fields, 11, 13);
        }
    }
    Some(total / 100.0)
}

/// The fields of `/proc/<pid>/stat` after the command name: index 0 is the state, 1
/// the parent's pid, 11 and 12 user and system time, 13 and 14 those of reaped
/// children (in clock ticks, 100 a second on every Linux this runs on).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are space separated.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split(' ').map(str::to_owned).collect())
}

/// Whether `pid` on this machine is a PostgreSQL process: with the database elsewhere,
/// a local process that happens to have a backend's pid is not read.
fn is_postgres(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim_end() == "postgres")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pairs: &[(i32, f64)]) -> Backends {
        Backends {
            seconds: pairs.iter().copied().collect(),
        }
    }

    #[test]
    fn a_backend_counts_what_it_used_since_the_first_reading() {
        let before = at(&[(1, 2.0), (2, 5.0)]);
        let after = at(&[(1, 2.5), (2, 7.0)]);
        assert!((before.used_until(&after) - 2.5).abs() < 1e-9);
    }

    #[test]
    fn a_backend_that_connected_meanwhile_counts_from_zero() {
        let before = at(&[(1, 2.0)]);
        let after = at(&[(1, 2.0), (3, 0.75)]);
        assert!((before.used_until(&after) - 0.75).abs() < 1e-9);
    }

    #[test]
    fn a_pid_taken_by_a_newer_backend_subtracts_nothing() {
        // A pid reused by a newer backend with less time than the old one had reads
        // as zero, not as a negative share.
        let before = at(&[(1, 2.0), (2, 9.0)]);
        let after = at(&[(1, 3.0), (2, 0.5)]);
        assert!((before.used_until(&after) - 1.0).abs() < 1e-9);
    }
}
