package prs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
)

func clusterFile(timeout string, names ...string) *fstest.MapFile {
	var b strings.Builder
	b.WriteString("resources:\n")
	for _, n := range names {
		fmt.Fprintf(&b, `- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: %s
  type: STATIC
  connect_timeout: %s
  load_assignment:
    cluster_name: %s
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
`, n, timeout, n)
	}
	return &fstest.MapFile{Data: []byte(b.String())}
}

// routeFile is a listener routing / to cluster.
func routeFile(cluster string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(`resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: http
  address: {socket_address: {address: 127.0.0.1, port_value: 10000}}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: http
        route_config:
          virtual_hosts:
          - name: all
            domains: ["*"]
            routes:
            - match: {prefix: /}
              route: {cluster: ` + cluster + `}
        http_filters:
        - name: envoy.filters.http.router
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`)}
}

// poster records what a preview queues.
type poster struct {
	mu       sync.Mutex
	statuses []forge.Status
	comments []forge.Comment
}

func (p *poster) Enqueue(_ context.Context, target string, st forge.Status) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if target != "cfg" {
		return errors.New("wrong target " + target)
	}
	p.statuses = append(p.statuses, st)
	return nil
}

func (p *poster) EnqueueComment(_ context.Context, target string, c forge.Comment) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if target != "cfg" {
		return errors.New("wrong target " + target)
	}
	p.comments = append(p.comments, c)
	return nil
}

const head = "1111111111111111111111111111111111111111"

func servedFleet(t *testing.T) map[string]*render.NodeConfig {
	res := render.Render(fstest.MapFS{
		"nodes/edge/clusters.yaml": clusterFile("1s", "api"),
		"nodes/edge/routes.yaml":   routeFile("api"),
		"nodes/west/clusters.yaml": clusterFile("1s", "api"),
		"nodes/east/clusters.yaml": clusterFile("1s", "api"),
	}, render.Options{})
	require.Empty(t, res.Diagnostics)
	return res.Nodes
}

func previewer(t *testing.T, files fstest.MapFS, post *poster) *Previewer {
	served := servedFleet(t)
	return &Previewer{
		Source: "cfg",
		Fetch: func(_ context.Context, req Request) (*sources.Result, error) {
			return &sources.Result{Snapshot: sources.Snapshot{Files: files, Origin: sources.Origin{Kind: sources.KindGit, Source: "cfg", Commit: req.HeadSHA}}}, nil
		},
		Render:  func(_ context.Context, f fs.FS) *render.Result { return render.Render(f, render.Options{}) },
		Served:  func() map[string]*render.NodeConfig { return served },
		Proxies: func(string) int { return 3 },
		Post:    post,
		Log:     logr.Discard(),
	}
}

// A head that changes two nodes: success naming them, and a comment that
// lists exactly those nodes and resources.
func TestPreviewTwoNodesChanged(t *testing.T) {
	post := &poster{}
	p := previewer(t, fstest.MapFS{
		"nodes/edge/clusters.yaml": clusterFile("2s", "api"),
		"nodes/edge/routes.yaml":   routeFile("api"),
		"nodes/west/clusters.yaml": clusterFile("1s", "api", "extra"),
		"nodes/east/clusters.yaml": clusterFile("1s", "api"),
	}, post)
	p.Run(context.Background(), "cfg", Request{Number: 7, HeadSHA: head})
	require.Len(t, post.statuses, 2)
	assert.Equal(t, forge.StatePending, post.statuses[0].State)
	last := post.statuses[1]
	assert.Equal(t, forge.Status{Commit: head, State: forge.StateSuccess, Context: StatusContext, Description: "valid; would change 2 node(s): edge, west"}, last)
	require.Len(t, post.comments, 1)
	c := post.comments[0]
	assert.Equal(t, int64(7), c.Number)
	assert.True(t, strings.HasPrefix(c.Body, Marker("cfg")+"\n"))
	assert.Contains(t, c.Body, "edge")
	assert.Contains(t, c.Body, "west")
	assert.Contains(t, c.Body, "extra")
	assert.NotContains(t, c.Body, "east", "an unchanged node is not listed")
	assert.NotContains(t, c.Body, ForkNote)
	assert.Contains(t, c.Body, "Nothing was stored or published")
}

