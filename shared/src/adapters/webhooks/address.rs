//! Where a webhook may go: the classification of an IP address.
//!
//! An endpoint's URL is chosen by whoever holds the operator's tools, but the POST is made from
//! inside the deployment, so a URL naming (or a DNS name resolving to) an address inside it —
//! the instance metadata service at 169.254.169.254, a VPC neighbour, the function's own
//! loopback — would turn the webhook worker into a probe of the private network (SSRF).
//! Outside local runs only [`AddressClass::Public`] addresses are sent to; the check is made
//! on the address the connection goes to, after DNS resolution at send time
//! (`services::webhooks::WebhookClient`). Forms that embed an IPv4 address (IPv4-mapped,
//! IPv4-compatible, the well-known NAT64 prefix, 6to4) are judged by the address they embed.
//! Every other block of IANA's IPv4 and IPv6 Special-Purpose Address Registries is refused,
//! the globally reachable ones too (anycast relays, AS112 sinks, AMT, ORCHIDv2): none of them
//! is a webhook receiver, so refusing one costs nothing.

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
    /// Any other block of IANA's special-purpose registries: documentation, benchmarking,
    /// protocol assignments, discard, translation for local use, SRv6 SIDs.
    SpecialPurpose,
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
            AddressClass::SpecialPurpose => "special-purpose",
        }
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (0, ..) => AddressClass::Unspecified,
        (127, ..) => AddressClass::Loopback,
        (10, ..) | (192, 168, _) => AddressClass::Private,
        (172, 16..=31, _) => AddressClass::Private,
        (100, 64..=127, _) => AddressClass::SharedNat,
        (169, 254, _) => AddressClass::LinkLocal,
        (224..=239, ..) => AddressClass::Multicast,
        (240..=255, ..) => AddressClass::Reserved,
        // IETF protocol assignments (192.0.0/24 and what it holds), documentation (TEST-NET-1,
        // -2, -3), AS112, AMT, the 6to4 relay anycast, benchmarking (198.18/15).
        (192, 0, 0 | 2)
        | (192, 31, 196)
        | (192, 52, 193)
        | (192, 88, 99)
        | (192, 175, 48)
        | (198, 18..=19, _)
        | (198, 51, 100)
        | (203, 0, 113) => AddressClass::SpecialPurpose,
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
    } else if special_purpose_v6(ip) {
        AddressClass::SpecialPurpose
    } else {
        AddressClass::Public
    }
}

