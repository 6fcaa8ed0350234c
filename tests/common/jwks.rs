#![allow(dead_code)]

//! An identity provider in miniature for the tests of tokens signed by published keys: keys made
//! with the `openssl` CLI, their JWKs, tokens signed with them, and a JWKS endpoint (a plain
//! HTTP/1.1 server on a loopback port) that publishes a chosen set, counts the requests it
//! answers, and can be made to fail.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::python::run_checked;
use super::{now_ms, AppConfig, TestApp, BIN};

/// A private key of the provider: its `kid`, the algorithm it signs with, and its public JWK.
pub struct Key {
    pub kid: String,
    pub alg: Algorithm,
    pem: PathBuf,
    encoding: EncodingKey,
    pub jwk: Value,
}

impl Key {
    /// A fresh key made by `openssl genpkey` (PKCS#8 PEM) in `dir`: RSA 2048 for `RS256`, P-256
    /// for `ES256`, Ed25519 for `EdDSA`.
    pub async fn generate(dir: &Path, kid: &str, alg: Algorithm) -> Key {
        let pem = dir.join(format!("{kid}.pem"));
        let kind: &[&str] = match alg {
            Algorithm::RS256 => &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
            Algorithm::ES256 => &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            Algorithm::EdDSA => &["-algorithm", "ED25519"],
            other => panic!("no test key for {other:?}"),
        };
        let mut cmd = Command::new("openssl");
        cmd.arg("genpkey").args(kind).arg("-out").arg(&pem);
        tokio::task::spawn_blocking(move || run_checked(&mut cmd, "openssl genpkey"))
            .await
            .unwrap();
        let bytes = std::fs::read(&pem).unwrap();
        let encoding = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&bytes),
            Algorithm::ES256 => EncodingKey::from_ec_pem(&bytes),
            _ => EncodingKey::from_ed_pem(&bytes),
        }
        .unwrap_or_else(|e| panic!("{kid}: reading {}: {e}", pem.display()));
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).expect("the key's JWK");
        jwk.common.key_id = Some(kid.to_owned());
        Key {
            kid: kid.to_owned(),
            alg,
            pem,
            encoding,
            jwk: serde_json::to_value(&jwk).unwrap(),
        }
    }

    /// The same key published without `alg`: the verifier infers it from `kty`/`crv`.
    pub fn without_alg(mut self) -> Key {
        self.jwk.as_object_mut().unwrap().remove("alg");
        self
    }

    /// A token with these claims, its header naming this key.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// A token signed by this key whose header names `kid` (another key, or none published).
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signing a token")
    }

    /// A token for `sub` with `caps`, valid for an hour. Each call makes another token (`jti`),
    /// one the mailbox has never verified.
    pub fn token(&self, sub: &str, caps: Value) -> String {
        self.sign(&claims(sub, caps))
    }

    /// The public half as a PEM file (`openssl pkey -pubout`).
    pub async fn public_pem(&self) -> PathBuf {
        let out = self.pem.with_extension("pub.pem");
        let mut cmd = Command::new("openssl");
        cmd.arg("pkey")
            .arg("-in")
            .arg(&self.pem)
            .arg("-pubout")
            .arg("-out")
            .arg(&out);
        tokio::task::spawn_blocking(move || run_checked(&mut cmd, "openssl pkey -pubout"))
            .await
            .unwrap();
        out
    }
}

/// Claims for `sub` with `caps`, valid for an hour, with a fresh `jti`.
pub fn claims(sub: &str, caps: Value) -> Value {
    json!({
        "sub": sub,
        "exp": now_ms() / 1000 + 3600,
        "caps": caps,
        "jti": uuid::Uuid::new_v4().to_string(),
    })
}

/// How the endpoint answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 200 with the published set.
    Up,
    /// 503.
    Down,
    /// 200 with a body that is not JSON.
    Garbage,
}

struct State {
    body: String,
    mode: Mode,
    answered: usize,
}