// A head that breaks a route: failure naming file:line, and a comment
// explaining.
func TestPreviewBrokenRoute(t *testing.T) {
	post := &poster{}
	p := previewer(t, fstest.MapFS{
		"nodes/edge/clusters.yaml": clusterFile("1s", "api"),
		"nodes/edge/routes.yaml":   routeFile("missing"),
	}, post)
	p.Run(context.Background(), "cfg", Request{Number: 8, HeadSHA: head, Fork: true})
	require.Len(t, post.statuses, 2)
	last := post.statuses[1]
	assert.Equal(t, forge.StateFailure, last.State)
	assert.Contains(t, last.Description, "nodes/edge/routes.yaml:")
	assert.Contains(t, last.Description, "missing")
	require.Len(t, post.comments, 1)
	assert.Contains(t, post.comments[0].Body, "nodes/edge/routes.yaml:")
	assert.Contains(t, post.comments[0].Body, ForkNote)
}

// A preview cancelled while it renders posts no verdict and no comment,
// and closes the check it opened with an error saying why: a pending
// status would stay so for ever.
func TestPreviewCancelledClosesItsCheck(t *testing.T) {
	const newer = "2222222222222222222222222222222222222222"
	for name, tt := range map[string]struct {
		cause error
		want  string
	}{
		"superseded": {&Superseded{By: newer}, "superseded by 222222222222: not previewed, the newer head is"},
		"closed":     {ErrClosed, "not previewed: the pull request was closed"},
		"stopped":    {context.Canceled, "not previewed: legate stopped before the preview finished; push again to preview"},
	} {
		t.Run(name, func(t *testing.T) {
			post := &poster{}
			p := previewer(t, fstest.MapFS{"nodes/edge/clusters.yaml": clusterFile("1s", "api")}, post)
			ctx, cancel := context.WithCancelCause(context.Background())
			p.Render = func(_ context.Context, f fs.FS) *render.Result {
				cancel(tt.cause)
				return render.Render(f, render.Options{})
			}
			p.Run(ctx, "cfg", Request{Number: 9, HeadSHA: head})
			require.Len(t, post.statuses, 2)
			assert.Equal(t, forge.StatePending, post.statuses[0].State)
			assert.Equal(t, forge.Status{Commit: head, State: forge.StateError, Context: StatusContext, Description: tt.want}, post.statuses[1])
			assert.Empty(t, post.comments)
		})
	}
}

// Through the queue: a push while the older head renders closes the older
// head's check as superseded by the newer one, which gets the verdict and
// the request's only comment.
func TestQueueSupersededHeadIsNotLeftPending(t *testing.T) {
	const newer = "2222222222222222222222222222222222222222"
	post := &poster{}
	p := previewer(t, fstest.MapFS{"nodes/edge/clusters.yaml": clusterFile("2s", "api")}, post)
	rendering := make(chan struct{})
	var first sync.Once
	p.Render = func(ctx context.Context, f fs.FS) *render.Result {
		first.Do(func() {
			close(rendering)
			<-ctx.Done() // the older head renders until the newer one cancels it
		})
		return render.Render(f, render.Options{})
	}
	q := NewQueue(context.Background(), 2, p.Run, nil)
	require.NoError(t, q.Submit("cfg", Request{Number: 4, HeadSHA: head}))
	<-rendering
	require.NoError(t, q.Submit("cfg", Request{Number: 4, HeadSHA: newer}))
	q.Wait()

	last := map[string]forge.Status{}
	for _, st := range post.statuses {
		last[st.Commit] = st
	}
	assert.Equal(t, forge.StateError, last[head].State, "the older head is not left pending")
	assert.Equal(t, "superseded by 222222222222: not previewed, the newer head is", last[head].Description)
	assert.Equal(t, forge.StateSuccess, last[newer].State)
	require.Len(t, post.comments, 1)
	assert.Contains(t, post.comments[0].Body, newer)
}

// A comment larger than the forge's limit is cut to it.
func TestPreviewCommentWithinLimit(t *testing.T) {
	post := &poster{}
	files := fstest.MapFS{}
	for i := range 60 {
		files[fmt.Sprintf("nodes/n%02d/clusters.yaml", i)] = clusterFile("3s", "api", "b", "c", "d")
	}
	p := previewer(t, files, post)
	p.CommentLimit = 4000
	p.Run(context.Background(), "cfg", Request{Number: 10, HeadSHA: head})
	require.Len(t, post.comments, 1)
	assert.LessOrEqual(t, len(post.comments[0].Body), 4000)
	assert.True(t, strings.HasPrefix(post.comments[0].Body, Marker("cfg")))
}
