//! A minimal RESP2 client for the Redis peer: commands are written as arrays of bulk strings;
//! replies are parsed just enough to check their kind and read integers, with buffers reused.

use std::ops::Range;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One parsed reply. Array elements are parsed (to find the reply's end) but not kept; read
/// them with [`RespConn::bulk_items`] when a check needs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`.
    Simple(Range<usize>),
    /// `-ERR ...`.
    Error(Range<usize>),
    /// `:42`.
    Int(i64),
    /// `$5 hello`; `None` for the nil bulk.
    Bulk(Option<Range<usize>>),
    /// `*3 ...`: the element count (`None` for the nil array) and where the elements start.
    Array(Option<usize>, usize),
}

/// One connection to Redis.
pub(crate) struct RespConn {
    stream: TcpStream,
    command: Vec<u8>,
    buffer: Vec<u8>,
    /// Bytes of `buffer` read from the socket.
    filled: usize,
    /// Bytes of `buffer` already handed out as replies.
    consumed: usize,
}

impl RespConn {
    /// Connects to Redis at `addr`.
    pub(crate) async fn connect(addr: &str) -> Result<RespConn, String> {
        RespConn::connect_with_buffer(addr, 64 * 1024).await
    }

    /// Connects with a read buffer of `bytes` to begin with (it grows for a larger reply), for
    /// the many idle connections of a pub/sub fan-out.
    pub(crate) async fn connect_with_buffer(addr: &str, bytes: usize) -> Result<RespConn, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to Redis at {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(RespConn {
            stream,
            command: Vec::with_capacity(64),
            buffer: vec![0; bytes.max(64)],
            filled: 0,
            consumed: 0,
        })
    }

    /// Appends one command to the outgoing buffer (sent by [`RespConn::flush`]).
    pub(crate) fn queue(&mut self, args: &[&[u8]]) {
        self.command.push(b'*');
        crate::workload::push_int(&mut self.command, args.len() as i64);
        self.command.extend_from_slice(b"\r\n");
        for arg in args {
            self.command.push(b'$');
            crate::workload::push_int(&mut self.command, arg.len() as i64);
            self.command.extend_from_slice(b"\r\n");
            self.command.extend_from_slice(arg);
            self.command.extend_from_slice(b"\r\n");
        }
    }

    /// The outgoing buffer, for commands too large to spell as a slice of arguments.
    pub(crate) fn raw(&mut self) -> &mut Vec<u8> {
        &mut self.command
    }

    /// Sends every queued command.
    pub(crate) async fn flush(&mut self) -> Result<(), String> {
        self.stream
            .write_all(&self.command)
            .await
            .map_err(|e| format!("cannot send to Redis: {e}"))?;
        self.command.clear();
        Ok(())
    }

    /// Sends one command and reads its reply; a Redis error reply becomes an error.
    pub(crate) async fn call(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        self.queue(args);
        self.flush().await?;
        self.reply().await
    }

    /// Reads the next reply; a Redis error reply becomes an error. Ranges in it stay valid
    /// until the next read.
    pub(crate) async fn reply(&mut self) -> Result<Reply, String> {
        if self.consumed == self.filled {
            self.consumed = 0;
            self.filled = 0;
        }
        loop {
            match parse(&self.buffer[..self.filled], self.consumed)? {
                Some((reply, end)) => {
                    self.consumed = end;
                    if let Reply::Error(range) = &reply {
                        return Err(format!(
                            "Redis answered an error: {}",
                            String::from_utf8_lossy(&self.buffer[range.clone()])
                        ));
                    }
                    return Ok(reply);
                }
                None => self.fill().await?,
            }
        }
    }

    async fn fill(&mut self) -> Result<(), String> {
        if self.consumed > 0 && self.consumed == self.filled {
            self.consumed = 0;
            self.filled = 0;
        }
        if self.filled == self.buffer.len() {
            if self.consumed > 0 {
                self.buffer.copy_within(self.consumed..self.filled, 0);
                self.filled -= self.consumed;
                self.consumed = 0;
            } else {
                let grown = self.buffer.len() * 2;
                self.buffer.resize(grown, 0);
            }
        }
        let n = self
            .stream
            .read(&mut self.buffer[self.filled..])
            .await
            .map_err(|e| format!("cannot read from Redis: {e}"))?;
        if n == 0 {
            return Err("Redis closed the connection".into());
        }
        self.filled += n;
        Ok(())
    }

