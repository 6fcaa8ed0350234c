//! A TCP proxy in front of the mailbox that records every request and can spoil the answer to
//! the first one: the mailbox acts on it, the client sees its connection close, or a gateway's
//! 502 instead of the mailbox's answer. It keeps the client's side of a connection open until
//! the client next writes on it, whatever the mailbox did with its side meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One HTTP/1.1 message as it passed: its head and its body.
#[derive(Clone, Debug)]
pub struct Message {
    pub head: String,
    pub body: Vec<u8>,
}

impl Message {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// What the proxy does with the mailbox's answer to the first request that passes; the
/// request itself always reaches the mailbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The answer is thrown away and the client's connection closed.
    DropAnswer,
    /// The answer is thrown away and the client gets `502 Bad Gateway` in a gateway's own
    /// words (an HTML page, not the mailbox's error body); the connection stays open.
    BadGateway,
    /// Every answer passes as it came.
    Nothing,
}

/// What a gateway answers when its upstream failed it.
fn bad_gateway() -> Vec<u8> {
    let page = "<html><body><h1>502 Bad Gateway</h1></body></html>\n";
    format!(
        "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{page}",
        page.len()
    )
    .into_bytes()
}

pub struct Proxy {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Message>>>,
}

impl Proxy {
    /// Forwards to `upstream` (`127.0.0.1:PORT`); the first answer suffers `fault`.
    pub async fn start(upstream: String, fault: Fault) -> Proxy {
        Proxy::start_on(upstream, fault, "").await
    }

    /// Forwards to `upstream`; the answer to the first request whose request line starts with
    /// `target` (e.g. `"GET /a2a/tasks/next"`) suffers `fault`.
    pub async fn start_on(upstream: String, fault: Fault, target: &'static str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let spoil = Spoil {
            fault,
            target,
            pending: Arc::new(AtomicBool::new(true)),
        };
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (upstream, seen, spoil) = (upstream.clone(), seen.clone(), spoil.clone());
                tokio::spawn(relay(client, upstream, seen, spoil));
            }
        });
        Proxy { url, requests }
    }

    pub fn requests(&self) -> Vec<Message> {
        self.requests.lock().unwrap().clone()
    }
}

/// Which answer to spoil, and how; shared by every connection of one proxy.
#[derive(Clone)]
struct Spoil {
    fault: Fault,
    target: &'static str,
    /// Still to be done: only the first matching answer is spoiled.
    pending: Arc<AtomicBool>,
}

impl Spoil {
    fn hits(&self, request: &Message) -> bool {
        request.head.starts_with(self.target) && self.pending.swap(false, Ordering::SeqCst)
    }
}

/// Relays the requests of one client connection, one at a time.
async fn relay(
    mut client: TcpStream,
    upstream: String,
    seen: Arc<Mutex<Vec<Message>>>,
    spoil: Spoil,
) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    let mut from_client = Vec::new();
    let mut from_server = Vec::new();
    while let Some(request) = read_message(&mut client, &mut from_client).await {
        seen.lock().unwrap().push(request.clone());
        let Some(answer) = forward(&mut server, &mut from_server, &request).await else {
            return;
        };
        let out = match (spoil.hits(&request), spoil.fault) {
            // The mailbox answered; the client never hears of it.
            (true, Fault::DropAnswer) => return,
            (true, Fault::BadGateway) => bad_gateway(),
            (false, _) | (true, Fault::Nothing) => bytes(&answer),
        };
        if client.write_all(&out).await.is_err() {
            return;
        }
    }
}

async fn forward(server: &mut TcpStream, buf: &mut Vec<u8>, request: &Message) -> Option<Message> {
    server.write_all(&bytes(request)).await.ok()?;
    read_message(server, buf).await
}

fn bytes(m: &Message) -> Vec<u8> {
    let mut out = m.head.clone().into_bytes();
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(&m.body);
    out
}

/// Reads one message (head, then `Content-Length` bytes of body); `None` at the end.
async fn read_message<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> Option<Message> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let partial = Message {
                head,
                body: Vec::new(),
            };
            let len: usize = partial
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                fill(stream, buf).await?;
            }
            let body = buf[end + 4..end + 4 + len].to_vec();
            buf.drain(..end + 4 + len);
            return Some(Message { body, ..partial });
        }
        fill(stream, buf).await?;
    }
}

async fn fill<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Some(())
        }
    }
}
