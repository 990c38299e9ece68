//! Where a webhook may send: `http` or `https` URLs whose host resolves only to public
//! addresses (unless `webhooks_allow_private_networks`), checked when a webhook is saved and
//! again by the resolver of every delivery, which hands the HTTP client only the addresses it
//! checked, so a name that resolves elsewhere the second time (DNS rebinding) is refused too.
//!
//! Part of `webhooks` (layer 7 of `scripts/check-structure`): it may import only what
//! `webhooks` may (see `webhooks`' module documentation).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

use crate::error::{Error, Result};

/// Longest webhook URL, in characters.
pub const MAX_URL_LEN: usize = 2048;

/// How long resolving a webhook's host may take when it is saved.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// A webhook URL's host and port (the scheme's default when none is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// Checks the form of a webhook URL: `http` or `https`, a host, no credentials.
pub(crate) fn parse_url(url: &str) -> Result<Target> {
    let invalid = |message: &str| Error::validation("url", message);
    if url.is_empty() {
        return Err(invalid("This field may not be blank."));
    }
    if url.chars().count() > MAX_URL_LEN {
        return Err(Error::validation(
            "url",
            format!("Ensure this field has no more than {MAX_URL_LEN} characters."),
        ));
    }
    let uri: Uri = url.parse().map_err(|_| invalid("Enter a valid URL."))?;
    let port = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        _ => return Err(invalid("Enter a URL whose scheme is http or https.")),
    };
    let Some(authority) = uri.authority() else {
        return Err(invalid("Enter a valid URL."));
    };
    if authority.as_str().contains('@') {
        return Err(invalid(
            "A webhook URL may not hold credentials: receivers check the signature.",
        ));
    }
    let host = authority.host();
    if host.is_empty() {
        return Err(invalid("Enter a valid URL."));
    }
    Ok(Target {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        port: authority.port_u16().unwrap_or(port),
    })
}

/// Checks a webhook URL when it is saved: its form, and that its host resolves, within a few
/// seconds, only to addresses a webhook may send to.
pub(crate) fn check_url(url: &str, allow_private: bool) -> Result<()> {
    let target = parse_url(url)?;
    let addresses = resolve(&target, RESOLVE_TIMEOUT).map_err(|e| Error::validation("url", e))?;
    refuse_private(&target.host, &addresses, allow_private).map_err(|e| Error::validation("url", e))
}

/// The addresses of `target`'s host (an address itself, or a name looked up within `timeout`).
fn resolve(target: &Target, timeout: Duration) -> std::result::Result<Vec<SocketAddr>, String> {
    if let Ok(ip) = target.host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, target.port)]);
    }
    let unresolved = || format!("The host {} could not be resolved.", target.host);
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let name = (target.host.clone(), target.port);
    std::thread::Builder::new()
        .name("docmeta-resolve".into())
        .spawn(move || {
            let _ = tx.send(name.to_socket_addrs().map(Iterator::collect::<Vec<_>>));
        })
        .map_err(|_| unresolved())?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(addresses)) if !addresses.is_empty() => Ok(addresses),
        _ => Err(unresolved()),
    }
}

/// Refuses `addresses` of `host` unless every one is public (or private ones are allowed).
fn refuse_private(
    host: &str,
    addresses: &[SocketAddr],
    allow_private: bool,
) -> std::result::Result<(), String> {
    if allow_private {
        return Ok(());
    }
    match addresses.iter().find(|a| !is_public(a.ip())) {
        Some(a) => Err(format!(
            "The host {host} resolves to {}, which is not a public address \
             (see webhooks_allow_private_networks).",
            a.ip()
        )),
        None => Ok(()),
    }
}

/// Whether `ip` is a public (globally routed unicast) address: not loopback, link-local,
/// private, shared, multicast, broadcast, unspecified, reserved or for documentation. An IPv6
/// address that carries an IPv4 one (mapped, NAT64, 6to4) is judged by that address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => is_public_v4(a),
        IpAddr::V6(a) => is_public_v6(a),
    }
}

