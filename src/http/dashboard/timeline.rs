//! A task's history, oldest first, as its attempts: each with its lease and how it ended
//! (requeued by an operator or by the retry gate, an error forced, canceled, answered), from
//! the task's audit rows and its status. A lease is not an audit row (leasing is the hot path):
//! the lease of the attempt in flight is the task's own; an attempt a repair or a cancel ended
//! shows the lease that row recorded (`ended`: who held it, since when, its last heartbeat); an
//! answered attempt, who answered. The rows themselves read as `events.rs` says them.

use maud::{html, Markup};

use super::events::{kind_of, number, refused, sentence, text};
use super::layout::{ago, state_badge, when};
use crate::domain::{TaskState, TaskStatus};
use crate::mailbox::admin::AuditEvent;
use crate::mailbox::audit::kind;

/// One attempt: the rows written while it ran, and the row that ended it, if one did.
struct Attempt<'a> {
    n: u32,
    rows: Vec<&'a AuditEvent>,
    end: Option<&'a AuditEvent>,
}

/// The history of `t` from its audit rows (newest first, as read), the newest ones only when
/// `capped`.
pub fn timeline(t: &TaskStatus, rows: &[AuditEvent], capped: bool, now: u64) -> Markup {
    let (attempts, after) = attempts(t, rows);
    let last = attempts.last().map(|a| a.n);
    html! {
        section #timeline {
            h2 { "History" }
            @if capped { p.hint { "Built from the task's newest rows only: its first attempts may lack theirs." } }
            ol {
                li.sent {
                    "Sent by " strong { (t.task.sender.as_str()) } " to " strong { (t.task.recipient.as_str()) }
                    ", " (ago(t.created_at_ms, now))
                    @if let Some(d) = t.task.deadline_ms { ", deadline " (when(d)) " UTC" }
                }
                @for a in &attempts { (attempt(t, a, Some(a.n) == last, now)) }
                @if t.state == TaskState::Queued || !after.is_empty() || settled_unleased(t, &attempts) {
                    li.after {
                        h3 { (after_title(t, &attempts)) }
                        @if t.state == TaskState::Queued {
                            p.end data-end="queued" {
                                @if attempts.is_empty() { "Not leased yet." } @else { "Not leased again yet." }
                            }
                        }
                        (events(&after, now))
                        (unleased_end(t, &attempts, &after))
                    }
                }
            }
        }
    }
}

/// The task's attempts (1 to its attempt counter) with their rows, and the rows written when
/// no attempt was left to open (queued again after a requeue, or settled). A repair row names
/// the attempt it ended; a cancel in flight ends the attempt open then; any other row belongs
/// to the attempt after the last one ended (leases are not audited: a row written while the
/// task waited in its queue between two attempts shows in the next one).
fn attempts<'a>(t: &TaskStatus, rows: &'a [AuditEvent]) -> (Vec<Attempt<'a>>, Vec<&'a AuditEvent>) {
    let mut attempts: Vec<Attempt> = (1..=t.attempt)
        .map(|n| Attempt {
            n,
            rows: Vec::new(),
            end: None,
        })
        .collect();
    let (count, mut after, mut ended) = (attempts.len(), Vec::new(), 0u32);
    for e in rows.iter().rev() {
        let k = &e.kind;
        let ends = match kind_of(e) {
            kind::REPAIR_APPLIED => number(k, "attempt").map(|n| n as u32),
            kind::TASK_CANCELED if text(k, "previous_state") == Some("in_flight") => {
                Some(ended.saturating_add(1))
            }
            _ => None,
        };
        let slot = |n: u32| n.checked_sub(1).map(|i| i as usize).filter(|i| *i < count);
        let open = ends
            .and_then(slot)
            .filter(|&i| attempts.get(i).is_some_and(|a| a.end.is_none()));
        if let Some(a) = open.and_then(|i| attempts.get_mut(i)) {
            a.end = Some(e);
            ended = ended.max(a.n);
            continue;
        }
        match slot(ended.saturating_add(1)).and_then(|i| attempts.get_mut(i)) {
            Some(a) => a.rows.push(e),
            None => after.push(e),
        }
    }
    (attempts, after)
}

/// One attempt: its lease, its rows, how it ended.
fn attempt(t: &TaskStatus, a: &Attempt, last: bool, now: u64) -> Markup {
    let current = last && t.state == TaskState::InFlight;
    html! {
        li.attempt data-attempt=(a.n) {
            h3 { "Attempt " (a.n) }
            p.lease {
                @match (&t.lease, current) {
                    (Some(l), true) => {
                        "Leased by " strong { (l.leased_to.as_str()) } ", lease " span.mono { (l.lease_id) }
                        ", " (ago(l.leased_at_ms, now)) "; "
                        @if l.heartbeat_at_ms > l.leased_at_ms { "last heartbeat " (ago(l.heartbeat_at_ms, now)) }
                        @else { "no heartbeat since" }
                    },
                    _ => {
                        @match a.end.and_then(|e| e.kind.get("ended")).filter(|l| l.is_object()) {
                            Some(l) => {
                                "Leased by " strong { (text(l, "lessee").unwrap_or("?")) }
                                ", lease " span.mono { (text(l, "lease_id").unwrap_or("?")) }
                                ", " (ago(number(l, "leased_at_ms").unwrap_or(0), now)) "; last heartbeat "
                                (ago(number(l, "heartbeat_at_ms").unwrap_or(0), now))
                            },
                            None => {
                                @match a.end.and_then(|e| text(&e.kind, "lease_id")) {
                                    Some(lease) => { "Lease " span.mono { (lease) } },
                                    None => "Its lease is not named by its rows",
                                }
                                "; who held it, and since when, is not in the audit log"
                            },
                        }
                    },
                }
            }
            (events(&a.rows, now))
            (ending(t, a, last, now))
        }
    }
}

