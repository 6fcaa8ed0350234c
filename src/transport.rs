//! Where the service listens (API.md §15): `A2A_MAILBOX_BIND` is a comma-separated list of
//! `host:port` and `unix:/absolute/path` entries; every route is served alike on each.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
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

/// Gives a bound socket file its mode.
pub fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
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
