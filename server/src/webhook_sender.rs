//! The HTTP client that delivers webhooks: one per process, shared by every delivery.
//!
//! Every request goes to a URL that a platform chose, so the client is built to trust nothing
//! about the other end:
//! - Targets are checked after name resolution, in the client's own resolver
//!   (`CheckedResolver`), so the address connected to is the address checked; a check before
//!   sending and a second lookup by the client could answer differently (DNS rebinding). IP
//!   addresses in the URL never reach a resolver, so those are checked before sending.
//! - No proxy, not even one from `HTTP_PROXY`/`HTTPS_PROXY`: through a proxy, the proxy would
//!   resolve the name and the address check would judge the proxy instead of the target.
//! - No redirects: a redirect is a new URL that passed none of the checks (a public receiver
//!   could answer `302 Location: http://169.254.169.254/`), and Standard Webhooks has receivers
//!   answer 2xx at the registered URL. A 3xx is a failed attempt.
//! - One deadline for the whole exchange (resolution, connection, request, the response read),
//!   so a receiver that accepts and never answers costs one bounded wait; connecting has a
//!   shorter one of its own so an unreachable address fails early.
//! - The response body is read up to 64 KiB and then the connection is dropped: a receiver's
//!   answer is not needed beyond its status, and one that streams without end must cost neither
//!   memory nor time. A short body is read to its end so the connection can be reused.
//! - At most `max_in_flight` requests at once (a semaphore), so slow receivers cannot take every
//!   socket and task of the process.
//!
//! An attempt's error is a short sentence for the platform's delivery log: the cause (timed
//! out, connection refused, not allowed), never bankd's internals.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::Semaphore;

use crate::domain::webhook_targets::{self, TargetError, WebhookTarget};

/// How much of a response body is read.
const MAX_RESPONSE_BODY: usize = 64 * 1024;

/// The longest wait for a connection (TCP and TLS handshakes), when the whole request may take
/// longer: an address that does not answer in this time will not, and its attempt should give
/// back its permit.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest error text kept from a lower layer, so a verbose TLS or I/O message cannot
/// swell a delivery log.
const MAX_ERROR_LEN: usize = 200;

/// How the process's webhook client behaves (from the configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SenderSettings {
    /// The deadline of one attempt, from resolution to the end of the response read.
    pub timeout: Duration,
    /// Whether targets on loopback, private and other non-public addresses are allowed (a
    /// deployment whose receivers are on its own network; tests).
    pub allow_private_targets: bool,
    /// Requests in flight at once, across every delivery of the process.
    pub max_in_flight: usize,
    /// The `User-Agent` of every request.
    pub user_agent: String,
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SenderError {
    /// A limit of zero would make every send wait forever.
    #[error("webhook max_in_flight must be at least 1")]
    NoneInFlight,
    /// The HTTP client refused the settings (e.g. a user agent that is not a header value).
    #[error("the webhook HTTP client cannot be built: {0}")]
    Client(#[source] reqwest::Error),
}

/// What one delivery attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The receiver's status, when it answered.
    pub status: Option<u16>,
    /// From sending (after any wait for a permit) to the end of the response read.
    pub latency_ms: u64,
    /// Why the attempt failed, when the receiver gave no usable answer (or redirected); `None`
    /// when the status alone says how it went.
    pub error: Option<String>,
    /// Whether the receiver answered 2xx.
    pub succeeded: bool,
}

/// The process's webhook client. Cloning is cheap and shares the connection pool and the
/// in-flight limit.
#[derive(Clone)]
pub struct WebhookSender {
    client: reqwest::Client,
    permits: Arc<Semaphore>,
    timeout: Duration,
    allow_private: bool,
}

impl std::fmt::Debug for WebhookSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSender")
            .field("timeout", &self.timeout)
            .field("allow_private", &self.allow_private)
            .field("available_permits", &self.permits.available_permits())
            .finish_non_exhaustive()
    }
}

impl WebhookSender {
    /// Builds the client once: no redirects, no proxy, the checking resolver, the deadlines.
    pub fn new(settings: SenderSettings) -> Result<Self, SenderError> {
        if settings.max_in_flight == 0 {
            return Err(SenderError::NoneInFlight);
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(MAX_CONNECT_TIMEOUT))
            .dns_resolver(Arc::new(CheckedResolver {
                allow_private: settings.allow_private_targets,
            }))
            .user_agent(settings.user_agent)
            .build()
            .map_err(SenderError::Client)?;
        Ok(WebhookSender {
            client,
            // The semaphore's own ceiling is far above any socket count; clamping keeps its
            // constructor from refusing a configured "unlimited".
            permits: Arc::new(Semaphore::new(
                settings.max_in_flight.min(Semaphore::MAX_PERMITS),
            )),
            timeout: settings.timeout,
            allow_private: settings.allow_private_targets,
        })
    }

