//! Where a webhook may go: the classification of an IP address.
//!
//! An endpoint's URL is chosen by whoever holds the operator's tools, but the POST is made from
//! inside the deployment, so a URL naming (or a DNS name resolving to) an address inside it —
//! the instance metadata service at 169.254.169.254, a VPC neighbour, the function's own
//! loopback — would turn the webhook worker into a probe of the private network (SSRF).
//! Outside local runs only [`AddressClass::Public`] addresses are sent to; the check is made
//! on the address the connection goes to, after DNS resolution at send time
//! (`services::webhooks::WebhookClient`). Forms that embed an IPv4 address (IPv4-mapped,
//! IPv4-compatible, NAT64, 6to4) are judged by the address they embed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address an IP is, for the webhook worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// Reachable on the public internet: the only class sent to outside local runs.
    Public,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `100.64.0.0/10`, carrier-grade NAT.
    SharedNat,
    /// `169.254/16` (the instance metadata address among them), `fe80::/10`.
    LinkLocal,
    /// `fc00::/7`, and the deprecated site-local `fec0::/10`.
    UniqueLocal,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `240/4` and the broadcast address: never a host on the internet.
    Reserved,
}

impl AddressClass {
    /// The class of `ip`.
    pub fn of(ip: IpAddr) -> AddressClass {
        match ip {
            IpAddr::V4(v4) => classify_v4(v4),
            IpAddr::V6(v6) => classify_v6(v6),
        }
    }

    /// How an operator reads it in a refusal.
    pub fn as_str(self) -> &'static str {
        match self {
            AddressClass::Public => "public",
            AddressClass::Unspecified => "unspecified",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::SharedNat => "shared (carrier-grade NAT)",
            AddressClass::LinkLocal => "link-local",
            AddressClass::UniqueLocal => "unique-local",
            AddressClass::Multicast => "multicast",
            AddressClass::Reserved => "reserved",
        }
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, ..] = ip.octets();
    match (a, b) {
        (0, _) => AddressClass::Unspecified,
        (127, _) => AddressClass::Loopback,
        (10, _) | (192, 168) => AddressClass::Private,
        (172, 16..=31) => AddressClass::Private,
        (100, 64..=127) => AddressClass::SharedNat,
        (169, 254) => AddressClass::LinkLocal,
        (224..=239, _) => AddressClass::Multicast,
        (240..=255, _) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let first = ip.segments()[0];
    if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if let Some(v4) = embedded_v4(ip) {
        classify_v4(v4)
    } else if first & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
        AddressClass::UniqueLocal
    } else if first & 0xff00 == 0xff00 {
        AddressClass::Multicast
    } else {
        AddressClass::Public
    }
}

/// The IPv4 address an IPv6 form carries: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
/// `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let o = ip.octets();
    let low = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match ip.segments() {
        [0, 0, 0, 0, 0, 0xffff | 0, _, _] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, ..] => Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn class(s: &str) -> AddressClass {
        AddressClass::of(s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
    }

    #[test]
    fn each_range_the_worker_refuses_is_classified() {
        use AddressClass::*;
        for (ip, want) in [
            ("0.0.0.0", Unspecified),
            ("::", Unspecified),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("::1", Loopback),
            ("10.0.0.1", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("100.64.0.1", SharedNat),
            ("100.127.255.255", SharedNat),
            ("169.254.169.254", LinkLocal),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fc00::1", UniqueLocal),
            ("fd12:3456::1", UniqueLocal),
            ("fec0::1", UniqueLocal),
            ("224.0.0.1", Multicast),
            ("ff02::1", Multicast),
            ("255.255.255.255", Reserved),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:10.1.2.3", Private),
            ("::127.0.0.1", Loopback),
            ("64:ff9b::192.168.0.1", Private),
            ("2002:a9fe:a9fe::1", LinkLocal),
        ] {
            assert_eq!(class(ip), want, "{ip}");
        }
    }

    #[test]
    fn public_addresses_and_the_edges_of_each_range_are_public() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "9.255.255.255",
            "11.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "126.255.255.255",
            "128.0.0.0",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2001:db8::1",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
        ] {
            assert_eq!(class(ip), AddressClass::Public, "{ip}");
        }
    }

    proptest! {
        #[test]
        fn an_ipv4_mapped_address_is_judged_as_the_ipv4_it_carries(raw: u32) {
            let v4 = Ipv4Addr::from(raw);
            prop_assert_eq!(
                AddressClass::of(IpAddr::V6(v4.to_ipv6_mapped())),
                AddressClass::of(IpAddr::V4(v4))
            );
        }

        #[test]
        fn every_address_in_a_refused_ipv4_block_is_refused(low: u32) {
            use AddressClass::*;
            for (base, bits, want) in [
                ([127, 0, 0, 0], 8, Loopback),
                ([10, 0, 0, 0], 8, Private),
                ([172, 16, 0, 0], 12, Private),
                ([192, 168, 0, 0], 16, Private),
                ([100, 64, 0, 0], 10, SharedNat),
                ([169, 254, 0, 0], 16, LinkLocal),
                ([0, 0, 0, 0], 8, Unspecified),
            ] {
                let host = low & (u32::MAX >> bits);
                let ip = Ipv4Addr::from(u32::from(Ipv4Addr::from(base)) | host);
                prop_assert_eq!(AddressClass::of(IpAddr::V4(ip)), want, "{}", ip);
            }
        }

        #[test]
        fn every_address_in_a_refused_ipv6_block_is_refused(low: u128) {
            use AddressClass::*;
            for (base, bits, want) in [
                (0xfe80u128 << 112, 10, LinkLocal),
                (0xfc00u128 << 112, 7, UniqueLocal),
            ] {
                let ip = Ipv6Addr::from(base | (low & (u128::MAX >> bits)));
                prop_assert_eq!(AddressClass::of(IpAddr::V6(ip)), want, "{}", ip);
            }
        }
    }
}
