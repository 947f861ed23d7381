//! Where a webhook may be sent: the URL rules a platform's endpoint must meet, and the address
//! check that keeps deliveries off bankd's own network.
//!
//! A webhook is a request that bankd makes to a URL a client chose, so without these rules it
//! would be a way for any platform to reach what only bankd can reach (server-side request
//! forgery): the cloud metadata service at 169.254.169.254, a database on 10.0.0.5, an admin
//! port on 127.0.0.1. Hence:
//! - Only `http` and `https`, with a host and at most 2 048 characters (the contract's bound,
//!   so a stored URL fits every log line and page it is shown in).
//! - No user name or password: credentials in a URL would be stored and shown wherever the URL
//!   is (API answers, delivery logs) and sent as Basic authentication; a receiver authenticates
//!   bankd by the signature instead. They also make misleading URLs
//!   (`https://bank.example@attacker.example/`).
//! - No fragment: a client never sends it, so a URL with one is not the request that would be
//!   made, and two URLs that differ only there would name the same endpoint.
//! - Addresses are judged after name resolution, and every address a name resolves to must be
//!   public: a check of the name alone is defeated by a name that resolves to a private address
//!   (or to one public and one private address, of which the connection may use either), and a
//!   check at registration alone by DNS rebinding (the name resolves to a public address when
//!   registered and to a private one when delivered to). The sender therefore connects only to
//!   the addresses this check returned ([`resolve_name`] is its client's resolver).
//! - IP addresses are judged by the [`std::net::IpAddr`] the URL parser produced, never by the
//!   text, so the other spellings of an address (`0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`)
//!   are judged as the address they are.
//!
//! Refusing private addresses is the default; a deployment whose receivers are on its own
//! network (and every test with a loopback receiver) allows them explicitly.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The longest URL accepted, in characters.
pub const MAX_URL_LEN: usize = 2048;

/// Why a webhook URL was refused. The text of each says what is wrong with the URL in terms the
/// platform can act on (it becomes a 400 `invalid_webhook_url`), with nothing about bankd's
/// network or resolver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Not a URL, or a URL without a host; the text is the parser's (e.g. "invalid port
    /// number").
    #[error("the URL is malformed: {0}")]
    Malformed(String),
    /// More than [`MAX_URL_LEN`] characters, as given or once normalized.
    #[error("the URL is longer than 2048 characters")]
    TooLong,
    /// A scheme other than `http` and `https`.
    #[error("the URL's scheme must be http or https")]
    Scheme,
    /// A user name or password before the host.
    #[error("the URL may not contain a user name or password")]
    UserInfo,
    /// A `#fragment`.
    #[error("the URL may not contain a fragment (#...)")]
    Fragment,
    /// The host name has no address (the name is the platform's own input).
    #[error("the URL's host {0} does not resolve to any address")]
    Unresolvable(String),
    /// The host is or resolves to an address that is not public. The address is kept for the
    /// server's log but not shown: for a name, it would tell a client what bankd's resolver
    /// knows of names inside its network.
    #[error(
        "the URL's host is or resolves to an address that webhooks may not be sent to \
         (loopback, private, link-local or otherwise not public)"
    )]
    Private(IpAddr),
}

/// A webhook URL that meets the URL rules (not yet the address rule, which needs name
/// resolution at the time of sending: [`resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    url: url::Url,
}

impl WebhookTarget {
    /// Parses and checks a URL: `http` or `https`, a host, at most 2 048 characters, no user
    /// information and no fragment. The URL is kept in the parser's normalized form (lower-case
    /// scheme and host, IDNA host, default port dropped), the form stored and sent.
    pub fn parse(s: &str) -> Result<Self, TargetError> {
        // Checked before parsing too, so an oversized input costs no parse.
        if s.chars().count() > MAX_URL_LEN {
            return Err(TargetError::TooLong);
        }
        let url = url::Url::parse(s).map_err(|e| TargetError::Malformed(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TargetError::Scheme);
        }
        // The parser refuses an empty host for http and https; this keeps the rule true of
        // every value whatever the parser's version.
        if url.host().is_none() {
            return Err(TargetError::Malformed("empty host".to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetError::UserInfo);
        }
        if url.fragment().is_some() {
            return Err(TargetError::Fragment);
        }
        // Normalizing may lengthen the text (percent-encoding, punycode); the normalized form
        // is the one stored, so it is held to the same bound.
        if url.as_str().chars().count() > MAX_URL_LEN {
            return Err(TargetError::TooLong);
        }
        Ok(WebhookTarget { url })
    }

    /// The normalized URL.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The host as written in the URL: a name, an IPv4 address, or an IPv6 address in
    /// brackets.
    pub fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }

