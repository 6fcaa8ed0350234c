#![allow(dead_code)]

//! An OpenTelemetry collector in miniature: an OTLP/HTTP receiver (`POST /v1/traces`, protobuf)
//! on a loopback port that decodes each export with the real protobuf types and keeps every
//! span it was sent, from the service and from the test process alike. One per test process,
//! on a thread of its own, so that it outlives every test's runtime.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A span as the collector received it (ids in lower-case hex).
#[derive(Clone, Debug)]
pub struct Span {
    pub service: String,
    pub name: String,
    /// OTLP's span kind: 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i32,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub attributes: BTreeMap<String, String>,
    /// The (trace id, span id) of each link.
    pub links: Vec<(String, String)>,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    /// Whether this span links to a span of trace `trace_id`.
    pub fn links_to(&self, trace_id: &str) -> bool {
        self.links.iter().any(|(t, _)| t == trace_id)
    }
}

pub struct Collector {
    /// The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub url: String,
    spans: Arc<Mutex<Vec<Span>>>,
    /// Requests that were not a decodable export.
    pub refused: Arc<Mutex<Vec<String>>>,
}

/// The collector of this test process.
pub fn collector() -> &'static Collector {
    static ONE: OnceLock<Collector> = OnceLock::new();
    ONE.get_or_init(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (spans.clone(), refused.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve(stream, s.clone(), r.clone()));
                }
            });
        });
        Collector {
            url,
            spans,
            refused,
        }
    })
}

impl Collector {
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits (at most 20 s) until `found` finds what it looks for among the spans received.
    pub async fn until<T>(&self, what: &str, found: impl Fn(&[Span]) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(t) = found(&self.spans()) {
                return t;
            }
            if Instant::now() > deadline {
                let seen: Vec<String> = self
                    .spans()
                    .iter()
                    .map(|s| format!("{} {} {}", s.service, s.trace_id, s.name))
                    .collect();
                panic!(
                    "the collector did not receive {what} in 20 s; it has:\n{}\nrefused: {:?}",
                    seen.join("\n"),
                    self.refused.lock().unwrap()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// Answers the requests of one connection: each export decoded and kept, answered 200.
async fn serve(
    mut stream: TcpStream,
    spans: Arc<Mutex<Vec<Span>>>,
    refused: Arc<Mutex<Vec<String>>>,
) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = find(&buf, b"\r\n\r\n") else {
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + 4 + length {
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Vec<u8> = buf[end + 4..end + 4 + length].to_vec();
        buf.drain(..end + 4 + length);
        let status = match (
            head.starts_with("post /v1/traces "),
            ExportTraceServiceRequest::decode(&body[..]),
        ) {
            (true, Ok(export)) => {
                spans.lock().unwrap().extend(flatten(export));
                "200 OK"
            }
            (path_ok, decoded) => {
                refused.lock().unwrap().push(format!(
                    "{}: {path_ok} {:?}",
                    head.lines().next().unwrap_or_default(),
                    decoded.err()
                ));
                "400 Bad Request"
            }
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
        );
        if stream.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn flatten(export: ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for rs in export.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .map(text)
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(Span {
                    service: service.clone(),
                    name: s.name,
                    kind: s.kind,
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: hex(&s.parent_span_id),
                    attributes: s
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.clone(), text(kv)))
                        .collect(),
                    links: s
                        .links
                        .iter()
                        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                        .collect(),
                });
            }
        }
    }
    out
}
