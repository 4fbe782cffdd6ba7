package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// haReplica is one controller of a replicated set, stoppable on its own.
type haReplica struct {
	name string
	ctl  *controller.Controller
	stop func()
}

// startReplica runs a leader-electing controller named name, with short
// election timings, until stop or the end of the test.
func startReplica(t *testing.T, cfg *rest.Config, name string) *haReplica {
	t.Helper()
	return startController(t, cfg, controller.Options{
		LeaderElect: true, Replica: name, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		AnswersInterval: 100 * time.Millisecond,
	})
}

// startController runs a controller with o and the tests' settings until
// stop or the end of the test.
func startController(t *testing.T, cfg *rest.Config, o controller.Options) *haReplica {
	t.Helper()
	crlog.SetLogger(logr.Discard())
	name := o.Replica
	o.Config, o.Namespace, o.XDSAddr, o.HTTPAddr, o.StateDir = cfg, "legate-system", "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	o.Render, o.Log = renderOptions, testr.NewWithOptions(t, testr.Options{Verbosity: 1}).WithName(name)
	if o.FetchAllowNetworks == nil {
		o.FetchAllowNetworks = loopback
	}
	ctl, err := controller.New(o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "replica %s stopped", name)
		case <-time.After(30 * time.Second):
			t.Errorf("replica %s did not stop", name)
		}
	}
	t.Cleanup(stop)
	return &haReplica{name: name, ctl: ctl, stop: stop}
}

func (r *haReplica) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + r.ctl.HTTPAddr() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

func (r *haReplica) view(t *testing.T) controller.ReplicaView {
	t.Helper()
	var v controller.ReplicaView
	r.getJSON(t, "/api/v1/replica", &v)
	return v
}

// published is the version this replica serves node under ("" if none).
func (r *haReplica) published(t *testing.T, node string) string {
	t.Helper()
	resp, err := http.Get("http://" + r.ctl.HTTPAddr() + "/api/v1/nodes/" + node)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	var v statuspage.NodeView
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	if v.Published == nil {
		return ""
	}
	return v.Published.Version
}

