//! A worker over the mailbox's Unix socket: it leases the tasks addressed to its agent,
//! heartbeats while it works, stops when a task is canceled, and answers under the lease.
//!
//! Start the mailbox with a socket, e.g.
//! `A2A_MAILBOX_BIND=127.0.0.1:8080,unix:/tmp/a2a-mailbox.sock cargo run -- serve --dev`, then:
//!
//! ```sh
//! A2A_MAILBOX_TOKEN=<token> cargo run -p a2a-mailbox-client --example worker -- /tmp/a2a-mailbox.sock researcher
//! ```
//!
//! The second argument is whose tasks to work on (default: the token's own `sub`; another agent
//! needs `a2a.lease.<agent>`, which the `--dev` operator token has). Stop it with Ctrl-C.

use std::time::Duration;

use a2a_mailbox_client::types::Content;
use a2a_mailbox_client::{AgentId, Client, Leased, Reply, Worker};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let socket = args.next().ok_or("usage: worker SOCKET [RECIPIENT]")?;
    let token = std::env::var("A2A_MAILBOX_TOKEN").map_err(|_| "set A2A_MAILBOX_TOKEN")?;
    let client = Client::unix(&socket, token)?;
    let mut worker = Worker::new(client).heartbeat_every(Duration::from_secs(5));
    if let Some(recipient) = args.next() {
        worker = worker.recipient(AgentId::parse(&recipient)?);
    }
    println!("working on {socket}; Ctrl-C to stop");
    worker.run(handle).await?;
    Ok(())
}

/// The work: upper-cases the task's text, slowly enough that heartbeats matter.
async fn handle(leased: Leased) -> Reply {
    println!(
        "leased {} (attempt {})",
        leased.task.id, leased.lease.attempt
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut text = leased.task.intent_text.to_uppercase();
    for c in &leased.task.content {
        if let Content::Text { text: more } = c {
            text.push('\n');
            text.push_str(&more.to_uppercase());
        }
    }
    Reply::text(text)
}
