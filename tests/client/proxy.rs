//! A TCP proxy in front of the mailbox that records every request and can drop the answer to
//! the first one: the mailbox acts on it, the client sees its connection close.

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

pub struct Proxy {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Message>>>,
}

impl Proxy {
    /// Forwards to `upstream` (`127.0.0.1:PORT`); with `drop_first`, the first answer is read
    /// from the mailbox and thrown away, and the client's connection closed.
    pub async fn start(upstream: String, drop_first: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let dropping = Arc::new(AtomicBool::new(drop_first));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (upstream, seen, dropping) = (upstream.clone(), seen.clone(), dropping.clone());
                tokio::spawn(relay(client, upstream, seen, dropping));
            }
        });
        Proxy { url, requests }
    }

    pub fn requests(&self) -> Vec<Message> {
        self.requests.lock().unwrap().clone()
    }
}

/// Relays the requests of one client connection, one at a time.
async fn relay(
    mut client: TcpStream,
    upstream: String,
    seen: Arc<Mutex<Vec<Message>>>,
    dropping: Arc<AtomicBool>,
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
        if dropping.swap(false, Ordering::SeqCst) {
            return; // the mailbox answered; the client never hears of it
        }
        if client.write_all(&bytes(&answer)).await.is_err() {
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
