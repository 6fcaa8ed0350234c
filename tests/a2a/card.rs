//! Agent cards: public, cacheable, one per recipient, naming both bindings by absolute URL.

use serde_json::json;

use crate::common::*;

fn public_url() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_PUBLIC_URL", "https://mailbox.example.com/")
}

both_engines!(
    a_card_names_both_bindings_under_the_public_url,
    config = public_url
);
async fn a_card_names_both_bindings_under_the_public_url(app: TestApp) {
    for path in ["agent-card.json", "agent.json"] {
        let r = app
            .get_anon(&format!("/a2a/agents/billing@acme/.well-known/{path}"))
            .await;
        let card = r.expect(200);
        assert_eq!(r.header("cache-control"), Some("max-age=300"), "{path}");
        assert_eq!(card["name"], "billing@acme");
        let base = "https://mailbox.example.com/a2a/agents/billing@acme";
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                {"url": format!("{base}/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            ])
        );
        assert_eq!(
            card["capabilities"],
            json!({"streaming": true, "pushNotifications": false})
        );
        let modes = json!(["text/plain", "application/json"]);
        assert_eq!(card["defaultInputModes"], modes);
        assert_eq!(card["defaultOutputModes"], modes);
        assert_eq!(card["skills"].as_array().unwrap().len(), 1);
        assert_eq!(
            card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["bearerFormat"],
            "JWT"
        );
        assert!(card["version"].is_string() && card["description"].is_string());
    }
}

both_engines!(without_a_public_url_the_card_names_the_address_served);
async fn without_a_public_url_the_card_names_the_address_served(app: TestApp) {
    // `%40` in the path is the same recipient as `@`.
    let r = app
        .get_anon("/a2a/agents/bob%40acme/.well-known/agent-card.json")
        .await;
    let card = r.expect(200);
    assert_eq!(card["name"], "bob@acme");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("{}/a2a/agents/bob@acme/jsonrpc", app.address)
    );
}

both_engines!(a_path_that_is_no_agent_id_has_no_card);
async fn a_path_that_is_no_agent_id_has_no_card(app: TestApp) {
    let r = app
        .get_anon("/a2a/agents/bad%20name/.well-known/agent-card.json")
        .await;
    assert_error(&r, 404, "not_found");
}
