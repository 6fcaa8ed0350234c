//! PostgreSQL going away and coming back (docs/contract.md#details): while the database cannot be reached,
//! every route that needs it answers 503 `storage_unavailable` within 2 s (the pool's short
//! acquire timeout), and once it is back requests succeed again within 1 s, without a restart.
//! `/readyz` checks at most once a second and answers the last outcome meanwhile: nothing
//! checked it before the cut, so its first call checks, and it is ready again within a second
//! and a check once the database is back.
//! The outage is a TCP proxy of the test's own between the server and PostgreSQL that stops
//! passing traffic and drops every connection it carried; the shared PostgreSQL keeps running.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

use super::unavailable::readyz_becomes;
use crate::common::*;

/// Forwards connections to `upstream`. Cut, it closes its port (new connections are refused,
/// as by a stopped server) and drops every connection it carried; restored, it listens again on
/// the same port.
struct Proxy {
    port: u16,
    upstream: String,
    live: Arc<Mutex<Vec<AbortHandle>>>,
    accept: Mutex<Option<AbortHandle>>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            port: listener.local_addr().unwrap().port(),
            upstream,
            live: Arc::default(),
            accept: Mutex::new(None),
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&self, listener: TcpListener) {
        let (upstream, live) = (self.upstream.clone(), self.live.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let copy = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                live.lock().unwrap().push(copy.abort_handle());
            }
        });
        *self.accept.lock().unwrap() = Some(accept.abort_handle());
    }

    fn cut(&self) {
        if let Some(accept) = self.accept.lock().unwrap().take() {
            accept.abort();
        }
        for c in self.live.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    async fn restore(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)).await {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("re-binding the proxy: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => panic!("re-binding the proxy: {e}"),
            }
        };
        self.serve(listener);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_postgres_answers_503_within_2_s_and_recovers_within_1_s() {
    run(
        Engine::Postgres,
        concat!(module_path!(), "::postgres"),
        AppConfig::default(),
        |mut app| async move {
            let url = reqwest::Url::parse(&app.db_url).unwrap();
            let upstream = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
            let proxy = Proxy::start(upstream.clone()).await;
            app.kill();
            app.db_url = app
                .db_url
                .replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
            app.start().await;
            let (alice, bob, ops) = (app.alice(), app.bob(), full_ops(&app));
            let id = app.send_ok(&alice, &task("alice", "bob")).await;
            let (_, lease) = app.lease_some(&bob).await;
            let lease_id = lease["lease_id"].as_str().unwrap().to_owned();

            proxy.cut();
            let repair = json!({"task_id": id, "reason": "r",
                "command": {"action": "force_error", "message": "m"}});
            let routes: Vec<(Method, String, Option<serde_json::Value>, &String)> = vec![
                (
                    Method::POST,
                    "/a2a/tasks".into(),
                    Some(task("alice", "bob")),
                    &alice,
                ),
                (
                    Method::POST,
                    "/a2a/tasks/batch".into(),
                    Some(json!({"tasks": [task("alice", "bob")]})),
                    &alice,
                ),
                (Method::GET, "/a2a/tasks/next".into(), None, &bob),
                (Method::GET, "/a2a/tasks/recent".into(), None, &alice),
                (Method::GET, "/a2a/tasks".into(), None, &alice),
                (Method::GET, format!("/a2a/tasks/{id}"), None, &alice),
                (
                    Method::GET,
                    format!("/a2a/tasks/{id}/children"),
                    None,
                    &alice,
                ),
                (
                    Method::POST,
                    format!("/a2a/tasks/{id}/heartbeat"),
                    Some(json!({"lease_id": lease_id})),
                    &bob,
                ),
                (
                    Method::POST,
                    format!("/a2a/tasks/{id}/cancel"),
                    Some(json!({})),
                    &alice,
                ),
                (
                    Method::POST,
                    "/a2a/results".into(),
                    Some(result(&id, "ok", "x")),
                    &bob,
                ),
                (Method::GET, "/a2a/results/next".into(), None, &alice),
                (Method::GET, "/a2a/results/recent".into(), None, &alice),
                (Method::GET, "/a2a/queue".into(), None, &ops),
                (Method::POST, "/a2a/repair".into(), Some(repair), &ops),
                (
                    Method::POST,
                    "/a2a/retry-stale".into(),
                    Some(json!({})),
                    &ops,
                ),
                (
                    Method::POST,
                    "/a2a/scheduler/tick".into(),
                    Some(json!({})),
                    &ops,
                ),
                (Method::POST, "/a2a/compact".into(), Some(json!({})), &ops),
                (Method::GET, "/audit/recent".into(), None, &ops),
                (Method::GET, "/readyz".into(), None, &ops),
            ];
            // Every route at once, each timed on its own.
            let calls = routes.iter().map(|(method, path, body, token)| {
                let app = &app;
                async move {
                    let start = Instant::now();
                    let auth = format!("Bearer {token}");
                    let body = body.as_ref().map(|b| b.to_string().into_bytes());
                    let json = body.as_ref().map(|_| "application/json");
                    let r = app.raw(method.clone(), path, Some(&auth), json, body).await;
                    (r, start.elapsed())
                }
            });
            for (r, took) in futures_util::future::join_all(calls).await {
                assert_unavailable(&r);
                assert!(took < Duration::from_secs(2), "{} took {took:?}", r.what);
            }

            // Back: a send succeeds within 1 s, and the task was never changed meanwhile.
            proxy.restore().await;
            let back = Instant::now();
            loop {
                let r = app.send(&alice, &task("alice", "bob")).await;
                if r.status == 201 {
                    break;
                }
                assert_unavailable(&r);
                assert!(
                    back.elapsed() < Duration::from_secs(1),
                    "not back after 1 s"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                back.elapsed() < Duration::from_secs(1),
                "took {:?}",
                back.elapsed()
            );
            // Readiness follows within its check interval (a second) and the check's own time.
            readyz_becomes(&app, 200, Duration::from_secs(3)).await;
            let s = app.status_ok(&id).await;
            assert_eq!(
                (s["state"].as_str(), s["lease"]["lease_id"].as_str()),
                (Some("in_flight"), Some(lease_id.as_str()))
            );
        },
    )
    .await;
}
