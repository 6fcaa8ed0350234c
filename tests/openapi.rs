//! The committed OpenAPI document (`openapi/openapi.json`) must be exactly what the code
//! generates, and the generated document must describe the contract (docs/contract.md) completely.
//!
//! Regenerate the committed copy after changing a route, a wire type or an annotation:
//!
//! ```sh
//! A2A_MAILBOX_UPDATE_OPENAPI=1 cargo test --test openapi
//! ```

use std::path::PathBuf;

use actix_web::{http::StatusCode, test as atest, App};
use serde_json::Value;

use a2a_mailbox::http::openapi::{codes_named_in, PUBLIC_PATHS};

const UPDATE_VAR: &str = "A2A_MAILBOX_UPDATE_OPENAPI";

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json")
}

fn doc() -> Value {
    serde_json::from_str(&a2a_mailbox::http::document_json()).expect("the document is JSON")
}

/// Every (method, path) of the contract (docs/contract.md#endpoints), in the document's spelling.
const CONTRACT_ROUTES: [(&str, &str); 27] = [
    ("post", "/a2a/tasks"),
    ("get", "/a2a/tasks/next"),
    ("get", "/a2a/tasks/recent"),
    ("get", "/a2a/tasks/{id}"),
    ("post", "/a2a/tasks/{id}/heartbeat"),
    ("post", "/a2a/tasks/{id}/cancel"),
    ("get", "/a2a/tasks"),
    ("get", "/a2a/tasks/{id}/children"),
    ("post", "/a2a/tasks/batch"),
    ("post", "/a2a/tasks/heartbeat"),
    ("post", "/a2a/results/batch"),
    ("post", "/a2a/results"),
    ("get", "/a2a/results/next"),
    ("get", "/a2a/results/recent"),
    ("get", "/a2a/queue"),
    ("post", "/a2a/repair"),
    ("post", "/a2a/retry-stale"),
    ("post", "/a2a/scheduler/tick"),
    ("post", "/a2a/compact"),
    ("get", "/audit/recent"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/version"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
    ("get", "/docs"),
    ("get", "/docs/"),
];

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if ["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                out.push((method.clone(), path.clone(), op));
            }
        }
    }
    out
}

#[test]
fn committed_document_is_current() {
    let generated = a2a_mailbox::http::document_json();
    let path = committed_path();
    if std::env::var(UPDATE_VAR).is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first_diff = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "{} is not what the code generates (first difference at line {}).\n\
             Regenerate it with `{UPDATE_VAR}=1 cargo test --test openapi` and commit it.",
            path.display(),
            first_diff + 1
        );
    }
}

#[test]
fn document_is_openapi_3_1_with_bearer_scheme() {
    let doc = doc();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(bearer["type"], "http");
    assert_eq!(bearer["scheme"], "bearer");
    assert_eq!(bearer["bearerFormat"], "JWT");
}

#[test]
fn every_contract_route_is_documented_and_nothing_else() {
    let doc = doc();
    let mut documented: Vec<(String, String)> = operations(&doc)
        .into_iter()
        .map(|(m, p, _)| (m, p))
        .collect();
    documented.sort();
    let mut expected: Vec<(String, String)> = CONTRACT_ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    expected.sort();
    assert_eq!(documented, expected);
}

#[test]
fn every_operation_is_described() {
    let doc = doc();
    let mut ids = Vec::new();
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"].as_str().unwrap_or_default().to_owned();
        assert!(!id.is_empty(), "{method} {path}: operationId");
        assert!(
            !ids.contains(&id),
            "{method} {path}: duplicate operationId {id}"
        );
        ids.push(id);
        assert!(
            op["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{method} {path}: summary"
        );
        assert!(
            op["tags"].as_array().is_some_and(|t| !t.is_empty()),
            "{method} {path}: tags"
        );
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses
                .keys()
                .any(|s| s.starts_with('2') || s.starts_with('3')),
            "{method} {path}: a success response"
        );
        if let Some(body) = op.get("requestBody") {
            let media = &body["content"]["application/json"];
            assert!(media.is_object(), "{method} {path}: JSON request body");
            assert!(
                media.get("example").is_some() || media.get("examples").is_some(),
                "{method} {path}: request body example"
            );
        }
    }
}

/// The server refuses a NUL in any query value (400): a schema that admitted one would let a
/// client generated from the document send a request the contract refuses.
#[test]
fn no_free_text_query_parameter_admits_nul() {
    let doc = doc();
    for (method, path, op) in operations(&doc) {
        for param in op["parameters"].as_array().into_iter().flatten() {
            let schema = &param["schema"];
            if param["in"] != "query" || schema["type"] != "string" {
                continue;
            }
            let name = &param["name"];
            let bounded = schema.get("format").is_some()
                || schema["pattern"].as_str().is_some_and(|p| p != ".*");
            assert!(
                bounded,
                "{method} {path}: query parameter {name} has no pattern or format"
            );
        }
    }
}

#[test]
fn authentication_is_documented_where_required() {
    let doc = doc();
    for (method, path, op) in operations(&doc) {
        let public = PUBLIC_PATHS.contains(&path.as_str());
        let security = op.get("security");
        if public {
            assert!(security.is_none(), "{method} {path} is public");
            assert!(
                op["responses"].get("401").is_none(),
                "{method} {path}: no 401"
            );
        } else {
            assert_eq!(
                security,
                Some(&serde_json::json!([{"bearer": []}])),
                "{method} {path}: bearer security"
            );
            assert!(op["responses"].get("401").is_some(), "{method} {path}: 401");
        }
    }
}

