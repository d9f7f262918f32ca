"""Schemathesis hooks and checks for the hostile-input run (tests/hostile/run loads this module).

`no_state_change_on_rejection`: the service's whole state is read after every call: the
version and digest of each seeded board (its live, in-memory ranking) and a hash of every row
of every table of the SQLite file but `checkpoint_parts` (the service's own restart cache).
A call answered 4xx must leave it exactly as the call before left it. Schemathesis runs with
one worker, so nothing else changes the state between two calls.

Seeded boards. The OpenAPI document names boards, players and snapshot parts with plain
strings, so generated calls almost never name anything that exists. `before_call` aims about
half of them at what the run seeded (two boards with entries, their players, the parts of
their current snapshots), choosing by a hash of what was generated, so a replayed example is
aimed the same way (but for the bundle, whose document lists no parameter to vary: every
other call of it is aimed, by their count); the other half keep their generated names (the
404 paths). With the invalid token the aimed calls are refused before any lookup, as they
should be. It also gives the subscribe call a valid view, an instance and a position (`since_version`,
`Last-Event-ID`, as `PERIOD_KEY:VERSION`) in some cases, and the snapshot head and bundle the
query parameters the document does not list (`period`, `at`; `hashes`), so the live and
snapshot routes are fuzzed on boards with entries.

Live streams. A subscription that is opened streams until the client leaves. Schemathesis
reads an answer of type `text/event-stream` only up to `max-stream-events` events
(schemathesis.toml sets 1 for subscribe: the first message is due at once) or its read
deadline, which `before_call` sets for subscribe calls to `STREAM_READ_SECONDS`, then closes
the connection. `live_stream_is_sound` checks what was read.

Snapshot parts. `snapshot_parts_are_sound` checks that every part answered 200 is the bytes
its hash names (SHA-256), a bundle's chunks in the order asked, and that a bundle naming a
chunk twice is refused.
"""

import atexit
import hashlib
import json
import os
import sqlite3
import urllib.request
import zlib

import schemathesis

BASE = os.environ["HOSTILE_BASE"]
DB = os.environ["HOSTILE_DB"]
READ_TOKEN = os.environ["HOSTILE_ADMIN_TOKEN"]
BOARDS = os.environ["HOSTILE_BOARDS"].split()
PLAYERS = os.environ["HOSTILE_PLAYERS"].split()
SUMMARY = os.environ["HOSTILE_SUMMARY"]
# Which token this run sends ("admin" or "invalid"), for the summary.
RUN = os.environ.get("HOSTILE_RUN", "")

# How long a subscribe call may wait for its answer's head and its first event, in all. The
# first message is sent at once (docs/live.md), so a healthy service needs milliseconds.
STREAM_READ_SECONDS = 2.0
# How long any other request of the hooks' own may take.
REQUEST_TIMEOUT = 10

_last_state = None
_counts = {
    "run": RUN,
    "calls": 0,
    "2xx": 0,
    "4xx": 0,
    "5xx": 0,
    "other": 0,
    "state_checks": 0,
    # Calls aimed at what the run seeded (a board, a player, a snapshot part).
    "seeded_calls": 0,
    # Answered 200 on a seeded board or part: streams opened (their first event checked),
    # heads, manifests, chunks and bundles (their bytes checked).
    "streams": 0,
    "first_snapshots": 0,
    "first_deltas": 0,
    "heads": 0,
    "manifests": 0,
    "chunks": 0,
    "bundles": 0,
}


def _get(path):
    request = urllib.request.Request(f"{BASE}{path}", headers={"Authorization": f"Bearer {READ_TOKEN}"})
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as answer:
        return answer.read()


def _digests():
    out = []
    for board in BOARDS:
        body = json.loads(_get(f"/v1/leaderboards/{board}/digest"))
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


# --- the snapshot parts of the seeded boards --------------------------------------------------


