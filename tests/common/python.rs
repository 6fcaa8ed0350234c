#![allow(dead_code)]

//! Python tools the black-box tests drive the service with (the reference A2A client, a real
//! browser through selenium): each in a virtual environment under the target directory, made on
//! first use from a pinned requirements file. Without them a test fails; it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Serialises the making of environments between the tests of one process.
static MAKING: Mutex<()> = Mutex::new(());

/// Runs `cmd` to completion and panics, with its output, unless it succeeded: what it printed.
pub fn run_checked(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Python interpreter with the packages of `scripts/<dir>/requirements.txt`: the one named by
/// the environment variable `override_var`, else a virtual environment made (once) under the
/// target directory.
pub fn python_for(dir: &str, override_var: &str) -> PathBuf {
    if let Ok(python) = std::env::var(override_var) {
        return PathBuf::from(python);
    }
    let _guard = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    let requirements = scripts(dir).join("requirements.txt");
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{dir}-venv"));
    let python = venv.join("bin/python");
    let wanted = std::fs::read_to_string(&requirements)
        .unwrap_or_else(|e| panic!("{}: {e}", requirements.display()));
    let stamp = venv.join("requirements.stamp");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return python;
    }
    let _ = std::fs::remove_dir_all(&venv);
    run_checked(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv (Python >= 3.10 with venv is needed)",
    );
    run_checked(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements),
        &format!("pip install -r {}", requirements.display()),
    );
    std::fs::write(&stamp, wanted).expect("write the stamp");
    python
}

/// `scripts/<dir>` of the repository.
pub fn scripts(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(dir)
}
