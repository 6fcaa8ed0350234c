//! The operator CLI with every kind of token: each command is the binary run as a real process
//! against the real server. A refusal exits non-zero with the error's code on stderr and nothing
//! on stdout, and changes nothing; an allowed listing shows nothing of the fixture.

use super::kit::*;
use super::world::{audit_bounded, fixture, snapshot, unchanged, Fix};
use crate::common::{TestApp, BIN};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn cli(app: &TestApp, token: Option<&str>, args: &[&str]) -> Out {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args)
        .env("A2A_MAILBOX_URL", &app.address)
        .env_remove("A2A_MAILBOX_TOKEN")
        .env("RUST_LOG", "warn");
    if let Some(t) = token {
        cmd.env("A2A_MAILBOX_TOKEN", t);
    }
    let out = cmd.output().await.expect("running the CLI");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A run of the CLI as a class. Without any token the command cannot even ask (its token is a
/// required argument), which counts as unauthenticated.
fn cli_got(o: &Out) -> Got {
    if o.code == 0 {
        return Got::Ok;
    }
    if !o.stdout.is_empty() {
        return Got::Other(format!("a failure printed on stdout: {}", short(&o.stdout)));
    }
    let e = &o.stderr;
    for code in [
        "capability_scope_mismatch",
        "capability_missing",
        "sender_mismatch",
    ] {
        if e.contains(code) {
            return Got::Deny(code.into());
        }
    }
    if e.contains("unauthenticated") || e.contains("--token") {
        Got::Unauth
    } else if e.contains("not_found") {
        Got::Hidden
    } else {
        Got::Other(format!("exit {}: {}", o.code, short(e)))
    }
}

#[derive(Clone, Copy, Debug)]
enum Cmd {
    Status,
    Tasks,
    Children,
    Cancel,
    Requeue,
    ForceError,
    RetryStaleDry,
    RetryStaleEnabled,
    Compact,
}

/// Columns: caps-less, wildcard, scoped, scoped operator.
const TABLE: &[(Cmd, [Want; 4])] = &[
    (Cmd::Status, [R, R, R, R]),
    (Cmd::Tasks, [R, R, R, R]),
    (Cmd::Children, [H, H, H, H]),
    (Cmd::Cancel, [H, H, H, H]),
    (Cmd::Requeue, [CM, CM, CM, H]),
    (Cmd::ForceError, [CM, CM, CM, CM]),
    (Cmd::RetryStaleDry, [CM, CM, CM, CSM]),
    (Cmd::RetryStaleEnabled, [CM, CM, CM, CSM]),
    (Cmd::Compact, [CM, CM, CM, CM]),
];

fn args(cmd: Cmd, fix: &Fix) -> Vec<String> {
    let f = fix.in_flight.clone();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match cmd {
        Cmd::Status => v(&["status", "--json", "--limit", "1000"]),
        Cmd::Tasks => v(&["tasks", "--all", "--json"]),
        Cmd::Children => v(&["children", &fix.queued]),
        Cmd::Cancel => v(&["cancel", &fix.queued, "--reason", "mine"]),
        Cmd::Requeue => v(&[
            "requeue",
            &f,
            "--reason",
            "mine",
            "--duplicate-risk",
            "operator-accepted",
            "--lease-id",
            &fix.lease,
        ]),
        Cmd::ForceError => v(&["force-error", &f, "--reason", "mine", "--message", "no"]),
        Cmd::RetryStaleDry => v(&["retry-stale", "--min-lease-age-ms", "0"]),
        Cmd::RetryStaleEnabled => v(&[
            "retry-stale",
            "--enable",
            "--min-lease-age-ms",
            "0",
            "--max-requeues",
            "100",
        ]),
        Cmd::Compact => v(&["compact"]),
    }
}

both_engines!(every_cli_command_with_every_token, config = eager);
async fn every_cli_command_with_every_token(app: TestApp) {
    let mut judge = Judge::default();
    let mut n = 0;
    let mut fix = fixture(&app, n).await;
    let mut before = snapshot(&app).await;
    for (cmd, row) in TABLE {
        for tok in Tok::ALL {
            let want = want(*row, tok);
            let case = format!("CLI {cmd:?} as {tok:?}");
            let args = args(*cmd, &fix);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = cli(&app, tok.jwt(&app).as_deref(), &args).await;
            let got = cli_got(&o);
            judge.check(
                got.matches(want),
                &case,
                format!(
                    "expected {want:?}, got {got:?} (exit {}: {})",
                    o.code,
                    short(&o.stderr)
                ),
            );
            if want == Want::Read && got == Got::Ok {
                judge.check(
                    !fix.leaks_into(&o.stdout),
                    &case,
                    format!("the listing shows the fixture: {}", short(&o.stdout)),
                );
            }
            let after = snapshot(&app).await;
            unchanged(&mut judge, &case, &before, &after);
            if before != after {
                n += 1;
                fix = fixture(&app, n).await;
                before = snapshot(&app).await;
            } else {
                before = after;
            }
        }
    }
    audit_bounded(&app, &mut judge).await;
    judge.finish("the CLI under attack");
}
