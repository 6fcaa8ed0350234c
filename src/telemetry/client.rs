//! The HTTP client the OTLP exporter sends with: this crate's own reqwest client behind
//! opentelemetry-http's `HttpClient` trait (opentelemetry-otlp's built-in clients are another
//! major version of reqwest, which would be a second copy of it in the build).

use std::time::Duration;

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// How long one export may take before it is given up (its spans are counted as failed).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct Client(reqwest::Client);

impl Client {
    pub fn new() -> Result<Client, reqwest::Error> {
        reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(Client)
    }
}

#[async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let answer = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let mut response = Response::new(answer.bytes().await?);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