    /// POSTs `body` as `application/json` with `headers` to `target`, waiting first for a
    /// permit if `max_in_flight` requests are under way. Never fails: what went wrong is in the
    /// [`Attempt`].
    pub async fn send(
        &self,
        target: &WebhookTarget,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Attempt {
        let Ok(_permit) = self.permits.acquire().await else {
            // Only a closed semaphore refuses, and this one is never closed.
            return failed(Duration::ZERO, "the webhook sender is shut down".to_owned());
        };
        let started = Instant::now();
        let headers = match header_map(headers) {
            Ok(headers) => headers,
            Err(message) => return failed(started.elapsed(), message),
        };
        // One deadline of our own over the client's: it covers every step (the address check
        // of an IP literal too) whatever the client counts in its own, and the body read after
        // the status.
        let deadline = tokio::time::Instant::now() + self.timeout;
        let response =
            match tokio::time::timeout_at(deadline, self.request(target, headers, body)).await {
                Ok(Ok(response)) => response,
                Ok(Err(message)) => return failed(started.elapsed(), message),
                Err(_) => return failed(started.elapsed(), timed_out(self.timeout)),
            };
        let status = response.status().as_u16();
        // The status is the answer: a body that fails (a receiver closing early) or stalls past
        // the deadline does not undo a 2xx, so the read's outcome is not looked at.
        let _ = tokio::time::timeout_at(deadline, read_bounded(response)).await;
        answered(started.elapsed(), status)
    }

    /// The request up to the response's head: the response, or why there is none.
    async fn request(
        &self,
        target: &WebhookTarget,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, String> {
        if is_ip_literal(target) {
            webhook_targets::resolve(target, self.allow_private)
                .await
                .map_err(|e| e.to_string())?;
        }
        self.client
            .post(target.url().clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| describe(&e, self.timeout))
    }
}

/// Reads at most about [`MAX_RESPONSE_BODY`] bytes of the body (a chunk may end past it) and
/// drops the rest: the response is dropped on return, which closes the connection if the body
/// was not read to its end, and that is what stops a receiver that sends without end. Each
/// chunk is dropped once counted, so memory stays at one chunk whatever the receiver sends.
async fn read_bounded(mut response: reqwest::Response) {
    let mut read = 0usize;
    while read < MAX_RESPONSE_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => read += chunk.len(),
            Ok(None) | Err(_) => return,
        }
    }
}

