//! The sandbox console at `/console`: static assets compiled into the binary (no second server,
//! no CDN, works offline). The console is a client of the public API only: the page calls the
//! same documented operations with the platform's key that a platform's code would, so it needs
//! nothing from the server but these files and their headers (shell).
//!
//! Every answer carries a policy that forbids inline script, framing and third-party origins;
//! the assets never insert API data as HTML (`tests/browser` checks the pages in Chromium).

use poem::http::{HeaderValue, StatusCode, header};
use poem::web::Path;
use poem::{IntoResponse, Response, Route, get, handler};

/// One embedded file: its name under `/console/`, media type and bytes.
struct Asset {
    name: &'static str,
    media_type: &'static str,
    bytes: &'static [u8],
}

/// Every file the console serves; `index.html` also answers `/console` itself. `console.js` is
/// the page's one script, an ES module that imports the other `.js` files.
const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        media_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../console/index.html"),
    },
    Asset {
        name: "console.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/console.js"),
    },
    Asset {
        name: "console.css",
        media_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../console/console.css"),
    },
    Asset {
        name: "api.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/api.js"),
    },
    Asset {
        name: "dom.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/dom.js"),
    },
    Asset {
        name: "money.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/money.js"),
    },
    Asset {
        name: "chart.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/chart.js"),
    },
    Asset {
        name: "accounts.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/accounts.js"),
    },
    Asset {
        name: "entities.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/entities.js"),
    },
    Asset {
        name: "transfers.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/transfers.js"),
    },
    Asset {
        name: "events.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/events.js"),
    },
    Asset {
        name: "webhooks.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/webhooks.js"),
    },
    Asset {
        name: "platform.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../console/platform.js"),
    },
];

/// Scripts and styles from this origin only (no inline script, no `eval`), calls to this origin
/// only, no framing, no plugins, forms post nowhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes, to be nested at `/console`.
pub fn routes() -> Route {
    Route::new().at("/", get(index)).at("/:file", get(file))
}

#[handler]
fn index() -> Response {
    serve("index.html")
}

#[handler]
fn file(Path(name): Path<String>) -> Response {
    serve(&name)
}

/// The asset named `name` with the console's headers, or 404.
fn serve(name: &str) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return secured(StatusCode::NOT_FOUND.into_response());
    };
    let mut response = asset
        .bytes
        .with_content_type(asset.media_type)
        .into_response();
    // The assets change with the binary: revalidate rather than serve a stale page after an
    // upgrade (they are small and local).
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    secured(response)
}

/// The headers every console answer carries.
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use poem::{Endpoint, Request};

    use super::*;

    async fn get(path: &str) -> Response {
        let app = Route::new().nest("/console", routes());
        app.call(Request::builder().uri_str(path).finish())
            .await
            .unwrap_or_else(|e| e.into_response())
    }

    fn header<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
        response.headers().get(name).and_then(|v| v.to_str().ok())
    }

    #[tokio::test]
    async fn the_page_and_its_assets_are_served_with_the_security_headers() {
        for (path, media_type) in [
            ("/console", "text/html; charset=utf-8"),
            ("/console/", "text/html; charset=utf-8"),
            ("/console/console.js", "text/javascript; charset=utf-8"),
            ("/console/console.css", "text/css; charset=utf-8"),
            ("/console/api.js", "text/javascript; charset=utf-8"),
            ("/console/secret.txt", ""),
        ] {
            let response = get(path).await;
            let expected = if media_type.is_empty() {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::OK
            };
            assert_eq!(response.status(), expected, "{path}");
            if !media_type.is_empty() {
                assert_eq!(
                    header(&response, "content-type"),
                    Some(media_type),
                    "{path}"
                );
            }
            for (name, value) in [
                ("content-security-policy", CONTENT_SECURITY_POLICY),
                ("x-frame-options", "DENY"),
                ("referrer-policy", "no-referrer"),
                ("x-content-type-options", "nosniff"),
            ] {
                assert_eq!(header(&response, name), Some(value), "{name} of {path}");
            }
        }
    }

    #[test]
    fn the_page_has_no_inline_script_and_loads_only_its_own_assets() {
        let html = std::str::from_utf8(ASSETS[0].bytes).expect("utf-8");
        let mut rest = html;
        while let Some(at) = rest.find("<script") {
            let tag_end = rest[at..].find('>').expect("a closed tag") + at;
            let tag = &rest[at..=tag_end];
            assert!(
                tag.contains("src=\"/console/console.js\""),
                "only console.js: {tag}"
            );
            assert!(
                rest[tag_end + 1..].trim_start().starts_with("</script>"),
                "no inline script after {tag}"
            );
            rest = &rest[tag_end..];
        }
        assert!(!html.contains(" on"), "no inline event handler attributes");
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn every_module_the_scripts_import_is_served() {
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.bytes).expect("utf-8");
            let imports = text
                .lines()
                .filter(|l| l.starts_with("import ") || l.starts_with("} from "))
                .filter_map(|l| l.split_once("from \"").map(|(_, rest)| (l, rest)));
            for (line, rest) in imports {
                let module = rest.split('"').next().unwrap_or_default();
                let name = module
                    .strip_prefix("./")
                    .unwrap_or_else(|| panic!("{}: a relative import only: {line}", asset.name));
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "{} imports {name}, which is not served",
                    asset.name
                );
            }
        }
    }
}
