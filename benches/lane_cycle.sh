#!/usr/bin/env bash
# The PostgreSQL lane's cycle taken apart with pgbench (BENCHMARKS.md, "Where the time goes").
#
# One pgbench client plays the lane: each transaction is ONE call of `a2a_step_many` carrying k
# whole task lives (k sends, k results for the tasks the previous call leased, k claims that
# lease this call's sends, k drains that take this call's results: 4k elements), on a scratch
# database with the mailbox's migrations and its group-commit function, installed by the
# server's own `a2a-mailbox migrate` (the release build; `A2A_MAILBOX_BIN` names another). Run
# with the commit's WAL flush (synchronous_commit
# on, as the mailbox runs) and without it (off, only to take the flush apart), for k = 1, 2, 4
# and 8, and a trivial statement for the round trip. Prints latency per call.
#
# With --kinds, the elements are costed by kind instead: k = 4 per call, flush off, the kinds
# added one at a time (none; sends; + claims; + results; + drains: the other kinds' arrays are
# empty), each variant on a freshly migrated database, two rounds. A kind's cost per element is
# the difference from the variant before it, divided by 4.
#
# Usage: bash benches/lane_cycle.sh [--kinds] [postgres URL without database]   (default
# postgres://postgres@127.0.0.1:5432). Needs psql, pgbench and `cargo build --release`; creates
# and drops a2a_lane_cycle_<pid>.
set -euo pipefail
mode=cycle
if [[ "${1:-}" == --kinds ]]; then
    mode=kinds
    shift
fi
base="${1:-postgres://postgres@127.0.0.1:5432}"
db="a2a_lane_cycle_$$"
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${A2A_MAILBOX_BIN:-$here/target/release/a2a-mailbox}"
work="$(mktemp -d)"
trap 'psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; rm -rf "$work"' EXIT
fresh() {
    psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    DATABASE_URL="$base/$db" "$bin" migrate >/dev/null
    nargs=$(psql -Atq "$base/$db" -c "SELECT pronargs FROM pg_proc WHERE proname = 'a2a_step_many'")
}

# k task lives per call, of the kinds in $2 (s: sends, c: claims, r: results, d: drains; the
# others' arrays are empty); :nI are this call's task ids, :pI the previous call's (leased by it).
# The arguments follow the installed function's ($nargs): 29 today; 27 for builds whose audit
# rows took their event ids from the column's default; 21 for builds before the task graph and
# the result cache (219d3ed, the A/B's baseline: no parent, context, kind or cache key of a send,
# and the result's audit row built in SQL).
script() {
    local k=$1 kinds=${2:-scrd} i ids prev
    local e="ARRAY[]::text[]" eb="ARRAY[]::bigint[]" eo="ARRAY[]::boolean[]"
    arr() { local e=$1 out=""; for _ in $(seq 1 "$k"); do out="$out${out:+,}$e"; done; echo "ARRAY[$out]"; }
    ids="" prev=""
    for i in $(seq 1 "$k"); do
        echo "\\set n$i random(1, 1000000000000)"
        ids="$ids${ids:+,}'x'||(:client_id)::text||'-'||(:n$i)::text"
        prev="$prev${prev:+,}'x'||(:client_id)::text||'-'||(:p$i)::text"
    done
    echo "SELECT count(*) FROM a2a_step_many("
    if [[ $kinds == *s* ]]; then
        echo " ARRAY[$ids], $(arr "'s'||(:client_id)::text"), $(arr "'r'||(:client_id)::text"), $(arr "repeat('b',230)"),"
        echo " $(arr NULL)::bigint[], $(arr NULL)::text[], $(arr NULL)::text[],"
        [[ $nargs == 21 ]] || echo " $(arr NULL)::text[], $(arr NULL)::text[], $(arr NULL)::text[], $(arr NULL)::text[],"
        echo " $(arr "repeat('a',150)"),"
        [[ $nargs != 29 ]] || echo " $(arr "'0190b6a0-0000-7000-8000-000000000000'"),"  # event ids: the server makes them
    else
        echo " $e, $e, $e, $e, $eb, $e, $e,"
        [[ $nargs == 21 ]] || echo " $e, $e, $e, $e,"
        echo " $e,"
        [[ $nargs != 29 ]] || echo " $e,"
    fi
    if [[ $kinds == *c* ]]; then
        echo " $(arr "'r'||(:client_id)::text"), $(arr "gen_random_uuid()::text"), $(arr "'w'||(:client_id)::text"), $(arr false),"
    else
        echo " $e, $e, $e, $eo,"
    fi
    if [[ $kinds == *r* ]]; then
        echo " ARRAY[$prev], $(arr "'ok'"), $(arr "'[]'"), $(arr NULL)::text[], $(arr "'w'||(:client_id)::text"), $(arr NULL)::text[],"
        # The audit body's two halves around the sender (no `:` in them: pgbench reads `:x` as a variable).
        [[ $nargs == 21 ]] || echo " $(arr "repeat('a',100)"), $(arr "repeat('a',50)"),"
        [[ $nargs != 29 ]] || echo " $(arr "'0190b6a0-0000-7000-8000-000000000000'"),"  # event ids: the server makes them
    else
        echo " $e, $e, $e, $e, $e, $e,"
        [[ $nargs == 21 ]] || echo " $e, $e,"
        [[ $nargs != 29 ]] || echo " $e,"
    fi
    if [[ $kinds == *d* ]]; then
        echo " $(arr "'s'||(:client_id)::text"), $(arr false), (extract(epoch from now()) * 1000)::bigint);"
    else
        echo " $e, $eo, (extract(epoch from now()) * 1000)::bigint);"
    fi
    for i in $(seq 1 "$k"); do echo "\\set p$i :n$i"; done
}

run() { # label, script, extra pgbench args...
    local label=$1 file=$2; shift 2
    printf '%-34s' "$label"
    pgbench -n -M prepared -c 1 -T 6 "$@" -f "$file" "$base/$db" 2>&1 |
        awk '/latency average/ {printf "%s ms per call", $4} /^tps/ {printf ", %d calls/s\n", $3}'
}

if [[ $mode == kinds ]]; then
    defs=(-D p1=0 -D p2=0 -D p3=0 -D p4=0)
    for round in 1 2; do
        for kinds in none s sc scr scrd; do
            fresh
            script 4 "$kinds" >"$work/$kinds.sql"
            PGOPTIONS='-c synchronous_commit=off' run "round $round, k=4, kinds $kinds" "$work/$kinds.sql" "${defs[@]}"
        done
    done
    exit 0
fi

fresh
echo 'SELECT 1;' >"$work/trivial.sql"
run "round trip (SELECT 1)" "$work/trivial.sql"
for k in 1 2 4 8; do
    script "$k" >"$work/k$k.sql"
    defs=()
    for i in $(seq 1 "$k"); do defs+=(-D "p$i=0"); done
    run "k=$k ($((4 * k)) elements), flush on" "$work/k$k.sql" "${defs[@]}"
    PGOPTIONS='-c synchronous_commit=off' run "k=$k ($((4 * k)) elements), flush off" "$work/k$k.sql" "${defs[@]}"
done