    /// The bytes of a range of the last reply.
    pub(crate) fn bytes(&self, range: &Range<usize>) -> &[u8] {
        &self.buffer[range.clone()]
    }

    /// The elements of the last reply, an array of bulk strings, as owned bytes (for checks,
    /// not for the measured path).
    pub(crate) fn bulk_items(&self, reply: &Reply) -> Result<Vec<Vec<u8>>, String> {
        let &Reply::Array(Some(len), mut at) = reply else {
            return Err(format!("expected an array from Redis, got {reply:?}"));
        };
        let mut items = Vec::with_capacity(len);
        for _ in 0..len {
            match parse(&self.buffer[..self.filled], at)? {
                Some((Reply::Bulk(Some(range)), end)) => {
                    items.push(self.buffer[range].to_vec());
                    at = end;
                }
                other => return Err(format!("expected bulk strings from Redis, got {other:?}")),
            }
        }
        Ok(items)
    }

    /// Where element `index` of the last reply, an array, lies when it is a bulk string;
    /// reads without copying (a pub/sub push is `message`, the channel, the payload).
    pub(crate) fn bulk_item(&self, reply: &Reply, index: usize) -> Result<Range<usize>, String> {
        let &Reply::Array(Some(len), mut at) = reply else {
            return Err(format!("expected an array from Redis, got {reply:?}"));
        };
        if index >= len {
            return Err(format!("a {len}-element array has no element {index}"));
        }
        for i in 0..=index {
            match parse(&self.buffer[..self.filled], at)? {
                Some((Reply::Bulk(Some(range)), _)) if i == index => return Ok(range),
                Some((_, end)) => at = end,
                None => return Err("a truncated array from Redis".into()),
            }
        }
        Err(format!("element {index} is not a bulk string"))
    }
}

/// Parses one reply starting at `at`: the reply and where it ends, or `None` when more bytes
/// are needed.
fn parse(buffer: &[u8], at: usize) -> Result<Option<(Reply, usize)>, String> {
    let Some(line_end) = buffer[at..].windows(2).position(|w| w == b"\r\n").map(|p| at + p) else {
        return Ok(None);
    };
    if line_end == at {
        return Err("an empty RESP line".into());
    }
    let line = at + 1..line_end;
    let next = line_end + 2;
    let number = || -> Result<i64, String> {
        std::str::from_utf8(&buffer[line.clone()])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                format!(
                    "a bad RESP number: {:?}",
                    String::from_utf8_lossy(&buffer[line.clone()])
                )
            })
    };
    match buffer[at] {
        b'+' => Ok(Some((Reply::Simple(line), next))),
        b'-' => Ok(Some((Reply::Error(line), next))),
        b':' => Ok(Some((Reply::Int(number()?), next))),
        b'$' => {
            let len = number()?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), next)));
            }
            let end = next + len as usize;
            if buffer.len() < end + 2 {
                return Ok(None);
            }
            Ok(Some((Reply::Bulk(Some(next..end)), end + 2)))
        }
        b'*' => {
            let len = number()?;
            if len < 0 {
                return Ok(Some((Reply::Array(None, next), next)));
            }
            let mut end = next;
            for _ in 0..len {
                match parse(buffer, end)? {
                    Some((_, after)) => end = after,
                    None => return Ok(None),
                }
            }
            Ok(Some((Reply::Array(Some(len as usize), next), end)))
        }
        other => Err(format!("an unknown RESP reply type {:?}", other as char)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nested replies are parsed whole, and partial ones wait for more bytes.
    #[test]
    fn parses_replies() {
        let bytes = b"*4\r\n$1\r\na\r\n$2\r\n10\r\n$-1\r\n:7\r\n+OK\r\n";
        let (reply, end) = parse(bytes, 0).unwrap().unwrap();
        assert_eq!(reply, Reply::Array(Some(4), 4));
        assert_eq!(&bytes[end..], b"+OK\r\n");
        assert_eq!(
            parse(bytes, end).unwrap().unwrap().0,
            Reply::Simple(end + 1..end + 3)
        );
        assert_eq!(parse(&bytes[..12], 0).unwrap(), None);
        assert_eq!(parse(b":-3\r\n", 0).unwrap(), Some((Reply::Int(-3), 5)));
    }
}
