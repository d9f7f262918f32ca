//! `standings serve`.

use std::process::ExitCode;
use std::time::Instant;

use super::{Global, backend, load_config, redact};
use crate::chain::Chain;
use crate::http::serve::{Limits, Threads};
use crate::writer::checkpoint::Restored;

pub(super) async fn serve(global: &Global) -> Result<ExitCode, String> {
    let (config, path, fresh) = load_config(global)?;
    if fresh {
        // On stdout, not in the logs: the operator needs the tokens once, and logs are kept.
        println!(
            "standings: first start; wrote a config with fresh tokens to {} (mode 0600)",
            path.display()
        );
        for token in &config.tokens {
            println!(
                "standings:   {} token ({}): {}",
                token.name, token.role, token.secret
            );
        }
        // A read-only way into the viewer; `standings viewer-link` makes another later.
        match super::viewer_link::link(&config, None, None, 3600, crate::clock::now_ms() / 1000) {
            Ok(link) => println!("standings: the board viewer, reading for an hour: {link}"),
            Err(why) => println!("standings: no viewer link: {why}"),
        }
    }
    let started = Instant::now();
    if config.cluster.is_some() {
        return serve_cluster(&config, &path, started).await;
    }
    // Before the store is opened: a second process on the same database refuses here, without
    // migrating, restoring or writing anything.
    let mut owner = super::claim_log(&config, "standings serve").await?;
    let state = crate::start(&config).await.map_err(|e| Chain(&e).to_string())?;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    owner
        .announce(Some(addr.to_string()))
        .await
        .map_err(|e| Chain(&e).to_string())?;
    // The lock is held until the process ends. If it is lost and another process held it since,
    // this one's boards may be stale and its next write would be a second writer's: it exits at
    // once, as a crash would (what the log is built to survive), rather than stopping gracefully,
    // which would commit the requests in flight and write a checkpoint.
    tokio::spawn(async move {
        let why = owner.hold().await;
        tracing::error!("{}", Chain(&why));
        eprintln!("standings: {why}");
        std::process::exit(1);
    });
    let boards = state.registry.all().len();
    let (restored, checkpoint_seq, replayed, wording) = match &state.restored {
        Restored::Checkpoint {
            seq,
            tail,
            read_in,
            decoded_in,
            replayed_in,
            ..
        } => (
            "checkpoint",
            *seq,
            *tail,
            format!(
                "from the checkpoint at seq {seq} and {tail} log entries after it: read in {read_in:.2?}, decoded in {decoded_in:.2?}, the entries replayed in {replayed_in:.2?}"
            ),
        ),
        Restored::FullReplay { .. } => ("replay", 0, 0, "by replaying the whole log".to_string()),
    };
    let seq = state.store.next_seq().await.map_err(|e| e.to_string())? - 1;
    let threads = Threads {
        count: config.http_threads,
        pin: config.pin_http_threads,
    };
    // Derived after the store has opened its connections, so that they count as in use.
    let limits = Limits::of(&config);
    let database = redact(&config.database);
    let ready_in = started.elapsed();
    tracing::info!(
        listen = %addr,
        backend = backend(&config.database),
        database = %database,
        boards,
        restored,
        checkpoint_seq,
        replayed,
        seq,
        threads = threads.resolved(),
        max_connections = limits.max_connections,
        ready_ms = ready_in.as_millis() as u64,
        config = %path.display(),
        "serving"
    );
    // The same summary for a person (and the scripts that read it), on stdout.
    println!(
        "standings: serving on http://{addr} with {}, at most {} ({} ready in {ready_in:.2?}, {wording}; config {}; database {database})",
        crate::words::counted(
            threads.resolved() as u64,
            "connection thread",
            "connection threads"
        ),
        crate::words::counted(limits.max_connections as u64, "connection", "connections"),
        crate::words::counted(boards as u64, "board", "boards"),
        path.display(),
    );
    let shutdown = async {
        shutdown_signal().await;
        tracing::info!("shutting down (finishing requests, writing a checkpoint)");
    };
    crate::run(listener, state, threads, limits, shutdown)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// `serve` as one node of a cluster: joins it (refused while a single-node origin holds the
/// database, or while another live node has this node's id), listens, then takes its share of
/// the partitions; on SIGTERM hands them to the other nodes before it stops.
async fn serve_cluster(
    config: &crate::config::Config,
    path: &std::path::Path,
    started: Instant,
) -> Result<ExitCode, String> {
    let cluster = config.cluster.clone().ok_or("no [cluster] table")?;
    let shown = redact(&config.database);
    let membership = crate::store::cluster::Membership::join(&config.database, &shown)
        .await
        .map_err(|e| Chain(&e).to_string())?;
    tokio::spawn(membership.hold(config.database.clone()));
    let node = crate::cluster::Node::join(config, crate::clock::Clock::System, &shown)
        .await
        .map_err(|e| Chain(&e).to_string())?;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    node.start();
    // A process whose node id another process took over exits at once, as a crash would:
    // the other process is the node now.
    let superseded = node.clone();
    tokio::spawn(async move {
        superseded.superseded().await;
        eprintln!("standings: another process runs as this node now; exiting");
        std::process::exit(1);
    });
    let threads = Threads {
        count: config.http_threads,
        pin: config.pin_http_threads,
    };
    let limits = Limits::of(config);
    tracing::info!(
        listen = %addr,
        node_id = %cluster.node_id,
        advertise_url = %cluster.advertise_url,
        partitions = cluster.partitions,
        lease_ttl_ms = cluster.lease_ttl_ms,
        standby = cluster.standby,
        database = %shown,
        ready_ms = started.elapsed().as_millis() as u64,
        "serving as a cluster node"
    );
    println!(
        "standings: node {} serving on http://{addr} (advertised as {}), one of the cluster on {shown} with {} partitions; config {}",
        cluster.node_id,
        cluster.advertise_url,
        cluster.partitions,
        path.display(),
    );
    let draining = node.clone();
    let shutdown = async move {
        shutdown_signal().await;
        tracing::info!("handing the partitions over, then stopping");
        draining.drain().await;
        tokio::time::Instant::now() + std::time::Duration::from_secs(config_grace(&draining))
    };
    crate::http::serve::serve(
        listener,
        node.app(),
        crate::http::stream_routes(),
        threads,
        limits,
        node.metrics().clone(),
        shutdown,
    )
    .await
    .map_err(|e| e.to_string())?;
    node.stop().await;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The grace a stop gives the streams still open (forwarded ones end with their owner's).
fn config_grace(node: &crate::cluster::Node) -> u64 {
    node.stop_grace_seconds()
}

/// Ctrl-C, or SIGTERM (what service managers and containers send to stop a process).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch for SIGTERM; stop with Ctrl-C");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
