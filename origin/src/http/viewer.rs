//! The board viewer: the page at `GET /` and its files under `/viewer/`, built into the binary so
//! that the origin serves them with nothing beside it. The page's source is `origin/viewer/`
//! (its TypeScript compiled to the committed `origin/viewer/dist/viewer.js`), and the browser
//! package it imports is `wasm-pkg/pkg/`. The files are static and open to anyone; the reads the
//! page makes carry the user's token.

use std::sync::OnceLock;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use standings_core::BoardDigest;

use super::Shared;
use super::snapshots::names_etag;
use crate::http::error::{AppError, AppResult, Code};

/// The page may run only its own module and the package's WebAssembly, style itself only from its
/// own stylesheet, and talk only to this origin, so an injected string can do nothing.
const PAGE_POLICY: HeaderValue = HeaderValue::from_static(
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
);

/// A browser asks again on every load and gets a 304 while the file is the same, so a new build
/// is seen at once.
const REVALIDATE: HeaderValue = HeaderValue::from_static("no-cache");

/// What a file is: its content type, and whether it gets the page's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Html,
    Css,
    JavaScript,
    Wasm,
}

impl Kind {
    fn content_type(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Kind::Html => "text/html; charset=utf-8",
            Kind::Css => "text/css; charset=utf-8",
            Kind::JavaScript => "text/javascript; charset=utf-8",
            Kind::Wasm => "application/wasm",
        })
    }
}

/// One file served: its path, what it is, its bytes, and its ETag once asked for.
struct Asset {
    path: &'static str,
    kind: Kind,
    bytes: &'static [u8],
    etag: OnceLock<ETag>,
}

/// A strong ETag, as `If-None-Match` is compared with it and as it is sent.
struct ETag {
    /// The tag without its quotes.
    opaque: String,
    /// The tag in quotes.
    header: HeaderValue,
}

impl Asset {
    const fn new(path: &'static str, kind: Kind, bytes: &'static [u8]) -> Asset {
        Asset {
            path,
            kind,
            bytes,
            etag: OnceLock::new(),
        }
    }

    /// The file's ETag: the first 128 bits of its SHA-256 (the core's, which the origin already
    /// links), in hex. Hashed on the first request for the file, O(1) after.
    fn etag(&self) -> &ETag {
        self.etag.get_or_init(|| {
            let mut opaque = BoardDigest::of(self.bytes).to_string();
            opaque.truncate(32);
            let header = HeaderValue::from_str(&format!("\"{opaque}\""))
                .expect("hex digits in quotes make a header value");
            ETag { opaque, header }
        })
    }
}

/// A file of the browser package, copied into the viewer's own `dist/pkg/` by `origin/viewer/build`.
macro_rules! package_file {
    ($name:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/viewer/dist/pkg/", $name))
    };
}

/// A file of the page itself.
macro_rules! viewer_file {
    ($path:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/viewer/", $path))
    };
}

/// Every file the viewer serves, by the path it is served at.
static ASSETS: [Asset; 11] = [
    Asset::new("/", Kind::Html, viewer_file!("src/index.html")),
    Asset::new("/viewer/viewer.css", Kind::Css, viewer_file!("src/viewer.css")),
    Asset::new(
        "/viewer/viewer.js",
        Kind::JavaScript,
        viewer_file!("dist/viewer.js"),
    ),
    Asset::new(
        "/viewer/pkg/index.js",
        Kind::JavaScript,
        package_file!("index.js"),
    ),
    Asset::new("/viewer/pkg/api.js", Kind::JavaScript, package_file!("api.js")),
    Asset::new(
        "/viewer/pkg/order.js",
        Kind::JavaScript,
        package_file!("order.js"),
    ),
    Asset::new(
        "/viewer/pkg/exact.js",
        Kind::JavaScript,
        package_file!("exact.js"),
    ),
    Asset::new(
        "/viewer/pkg/snapshot.js",
        Kind::JavaScript,
        package_file!("snapshot.js"),
    ),
    Asset::new("/viewer/pkg/live.js", Kind::JavaScript, package_file!("live.js")),
    Asset::new(
        "/viewer/pkg/standings_wasm.js",
        Kind::JavaScript,
        package_file!("standings_wasm.js"),
    ),
    Asset::new(
        "/viewer/pkg/standings_wasm_bg.wasm",
        Kind::Wasm,
        package_file!("standings_wasm_bg.wasm"),
    ),
];

