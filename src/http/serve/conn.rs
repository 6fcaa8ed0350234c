//! A connection as actix-http sees it, with one change: the answers actix-http writes by itself,
//! before any handler runs, leave with the contract's error body instead of an empty one.
//!
//! Three such answers exist, each the last one on its connection: 431 for a request head past
//! actix-http's fixed limits (96 header lines, 128 KiB), 400 for bytes that are not an HTTP/1.x
//! request, and 408 for a head that did not arrive in time. actix-http offers no hook for them, so
//! [`ContractErrors`] recognises them in what is written — a response head with one of these
//! statuses and `content-length: 0` at the very end of a write, a shape no answer of this service's
//! handlers has (every one of their refusals carries a body) — and writes the same head with the
//! error body in its place.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::domain::answers::ErrorKind;
use crate::error::ErrorCode;
use crate::http::error::ErrorBody;

/// The code and message of each answer actix-http writes by itself.
fn contract_error(status: &[u8]) -> Option<(ErrorCode, &'static str)> {
    Some(match status {
        b"431" => (
            ErrorCode::HeadersTooLarge,
            "the request's headers are too large: at most 96 header lines and 128 KiB in all",
        ),
        b"400" => (
            ErrorCode::InvalidRequest,
            "the request is not a valid HTTP/1.1 request",
        ),
        b"408" => (
            ErrorCode::RequestTimeout,
            "the request's headers did not arrive in time; send them at once",
        ),
        _ => return None,
    })
}

/// An IO stream whose bodyless built-in error answers get the contract's error body.
pub struct ContractErrors<IO> {
    io: IO,
    /// An answer being written in place of a bodyless one: its bytes, how many are written, and
    /// how many bytes of the caller's buffer it stands for.
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<IO> ContractErrors<IO> {
    pub fn new(io: IO) -> Self {
        ContractErrors {
            io,
            replacing: None,
        }
    }
}

/// Where a bodyless built-in error answer starts in `buf` (it always ends it), and the answer
/// to write in its place.
fn bodyless_error(buf: &[u8]) -> Option<(usize, Vec<u8>)> {
    let head_end = buf.len().checked_sub(4)?;
    if buf.get(head_end..)? != b"\r\n\r\n" {
        return None;
    }
    let start = find_last(buf.get(..head_end)?, b"HTTP/1.")?;
    let head = buf.get(start..head_end)?;
    if find_last(head, b"\r\n\r\n").is_some() || head.get(8) != Some(&b' ') {
        return None;
    }
    let (code, message) = contract_error(head.get(9..12)?)?;
    // Every line of the head with its CRLF, but the empty body's length.
    let lines = buf
        .get(start..buf.len().checked_sub(2)?)?
        .split_inclusive(|b| *b == b'\n');
    let (empty, kept): (Vec<&[u8]>, Vec<&[u8]>) =
        lines.partition(|l| l.eq_ignore_ascii_case(b"content-length: 0\r\n"));
    if empty.len() != 1 {
        return None;
    }
    let body = serde_json::to_vec(&ErrorBody {
        kind: ErrorKind::Tag,
        code,
        message: message.to_owned(),
        retriable: false,
        index: None,
    })
    .ok()?;
    let mut out = kept.concat();
    out.extend_from_slice(b"content-type: application/json\r\ncontent-length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(&body);
    Some((start, out))
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for ContractErrors<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacing.is_none() {
            match bodyless_error(buf) {
                // What comes before the bodyless answer goes out as it is.
                Some((start, _)) if start > 0 => {
                    let before = buf.get(..start).unwrap_or(buf);
                    return Pin::new(&mut this.io).poll_write(cx, before);
                }
                Some((_, answer)) => this.replacing = Some((answer, 0, buf.len())),
                None => return Pin::new(&mut this.io).poll_write(cx, buf),
            }
        }
        let Some((answer, written, stands_for)) = this.replacing.as_mut() else {
            // Set just above; should it not be, the bytes go out as they are.
            return Pin::new(&mut this.io).poll_write(cx, buf);
        };
        while let Some(rest) = answer.get(*written..).filter(|r| !r.is_empty()) {
            let n = ready!(Pin::new(&mut this.io).poll_write(cx, rest))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written = written.saturating_add(n);
        }
        let consumed = *stands_for;
        this.replacing = None;
        Poll::Ready(Ok(consumed))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for ContractErrors<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::bodyless_error;

    const BARE_431: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\n\
        content-length: 0\r\nconnection: close\r\ndate: Wed, 25 Nov 2026 10:00:00 GMT\r\n\r\n";

    #[test]
    fn a_bare_431_gets_the_error_body_and_keeps_its_other_headers() {
        let (start, out) = bodyless_error(BARE_431).expect("recognised");
        assert_eq!(start, 0);
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("connection: close\r\ndate: Wed, 25 Nov 2026 10:00:00 GMT"));
        assert!(!head.contains("content-length: 0"));
        assert!(head.ends_with(&format!("content-length: {}", body.len())));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["code"], "headers_too_large");
        assert_eq!(body["kind"], "error");
        assert_eq!(body["retriable"], false);
    }

    #[test]
    fn a_bare_error_after_an_earlier_answer_is_found_where_it_starts() {
        let earlier = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        let buf = [
            &earlier[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
        ]
        .concat();
        let (start, out) = bodyless_error(&buf).expect("recognised");
        assert_eq!(start, earlier.len());
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("\"invalid_request\""));
    }

    #[test]
    fn answers_with_a_body_or_another_status_pass_untouched() {
        for buf in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 52\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}",
            b"{\"text\": \"HTTP/1.1 431 x\"}",
            b"",
        ] {
            assert!(
                bodyless_error(buf).is_none(),
                "{}",
                String::from_utf8_lossy(buf)
            );
        }
    }
}
