"""The peer in the a2a-mailbox benchmark: pgqueuer on the same PostgreSQL, same job count, same
concurrency. Run by benches/mailbox (see BENCHMARKS.md) inside a venv under target/bench/; it
prints ONE JSON object on stdout and nothing else there.

What one job's life is here: `Queries.enqueue` (one INSERT, one transaction, one caller waiting
for it, like a send), then a `QueueManager` dequeues it (its batched `FOR UPDATE SKIP LOCKED`
claim), runs an empty entrypoint, and acknowledges it (pgqueuer's buffered status log, which
deletes the job row and writes its log row, several jobs per transaction). The clock starts
when the producers start and stops when the last job's acknowledgement is committed (the
queue table is empty), not merely when the last handler ran.

Tables are installed with pgqueuer's default durability (`durable`: every table LOGGED) and the
server's default synchronous_commit, the same durability as a2a-mailbox on PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import resource
import sys
import time
from datetime import timedelta

import asyncpg
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    rank = max(1, -(-len(s) * p // 100))  # nearest rank
    return s[int(rank) - 1]


def summary_ms(values: list[float]) -> dict:
    return {
        "n": len(values),
        "p50_ms": round(pct(values, 50) * 1000, 3),
        "p99_ms": round(pct(values, 99) * 1000, 3),
        "mean_ms": round(sum(values) / len(values) * 1000, 3) if values else 0.0,
    }


async def run(args: argparse.Namespace) -> dict:
    admin = await asyncpg.connect(args.dsn)
    await Queries(AsyncpgDriver(admin)).install()

    done = 0
    all_done = asyncio.Event()
    pickup: list[float] = []  # enqueue committed -> handler started

    managers: list[QueueManager] = []
    conns: list[asyncpg.Connection] = []
    for _ in range(args.consumers):
        conn = await asyncpg.connect(args.dsn)
        conns.append(conn)
        qm = QueueManager(Queries(AsyncpgDriver(conn)))

        @qm.entrypoint("bench")
        async def handler(job: Job) -> None:
            nonlocal done
            sent_at = float(job.payload.decode()) if job.payload else time.time()
            pickup.append(time.time() - sent_at)
            done += 1
            if done >= args.jobs:
                all_done.set()

        managers.append(qm)

    consumer_tasks = [
        asyncio.create_task(
            qm.run(
                batch_size=args.batch_size,
                dequeue_timeout=timedelta(seconds=1),
            )
        )
        for qm in managers
    ]
    await asyncio.sleep(0.5)  # let the managers install their LISTEN before the clock starts

    enqueue_lat: list[float] = []
    per_producer = [args.jobs // args.concurrency] * args.concurrency
    for i in range(args.jobs % args.concurrency):
        per_producer[i] += 1

    async def producer(n: int) -> None:
        conn = await asyncpg.connect(args.dsn)
        conns.append(conn)
        q = Queries(AsyncpgDriver(conn))
        for _ in range(n):
            t = time.perf_counter()
            await q.enqueue("bench", str(time.time()).encode())
            enqueue_lat.append(time.perf_counter() - t)

    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    await asyncio.gather(*(producer(n) for n in per_producer))
    t_enqueued = time.perf_counter()
    await asyncio.wait_for(all_done.wait(), timeout=args.timeout)
    t_handled = time.perf_counter()
    # Acknowledgements are buffered: wait until every job row is gone (acked and committed).
    while True:
        left = await admin.fetchval("SELECT count(*) FROM pgqueuer")
        if left == 0:
            break
        if time.perf_counter() - t0 > args.timeout:
            raise TimeoutError(f"{left} jobs never acknowledged")
        await asyncio.sleep(0.002)
    t_acked = time.perf_counter()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)

    for qm in managers:
        qm.shutdown.set()
    await asyncio.wait(consumer_tasks, timeout=10)
    for c in conns:
        await c.close()
    logged = await admin.fetchval("SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'")
    await admin.close()

    secs = t_acked - t0
    return {
        "peer": "pgqueuer",
        "pgqueuer_version": importlib.metadata.version("pgqueuer"),
        "asyncpg_version": asyncpg.__version__,
        "python": sys.version.split()[0],
        "jobs": args.jobs,
        "producers": args.concurrency,
        "consumers": args.consumers,
        "batch_size": args.batch_size,
        "durability": "durable (all tables LOGGED), server synchronous_commit",
        "secs": round(secs, 4),
        "jobs_per_s": round(args.jobs / secs, 1),
        "enqueue_phase_secs": round(t_enqueued - t0, 4),
        "all_handled_secs": round(t_handled - t0, 4),
        "ack_tail_secs": round(t_acked - t_handled, 4),
        "enqueue": summary_ms(enqueue_lat),
        "pickup": summary_ms(pickup),
        "successful_logged": logged,
        "client_cpu_secs": round(
            (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime), 3
        ),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=16, help="producers, one connection each")
    p.add_argument("--consumers", type=int, default=1, help="QueueManagers, one connection each")
    p.add_argument("--batch-size", type=int, default=16, help="dequeue batch per QueueManager")
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args()
    try:
        import uvloop  # pgqueuer depends on it on Linux

        uvloop.install()
    except ImportError:
        pass
    out = asyncio.run(run(args))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
