package netguard

import (
	"fmt"
	"net/netip"
	"strings"
)

// Kind is the kind of address a fetch was refused.
type Kind string

// The kinds of address a Guard refuses unless allowed.
const (
	Loopback  Kind = "loopback"
	LinkLocal Kind = "link-local (where cloud metadata services answer)"
	Private   Kind = "private or cluster-internal"
	Reserved  Kind = "unspecified, multicast or reserved"
)

// Ranges of each kind beyond what netip.Addr's own predicates say.
var (
	// metadata are the metadata services outside 169.254/16 and fe80::/10:
	// AWS's IPv6 one (in fc00::/7) and Alibaba Cloud's (in 100.64/10).
	metadata = []netip.Prefix{netip.MustParsePrefix("fd00:ec2::254/128"), netip.MustParsePrefix("100.100.100.200/32")}
	// private holds what netip's IsPrivate leaves out: the shared address
	// space of carrier-grade NAT (100.64/10), which clusters use for pods
	// and services too.
	private = []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10")}
	// reserved are ranges no public host has: "this network" (0/8, where
	// 0.0.0.0 reaches the local host on Linux), IETF protocol
	// assignments, documentation, benchmarking and the class E block.
	reserved = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("2001:db8::/32"),
	}
	// nat64 embeds an IPv4 address in its last 32 bits (RFC 6052).
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// KindOf says which kind of non-public address a is, or "" when it is a
// public unicast address.
func KindOf(a netip.Addr) Kind {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	switch {
	case !a.IsValid():
		return Reserved
	case a.IsLoopback():
		return Loopback
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || inAny(metadata, a):
		return LinkLocal
	case a.IsPrivate() || inAny(private, a):
		return Private
	case a.IsUnspecified() || a.IsMulticast() || !a.IsGlobalUnicast() || inAny(reserved, a) || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return Reserved
	}
	return ""
}

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Guard decides which addresses outbound fetches may reach. A nil Guard
// allows every address. A Guard is immutable and safe for concurrent use.
type Guard struct {
	allow []netip.Prefix
	// private allows private and cluster-internal addresses (Private).
	private bool
	// hint ends a refusal: how the operator allows the address.
	hint string
}

// New returns a Guard that refuses every non-public address except those
// in allow; hint tells the operator how to allow one (a flag's name) and
// ends every refusal.
func New(allow []netip.Prefix, hint string) *Guard {
	return &Guard{allow: append([]netip.Prefix(nil), allow...), hint: hint}
}

// WithPrivate is g that allows private and cluster-internal addresses as
// well, still refusing loopback, link-local and reserved ones (unless g
// allows them). A nil g stays nil.
func (g *Guard) WithPrivate() *Guard {
	if g == nil {
		return nil
	}
	c := *g
	c.private = true
	return &c
}

// Allowed reports whether a fetch may reach a; when it may not, the kind
// of address says why.
func (g *Guard) Allowed(a netip.Addr) (bool, Kind) {
	if g == nil {
		return true, ""
	}
	if inAny(g.allow, a.Unmap()) || inAny(g.allow, a) {
		return true, ""
	}
	k := KindOf(a)
	if k == "" || (k == Private && g.private) {
		return true, ""
	}
	return false, k
}

// ParseNetworks reads CIDRs ("10.20.0.0/16") and single addresses
// ("10.20.0.7", a /32 or /128) as a list of networks.
func ParseNetworks(ss []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR (10.20.0.0/16) nor an IP address", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// RefusedError is a fetch refused before it was dialled. Its text names
// the host as the URL wrote it and the kind of address it resolved to,
// never the address or a port's state.
type RefusedError struct {
	Host string
	Kind Kind
	hint string
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("%s resolves to a %s address, which legate does not fetch from", e.Host, e.Kind)
	if e.hint != "" {
		msg += ": " + e.hint
	}
	return msg
}
