//! Signing in with a token from an identity provider: a JWKS-signed operator token is a
//! session like an HS256 one (docs/dashboard.md).

use jsonwebtoken::Algorithm;
use serde_json::json;

use super::web::*;
use crate::common::jwks::{JwksServer, Key};
use crate::common::*;

both_engines!(an_operator_signs_in_to_the_dashboard_with_a_provider_token);
async fn an_operator_signs_in_to_the_dashboard_with_a_provider_token(app: TestApp) {
    let jwks = JwksServer::start().await;
    let key = Key::generate(&app.dir, "k1", Algorithm::ES256).await;
    jwks.publish(&[&key]);
    let app = jwks.app(&app, &[]).await;
    let ops = key.token("ops", json!(["a2a.operator"]));
    let r = sign_in(&app, &ops).await;
    assert_eq!(
        (r.status, r.header("location")),
        (303, Some("/dashboard")),
        "{}",
        r.text
    );
    assert!(touches_session(&r), "{:?}", set_cookies(&r));
    page(&app, "/dashboard", &ops).await.expect(200);
    let someone = key.token("alice", json!(["a2a.send.bob"]));
    let r = sign_in(&app, &someone).await;
    assert_eq!(r.status, 403, "not an operator: {}", r.text);
    assert!(!touches_session(&r), "{:?}", set_cookies(&r));
}
