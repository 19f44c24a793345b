//! The SSRF guard: a webhook URL is the app's to choose, so the addresses it resolves
//! to are checked at delivery time (not at registration: DNS can change) and loopback,
//! private, link-local and unique-local ones are refused unless the deployment's
//! `--webhook-allow-cidrs` names them. The check sits in the HTTP client's resolver,
//! so the address checked is the address connected to (no second lookup to rebind).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// An address range, `10.0.0.0/8` or `::1/128` (a bare address is a /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{text:?} is not an address or CIDR range"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{text:?}: the prefix must be 0..{max}"))?,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Which addresses deliveries may reach.
#[derive(Debug, Clone, Default)]
pub struct AddressGuard {
    allowed: Vec<Cidr>,
}

impl AddressGuard {
    /// A guard that lets `allowed` through besides public addresses.
    pub fn new(allowed: Vec<Cidr>) -> Self {
        AddressGuard { allowed }
    }

    /// Loopback allowed (`tasklane dev` and the tests, whose receivers are local).
    pub fn allowing_loopback() -> Self {
        AddressGuard::new(vec![
            "127.0.0.0/8".parse().expect("a CIDR"),
            "::1/128".parse().expect("a CIDR"),
        ])
    }

    /// Whether a delivery may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        !is_internal(ip) || self.allowed.iter().any(|cidr| cidr.contains(ip))
    }
}

/// An IPv4-mapped IPv6 address is checked as the IPv4 address it reaches.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Loopback, private, link-local, unique-local, and the addresses that are none of
/// these but never a public receiver (unspecified, shared CGNAT space, multicast,
/// broadcast).
fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.octets()[0] == 0
                || in_v4(v4, Ipv4Addr::new(100, 64, 0, 0), 10)
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || in_v6(v6, Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96)
        }
    }
}

fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, prefix: u8) -> bool {
    Cidr {
        addr: IpAddr::V4(net),
        prefix,
    }
    .contains(IpAddr::V4(ip))
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u8) -> bool {
    Cidr {
        addr: IpAddr::V6(net),
        prefix,
    }
    .contains(IpAddr::V6(ip))
}

/// The error a refused address is reported with (the delivery log's `last_error`).
#[derive(Debug, thiserror::Error)]
#[error("address refused: {0} is internal and not in --webhook-allow-cidrs")]
pub struct Refused(pub IpAddr);

/// The HTTP client's resolver: the system's answer, less what the guard refuses; an
/// error when nothing is left.
pub struct GuardedResolver(pub Arc<AddressGuard>);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (good, bad): (Vec<SocketAddr>, Vec<SocketAddr>) =
                found.into_iter().partition(|a| guard.permits(a.ip()));
            if good.is_empty() {
                return match bad.first() {
                    Some(addr) => Err(Box::new(Refused(addr.ip())) as _),
                    None => Err(format!("{host} has no address").into()),
                };
            }
            Ok(Box::new(good.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_refused_by_default() {
        let guard = AddressGuard::default();
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!guard.permits(ip(internal)), "{internal}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "172.32.0.1"] {
            assert!(guard.permits(ip(public)), "{public}");
        }
    }

    #[test]
    fn allowed_ranges_let_internal_addresses_through() {
        let guard = AddressGuard::new(vec!["10.0.0.0/8".parse().unwrap()]);
        assert!(guard.permits(ip("10.9.9.9")));
        assert!(guard.permits(ip("::ffff:10.9.9.9")));
        assert!(!guard.permits(ip("192.168.0.1")));
        let loopback = AddressGuard::allowing_loopback();
        assert!(loopback.permits(ip("127.0.0.1")) && loopback.permits(ip("::1")));
        assert!(!loopback.permits(ip("10.0.0.1")));
    }

    #[test]
    fn cidrs_parse_strictly() {
        assert_eq!(
            "10.0.0.0/8".parse::<Cidr>().unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert_eq!("::1".parse::<Cidr>().unwrap().to_string(), "::1/128");
        assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains(ip("1.2.3.4")));
        for bad in ["10.0.0.0/33", "example.com", "10.0.0.0/x", "::1/129"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
