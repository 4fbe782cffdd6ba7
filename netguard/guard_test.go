package netguard

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKindOf(t *testing.T) {
	for addr, want := range map[string]Kind{
		"127.0.0.1":            Loopback,
		"127.8.9.10":           Loopback,
		"::1":                  Loopback,
		"::ffff:127.0.0.1":     Loopback,
		"169.254.169.254":      LinkLocal,
		"169.254.0.1":          LinkLocal,
		"fe80::1":              LinkLocal,
		"fd00:ec2::254":        LinkLocal,
		"100.100.100.200":      LinkLocal,
		"10.0.0.1":             Private,
		"172.16.5.4":           Private,
		"192.168.1.1":          Private,
		"100.64.0.10":          Private,
		"fd12:3456::1":         Private,
		"64:ff9b::a00:1":       Private, // NAT64 of 10.0.0.1
		"64:ff9b::a9fe:a9fe":   LinkLocal,
		"0.0.0.0":              Reserved,
		"0.1.2.3":              Reserved,
		"::":                   Reserved,
		"224.0.0.1":            LinkLocal, // link-local multicast
		"239.1.2.3":            Reserved,
		"255.255.255.255":      Reserved,
		"240.0.0.1":            Reserved,
		"198.18.0.1":           Reserved,
		"ff02::1":              LinkLocal, // link-local multicast
		"93.184.215.14":        "",
		"8.8.8.8":              "",
		"2606:4700:4700::1111": "",
		"::ffff:8.8.8.8":       "",
		"64:ff9b::808:808":     "", // NAT64 of 8.8.8.8
		"172.32.0.1":           "",
		"100.128.0.1":          "",
	} {
		assert.Equal(t, want, KindOf(netip.MustParseAddr(addr)), addr)
	}
}

func TestAllowed(t *testing.T) {
	var none *Guard
	ok, _ := none.Allowed(netip.MustParseAddr("169.254.169.254"))
	assert.True(t, ok, "a nil guard allows everything (legate serve)")

	g := New([]netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("127.0.0.1/32")}, "")
	for addr, want := range map[string]bool{
		"10.20.3.4": true, "10.21.0.1": false, "127.0.0.1": true, "::ffff:127.0.0.1": true, "127.0.0.2": false,
		"169.254.169.254": false, "8.8.8.8": true, "192.168.0.1": false,
	} {
		ok, kind := g.Allowed(netip.MustParseAddr(addr))
		assert.Equal(t, want, ok, addr)
		assert.Equal(t, want, kind == "", "%s: a refusal says why", addr)
	}

	// Flux artifacts come from source-controller's Service: cluster
	// addresses are allowed, the metadata service and loopback are not.
	flux := New(nil, "").WithPrivate()
	for addr, want := range map[string]bool{
		"10.96.0.15": true, "fd00:10:96::a": true, "100.64.1.1": true,
		"169.254.169.254": false, "fd00:ec2::254": false, "100.100.100.200": false, "127.0.0.1": false, "0.0.0.0": false,
	} {
		ok, _ := flux.Allowed(netip.MustParseAddr(addr))
		assert.Equal(t, want, ok, addr)
	}
	assert.Nil(t, none.WithPrivate())
}

func TestParseNetworks(t *testing.T) {
	got, err := ParseNetworks([]string{"10.20.0.0/16", " 127.0.0.1 ", "fd00::/8", "10.1.2.3/8", ""})
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("10.0.0.0/8"),
	}, got)
	_, err = ParseNetworks([]string{"gitea.internal"})
	assert.ErrorContains(t, err, `"gitea.internal" is neither a CIDR`)
}
