//! Verification keys published by an identity provider as a JWKS (RFC 7517,
//! docs/configuration.md#tokens-from-an-identity-provider).
//!
//! The set is fetched at start-up, again every refresh interval, and at once when a token names
//! a key (`kid`) the set lacks, at most once per [`UNKNOWN_KID_PAUSE`]: a flood of made-up `kid`s
//! costs one fetch per pause, and every request that finds an unknown `kid` meanwhile waits for
//! the fetch under way instead of starting its own. A failed fetch keeps the keys known before,
//! so an identity provider that is down stops no token it signed with a known key. A key that
//! left the set is forgotten at the next fetch that succeeds, and [`Jwks::generation`] changes
//! so that tokens verified with it are checked again (and refused).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// The shortest time between two fetches caused by unknown `kid`s.
pub const UNKNOWN_KID_PAUSE: Duration = Duration::from_secs(30);
/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest key set read (a provider's holds a handful of keys).
const MAX_BYTES: usize = 1 << 20;
/// The most keys kept from one set.
const MAX_KEYS: usize = 100;

/// One key of the set: its `kid`, the algorithm it verifies, the key, and its JWK as published
/// (to tell whether a later set still holds the same key).
struct Key {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
    published: String,
}

/// The identity provider's keys.
pub struct Jwks {
    url: reqwest::Url,
    client: reqwest::Client,
    refresh: Duration,
    keys: RwLock<Arc<Vec<Key>>>,
    generation: AtomicU64,
    /// When the last fetch caused by an unknown `kid` started; held while it runs.
    unknown: tokio::sync::Mutex<Option<Instant>>,
    fetched: AtomicU64,
    failed: AtomicU64,
}

/// What a token's header asks for, as found in the set.
pub enum Found<R> {
    Key(R),
    /// The set has no key with the token's `kid` (or, without a `kid`, no single key of its
    /// algorithm).
    Unknown,
    /// The key is there, but verifies another algorithm.
    OtherAlgorithm(Algorithm),
}

impl Jwks {
    /// A key set fetched from `url`: HTTPS, or plain HTTP from a loopback address only. Refused
    /// otherwise, with a message that names the setting.
    pub fn new(url: &str, refresh: Duration) -> anyhow::Result<Jwks> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| anyhow::anyhow!("A2A_MAILBOX_JWT_JWKS_URL {url:?} is not a URL: {e}"))?;
        let host = url.host_str().unwrap_or_default();
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => anyhow::bail!(
                "A2A_MAILBOX_JWT_JWKS_URL {url} must be an https:// URL (plain http:// only to a \
                 loopback address such as 127.0.0.1): keys fetched in the clear could be replaced \
                 on the way"
            ),
        }
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            // A redirect could lead to plain HTTP; a provider's JWKS URL answers directly.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("a2a-mailbox/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Jwks {
            url,
            client,
            refresh,
            keys: RwLock::new(Arc::new(Vec::new())),
            generation: AtomicU64::new(0),
            unknown: tokio::sync::Mutex::new(None),
            fetched: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
    }

    /// Changes whenever a key leaves the set (or is replaced under its `kid`).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Fetches that succeeded and that failed, for `/metrics`.
    pub fn fetches(&self) -> (u64, u64) {
        (
            self.fetched.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }

    /// Calls `use_key` with the key a token with this `kid` and `alg` is verified by.
    pub fn with_key<R>(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
        use_key: impl FnOnce(&DecodingKey) -> R,
    ) -> Found<R> {
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner()).clone();
        let key = match kid {
            Some(kid) => keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut of_alg = keys.iter().filter(|k| k.alg == alg);
                match (of_alg.next(), of_alg.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            }
        };
        match key {
            None => Found::Unknown,
            Some(k) if k.alg != alg => Found::OtherAlgorithm(k.alg),
            Some(k) => Found::Key(use_key(&k.key)),
        }
    }

    /// Fetches the set because a token named a key it lacks, unless such a fetch started less
    /// than [`UNKNOWN_KID_PAUSE`] ago; a fetch under way is waited for.
    pub async fn fetch_for_unknown_kid(&self) {
        let mut last = self.unknown.lock().await;
        if last.is_some_and(|at| at.elapsed() < UNKNOWN_KID_PAUSE) {
            return;
        }
        *last = Some(Instant::now());
        self.fetch().await;
    }

    /// Fetches the set every refresh interval, for as long as the process runs.
    pub fn spawn_refresher(self: &Arc<Self>) {
        let jwks = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(jwks.refresh).await;
                jwks.fetch().await;
            }
        });
    }

    /// Fetches the set and keeps it; on failure keeps the keys known and logs why.
    pub async fn fetch(&self) {
        match self.download().await.and_then(|body| parse(&body)) {
            Ok(keys) => {
                self.fetched.fetch_add(1, Ordering::Relaxed);
                if keys.is_empty() {
                    tracing::warn!(url = %self.url, "the JWKS holds no key this service can use (RS256, ES256 or EdDSA signing keys)");
                }
                let mut kept = self.keys.write().unwrap_or_else(|e| e.into_inner());
                let gone = kept.iter().any(|old| {
                    !keys
                        .iter()
                        .any(|new| new.kid == old.kid && new.published == old.published)
                });
                *kept = Arc::new(keys);
                if gone {
                    self.generation.fetch_add(1, Ordering::AcqRel);
                }
            }
            Err(why) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(url = %self.url, "could not fetch the JWKS (the keys known before stay in use): {why}");
            }
        }
    }

    async fn download(&self) -> Result<Vec<u8>, String> {
        let mut res = self
            .client
            .get(self.url.clone())
            .header("accept", "application/jwk-set+json, application/json")
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !res.status().is_success() {
            return Err(format!("it answered HTTP {}", res.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| e.to_string())? {
            if body.len().saturating_add(chunk.len()) > MAX_BYTES {
                return Err(format!("the key set is larger than {MAX_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// The signing keys of a JWKS document this service can verify with; other keys (encryption
/// keys, other algorithms, entries it cannot read) are left out.
fn parse(body: &[u8]) -> Result<Vec<Key>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let entries = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("not a JWKS: no \"keys\" list")?;
    Ok(entries
        .iter()
        .filter_map(|entry| {
            let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                return None;
            }
            let alg = algorithm(&jwk)?;
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Key {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
                published: entry.to_string(),
            })
        })
        .take(MAX_KEYS)
        .collect())
}

/// The algorithm a key verifies: its own `alg`, else the one its type and curve imply; only
/// RS256, ES256 and EdDSA.
fn algorithm(jwk: &Jwk) -> Option<Algorithm> {
    let alg = match (jwk.common.key_algorithm, &jwk.algorithm) {
        (Some(KeyAlgorithm::RS256), AlgorithmParameters::RSA(_)) => Algorithm::RS256,
        (Some(KeyAlgorithm::ES256), AlgorithmParameters::EllipticCurve(p)) => {
            (p.curve == EllipticCurve::P256).then_some(Algorithm::ES256)?
        }
        (Some(KeyAlgorithm::EdDSA), AlgorithmParameters::OctetKeyPair(p)) => {
            (p.curve == EllipticCurve::Ed25519).then_some(Algorithm::EdDSA)?
        }
        (Some(_), _) => return None,
        (None, AlgorithmParameters::RSA(_)) => Algorithm::RS256,
        (None, AlgorithmParameters::EllipticCurve(p)) if p.curve == EllipticCurve::P256 => {
            Algorithm::ES256
        }
        (None, AlgorithmParameters::OctetKeyPair(p)) if p.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        (None, _) => return None,
    };
    Some(alg)
}

#[cfg(test)]
mod tests;
