package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/legate-dev/legate/standalone"
	"github.com/legate-dev/legate/test/gitea"
	"github.com/legate-dev/legate/test/xdsclient"
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
	var b strings.Builder
	fmt.Fprintf(&b, `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: %[1]s
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    stat_prefix: greeter
    rds:
      route_config_name: %[2]s
      config_source: {ads: {}, resource_api_version: V3}
    http_filters:
    - name: envoy.filters.http.router
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
---
"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: %[2]s
virtual_hosts:
- name: greeter
  domains: ["*"]
  routes:
  - match: {prefix: ""}
    route: {cluster: %[3]s}
`, gitopsListener, gitopsRoutes, c.route)
	for _, cl := range []struct {
		name   string
		port   int
		static bool
	}{{"a", c.portA, false}, {"b", c.portB, c.staticB}} {
		if cl.static {
			fmt.Fprintf(&b, `---
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: %s
type: STATIC
connect_timeout: 1s
load_assignment:
  cluster_name: %[1]s
  endpoints:
  - lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, cl.name, cl.port)
			continue
		}
		fmt.Fprintf(&b, `---
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: %s
type: EDS
connect_timeout: 1s
eds_cluster_config:
  eds_config: {ads: {}, resource_api_version: V3}
`, cl.name)
		if c.invalid && cl.name == "a" {
			b.WriteString("no_such_field: 3\n")
		}
		fmt.Fprintf(&b, `---
"@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
cluster_name: %s
endpoints:
- locality: {region: local}
  load_balancing_weight: 1
  lb_endpoints:
  - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, cl.name, cl.port)
	}
	return b.String()
}

// files is the repository content of the commit.
func (c gitopsConfig) files() map[string]string {
	return map[string]string{gitopsFile: c.yaml(), "envoy/legate.yaml": "nodeIDs: [" + gitopsNode + "]\n"}
}

// gitopsWorktree is a local clone that pushes to a remote.
type gitopsWorktree struct {
	t   testing.TB
	dir string
}

func newGitopsWorktree(t testing.TB) *gitopsWorktree {
	t.Helper()
	w := &gitopsWorktree{t: t, dir: t.TempDir()}
	w.git("init", "-q", "-b", "main")
	w.git("config", "user.name", "legate gitops e2e")
	w.git("config", "user.email", "gitops@legate.invalid")
	w.git("config", "commit.gpgsign", "false")
	return w
}

func (w *gitopsWorktree) git(args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	require.NoError(w.t, err, "git %s: %s", args[0], out)
	return strings.TrimSpace(string(out))
}

// commit writes files and commits them; it returns the commit SHA.
func (w *gitopsWorktree) commit(msg string, files map[string]string) string {
	w.t.Helper()
	for name, content := range files {
		p := filepath.Join(w.dir, name)
		require.NoError(w.t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(w.t, os.WriteFile(p, []byte(content), 0o644))
	}
	w.git("add", "-A")
	w.git("commit", "-q", "--allow-empty", "-m", msg)
	return w.git("rev-parse", "HEAD")
}

// gitopsBackend answers UnaryCall with its name.
type gitopsBackend struct {
	testgrpc.UnimplementedTestServiceServer
	name string
	port int
}

func (b *gitopsBackend) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{ServerId: b.name}, nil
}

func startGitopsBackend(t *testing.T, name string) *gitopsBackend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &gitopsBackend{name: name, port: lis.Addr().(*net.TCPAddr).Port}
	gs := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(gs, b)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return b
}

// gitopsClient is grpc-go's xDS client dialing xds:///gitops-greeter.
type gitopsClient struct {
	t   *testing.T
	svc testgrpc.TestServiceClient
}

func newGitopsClient(t *testing.T, xdsAddr string) *gitopsClient {
	t.Helper()
	res, err := xdsclient.Bootstrap{ServerAddr: xdsAddr, NodeID: gitopsNode, Metadata: map[string]any{"pod_name": "grpc-client"}}.Resolver()
	require.NoError(t, err)
	conn, err := grpc.NewClient("xds:///"+gitopsListener, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(res))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	conn.Connect()
	return &gitopsClient{t: t, svc: testgrpc.NewTestServiceClient(conn)}
}

func (c *gitopsClient) call() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.svc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil {
		return ""
	}
	return resp.GetServerId()
}

func (c *gitopsClient) lands(name string, msg string) {
	c.t.Helper()
	require.Eventually(c.t, func() bool { return c.call() == name }, gitopsWait, gitopsPoll, msg)
}

// gitopsFreeAddr returns a loopback address with a port free at the time of the
// call (the binary binds it right after).
func gitopsFreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// gitopsLegate is `legate serve` running as a subprocess.
type gitopsLegate struct {
	t        testing.TB
	xdsAddr  string
	httpAddr string
	cmd      *exec.Cmd
	done     chan struct{}
	logs     *gitopsBuffer
}

// startGitopsLegate runs the binary with args plus its listen addresses and
// waits for /healthz.
func startGitopsLegate(t testing.TB, args ...string) *gitopsLegate {
	t.Helper()
	p := &gitopsLegate{t: t, xdsAddr: gitopsFreeAddr(t), httpAddr: gitopsFreeAddr(t), done: make(chan struct{}), logs: &gitopsBuffer{}}
	args = append([]string{"serve", "--xds-addr", p.xdsAddr, "--http-addr", p.httpAddr}, args...)
	p.cmd = exec.Command(legateBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("legate logs:\n%s", p.logs.String())
		}
	})
	require.Eventually(t, func() bool {
		select {
		case <-p.done:
			return true
		default:
		}
		resp, err := http.Get("http://" + p.httpAddr + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, gitopsWait, gitopsPoll)
	select {
	case <-p.done:
		t.Fatalf("legate exited at start:\n%s", p.logs.String())
	default:
	}
	return p
}

// node returns the node's entry of GET /api/v1/nodes/{node}.
func (p *gitopsLegate) node(id string) (standalone.NodeView, bool) {
	var v standalone.NodeView
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
func (p *gitopsLegate) nodes() []standalone.NodeView {
	var v []standalone.NodeView
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
type gitopsStatus struct {
	State       string `json:"status"`
	Context     string `json:"context"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
}

// gitopsAllStatuses lists every status posted on sha, newest first.
func gitopsAllStatuses(t testing.TB, srv *gitea.Server, repo *gitea.Repository, sha string) []gitopsStatus {
	t.Helper()
	var out []gitopsStatus
	require.NoError(t, srv.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/statuses/"+sha+"?limit=50", nil, &out))
	return out
}

// gitopsLatestStatus is the newest status of context on sha (zero when none).
func gitopsLatestStatus(t testing.TB, srv *gitea.Server, repo *gitea.Repository, sha, context string) gitopsStatus {
	t.Helper()
	var combined struct {
		Statuses []gitopsStatus `json:"statuses"`
	}
	if err := srv.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/commits/"+sha+"/status", nil, &combined); err != nil {
		return gitopsStatus{}
	}
	for _, s := range combined.Statuses {
		if s.Context == context {
			return s
		}
	}
	return gitopsStatus{}
}

// gitopsWaitStatus waits until the newest status of context on sha has state.
func gitopsWaitStatus(t testing.TB, srv *gitea.Server, repo *gitea.Repository, sha, context, state string) gitopsStatus {
	t.Helper()
	var got gitopsStatus
	require.Eventually(t, func() bool {
		got = gitopsLatestStatus(t, srv, repo, sha, context)
		return got.State == state
	}, gitopsWait, 100*time.Millisecond, "commit %s never got %s status %q (last: %+v)", sha, context, state, &got)
	return got
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