#[test]
fn every_post_documents_the_idempotency_headers() {
    let doc = doc();
    for (method, path, op) in operations(&doc) {
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        let key = params
            .iter()
            .find(|p| p["name"] == "Idempotency-Key" && p["in"] == "header");
        if method != "post" {
            assert!(
                key.is_none(),
                "{method} {path}: Idempotency-Key only on POST"
            );
            continue;
        }
        let key = key.unwrap_or_else(|| panic!("{method} {path}: Idempotency-Key header"));
        assert_eq!(key["required"], false);
        assert_eq!(key["schema"]["maxLength"], 255);
        let responses = op["responses"].as_object().unwrap();
        for status in ["409", "422"] {
            assert!(responses.contains_key(status), "{method} {path}: {status}");
        }
        assert!(
            responses["409"]["headers"].get("Retry-After").is_some(),
            "{method} {path}: Retry-After on 409"
        );
        for (status, r) in responses {
            if status.starts_with('2') {
                assert!(
                    r["headers"].get("Idempotent-Replayed").is_some(),
                    "{method} {path} {status}: Idempotent-Replayed"
                );
            }
        }
    }
}

#[test]
fn error_responses_name_their_codes_with_the_right_status() {
    let doc = doc();
    for (method, path, op) in operations(&doc) {
        for (status, r) in op["responses"].as_object().unwrap() {
            let code: u16 = status.parse().unwrap();
            if code < 400 {
                continue;
            }
            let media = &r["content"]["application/json"];
            assert_eq!(
                media["schema"]["$ref"], "#/components/schemas/ErrorBody",
                "{method} {path} {status}: ErrorBody"
            );
            let description = r["description"].as_str().unwrap();
            let codes = codes_named_in(description);
            assert!(!codes.is_empty(), "{method} {path} {status}: names no code");
            for c in &codes {
                assert_eq!(
                    a2a_mailbox::http::error::status(*c).as_u16(),
                    code,
                    "{method} {path} {status}: `{}` belongs to another status",
                    c.as_str()
                );
                let example = &media["examples"][c.as_str()]["value"];
                assert_eq!(
                    example["code"],
                    c.as_str(),
                    "{method} {path} {status}: example"
                );
            }
        }
        // Everything that reads the database can be unavailable or fail.
        if !["/healthz", "/version", "/openapi.json", "/docs", "/docs/"].contains(&path.as_str()) {
            for status in ["500", "503"] {
                assert!(
                    op["responses"].get(status).is_some(),
                    "{method} {path}: {status}"
                );
            }
        }
    }
    // And every code of the contract is reachable somewhere.
    let all = serde_json::to_string(&doc).unwrap();
    for c in a2a_mailbox::error::ErrorCode::ALL {
        assert!(
            all.contains(&format!("`{}`", c.as_str())),
            "code {} is never documented",
            c.as_str()
        );
    }
}

#[actix_web::test]
async fn document_and_docs_are_served_offline() {
    let app = atest::init_service(App::new().configure(a2a_mailbox::http::configure)).await;

    let res = atest::call_service(
        &app,
        atest::TestRequest::get().uri("/openapi.json").to_request(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers().get("content-type").unwrap(),
        "application/json"
    );
    let body = atest::read_body(res).await;
    assert_eq!(
        std::str::from_utf8(&body).unwrap(),
        a2a_mailbox::http::document_json()
    );

    let res = atest::call_service(&app, atest::TestRequest::get().uri("/docs").to_request()).await;
    assert_eq!(res.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(res.headers().get("location").unwrap(), "/docs/");

    let res = atest::call_service(&app, atest::TestRequest::get().uri("/docs/").to_request()).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let index = String::from_utf8(atest::read_body(res).await.to_vec()).unwrap();
    assert!(index.contains("swagger-ui"), "{index}");

    // Every asset the page loads is served by the binary itself: nothing from a CDN.
    for asset in [
        "swagger-ui.css",
        "index.css",
        "swagger-ui-bundle.js",
        "swagger-ui-standalone-preset.js",
        "swagger-initializer.js",
    ] {
        assert!(index.contains(asset), "index.html loads {asset}");
        let res = atest::call_service(
            &app,
            atest::TestRequest::get()
                .uri(&format!("/docs/{asset}"))
                .to_request(),
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK, "{asset}");
    }
    for tag in index
        .split('<')
        .filter(|t| t.starts_with("script") || t.starts_with("link"))
    {
        assert!(
            !tag.contains("http://") && !tag.contains("https://"),
            "external asset: <{tag}"
        );
    }
    let res = atest::call_service(
        &app,
        atest::TestRequest::get()
            .uri("/docs/swagger-initializer.js")
            .to_request(),
    )
    .await;
    let init = String::from_utf8(atest::read_body(res).await.to_vec()).unwrap();
    assert!(init.contains("\"/openapi.json\""), "{init}");
    assert!(
        init.contains("\"validatorUrl\": \"none\"") || init.contains("\"validatorUrl\":\"none\""),
        "{init}"
    );
}

#[test]
fn every_schema_reference_resolves() {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let doc = doc();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("unexpected reference {r}"));
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{r} is referenced but not defined"
        );
    }
}
