#!/usr/bin/env python3
"""Updates per second from several processes on one SQLite database in WAL mode, each running
`UPDATE t SET v = v + 1` in its own transaction for a fixed time: the baseline of the `UpdateContention` benchmark.

    python3 Benchmarks/sqlite-contention.py <processes> <seconds> <database> [FULL|NORMAL]

`synchronous` is FULL by default (each commit synced, as durable as the file store's update, which syncs the file and
its folder), NORMAL syncs only at checkpoints. Prints the updates per process, the total, updates per second and
whether the database ends on the exact total. Python's standard library only.
"""
import multiprocessing
import os
import sqlite3
import sys
import time


def child(path, seconds, synchronous, start, results):
    connection = sqlite3.connect(path, timeout=60, isolation_level=None)
    connection.execute("PRAGMA synchronous = " + synchronous)
    connection.execute("PRAGMA busy_timeout = 60000")
    start.wait()
    deadline = time.monotonic() + seconds
    updates = 0
    while time.monotonic() < deadline:
        # BEGIN IMMEDIATE takes the write lock first, so a transaction never has to be retried halfway.
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("UPDATE t SET v = v + 1 WHERE id = 1")
        connection.execute("COMMIT")
        updates += 1
    connection.close()
    results.put(updates)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    processes, seconds, path = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    synchronous = sys.argv[4] if len(sys.argv) == 5 else "FULL"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode = WAL")
    setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    setup.execute("INSERT INTO t VALUES (1, 0)")
    setup.close()
    start = multiprocessing.Event()
    results = multiprocessing.Queue()
    workers = [
        multiprocessing.Process(target=child, args=(path, seconds, synchronous, start, results))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    time.sleep(0.3)
    start.set()
    counts = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    check = sqlite3.connect(path)
    stored = check.execute("SELECT v FROM t WHERE id = 1").fetchone()[0]
    check.close()
    total = sum(counts)
    for count in counts:
        print(f"process: {count} updates")
    print(f"total {total} updates in {seconds} s: {int(total / seconds)} updates/s (synchronous={synchronous}); "
          f"database holds {stored}")
    sys.exit(0 if stored == total else 1)


if __name__ == "__main__":
    main()
