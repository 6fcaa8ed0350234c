//! A fan-out: an editor splits a report (the parent task) into N sections (its children) for a
//! researcher, gathers their results through the children endpoint
//! (`GET /a2a/tasks/{id}/children`) and answers the report with them.
//!
//! With `cargo run -- serve --dev` running in another shell, pass the operator token it prints
//! (it may send to, lease for and answer any agent, so this one process plays every part):
//!
//! ```sh
//! A2A_MAILBOX_TOKEN=<token> cargo run -p a2a-mailbox-client --example fan_out -- 3
//! ```
//!
//! `A2A_MAILBOX_URL` names another mailbox (default `http://127.0.0.1:8080`).

use std::time::Duration;

use a2a_mailbox_client::types::Content;
use a2a_mailbox_client::{AgentId, Client, Leased, ListQuery, NewTask, Reply, Worker};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("A2A_MAILBOX_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let token = std::env::var("A2A_MAILBOX_TOKEN").map_err(|_| "set A2A_MAILBOX_TOKEN")?;
    let n: usize = std::env::args().nth(1).map_or(Ok(3), |a| a.parse())?;
    let client = Client::new(url, token)?;

    // The researchers: a worker that answers each section.
    let researcher = AgentId::parse("researcher")?;
    let worker = Worker::new(client.clone())
        .recipient(researcher.clone())
        .poll_wait(Duration::from_secs(1));
    tokio::spawn(async move {
        worker
            .run(|leased: Leased| async move {
                Reply::text(format!("notes on {}", leased.task.intent_text))
            })
            .await
    });

    // The editor takes a report to write and splits it into sections for the researchers.
    let editor = AgentId::parse("editor")?;
    let parent = client
        .send(NewTask::new(editor.as_str(), "a report on the Q3 numbers"))
        .await?;
    let report = client
        .lease_next(Some(&editor), Duration::from_secs(5))
        .await?
        .ok_or("the report was not leased")?;
    let children = (1..=n)
        .map(|i| NewTask::new(researcher.as_str(), format!("section {i}")).parent(parent.task_id))
        .collect();
    client.send_batch(children).await?;
    println!("report {} split into {n} sections", parent.task_id);

    // Done when every child is answered (or canceled): the tally covers every child.
    let page = loop {
        let page = client
            .children(parent.task_id, &ListQuery::default())
            .await?;
        let c = &page.counts;
        if (c.result_pending + c.resolved + c.canceled) as usize == n {
            break page;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut sections = Vec::new();
    for status in page.tasks.iter().rev() {
        let text = status
            .result
            .iter()
            .flat_map(|r| &r.content)
            .find_map(|c| match c {
                Content::Text { text } => Some(text.clone()),
                Content::Json { .. } => None,
            });
        println!(
            "  {}: {}",
            status.task.intent_text,
            text.as_deref().unwrap_or("-")
        );
        sections.extend(text);
    }
    let whole =
        Reply::text(sections.join("\n")).for_task(parent.task_id, Some(report.lease.lease_id));
    client.post_result(&whole).await?;

    // Drain every result, the parent's included, so that nothing is left pending.
    while !client.checkpoint().active_task_ids.is_empty() {
        client.next_result(Duration::from_secs(5)).await?;
    }
    println!("all {} results drained", n + 1);
    Ok(())
}
