//! The settings of identity: how tokens are verified (`A2A_MAILBOX_JWT_*`) and the MCP
//! endpoint as an OAuth resource server (`A2A_MAILBOX_MCP_RESOURCE`, `A2A_MAILBOX_OAUTH_*`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use jsonwebtoken::{Algorithm, DecodingKey};

use super::ms::duration_setting;
use crate::auth::jwks::Jwks;
use crate::auth::{ClaimNames, Keys, TokenRules, Verifier};

#[derive(Args, Debug, Clone)]
pub struct JwtArgs {
    /// HS256 secret: the raw bytes of this string.
    #[arg(long, env = "A2A_MAILBOX_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// A file holding the HS256 secret (a trailing newline is ignored).
    #[arg(long, env = "A2A_MAILBOX_JWT_SECRET_FILE")]
    pub jwt_secret_file: Option<PathBuf>,
    /// Verification algorithm: HS256 (secret), or RS256 / ES256 / EdDSA with
    /// --jwt-public-key-file [default: HS256]. Not with --jwt-jwks-url.
    #[arg(long, env = "A2A_MAILBOX_JWT_ALGORITHM")]
    pub jwt_algorithm: Option<String>,
    /// PEM public key for RS256 / ES256 / EdDSA. Not with --jwt-jwks-url.
    #[arg(long, env = "A2A_MAILBOX_JWT_PUBLIC_KEY_FILE")]
    pub jwt_public_key_file: Option<PathBuf>,
    /// An identity provider's JWKS (https://, or http:// to a loopback address): tokens naming a
    /// key (kid) of it are verified with that key (RS256, ES256, EdDSA).
    #[arg(long, env = "A2A_MAILBOX_JWT_JWKS_URL")]
    pub jwt_jwks_url: Option<String>,
    /// How often the JWKS is fetched again, in milliseconds.
    #[arg(long, env = "A2A_MAILBOX_JWT_JWKS_REFRESH_MS", default_value_t = 600_000,
          value_parser = clap::value_parser!(u64).range(1_000..))]
    pub jwt_jwks_refresh_ms: u64,
    /// When set, tokens must carry this `aud`; when unset, tokens without `aud` are accepted.
    #[arg(long, env = "A2A_MAILBOX_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// When set, tokens must carry this `iss` (a comma-separated list: one of these).
    #[arg(long, env = "A2A_MAILBOX_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// The claim that holds the caller's agent id.
    #[arg(long, env = "A2A_MAILBOX_JWT_SUBJECT_CLAIM", default_value = "sub")]
    pub jwt_subject_claim: String,
    /// The claim that holds the caller's capabilities (an OAuth `scope` or `scp` is read too).
    #[arg(long, env = "A2A_MAILBOX_JWT_CAPS_CLAIM", default_value = "caps")]
    pub jwt_caps_claim: String,
}

/// The MCP endpoint as an OAuth 2.1 resource server (docs/mcp.md#signing-in-with-oauth).
#[derive(Args, Debug, Clone)]
pub struct McpArgs {
    /// The canonical URL of the MCP endpoint (e.g. https://mailbox.example.com/mcp): publishes
    /// its protected-resource metadata and accepts on /mcp only tokens issued for it (aud).
    #[arg(long, env = "A2A_MAILBOX_MCP_RESOURCE")]
    pub mcp_resource: Option<String>,
    /// The authorization servers MCP clients sign in with (comma-separated issuer URLs)
    /// [default: the JWT issuers].
    #[arg(long, env = "A2A_MAILBOX_OAUTH_ISSUERS")]
    pub oauth_issuers: Option<String>,
    /// The scopes MCP clients may ask for (space- or comma-separated).
    #[arg(long, env = "A2A_MAILBOX_OAUTH_SCOPES", default_value = "")]
    pub oauth_scopes: String,
}

