//! The engines the service can open, and the one it opens when none is configured: the only
//! place above the engines' folders that names them (with `rows.rs`'s [`Row`] and [`Rows`],
//! which list the row types of the engines' `sqlx` databases).
//!
//! [`Row`]: super::rows::Row
//! [`Rows`]: super::rows::Rows

use std::path::PathBuf;

use super::backend::Engine;
use super::{postgres, sqlite};

/// The engines the service can open, in the order their URL prefixes are tried.
pub(super) const ENGINES: [Engine; 2] = [sqlite::ENGINE, postgres::ENGINE];

/// The engine of [`DEFAULT_DATABASE_URL`].
pub const DEFAULT_ENGINE: Engine = sqlite::ENGINE;

/// The database the service opens when none is configured: a file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://a2a-mailbox.db";

impl Engine {
    /// The engine a database URL names.
    pub fn from_url(url: &str) -> anyhow::Result<Engine> {
        ENGINES
            .into_iter()
            .find(|e| e.schemes.iter().any(|s| url.starts_with(s)))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unsupported DATABASE_URL {url:?}: use sqlite://file.db, sqlite:///abs/path.db?mode=rwc or postgres://user@host:port/db"
                )
            })
    }

    /// The file a database URL keeps the database in, when it is one on this machine (`None`
    /// for a server's database, or a URL no engine serves).
    pub fn local_file(url: &str) -> Option<PathBuf> {
        Engine::from_url(url)
            .ok()
            .and_then(|engine| (engine.local_file)(url))
    }
}

#[cfg(test)]
mod tests {
    use super::{Engine, DEFAULT_DATABASE_URL, DEFAULT_ENGINE};

    #[test]
    fn the_default_url_names_the_default_engine() {
        let engine = Engine::from_url(DEFAULT_DATABASE_URL).expect("an engine");
        assert_eq!(engine.name(), DEFAULT_ENGINE.name());
    }
}
