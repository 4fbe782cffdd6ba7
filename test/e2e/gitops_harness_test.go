package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/gitea"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/gitrepo"
	"github.com/legate-dev/legate/test/internal/legateproc"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// The GitOps tests' configuration: proxyless gRPC clients of node
// gitopsNode dial xds:///gitops-greeter, routed to cluster "a" or "b".
const (
	gitopsNode     = "gitops"
	gitopsListener = "gitops-greeter"
	gitopsRoutes   = "gitops-routes"
	gitopsFile     = "envoy/greeter.yaml"
	gitopsWait     = 60 * time.Second
	gitopsPoll     = 50 * time.Millisecond
)

// gitopsConfig is one commit of the configuration.
type gitopsConfig struct {
	route        string // "a" or "b"
	portA, portB int
	staticB      bool // valid for legate, NACKed by grpc-go
	invalid      bool // rejected by legate's renderer
}

func (c gitopsConfig) yaml() string {
	a := xdsyaml.EDSCluster("a")
	if c.invalid {
		a = xdsyaml.WithField(a, "no_such_field", "3")
	}
	docs := []string{
		xdsyaml.APIListener(gitopsListener, "greeter", gitopsRoutes),
		xdsyaml.RouteConfiguration(gitopsRoutes, "greeter", xdsyaml.Route{Prefix: "", Cluster: c.route}),
		a,
		xdsyaml.Endpoints("a", c.portA),
	}
	if c.staticB {
		docs = append(docs, xdsyaml.StaticCluster("b", c.portB))
	} else {
		docs = append(docs, xdsyaml.EDSCluster("b"), xdsyaml.Endpoints("b", c.portB))
	}
	return xdsyaml.Join(docs...)
}

// files is the repository content of the commit.
func (c gitopsConfig) files() map[string]string {
	return map[string]string{gitopsFile: c.yaml(), "envoy/legate.yaml": "nodeIDs: [" + gitopsNode + "]\n"}
}

// newGitopsWorktree creates a local repository that pushes to a remote.
func newGitopsWorktree(t testing.TB) *gitrepo.Repo {
	t.Helper()
	return gitrepo.New(t, "legate gitops e2e", "gitops@legate.invalid")
}

// newGitopsClient connects grpc-go's xDS client, dialing
// xds:///gitops-greeter as node gitopsNode, to the ADS server at xdsAddr.
func newGitopsClient(t *testing.T, xdsAddr string) *grpcClient {
	t.Helper()
	return &grpcClient{t: t, c: backend.Dial(t, xdsAddr, gitopsNode, "grpc-client", gitopsListener), wait: gitopsWait, poll: gitopsPoll}
}

// gitopsLegate is `legate serve` running as a subprocess.
type gitopsLegate struct {
	t        testing.TB
	xdsAddr  string
	httpAddr string
	proc     *legateproc.Proc
	logs     *gitopsBuffer
}

// startGitopsLegate runs the binary with args plus its listen addresses and
// waits for /healthz.
func startGitopsLegate(t testing.TB, args ...string) *gitopsLegate {
	t.Helper()
	p := &gitopsLegate{t: t, xdsAddr: legateproc.LoopbackAddr(t), httpAddr: legateproc.LoopbackAddr(t), logs: &gitopsBuffer{}}
	args = append([]string{"serve", "--xds-addr", p.xdsAddr, "--http-addr", p.httpAddr}, args...)
	proc, err := legateproc.Start(legateBin, args, p.logs)
	require.NoError(t, err)
	p.proc = proc
	t.Cleanup(func() {
		proc.Stop(15 * time.Second)
		if t.Failed() {
			t.Logf("legate logs:\n%s", p.logs.String())
		}
	})
	proc.WaitReady(t, "http://"+p.httpAddr+"/healthz", gitopsWait, gitopsPoll)
	return p
}

// node returns the node's entry of GET /api/v1/nodes/{node}.
func (p *gitopsLegate) node(id string) (statuspage.NodeView, bool) {
	var v statuspage.NodeView
	resp, err := http.Get("http://" + p.httpAddr + "/api/v1/nodes/" + id)
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, false
	}
	return v, json.NewDecoder(resp.Body).Decode(&v) == nil
}

// nodes returns GET /api/v1/nodes.
func (p *gitopsLegate) nodes() []statuspage.NodeView {
	var v []statuspage.NodeView
	resp, err := http.Get("http://" + p.httpAddr + "/api/v1/nodes")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil
	}
	return v
}

// publishedCommit is the commit of the revision served to the node.
func (p *gitopsLegate) publishedCommit(id string) string {
	v, ok := p.node(id)
	if !ok || v.Published == nil {
		return ""
	}
	return v.Published.Commit
}

type gitopsBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *gitopsBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *gitopsBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gitopsStatus is one commit status as Gitea's API returns it.
type gitopsStatus = gitea.CommitStatus

func gitopsAllStatuses(t testing.TB, srv *gitea.Server, repo *gitea.Repository, sha string) []gitopsStatus {
	return srv.Statuses(t, repo, sha)
}

func gitopsWaitStatus(t testing.TB, srv *gitea.Server, repo *gitea.Repository, sha, context, state string) gitopsStatus {
	t.Helper()
	return srv.WaitStatus(t, repo, sha, context, state, gitopsWait)
}

// gitopsHeldProxy is a raw ADS stream of the node that subscribes to the route
// configuration and answers only when told: a proxy whose answer the test
// controls.
type gitopsHeldProxy struct {
	t      testing.TB
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
	resps  chan *discoveryv3.DiscoveryResponse
}

const gitopsRouteType = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

func newGitopsHeldProxy(t testing.TB, addr string) *gitopsHeldProxy {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		_ = conn.Close()
	})
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	md, err := structpb.NewStruct(map[string]any{"pod_name": "held-proxy"})
	require.NoError(t, err)
	h := &gitopsHeldProxy{t: t, stream: stream, node: &corev3.Node{Id: gitopsNode, Metadata: md}, resps: make(chan *discoveryv3.DiscoveryResponse, 16)}
	go func() {
		for {
			r, err := stream.Recv()
			if err != nil {
				close(h.resps)
				return
			}
			h.resps <- r
		}
	}()
	require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{Node: h.node, TypeUrl: gitopsRouteType, ResourceNames: []string{gitopsRoutes}}))
	return h
}

// next waits for the next response.
func (h *gitopsHeldProxy) next() *discoveryv3.DiscoveryResponse {
	h.t.Helper()
	select {
	case r, ok := <-h.resps:
		require.True(h.t, ok, "the held ADS stream closed")
		return r
	case <-time.After(gitopsWait):
		require.FailNow(h.t, "the held ADS stream received nothing")
		return nil
	}
}

// ack accepts r.
func (h *gitopsHeldProxy) ack(r *discoveryv3.DiscoveryResponse) {
	h.t.Helper()
	require.NoError(h.t, h.stream.Send(&discoveryv3.DiscoveryRequest{
		Node: h.node, TypeUrl: gitopsRouteType, ResourceNames: []string{gitopsRoutes},
		VersionInfo: r.GetVersionInfo(), ResponseNonce: r.GetNonce(),
	}))
}
