#!/usr/bin/env bash
# Smoke run of the benchmark harness: both engines, small numbers, debug build.
# It asserts that every phase ran and that the JSON summary was written; it asserts NO timing.
#
# Usage (from .ci/run, after `cargo test` so the debug artefacts are reused):
#     bash .ci/bench-smoke.sh
# Needs PostgreSQL at $A2A_BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres,
# trust auth); it creates and drops its own databases there. Takes about 30-60 s when the
# debug build is warm (only the bench target itself is compiled), and about 60 s more for the
# scale phases' run (waiting, handoff, parked, openloop, instances).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export A2A_BENCH_PG_URL="${A2A_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
OUT="${A2A_BENCH_SMOKE_OUT:-target/bench/smoke}"
LIMIT_SECS="${A2A_BENCH_SMOKE_TIMEOUT_SECS:-170}"
SCALE_LIMIT_SECS="${A2A_BENCH_SMOKE_SCALE_TIMEOUT_SECS:-240}"

mkdir -p "$OUT"
marker="$OUT/.started"
touch "$marker"
started=$(date +%s)

# `cargo test --bench` builds the harness with the test (debug) profile and the server binary it
# spawns (CARGO_BIN_EXE_a2a-mailbox) with the dev profile: both already built by `cargo test`.
set +e
timeout --signal=TERM --kill-after=10 "$LIMIT_SECS" \
    cargo test --bench mailbox -- --smoke --out "$OUT" 2>&1 | tee "$OUT/smoke.log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "bench-smoke: the harness failed (exit $status; log: $OUT/smoke.log)" >&2
    exit "$status"
fi

summary="$OUT/summary.json"
if [ ! -s "$summary" ] || [ ! "$summary" -nt "$marker" ]; then
    echo "bench-smoke: $summary was not written by this run" >&2
    exit 1
fi
grep -q '"schema": "a2a-mailbox-bench/1"' "$summary" || {
    echo "bench-smoke: $summary is not a benchmark summary" >&2
    exit 1
}
echo "bench-smoke: summary written in $(( $(date +%s) - started )) s: $summary, $OUT/summary.md"

# The scale phases, which the default run leaves out: waiting agents, hand-off, parked
# long-polls, open loop, three instances (PostgreSQL), A2A streams; both engines, small numbers.
scale_started=$(date +%s)
set +e
timeout --signal=TERM --kill-after=10 "$SCALE_LIMIT_SECS" \
    cargo test --bench mailbox -- --smoke --phases waiting,handoff,parked,openloop,instances,streams \
    --out "$OUT/scale" 2>&1 | tee "$OUT/smoke-scale.log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "bench-smoke: the scale phases failed (exit $status; log: $OUT/smoke-scale.log)" >&2
    exit "$status"
fi
if [ ! -s "$OUT/scale/summary.json" ] || [ ! "$OUT/scale/summary.json" -nt "$marker" ]; then
    echo "bench-smoke: $OUT/scale/summary.json was not written by this run" >&2
    exit 1
fi
echo "bench-smoke: scale phases written in $(( $(date +%s) - scale_started )) s: $OUT/scale/summary.json"

# A run whose phase fails (here: a server that exits at once) must fail, and must leave none of
# its databases behind.
bench_dbs() {
    psql "$A2A_BENCH_PG_URL" -X -At -c "SELECT count(*) FROM pg_database WHERE datname LIKE 'a2a\_bench\_%'"
}
before=$(bench_dbs)
set +e
timeout --signal=TERM --kill-after=10 60 \
    cargo test --bench mailbox -- --smoke --engines postgres --no-peer --server /bin/true \
    --out "$OUT/failing" >"$OUT/failing.log" 2>&1
status=$?
set -e
if [ "$status" -eq 0 ]; then
    echo "bench-smoke: a run with a server that exits at once did not fail" >&2
    exit 1
fi
grep -q "left behind by a phase that did not finish" "$OUT/failing.log" || {
    echo "bench-smoke: the failing run did not drop its phase's database ($OUT/failing.log)" >&2
    exit 1
}
after=$(bench_dbs)
if [ "$after" != "$before" ]; then
    echo "bench-smoke: the failing run left databases behind ($before before, $after after)" >&2
    exit 1
fi
echo "bench-smoke: a failing run failed and left no database behind"
# The harness's verdict lines ("bench-smoke: N passed, 0 failed") close the output.
grep -E '^bench-smoke: [0-9]+ passed, 0 failed$' "$OUT/smoke-scale.log" | tail -n 1
grep -E '^bench-smoke: [0-9]+ passed, 0 failed$' "$OUT/smoke.log" | tail -n 1
