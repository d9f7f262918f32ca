//! The snapshot plane, for the edge (`docs/snapshots.md`): a board instance's head, and its
//! manifests and chunks by hash; and a player's friend list, which the edge needs to answer
//! friends-of from chunks. What is published when, and what is kept, is decided in
//! `crate::snapshots`; this only checks auth, resolves the board and writes the answers.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use standings_core::ChunkHash;

use super::read::{BoardPath, board_parts};
use super::{ReadQuery, Shared, json, resolve};
use crate::http::error::{AppError, AppResult, Code};
use crate::snapshots::{Head, PartKind};

/// Parts never change (their name is their hash), so any cache may keep them for a year.
const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");

pub(super) fn router() -> Router<Shared> {
    Router::new()
        .route("/v1/snapshots/{game}/{mode}/{season}/{scope}/head", get(head))
        .route("/v1/snapshots/manifests/{hash}", get(manifest))
        .route("/v1/snapshots/chunks", get(chunks))
        .route("/v1/snapshots/chunks/{hash}", get(chunk))
        .route("/v1/games/{game}/players/{player_id}/friends", get(friends))
}

/// `GET /v1/snapshots/{game}/{mode}/{season}/{scope}/head?period=&at=`: the latest
/// publication of the board instance, published first if it never was; for an instance that
/// holds no events, the empty snapshot of the board's rules. The period is resolved as reads
/// resolve it, with the same errors. O(1) once published.
async fn head(
    State(state): State<Shared>,
    Path(path): Path<BoardPath>,
    uri: Uri,
    headers: HeaderMap,
) -> AppResult<Response> {
    state
        .auth
        .snapshot_reader(&headers)?
        .check([path.0.as_str()], "snapshots")?;
    let resolved = resolve(&state, board_parts(&path), &ReadQuery(uri.query())).await?;
    let slot = resolved.slot().clone();
    let head = state.snapshots.head(resolved).await?;
    let body = head_json(&slot.period.fields(), &head, state.snapshots.config().interval_ms);
    let max_age = state.snapshots.config().head_max_age_seconds;
    let mut response = super::json_bytes(StatusCode::OK, body.into());
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_str(&format!("public, max-age={max_age}"))
            .map_err(|e| AppError::new(Code::INTERNAL, format!("a Cache-Control value: {e}")))?,
    );
    Ok(response)
}

/// The head answer, in the contract's format (`standings_core::contract::head`, which the
/// edge and the browser read back). O(length of the period key).
fn head_json(period: &standings_core::json::PeriodFields<'_>, head: &Head, interval_ms: u64) -> Vec<u8> {
    let wire = standings_core::contract::head::Head {
        period: period.kind.into(),
        period_key: period.key.into(),
        period_start_ms: period.start_ms,
        period_end_ms: period.end_ms,
        board_version: head.board_version,
        manifest: head.manifest,
        published_at_ms: head.published_at_ms,
        interval_ms,
    };
    let mut out = Vec::with_capacity(256);
    wire.write(&mut out);
    out
}

/// `GET /v1/snapshots/manifests/{hash}`.
async fn manifest(
    State(state): State<Shared>,
    Path(hash): Path<String>,
    headers: HeaderMap,
) -> AppResult<Response> {
    part(&state, &hash, PartKind::Manifest, &headers)
}

/// `GET /v1/snapshots/chunks/{hash}`.
async fn chunk(
    State(state): State<Shared>,
    Path(hash): Path<String>,
    headers: HeaderMap,
) -> AppResult<Response> {
    part(&state, &hash, PartKind::Chunk, &headers)
}

/// The most chunks one `GET /v1/snapshots/chunks?hashes=` names: 200 hashes keep its URL
/// within the 16 KB a Cloudflare Worker may send.
const MAX_BUNDLE_CHUNKS: usize = 200;

