//! A streaming standby of a private cluster, and the two moves of a failover: the
//! primary dies as in a crash, the standby is promoted. What an HA manager does around
//! them (which standby, `synchronous_standby_names`, fencing) stays with the caller.

use std::path::PathBuf;

use anyhow::Context as _;

use super::{run, ClusterOptions, PrivateCluster};

impl PrivateCluster {
    /// A hot standby of this cluster in a directory of its own, on its own port:
    /// `pg_basebackup -R` over TCP (initdb's trust rules allow replication from
    /// 127.0.0.1), then a start with `options`. The copy carries this cluster's
    /// `postgresql.auto.conf`, so what `ALTER SYSTEM` set here before (e.g.
    /// `synchronous_standby_names`) holds on the standby too, as it would on a copy of
    /// a real primary. Blocking: it runs `pg_basebackup` and `pg_ctl`, and returns once
    /// the standby accepts read-only connections (it may not be streaming yet).
    pub fn start_standby(&self, options: &ClusterOptions) -> anyhow::Result<PrivateCluster> {
        let launcher = super::Launcher::detect()?;
        let mut standby = PrivateCluster::new_dir(self.pg_ctl.clone(), launcher)?;
        let basebackup = sibling(&self.pg_ctl, "pg_basebackup")?;
        let mut cmd = standby.launcher.command(&basebackup, &standby.dir);
        cmd.arg("-D")
            .arg(standby.data_dir())
            .arg("-d")
            .arg(format!(
                "host=127.0.0.1 port={} user=postgres application_name=tasklane-standby",
                self.port
            ))
            // A fast checkpoint: the default spreads it over minutes. No sync, as for
            // initdb: a machine that goes down takes the test with it.
            .args(["-R", "-X", "stream", "-c", "fast", "--no-sync"]);
        run(cmd, "pg_basebackup")?;
        standby.write_files(options)?;
        standby
            .start_on_a_free_port(options)
            .context("start the standby")?;
        Ok(standby)
    }

    /// `pg_ctl promote`: the standby leaves recovery and takes writes; returns once it
    /// has. Blocking.
    pub fn promote(&self) -> anyhow::Result<()> {
        let mut cmd = self.launcher.command(&self.pg_ctl, &self.dir);
        cmd.args(["promote", "-w", "-D"]).arg(self.data_dir());
        run(cmd, "pg_ctl promote")
    }

    /// `pg_ctl stop -m immediate`: the server is gone at once, as in a crash, and is not
    /// started again; the directory stays until the cluster is dropped. Blocking.
    pub fn stop_immediate(&self) -> anyhow::Result<()> {
        let mut cmd = self.launcher.command(&self.pg_ctl, &self.dir);
        cmd.args(["stop", "-m", "immediate", "-w", "-D"])
            .arg(self.data_dir());
        run(cmd, "pg_ctl stop")
    }
}

/// `name` in the directory of `pg_ctl` (already canonical), so the tools of one
/// PostgreSQL version go together.
fn sibling(pg_ctl: &std::path::Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = pg_ctl.with_file_name(name);
    anyhow::ensure!(path.is_file(), "no {name} beside {}", pg_ctl.display());
    Ok(path)
}
