//! Crash after sending, resume from a checkpoint file, drain the results.
//!
//! With `cargo run -- serve --dev` running in another shell:
//!
//! ```sh
//! A2A_MAILBOX_TOKEN=<token> cargo run -p a2a-mailbox-client --example resume
//! ```
//!
//! The example runs itself twice. The first process sends three tasks, saves the client's
//! checkpoint to `resume.checkpoint.json` and dies without draining anything. The second reads
//! the file, resumes (refused if the token belongs to another agent than the checkpoint), shows
//! where each task stands, answers them as their recipient, and drains the results, saving the
//! shrinking checkpoint after each one. `A2A_MAILBOX_URL` names another mailbox.

use std::process::Command;
use std::time::Duration;

use a2a_mailbox_client::{AgentId, Checkpoint, Client, Leased, NewTask, Reply, Worker};

const FILE: &str = "resume.checkpoint.json";
const RECIPIENT: &str = "summariser";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("A2A_MAILBOX_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let token = std::env::var("A2A_MAILBOX_TOKEN").map_err(|_| "set A2A_MAILBOX_TOKEN")?;
    if std::env::args().nth(1).as_deref() == Some("send") {
        return send_and_crash(url, token).await;
    }
    let status = Command::new(std::env::current_exe()?)
        .arg("send")
        .status()?;
    println!("the sender died ({status}); resuming from {FILE}");

    let (client, resumed) = Client::from_checkpoint(url, token, Checkpoint::load(FILE)?).await?;
    for s in &resumed.tasks {
        println!("  {} is {}", s.task.id, s.state.as_str());
    }
    // Answer them, as their recipient would.
    let worker = Worker::new(client.clone()).recipient(AgentId::parse(RECIPIENT)?);
    tokio::spawn(async move {
        worker
            .run(|leased: Leased| async move {
                Reply::text(format!("summary of {}", leased.task.intent_text))
            })
            .await
    });
    while !client.checkpoint().active_task_ids.is_empty() {
        if let Some(result) = client.next_result(Duration::from_secs(10)).await? {
            println!("  drained {} ({:?})", result.task_id, result.status);
            client.checkpoint().save(FILE)?;
        }
    }
    std::fs::remove_file(FILE)?;
    println!("every task sent before the crash is answered and drained");
    Ok(())
}

/// The first process: send, save the checkpoint, and stop abruptly.
async fn send_and_crash(url: String, token: String) -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::builder(url, token)
        .context_id("resume-example")
        .build()?;
    for doc in ["the Q3 report", "the board minutes", "the audit letter"] {
        let sent = client
            .send(NewTask::new(RECIPIENT, format!("summarise {doc}")))
            .await?;
        println!("  sent {}", sent.task_id);
    }
    client.checkpoint().save(FILE)?;
    std::process::exit(1);
}
