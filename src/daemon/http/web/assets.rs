//! The web view's files, built into the binary from
//! `web/`: two pages, their script and style, and the
//! vendored xterm.js. An asset is found by exact name in [`ASSETS`], never
//! on the file system, so no request path can reach anything else.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

macro_rules! web_file {
    ($path:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $path))
    };
}

/// Every asset: its name under `/web/assets/`, its content type, its bytes.
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    ("app.css", "text/css; charset=utf-8", web_file!("app.css")),
    (
        "common.js",
        "text/javascript; charset=utf-8",
        web_file!("common.js"),
    ),
    (
        "ports.js",
        "text/javascript; charset=utf-8",
        web_file!("ports.js"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        web_file!("console.js"),
    ),
    (
        "xterm.js",
        "text/javascript; charset=utf-8",
        web_file!("vendor/xterm/xterm.js"),
    ),
    (
        "xterm.css",
        "text/css; charset=utf-8",
        web_file!("vendor/xterm/xterm.css"),
    ),
];

/// The ports page.
const PORTS_PAGE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/ports.html"));
/// The console page (the same for every port: its script reads the port
/// from the address, so no port name is ever written into HTML).
const CONSOLE_PAGE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/console.html"));

/// `GET /web/assets/{file}`: an asset by exact name, else `404`.
pub async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
                // Revalidated each time: a new daemon may bring new files.
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            *bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
    }
}

/// `GET /web/`: the ports page.
pub async fn ports_page() -> Html<&'static str> {
    Html(PORTS_PAGE)
}

/// `GET /web/console/{port}`: the console page. Which ports the caller
/// reaches is decided by the WebSocket it opens, not here.
pub async fn console_page() -> Html<&'static str> {
    Html(CONSOLE_PAGE)
}
