//! The checkpoint file itself: readable by its owner only, whole after concurrent saves, and
//! never written through a symlink planted beside it. No mailbox is needed: real files in a
//! directory of the test's own.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use a2a_mailbox_client::{Checkpoint, CHECKPOINT_VERSION};
use uuid::Uuid;

/// A fresh directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir = std::env::temp_dir().join(format!("a2a-checkpoint-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A checkpoint of `n` tasks, told apart by its context id.
fn sample(n: usize) -> Checkpoint {
    Checkpoint::from_json(
        &serde_json::json!({
            "version": CHECKPOINT_VERSION,
            "agent_id": "alice",
            "context_id": format!("c-{n}"),
            "active_task_ids": (0..n).map(|_| Uuid::now_v7()).collect::<Vec<_>>(),
        })
        .to_string(),
    )
    .unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_saved_checkpoint_is_readable_by_its_owner_only() {
    let scratch = Scratch::new();
    let file = scratch.0.join("alice.checkpoint.json");
    let checkpoint = sample(2);
    checkpoint.save(&file).unwrap();
    assert_eq!(mode(&file), 0o600, "a new checkpoint file");
    assert_eq!(Checkpoint::load(&file).unwrap(), checkpoint);

    // Saving over a file that others could read leaves one they cannot.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    sample(3).save(&file).unwrap();
    assert_eq!(mode(&file), 0o600, "a replaced checkpoint file");
    assert_eq!(
        names(&scratch.0),
        ["alice.checkpoint.json"],
        "no temp file left"
    );
}

#[test]
fn concurrent_saves_to_one_path_all_succeed_and_leave_a_whole_file() {
    let scratch = Scratch::new();
    let file = Arc::new(scratch.0.join("alice.checkpoint.json"));
    let samples: Arc<Vec<Checkpoint>> = Arc::new((1..=8).map(sample).collect());
    let start = Arc::new(Barrier::new(samples.len()));
    let savers: Vec<_> = (0..samples.len())
        .map(|i| {
            let (file, samples, start) = (file.clone(), samples.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                (0..40)
                    .map(|_| samples[i].save(file.as_path()))
                    .collect::<Result<Vec<()>, _>>()
            })
        })
        .collect();
    for saver in savers {
        saver.join().unwrap().expect("every save succeeds");
    }
    let saved = Checkpoint::load(file.as_path()).expect("a whole checkpoint");
    assert!(samples.contains(&saved), "{saved:?}");
    assert_eq!(
        names(&scratch.0),
        ["alice.checkpoint.json"],
        "no temp file left"
    );
}

#[test]
fn a_symlink_planted_beside_the_checkpoint_is_not_written_through() {
    let scratch = Scratch::new();
    let elsewhere = Scratch::new();
    let victim = elsewhere.0.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let file = scratch.0.join("alice.checkpoint.json");
    // Where a fixed temp name (`<file>.tmp`) would be written first.
    let planted = scratch.0.join("alice.checkpoint.json.tmp");
    symlink(&victim, &planted).unwrap();

    let checkpoint = sample(1);
    checkpoint.save(&file).unwrap();
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious",
        "the save wrote through the planted symlink"
    );
    assert!(!std::fs::symlink_metadata(&file).unwrap().is_symlink());
    assert_eq!(Checkpoint::load(&file).unwrap(), checkpoint);
    assert_eq!(std::fs::read_link(&planted).unwrap(), victim, "left alone");

    // A symlink at the checkpoint's own path is replaced, not followed.
    std::fs::remove_file(&file).unwrap();
    symlink(&victim, &file).unwrap();
    checkpoint.save(&file).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!std::fs::symlink_metadata(&file).unwrap().is_symlink());
    assert_eq!(mode(&file), 0o600);
}
