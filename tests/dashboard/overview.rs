//! The overview's charts: errors as a line and a rate, the depth of the deepest queues over
//! time, and every minute's values on hover, all without inline code.

use serde_json::json;

use super::web::*;
use crate::common::*;

/// The epoch minute now, as the server counts it.
fn this_minute() -> u64 {
    now_ms() / 60_000
}

/// The chart `<svg id="{id}"` … `</svg>` of `html`.
fn chart<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<svg id=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id} in {html}"));
    &html[start..start + html[start..].find("</svg>").unwrap()]
}

/// The hover columns of a chart: each minute and its title, in order.
fn columns(svg: &str) -> Vec<(u64, String)> {
    svg.split("<rect class=\"minute\"")
        .skip(1)
        .map(|col| {
            let minute = col.split("data-minute=\"").nth(1).unwrap();
            let minute = minute[..minute.find('"').unwrap()].parse().unwrap();
            let title = col.split("<title>").nth(1).expect("a title");
            (minute, title[..title.find("</title>").unwrap()].to_owned())
        })
        .collect()
}

/// The number after `name ` in a column's title (`answered 4`).
fn count_in(title: &str, name: &str) -> u64 {
    title
        .split(" · ")
        .find_map(|part| part.strip_prefix(&format!("{name} ")))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {title}"))
}

both_engines!(error_answers_show_as_a_line_and_a_rate);
async fn error_answers_show_as_a_line_and_a_rate(app: TestApp) {
    let ops = operator(&app);
    let bob = app.bob();
    let before = this_minute();
    // A deadline that passed: expired at bob's lease attempt.
    let mut late = task("alice", "bob");
    late["deadline_ms"] = json!(now_ms() - 1_000);
    app.send_ok(&app.alice(), &late).await;
    assert!(app.lease(&bob).await.is_none(), "expired, not leased");
    // A success and an error posted by bob, and an error forced by an operator.
    for status in ["ok", "error"] {
        let (id, _) = in_flight(&app).await;
        let r = app.post_result(&bob, &result(&id, status, "done")).await;
        r.expect(201);
    }
    let (id, _) = in_flight(&app).await;
    let repair = json!({"task_id": id, "reason": "stuck",
        "command": {"action": "force_error", "message": "gave up"}});
    app.post("/a2a/repair", &ops, &repair).await.expect(200);

    let r = page(&app, "/dashboard/live", &ops).await;
    let after = this_minute();
    r.expect(200);
    let svg = chart(&r.text, "throughput");
    let cols = columns(svg);
    assert_eq!(cols.len(), 30, "{svg}");
    assert_eq!(
        cols.last().unwrap().0,
        after,
        "the last column is this minute"
    );
    let ours: Vec<&String> = cols
        .iter()
        .filter(|(m, _)| (before..=after).contains(m))
        .map(|(_, t)| t)
        .collect();
    let sum = |name| ours.iter().map(|t| count_in(t, name)).sum::<u64>();
    assert_eq!((sum("answered"), sum("errors")), (4, 3), "{ours:?}");
    if before == after {
        assert!(
            ours[0].ends_with("answered 4 · errors 3 (75.0 %)"),
            "this minute's counts and error rate: {}",
            ours[0]
        );
    }
    let errors_line = svg
        .split("data-series=\"errors\"")
        .nth(1)
        .expect("an errors line");
    let points = errors_line.split("points=\"").nth(1).unwrap();
    let points = &points[..points.find('"').unwrap()];
    assert!(
        points
            .split(' ')
            .any(|p| p.split(',').nth(1).unwrap().parse::<f64>().unwrap() < 160.0),
        "the errors line rises above its baseline: {points}"
    );
    assert!(r.text.contains("errors (3)"), "{}", r.text);
    assert!(
        r.text.contains("error rate: 75.0 % over 30 min"),
        "{}",
        r.text
    );
}

both_engines!(the_deepest_queues_are_charted_over_time);
async fn the_deepest_queues_are_charted_over_time(app: TestApp) {
    let ops = operator(&app);
    for _ in 0..3 {
        app.send_ok(&app.alice(), &task("alice", "bob")).await;
    }
    let carol = app.token("alice", json!(["a2a.send.carol"]));
    app.send_ok(&carol, &task("alice", "carol")).await;

    let r = page(&app, "/dashboard/live", &ops).await;
    let now = this_minute();
    r.expect(200);
    let svg = chart(&r.text, "depth-chart");
    let cols = columns(svg);
    assert_eq!(cols.len(), 30, "{svg}");
    let (minute, title) = cols.last().unwrap();
    if *minute == now {
        assert!(
            title.ends_with(" UTC · bob 3 · carol 1"),
            "this minute's depth, deepest first: {title}"
        );
    }
    for who in ["bob", "carol"] {
        assert!(
            svg.contains(&format!("data-recipient=\"{who}\"")),
            "{who}'s line: {svg}"
        );
    }
    let legend = &r.text[r.text.find("<svg id=\"depth-chart\"").unwrap()..];
    let legend = &legend[legend.find("<div class=\"legend\">").unwrap()..];
    let legend = &legend[..legend.find("</div>").unwrap()];
    let bob = legend
        .find("href=\"/dashboard/tasks?recipient=bob&amp;state=queued\"")
        .expect("bob opens his queued tasks");
    let carol = legend
        .find("href=\"/dashboard/tasks?recipient=carol&amp;state=queued\"")
        .expect("carol opens hers");
    assert!(bob < carol, "deepest first: {legend}");
    assert!(legend.contains("bob (3)"), "{legend}");
}

both_engines!(every_minute_of_every_chart_has_its_values_on_hover);
async fn every_minute_of_every_chart_has_its_values_on_hover(app: TestApp) {
    let ops = operator(&app);
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    for path in ["/dashboard", "/dashboard/live"] {
        let r = page(&app, path, &ops).await;
        r.expect(200);
        let now = this_minute();
        for id in ["throughput", "depth-chart"] {
            let cols = columns(chart(&r.text, id));
            assert_eq!(cols.len(), 30, "{path} #{id}");
            let last = cols.last().unwrap().0;
            assert!(last == now || last + 1 == now, "{path} #{id} ends now");
            for (i, (minute, title)) in cols.iter().enumerate() {
                assert_eq!(
                    *minute,
                    last - 29 + i as u64,
                    "{path} #{id}: one per minute"
                );
                assert!(title.contains(" UTC · "), "{path} #{id}: {title}");
            }
        }
        assert!(
            !r.text.contains("<script>") && !r.text.contains(" style="),
            "{path}: inline code"
        );
    }
}
