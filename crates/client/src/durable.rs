//! Replacing a file whole and privately: a fresh temp file beside it, written, synced, renamed
//! over it, and the directory synced.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How many fresh temp names are tried before giving up (each is 128 random bits: a clash
/// means someone is planting files, not bad luck).
const TRIES: u32 = 8;

/// Replaces the file at `path` with `contents`: a crash leaves the old file or the new one,
/// never half of one, and once this returns the new one survives a power loss.
///
/// The contents go first to a temp file of a fresh random name in the same directory, created
/// exclusively (`O_CREAT|O_EXCL`, which never follows a symlink, dangling or not, and never
/// opens a file that already exists) with mode 0600 from the start (on Unix), so no other user
/// can read it at any moment; then it is synced, renamed over `path` (replacing whatever entry
/// is there, a symlink included, without following it) and the directory is synced. Concurrent
/// saves to one path each use their own temp file; the last rename wins.
pub(crate) fn replace(path: &Path, contents: &[u8]) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (tmp, mut file) = create_temp(dir, name)?;
    let written = file.write_all(contents).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        // The temp file is ours (made exclusively above) and was not renamed.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(dir)
}

/// A new file `.<name>.<random>.tmp` in `dir`, made by this call.
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> io::Result<(PathBuf, File)> {
    let mut tries = 0;
    loop {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", uuid::Uuid::new_v4().simple()));
        let tmp = dir.join(tmp_name);
        match create_private(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries + 1 < TRIES => {
                tries += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Creates `path` for writing; fails when anything, a symlink included, is already there.
/// On Unix the file has mode 0600 from its creation (the umask can only narrow it).
fn create_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    // create_new is O_CREAT|O_EXCL: POSIX has it fail on an existing name, and not follow a
    // symlink there (as O_NOFOLLOW would).
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Makes the directory's entries (the rename) durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_name_already_taken_is_never_opened_nor_followed() {
        let dir = std::env::temp_dir().join(format!("a2a-durable-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nothing-here"), &dangling).unwrap();
        for taken in [&victim, &link, &dangling] {
            let e = create_private(taken).unwrap_err();
            assert_eq!(
                e.kind(),
                io::ErrorKind::AlreadyExists,
                "{}",
                taken.display()
            );
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(
            !dir.join("nothing-here").exists(),
            "a dangling link's target was created"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
