package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/test/internal/stats"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/legate-dev/legate/render"
	legatecue "github.com/legate-dev/legate/render/cue"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/standalone"
	"github.com/legate-dev/legate/test/gitea"
	"github.com/legate-dev/legate/test/internal/gitrepo"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

const (
	node       = "bench"
	routesName = "bench-routes"
	routeType  = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	ackTimeout = 30 * time.Second
)

// BenchmarkPushToACK runs both modes against one Gitea in the same run.
// Each iteration commits a new route prefix, pushes it (timed from the
// start of `git push`) and waits until the ADS client ACKs a route
// configuration carrying that prefix. It reports p50 and p99 in ms.
func BenchmarkPushToACK(b *testing.B) {
	srv := gitea.Start(b, gitea.Options{})
	for _, mode := range []struct {
		name    string
		webhook bool
		poll    time.Duration
	}{
		{"gitea-webhook", true, time.Hour},
		{"poll-1s", false, time.Second},
	} {
		b.Run(mode.name, func(b *testing.B) {
			repo := srv.CreateRepo(fmt.Sprintf("bench-%s-%d", mode.name, time.Now().UnixNano()))
			w := newWorktree(b)
			w.commit(0)
			w.push(srv.PushURL(repo))

			hookSecret := "bench-hook-secret-0123456789"
			secretFile := filepath.Join(b.TempDir(), "hook")
			require.NoError(b, os.WriteFile(secretFile, []byte(hookSecret), 0o600))
			cfg := serveconfig.Config{
				XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", StateDir: b.TempDir(),
				Sources: []serveconfig.SourceConfig{{
					Name: "bench", Git: &serveconfig.GitSource{URL: repo.CloneURL, Branch: "main"},
					Interval: serveconfig.Duration{Duration: mode.poll},
				}},
				Webhooks: serveconfig.WebhookConfig{Gitea: sources.Secret{File: secretFile}},
			}
			schema := legatecue.NewSchema() // shared by the renders, as legate serve does
			s, err := standalone.New(cfg, standalone.Options{Render: func() render.Options {
				stage := legatecue.NewStage(schema)
				return render.Options{Generators: []render.Generator{stage}, Checks: []render.Check{stage}}
			}})
			require.NoError(b, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			b.Cleanup(func() {
				cancel()
				require.NoError(b, <-done)
			})
			// Deliveries pass a recording proxy, to split the latency into
			// Gitea's part (push to webhook) and legate's (webhook to ACK).
			hooks := newHookRecorder(b, "http://"+s.HTTPAddr())
			if mode.webhook {
				require.NoError(b, srv.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/hooks", map[string]any{
					"type": "gitea", "active": true, "events": []string{"push"},
					"config": map[string]string{"url": hooks.url + "/hooks/gitea", "content_type": "json", "secret": hookSecret},
				}, nil))
			}
			client := newACKClient(b, s.XDSAddr())
			client.wait(b, prefix(0))

			lat := make([]time.Duration, 0, b.N)
			pushes := make([]time.Duration, 0, b.N)
			var hookToACK, afterPush []time.Duration
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				b.StopTimer()
				w.commit(i)
				// A random pause puts each push at a random phase of the
				// poll interval; without it the loop locks onto the ticks.
				<-time.After(time.Duration(rand.Int64N(int64(time.Second))))
				b.StartTimer()
				start := time.Now()
				w.push(srv.PushURL(repo))
				pushed := time.Now()
				pushes = append(pushes, pushed.Sub(start))
				acked := client.wait(b, prefix(i))
				lat = append(lat, acked.Sub(start))
				afterPush = append(afterPush, acked.Sub(pushed))
				if at, ok := hooks.since(start); ok {
					hookToACK = append(hookToACK, acked.Sub(at))
				}
			}
			b.StopTimer()
			if os.Getenv("PUSH_BENCH_METRICS") != "" {
				resp, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
				require.NoError(b, err)
				data, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				for _, l := range strings.Split(string(data), "\n") {
					if strings.Contains(l, "_sum") || strings.Contains(l, "_count") {
						b.Log(l)
					}
				}
			}
			slices.Sort(lat)
			b.ReportMetric(ms(stats.Percentile(lat, 50)), "p50-ms")
			b.ReportMetric(ms(stats.Percentile(lat, 99)), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			slices.Sort(pushes)
			b.ReportMetric(ms(stats.Percentile(pushes, 50)), "git-push-p50-ms")
			b.ReportMetric(ms(stats.Percentile(pushes, 99)), "git-push-p99-ms")
			slices.Sort(afterPush)
			b.ReportMetric(ms(stats.Percentile(afterPush, 50)), "after-push-p50-ms")
			b.ReportMetric(ms(stats.Percentile(afterPush, 99)), "after-push-p99-ms")
			if len(hookToACK) > 0 {
				slices.Sort(hookToACK)
				b.ReportMetric(ms(stats.Percentile(hookToACK, 50)), "hook-to-ack-p50-ms")
				b.ReportMetric(ms(stats.Percentile(hookToACK, 99)), "hook-to-ack-p99-ms")
			}
		})
	}
}