/// How an attempt ended: the row that ended it, or the task's result or lease.
fn ending(t: &TaskStatus, a: &Attempt, last: bool, now: u64) -> Markup {
    if let Some(e) = a.end {
        let how = match (kind_of(e), text(&e.kind, "action")) {
            (kind::TASK_CANCELED, _) => "canceled",
            (_, Some("force_error")) => "forced_error",
            (_, Some("auto_requeue")) => "auto_requeued",
            _ => "requeued",
        };
        return html! {
            p.end data-end=(how) {
                strong { "Ended " } (ago(e.timestamp_ms, now)) ", by " strong { (e.issuer) } ": " (sentence(e))
                @if how == "forced_error" {
                    @if let Some(m) = t.result.as_ref().and_then(|r| r.error_message.as_deref()) { " — message: " (m) }
                }
            }
        };
    }
    if !last {
        return html! { p.end data-end="unknown" { "How this attempt ended is not in the rows shown." } };
    }
    match (&t.result, t.state) {
        (Some(r), _) => {
            let posted = a.rows.iter().rev().find(|e| answers(e));
            html! {
                p.end data-end="answered" data-result=(r.status.as_str()) {
                    strong { "Answered" } " " (state_badge(t))
                    @if let Some(m) = &r.error_message { ": " (m) }
                    @if let Some(e) = posted { ", by " strong { (e.issuer) } ", " (ago(e.timestamp_ms, now)) }
                }
            }
        }
        (None, TaskState::InFlight) => html! { p.end data-end="in_flight" { "Still running." } },
        _ => {
            html! { p.end data-end="unknown" { "How this attempt ended is not in the rows shown." } }
        }
    }
}

/// Whether a row is the passed check of an answer to the task (its result's row).
fn answers(e: &AuditEvent) -> bool {
    kind_of(e) == kind::CAPABILITY_CHECK
        && !refused(e)
        && text(&e.kind, "scope_id").is_some_and(|s| s.starts_with("a2a-respond:"))
}

/// Whether the task settled with no attempt open: answered from the result cache when sent,
/// or resolved by its deadline while queued.
fn settled_unleased(t: &TaskStatus, attempts: &[Attempt]) -> bool {
    let open = attempts.last().is_some_and(|a| a.end.is_none());
    t.result.is_some() && !open && !ended_by_force(attempts)
}

/// Whether the last attempt ended with an error forced on it (the task's result is that error).
fn ended_by_force(attempts: &[Attempt]) -> bool {
    let end = attempts.last().and_then(|a| a.end);
    end.is_some_and(|e| text(&e.kind, "action") == Some("force_error"))
}

/// What the part after the attempts is.
fn after_title(t: &TaskStatus, attempts: &[Attempt]) -> &'static str {
    match (t.state, attempts.is_empty()) {
        (TaskState::Queued, true) => "Queued",
        (TaskState::Queued, false) => "Queued again",
        _ => "Afterwards",
    }
}

/// How a task settled with no attempt open, said once.
fn unleased_end(t: &TaskStatus, attempts: &[Attempt], after: &[&AuditEvent]) -> Markup {
    if !settled_unleased(t, attempts) {
        return html! {};
    }
    let cached = after
        .iter()
        .any(|e| kind_of(e) == kind::RESULT_CACHE_REPLAYED);
    let expired =
        t.result.as_ref().and_then(|r| r.error_message.as_deref()) == Some("deadline exceeded");
    html! {
        @if cached {
            p.end data-end="cached" { "Answered from the result cache when it was sent " (state_badge(t)) }
        } @else if expired && t.task.deadline_ms.is_some() {
            p.end data-end="expired" {
                "Expired in its queue: its deadline passed before a worker leased it "
                (state_badge(t)) ": deadline exceeded"
            }
        } @else {
            p.end data-end="unknown" { "Answered " (state_badge(t)) "; how is not in the rows shown." }
        }
    }
}

/// Rows as a list of sentences: when, who, what.
fn events(rows: &[&AuditEvent], now: u64) -> Markup {
    html! {
        @if !rows.is_empty() {
            ul.events {
                @for e in rows {
                    li.refused[refused(e)] data-kind=(kind_of(e)) {
                        (ago(e.timestamp_ms, now)) ", " strong { (e.issuer) } ": " (sentence(e))
                    }
                }
            }
        }
    }
}
