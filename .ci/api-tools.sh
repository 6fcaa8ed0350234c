#!/usr/bin/env bash
# The documented API in CI: the committed OpenAPI document against real servers.
#
#   bash .ci/api-tools.sh            # both steps
#   bash .ci/api-tools.sh client     # only the generated Python client
#   bash .ci/api-tools.sh fuzz       # only Schemathesis
#
# 1. client: generates a Python client from openapi/openapi.json with openapi-python-client and
#    drives a fresh server through send → lease → heartbeat → result → drain, a repair (requeue
#    with duplicate_risk operator_accepted after a lease, then force_error), the retry gate, the
#    scheduler tick, compaction and the audit feed, with typed models; every response is checked
#    against the document (scripts/api-tools/client_e2e.py).
# 2. fuzz: Schemathesis on every operation of the document against another fresh server, with an
#    operator token holding every capability, all checks (server errors, response schemas, status
#    codes, content types, headers, positive/negative data, missing auth) and a bounded number of
#    examples per operation.
# Either step fails (exit 1) on any disagreement between the document and the server.
#
# Servers run on SQLite in a temporary directory, bound to 127.0.0.1:0. The tools live in a venv
# under target/api-tools (reused while scripts/api-tools/*.txt and the interpreter are unchanged).
#
# Environment (all optional):
#   A2A_MAILBOX_BIN          the binary to test (default: `cargo build`, then target/debug/a2a-mailbox)
#   A2A_API_TOOLS_DIR        work directory (default: target/api-tools)
#   A2A_API_TOOLS_PYTHON     interpreter for the venv (default: a Python >= 3.12 if one is
#                            installed, else python3)
#   A2A_API_FUZZ_EXAMPLES    Schemathesis examples per operation and phase (default: 150)
#   A2A_API_FUZZ_SEED        Schemathesis seed (default: random; printed in the report)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
STEPS="${1:-all}"
case "$STEPS" in
    all | client | fuzz) ;;
    *)
        echo "usage: $0 [all|client|fuzz]" >&2
        exit 2
        ;;
esac

TOOLS_SRC="$ROOT/scripts/api-tools"
DOCUMENT="$ROOT/openapi/openapi.json"
WORK="${A2A_API_TOOLS_DIR:-$ROOT/target/api-tools}"
EXAMPLES="${A2A_API_FUZZ_EXAMPLES:-150}"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/a2a-api-tools.XXXXXX")"
SERVER_PID=""
PASSED=0
FAILED=0

section() { printf '\n==== api-tools: %s ====\n' "$*"; }
fail() {
    printf '\napi-tools FAILED: %s\n' "$*" >&2
    exit 1
}

stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    local status=$?
    stop_server
    rm -rf "$RUN_DIR"
    exit "$status"
}
trap cleanup EXIT

# --- the binary ---------------------------------------------------------------------------------
section "binary"
if [ -z "${A2A_MAILBOX_BIN:-}" ]; then
    if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
        # shellcheck disable=SC1091
        . "$HOME/.cargo/env"
    fi
    cargo build --bin a2a-mailbox
    A2A_MAILBOX_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/a2a-mailbox"
fi
[ -x "$A2A_MAILBOX_BIN" ] || fail "no executable at $A2A_MAILBOX_BIN"
echo "binary: $A2A_MAILBOX_BIN"
[ -s "$DOCUMENT" ] || fail "$DOCUMENT is missing (A2A_MAILBOX_UPDATE_OPENAPI=1 cargo test --test openapi writes it)"

# --- the tools ----------------------------------------------------------------------------------
section "python venv"
pick_python() {
    if [ -n "${A2A_API_TOOLS_PYTHON:-}" ]; then
        echo "$A2A_API_TOOLS_PYTHON"
        return
    fi
    # Python >= 3.12 first: CPython 3.11 can raise "SystemError: AST constructor recursion depth
    # mismatch" inside Hypothesis (worked around in st_hooks.py, but better avoided).
    local candidates=()
    if command -v pyenv >/dev/null 2>&1; then
        local root
        root="$(pyenv root 2>/dev/null || true)"
        for v in "$root"/versions/3.13* "$root"/versions/3.12*; do
            [ -x "$v/bin/python3" ] && candidates+=("$v/bin/python3")
        done
    fi
    candidates+=(python3.13 python3.12 python3 /usr/bin/python3)
    local c
    for c in "${candidates[@]}"; do
        if "$c" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)' >/dev/null 2>&1; then
            echo "$c"
            return
        fi
    done
    fail "no Python >= 3.10 with the venv module (apt-get install python3-venv)"
}
PYTHON="$(pick_python)"
PY_VERSION="$("$PYTHON" -c 'import sys; print(".".join(map(str, sys.version_info[:3])))')"
echo "python: $PYTHON ($PY_VERSION)"
VENV="$WORK/venv"
STAMP="$(cat "$TOOLS_SRC/requirements.txt" "$TOOLS_SRC/constraints.txt" | sha256sum | cut -c1-16)-$PY_VERSION"
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$STAMP" ]; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$TOOLS_SRC/requirements.txt" -c "$TOOLS_SRC/constraints.txt"
    echo "$STAMP" >"$VENV/.stamp"