/// `GET /v1/snapshots/chunks?hashes=H1,H2,...`: several chunks in one answer, for an edge
/// whose read needs more parts than it may fetch one by one. The body is each chunk in the
/// order named, each preceded by its length as 4 bytes big-endian; immutable, as the parts
/// are. Every hash is checked (a hash named twice is refused, so a URL cannot ask for the same
/// bytes over and over), then every part is found and its games checked, before any byte is
/// written. O(hashes) plus the copy of their bytes.
async fn chunks(State(state): State<Shared>, uri: Uri, headers: HeaderMap) -> AppResult<Response> {
    let reader = state.auth.snapshot_reader(&headers)?;
    let mut named = None;
    for (key, value) in form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes()) {
        if key != "hashes" {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                format!(
                    "unknown query parameter {key:?}; this endpoint takes only hashes=H1,H2,... (or GET /v1/snapshots/chunks/{{hash}} for one)"
                ),
            ));
        }
        if named.replace(value).is_some() {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                "hashes is given more than once; name every chunk in one comma-separated hashes",
            ));
        }
    }
    let named = named.ok_or_else(|| {
        AppError::new(
            Code::INVALID_REQUEST,
            "hashes=H1,H2,... is required: the chunks to send, each as a manifest names it",
        )
    })?;
    let raws: Vec<&str> = named.split(',').collect();
    if raws.len() > MAX_BUNDLE_CHUNKS {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            format!(
                "hashes names {} chunks; at most {MAX_BUNDLE_CHUNKS} per request",
                raws.len()
            ),
        ));
    }
    let mut found = Vec::with_capacity(raws.len());
    let mut asked = std::collections::HashSet::with_capacity(raws.len());
    for raw in &raws {
        let hash = parse_hash(raw)?;
        if !asked.insert(hash) {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                format!("hashes names chunk {raw} more than once; name each chunk once"),
            ));
        }
        let part = state.snapshots.part(&hash, PartKind::Chunk).ok_or_else(|| {
            AppError::new(Code::SNAPSHOT_PART_NOT_FOUND, format!(
                "no snapshot chunk {raw}: it was never published, or no head has named it for longer than the retention; ask the board's head again"
            ))
        })?;
        reader.check(part.games.iter().map(|g| &**g), "this snapshot part")?;
        found.push(part.bytes);
    }
    let mut body = Vec::with_capacity(found.iter().map(|b| b.len() + 4).sum());
    for bytes in &found {
        let length = u32::try_from(bytes.len())
            .map_err(|_| AppError::new(Code::INTERNAL, "a snapshot chunk of 4 GiB or more"))?;
        body.extend_from_slice(&length.to_be_bytes());
        body.extend_from_slice(bytes);
    }
    Ok((
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (header::CACHE_CONTROL, IMMUTABLE),
        ],
        body,
    )
        .into_response())
}

/// A part's bytes, immutable, with its hash as the ETag; 304 to an `If-None-Match` that names
/// it. The caller is checked first, then the hash, then against the games that published the
/// part. O(1) plus the answer's copy-free body.
fn part(state: &Shared, raw: &str, kind: PartKind, headers: &HeaderMap) -> AppResult<Response> {
    let reader = state.auth.snapshot_reader(headers)?;
    let hash = parse_hash(raw)?;
    let what = match kind {
        PartKind::Manifest => "manifest",
        PartKind::Chunk => "chunk",
    };
    let found = state.snapshots.part(&hash, kind).ok_or_else(|| {
        AppError::new(Code::SNAPSHOT_PART_NOT_FOUND, format!(
            "no snapshot {what} {raw}: it was never published, or no head has named it for longer than the retention; ask the board's head again"
        ))
    })?;
    reader.check(found.games.iter().map(|g| &**g), "this snapshot part")?;
    let etag = HeaderValue::from_str(&format!("\"{raw}\""))
        .map_err(|e| AppError::new(Code::INTERNAL, format!("an ETag value: {e}")))?;
    let cached = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| names_etag(v, raw));
    let mut response = if cached {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            )],
            Body::from(found.bytes),
        )
            .into_response()
    };
    let response_headers = response.headers_mut();
    response_headers.insert(header::CACHE_CONTROL, IMMUTABLE);
    response_headers.insert(header::ETAG, etag);
    Ok(response)
}

/// A hash as the head names it: 64 lowercase hex digits. 400 with what is wrong otherwise.
fn parse_hash(raw: &str) -> AppResult<ChunkHash> {
    let bad = |why: String| {
        AppError::new(
            Code::INVALID_REQUEST,
            format!(
                "{why}; a snapshot part is named by its SHA-256 as 64 lowercase hex digits, as a head's manifest field and a manifest's chunks name it"
            ),
        )
    };
    if !raw.is_ascii() {
        return Err(bad("the hash is not ASCII".into()));
    }
    if raw.len() != 64 {
        return Err(bad(format!("the hash has {} characters", raw.len())));
    }
    let mut hash = [0u8; 32];
    for (i, c) in raw.bytes().enumerate() {
        let nibble = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => {
                return Err(bad(format!("the hash has {:?} at position {i}", char::from(c))));
            }
        };
        hash[i / 2] |= if i % 2 == 0 { nibble << 4 } else { nibble };
    }
    Ok(standings_core::BoardDigest(hash))
}

