//! The overview's charts, drawn by the server as SVG: a line per series over the last 30
//! minutes, and over each minute an invisible column (`rect.minute`) whose `<title>` names that
//! minute's values on hover (no script; the stylesheet highlights the column).

use maud::{html, Markup};

use super::layout::{queued_in, when};
use crate::metrics::{DepthMinute, Minute};

const W: f64 = 720.0;
const H: f64 = 160.0;
const MUTED: &str = "#5b6575";
const SENT: &str = "#2456c7";
const LEASED: &str = "#b45309";
const ANSWERED: &str = "#17803d";
const ERRORS: &str = "#b42318";
/// One colour per charted queue, in order of depth.
const QUEUES: [&str; 5] = ["#2456c7", "#b45309", "#17803d", "#7c3aed", "#0e7490"];

/// A line of the throughput chart: its name, its colour and its value in a minute.
type Series = (&'static str, &'static str, fn(&Minute) -> u64);

/// Sends, leases, answers and errors per minute as four lines, and the error rate.
pub fn throughput(minutes: &[Minute]) -> Markup {
    let top = minutes
        .iter()
        .map(|m| m.sent.max(m.leased).max(m.answered))
        .max()
        .unwrap_or(0);
    let series: [Series; 4] = [
        ("sent", SENT, |m| m.sent),
        ("leased", LEASED, |m| m.leased),
        ("answered", ANSWERED, |m| m.answered),
        ("errors", ERRORS, |m| m.errors),
    ];
    let n = minutes.len();
    let total = |pick: fn(&Minute) -> u64| minutes.iter().map(pick).sum::<u64>();
    let titles = minutes.iter().map(|m| {
        format!(
            "{} · sent {} · leased {} · answered {} · errors {}{}",
            clock(m.minute),
            m.sent,
            m.leased,
            m.answered,
            m.errors,
            rate(m.errors, m.answered).map_or(String::new(), |r| format!(" ({r})"))
        )
    });
    let now = minutes.last().copied().unwrap_or_default();
    let rate_or = |errors, answered| rate(errors, answered).unwrap_or_else(|| "no answers".into());
    html! {
        div.chart {
            svg #throughput viewBox=(view_box()) width="100%" height="200" role="img"
                aria-label="sends, leases, answers and errors per minute over the last 30 minutes" {
                (axes(top))
                @for (name, colour, pick) in series {
                    polyline.line data-series=(name) fill="none" stroke=(colour) stroke-width="2"
                        points=(points(minutes.iter().map(pick).map(Some), n, top)) {}
                }
                (columns(minutes.iter().map(|m| m.minute), titles, n))
            }
            div.legend {
                @for (name, colour, pick) in series {
                    span { (swatch(colour)) (name) " (" (total(pick)) ")" }
                }
                span #error-rate {
                    "error rate: " (rate_or(total(|m| m.errors), total(|m| m.answered)))
                    " over 30 min, " (rate_or(now.errors, now.answered)) " this minute"
                }
            }
        }
    }
}

/// The queued tasks of each of `queues` (recipient, queued now) per minute, a line each; a
/// minute not known breaks the line.
pub fn depth(queues: &[(String, u64)], minutes: &[DepthMinute]) -> Markup {
    let top = minutes
        .iter()
        .flat_map(|m| m.queued.iter().flatten())
        .copied()
        .max()
        .unwrap_or(0);
    let n = minutes.len();
    let titles = minutes.iter().map(|m| {
        let mut t = clock(m.minute);
        if m.queued.iter().all(Option::is_none) {
            t.push_str(" · not sampled by this instance");
        }
        for ((recipient, _), q) in queues.iter().zip(&m.queued) {
            if m.queued.iter().any(Option::is_some) {
                let q = q.map_or("—".to_owned(), |q| q.to_string());
                t.push_str(&format!(" · {recipient} {q}"));
            }
        }
        t
    });
    html! {
        div.chart {
            svg #depth-chart viewBox=(view_box()) width="100%" height="200" role="img"
                aria-label="queued tasks of the deepest queues per minute over the last 30 minutes" {
                (axes(top))
                @for (i, ((recipient, _), colour)) in queues.iter().zip(QUEUES).enumerate() {
                    @for run in runs(minutes.iter().map(|m| m.queued.get(i).copied().flatten())) {
                        @if let [(at, q)] = run[..] {
                            circle.line data-recipient=(recipient) fill=(colour) r="2.5"
                                cx=(format!("{:.1}", x(at, n))) cy=(format!("{:.1}", y(q, top))) {}
                        } @else {
                            polyline.line data-recipient=(recipient) fill="none" stroke=(colour)
                                stroke-width="2" points=(points_of(&run, n, top)) {}
                        }
                    }
                }
                (columns(minutes.iter().map(|m| m.minute), titles, n))
            }
            div.legend {
                @for ((recipient, queued), colour) in queues.iter().zip(QUEUES) {
                    a href=(queued_in(recipient)) { (swatch(colour)) (recipient) " (" (queued) ")" }
                }
            }
        }
    }
}

/// The view box: the plot is `W` × `H`, with room for the scale on the left and the time below.
fn view_box() -> String {
    format!("-40 -5 {} {}", W + 50.0, H + 25.0)
}

/// The baseline, the scale (0 to `top`) and the ends of the time axis.
fn axes(top: u64) -> Markup {
    html! {
        line x1="0" y1=(H) x2=(W) y2=(H) stroke="#94a3b8" {}
        text x="-8" y="10" text-anchor="end" font-size="11" fill=(MUTED) { (top.max(1)) }
        text x="-8" y=(H) text-anchor="end" font-size="11" fill=(MUTED) { "0" }
        text x="0" y=(H + 18.0) font-size="11" fill=(MUTED) { "30 min ago" }
        text x=(W) y=(H + 18.0) text-anchor="end" font-size="11" fill=(MUTED) { "now" }
    }
}

