"""Schemathesis checks for the hostile-input run (tests/hostile/run loads this module).

`no_state_change_on_rejection`: the service's whole state is read after every call: the
version and digest of each seeded board (its live, in-memory ranking) and a hash of every row
of every table of the SQLite file but `checkpoint_parts` (the service's own restart cache).
A call answered 4xx must leave it exactly as the call before left it. Schemathesis runs with
one worker, so nothing else changes the state between two calls.

`before_call` keeps live subscriptions bounded: a subscription that is opened streams until the
client leaves, and schemathesis reads a whole body, so one would hang the run (see below).
"""

import atexit
import hashlib
import json
import os
import sqlite3
import urllib.request

import schemathesis

BASE = os.environ["HOSTILE_BASE"]
DB = os.environ["HOSTILE_DB"]
READ_TOKEN = os.environ["HOSTILE_ADMIN_TOKEN"]
BOARDS = os.environ["HOSTILE_BOARDS"].split()
SUMMARY = os.environ["HOSTILE_SUMMARY"]

_last_state = None
_counts = {"calls": 0, "2xx": 0, "4xx": 0, "5xx": 0, "other": 0, "state_checks": 0}


def _digests():
    out = []
    for board in BOARDS:
        request = urllib.request.Request(
            f"{BASE}/v1/leaderboards/{board}/digest",
            headers={"Authorization": f"Bearer {READ_TOKEN}"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = json.load(answer)
        out.append((board, body["board_version"], body["digest"]))
    return out


def _tables():
    digest = hashlib.sha256()
    connection = sqlite3.connect(f"file:{DB}?mode=ro", uri=True, timeout=10)
    try:
        names = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            if row[0] != "checkpoint_parts" and not row[0].startswith("sqlite_")
        ]
        for name in names:
            rows = sorted(repr(r) for r in connection.execute(f'SELECT * FROM "{name}"'))
            digest.update(f"{name}:{len(rows)}\n".encode())
            for row in rows:
                digest.update(row.encode())
    finally:
        connection.close()
    return digest.hexdigest()


def _state():
    return (_digests(), _tables())


SEEDED = {tuple(board.split("/")) for board in BOARDS}


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """A subscribe call that names a seeded board (and passes auth and every parameter) would
    open an endless stream, and schemathesis, reading the whole body, would hang on it. Such a
    call is aimed at a board nobody defined instead, so each one is answered, and the fuzzing
    still reaches auth, every parameter and the board lookup (404). The streams themselves
    are tested by origin/tests/live.rs."""
    if not case.operation.path.endswith("/subscribe"):
        return
    parts = case.path_parameters or {}
    board = tuple(str(parts.get(name)) for name in ("game", "mode", "season", "scope"))
    if board in SEEDED:
        case.path_parameters = {**parts, "scope": f"{board[3]}-never-defined"}


@schemathesis.check
def no_state_change_on_rejection(ctx, response, case):
    global _last_state
    status = response.status_code
    _counts["calls"] += 1
    bucket = f"{status // 100}xx" if 2 <= status // 100 <= 5 and status // 100 != 3 else "other"
    _counts[bucket] += 1
    state = _state()
    before, _last_state = _last_state, state
    if before is None or not 400 <= status < 500:
        return None
    _counts["state_checks"] += 1
    if state != before:
        raise AssertionError(
            f"{case.method} {case.formatted_path} answered {status} but changed the state: "
            f"boards {before[0]} -> {state[0]}, tables {before[1][:12]} -> {state[1][:12]}"
        )
    return None


@atexit.register
def _write_summary():
    with open(SUMMARY, "a") as out:
        out.write(json.dumps(_counts) + "\n")
