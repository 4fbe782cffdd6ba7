package rollout

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProxyBucketStable(t *testing.T) {
	a := ProxyBucket("spiffe://legate/ns/edge", "edge-7f9", "edge", "10.0.0.1:4000")
	// Another replica, another connection: same identity, same bucket.
	b := ProxyBucket("spiffe://legate/ns/edge", "edge-7f9", "edge", "10.0.0.9:5000")
	assert.Equal(t, a, b)
	// Without principal or pod, the host (not the port) decides.
	assert.Equal(t, ProxyBucket("", "", "edge", "10.0.0.1:4000"), ProxyBucket("", "", "edge", "10.0.0.1:4001"))
	assert.NotEqual(t, ProxyBucket("", "", "edge", "10.0.0.1:4000"), ProxyBucket("", "", "edge", "10.0.0.2:4000"))
	// The parts are separated: moving a character across them changes it.
	assert.NotEqual(t, ProxyBucket("ab", "c", "", ""), ProxyBucket("a", "bc", "", ""))
}

func TestProxyBucketSpread(t *testing.T) {
	in := 0
	for i := range 10000 {
		b := ProxyBucket("", fmt.Sprintf("pod-%d", i), "edge", "")
		assert.True(t, b >= 0 && b < Buckets)
		if InShare(b, 1000) {
			in++
		}
	}
	assert.InDelta(t, 1000, in, 100, "10%% of proxies fall in a 10%% share")
	assert.False(t, InShare(0, 0), "a 0% share takes nobody")
	assert.True(t, InShare(Buckets-1, Buckets), "a 100% share takes everybody")
}