/// The request headers: `content-type: application/json` and then `headers`, which replace a
/// header of the same name. A name or value that is not valid in HTTP is refused here, as the
/// caller's bug, rather than sent half-formed.
fn header_map(headers: &[(&str, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name {name:?}"))?;
        let value =
            HeaderValue::from_str(value).map_err(|_| format!("invalid value of header {name}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Whether the URL's host is an IP address, which the client connects to without resolving.
fn is_ip_literal(target: &WebhookTarget) -> bool {
    matches!(
        target.url().host(),
        Some(url::Host::Ipv4(_) | url::Host::Ipv6(_))
    )
}

/// The attempt for a receiver that answered `status`.
fn answered(elapsed: Duration, status: u16) -> Attempt {
    let error = (300..400)
        .contains(&status)
        .then(|| "redirect not followed".to_owned());
    Attempt {
        status: Some(status),
        latency_ms: millis(elapsed),
        error,
        succeeded: (200..300).contains(&status),
    }
}

/// The attempt for a request that got no answer.
fn failed(elapsed: Duration, error: String) -> Attempt {
    Attempt {
        status: None,
        latency_ms: millis(elapsed),
        error: Some(error),
        succeeded: false,
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn timed_out(timeout: Duration) -> String {
    format!("timed out after {} ms", millis(timeout))
}

/// A client error as a short cause. The address check's refusal is found in the error's chain
/// (the resolver returned it); I/O causes are named; anything else is the innermost cause's own
/// text (a TLS certificate problem, a closed connection), shortened.
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if let Some(refused) = find::<TargetError>(e) {
        return refused.to_string();
    }
    if e.is_timeout() {
        return timed_out(timeout);
    }
    if let Some(io) = find::<std::io::Error>(e) {
        use std::io::ErrorKind;
        match io.kind() {
            ErrorKind::ConnectionRefused => return "connection refused".to_owned(),
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
                return "connection reset by the receiver".to_owned();
            }
            ErrorKind::TimedOut => return timed_out(timeout),
            _ => {}
        }
    }
    let cause = shorten(innermost(e).to_string());
    if e.is_connect() {
        format!("could not connect: {cause}")
    } else {
        format!("the request failed: {cause}")
    }
}

/// The first error of type `T` in `e`'s chain of sources.
fn find<'e, T: StdError + 'static>(e: &'e (dyn StdError + 'static)) -> Option<&'e T> {
    let mut current = Some(e);
    while let Some(error) = current {
        if let Some(found) = error.downcast_ref::<T>() {
            return Some(found);
        }
        current = error.source();
    }
    None
}

/// The last error in `e`'s chain of sources: the cause, without the layers' prefixes.
fn innermost<'e>(e: &'e (dyn StdError + 'static)) -> &'e (dyn StdError + 'static) {
    let mut current = e;
    while let Some(source) = current.source() {
        current = source;
    }
    current
}

fn shorten(mut text: String) -> String {
    if text.len() > MAX_ERROR_LEN {
        let mut end = MAX_ERROR_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The client's resolver: [`webhook_targets::resolve_name`], so every address the client may
/// connect to for a name has passed the address check. Port 0 in the answer tells the client to
/// use the URL's port.
struct CheckedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            match webhook_targets::resolve_name(name.as_str(), 0, allow_private).await {
                Ok(addrs) => {
                    let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
                    Ok(addrs)
                }
                Err(refused) => Err(Box::new(refused) as Box<dyn StdError + Send + Sync>),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    fn settings(timeout_ms: u64, allow_private_targets: bool) -> SenderSettings {
        SenderSettings {
            timeout: Duration::from_millis(timeout_ms),
            allow_private_targets,
            max_in_flight: 4,
            user_agent: "bankd-webhooks-test".to_owned(),
        }
    }

    fn sender(settings: SenderSettings) -> WebhookSender {
        match WebhookSender::new(settings) {
            Ok(sender) => sender,
            Err(e) => panic!("the sender does not build: {e}"),
        }
    }

    fn target(url: &str) -> WebhookTarget {
        match WebhookTarget::parse(url) {
            Ok(target) => target,
            Err(e) => panic!("{url}: {e}"),
        }
    }

    async fn listener() -> (TcpListener, u16) {
        let listener = match TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(e) => panic!("cannot bind a loopback port: {e}"),
        };
        let port = match listener.local_addr() {
            Ok(addr) => addr.port(),
            Err(e) => panic!("no local address: {e}"),
        };
        (listener, port)
    }

    /// Reads one HTTP/1.1 request (head and a `content-length` body) and returns it as text.
    async fn read_request(stream: &mut TcpStream) -> String {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&buf).into_owned();
            if let Some(head_end) = text.find("\r\n\r\n") {
                let length = text[..head_end]
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())
                            .flatten()
                    })
                    .unwrap_or(0);
                if buf.len() >= head_end + 4 + length {
                    return text;
                }
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).into_owned(),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// A receiver for one request that answers `response` and returns the request it read.
    fn answer_once(
        listener: TcpListener,
        response: &'static str,
    ) -> tokio::task::JoinHandle<String> {
        tokio::spawn(async move {
            let Ok((mut stream, _)) = listener.accept().await else {
                return String::new();
            };
            let request = read_request(&mut stream).await;
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
            request
        })
    }

    /// Whether `listener` gets a connection within `wait`.
    async fn connected_within(listener: &TcpListener, wait: Duration) -> bool {
        tokio::time::timeout(wait, listener.accept()).await.is_ok()
    }

    #[tokio::test]
    async fn a_2xx_answer_succeeds_and_the_receiver_gets_the_headers_and_body() {
        let (listener, port) = listener().await;
        let receiver = answer_once(
            listener,
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
        );
        let body = br#"{"type":"transfer.settled","data":{"id":"tr_1"}}"#.to_vec();
        let attempt = sender(settings(5_000, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/hooks/bankd")),
                &[
                    ("webhook-id", "msg_1".to_owned()),
                    ("webhook-timestamp", "1614265330".to_owned()),
                    ("webhook-signature", "v1,abc=".to_owned()),
                ],
                body.clone(),
            )
            .await;
        assert_eq!(attempt.status, Some(200));
        assert!(attempt.succeeded, "{attempt:?}");
        assert_eq!(attempt.error, None);
        assert!(attempt.latency_ms < 5_000, "{attempt:?}");

        let request = match receiver.await {
            Ok(request) => request,
            Err(e) => panic!("the receiver failed: {e}"),
        };
        let lower = request.to_ascii_lowercase();
        assert!(
            request.starts_with("POST /hooks/bankd HTTP/1.1\r\n"),
            "{request}"
        );
        for header in [
            "content-type: application/json\r\n",
            "webhook-id: msg_1\r\n",
            "webhook-timestamp: 1614265330\r\n",
            "webhook-signature: v1,abc=\r\n",
            "user-agent: bankd-webhooks-test\r\n",
        ] {
            assert!(lower.contains(header), "{header} missing from {request}");
        }
        assert!(
            request.ends_with(&format!("\r\n\r\n{}", String::from_utf8_lossy(&body))),
            "{request}"
        );
    }

    #[tokio::test]
    async fn a_500_answer_fails_with_its_status() {
        let (listener, port) = listener().await;
        let _receiver = answer_once(
            listener,
            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\noops",
        );
        let attempt = sender(settings(5_000, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/")),
                &[],
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(attempt.status, Some(500));
        assert!(!attempt.succeeded);
        assert_eq!(attempt.error, None);
    }

    #[tokio::test]
    async fn a_redirect_is_not_followed_and_fails() {
        let (elsewhere, elsewhere_port) = listener().await;
        let (listener, port) = listener().await;
        let response: &'static str = Box::leak(
            format!(
                "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{elsewhere_port}/\r\n\
                 content-length: 0\r\nconnection: close\r\n\r\n"
            )
            .into_boxed_str(),
        );
        let _receiver = answer_once(listener, response);
        let attempt = sender(settings(5_000, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/")),
                &[],
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(attempt.status, Some(302));
        assert!(!attempt.succeeded);
        assert_eq!(attempt.error.as_deref(), Some("redirect not followed"));
        assert!(
            !connected_within(&elsewhere, Duration::from_millis(200)).await,
            "the redirect was followed"
        );
    }

    #[tokio::test]
    async fn a_receiver_that_never_answers_times_out_within_the_timeout() {
        let (listener, port) = listener().await;
        let _receiver = tokio::spawn(async move {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let _ = read_request(&mut stream).await;
            // Holds the connection open, silent, well past the sender's timeout.
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        let started = Instant::now();
        let attempt = sender(settings(300, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/")),
                &[],
                b"{}".to_vec(),
            )
            .await;
        let elapsed = started.elapsed();
        assert_eq!(attempt.status, None);
        assert!(!attempt.succeeded);
        assert_eq!(attempt.error.as_deref(), Some("timed out after 300 ms"));
        assert!(elapsed >= Duration::from_millis(290), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }

    #[tokio::test]
    async fn a_2xx_whose_body_stalls_still_succeeds_at_the_deadline() {
        let (listener, port) = listener().await;
        let _receiver = tokio::spawn(async move {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let _ = read_request(&mut stream).await;
            // Promises ten bytes, sends two, then goes silent.
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nok")
                .await;
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        let started = Instant::now();
        let attempt = sender(settings(300, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/")),
                &[],
                b"{}".to_vec(),
            )
            .await;
        let elapsed = started.elapsed();
        assert_eq!(attempt.status, Some(200));
        assert!(attempt.succeeded, "{attempt:?}");
        assert_eq!(attempt.error, None);
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }

    #[tokio::test]
    async fn a_refused_connection_fails_with_a_short_error() {
        let (listener, port) = listener().await;
        drop(listener);
        let attempt = sender(settings(5_000, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/")),
                &[],
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(attempt.status, None);
        assert!(!attempt.succeeded);
        assert_eq!(attempt.error.as_deref(), Some("connection refused"));
    }

    #[tokio::test]
    async fn a_receiver_streaming_an_endless_body_is_cut_off_after_64_kib() {
        let (listener, port) = listener().await;
        let receiver = tokio::spawn(async move {
            let Ok((mut stream, _)) = listener.accept().await else {
                return (0usize, false);
            };
            let _ = read_request(&mut stream).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-length: 1073741824\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return (0, false);
            }
            let chunk = vec![b'x'; 64 * 1024];
            let mut written = 0usize;
            // Bounded: stops when the sender drops the connection, or after 1 GiB.
            while written < 1 << 30 {
                match stream.write_all(&chunk).await {
                    Ok(()) => written += chunk.len(),
                    Err(_) => return (written, true),
                }
            }
            (written, false)
        });
        let started = Instant::now();
        let attempt = sender(settings(10_000, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/")),
                &[],
                b"{}".to_vec(),
            )
            .await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(attempt.status, Some(200));
        assert!(attempt.succeeded, "{attempt:?}");
        assert_eq!(attempt.error, None);

        let (written, cut_off) = match tokio::time::timeout(Duration::from_secs(5), receiver).await
        {
            Ok(Ok(outcome)) => outcome,
            other => panic!("the receiver did not stop: {other:?}"),
        };
        assert!(
            cut_off,
            "the receiver was never cut off ({written} bytes written)"
        );
        // What the kernel's socket buffers hold, not the gibibyte announced.
        assert!(
            written < 256 << 20,
            "{written} bytes were taken before the cut"
        );
    }

    #[tokio::test]
    async fn a_private_target_is_refused_unless_private_targets_are_allowed() {
        let (listener, port) = listener().await;
        for url in [
            format!("http://127.0.0.1:{port}/"),
            // A name goes through the client's resolver, which refuses it too.
            format!("http://localhost:{port}/"),
        ] {
            let attempt = sender(settings(5_000, false))
                .send(&target(&url), &[], b"{}".to_vec())
                .await;
            assert_eq!(attempt.status, None, "{url}");
            assert!(!attempt.succeeded, "{url}");
            assert_eq!(
                attempt.error.as_deref(),
                Some(
                    TargetError::Private(Ipv4Addr::LOCALHOST.into())
                        .to_string()
                        .as_str()
                ),
                "{url}"
            );
            assert!(
                attempt
                    .error
                    .as_deref()
                    .is_some_and(|e| e.contains("may not be sent to")),
                "{url}: {attempt:?}"
            );
        }
        assert!(
            !connected_within(&listener, Duration::from_millis(100)).await,
            "a refused target was connected to"
        );

        let _receiver = answer_once(
            listener,
            "HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n",
        );
        let attempt = sender(settings(5_000, true))
            .send(
                &target(&format!("http://localhost:{port}/")),
                &[],
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(attempt.status, Some(204), "{attempt:?}");
        assert!(attempt.succeeded);
    }

    #[tokio::test]
    async fn sends_beyond_max_in_flight_wait_for_a_permit() {
        let (listener, port) = listener().await;
        let open = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (open2, most2) = (Arc::clone(&open), Arc::clone(&most));
        let _receiver = tokio::spawn(async move {
            for _ in 0..3 {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let (open, most) = (Arc::clone(&open2), Arc::clone(&most2));
                tokio::spawn(async move {
                    let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let _ = read_request(&mut stream).await;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    // Counted closed before answering, so the next permit's connection
                    // cannot be counted while this one still is.
                    open.fetch_sub(1, Ordering::SeqCst);
                    let _ = stream
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        )
                        .await;
                });
            }
        });
        let sender = sender(SenderSettings {
            max_in_flight: 1,
            ..settings(5_000, true)
        });
        let url = target(&format!("http://127.0.0.1:{port}/"));
        let sends: Vec<_> = (0..3)
            .map(|_| {
                let (sender, url) = (sender.clone(), url.clone());
                tokio::spawn(async move { sender.send(&url, &[], b"{}".to_vec()).await })
            })
            .collect();
        for send in sends {
            match send.await {
                Ok(attempt) => assert_eq!(attempt.status, Some(200), "{attempt:?}"),
                Err(e) => panic!("a send panicked: {e}"),
            }
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_limit_of_zero_in_flight_is_refused() {
        let refused = WebhookSender::new(SenderSettings {
            max_in_flight: 0,
            ..settings(1_000, false)
        });
        assert!(
            matches!(refused, Err(SenderError::NoneInFlight)),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn a_header_value_with_a_line_break_is_refused_before_sending() {
        let (listener, port) = listener().await;
        let attempt = sender(settings(5_000, true))
            .send(
                &target(&format!("http://127.0.0.1:{port}/")),
                &[("webhook-id", "msg_1\r\nx-injected: 1".to_owned())],
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(attempt.status, None);
        assert_eq!(
            attempt.error.as_deref(),
            Some("invalid value of header webhook-id")
        );
        assert!(!connected_within(&listener, Duration::from_millis(100)).await);
    }
}
