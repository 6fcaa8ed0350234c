//! HTTPS: the client talks to a real TLS endpoint in front of a real mailbox (a terminating
//! proxy with rustls), whose certificate comes from a private CA made by the test with the
//! `openssl` command; the client trusts that CA through its builder. Plain `http://` still
//! works beside it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use a2a_mailbox_client::types::{ResultStatus, TaskState};
use a2a_mailbox_client::{Backoff, Client, Error, NewTask, Reply};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use super::{connect, quick, SOON};
use crate::common::python::run_checked;
use crate::common::TestApp;

/// A private CA and a server certificate it signed for `127.0.0.1` and `localhost`.
struct Certs {
    ca_pem: Vec<u8>,
    leaf: PathBuf,
    leaf_key: PathBuf,
}

impl Certs {
    /// Made in `dir` by the `openssl` command (it comes with Debian's `ca-certificates`).
    fn make(dir: &Path) -> Certs {
        let openssl = |args: &[&str]| {
            run_checked(
                Command::new("openssl").current_dir(dir).args(args),
                &format!("openssl {}", args.join(" ")),
            )
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509", "-new", "-days", "2"][..],
                &ec,
                &["-keyout", "ca.key", "-out", "ca.pem"],
                &["-subj", "/CN=a2a-mailbox test CA"],
                &["-addext", "basicConstraints=critical,CA:TRUE"],
                &["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req", "-new"][..],
                &ec,
                &[
                    "-keyout",
                    "leaf.key",
                    "-out",
                    "leaf.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            dir.join("leaf.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "leaf.ext",
            "-out",
            "leaf.pem",
        ]);
        Certs {
            ca_pem: std::fs::read(dir.join("ca.pem")).unwrap(),
            leaf: dir.join("leaf.pem"),
            leaf_key: dir.join("leaf.key"),
        }
    }
}

/// A TLS-terminating proxy: TLS on its side, plain TCP to the mailbox.
struct TlsProxy {
    url: String,
    /// Handshakes completed, and refused by the client.
    handshakes: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    /// The first byte the client sent on each connection.
    openings: Arc<Mutex<Vec<u8>>>,
}

impl TlsProxy {
    async fn start(certs: &Certs, upstream: String) -> TlsProxy {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&certs.leaf)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(&certs.leaf_key).unwrap();
        let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = TlsProxy {
            url: format!("https://{}", listener.local_addr().unwrap()),
            handshakes: Arc::default(),
            refused: Arc::default(),
            openings: Arc::default(),
        };
        let (handshakes, refused, openings) = (
            proxy.handshakes.clone(),
            proxy.refused.clone(),
            proxy.openings.clone(),
        );
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
                let (handshakes, refused, openings) =
                    (handshakes.clone(), refused.clone(), openings.clone());
                tokio::spawn(async move {
                    let mut first = [0u8; 1];
                    if tcp.peek(&mut first).await.unwrap_or(0) == 1 {
                        openings.lock().unwrap().push(first[0]);
                    }
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        refused.fetch_add(1, Ordering::SeqCst);
                        return;
                    };
                    handshakes.fetch_add(1, Ordering::SeqCst);
                    let Ok(mut mailbox) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut mailbox).await;
                });
            }
        });
        proxy
    }
}

both_engines!(the_client_speaks_https_to_a_mailbox_behind_a_tls_proxy);
async fn the_client_speaks_https_to_a_mailbox_behind_a_tls_proxy(app: TestApp) {
    let certs = Certs::make(&app.dir);
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = TlsProxy::start(&certs, upstream).await;

    // Without the private CA, the proxy's certificate is refused before any request is sent.
    let stranger = Client::builder(&proxy.url, app.alice())
        .backoff(Backoff::none())
        .build()
        .expect("an https:// base URL is accepted");
    let e = stranger.version().await.unwrap_err();
    match &e {
        Error::Transport {
            message,
            before_sending: true,
        } => assert!(message.contains("certificate"), "{message}"),
        other => panic!("{other:?}"),
    }
    // The proxy hears of the refusal a moment after the client gave up.
    let deadline = std::time::Instant::now() + SOON;
    while proxy.refused.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(proxy.refused.load(Ordering::SeqCst), 1);
    assert_eq!(proxy.handshakes.load(Ordering::SeqCst), 0);

    // Trusting it, a task goes round trip over TLS; bob trusts that CA alone.
    let alice = Client::builder(&proxy.url, app.alice())
        .add_root_certificate_pem(&certs.ca_pem)
        .backoff(quick())
        .build()
        .unwrap();
    let bob = Client::builder(format!("{}/", proxy.url), app.bob())
        .add_root_certificate_pem(&certs.ca_pem)
        .tls_built_in_roots(false)
        .backoff(quick())
        .build()
        .unwrap();
    let sent = alice.send(NewTask::new("bob", "over TLS")).await.unwrap();
    let leased = bob.next_task(SOON).await.unwrap().expect("a task");
    assert_eq!(leased.task.id, sent.task_id);
    let reply = Reply::text("done").for_task(sent.task_id, Some(leased.lease.lease_id));
    bob.post_result(&reply).await.unwrap();
    let result = alice.next_result(SOON).await.unwrap().expect("a result");
    assert_eq!(
        (result.task_id, result.status),
        (sent.task_id, ResultStatus::Ok)
    );
    assert!(proxy.handshakes.load(Ordering::SeqCst) >= 2);
    // Every connection opened with a TLS handshake record (0x16), none with clear HTTP.
    let openings = proxy.openings.lock().unwrap().clone();
    assert!(
        !openings.is_empty() && openings.iter().all(|&b| b == 0x16),
        "{openings:?}"
    );

    // The same mailbox over plain http:// still works.
    let plain = connect(&app, app.alice());
    let status = plain.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::Resolved);
    assert!(plain.version().await.is_ok());
}