fn is_public_v4(a: Ipv4Addr) -> bool {
    let [o0, o1, o2, _] = a.octets();
    let not_public = o0 == 0 // "this network", 0.0.0.0 included
        || a.is_private() // 10/8, 172.16/12, 192.168/16
        || a.is_loopback() // 127/8
        || a.is_link_local() // 169.254/16
        || (o0 == 100 && o1 & 0xC0 == 64) // shared address space, 100.64/10
        || (o0 == 192 && o1 == 0 && o2 == 0) // IETF protocol assignments, 192.0.0/24
        || a.is_documentation() // 192.0.2/24, 198.51.100/24, 203.0.113/24
        || (o0 == 198 && o1 & 0xFE == 18) // benchmarking, 198.18/15
        || (o0 == 192 && o1 == 88 && o2 == 99) // 6to4 relay anycast
        || a.is_multicast() // 224/4
        || o0 >= 240; // reserved, and the broadcast address
    !not_public
}

fn is_public_v6(a: Ipv6Addr) -> bool {
    if let Some(v4) = a.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = a.segments();
    // NAT64's well-known prefix 64:ff9b::/96 reaches the IPv4 address it ends with.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7])));
    }
    // 6to4, 2002::/16, reaches the IPv4 address of its next 32 bits.
    if s[0] == 0x2002 {
        return is_public_v4(Ipv4Addr::from((u32::from(s[1]) << 16) | u32::from(s[2])));
    }
    // Only global unicast, 2000::/3: this leaves out the unspecified and loopback addresses,
    // IPv4-compatible ones, unique local fc00::/7, link-local fe80::/10, multicast ff00::/8 and
    // every other reserved range.
    let global_unicast = s[0] & 0xE000 == 0x2000;
    let ietf = s[0] == 0x2001 && s[1] < 0x0200; // 2001::/23, Teredo included
    let documentation = (s[0] == 0x2001 && s[1] == 0x0db8) || s[0] & 0xFFF0 == 0x3FF0; // 2001:db8::/32, 3fff::/20
    global_unicast && !ietf && !documentation
}

/// The resolver of webhook deliveries: ureq's own lookup, then every address checked; the
/// HTTP client connects only to what it returns.
#[derive(Debug)]
pub(crate) struct CheckedResolver {
    pub(crate) allow_private: bool,
}

impl Resolver for CheckedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let addresses = DefaultResolver::default().resolve(uri, config, timeout)?;
        let host = uri.host().unwrap_or_default();
        refuse_private(host, &addresses, self.allow_private).map_err(|e| {
            ureq::Error::Io(std::io::Error::new(std::io::ErrorKind::PermissionDenied, e))
        })?;
        Ok(addresses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().expect("an address"))
    }

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "127.0.0.1",
            "127.9.9.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "2001::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
        ] {
            assert!(!public(private), "{private} is not public");
        }
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "192.169.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(public(address), "{address} is public");
        }
    }

    #[test]
    fn urls_are_http_or_https_with_a_host_and_no_credentials() {
        let target = parse_url("https://example.com/hook").expect("https");
        assert_eq!((target.host.as_str(), target.port), ("example.com", 443));
        let target = parse_url("http://[::1]:8080/x").expect("IPv6");
        assert_eq!((target.host.as_str(), target.port), ("::1", 8080));
        for bad in [
            "",
            "ftp://example.com/",
            "file:///etc/passwd",
            "example.com/hook",
            "http://user:pass@example.com/",
            "http:///path",
        ] {
            assert!(parse_url(bad).is_err(), "{bad:?} is refused");
        }
    }

    #[test]
    fn private_hosts_are_refused_unless_allowed() {
        assert!(check_url("http://127.0.0.1:9/", false).is_err());
        assert!(check_url("http://[::1]:9/", false).is_err());
        assert!(check_url("http://127.0.0.1:9/", true).is_ok());
        assert!(check_url("http://localhost:9/", false).is_err());
    }
}
