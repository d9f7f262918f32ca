//! A minimal HTTP/1.1 keep-alive client: one request at a time per connection, Content-Length
//! bodies only (the origin always sends one). Buffers are reused, so a request allocates
//! nothing once the connection is warm.

use std::ops::Range;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One keep-alive connection to the service.
pub struct HttpConn {
    stream: TcpStream,
    /// `Host` and `Authorization` lines, written into every request.
    common_headers: Vec<u8>,
    request: Vec<u8>,
    response: Vec<u8>,
    filled: usize,
}

/// An answer: its status, and where its body lies in the connection's buffer.
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    body: Range<usize>,
}

impl HttpConn {
    /// Connects to `addr` and sends `token` as the bearer with every request.
    pub async fn connect(addr: &str, token: &str) -> Result<HttpConn, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to the service at {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(HttpConn {
            stream,
            common_headers: format!("Host: {addr}\r\nAuthorization: Bearer {token}\r\n").into_bytes(),
            request: Vec::with_capacity(4096),
            response: vec![0; 64 * 1024],
            filled: 0,
        })
    }

    /// Starts a request line in the request buffer; the caller appends the path's remaining
    /// bytes with [`HttpConn::path`] and then calls [`HttpConn::send`].
    pub fn start(&mut self, method: &str) -> &mut Vec<u8> {
        self.request.clear();
        self.request.extend_from_slice(method.as_bytes());
        self.request.push(b' ');
        &mut self.request
    }

    /// Finishes the request begun with [`HttpConn::start`] (`body` may be empty), sends it and
    /// reads the whole answer.
    pub async fn send(&mut self, body: &[u8]) -> Result<Answer, String> {
        self.request.extend_from_slice(b" HTTP/1.1\r\n");
        self.request.extend_from_slice(&self.common_headers);
        if !body.is_empty() {
            self.request
                .extend_from_slice(b"Content-Type: application/json\r\nContent-Length: ");
            crate::workload::push_int(&mut self.request, body.len() as i64);
            self.request.extend_from_slice(b"\r\n");
        }
        self.request.extend_from_slice(b"\r\n");
        if body.is_empty() || body.len() > 16 * 1024 {
            self.stream
                .write_all(&self.request)
                .await
                .map_err(|e| format!("cannot send a request: {e}"))?;
            if !body.is_empty() {
                self.stream
                    .write_all(body)
                    .await
                    .map_err(|e| format!("cannot send a request body: {e}"))?;
            }
        } else {
            // Small bodies go out with their headers in one write (one syscall, one segment).
            self.request.extend_from_slice(body);
            self.stream
                .write_all(&self.request)
                .await
                .map_err(|e| format!("cannot send a request: {e}"))?;
        }
        self.read_answer().await
    }

    /// `GET path` (the whole path, query included).
    pub async fn get(&mut self, path: &str) -> Result<Answer, String> {
        self.start("GET").extend_from_slice(path.as_bytes());
        self.send(&[]).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&mut self, path: &str, body: &[u8]) -> Result<Answer, String> {
        self.start("POST").extend_from_slice(path.as_bytes());
        self.send(body).await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(&mut self, path: &str, body: &[u8]) -> Result<Answer, String> {
        self.start("PUT").extend_from_slice(path.as_bytes());
        self.send(body).await
    }

    /// The body of the last answer.
    pub fn body(&self, answer: &Answer) -> &[u8] {
        &self.response[answer.body.clone()]
    }

    /// The body of the last answer as lossy text, for error messages.
    pub fn body_text(&self, answer: &Answer) -> String {
        let body = self.body(answer);
        String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned()
    }

    async fn fill(&mut self) -> Result<(), String> {
        if self.filled == self.response.len() {
            let grown = self.response.len() * 2;
            self.response.resize(grown, 0);
        }
        let n = self
            .stream
            .read(&mut self.response[self.filled..])
            .await
            .map_err(|e| format!("cannot read an answer: {e}"))?;
        if n == 0 {
            return Err("the service closed the connection".into());
        }
        self.filled += n;
        Ok(())
    }

    async fn read_answer(&mut self) -> Result<Answer, String> {
        // The previous answer was consumed whole (no pipelining), so the buffer starts empty.
        self.filled = 0;
        let mut searched = 0;
        let head_end = loop {
            if let Some(at) = find(&self.response[searched..self.filled], b"\r\n\r\n") {
                break searched + at + 4;
            }
            searched = self.filled.saturating_sub(3);
            self.fill().await?;
        };
        let head = &self.response[..head_end];
        if head.len() < 12 || !head.starts_with(b"HTTP/1.") {
            return Err(format!(
                "a malformed answer: {:?}",
                String::from_utf8_lossy(&head[..head.len().min(200)])
            ));
        }
        let status = std::str::from_utf8(&head[9..12])
            .ok()
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or("a malformed status line")?;
        let length = content_length(head).ok_or("an answer without Content-Length")?;
        let end = head_end + length;
        if end > self.response.len() {
            self.response.resize(end.next_power_of_two(), 0);
        }
        while self.filled < end {
            self.fill().await?;
        }
        if self.filled != end {
            return Err("the service sent bytes past the end of an answer".into());
        }
        Ok(Answer {
            status,
            body: head_end..end,
        })
    }
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// How many times `needle` occurs in `haystack`, not overlapping.
pub fn count(haystack: &[u8], needle: &[u8]) -> usize {
    let mut found = 0;
    let mut rest = haystack;
    while let Some(at) = find(rest, needle) {
        found += 1;
        rest = &rest[at + needle.len()..];
    }
    found
}

/// The Content-Length header's value.
fn content_length(head: &[u8]) -> Option<usize> {
    const NAME: &[u8] = b"content-length:";
    for line in head.split(|&b| b == b'\n') {
        if line.len() > NAME.len() && line[..NAME.len()].eq_ignore_ascii_case(NAME) {
            return std::str::from_utf8(&line[NAME.len()..]).ok()?.trim().parse().ok();
        }
    }
    None
}
