//! A full disk under SQLite (docs/contract.md#details): while nothing can be written every write answers 503
//! `storage_unavailable` and `/readyz` answers 503 (within its check interval, a second); the
//! first write after space returns succeeds without a restart, and no acknowledged task is lost.
//! The database lives on a small tmpfs of its own whose free space a filler file takes. SQLite
//! only: PostgreSQL's disk is its server's; its faults are the pool's (`unavailable.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::unavailable::readyz_becomes;
use crate::common::*;

/// A tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    /// `None` when this process may not mount (not root).
    fn mount(at: &Path, size: &str) -> Option<SmallDisk> {
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return None;
        }
        std::fs::create_dir_all(at).expect("creating the mount point");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .expect("running mount");
        assert!(ok.success(), "mount -t tmpfs failed as root");
        Some(SmallDisk(at.to_owned()))
    }

    /// Takes every free byte: writes a filler file until the disk refuses.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.0.join("filler")).expect("creating the filler");
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        let small = vec![0u8; 512];
        while f.write_all(&small).is_ok() {}
        let _ = f.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.0.join("filler")).expect("removing the filler");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_503_and_the_first_write_after_it_succeeds() {
    run(
        Engine::Sqlite,
        concat!(module_path!(), "::sqlite"),
        AppConfig::default(),
        |mut app| async move {
            let Some(disk) = SmallDisk::mount(&app.dir.join("small-disk"), "16m") else {
                println!("SKIPPED: mounting a tmpfs needs root");
                return;
            };
            app.kill();
            app.db_url = format!("sqlite://{}/mailbox.db?mode=rwc", disk.0.display());
            app.start().await;
            let alice = app.alice();
            let mut acknowledged = Vec::new();
            acknowledged.push(app.send_ok(&alice, &task("alice", "bob")).await);

            // Full: sends are refused with 503 once nothing more fits (a few may still fit in
            // pages SQLite had already allocated).
            disk.fill();
            let mut refused = 0;
            for _ in 0..5_000 {
                let t = task("alice", "bob");
                let r = app.send(&alice, &t).await;
                match r.status {
                    201 => acknowledged.push(t["id"].as_str().unwrap().to_owned()),
                    503 => {
                        assert_unavailable(&r);
                        refused += 1;
                        if refused == 3 {
                            break;
                        }
                    }
                    _ => panic!("a send on a full disk: {} {}", r.status, r.text),
                }
            }
            assert_eq!(refused, 3, "a full disk never refused a send");
            // Readiness is checked at most once a second: it shows the full disk within that.
            let ready = readyz_becomes(&app, 503, Duration::from_secs(5)).await;
            assert_unavailable(&ready);

            // Space returns: the very next write succeeds, and readiness follows within about
            // a second.
            disk.free();
            acknowledged.push(app.send_ok(&alice, &task("alice", "bob")).await);
            readyz_becomes(&app, 200, Duration::from_secs(5)).await;

            // Nothing acknowledged was lost, also across a crash.
            app.restart().await;
            for id in &acknowledged {
                assert_eq!(app.status_ok(id).await["state"], "queued", "task {id}");
            }
        },
    )
    .await;
}
