//! A webhook receiver for the harnesses: an HTTP server on loopback that notes each delivery's
//! `webhook-id` (`{game}:{seq}`), answers 2xx, and now and then 500 so that retries run under
//! the chaos too. Deliveries are judged afterwards ([`Receiver::check`]): every record at least
//! once, and each game's records first arriving in `seq` order.
//!
//! Written on tokio and httparse (already the harnesses' HTTP client parts) rather than with a
//! server framework: it reads one request head and a body by its length, nothing more.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One delivery as it arrived.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The game of its `webhook-id`.
    pub game: String,
    /// The record's seq, from its `webhook-id`.
    pub seq: i64,
    /// Whether it was answered 2xx (the others are to be retried).
    pub acknowledged: bool,
}

/// The receiver's state, shared with its server task.
#[derive(Default)]
pub struct Receiver {
    deliveries: Mutex<Vec<Delivery>>,
    /// One request in this many is answered 500 (0: none).
    fail_every: u64,
    count: AtomicU64,
}

impl Receiver {
    /// Starts a receiver on a free loopback port; answers its URL and itself. One request in
    /// `fail_every` is answered 500.
    pub async fn start(fail_every: u64) -> Result<(String, Arc<Receiver>), String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("the webhook receiver cannot listen: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("the webhook receiver has no address: {e}"))?;
        let receiver = Arc::new(Receiver {
            fail_every,
            ..Receiver::default()
        });
        let serving = receiver.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serving.clone().serve(stream));
            }
        });
        Ok((format!("http://{addr}/hook"), receiver))
    }

    /// Every delivery so far.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().map(|d| d.clone()).unwrap_or_default()
    }

    async fn serve(self: Arc<Self>, mut stream: TcpStream) {
        let mut buf = Vec::with_capacity(4096);
        loop {
            // One request: its head, then its body by content-length.
            let (head_len, id, length) = loop {
                let mut headers = [httparse::EMPTY_HEADER; 32];
                let mut request = httparse::Request::new(&mut headers);
                match request.parse(&buf) {
                    Ok(httparse::Status::Complete(len)) => {
                        let header = |name: &str| {
                            request
                                .headers
                                .iter()
                                .find(|h| h.name.eq_ignore_ascii_case(name))
                                .and_then(|h| std::str::from_utf8(h.value).ok())
                                .map(str::to_string)
                        };
                        let length = header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
                        break (len, header("webhook-id"), length);
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(_) => return,
                }
                let mut chunk = [0u8; 4096];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            while buf.len() < head_len + length {
                let mut chunk = [0u8; 4096];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            buf.drain(..head_len + length);
            let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
            let fail = self.fail_every > 0 && n.is_multiple_of(self.fail_every);
            if let Some((game, seq)) = id.as_deref().and_then(|id| id.rsplit_once(':'))
                && let Ok(seq) = seq.parse()
                && let Ok(mut deliveries) = self.deliveries.lock()
            {
                deliveries.push(Delivery {
                    game: game.to_string(),
                    seq,
                    acknowledged: !fail,
                });
            }
            let status = if fail {
                "500 Internal Server Error"
            } else {
                "204 No Content"
            };
            let reply = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
            if stream.write_all(reply.as_bytes()).await.is_err() {
                return;
            }
        }
    }

    /// Judges the deliveries against `feed`, each game's records (seqs) the endpoint wanted:
    /// every one acknowledged at least once, none that is not a record, and each game's
    /// records arriving for the first time in `seq` order (a retry repeats one, and a
    /// restart, a new owner or a state it failed to store may go back to the last one noted
    /// as acknowledged: repeats, never a record overtaking an older one). Answers how many
    /// deliveries there were and how many repeated a record acknowledged before.
    pub fn check(&self, feed: &BTreeMap<String, Vec<i64>>) -> Result<(usize, usize), String> {
        let deliveries = self.deliveries();
        let mut acknowledged: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
        let mut seen: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
        let mut newest: BTreeMap<&str, i64> = BTreeMap::new();
        let mut repeats = 0;
        for d in &deliveries {
            let newest = newest.entry(&d.game).or_insert(i64::MIN);
            if !seen.entry(&d.game).or_default().insert(d.seq) && d.seq < *newest {
                // A record sent before, sent again: allowed.
            } else if d.seq < *newest {
                return Err(format!(
                    "the receiver got {}:{} for the first time after {}:{newest}: out of seq order",
                    d.game, d.seq, d.game
                ));
            }
            *newest = (*newest).max(d.seq);
            if d.acknowledged && !acknowledged.entry(&d.game).or_default().insert(d.seq) {
                repeats += 1;
            }
        }
        for (game, seqs) in feed {
            let got = acknowledged.remove(game.as_str()).unwrap_or_default();
            let wanted: BTreeSet<i64> = seqs.iter().copied().collect();
            if let Some(missing) = wanted.difference(&got).next() {
                return Err(format!(
                    "the feed record {game}:{missing} was never delivered ({} of {} were)",
                    wanted.intersection(&got).count(),
                    wanted.len()
                ));
            }
            if let Some(extra) = got.difference(&wanted).next() {
                return Err(format!(
                    "the receiver got {game}:{extra}, which the feed does not hold"
                ));
            }
        }
        if let Some((game, _)) = acknowledged.iter().find(|(_, s)| !s.is_empty()) {
            return Err(format!(
                "the receiver got records of {game}, whose feed was not read"
            ));
        }
        Ok((deliveries.len(), repeats))
    }
}
