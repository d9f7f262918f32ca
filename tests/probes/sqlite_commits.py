"""SQLite alone, in the service's schema and commit pattern (WAL, synchronous=FULL): how fast
the log's insert can go with no HTTP, no JSON and no boards, and what each part of the schema
costs. A probe for BENCHMARKS.md, not a test; it needs only Python 3's sqlite3.

Usage: python3 tests/probes/sqlite_commits.py MODE ROWS_PER_COMMIT [variant...]
  MODE singles: ids from 64 interleaved sequences (sub-1-<conn>-<n>), as the loadgen's
                single submissions send them;
  MODE batch:   ids in member order (load-<n>), as the loadgen's batch load sends them.
  variants: normal (synchronous=NORMAL: no fsync per commit), nounique (no UNIQUE (game,
  event_id)), page2k (2 KiB pages), rowid (`seq INTEGER PRIMARY KEY`, the table's rowid).
Prefills 200,000 rows, then commits one multi-row INSERT (autocommit, as the service's at-once
path does; a batch group's chunks share one transaction) at a time for 5 s and prints commits/s and rows/s, counting only the time inside
`execute` (which includes binding every value: the service binds fewer, see store.rs).
The database goes in a temp folder under $PROBE_DIR (default: the current folder).
"""
import os, random, sqlite3, sys, tempfile, time

if len(sys.argv) < 3 or sys.argv[1] not in ("singles", "batch"):
    sys.exit(__doc__)
mode, rows = sys.argv[1], int(sys.argv[2])
variants = set(sys.argv[3:])
if variants - {"normal", "nounique", "page2k", "rowid"}:
    sys.exit(f"unknown variant(s) {sorted(variants - {'normal', 'nounique', 'page2k', 'rowid'})}")
folder = tempfile.mkdtemp(dir=os.environ.get("PROBE_DIR", "."))
db = sqlite3.connect(os.path.join(folder, "probe.db"), isolation_level=None)
if "page2k" in variants:
    db.execute("PRAGMA page_size = 2048")
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = " + ("NORMAL" if "normal" in variants else "FULL"))
db.execute("PRAGMA wal_autocheckpoint = 16384")
db.execute("PRAGMA cache_size = -65536")
unique = "" if "nounique" in variants else ", CONSTRAINT u UNIQUE (game, event_id)"
key = "INTEGER PRIMARY KEY" if "rowid" in variants else "BIGINT NOT NULL PRIMARY KEY"
db.execute(
    "CREATE TABLE score_events (seq " + key + ", game TEXT NOT NULL,"
    " event_id TEXT NOT NULL, player_id TEXT NOT NULL, mode TEXT NOT NULL, season TEXT NOT NULL,"
    " scopes TEXT NOT NULL, value BIGINT NOT NULL, achieved_at BIGINT NOT NULL,"
    " received_at BIGINT NOT NULL, source TEXT NOT NULL, status TEXT NOT NULL" + unique + ")"
)
db.execute("CREATE INDEX score_events_late ON score_events (game, seq) WHERE status = 'LATE'")
seq = 0
db.execute("BEGIN")
for i in range(200_000):
    seq += 1
    db.execute(
        "INSERT INTO score_events VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (seq, "loadgen", f"load-{i}", f"player-{i:016x}", "solo", "s1", "global", i, i, i, "loadgen", "APPLIED"),
    )
db.execute("COMMIT")
sql = (
    "INSERT OR FAIL INTO score_events VALUES "
    + ",".join(["(?,?,?,?,?,?,?,?,?,?,?,?)"] * rows)
    + " ON CONFLICT DO NOTHING"
)
if rows * 12 > 32_766:
    sys.exit("at most 2,730 rows per commit: SQLite binds at most 32,766 values per statement")
per_conn = [0] * 64
next_load = 200_000
inside = 0.0
commits = 0
began = time.perf_counter()
while time.perf_counter() - began < 5:
    args = []
    for _ in range(rows):
        seq += 1
        if mode == "singles":
            c = random.randrange(64)
            per_conn[c] += 1
            event_id = f"sub-1-{c}-{per_conn[c]}"
        else:
            event_id = f"load-{next_load}"
            next_load += 1
        args += [seq, "loadgen", event_id, f"player-{random.randrange(10**9):016x}", "solo", "s1",
                 "global", 1, 1, 1, "loadgen", "APPLIED"]
    t = time.perf_counter()
    db.execute(sql, args)
    inside += time.perf_counter() - t
    commits += 1
print(f"{mode} {rows} rows/commit {sorted(variants) or ['as the service']}: "
      f"{commits / inside:,.0f} commits/s, {commits * rows / inside:,.0f} rows/s inside SQLite")
db.close()
for name in os.listdir(folder):
    os.unlink(os.path.join(folder, name))
os.rmdir(folder)