/// The items of a comma- (or space-) separated list.
fn list(text: &str, also_space: bool) -> Vec<String> {
    text.split(|c: char| c == ',' || (also_space && c.is_whitespace()))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl JwtArgs {
    /// The configured HS256 secret, if any (flag, environment, or secret file).
    pub fn configured_secret(&self) -> anyhow::Result<Option<Vec<u8>>> {
        if let Some(s) = &self.jwt_secret {
            if s.is_empty() {
                bail!("A2A_MAILBOX_JWT_SECRET is set but empty");
            }
            return Ok(Some(s.as_bytes().to_vec()));
        }
        if let Some(path) = &self.jwt_secret_file {
            return read_secret_file(path).map(Some);
        }
        Ok(None)
    }

    pub fn algorithm(&self) -> anyhow::Result<Algorithm> {
        let Some(alg) = &self.jwt_algorithm else {
            return Ok(Algorithm::HS256);
        };
        Ok(match alg.to_ascii_uppercase().as_str() {
            "HS256" => Algorithm::HS256,
            "RS256" => Algorithm::RS256,
            "ES256" => Algorithm::ES256,
            "EDDSA" => Algorithm::EdDSA,
            other => bail!("unsupported --jwt-algorithm {other}: use HS256, RS256, ES256 or EdDSA"),
        })
    }

    /// Whether tokens can be verified without a secret (a public key, or an identity provider).
    pub fn needs_no_secret(&self) -> anyhow::Result<bool> {
        Ok(self.jwt_jwks_url.is_some() || self.algorithm()? != Algorithm::HS256)
    }

    /// The issuers a token may come from.
    pub fn issuers(&self) -> Vec<String> {
        self.jwt_issuer
            .as_deref()
            .map(|i| list(i, false))
            .unwrap_or_default()
    }

    /// The issuer of the tokens this service mints (`token`, `serve --dev`): the first one.
    pub fn first_issuer(&self) -> Option<String> {
        self.issuers().into_iter().next()
    }

    /// The verifier of the native API. Its identity provider's keys, if any, are fetched once
    /// `serve` runs ([`Verifier::keys`]).
    pub fn verifier(&self, secret: Option<&[u8]>) -> anyhow::Result<Verifier> {
        let mut keys = Keys {
            secret: secret.map(DecodingKey::from_secret),
            ..Keys::default()
        };
        if let Some(url) = &self.jwt_jwks_url {
            if self.jwt_algorithm.is_some() || self.jwt_public_key_file.is_some() {
                bail!(
                    "A2A_MAILBOX_JWT_JWKS_URL is set beside A2A_MAILBOX_JWT_ALGORITHM or \
                     A2A_MAILBOX_JWT_PUBLIC_KEY_FILE: with a JWKS each key's own algorithm \
                     decides; unset the other two"
                );
            }
            let refresh =
                duration_setting("A2A_MAILBOX_JWT_JWKS_REFRESH_MS", self.jwt_jwks_refresh_ms)?;
            keys.jwks = Some(Arc::new(Jwks::new(url, refresh)?));
        } else {
            match self.algorithm()? {
                Algorithm::HS256 => {
                    keys.secret
                        .as_ref()
                        .context("HS256 needs a secret (A2A_MAILBOX_JWT_SECRET)")?;
                }
                alg => keys.public = Some((alg, self.public_key(alg)?)),
            }
        }
        for (name, claim) in [
            ("A2A_MAILBOX_JWT_SUBJECT_CLAIM", &self.jwt_subject_claim),
            ("A2A_MAILBOX_JWT_CAPS_CLAIM", &self.jwt_caps_claim),
        ] {
            if claim.trim().is_empty() {
                bail!("{name} is empty: name a claim of the tokens");
            }
        }
        let rules = TokenRules {
            audience: self.jwt_audience.clone().map(|a| vec![a]),
            issuers: self.issuers(),
            claims: ClaimNames {
                subject: self.jwt_subject_claim.clone(),
                caps: self.jwt_caps_claim.clone(),
            },
        };
        Ok(Verifier::new(Arc::new(keys), rules))
    }

    fn public_key(&self, alg: Algorithm) -> anyhow::Result<DecodingKey> {
        let path = self.jwt_public_key_file.as_ref().context(
            "RS256/ES256/EdDSA need --jwt-public-key-file (A2A_MAILBOX_JWT_PUBLIC_KEY_FILE)",
        )?;
        let pem = std::fs::read(path)
            .with_context(|| format!("reading public key {}", path.display()))?;
        Ok(match alg {
            Algorithm::RS256 => DecodingKey::from_rsa_pem(&pem)?,
            Algorithm::ES256 => DecodingKey::from_ec_pem(&pem)?,
            _ => DecodingKey::from_ed_pem(&pem)?,
        })
    }
}

/// The MCP endpoint's resource settings, checked.
pub struct McpResource {
    /// The canonical URL of `/mcp` (tokens' `aud`).
    pub resource: String,
    /// Where its protected-resource metadata is published (RFC 9728 §3.1).
    pub metadata_url: String,
    pub authorization_servers: Vec<String>,
    pub scopes: Vec<String>,
}

impl McpArgs {
    /// The resource settings, when `A2A_MAILBOX_MCP_RESOURCE` is set; `issuers` are the JWT
    /// issuers, the default authorization servers.
    pub fn resource(&self, issuers: &[String]) -> anyhow::Result<Option<McpResource>> {
        let Some(resource) = &self.mcp_resource else {
            return Ok(None);
        };
        let url = reqwest::Url::parse(resource).map_err(|e| {
            anyhow::anyhow!("A2A_MAILBOX_MCP_RESOURCE {resource:?} is not an absolute URL: {e}")
        })?;
        if !matches!(url.scheme(), "https" | "http") || url.fragment().is_some() {
            bail!(
                "A2A_MAILBOX_MCP_RESOURCE {resource} must be an http(s) URL without a fragment \
                 (the canonical URL of the MCP endpoint, e.g. https://mailbox.example.com/mcp)"
            );
        }
        let path = url.path().trim_end_matches('/');
        let metadata_url = format!(
            "{}/.well-known/oauth-protected-resource{path}",
            url.origin().ascii_serialization()
        );
        let authorization_servers = match &self.oauth_issuers {
            Some(list_text) => list(list_text, false),
            None => issuers.to_vec(),
        };
        if authorization_servers.is_empty() {
            bail!(
                "A2A_MAILBOX_MCP_RESOURCE needs the authorization servers MCP clients sign in \
                 with: set A2A_MAILBOX_OAUTH_ISSUERS (or A2A_MAILBOX_JWT_ISSUER)"
            );
        }
        Ok(Some(McpResource {
            resource: resource.clone(),
            metadata_url,
            authorization_servers,
            scopes: list(&self.oauth_scopes, true),
        }))
    }
}

/// A secret file's bytes (a trailing newline is ignored); an empty file is refused.
pub fn read_secret_file(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    let mut s =
        std::fs::read(path).with_context(|| format!("reading secret file {}", path.display()))?;
    while s.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        s.pop();
    }
    if s.is_empty() {
        bail!("secret file {} is empty", path.display());
    }
    Ok(s)
}