// hookRecorder is a reverse proxy in front of legate's HTTP address that
// records when each webhook delivery arrived.
type hookRecorder struct {
	url string
	mu  sync.Mutex
	at  []time.Time
}

func newHookRecorder(tb testing.TB, target string) *hookRecorder {
	tb.Helper()
	u, err := url.Parse(target)
	require.NoError(tb, err)
	h := &hookRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.at = append(h.at, time.Now())
		h.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// since returns the first delivery at or after t.
func (h *hookRecorder) since(t time.Time) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, at := range h.at {
		if !at.Before(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

func prefix(i int) string { return fmt.Sprintf("/push-%d", i) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// newWorktree creates the author's clone.
func newWorktree(tb testing.TB) *worktree {
	tb.Helper()
	return &worktree{gitrepo.New(tb, "bench", "bench@legate.invalid")}
}

// worktree is the author's clone.
type worktree struct{ *gitrepo.Repo }

// commit commits configuration i.
func (w *worktree) commit(i int) {
	w.Commit(prefix(i), map[string]string{"config.yaml": config(prefix(i)), "legate.yaml": "nodeIDs: [" + node + "]\n"})
}

func (w *worktree) push(remote string) { w.Git("push", "-q", remote, "main") }

// config is a listener → route (prefix p) → EDS cluster configuration.
func config(p string) string {
	return xdsyaml.Join(
		xdsyaml.APIListener("bench", "bench", routesName),
		xdsyaml.RouteConfiguration(routesName, "bench", xdsyaml.Route{Prefix: p, Cluster: "backend"}),
		xdsyaml.EDSCluster("backend"),
		xdsyaml.Endpoints("backend", 8081),
	)
}

// ackClient is an ADS stream of the node subscribed to the route
// configuration; it ACKs every response at once and records when it ACKed
// each route prefix.
type ackClient struct {
	mu    sync.Mutex
	acked map[string]time.Time
	err   error
	kick  chan struct{}
}

func newACKClient(tb testing.TB, addr string) *ackClient {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() {
		cancel()
		_ = conn.Close()
	})
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(tb, err)
	c := &ackClient{acked: map[string]time.Time{}, kick: make(chan struct{}, 1)}
	n := &corev3.Node{Id: node}
	require.NoError(tb, stream.Send(&discoveryv3.DiscoveryRequest{Node: n, TypeUrl: routeType, ResourceNames: []string{routesName}}))
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				c.fail(err)
				return
			}
			p, err := routePrefix(resp)
			if err == nil {
				err = stream.Send(&discoveryv3.DiscoveryRequest{
					Node: n, TypeUrl: routeType, ResourceNames: []string{routesName},
					VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(),
				})
			}
			if err != nil {
				c.fail(err)
				return
			}
			now := time.Now()
			c.mu.Lock()
			if _, seen := c.acked[p]; !seen {
				c.acked[p] = now
			}
			c.mu.Unlock()
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

func (c *ackClient) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !errors.Is(err, context.Canceled) {
		c.err = err
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// wait returns when the client ACKed prefix p.
func (c *ackClient) wait(tb testing.TB, p string) time.Time {
	tb.Helper()
	deadline := time.After(ackTimeout)
	for {
		c.mu.Lock()
		at, ok := c.acked[p]
		err := c.err
		c.mu.Unlock()
		require.NoError(tb, err)
		if ok {
			return at
		}
		select {
		case <-c.kick:
		case <-deadline:
			require.FailNow(tb, "no ACK of the pushed configuration", "prefix %s within %s", p, ackTimeout)
		}
	}
}

func routePrefix(resp *discoveryv3.DiscoveryResponse) (string, error) {
	if len(resp.GetResources()) != 1 {
		return "", fmt.Errorf("want one route configuration, got %d", len(resp.GetResources()))
	}
	var rc routev3.RouteConfiguration
	if err := resp.GetResources()[0].UnmarshalTo(&rc); err != nil {
		return "", err
	}
	vh := rc.GetVirtualHosts()
	if len(vh) == 0 || len(vh[0].GetRoutes()) == 0 {
		return "", errors.New("route configuration without routes")
	}
	return strings.Clone(vh[0].GetRoutes()[0].GetMatch().GetPrefix()), nil
}
