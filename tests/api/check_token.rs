//! `a2a-mailbox check-token` (docs/configuration.md#tokens-from-an-identity-provider): what the
//! service, configured as `serve` would be, makes of a token, without a server: the agent id and
//! the grants it reads, or the refusal a request would get.

use std::process::Output;

use jsonwebtoken::Algorithm;
use serde_json::json;

use crate::common::jwks::{claims, scratch, JwksServer, Key};

/// `a2a-mailbox check-token` with only `env` and `args`.
async fn check_token(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2a-mailbox"));
    for (k, _) in std::env::vars() {
        if k.starts_with("A2A_MAILBOX_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg("check-token").args(args).envs(env.iter().copied());
    cmd.output().await.expect("running check-token")
}

#[tokio::test]
async fn check_token_reads_a_provider_token_as_the_service_would() {
    let dir = scratch();
    let jwks = JwksServer::start().await;
    let key = Key::generate(&dir, "k1", Algorithm::ES256).await;
    jwks.publish(&[&key]);
    let env = [
        ("A2A_MAILBOX_JWT_JWKS_URL", jwks.url.as_str()),
        ("A2A_MAILBOX_JWT_SUBJECT_CLAIM", "agent_id"),
        (
            "A2A_MAILBOX_MCP_RESOURCE",
            "https://mailbox.example.com/mcp",
        ),
        ("A2A_MAILBOX_OAUTH_ISSUERS", "https://idp.example"),
    ];
    let mut c = claims("auth0|5f7c8ec7c33c6c004bbafe82", json!([]));
    c["agent_id"] = json!("invoicer");
    c["scope"] = json!("openid a2a.send.billing");
    let token = key.sign(&c);

    let out = check_token(&env, &["--token", &token]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("agent id: invoicer"), "{stdout}");
    assert!(stdout.contains("a2a.send.billing"), "{stdout}");

    // As /mcp checks it: a token without `aud`, or for another audience, is refused.
    let out = check_token(&env, &["--for-mcp", "--token", &token]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && out.stdout.is_empty(), "{stderr}");
    assert!(
        stderr.contains("missing_claim") && stderr.contains("\"aud\""),
        "{stderr}"
    );
    c["aud"] = json!("https://other.example/mcp");
    let out = check_token(&env, &["--for-mcp", "--token", &key.sign(&c)]).await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrong_audience"));
    c["aud"] = json!("https://mailbox.example.com/mcp");
    let out = check_token(&env, &["--for-mcp", "--token", &key.sign(&c)]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A key the provider does not publish, and the default subject claim.
    let out = check_token(&env, &["--token", &key.sign_as("k9", &c)]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown_key"), "{stderr}");
    let out = check_token(&env[..1], &["--token", &token]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("A2A_MAILBOX_JWT_SUBJECT_CLAIM"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
