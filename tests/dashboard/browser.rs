//! The dashboard in a real browser: Debian's Chromium, headless, driven by selenium
//! (`scripts/dashboard/browser_e2e.py`). Screenshots of the overview and of the stale-lease page
//! are saved under `target/dashboard-screenshots/`.

use std::path::Path;
use std::process::Command;

use super::web::{in_flight, operator};
use crate::common::python::{python_for, run_checked, scripts};
use crate::common::*;

both_engines!(an_operator_repairs_stale_leases_in_chromium);
async fn an_operator_repairs_stale_leases_in_chromium(app: TestApp) {
    let python =
        tokio::task::spawn_blocking(|| python_for("dashboard", "A2A_MAILBOX_BROWSER_PYTHON"))
            .await
            .unwrap();
    let (first, _) = in_flight(&app).await;
    let (second, _) = in_flight(&app).await;
    let (third, _) = in_flight(&app).await;
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let engine = format!("{:?}", app.engine).to_lowercase();
    let mut cmd = Command::new(&python);
    cmd.arg(scripts("dashboard").join("browser_e2e.py")).args([
        app.address.as_str(),
        &operator(&app),
        &app.alice(),
        &first,
        &second,
        &third,
        shots.to_str().unwrap(),
        &engine,
    ]);
    tokio::task::spawn_blocking(move || run_checked(&mut cmd, "the dashboard in Chromium"))
        .await
        .unwrap();
    for page in ["overview", "leases"] {
        let png = shots.join(format!("dashboard-{page}-{engine}.png"));
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert!(bytes.starts_with(b"\x89PNG"), "{} is a PNG", png.display());
    }
}