def _varint(data, at):
    """An unsigned LEB128 varint (postcard's integers) at `at`: (value, next offset)."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _manifest_chunk_hashes(data):
    """The rank and lookup chunk hashes and the rank sketch's hash a manifest names, as hex.
    The layout is the core's format 6 (core/src/snapshot/mod.rs): a u16 version, the tag `M`,
    then postcard: rules (score mode, value_min, value_max), board_version, total_players, the
    32-byte digest, the 32-byte hash of the rank sketch, the segment dimensions (country as a
    bool, then each event dimension's name and values), the rank chunk refs (count,
    distinct_values, first_value, last entry with its optional extras, hash, and each segment's
    members: dimension byte, value, count, distinct_values, first_value, last_value) and the
    lookup chunk refs (count, hash). Only the hashes are wanted, and they are checked: every part named is
    fetched and must hash to its name, so a reading that drifted from the format fails the run
    rather than passing quietly."""
    if data[:3] != b"\x06\x00M":
        raise AssertionError(f"a manifest of another format or tag: {data[:3]!r}")
    at = 3
    for _ in range(5):  # score mode, value_min, value_max, board_version, total_players
        _, at = _varint(data, at)
    at += 32  # digest
    sketch = data[at : at + 32].hex()
    at += 32
    at += 1  # country, a bool
    dimensions, at = _varint(data, at)
    for _ in range(dimensions):
        length, at = _varint(data, at)  # the name
        at += length
        values, at = _varint(data, at)
        for _ in range(values):
            length, at = _varint(data, at)
            at += length
    rank = []
    count, at = _varint(data, at)
    for _ in range(count):
        for _ in range(3):  # count, distinct_values, first_value
            _, at = _varint(data, at)
        length, at = _varint(data, at)  # the last entry's player id
        at += length
        for _ in range(2):  # its value and achieved_at
            _, at = _varint(data, at)
        has_extras = data[at]  # an Option: 0 none, 1 some
        at += 1
        if has_extras:
            for _ in range(4):  # display_name, country, metadata, segments: optional strings
                present = data[at]
                at += 1
                if present:
                    length, at = _varint(data, at)
                    at += length
        rank.append(data[at : at + 32].hex())
        at += 32
        stats, at = _varint(data, at)
        for _ in range(stats):
            at += 1  # the dimension, a byte
            length, at = _varint(data, at)  # the value
            at += length
            for _ in range(4):  # count, distinct_values, first_value, last_value
                _, at = _varint(data, at)
    lookup = []
    count, at = _varint(data, at)
    for _ in range(count):
        _, at = _varint(data, at)
        lookup.append(data[at : at + 32].hex())
        at += 32
    if at != len(data):
        raise AssertionError(f"a manifest of {len(data)} bytes read as {at}")
    return rank, lookup, sketch


_parts_cache = {}
# The call `before_call` last aimed at what was seeded (`id` of its case; `Case` takes no new
# attributes), for the checks' counts.
_aimed = None
# Calls of the bundle so far.
_bundles = 0


def _seeded_parts(board):
    """The manifest hash of a seeded board's current all-time head and the part hashes it
    names (rank and lookup chunks, and the sketch), from the service itself (the admin token may read snapshots)."""
    head = json.loads(_get(f"/v1/snapshots/{board}/head"))
    manifest = head["manifest"]
    if manifest not in _parts_cache:
        name = manifest
        # A head may name a patch (tag `P`), whose first field is the 32-byte hash of its base (a
        # manifest, or a patch over one): the chunks are the manifest's.
        for _ in range(3):
            data = _get(f"/v1/snapshots/manifests/{name}")
            if hashlib.sha256(data).hexdigest() != name:
                raise AssertionError(f"the root {name} of {board} does not hash to its name")
            if data[:3] != b"\x06\x00P":
                break
            name = data[3:35].hex()
        _parts_cache[manifest] = _manifest_chunk_hashes(data)
    rank, lookup, sketch = _parts_cache[manifest]
    return manifest, rank, lookup + [sketch]


# --- aiming calls at what was seeded ----------------------------------------------------------


def _draw(case, salt):
    """A number drawn from what schemathesis generated for `case`: the same example draws the
    same, so a failure replays aimed at the same place."""
    text = repr((salt, case.operation.label, case.path_parameters, case.query, case.headers))
    return zlib.crc32(text.encode())


SEEDED = [tuple(board.split("/")) for board in BOARDS]
BOARD_PARAMETERS = ("game", "mode", "season", "scope")
# Valid views, and a few that parse but name no one.
VIEWS = [
    "top:1",
    "top:3",
    "top:100",
    "around:{p}:0",
    "around:{p}:2",
    "around:{p}:25",
    "player:{p}",
    "player:p-nobody",
    "around:p-nobody:3",
]
# Positions a subscriber may come back with: of the all-time instance (held, ahead, behind,
# bare), of another instance, and malformed.
POSITIONS = ["all_time:{v}", "all_time:0", "all_time:{ahead}", "{v}", "2026-01-03:1", "1999-01-01:{v}", "all_time:", ":3", "all_time:-1"]
# Period instances: the all-time one, days of the `sum` board with events (closed) and without
# (in the future: the empty snapshot); the `global` board keeps only all_time.
INSTANCES = {
    "global": [{}, {"period": "all_time"}],
    "sum": [
        {},
        {"period": "all_time"},
        {"period": "daily", "at": "2026-01-03T12:00:00Z"},
        {"period": "daily", "at": "2026-01-05T00:00:00Z"},
        {"period": "daily", "at": "2031-01-01T00:00:00Z"},
    ],
}
# Instances the boards do not keep, or times that do not parse.
BAD_INSTANCES = [
    {"period": "daily"},
    {"period": "weekly", "at": "2026-01-05T00:00:00Z"},
    {"period": "daily", "at": "yesterday"},
]


def _instance(board, pick):
    """A query naming a period instance of `board`: one it keeps in four cases of five."""
    if pick % 5 == 0:
        return BAD_INSTANCES[(pick // 5) % len(BAD_INSTANCES)]
    kept = INSTANCES[board[3]]
    return kept[(pick // 5) % len(kept)]


def _aim_at_board(case, keys):
    parts = case.path_parameters or {}
    if not all(key in parts for key in keys) or _draw(case, "board") % 2:
        return None
    board = SEEDED[_draw(case, "which board") % len(SEEDED)]
    case.path_parameters = {**parts, **dict(zip(keys, board))}
    if "player_id" in parts and _draw(case, "player") % 4:
        case.path_parameters["player_id"] = PLAYERS[_draw(case, "which player") % len(PLAYERS)]
    return board


def _aim_subscribe(case, board):
    """A valid view in three cases of four, and in two of three of those nothing else
    generated (an `access_token` beside the admin token, say, is refused before the stream
    opens) but an instance; a position as `since_version` or `Last-Event-ID` in half."""
    query = dict(case.query or {})
    pick = _draw(case, "view")
    if pick % 4:
        player = PLAYERS[(pick // 4) % len(PLAYERS)]
        view = VIEWS[(pick // 32) % len(VIEWS)].format(p=player)
        if (pick // 512) % 3:
            query = {"view": view, **_instance(board, pick // 2048)}
            case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "last-event-id"}
        else:
            query["view"] = view
    pick = _draw(case, "position")
    if pick % 2 == 0:
        version = json.loads(_get(f"/v1/leaderboards/{'/'.join(board)}/digest"))["board_version"]
        position = POSITIONS[(pick // 2) % len(POSITIONS)].format(v=max(version - 2, 0), ahead=version + 5)
        if (pick // 32) % 2:
            query["since_version"] = position
        else:
            query.pop("since_version", None)
            case.headers = {**(case.headers or {}), "Last-Event-ID": position}
    case.query = query


def _aim_head(case, board):
    """The head's `period` and `at`, which the document does not list (its instance)."""
    case.query = {**(case.query or {}), **_instance(board, _draw(case, "instance"))}


