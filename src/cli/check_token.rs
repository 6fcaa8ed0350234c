//! `a2a-mailbox check-token`: what the service, configured as `serve` would be, makes of a
//! token — the agent it speaks for and what it grants, or why it is refused. For setting up an
//! identity provider (docs/configuration.md#tokens-from-an-identity-provider) without a server.

use clap::Args;

use crate::auth::{Caller, CapEntry};
use crate::config::{JwtArgs, McpArgs};

#[derive(Args)]
pub struct CheckTokenArgs {
    #[command(flatten)]
    jwt: JwtArgs,
    #[command(flatten)]
    mcp: McpArgs,
    /// Check it as the MCP endpoint would (its audience is A2A_MAILBOX_MCP_RESOURCE).
    #[arg(long)]
    for_mcp: bool,
    /// The token (the whole JWT).
    #[arg(long, env = "A2A_MAILBOX_TOKEN", hide_env_values = true)]
    token: String,
}

pub async fn check_token(a: CheckTokenArgs) -> anyhow::Result<String> {
    let secret = a.jwt.configured_secret()?;
    if secret.is_none() && !a.jwt.needs_no_secret()? {
        anyhow::bail!(
            "no way to verify a token is configured: set A2A_MAILBOX_JWT_SECRET, \
             A2A_MAILBOX_JWT_PUBLIC_KEY_FILE or A2A_MAILBOX_JWT_JWKS_URL as for `serve`"
        );
    }
    let mut verifier = a.jwt.verifier(secret.as_deref())?;
    if a.for_mcp {
        let resource = a.mcp.resource(&a.jwt.issuers())?.ok_or_else(|| {
            anyhow::anyhow!("--for-mcp needs A2A_MAILBOX_MCP_RESOURCE (--mcp-resource)")
        })?;
        verifier = verifier.for_audience(&resource.resource);
    }
    if let Some(jwks) = &verifier.keys().jwks {
        jwks.fetch().await;
    }
    match verifier.verify_expiring(a.token.trim()) {
        Ok((caller, exp)) => Ok(describe(&caller, exp)),
        Err((reason, e)) => anyhow::bail!("refused ({}): {}", reason.slug(), e.message),
    }
}

fn describe(caller: &Caller, exp: u64) -> String {
    let mut out = format!(
        "accepted\nagent id: {}\nexpires: {exp} (epoch seconds)\n",
        caller.sub
    );
    if caller.caps.is_empty() {
        out.push_str("capabilities: none (it can read only what it sent or was sent)");
    } else {
        out.push_str("capabilities:");
        for cap in &caller.caps {
            out.push_str("\n  ");
            match cap {
                CapEntry::Action(action) => out.push_str(action),
                other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
            }
        }
    }
    out
}