fi
"$VENV/bin/python" -m pip list --disable-pip-version-check 2>/dev/null |
    grep -i -E '^(openapi-python-client|schemathesis|hypothesis|jsonschema.rs|httpx) '

# --- servers ------------------------------------------------------------------------------------
export A2A_MAILBOX_JWT_SECRET="api-tools-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"

start_server() {
    local name="$1" dir="$RUN_DIR/$1"
    mkdir -p "$dir"
    DATABASE_URL="sqlite://$dir/mailbox.db?mode=rwc" A2A_MAILBOX_BIND=127.0.0.1:0 RUST_LOG=warn \
        "$A2A_MAILBOX_BIN" serve >"$dir/stdout" 2>"$dir/stderr" &
    SERVER_PID=$!
    local waited=0
    BASE_URL=""
    while [ -z "$BASE_URL" ]; do
        BASE_URL="$(sed -n 's/^a2a-mailbox listening on \(http:\/\/[0-9.:]*\)$/\1/p' "$dir/stdout" | head -n1)"
        [ -n "$BASE_URL" ] && break
        if ! kill -0 "$SERVER_PID" 2>/dev/null || [ "$waited" -ge 600 ]; then
            cat "$dir/stderr" >&2
            fail "the $name server did not start"
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    echo "$name server: $BASE_URL (pid $SERVER_PID, log $dir/stderr)"
    # The document the server serves is the committed one.
    "$VENV/bin/python" - "$BASE_URL" "$DOCUMENT" <<'PY'
import json, sys, urllib.request
url, path = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(url + "/openapi.json", timeout=30) as r:
    served = json.load(r)
with open(path) as f:
    committed = json.load(f)
if served != committed:
    sys.exit(f"GET {url}/openapi.json differs from {path}: regenerate it "
             "(A2A_MAILBOX_UPDATE_OPENAPI=1 cargo test --test openapi) or rebuild the binary")
print("served /openapi.json == openapi/openapi.json")
PY
}

# --- 1. the generated client --------------------------------------------------------------------
if [ "$STEPS" = all ] || [ "$STEPS" = client ]; then
    section "generated Python client (openapi-python-client)"
    rm -rf "$WORK/client"
    mkdir -p "$WORK/client"
    (cd "$WORK/client" && "$VENV/bin/openapi-python-client" generate --path "$DOCUMENT" \
        --config "$TOOLS_SRC/openapi-python-client.yaml" --meta none --fail-on-warning \
        --output-path "$WORK/client/a2a_mailbox_client")
    echo "models: $(find "$WORK/client/a2a_mailbox_client/models" -name '*.py' ! -name '__init__.py' | wc -l)," \
        "operations: $(find "$WORK/client/a2a_mailbox_client/api" -name '*.py' ! -name '__init__.py' | wc -l)"
    start_server client
    if PYTHONPATH="$WORK/client" "$VENV/bin/python" "$TOOLS_SRC/client_e2e.py" \
        "$BASE_URL" "$DOCUMENT" "$A2A_MAILBOX_BIN"; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        echo "--- server log (last 40 lines)" >&2
        tail -n 40 "$RUN_DIR/client/stderr" >&2
    fi
    stop_server
fi

# --- 2. Schemathesis ----------------------------------------------------------------------------
if [ "$STEPS" = all ] || [ "$STEPS" = fuzz ]; then
    section "Schemathesis ($EXAMPLES examples per operation and phase)"
    start_server fuzz
    A2A_MAILBOX_FUZZ_TOKEN="$("$A2A_MAILBOX_BIN" token --sub research@acme --ttl 2h \
        --cap a2a.operator --cap 'a2a.send.*' --cap 'a2a.respond.*' --cap 'a2a.lease.*' \
        --cap a2a.repair.requeue --cap a2a.repair.force_error --cap a2a.compact)"
    export A2A_MAILBOX_FUZZ_TOKEN
    mkdir -p "$WORK/reports"
    seed_args=()
    [ -n "${A2A_API_FUZZ_SEED:-}" ] && seed_args=(--seed "$A2A_API_FUZZ_SEED")
    fuzz_ok=1
    if ! SCHEMATHESIS_HOOKS="$TOOLS_SRC/st_hooks.py" "$VENV/bin/schemathesis" \
        --config-file "$TOOLS_SRC/schemathesis.toml" --no-color \
        run "$DOCUMENT" --url "$BASE_URL" \
        --checks all \
        --max-examples "$EXAMPLES" --workers 2 --request-timeout 60 \
        --report junit --report-junit-path "$WORK/reports/schemathesis-junit.xml" \
        "${seed_args[@]}"; then
        fuzz_ok=0
        echo "--- server log (last 40 lines)" >&2
        tail -n 40 "$RUN_DIR/fuzz/stderr" >&2
    fi
    # A 5xx fails Schemathesis already; a panic or an internal error the server survived must too.
    if grep -E 'panicked|internal error' "$RUN_DIR/fuzz/stderr" | head -n 20 >&2; then
        echo "the server logged panics or internal errors during fuzzing (above)" >&2
        fuzz_ok=0
    fi
    if [ "$fuzz_ok" -eq 1 ]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
    stop_server
fi

section "summary"
echo "api-tools: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] || fail "$FAILED step(s) failed"
