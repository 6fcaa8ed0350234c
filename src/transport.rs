//! Where the service listens (docs/contract.md#transports): `A2A_MAILBOX_BIND` is a comma-separated list of
//! `host:port` and `unix:/absolute/path` entries; every route is served alike on each.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// One entry of `A2A_MAILBOX_BIND`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bind {
    /// `host:port` (port 0 picks a free port).
    Tcp(String),
    /// `unix:/absolute/path`: a Unix domain socket.
    Unix(PathBuf),
}

/// Every entry of `A2A_MAILBOX_BIND`, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binds(pub Vec<Bind>);

impl std::str::FromStr for Binds {
    type Err = String;
    fn from_str(list: &str) -> Result<Binds, String> {
        parse_binds(list).map(Binds)
    }
}

/// Parses `A2A_MAILBOX_BIND`: at least one entry; a Unix socket path must be absolute.
pub fn parse_binds(list: &str) -> Result<Vec<Bind>, String> {
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(format!("A2A_MAILBOX_BIND {list:?} has an empty entry"));
        }
        let bind = match entry.strip_prefix("unix:") {
            Some(path) if path.starts_with('/') => Bind::Unix(PathBuf::from(path)),
            Some(path) => {
                return Err(format!(
                    "the Unix socket path {path:?} must be absolute (unix:/run/a2a/mailbox.sock)"
                ))
            }
            None => Bind::Tcp(entry.to_owned()),
        };
        if out.contains(&bind) {
            return Err(format!("A2A_MAILBOX_BIND names {entry:?} twice"));
        }
        out.push(bind);
    }
    Ok(out)
}

/// Parses `A2A_MAILBOX_UNIX_MODE`, an octal file mode such as `0660`.
pub fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("{s:?} is not an octal file mode such as 0660"))
}

/// What connecting to an existing socket file tells of it.
#[derive(Debug)]
enum Found {
    /// Someone accepts connections there, or will once its backlog drains (EAGAIN).
    Live,
    /// Nobody listens (ECONNREFUSED): a socket file left behind by a process that is gone.
    Stale,
    /// The file went away meanwhile.
    Gone,
    /// Anything else (EACCES, EPERM, EPROTOTYPE of a datagram socket, ...): not this server's to
    /// judge, so not its to remove.
    Unknown(io::Error),
}

/// Only ECONNREFUSED says nobody is there. A permission error says nothing of whether someone
/// listens (a live socket of another user answers EACCES), so it is never taken for stale.
fn classify(connected: io::Result<()>) -> Found {
    match connected {
        Ok(()) => Found::Live,
        Err(e) => match e.kind() {
            io::ErrorKind::ConnectionRefused => Found::Stale,
            io::ErrorKind::WouldBlock => Found::Live,
            io::ErrorKind::NotFound => Found::Gone,
            _ => Found::Unknown(e),
        },
    }
}

/// Connects to the socket at `path` without waiting (a live server whose backlog is full
/// answers EAGAIN rather than keeping start-up waiting).
fn connect_to(path: &Path) -> io::Result<()> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.set_nonblocking(true)?;
    socket.connect(&SockAddr::unix(path)?)
}

/// The file's device and inode.
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// Makes `path` free for a new socket: a stale socket file (nobody listens) is removed. A socket
/// someone answers on, a socket whose connection fails for any other reason (EACCES, EPERM,
/// ...), or a file that is not a socket is a start-up error naming the path and the reason, and
/// stays as it is.
pub fn claim_socket_path(path: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => bail!("cannot inspect {}: {e}", path.display()),
    };
    if !meta.file_type().is_socket() {
        bail!(
            "{} exists and is not a socket; refusing to replace it",
            path.display()
        );
    }
    match classify(connect_to(path)) {
        Found::Live => bail!(
            "another server is listening on {}; stop it or choose another path",
            path.display()
        ),
        Found::Gone => Ok(()),
        Found::Unknown(e) => bail!(
            "{} is a socket this server cannot connect to ({e}); it may be another program's, \
             so it stays: remove it or choose another path",
            path.display()
        ),
        // Removed only if it is still the file that refused the connection.
        Found::Stale => match std::fs::symlink_metadata(path) {
            Ok(now) if identity(&now) == identity(&meta) => std::fs::remove_file(path)
                .with_context(|| format!("removing the stale socket {}", path.display())),
            Ok(_) => bail!("{} was replaced while it was checked", path.display()),
            Err(_) => Ok(()),
        },
    }
}

