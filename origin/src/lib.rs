//! The Standings origin service: durable ingestion with idempotency, aggregates, and the read
//! API, over embedded SQLite or PostgreSQL.
//!
//! [`start`] opens the store and rebuilds the live boards from the event log; [`run`] serves the
//! API on a listener until `shutdown` resolves. Tests start it on `127.0.0.1:0`, or call
//! [`api::router`] directly.

pub mod api;
pub mod auth;
pub mod boards;
pub mod cli;
pub mod clock;
pub mod config;
pub mod error;
pub mod ingest;
pub mod metrics;
pub mod store;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::TcpListener;

use crate::api::{AppState, Shared};
use crate::auth::Auth;
use crate::boards::Registry;
use crate::config::Config;
use crate::error::AppError;
use crate::ingest::Ingest;
use crate::metrics::Metrics;
use crate::store::Store;

/// Opens the store (migrating it), rebuilds every board from the event log, and starts the
/// writer. The service is ready when this returns.
pub async fn start(config: &Config) -> Result<Shared, AppError> {
    let store = Store::open(&config.database).await?;
    let registry = Arc::new(Registry::rebuild(&store, None, |_| {}).await?);
    let next_seq = store.next_seq().await?;
    let metrics = Arc::new(Metrics::default());
    let ingest = Ingest::start(store.clone(), registry.clone(), metrics.clone(), next_seq);
    Ok(Arc::new(AppState {
        store,
        registry,
        ingest,
        auth: Auth::from_config(config),
        metrics,
        ready: AtomicBool::new(true),
    }))
}

/// Serves the API on `listener` until `shutdown` resolves, then stops taking requests, finishes
/// the ones in flight and closes the store.
pub async fn run(
    listener: TcpListener,
    state: Shared,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = api::router(state.clone());
    let flag = state.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            flag.ready.store(false, Ordering::Release);
        })
        .await?;
    state.store.close().await;
    Ok(())
}
