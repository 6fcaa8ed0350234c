//! Server-sent events (`text/event-stream`): the two ends of one stream. A task of its own writes
//! the events ([`Events`]); the response carries them as they come, and once the client's
//! connection closes the response is dropped and [`Events::closed`] completes, so the writer
//! stops at once.

use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::HttpResponse;
use serde_json::Value;
use tokio::sync::mpsc;

/// Events waiting to be written, per stream: the writer waits while the client is slow.
const BUFFERED_EVENTS: usize = 8;

/// The client is gone: nothing more can be written.
#[derive(Debug)]
pub struct Gone;

/// Where a stream's events are written.
pub struct Events {
    tx: mpsc::Sender<Bytes>,
}

impl Events {
    async fn send(&self, bytes: Bytes) -> Result<(), Gone> {
        self.tx.send(bytes).await.map_err(|_| Gone)
    }

    /// An event whose data is `data` (one line: JSON has no raw line breaks).
    pub async fn data(&self, data: &Value) -> Result<(), Gone> {
        self.send(Bytes::from(format!("data: {data}\n\n"))).await
    }

    /// An event named `name` (`event: <name>`).
    pub async fn named(&self, name: &str, data: &Value) -> Result<(), Gone> {
        self.send(Bytes::from(format!("event: {name}\ndata: {data}\n\n")))
            .await
    }

    /// A comment line, which keeps the connection alive and means nothing.
    pub async fn keep_alive(&self) -> Result<(), Gone> {
        self.send(Bytes::from_static(b": keep-alive\n\n")).await
    }

    /// Completes once the client is gone.
    pub async fn closed(&self) {
        self.tx.closed().await;
    }
}

/// A new stream: where to write its events, and the 200 response that carries them.
pub fn channel() -> (Events, HttpResponse) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(BUFFERED_EVENTS);
    let body = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|b| b.map(Ok::<_, std::convert::Infallible>))
    });
    let response = HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(body);
    (Events { tx }, response)
}