/// A full-height, invisible column over each minute, drawn last so that it is the one hovered:
/// its title says the minute's values.
fn columns(
    minutes: impl Iterator<Item = u64>,
    titles: impl Iterator<Item = String>,
    n: usize,
) -> Markup {
    let width = step(n);
    html! {
        @for (i, (minute, title)) in minutes.zip(titles).enumerate() {
            rect.minute data-minute=(minute) x=(format!("{:.1}", x(i, n) - width / 2.0)) y="0"
                width=(format!("{width:.1}")) height=(H) fill="transparent" {
                title { (title) }
            }
        }
    }
}

/// A swatch of a series' colour, for a legend.
fn swatch(colour: &str) -> Markup {
    html! { svg.sw viewBox="0 0 10 10" aria-hidden="true" { rect width="10" height="10" fill=(colour) {} } }
}

fn step(n: usize) -> f64 {
    W / n.max(2).saturating_sub(1) as f64
}

fn x(i: usize, n: usize) -> f64 {
    i as f64 * step(n)
}

fn y(v: u64, top: u64) -> f64 {
    H - v as f64 / top.max(1) as f64 * (H - 10.0)
}

/// The points of a line through every known value (an unknown one is skipped).
fn points(values: impl Iterator<Item = Option<u64>>, n: usize, top: u64) -> String {
    let known: Vec<(usize, u64)> = values
        .enumerate()
        .filter_map(|(i, v)| Some((i, v?)))
        .collect();
    points_of(&known, n, top)
}

fn points_of(values: &[(usize, u64)], n: usize, top: u64) -> String {
    values
        .iter()
        .map(|&(i, v)| format!("{:.1},{:.1}", x(i, n), y(v, top)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The runs of known values (position, value), split where a value is not known.
fn runs(values: impl Iterator<Item = Option<u64>>) -> Vec<Vec<(usize, u64)>> {
    let mut runs = vec![Vec::new()];
    for (i, v) in values.enumerate() {
        match (v, runs.last_mut()) {
            (Some(v), Some(run)) => run.push((i, v)),
            (None, Some(run)) if !run.is_empty() => runs.push(Vec::new()),
            _ => {}
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// An epoch minute as people read it: `12:03 UTC`.
fn clock(minute: u64) -> String {
    let at = when(minute.saturating_mul(60_000));
    format!("{} UTC", at.get(11..16).unwrap_or(&at))
}

/// `errors` of `answered` as a percentage (`2.7 %`); `None` without answers.
fn rate(errors: u64, answered: u64) -> Option<String> {
    (answered > 0).then(|| format!("{:.1} %", errors as f64 * 100.0 / answered as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minute(minute: u64, answered: u64, errors: u64) -> Minute {
        Minute {
            minute,
            sent: 40,
            leased: 38,
            answered,
            errors,
        }
    }

    #[test]
    fn each_minute_names_its_counts_and_error_rate_on_hover() {
        // 12:03 UTC on 1 January 2024.
        let m = 28_401_843;
        let html = throughput(&[minute(m - 1, 0, 0), minute(m, 37, 1)]).into_string();
        assert!(html.contains(&format!("<rect class=\"minute\" data-minute=\"{m}\"")));
        assert!(
            html.contains(
                "<title>12:03 UTC · sent 40 · leased 38 · answered 37 · errors 1 (2.7 %)</title>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<title>12:02 UTC · sent 40 · leased 38 · answered 0 · errors 0</title>"),
            "no rate without answers: {html}"
        );
        assert!(html.contains("data-series=\"errors\""), "{html}");
        assert!(
            html.contains("error rate: 2.7 % over 30 min, 2.7 % this minute"),
            "{html}"
        );
    }

    #[test]
    fn an_unknown_depth_breaks_the_line_and_says_so_on_hover() {
        let queues = [("bob".to_owned(), 4), ("carol".to_owned(), 1)];
        let minutes = [
            DepthMinute {
                minute: 28_401_840,
                queued: vec![Some(1), Some(0)],
            },
            DepthMinute {
                minute: 28_401_841,
                queued: vec![None, None],
            },
            DepthMinute {
                minute: 28_401_842,
                queued: vec![Some(3), None],
            },
            DepthMinute {
                minute: 28_401_843,
                queued: vec![Some(4), Some(1)],
            },
        ];
        let html = depth(&queues, &minutes).into_string();
        assert!(
            html.contains("<title>12:03 UTC · bob 4 · carol 1</title>"),
            "{html}"
        );
        assert!(
            html.contains("<title>12:02 UTC · bob 3 · carol —</title>"),
            "{html}"
        );
        assert!(
            html.contains("<title>12:01 UTC · not sampled by this instance</title>"),
            "{html}"
        );
        assert_eq!(
            html.matches("<polyline").count(),
            1,
            "bob's last two minutes: {html}"
        );
        assert_eq!(
            html.matches("<circle").count(),
            3,
            "single known minutes: {html}"
        );
        assert!(html.contains("href=\"/dashboard/tasks?recipient=bob&amp;state=queued\""));
    }

    #[test]
    fn runs_split_where_a_value_is_unknown() {
        let r = runs([None, Some(1), Some(2), None, None, Some(3)].into_iter());
        assert_eq!(r, vec![vec![(1, 1), (2, 2)], vec![(5, 3)]]);
    }
}