/// The JWKS endpoint: `GET <url>` answers the published set (`Connection: close`).
pub struct JwksServer {
    pub url: String,
    state: Arc<Mutex<State>>,
    accept: JoinHandle<()>,
}

impl JwksServer {
    /// Listens on a free loopback port and publishes an empty set.
    pub async fn start() -> JwksServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            body: json!({"keys": []}).to_string(),
            mode: Mode::Up,
            answered: 0,
        }));
        let shared = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, shared.clone()));
            }
        });
        JwksServer { url, state, accept }
    }

    /// Publishes exactly these keys.
    pub fn publish(&self, keys: &[&Key]) {
        let keys: Vec<&Value> = keys.iter().map(|k| &k.jwk).collect();
        self.state.lock().unwrap().body = json!({ "keys": keys }).to_string();
    }

    pub fn set(&self, mode: Mode) {
        self.state.lock().unwrap().mode = mode;
    }

    /// Requests answered so far (in any mode).
    pub fn requests(&self) -> usize {
        self.state.lock().unwrap().answered
    }

    /// Waits (at most 15 s) until `n` requests have been answered in all.
    pub async fn until_requests(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.requests() < n {
            assert!(
                Instant::now() < deadline,
                "the JWKS endpoint answered {} requests, waited 15 s for {n}",
                self.requests()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops accepting: the port is closed, a fetch finds nobody there.
    pub fn stop(&self) {
        self.accept.abort();
    }

    /// A server on `app`'s engine (a fresh database) that verifies tokens with this set, with
    /// more environment. The harness's HS256 secret stays configured beside it.
    pub async fn app(&self, app: &TestApp, env: &[(&str, &str)]) -> TestApp {
        let mut config = AppConfig::default().env("A2A_MAILBOX_JWT_JWKS_URL", &self.url);
        for (k, v) in env {
            config = config.env(k, v);
        }
        TestApp::spawn(app.engine, config, "jwks")
            .await
            .expect("the engine of the running test is there")
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Reads one request head (the body of a GET is empty) and answers per the current mode.
async fn answer(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let (status, body) = {
        let mut s = state.lock().unwrap();
        s.answered += 1;
        match s.mode {
            Mode::Up => ("200 OK", s.body.clone()),
            Mode::Down => ("503 Service Unavailable", "down".to_owned()),
            Mode::Garbage => ("200 OK", "{\"keys\": [ not json".to_owned()),
        }
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// `a2a-mailbox serve` on a fresh SQLite file, with only `env` (no secret unless given); its
/// output goes to files beside the database. Killed when dropped.
pub struct Serve {
    child: Child,
    dir: PathBuf,
}

impl Serve {
    pub fn spawn(dir: &Path, env: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(BIN);
        for (k, _) in std::env::vars() {
            if k.starts_with("A2A_MAILBOX_") || k == "DATABASE_URL" {
                cmd.env_remove(k);
            }
        }
        let db = format!("sqlite://{}?mode=rwc", dir.join("m.db").display());
        cmd.arg("serve")
            .env("DATABASE_URL", db)
            .env("A2A_MAILBOX_BIND", "127.0.0.1:0")
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("out.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("err.log")).unwrap());
        let child = cmd.spawn().expect("spawning the server");
        Serve {
            child,
            dir: dir.to_owned(),
        }
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    /// Waits (at most 30 s) for the server to exit: its status and stderr.
    pub async fn exit(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, self.log("err.log"));
            }
            assert!(
                Instant::now() < deadline,
                "the server did not refuse to start: {}",
                self.log("out.log")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (at most 30 s) for the listening line: the base URL.
    pub async fn address(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.log("out.log");
            let line = out
                .split_inclusive('\n')
                .find(|l| l.ends_with('\n') && l.starts_with("a2a-mailbox listening on "));
            if let Some(line) = line {
                return line["a2a-mailbox listening on ".len()..].trim().to_owned();
            }
            let exited = self.child.try_wait().unwrap();
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "the server did not serve ({exited:?}): {}",
                self.log("err.log")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh temporary directory.
pub fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("a2a-jwks-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