/// A socket file this server made: its path and its identity (device, inode) at bind.
pub struct SocketFile {
    path: PathBuf,
    id: (u64, u64),
    /// A handle on the listening socket, kept until the file is removed: while the socket is
    /// open its inode cannot be freed, so no other file can be given the same identity.
    _held: UnixListener,
}

/// What [`SocketFile::remove`] found at the path.
#[derive(Debug, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// Another file is there now (someone replaced the socket); it stays.
    Replaced,
    Gone,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file if it is still the socket this server made.
    pub fn remove(&self) -> io::Result<Removal> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if identity(&meta) == self.id => {
                std::fs::remove_file(&self.path).map(|()| Removal::Removed)
            }
            Ok(_) => Ok(Removal::Replaced),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Removal::Gone),
            Err(e) => Err(e),
        }
    }
}

/// Binds a Unix socket at `path` whose file has `mode` from the moment the path exists.
///
/// `bind` creates the file with the umask's mode, so a socket bound at `path` and chmod-ed after
/// would be open to whom the umask allows for that moment. Setting a restrictive umask around
/// `bind` instead would affect every thread of the process (the database's threads create files
/// too). So the socket is bound in a private directory (mode 0700) beside `path`, given its
/// mode there, and hard-linked into place: `link` fails if the path exists (a file that appeared
/// meanwhile is never replaced, as `rename` would), and it needs the same file system, which a
/// directory beside `path` is. The staging name is then removed, and the private directory.
pub fn bind_socket(path: &Path, mode: u32) -> anyhow::Result<(UnixListener, SocketFile)> {
    claim_socket_path(path)?;
    let parent = path
        .parent()
        .with_context(|| format!("{} names no directory", path.display()))?;
    let private = private_dir(parent)?;
    let staged = private.join("s");
    let bound = (|| {
        let listener = UnixListener::bind(&staged).with_context(|| {
            format!(
                "cannot listen on {} (bound first as {})",
                path.display(),
                staged.display()
            )
        })?;
        set_mode(&staged, mode)?;
        std::fs::hard_link(&staged, path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        let held = listener.try_clone()?;
        let id = identity(&std::fs::symlink_metadata(&staged)?);
        let file = SocketFile {
            path: path.to_owned(),
            id,
            _held: held,
        };
        Ok((listener, file))
    })();
    let _ = std::fs::remove_file(&staged);
    let _ = std::fs::remove_dir(&private);
    bound
}

/// A new directory in `parent` only this process's user may enter, with a short name (a socket
/// path is limited to 107 bytes).
fn private_dir(parent: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let pid = std::process::id();
    for n in 0..100 {
        let dir = parent.join(format!(".a2a.{pid}.{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create a directory in {}", parent.display()))
            }
        }
    }
    bail!("cannot create a private directory in {}", parent.display())
}

/// Gives a bound socket file its mode.
fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting mode {mode:o} on {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_lists() {
        assert_eq!(
            parse_binds("127.0.0.1:8080, unix:/run/a2a.sock").unwrap(),
            vec![
                Bind::Tcp("127.0.0.1:8080".into()),
                Bind::Unix("/run/a2a.sock".into())
            ]
        );
        assert!(parse_binds("unix:relative.sock").is_err());
        assert!(parse_binds("127.0.0.1:1,").is_err());
        assert!(parse_binds("unix:/a,unix:/a").is_err());
        assert_eq!(parse_mode("0660"), Ok(0o660));
        assert_eq!(parse_mode("600"), Ok(0o600));
        assert!(parse_mode("0999").is_err() && parse_mode("7777").is_err());
    }

    /// Only ECONNREFUSED makes a socket file stale; the errno values are Linux's.
    #[cfg(target_os = "linux")]
    #[test]
    fn only_a_refused_connection_is_stale() {
        let errno = |n| Err(io::Error::from_raw_os_error(n));
        const EPERM: i32 = 1;
        const ENOENT: i32 = 2;
        const EAGAIN: i32 = 11;
        const EACCES: i32 = 13;
        const EPROTOTYPE: i32 = 91;
        const ECONNREFUSED: i32 = 111;
        assert!(matches!(classify(Ok(())), Found::Live));
        assert!(matches!(classify(errno(ECONNREFUSED)), Found::Stale));
        assert!(matches!(classify(errno(EAGAIN)), Found::Live));
        assert!(matches!(classify(errno(ENOENT)), Found::Gone));
        for n in [EACCES, EPERM, EPROTOTYPE] {
            assert!(matches!(classify(errno(n)), Found::Unknown(_)), "errno {n}");
        }
    }
}
