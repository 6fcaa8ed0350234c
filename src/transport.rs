//! Where the service listens (API.md §15): `A2A_MAILBOX_BIND` is a comma-separated list of
//! `host:port` and `unix:/absolute/path` entries; every route is served alike on each.

use std::os::unix::fs::PermissionsExt;
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

/// Makes `path` free for a new socket: a stale socket file of a dead process is removed; a
/// socket another server still answers on, or a file that is not a socket, is an error.
pub fn claim_socket_path(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        bail!(
            "{} exists and is not a socket; refusing to replace it",
            path.display()
        );
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        bail!(
            "another server is listening on {}; stop it or choose another path",
            path.display()
        );
    }
    std::fs::remove_file(path)
        .with_context(|| format!("removing the stale socket {}", path.display()))
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
}