def _aim_part(case, path):
    """Names a part of a seeded board's snapshot: the kind asked for mostly, the other kind
    sometimes (a manifest asked for as a chunk is 404)."""
    pick = _draw(case, "part")
    if pick % 2:
        return False
    manifest, rank, lookup = _seeded_parts(BOARDS[(pick // 2) % len(BOARDS)])
    chunks = rank + lookup
    wrong_kind = (pick // 4) % 5 == 0
    if path.startswith("/v1/snapshots/manifests/"):
        name = chunks[(pick // 20) % len(chunks)] if wrong_kind else manifest
    else:
        name = manifest if wrong_kind else chunks[(pick // 20) % len(chunks)]
    case.path_parameters = {**(case.path_parameters or {}), "hash": name}
    return True


def _aim_bundle(case):
    """Gives every other bundle call a `hashes` list of a seeded board's chunks, in turn: all of
    them, some, one named twice, reordered, with one malformed, with the manifest's hash among
    them. The document lists no parameter for the bundle, so its generated cases are alike:
    they are told apart by their count, and the first aimed one is always one to answer."""
    global _bundles
    _bundles += 1
    if _bundles % 2 == 0:
        return False
    turn = _bundles // 2
    manifest, rank, lookup = _seeded_parts(BOARDS[turn % len(BOARDS)])
    chunks = rank + lookup
    shape = turn % 6
    if shape == 0:
        names = chunks
    elif shape == 1:
        names = chunks[: 1 + (turn // 6) % len(chunks)]
    elif shape == 2:
        names = chunks + chunks[:1]
    elif shape == 3:
        names = [chunks[-1]] + chunks[:-1]
    elif shape == 4:
        names = chunks[:1] + [chunks[0][:-1] + "g"]
    else:
        names = chunks[:1] + [manifest]
    case.query = {"hashes": ",".join(names)}
    return True


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Aims about half of the calls at what was seeded (see the module doc) and bounds a
    subscribe call's read: `STREAM_READ_SECONDS` for its head and first event."""
    global _aimed
    path = case.operation.path
    seeded = False
    if path.endswith("/subscribe"):
        kwargs["timeout"] = (REQUEST_TIMEOUT, STREAM_READ_SECONDS)
        board = _aim_at_board(case, BOARD_PARAMETERS)
        if board is not None:
            _aim_subscribe(case, board)
            seeded = True
    elif path.startswith("/v1/snapshots/manifests/") or path.startswith("/v1/snapshots/chunks/"):
        seeded = _aim_part(case, path)
    elif path == "/v1/snapshots/chunks":
        seeded = _aim_bundle(case)
    elif path.endswith("/head"):
        board = _aim_at_board(case, BOARD_PARAMETERS)
        if board is not None:
            _aim_head(case, board)
            seeded = True
    elif _aim_at_board(case, BOARD_PARAMETERS) is not None:
        seeded = True
    elif path.endswith("/results"):
        seeded = _aim_at_board(case, BOARD_PARAMETERS[:3]) is not None
    _aimed = id(case) if seeded else None
    if seeded:
        _counts["seeded_calls"] += 1


# --- checks -----------------------------------------------------------------------------------


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


def _first_event(content):
    """The fields of the first event of an event stream: {field: value} of its lines."""
    text = content.decode("utf-8")
    block = text.replace("\r\n", "\n").split("\n\n", 1)[0]
    fields = {}
    for line in block.split("\n"):
        if line.startswith(":") or not line:
            continue
        name, _, value = line.partition(":")
        fields[name] = value[1:] if value.startswith(" ") else value
    return fields


@schemathesis.check
def live_stream_is_sound(ctx, response, case):
    """A subscription answered 200 is an event stream whose first event is a `snapshot` or a
    `delta` (docs/live.md): its `data:` one JSON object of that type, its `id:` the period key
    and version it brings the client to."""
    if not case.operation.path.endswith("/subscribe") or response.status_code != 200:
        return None
    content_type = response.headers.get("content-type", [""])
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    if not content_type.startswith("text/event-stream"):
        raise AssertionError(f"a subscription answered 200 as {content_type!r}, not text/event-stream")
    if not response.content:
        raise AssertionError(f"a subscription sent no complete event within {STREAM_READ_SECONDS} s")
    event = _first_event(response.content)
    kind = event.get("event")
    if kind not in ("snapshot", "delta"):
        raise AssertionError(f"a subscription's first event is {kind!r}, not a snapshot or a delta: {event}")
    message = json.loads(event.get("data", ""))
    if message.get("type") != kind:
        raise AssertionError(f"an SSE event named {kind} carries a {message.get('type')!r}: {message}")
    if event.get("id") != f"{message.get('period_key')}:{message.get('board_version')}":
        raise AssertionError(f"the first event's id {event.get('id')!r} is not its period key and version: {message}")
    if kind == "snapshot" and not isinstance(message.get("entries"), list):
        raise AssertionError(f"a snapshot without entries: {message}")
    if kind == "delta" and not (isinstance(message.get("changed"), list) and isinstance(message.get("left"), list)):
        raise AssertionError(f"a delta without changed and left: {message}")
    if _aimed == id(case):
        _counts["streams"] += 1
        _counts["first_snapshots" if kind == "snapshot" else "first_deltas"] += 1
    return None


@schemathesis.check
def snapshot_parts_are_sound(ctx, response, case):
    """A snapshot head, manifest, chunk or bundle answered 200 holds what it names: a head
    names a manifest by 64 hex digits, a part is the bytes its hash names, a bundle is each
    chunk asked for, in order, after its 4-byte length; a bundle that names a chunk twice is
    never answered 200."""
    path = case.operation.path
    if not path.startswith("/v1/snapshots/") or response.status_code != 200:
        return None
    seeded = _aimed == id(case)
    if path.endswith("/head"):
        head = json.loads(response.content)
        manifest = head.get("manifest")
        if not (isinstance(manifest, str) and len(manifest) == 64 and isinstance(head.get("board_version"), int)):
            raise AssertionError(f"a head without a manifest hash or a version: {head}")
        if seeded:
            _counts["heads"] += 1
        return None
    if path == "/v1/snapshots/chunks":
        names = str((case.query or {}).get("hashes", "")).split(",")
        if len(set(names)) != len(names):
            raise AssertionError(f"a bundle naming a chunk twice was answered 200: {names}")
        body, at = response.content, 0
        for name in names:
            length = int.from_bytes(body[at : at + 4], "big")
            part = body[at + 4 : at + 4 + length]
            if len(part) != length or hashlib.sha256(part).hexdigest() != name:
                raise AssertionError(f"a bundle's chunk {name} is not the bytes it names")
            at += 4 + length
        if at != len(body):
            raise AssertionError(f"a bundle of {len(names)} chunks has {len(body) - at} bytes more")
        if seeded:
            _counts["bundles"] += 1
        return None
    name = (case.path_parameters or {}).get("hash")
    if hashlib.sha256(response.content).hexdigest() != name:
        raise AssertionError(f"the part {name} is not the bytes it names")
    if seeded:
        _counts["manifests" if "/manifests/" in path else "chunks"] += 1
    return None


@atexit.register
def _write_summary():
    with open(SUMMARY, "a") as out:
        out.write(json.dumps(_counts) + "\n")
