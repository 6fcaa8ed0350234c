#!/usr/bin/env bash
# PostgreSQL's own work per task life in the batch function, counted in instructions rather than
# timed (BENCHMARKS.md, "The batch writes its keys and event ids"): the count does not move with
# the machine's load, so two builds compare in one run of each.
#
# A private PostgreSQL cluster in a temporary directory (initdb, a free port) is migrated by each
# server binary given (`a2a-mailbox migrate` installs the batch function too) and stopped; then
# `postgres --single` on a copy of it runs a pipelined cycle of `a2a_step_many` calls under
# `valgrind --tool=callgrind`: call m sends 4 tasks, claims the 4 of call m-1, stores results for
# the 4 of call m-2 and drains the 4 results of call m-1. Senders and recipients alternate between
# calls so that no claim takes a send, and no drain a result, of its own call (the closed loop's
# batches rarely pair them). Each binary runs 100 and 400 calls; the difference over 300 calls
# and 4 lives is one task life's instructions, start-up and the first calls left out. The calls
# are sent as text, so each is parsed and planned (the server prepares it once): that share is
# counted too, and grows with the number of arguments.
#
# Usage: bash benches/pg_instructions.sh BINARY...   (run as root: postgres runs as the
# `postgres` user). Needs PostgreSQL's server binaries (pg_config --bindir, or
# /usr/lib/postgresql/*/bin), valgrind and python3.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: bash benches/pg_instructions.sh BINARY..." >&2; exit 2; }
bindir=$(pg_config --bindir 2>/dev/null || true)
[[ -x "$bindir/postgres" ]] || bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d)
chmod 755 "$work"
port=$((20000 + $$ % 20000))
as_pg() { su postgres -c "$*"; }
trap 'as_pg "$bindir/pg_ctl -D $work/data stop -m immediate" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
chown postgres "$work"
as_pg "$bindir/initdb -D $work/data -A trust" >/dev/null

# The cycle's calls, for a function of $1 arguments (29 today; 27 and 21 for older builds).
calls() {
    python3 - "$1" "$2" <<'EOF'
import random, sys, uuid
nargs, n, k = int(sys.argv[1]), int(sys.argv[2]), 4
rnd = random.Random(7)
u = lambda: str(uuid.UUID(int=rnd.getrandbits(128), version=4))
arr = lambda xs, t='text': "ARRAY[" + ",".join(xs) + "]::" + t + "[]"
rep = lambda x: [x] * k
q = lambda xs: ["'%s'" % x for x in xs]
sent = []
for m in range(n):
    ids = [u() for _ in range(k)]
    sent.append(ids)
    a, b = m % 2, (m + 1) % 2
    s = [arr(q(ids)), arr(rep("'s%d'" % a)), arr(rep("'r%d'" % a)), arr(rep("repeat('b',230)")),
         arr(rep("NULL"), 'bigint'), arr(rep("NULL")), arr(rep("NULL"))]
    if nargs >= 27:
        s += [arr(rep("NULL"))] * 4
    s += [arr(rep("repeat('a',150)"))]
    if nargs == 29:
        s += [arr(q([u() for _ in range(k)]))]
    c = [arr(rep("'r%d'" % b)), arr(rep("gen_random_uuid()::text")), arr(rep("'w'")),
         arr(rep("false"), 'boolean')]
    if m >= 2:
        r = [arr(q(sent[m - 2])), arr(rep("'ok'")), arr(rep("'[]'")), arr(rep("NULL")),
             arr(rep("'w'")), arr(rep("NULL"))]
        if nargs >= 27:
            r += [arr(rep("repeat('a',100)")), arr(rep("repeat('a',50)"))]
        if nargs == 29:
            r += [arr(q([u() for _ in range(k)]))]
    else:
        r = ["ARRAY[]::text[]"] * {29: 9, 27: 8, 21: 6}[nargs]
    d = [arr(rep("'s%d'" % b)), arr(rep("false"), 'boolean')]
    print("SELECT count(*) FROM a2a_step_many(" + ", ".join(s + c + r + d + [str(1764000000000 + m)]) + ");")
EOF
}

count() { # database, script: the instructions of one single-user run on a fresh copy
    rm -rf "$work/run" && cp -a "$work/data" "$work/run"
    as_pg "valgrind --tool=callgrind --callgrind-out-file=/dev/null $bindir/postgres --single \
        -D $work/run -c fsync=off -c synchronous_commit=off $1 < $2 > /dev/null 2> $work/err"
    grep -o 'Collected : [0-9]*' "$work/err" | awk '{print $3}'
}

as_pg "$bindir/pg_ctl -D $work/data -o '-p $port -k /tmp -c listen_addresses=127.0.0.1' -l $work/log start" >/dev/null
i=0
for bin in "$@"; do
    i=$((i + 1))
    psql -q "postgres://postgres@127.0.0.1:$port/postgres" -c "CREATE DATABASE b$i"
    DATABASE_URL="postgres://postgres@127.0.0.1:$port/b$i" "$bin" migrate >/dev/null
    nargs[$i]=$(psql -Atq "postgres://postgres@127.0.0.1:$port/b$i" \
        -c "SELECT pronargs FROM pg_proc WHERE proname = 'a2a_step_many'")
done
as_pg "$bindir/pg_ctl -D $work/data stop" >/dev/null
i=0
for bin in "$@"; do
    i=$((i + 1))
    calls "${nargs[$i]}" 100 >"$work/c100.sql"
    calls "${nargs[$i]}" 400 >"$work/c400.sql"
    short=$(count "b$i" "$work/c100.sql")
    long=$(count "b$i" "$work/c400.sql")
    printf '%-60s %3s arguments  %9d instructions per task life\n' "$bin" "${nargs[$i]}" \
        $(((long - short) / 300 / 4))
done