pub(super) fn router() -> Router<Shared> {
    Router::new()
        .route("/", get(asset))
        .route("/viewer/{*file}", get(asset))
}

/// `GET /` and `GET /viewer/{file}`: the file at the request's path, or 304 to an
/// `If-None-Match` that names its ETag; 404 `NOT_FOUND` for a file the viewer does not have.
/// O(files) to find it.
async fn asset(uri: Uri, headers: HeaderMap) -> AppResult<Response> {
    let path = uri.path();
    let asset = ASSETS
        .iter()
        .find(|asset| asset.path == path)
        .ok_or_else(|| AppError::new(Code::NOT_FOUND, format!("the viewer has no file {path}")))?;
    let etag = asset.etag();
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| names_etag(value, &etag.opaque));
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, asset.bytes).into_response()
    };
    let answer = response.headers_mut();
    answer.insert(header::CONTENT_TYPE, asset.kind.content_type());
    answer.insert(header::CACHE_CONTROL, REVALIDATE);
    answer.insert(header::ETAG, etag.header.clone());
    answer.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if asset.kind == Kind::Html {
        answer.insert(header::CONTENT_SECURITY_POLICY, PAGE_POLICY);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use axum::body::{Body, Bytes};
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;
    use crate::config::Config;
    use crate::http::{App, app};

    /// A service on a fresh SQLite file in a folder of its own, called through the real router.
    struct Service {
        app: App,
        dir: PathBuf,
    }

    impl Service {
        async fn start(test: &str) -> Service {
            let dir = std::env::temp_dir().join(format!(
                "standings-viewer-{test}-{}-{}",
                std::process::id(),
                crate::clock::now_ms()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let config = Config::fresh_default(&dir).unwrap();
            let state = crate::start(&config).await.unwrap();
            Service { app: app(state), dir }
        }

        /// Sends `GET path`, with `If-None-Match` when given, without a token.
        async fn get(&self, path: &str, if_none_match: Option<&str>) -> (StatusCode, HeaderMap, Bytes) {
            let mut request = Request::builder().uri(path);
            if let Some(tag) = if_none_match {
                request = request.header(header::IF_NONE_MATCH, tag);
            }
            let response = self
                .app
                .clone()
                .oneshot(request.body(Body::empty()).unwrap())
                .await
                .unwrap();
            let (parts, body) = response.into_parts();
            (
                parts.status,
                parts.headers,
                body.collect().await.unwrap().to_bytes(),
            )
        }
    }

    impl Drop for Service {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn header_of(headers: &HeaderMap, name: header::HeaderName) -> &str {
        headers
            .get(&name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_str()
            .unwrap()
    }

    /// `GET /` is the viewer's page, without a token, under the policy that allows no inline
    /// script or style and nothing from another origin.
    #[tokio::test]
    async fn the_viewer_page_is_served_at_the_root_with_its_policy() {
        let service = Service::start("page").await;
        let (status, headers, body) = service.get("/", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            header_of(&headers, header::CONTENT_TYPE),
            "text/html; charset=utf-8"
        );
        assert_eq!(
            header_of(&headers, header::CONTENT_SECURITY_POLICY),
            PAGE_POLICY.to_str().unwrap()
        );
        assert_eq!(header_of(&headers, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        assert_eq!(header_of(&headers, header::CACHE_CONTROL), "no-cache");
        let page = std::str::from_utf8(&body).unwrap();
        assert!(page.starts_with("<!doctype html>"), "{page}");
        assert!(
            page.contains(r#"<script type="module" src="/viewer/viewer.js"></script>"#),
            "{page}"
        );
        // The policy refuses inline script and style, so the page must have none.
        for inline in ["<style", " style=", " onclick=", " onload=", "importmap"] {
            assert!(!page.contains(inline), "the page has {inline}");
        }
        assert_eq!(page.matches("<script").count(), 1, "{page}");
    }

    /// Every file of the table is served at its path with its content type and its bytes, and
    /// its ETag.
    #[tokio::test]
    async fn every_viewer_file_is_served_with_its_content_type() {
        let service = Service::start("files").await;
        let expected = [
            ("/viewer/viewer.css", "text/css; charset=utf-8"),
            ("/viewer/viewer.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/index.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/api.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/order.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/exact.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/snapshot.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/live.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/standings_wasm.js", "text/javascript; charset=utf-8"),
            ("/viewer/pkg/standings_wasm_bg.wasm", "application/wasm"),
        ];
        // The list is the whole table but the page, which has a test of its own.
        let listed: Vec<&str> = expected.iter().map(|(path, _)| *path).collect();
        let table: Vec<&str> = ASSETS.iter().map(|a| a.path).filter(|p| *p != "/").collect();
        assert_eq!(listed, table);
        for (path, content_type) in expected {
            let (status, headers, body) = service.get(path, None).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert_eq!(header_of(&headers, header::CONTENT_TYPE), content_type, "{path}");
            assert_eq!(header_of(&headers, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
            assert!(!body.is_empty(), "{path} is empty");
            let asset = ASSETS.iter().find(|a| a.path == path).unwrap();
            assert_eq!(&body[..], asset.bytes, "{path}");
            assert_eq!(headers.get(header::ETAG), Some(&asset.etag().header), "{path}");
            assert!(headers.get(header::CONTENT_SECURITY_POLICY).is_none(), "{path}");
        }
        let (_, _, wasm) = service.get("/viewer/pkg/standings_wasm_bg.wasm", None).await;
        assert_eq!(&wasm[..4], b"\0asm");
    }

    /// An `If-None-Match` naming the file's ETag (alone, weak or in a list) is answered 304 with
    /// no body and the same ETag; another ETag gets the file.
    #[tokio::test]
    async fn if_none_match_with_the_etag_is_not_modified() {
        let service = Service::start("etag").await;
        for path in ["/", "/viewer/viewer.js", "/viewer/pkg/standings_wasm_bg.wasm"] {
            let (status, headers, _) = service.get(path, None).await;
            assert_eq!(status, StatusCode::OK);
            let etag = header_of(&headers, header::ETAG).to_string();
            assert!(
                etag.len() == 34 && etag.starts_with('"') && etag.ends_with('"'),
                "{etag}"
            );
            for asked in [etag.clone(), format!("W/{etag}"), format!("\"other\", {etag}")] {
                let (status, again, body) = service.get(path, Some(&asked)).await;
                assert_eq!(status, StatusCode::NOT_MODIFIED, "{path} {asked}");
                assert!(body.is_empty(), "{path}");
                assert_eq!(header_of(&again, header::ETAG), etag);
                assert_eq!(header_of(&again, header::CACHE_CONTROL), "no-cache");
            }
            let (status, _, body) = service.get(path, Some("\"0123\"")).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert!(!body.is_empty());
        }
    }

    /// A file the viewer does not have is 404 `NOT_FOUND` as problem+json, like any unknown
    /// route.
    #[tokio::test]
    async fn an_unknown_viewer_file_is_not_found() {
        let service = Service::start("unknown").await;
        for path in [
            "/viewer/nope.js",
            "/viewer/pkg/standings_wasm_bg.wasm.map",
            "/viewer/src/viewer.ts",
            "/viewer/../Cargo.toml",
            "/index.html",
        ] {
            let (status, headers, body) = service.get(path, None).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert_eq!(
                header_of(&headers, header::CONTENT_TYPE),
                "application/problem+json",
                "{path}"
            );
            let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(problem["code"], "NOT_FOUND", "{path}");
            assert_eq!(problem["status"], 404, "{path}");
        }
    }
}
