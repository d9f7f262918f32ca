//! Delivering a game's feed to its webhook endpoints (`docs/feed.md`): one task per endpoint,
//! which reads the feed from the store after the last seq its receiver acknowledged, so a
//! restart or a new owner of the game resumes where it stopped. What each step decides is
//! `domain::webhooks`.

use std::time::Duration;

use crate::domain::webhooks::{Endpoint, Outcome, Retries, after_attempt, signature};

/// The HTTP client deliveries go through: https (rustls) or plain http.
type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    http_body_util::Full<bytes::Bytes>,
>;

/// The CA certificates of the PEM file at `path` (`webhook_ca_file`): an error names what is
/// wrong with it. O(file).
pub(crate) fn extra_roots(path: &str) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, String> {
    use rustls_pki_types::pem::PemObject as _;
    let certificates = rustls_pki_types::CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("webhook_ca_file {path:?} cannot be read: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("webhook_ca_file {path:?} is not PEM certificates: {e}"))?;
    if certificates.is_empty() {
        return Err(format!("webhook_ca_file {path:?} holds no certificate"));
    }
    let mut roots = rustls::RootCertStore::empty();
    for certificate in &certificates {
        roots
            .add(certificate.clone())
            .map_err(|e| format!("webhook_ca_file {path:?} holds a certificate that is not a CA's: {e}"))?;
    }
    Ok(certificates)
}

/// The client: the Mozilla roots and `extra` trusted, connections given up after `timeout`.
fn client(timeout: Duration, extra: Vec<rustls_pki_types::CertificateDer<'static>>) -> Client {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for certificate in extra {
        // Checked when the config was read.
        let _ = roots.add(certificate);
    }
    // The crate's one provider (ring, the only one its features enable).
    let tls = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.set_connect_timeout(Some(timeout));
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector)
}

/// How often the endpoints are listed again, and an idle endpoint looks for new records.
const POLL_MS: i64 = 100;

/// Records read from the feed at a time for one endpoint.
const BATCH: usize = 64;

/// Runs a delivery task per endpoint of `store` while `alive` (the engine's feed) is, on
/// `clock`: new endpoints get one, removed ones end theirs.
pub(crate) async fn deliver(
    alive: std::sync::Weak<super::Feed>,
    store: crate::store::Store,
    clock: crate::clock::Clock,
    retries: Retries,
    extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
) {
    let client = client(retries.timeout, extra_roots);
    let mut tasks: std::collections::HashMap<(String, String), tokio::task::JoinHandle<()>> =
        std::collections::HashMap::new();
    while alive.upgrade().is_some() {
        let tick = clock.now_ms().saturating_add(POLL_MS);
        match store.webhooks().await {
            Ok(endpoints) => {
                tasks.retain(|_, task| !task.is_finished());
                for e in endpoints {
                    let key = (e.game.clone(), e.id.clone());
                    if tasks.contains_key(&key) {
                        continue;
                    }
                    let task = tokio::spawn(endpoint_task(
                        key.clone(),
                        alive.clone(),
                        store.clone(),
                        clock.clone(),
                        client.clone(),
                        retries,
                    ));
                    tasks.insert(key, task);
                }
            }
            Err(e) => tracing::warn!("listing webhook endpoints failed: {}", crate::chain::Chain(&e)),
        }
        clock.sleep_until(tick).await;
    }
    for task in tasks.into_values() {
        task.abort();
    }
}

/// Delivers one endpoint's records in seq order until it is removed: reads its state, waits
/// while it is parked or backing off, and sends the next records it takes.
async fn endpoint_task(
    (game, id): (String, String),
    feed: std::sync::Weak<super::Feed>,
    store: crate::store::Store,
    clock: crate::clock::Clock,
    client: Client,
    retries: Retries,
) {
    loop {
        let mut e = match store.webhook(&game, &id).await {
            Ok(Some(e)) => e,
            Ok(None) => {
                if let Some(feed) = feed.upgrade() {
                    feed.forget_endpoint(&game, &id);
                }
                return;
            }
            Err(why) => {
                tracing::warn!(
                    game,
                    endpoint = id,
                    "reading a webhook endpoint failed: {}",
                    crate::chain::Chain(&why)
                );
                clock.sleep_until(clock.now_ms() + POLL_MS * 10).await;
                continue;
            }
        };
        if let Some(feed) = feed.upgrade() {
            feed.note_endpoint(&game, &id, None, e.parked_reason.is_some(), e.delivered_through);
        }
        let now = clock.now_ms();
        if e.parked_reason.is_some() || e.next_attempt_at > now {
            clock
                .sleep_until(now + POLL_MS.min((e.next_attempt_at - now).max(1)))
                .await;
            continue;
        }
        let records = match store.feed_after(&game, e.delivered_through, BATCH).await {
            Ok(records) => records,
            Err(why) => {
                tracing::warn!(
                    game,
                    "reading the feed for a webhook failed: {}",
                    crate::chain::Chain(&why)
                );
                clock.sleep_until(now + POLL_MS * 10).await;
                continue;
            }
        };
        if records.is_empty() {
            clock.sleep_until(now + POLL_MS).await;
            continue;
        }
        let before = e.delivered_through;
        for (seq, kind, record) in records {
            if !e.kinds.contains(&kind) {
                e.delivered_through = seq;
                continue;
            }
            let outcome = send(&client, &e, seq, record, &clock, retries.timeout).await;
            let failed = outcome != Outcome::Delivered;
            e = after_attempt(e, seq, outcome, &retries, clock.now_ms());
            if let Some(feed) = feed.upgrade() {
                feed.note_endpoint(
                    &game,
                    &id,
                    Some(!failed),
                    e.parked_reason.is_some(),
                    e.delivered_through,
                );
            }
            if failed {
                break;
            }
        }
        if (e.delivered_through != before || e.attempts > 0 || e.parked_reason.is_some())
            && let Err(why) = store.set_webhook_delivery(&e).await
        {
            tracing::warn!(
                game,
                endpoint = id,
                "storing a webhook's delivery state failed: {}",
                crate::chain::Chain(&why)
            );
        }
    }
}

/// One attempt at delivering the record at `seq`: a POST of the record with the Standard
/// Webhooks headers, 2xx within `timeout` being a delivery.
async fn send(
    client: &Client,
    e: &Endpoint,
    seq: i64,
    record: String,
    clock: &crate::clock::Clock,
    timeout: Duration,
) -> Outcome {
    let msg_id = format!("{}:{seq}", e.game);
    let now = clock.now_ms();
    let timestamp = now.div_euclid(1_000);
    let signature = signature(e, &msg_id, timestamp, record.as_bytes(), now);
    let request = hyper::Request::post(&e.url)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header("webhook-id", &msg_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(http_body_util::Full::new(bytes::Bytes::from(record)));
    let request = match request {
        Ok(request) => request,
        Err(why) => return Outcome::Failed(format!("the request could not be built: {why}")),
    };
    let attempt = async {
        let answer = client
            .request(request)
            .await
            .map_err(|why| format!("POST {}: {}", e.url, crate::chain::Chain(&why)))?;
        let status = answer.status();
        // The body is read whole so the connection can be used again; its bytes do not matter.
        let _ = http_body_util::BodyExt::collect(answer.into_body()).await;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("POST {} answered {status}", e.url))
        }
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(())) => Outcome::Delivered,
        Ok(Err(why)) => Outcome::Failed(why),
        Err(_) => Outcome::Failed(format!(
            "POST {}: no answer within {} ms",
            e.url,
            timeout.as_millis()
        )),
    }
}