/// Whether an `If-None-Match` value names the ETag `"hash"` (strong or weak), or is `*`.
pub(super) fn names_etag(value: &str, hash: &str) -> bool {
    value.split(',').map(str::trim).any(|tag| {
        tag == "*"
            || tag
                .strip_prefix("W/")
                .unwrap_or(tag)
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                == Some(hash)
    })
}

/// `GET /v1/games/{game}/players/{player_id}/friends`: the friend list as stored (its order),
/// readable as friends-of is: the player's own token or JWT, or a service, moderator, admin or
/// edge token of the game; a friend list is private, so `public_reads` does not open it.
async fn friends(
    State(state): State<Shared>,
    Path((game, player_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> AppResult<Response> {
    state.auth.friends_reader(&headers, &game, &player_id)?;
    super::time_and_trust::check_part("game", &game)?;
    standings_core::check_id("player_id", &player_id)
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
    let friends = state.store.friends(&game, &player_id).await?;
    Ok(json(
        StatusCode::OK,
        &FriendList {
            game: &game,
            player_id: &player_id,
            friends,
        },
    ))
}

/// A friend list, its fields in the contract's order.
#[derive(Serialize)]
struct FriendList<'a> {
    game: &'a str,
    player_id: &'a str,
    friends: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::periods::{Period, PeriodKind};

    /// A hash reads back as the digest it prints; a wrong length, an upper-case digit or a
    /// non-hex character is refused saying which and where.
    #[test]
    fn a_hash_is_64_lowercase_hex_digits() {
        let digest = ChunkHash::of(b"part");
        assert_eq!(parse_hash(&digest.to_string()).unwrap(), digest);
        let detail = |raw: &str| match parse_hash(raw) {
            Err(AppError::Refused(Code::INVALID_REQUEST, detail)) => detail,
            other => panic!("{raw}: {other:?}"),
        };
        assert!(detail("abc").starts_with("the hash has 3 characters"));
        let upper = digest.to_string().to_uppercase();
        assert!(detail(&upper).contains("at position"), "{}", detail(&upper));
        let mut odd = digest.to_string().into_bytes();
        odd[7] = b'g';
        let odd = String::from_utf8(odd).unwrap();
        assert!(
            detail(&odd).starts_with("the hash has 'g' at position 7"),
            "{}",
            detail(&odd)
        );
    }

    /// `If-None-Match` matches the part's ETag strong or weak, in a list, or as `*`, and
    /// nothing else.
    #[test]
    fn if_none_match_names_the_etag() {
        assert!(names_etag("\"abc\"", "abc"));
        assert!(names_etag("W/\"abc\"", "abc"));
        assert!(names_etag("\"x\", \"abc\"", "abc"));
        assert!(names_etag("*", "abc"));
        assert!(!names_etag("\"abcd\"", "abc"));
        assert!(!names_etag("abc", "abc"));
    }

    /// The head prints its fields in the contract's order, the period fields as every read
    /// prints them.
    #[test]
    fn the_head_prints_its_fields_in_order() {
        let head = Head {
            board_version: 42,
            manifest: standings_core::BoardDigest([0xab; 32]),
            published_at_ms: 1_792_800_000_250,
        };
        let daily = Period {
            kind: PeriodKind::Daily,
            key: "2026-10-13".into(),
            start_ms: Some(1_792_800_000_000),
            end_ms: Some(1_792_886_400_000),
        };
        let text = String::from_utf8(head_json(&daily.fields(), &head, 1000)).unwrap();
        let expected = format!(
            "{{\"period\":\"daily\",\"period_key\":\"2026-10-13\",\"period_start\":\"{}\",\"period_end\":\"{}\",\"board_version\":42,\"manifest\":\"{}\",\"published_at\":\"{}\",\"interval_ms\":1000}}",
            crate::clock::format_rfc3339(1_792_800_000_000),
            crate::clock::format_rfc3339(1_792_886_400_000),
            "ab".repeat(32),
            crate::clock::format_rfc3339(1_792_800_000_250),
        );
        assert_eq!(text, expected);
        let all_time = String::from_utf8(head_json(&Period::all_time().fields(), &head, 250)).unwrap();
        assert!(
            all_time.starts_with("{\"period\":\"all_time\",\"period_key\":\"all_time\",\"period_start\":null,\"period_end\":null,\"board_version\":42,"),
            "{all_time}"
        );
    }
}
