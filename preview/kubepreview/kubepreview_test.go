package kubepreview

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/preview/prs"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/tenancy"
)

var (
	mine   = sources.EnvoySourceRef("team-b", "config").String()
	mate   = sources.EnvoyConfigRef("team-b", "other").String()
	theirs = sources.EnvoyConfigRef("team-a", "edge").String()
)

func owners(m map[string]string) func(string) string { return func(n string) string { return m[n] } }

// A node another source renders is taken out of the preview and refused
// with the commit path's message: another namespace's named as taken and
// nothing more, a source of the same namespace named.
func TestRefuseOwned(t *testing.T) {
	res := &render.Result{Nodes: map[string]*render.NodeConfig{"b-edge": {}, "shared-edge": {}, "mates": {}, "free": {}}}
	owner := owners(map[string]string{"b-edge": mine, "shared-edge": theirs, "mates": mate})
	diags := RefuseOwned(mine, res, owner, tenancy.TenantOf)
	require.Len(t, diags, 2)
	assert.Equal(t, `node "mates" is already rendered by source "`+mate+`"; a node ID may come from one source only`, diags[0].Message)
	assert.Equal(t, `node "shared-edge" belongs to another namespace; a node ID is configured from one namespace only, so this configuration of it is ignored (use a node ID of your own)`, diags[1].Message)
	for _, d := range diags {
		assert.Equal(t, render.RuleNode, d.Rule)
		assert.NotContains(t, d.Message, "team-a")
	}
	assert.ElementsMatch(t, []string{"b-edge", "free"}, slices.Collect(func(yield func(string) bool) {
		for n := range res.Nodes {
			if !yield(n) {
				return
			}
		}
	}), "the refused nodes are not compared")
}

// The blast radius counts the proxies of the source's own namespace only.
func TestProxiesOfTheTenantOnly(t *testing.T) {
	p := New(Home{
		Owner:     owners(map[string]string{"b-edge": mine, "mates": mate, "shared-edge": theirs}),
		Tenant:    tenancy.TenantOf,
		Connected: func(string) int { return 7 },
	})
	t.Cleanup(p.Stop)
	assert.Equal(t, 7, p.proxies(mine, "b-edge"))
	assert.Equal(t, 7, p.proxies(mine, "mates"))
	assert.Zero(t, p.proxies(mine, "shared-edge"), "another namespace's proxies are not counted")
	assert.Zero(t, p.proxies(mine, "nobodys"), "the proxies waiting for a free node may be anyone's")
}

// submissions records what update hands the queue.
type submissions struct {
	mu     sync.Mutex
	runs   []string
	closed []int64
}

func (s *submissions) run(_ context.Context, _ string, req prs.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, fmt.Sprintf("%d@%s", req.Number, req.HeadSHA[:1]))
}

func (s *submissions) close(_ string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = append(s.closed, n)
}

func sha(c byte) string { return string(c) + "000000000000000000000000000000000000000" }

// A listing previews each new head once; a request no longer listed is
// closed, unless the listing was cut short; status.previews is bounded.
func TestUpdate(t *testing.T) {
	rec := &submissions{}
	q := prs.NewQueue(context.Background(), 1, rec.run, rec.close)
	src := &source{name: mine, queue: q, open: map[int64]forge.OpenPullRequest{}, swept: true}
	log := logr.Discard()

	src.update(log, []forge.OpenPullRequest{{Number: 1, HeadSHA: sha('a')}, {Number: 2, HeadSHA: sha('b')}}, false)
	q.Wait()
	src.update(log, []forge.OpenPullRequest{{Number: 1, HeadSHA: sha('a')}, {Number: 2, HeadSHA: sha('c')}}, false)
	q.Wait()
	assert.ElementsMatch(t, []string{"1@a", "2@b", "2@c"}, rec.runs, "a head already previewed is not rendered again")

	// #1 is missing from a truncated listing: it may still be open.
	src.update(log, []forge.OpenPullRequest{{Number: 2, HeadSHA: sha('c')}}, true)
	q.Wait()
	assert.Empty(t, rec.closed)
	// Missing from a whole one: closed.
	src.update(log, []forge.OpenPullRequest{{Number: 2, HeadSHA: sha('c')}}, false)
	q.Wait()
	assert.Equal(t, []int64{1}, rec.closed)

	var many []forge.OpenPullRequest
	for n := range int64(30) {
		many = append(many, forge.OpenPullRequest{Number: n + 1, HeadSHA: sha('d')})
	}
	src.update(log, many, false)
	q.Wait()
	st := src.status("")
	assert.Len(t, st.Open, 20)
	assert.Equal(t, int32(30), st.OpenCount)
	assert.Equal(t, int64(30), st.Open[0].Number, "newest first")
}
