//! Reading an A2A stream off the wire: the response of a streaming call, cut into SSE frames as
//! they arrive.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::rpc::base;
use crate::common::*;

/// One SSE frame: a comment line, or an event (its `event:` name, when given, and its data).
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Comment(String),
    Event { name: Option<String>, data: Value },
}

/// An open stream.
pub struct Sse {
    response: reqwest::Response,
    buffer: String,
    pub what: String,
}

/// How long a test waits for the next frame before it fails.
const PATIENCE: Duration = Duration::from_secs(20);

impl Sse {
    /// Opens a stream with `request`; it must answer 200 `text/event-stream`.
    async fn open(what: String, request: reqwest::RequestBuilder) -> Sse {
        let response = request
            .header("A2A-Version", "1.0")
            .header("Accept", "text/event-stream")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let status = response.status().as_u16();
        let ct = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if status != 200 || !ct.starts_with("text/event-stream") {
            let text = response.text().await.unwrap_or_default();
            panic!("{what}: expected a 200 event stream, got {status} {ct}: {text}");
        }
        Sse {
            response,
            buffer: String::new(),
            what,
        }
    }

    /// A JSON-RPC streaming call (`SendStreamingMessage`, `SubscribeToTask`) with id `req-1`.
    pub async fn rpc(api: &Api, agent: &str, token: &str, method: &str, params: Value) -> Sse {
        let body = json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params});
        let request = api
            .client
            .post(api.url(&format!("{}/jsonrpc", base(agent))))
            .bearer_auth(token)
            .json(&body);
        Sse::open(format!("{method} on {agent}"), request).await
    }

    /// An HTTP+JSON streaming call to `path` under `agent`'s base.
    pub async fn rest(
        api: &Api,
        method: Method,
        agent: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Sse {
        let what = format!("{method} {path} on {agent}");
        let mut request = api
            .client
            .request(method, api.url(&format!("{}{path}", base(agent))))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        Sse::open(what, request).await
    }

    /// The next frame; `None` once the server ended the stream.
    pub async fn frame(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                return Some(parse(&block, &self.what));
            }
            let chunk = tokio::time::timeout(PATIENCE, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("{}: no frame within {PATIENCE:?}", self.what))
                .unwrap_or_else(|e| panic!("{}: reading the stream: {e}", self.what))?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }

    /// The next event's data, comment lines skipped; `None` at the end of the stream.
    pub async fn event(&mut self) -> Option<Value> {
        loop {
            match self.frame().await? {
                Frame::Comment(_) => continue,
                Frame::Event { data, .. } => return Some(data),
            }
        }
    }

    /// The next JSON-RPC event's `result` (it must carry the request's id and no error).
    pub async fn result(&mut self) -> Value {
        let e = self
            .event()
            .await
            .unwrap_or_else(|| panic!("{}: ended", self.what));
        assert_eq!(e["jsonrpc"], "2.0", "{}: {e}", self.what);
        assert_eq!(e["id"], "req-1", "{}: {e}", self.what);
        assert!(e.get("error").is_none(), "{}: {e}", self.what);
        e["result"].clone()
    }

    /// Asserts that the server ends the stream with no further event.
    pub async fn ends(&mut self) {
        if let Some(e) = self.event().await {
            panic!("{}: expected the end of the stream, got {e}", self.what);
        }
    }
}

fn parse(block: &str, what: &str) -> Frame {
    let block = block.trim_end_matches('\n');
    if let Some(comment) = block.strip_prefix(':') {
        return Frame::Comment(comment.trim().to_owned());
    }
    let (mut name, mut data) = (None, String::new());
    for line in block.lines() {
        if let Some(n) = line.strip_prefix("event: ") {
            name = Some(n.to_owned());
        } else if let Some(d) = line.strip_prefix("data: ") {
            data.push_str(d);
        } else {
            panic!("{what}: unexpected SSE line {line:?}");
        }
    }
    let data = serde_json::from_str(&data).unwrap_or_else(|e| panic!("{what}: {e}: {data}"));
    Frame::Event { name, data }
}

/// The A2A state a `statusUpdate` event carries.
#[track_caller]
pub fn update_state(event: &Value) -> &str {
    event["statusUpdate"]["status"]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("not a statusUpdate: {event}"))
}