    /// The port, the scheme's default when the URL has none.
    pub fn port(&self) -> u16 {
        match self.url.port_or_known_default() {
            Some(port) => port,
            None if self.url.scheme() == "https" => 443,
            None => 80,
        }
    }

    /// The parsed URL, for the HTTP client.
    pub fn url(&self) -> &url::Url {
        &self.url
    }
}

/// Whether `ip` is an address webhooks may be sent to without allowing private targets: a
/// public unicast address. Addresses that embed an IPv4 address (IPv4-mapped and -compatible,
/// NAT64, 6to4) are judged by that address, as that is where the packets end up.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// Whether `ip` is in `base/prefix` (IPv4).
fn in_v4(ip: Ipv4Addr, base: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(base)) & mask
}

/// Whether `ip` is in `base/prefix` (IPv6).
fn in_v6(ip: Ipv6Addr, base: [u16; 8], prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(base)) & mask
}

/// IPv4: everything but the special-purpose ranges (IANA's registry) that are not globally
/// reachable.
fn is_public_v4(ip: Ipv4Addr) -> bool {
    const REFUSED: &[([u8; 4], u32)] = &[
        ([0, 0, 0, 0], 8),       // "this network", with the unspecified 0.0.0.0
        ([10, 0, 0, 0], 8),      // private
        ([100, 64, 0, 0], 10),   // carrier-grade NAT
        ([127, 0, 0, 0], 8),     // loopback
        ([169, 254, 0, 0], 16),  // link-local, with the cloud metadata service
        ([172, 16, 0, 0], 12),   // private
        ([192, 0, 0, 0], 24),    // IETF protocol assignments
        ([192, 0, 2, 0], 24),    // documentation
        ([192, 168, 0, 0], 16),  // private
        ([198, 18, 0, 0], 15),   // benchmarking
        ([198, 51, 100, 0], 24), // documentation
        ([203, 0, 113, 0], 24),  // documentation
        ([224, 0, 0, 0], 4),     // multicast
        ([240, 0, 0, 0], 4),     // reserved, with the broadcast 255.255.255.255
    ];
    !REFUSED
        .iter()
        .any(|&(base, prefix)| in_v4(ip, base, prefix))
}

/// IPv6: only global unicast (2000::/3, where every public address is allocated) less its
/// documentation and tunnel ranges; addresses that embed an IPv4 address are judged by it.
/// An allow-list rather than a deny-list, so loopback, unspecified, unique-local, link-local,
/// site-local and multicast are refused without being named.
fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let embedded_low = || {
        let [.., a, b, c, d] = ip.octets();
        Ipv4Addr::new(a, b, c, d)
    };
    // IPv4-mapped (::ffff:0:0/96) and IPv4-compatible (::/96, deprecated; includes :: and ::1,
    // which judged as 0.0.0.0 and 0.0.0.1 are refused too).
    if in_v6(ip, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96) || in_v6(ip, [0; 8], 96) {
        return is_public_v4(embedded_low());
    }
    // NAT64 (64:ff9b::/96): a gateway forwards to the embedded IPv4 address.
    if in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return is_public_v4(embedded_low());
    }
    // 6to4 (2002::/16): a relay forwards to the IPv4 address in bits 16..48.
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let [hi, lo] = [segments[1], segments[2]];
        let v4 = Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
        return is_public_v4(v4);
    }
    const REFUSED: &[([u16; 8], u32)] = &[
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 32), // Teredo: a tunnel to an unchecked address
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // documentation (RFC 9637)
    ];
    in_v6(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3)
        && !REFUSED
            .iter()
            .any(|&(base, prefix)| in_v6(ip, base, prefix))
}

/// The socket addresses to connect to for `target`: its IP address, or every address its name
/// resolves to, each checked with [`is_public`] unless `allow_private`. All must pass, not one:
/// the connection may use any of them. An IP address in the URL is checked without a lookup.
///
/// The lookup has no timeout of its own (the system resolver's applies); the sender runs it
/// inside its request timeout.
pub async fn resolve(
    target: &WebhookTarget,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, TargetError> {
    let port = target.port();
    let addrs: Vec<SocketAddr> = match target.url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(url::Host::Domain(name)) => return resolve_name(name, port, allow_private).await,
        None => return Err(TargetError::Malformed("empty host".to_owned())),
    };
    check_addresses(target.host(), addrs, allow_private)
}