/// The IPv6 registry's blocks that embed no IPv4 address and are not classed above.
fn special_purpose_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    let within = |prefix: u128, len: u32| bits >> (128 - len) == prefix >> (128 - len);
    [
        (0x0064_ff9b_0001_u128 << 80, 48), // 64:ff9b:1::/48, IPv4-IPv6 translation (local use)
        (0x0100_u128 << 112, 64),          // 100::/64, discard-only
        (0x0100_0000_0000_0001_u128 << 64, 64), // 100:0:0:1::/64, dummy prefix
        (0x2001_u128 << 112, 23),          // 2001::/23, IETF protocol assignments (Teredo, ORCHID…)
        (0x2001_0db8_u128 << 96, 32),      // 2001:db8::/32, documentation
        (0x2620_004f_8000_u128 << 80, 48), // 2620:4f:8000::/48, AS112 direct delegation
        (0x3fff_u128 << 112, 20),          // 3fff::/20, documentation
        (0x5f00_u128 << 112, 16),          // 5f00::/16, SRv6 SIDs
    ]
    .iter()
    .any(|&(prefix, len)| within(prefix, len))
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
            ("192.0.0.1", SpecialPurpose),
            ("198.18.0.1", SpecialPurpose),
            ("198.19.255.255", SpecialPurpose),
            ("64:ff9b:1::a00:1", SpecialPurpose),
            ("2001:db8::1", SpecialPurpose),
            ("::ffff:198.18.0.1", SpecialPurpose),
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
            "2001:200::1",
            "::ffff:8.8.8.8",
            "192.0.1.255",
            "198.17.255.255",
            "198.20.0.0",
            "64:ff9b::8.8.8.8",
        ] {
            assert_eq!(class(ip), AddressClass::Public, "{ip}");
        }
    }

    /// IANA's IPv4 Special-Purpose Address Registry, every entry (as of 2025): block, name, RFC.
    const IPV4_REGISTRY: [(&str, &str, &str); 25] = [
        ("0.0.0.0/8", "\"This network\"", "RFC 791"),
        ("0.0.0.0/32", "\"This host on this network\"", "RFC 1122"),
        ("10.0.0.0/8", "Private-Use", "RFC 1918"),
        ("100.64.0.0/10", "Shared Address Space", "RFC 6598"),
        ("127.0.0.0/8", "Loopback", "RFC 1122"),
        ("169.254.0.0/16", "Link Local", "RFC 3927"),
        ("172.16.0.0/12", "Private-Use", "RFC 1918"),
        ("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890"),
        ("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335"),
        ("192.0.0.8/32", "IPv4 dummy address", "RFC 7600"),
        ("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723"),
        (
            "192.0.0.10/32",
            "Traversal Using Relays around NAT Anycast",
            "RFC 8155",
        ),
        ("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880"),
        ("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880"),
        ("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737"),
        ("192.31.196.0/24", "AS112-v4", "RFC 7535"),
        ("192.52.193.0/24", "AMT", "RFC 7450"),
        (
            "192.88.99.0/24",
            "Deprecated (6to4 Relay Anycast)",
            "RFC 7526",
        ),
        ("192.168.0.0/16", "Private-Use", "RFC 1918"),
        (
            "192.175.48.0/24",
            "Direct Delegation AS112 Service",
            "RFC 7534",
        ),
        ("198.18.0.0/15", "Benchmarking", "RFC 2544"),
        ("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737"),
        ("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737"),
        ("240.0.0.0/4", "Reserved", "RFC 1112"),
        ("255.255.255.255/32", "Limited Broadcast", "RFC 919"),
    ];

    /// IANA's IPv6 Special-Purpose Address Registry, every entry (as of 2025): block, name,
    /// RFC, and whether its addresses carry an IPv4 address (then judged by that address).
    const IPV6_REGISTRY: [(&str, &str, &str, bool); 25] = [
        ("::1/128", "Loopback Address", "RFC 4291", false),
        ("::/128", "Unspecified Address", "RFC 4291", false),
        ("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", true),
        ("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", true),
        ("64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215", false),
        ("100::/64", "Discard-Only Address Block", "RFC 6666", false),
        ("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", false),
        ("2001::/23", "IETF Protocol Assignments", "RFC 2928", false),
        ("2001::/32", "TEREDO", "RFC 4380", false),
        (
            "2001:1::1/128",
            "Port Control Protocol Anycast",
            "RFC 7723",
            false,
        ),
        (
            "2001:1::2/128",
            "Traversal Using Relays around NAT Anycast",
            "RFC 8155",
            false,
        ),
        (
            "2001:1::3/128",
            "DNS-SD Service Registration Protocol Anycast",
            "RFC 9665",
            false,
        ),
        ("2001:2::/48", "Benchmarking", "RFC 5180", false),
        ("2001:3::/32", "AMT", "RFC 7450", false),
        ("2001:4:112::/48", "AS112-v6", "RFC 7535", false),
        (
            "2001:10::/28",
            "Deprecated (previously ORCHID)",
            "RFC 4843",
            false,
        ),
        ("2001:20::/28", "ORCHIDv2", "RFC 7343", false),
        (
            "2001:30::/28",
            "Drone Remote ID Protocol Entity Tags (DETs) Prefix",
            "RFC 9374",
            false,
        ),
        ("2001:db8::/32", "Documentation", "RFC 3849", false),
        ("2002::/16", "6to4", "RFC 3056", true),
        (
            "2620:4f:8000::/48",
            "Direct Delegation AS112 Service",
            "RFC 7534",
            false,
        ),
        ("3fff::/20", "Documentation", "RFC 9637", false),
        (
            "5f00::/16",
            "Segment Routing (SRv6) SIDs",
            "RFC 9602",
            false,
        ),
        ("fc00::/7", "Unique-Local", "RFC 4193", false),
        ("fe80::/10", "Link-Local Unicast", "RFC 4291", false),
    ];

    /// The first, middle and last address of `block` (`a.b.c.d/len` or `x::/len`) as bits.
    fn edges(block: &str, width: u32) -> [u128; 3] {
        let (addr, len) = block.split_once('/').unwrap_or_else(|| panic!("{block}"));
        let len: u32 = len.parse().unwrap_or_else(|e| panic!("{block}: {e}"));
        let base = match addr.parse::<IpAddr>() {
            Ok(IpAddr::V4(v4)) => u128::from(u32::from(v4)),
            Ok(IpAddr::V6(v6)) => u128::from(v6),
            Err(e) => panic!("{block}: {e}"),
        };
        let host = if len == width {
            0
        } else {
            (1u128 << (width - len)) - 1
        };
        [base, base | (host / 2), base | host]
    }

    #[test]
    fn every_ipv4_special_purpose_block_is_refused_whole() {
        for (block, name, rfc) in IPV4_REGISTRY {
            for bits in edges(block, 32) {
                let ip = Ipv4Addr::from(u32::try_from(bits).unwrap_or_else(|e| panic!("{e}")));
                let got = AddressClass::of(IpAddr::V4(ip));
                assert_ne!(got, AddressClass::Public, "{name} ({rfc}, {block}): {ip}");
            }
        }
    }

    #[test]
    fn every_ipv6_special_purpose_block_is_refused_or_judged_by_the_ipv4_it_carries() {
        for (block, name, rfc, carries_v4) in IPV6_REGISTRY {
            for bits in edges(block, 128) {
                let ip = Ipv6Addr::from(bits);
                let got = AddressClass::of(IpAddr::V6(ip));
                let want_public = carries_v4
                    && embedded_v4(ip).map(IpAddr::V4).map(AddressClass::of)
                        == Some(AddressClass::Public);
                assert_eq!(
                    got == AddressClass::Public,
                    want_public,
                    "{name} ({rfc}, {block}): {ip} is {got:?}"
                );
            }
            if carries_v4 {
                let [first, ..] = edges(block, 128);
                let public =
                    Ipv6Addr::from(first | u128::from(u32::from(Ipv4Addr::new(8, 8, 8, 8))));
                let private =
                    Ipv6Addr::from(first | u128::from(u32::from(Ipv4Addr::new(10, 0, 0, 1))));
                if block != "2002::/16" {
                    assert_eq!(
                        AddressClass::of(IpAddr::V6(public)),
                        AddressClass::Public,
                        "{name}: {public}"
                    );
                    assert_eq!(
                        AddressClass::of(IpAddr::V6(private)),
                        AddressClass::Private,
                        "{name}: {private}"
                    );
                }
            }
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
