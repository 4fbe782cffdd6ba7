package standalone

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNodeClaimedByTwoSources checks that a node ID rendered by two
// sources is served from one and reported as an error on both.
func TestNodeClaimedByTwoSources(t *testing.T) {
	one, two := newLocalRepo(t), newLocalRepo(t)
	first := one.commit("a")
	two.commit("b")
	s, err := New(Config{
		XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", StateDir: t.TempDir(), DefaultNode: "shared",
		Sources: []SourceConfig{
			{Name: "one", Git: &GitSource{URL: one.dir}, Interval: Duration{time.Hour}},
			{Name: "two", Git: &GitSource{URL: two.dir}, Interval: Duration{time.Hour}},
		},
	}, Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// Let "one" claim the node first.
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("shared")
		return ok && n.Published != nil && n.Published.Commit == first
	}, 30*time.Second, 10*time.Millisecond)
	require.True(t, s.Trigger("two"))
	require.Eventually(t, func() bool {
		srcs := s.Sources()
		return strings.Contains(srcs[0].LastError, `node "shared" is also claimed by source "two"`) &&
			strings.Contains(srcs[1].LastError, `node "shared" is already rendered by source "one"`)
	}, 30*time.Second, 10*time.Millisecond, "both sources report the conflict: %+v", s.Sources())
	n, ok := s.engine.Node("shared")
	require.True(t, ok)
	assert.Equal(t, first, n.Published.Commit, "the node stays with its first source")
}