/// The addresses of a host name with `port`, by the system resolver, each checked as
/// [`resolve`] checks them. The HTTP client's resolver calls this, so that the addresses it
/// connects to are the ones checked (a lookup before sending and another when connecting could
/// answer differently).
pub async fn resolve_name(
    name: &str,
    port: u16,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, TargetError> {
    // The resolver's own error (NXDOMAIN, no network, ...) is not shown: to the platform, the
    // name has no address.
    let addrs = match tokio::net::lookup_host((name, port)).await {
        Ok(addrs) => addrs.collect(),
        Err(_) => return Err(TargetError::Unresolvable(name.to_owned())),
    };
    check_addresses(name, addrs, allow_private)
}

/// `addrs` if there is at least one and each is allowed; `host` names the target in the error.
fn check_addresses(
    host: &str,
    addrs: Vec<SocketAddr>,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, TargetError> {
    if addrs.is_empty() {
        return Err(TargetError::Unresolvable(host.to_owned()));
    }
    if !allow_private && let Some(refused) = addrs.iter().find(|a| !is_public(a.ip())) {
        return Err(TargetError::Private(refused.ip()));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        match text.parse() {
            Ok(ip) => ip,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    fn target(text: &str) -> WebhookTarget {
        match WebhookTarget::parse(text) {
            Ok(target) => target,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    #[test]
    fn every_refused_ipv4_range_is_not_public() {
        for refused in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "169.254.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!is_public(ip(refused)), "{refused} was judged public");
        }
    }

    #[test]
    fn every_refused_ipv6_range_is_not_public() {
        for refused in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::ffff:0.0.0.0",
            "::127.0.0.1",
            "::192.168.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "fc00::1",
            "fd12:3456:789a::1",
            "fe80::1",
            "febf:ffff::1",
            "fec0::1",
            "ff02::1",
            "ff0e::1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "3fff::1",
        ] {
            assert!(!is_public(ip(refused)), "{refused} was judged public");
        }
    }

    #[test]
    fn public_addresses_are_accepted() {
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "169.253.255.255",
            "192.169.0.1",
            "223.255.255.254",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(is_public(ip(public)), "{public} was refused");
        }
    }

    #[test]
    fn an_http_or_https_url_with_a_host_is_accepted_and_normalized() {
        let t = target("HTTPS://Hooks.Example.COM/bankd/events?v=1");
        assert_eq!(t.as_str(), "https://hooks.example.com/bankd/events?v=1");
        assert_eq!(t.host(), "hooks.example.com");
        assert_eq!(t.port(), 443);
        let t = target("http://hooks.example.com:8080/x");
        assert_eq!(t.port(), 8080);
        assert_eq!(target("http://hooks.example.com/").port(), 80);
        assert_eq!(
            target("https://hooks.example.com:443/").as_str(),
            "https://hooks.example.com/"
        );
        assert_eq!(target("http://[2606:4700::1]/").host(), "[2606:4700::1]");
    }

    #[test]
    fn a_scheme_other_than_http_or_https_is_refused() {
        for url in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "gopher://example.com/",
            "ws://example.com/",
        ] {
            assert_eq!(WebhookTarget::parse(url), Err(TargetError::Scheme), "{url}");
        }
    }

    #[test]
    fn a_url_of_2049_characters_is_refused_and_one_of_2048_accepted() {
        let prefix = "https://example.com/";
        let fits = format!("{prefix}{}", "a".repeat(MAX_URL_LEN - prefix.len()));
        assert_eq!(fits.len(), 2048);
        assert_eq!(
            WebhookTarget::parse(&fits).map(|t| t.as_str().len()),
            Ok(2048)
        );
        let over = format!("{fits}a");
        assert_eq!(WebhookTarget::parse(&over), Err(TargetError::TooLong));
    }

    #[test]
    fn a_url_that_normalizing_lengthens_past_the_bound_is_refused() {
        // 420 characters as given; each "é" is six ("%C3%A9") in the stored form.
        let given = format!("https://example.com/{}", "é".repeat(400));
        assert_eq!(given.chars().count(), 420);
        assert_eq!(WebhookTarget::parse(&given), Err(TargetError::TooLong));
    }

    #[test]
    fn a_user_name_or_password_is_refused() {
        for url in [
            "https://user:pass@example.com/",
            "https://user@example.com/",
            "https://:pass@example.com/",
            "https://bank.example@attacker.example/",
        ] {
            assert_eq!(
                WebhookTarget::parse(url),
                Err(TargetError::UserInfo),
                "{url}"
            );
        }
    }

    #[test]
    fn a_fragment_is_refused() {
        for url in ["https://example.com/hook#frag", "https://example.com/#"] {
            assert_eq!(
                WebhookTarget::parse(url),
                Err(TargetError::Fragment),
                "{url}"
            );
        }
    }

    #[test]
    fn text_that_is_not_an_absolute_url_with_a_host_is_malformed() {
        for bad in [
            "",
            "example.com/hook",
            "/hook",
            "https://",
            "https://exa mple.com/",
            "http://example.com:99999/",
        ] {
            assert!(
                matches!(WebhookTarget::parse(bad), Err(TargetError::Malformed(_))),
                "{bad}: {:?}",
                WebhookTarget::parse(bad)
            );
        }
        assert_eq!(
            WebhookTarget::parse("http://example.com:99999/").map_err(|e| e.to_string()),
            Err("the URL is malformed: invalid port number".to_owned())
        );
    }

    #[tokio::test]
    async fn ip_literals_of_refused_ranges_are_refused_without_a_lookup() {
        for (url, address) in [
            ("http://[::1]/", "::1"),
            ("http://0.0.0.0/", "0.0.0.0"),
            (
                "http://169.254.169.254/latest/meta-data/",
                "169.254.169.254",
            ),
            ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
            ("http://127.0.0.1:8080/", "127.0.0.1"),
            ("http://10.0.0.5/", "10.0.0.5"),
            ("https://[fe80::1]/", "fe80::1"),
            ("https://[fd00::1]/", "fd00::1"),
            // Other spellings of 127.0.0.1, judged as the address they are.
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://2130706433/", "127.0.0.1"),
        ] {
            assert_eq!(
                resolve(&target(url), false).await,
                Err(TargetError::Private(ip(address))),
                "{url}"
            );
        }
    }

    #[tokio::test]
    async fn ip_literals_of_refused_ranges_are_accepted_when_private_targets_are_allowed() {
        assert_eq!(
            resolve(&target("http://[::1]:8080/"), true).await,
            Ok(vec![SocketAddr::new(ip("::1"), 8080)])
        );
        assert_eq!(
            resolve(&target("https://169.254.169.254/"), true).await,
            Ok(vec![SocketAddr::new(ip("169.254.169.254"), 443)])
        );
    }

    #[tokio::test]
    async fn a_public_ip_literal_resolves_to_itself_with_the_default_port() {
        assert_eq!(
            resolve(&target("https://93.184.216.34/hook"), false).await,
            Ok(vec![SocketAddr::new(ip("93.184.216.34"), 443)])
        );
    }

    #[tokio::test]
    async fn localhost_resolves_to_loopback_and_is_refused_unless_allowed() {
        let t = target("http://localhost:9/");
        match resolve(&t, false).await {
            Err(TargetError::Private(address)) => assert!(address.is_loopback(), "{address}"),
            other => panic!("localhost was not refused: {other:?}"),
        }
        let addrs = match resolve(&t, true).await {
            Ok(addrs) => addrs,
            Err(e) => panic!("localhost did not resolve: {e}"),
        };
        assert!(!addrs.is_empty());
        for a in addrs {
            assert!(a.ip().is_loopback(), "{a}");
            assert_eq!(a.port(), 9);
        }
    }

    #[test]
    fn a_name_with_one_public_and_one_private_address_is_refused() {
        let addrs = vec![
            SocketAddr::new(ip("93.184.216.34"), 443),
            SocketAddr::new(ip("10.0.0.7"), 443),
        ];
        assert_eq!(
            check_addresses("mixed.example.com", addrs.clone(), false),
            Err(TargetError::Private(ip("10.0.0.7")))
        );
        assert_eq!(
            check_addresses("mixed.example.com", addrs.clone(), true),
            Ok(addrs)
        );
    }

    #[test]
    fn a_name_without_addresses_is_unresolvable() {
        assert_eq!(
            check_addresses("nowhere.example.com", Vec::new(), true),
            Err(TargetError::Unresolvable("nowhere.example.com".to_owned()))
        );
    }

    #[test]
    fn the_refusal_of_a_private_address_does_not_show_the_address() {
        let message = TargetError::Private(ip("10.1.2.3")).to_string();
        assert!(!message.contains("10.1.2.3"), "{message}");
        assert!(message.contains("may not be sent to"), "{message}");
    }
}
