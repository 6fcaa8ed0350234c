//! Listing with filters and cursors, and a fan-out gathered through the children endpoint.

use std::time::Duration;

use a2a_mailbox_client::types::{Role, TaskState};
use a2a_mailbox_client::{ListQuery, NewTask, Reply};

use super::connect;
use crate::common::TestApp;

both_engines!(a_fan_out_is_followed_through_its_children_and_pages);
async fn a_fan_out_is_followed_through_its_children_and_pages(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let parent = alice.send(NewTask::new("bob", "the whole")).await.unwrap();
    let kids = alice
        .send_batch(
            (0..4)
                .map(|i| NewTask::new("bob", format!("part {i}")).parent(parent.task_id))
                .collect(),
        )
        .await
        .unwrap();
    alice.cancel(kids[3].task_id, None).await.unwrap();
    // bob answers the parent and two children, oldest first.
    for _ in 0..3 {
        let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
        let reply = Reply::text("done").for_task(leased.task.id, Some(leased.lease.lease_id));
        bob.post_result(&reply).await.unwrap();
    }
    let page = alice
        .children(parent.task_id, &ListQuery::default())
        .await
        .unwrap();
    assert_eq!(page.parent, parent.task_id);
    let c = &page.counts;
    assert_eq!(
        (
            c.queued,
            c.in_flight,
            c.result_pending,
            c.resolved,
            c.canceled
        ),
        (1, 0, 2, 0, 1)
    );
    assert_eq!(page.tasks.len(), 4);

    // Pages of two, newest first, followed to the end; filters apply before the limit.
    let mut query = ListQuery {
        role: Some(Role::Sender),
        limit: Some(2),
        ..ListQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = alice.list_tasks(&query).await.unwrap();
        seen.extend(page.tasks.iter().map(|s| s.task.id));
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    let mut all: Vec<_> = kids.iter().map(|k| k.task_id).collect();
    all.insert(0, parent.task_id);
    all.reverse();
    assert_eq!(seen, all);
    let pending = alice
        .list_tasks(&ListQuery {
            states: vec![TaskState::ResultPending],
            parent: Some(parent.task_id),
            ..ListQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(pending.tasks.len(), 2);
    assert!(pending.next_cursor.is_none());
}
