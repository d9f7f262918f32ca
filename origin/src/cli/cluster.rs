//! `standings cluster status`: the cluster's nodes and partitions, read from the database.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{Global, load_config, redact};
use crate::chain::Chain;
use crate::store::cluster::ClusterStore;

/// `standings cluster ...`.
#[derive(Debug, Args)]
pub(super) struct ClusterArgs {
    #[command(subcommand)]
    command: ClusterCommand,
}

#[derive(Debug, Subcommand)]
enum ClusterCommand {
    /// Print the nodes and every partition's owner, epoch, lease, log end and standbys' lag.
    Status {
        /// Print the table as JSON, as `GET /v1/cluster` answers it.
        #[arg(long)]
        json: bool,
        /// Also say which partition this game is in and which node owns it.
        #[arg(long, value_name = "GAME")]
        game: Option<String>,
    },
}

pub(super) async fn cluster(global: &Global, args: &ClusterArgs) -> Result<ExitCode, String> {
    let ClusterCommand::Status { json, game } = &args.command;
    let (config, _, _) = load_config(global)?;
    let shown = redact(&config.database);
    let store = ClusterStore::existing(&config.database, &shown)
        .await
        .map_err(|e| Chain(&e).to_string())?;
    let status = crate::cluster::status::read(&store, None, game.as_deref())
        .await
        .map_err(|e| Chain(&e).to_string())?;
    if *json {
        println!(
            "{}",
            serde_json::to_string_pretty(&status).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", crate::cluster::status::table(&status));
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}