// rollbacks is the replica's count of rollbacks of node.
func (r *haReplica) rollbacks(t *testing.T, node string) int {
	t.Helper()
	resp, err := http.Get("http://" + r.ctl.HTTPAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^legate_revisions_rollbacks_total\{node="` + regexp.QuoteMeta(node) + `"\} (\d+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n
}

// leader waits for exactly one of rs to lead, as every one of them says,
// and returns it.
func leader(t *testing.T, rs []*haReplica) *haReplica {
	t.Helper()
	var lead *haReplica
	require.Eventually(t, func() bool {
		lead = nil
		holders := map[string]bool{}
		for _, r := range rs {
			v := r.view(t)
			holders[v.LeaseHolder] = true
			if v.Role == "leader" {
				if lead != nil {
					return false
				}
				lead = r
			}
		}
		return lead != nil && len(holders) == 1 && holders[lead.name]
	}, 60*time.Second, 50*time.Millisecond, "one leader, named by every replica")
	return lead
}

// Three replicas on one API server, a grpc-go client on each: every
// replica serves the leader's publication under the same versions and the
// EnvoyConfig counts all three proxies; a configuration every client
// rejects is rolled back exactly once, with the text of proxies of other
// replicas than the leader; when the leader stops, another leads within
// the lease timing and the next change is served by the replicas left.
func TestReplicasServeOneLeadersDecisions(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctx := context.Background()
	rs := []*haReplica{startReplica(t, cluster.Config, "replica-0"), startReplica(t, cluster.Config, "replica-1"), startReplica(t, cluster.Config, "replica-2")}
	lead := leader(t, rs)

	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	good := func(route string) []string {
		return []string{
			xdsyaml.APIListener("greeter", "greeter", "routes"),
			xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: route}),
			xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
			xdsyaml.EDSCluster("b"), xdsyaml.Endpoints("b", b.Port),
		}
	}
	ec := envoyConfig(t, "ha", good("a")...)
	require.NoError(t, c.Create(ctx, ec))
	clients := make([]*backend.Client, len(rs))
	for i, r := range rs {
		clients[i] = backend.Dial(t, r.ctl.XDSAddr(), "ha", fmt.Sprintf("pod-%d", i), "greeter")
	}
	for i := range rs {
		require.Eventually(t, func() bool { return clients[i].Call() == "a" }, 60*time.Second, 50*time.Millisecond, "the client of replica %d", i)
	}
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.Proxies != nil && got.Status.Proxies.Accepted == 3 && got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
	}, 60*time.Second, 50*time.Millisecond, "the leader counts the proxies of every replica")
	version := *get(t, c, ec).Status.PublishedVersion
	for _, r := range rs {
		assert.Equal(t, lead.published(t, "ha"), r.published(t, "ha"), "replica %s serves the leader's version", r.name)
	}

	// Every client rejects this one (grpc-go refuses a STATIC cluster).
	bad := envoyConfig(t, "ha",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "b"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
		xdsyaml.StaticCluster("b", b.Port),
	)
	cur := get(t, c, ec)
	cur.Spec = bad.Spec
	require.NoError(t, c.Update(ctx, cur))
	var rolled *v1alpha1.EnvoyConfig
	require.Eventually(t, func() bool {
		rolled = get(t, c, ec)
		return rolled.Status.CacheState != nil && *rolled.Status.CacheState == v1alpha1.CacheRollback
	}, 60*time.Second, 50*time.Millisecond, "the rejected revision is rolled back")
	assert.Equal(t, version, *rolled.Status.PublishedVersion, "the good revision is served again")
	assert.Contains(t, rolled.Status.Rejection, "rejected by 3 of 3 proxies", "the whole population is judged")
	var revs v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(ctx, &revs, client.InNamespace("legate-system")))
	var rejectedBy []string
	for _, rev := range revs.Items {
		if rev.Spec.NodeID == "ha" && rev.Status.Taint != nil {
			for _, p := range rev.Status.Taint.Proxies {
				rejectedBy = append(rejectedBy, p.Proxy)
				assert.Contains(t, p.Error, "unsupported cluster type", "each proxy's own text")
			}
		}
	}
	assert.ElementsMatch(t, []string{"pod-0", "pod-1", "pod-2"}, rejectedBy, "the followers' proxies' rejections reached the leader")
	require.Eventually(t, func() bool {
		for _, r := range rs {
			if r.published(t, "ha") != lead.published(t, "ha") {
				return false
			}
		}
		return true
	}, 60*time.Second, 50*time.Millisecond, "every replica serves the rollback")
	total := 0
	for _, r := range rs {
		total += r.rollbacks(t, "ha")
	}
	assert.Equal(t, 1, total, "exactly one rollback among the replicas")
	for i := range rs {
		assert.Equal(t, "a", clients[i].Call(), "client %d keeps the good configuration", i)
	}

	// The leader goes; another leads and serves the next change.
	lead.stop()
	var left []*haReplica
	for _, r := range rs {
		if r != lead {
			left = append(left, r)
		}
	}
	next := leader(t, left)
	assert.NotEqual(t, lead.name, next.name)
	// The new leader may write the object (its status, a handled
	// annotation) between the read and the update: retry on a conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur = get(t, c, ec)
		cur.Spec = envoyConfig(t, "ha", good("b")...).Spec
		return c.Update(ctx, cur)
	}))
	for _, r := range left {
		i := indexOf(rs, r)
		require.Eventually(t, func() bool { return clients[i].Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the client of replica %d follows the new leader", i)
	}
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync && got.Status.Proxies != nil && got.Status.Proxies.Accepted == 2
	}, 60*time.Second, 50*time.Millisecond, "the new leader counts the proxies left")
	page := httpGet(t, "http://"+next.ctl.HTTPAddr()+"/")
	assert.Contains(t, page, "replica "+next.name+", leader", "the status page says the role")
}

func indexOf(rs []*haReplica, r *haReplica) int {
	for i, x := range rs {
		if x == r {
			return i
		}
	}
	return -1
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
