package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/legateproc"
	"github.com/legate-dev/legate/test/internal/service"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// controllerProc is one `legate controller --leader-elect` process.
type controllerProc struct {
	name, xds, http string
	proc            *legateproc.Proc
	logs            *strings.Builder
}

func (p *controllerProc) role() controller.ReplicaView {
	var v controller.ReplicaView
	getJSON("http://"+p.http+"/api/v1/replica", &v)
	return v
}

// Three `legate controller` processes on one API server behind one address
// (a Service in miniature), three grpc-go clients spread over them. A
// configuration every client rejects is applied and the leader is killed
// with SIGKILL at once, mid-rollout: another replica takes the Lease when
// it expires, and the scenario still ends right: the rejected revision
// tainted once, one RolledBack event, the good revision served by every
// replica left, the dead leader's clients reconnected to them, and every
// client calling the good backend.
func TestReplicasSurviveTheLeadersKill(t *testing.T) {
	_, c, kubeconfig := controllerCluster(t, envtest.Start)
	ctx := context.Background()

	var procs []*controllerProc
	for i := range 3 {
		p := &controllerProc{name: fmt.Sprintf("replica-%d", i), xds: legateproc.LoopbackAddr(t), http: legateproc.LoopbackAddr(t), logs: &strings.Builder{}}
		var err error
		p.proc, err = legateproc.Start(legateBin, []string{
			"controller", "--kubeconfig", kubeconfig, "--xds-addr", p.xds, "--http-addr", p.http, "--state-dir", t.TempDir(),
			"--leader-elect", "--replica", p.name, "--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "250ms",
		}, p.logs)
		require.NoError(t, err)
		t.Cleanup(func() { p.proc.Stop(10 * time.Second) })
		procs = append(procs, p)
	}
	leaderOf := func(ps []*controllerProc) *controllerProc {
		var lead *controllerProc
		require.Eventually(t, func() bool {
			lead = nil
			for _, p := range ps {
				if p.role().Role == "leader" {
					lead = p
				}
			}
			return lead != nil
		}, 60*time.Second, 50*time.Millisecond, "a leader is elected")
		return lead
	}
	lead := leaderOf(procs)

	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	docs := func(bad bool) []string {
		route, cluster := "a", xdsyaml.EDSCluster("b")
		if bad {
			route, cluster = "b", xdsyaml.StaticCluster("b", b.Port) // grpc-go refuses STATIC
		}
		return []string{
			xdsyaml.APIListener("greeter", "greeter", "routes"),
			xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: route}),
			xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port), cluster, xdsyaml.Endpoints("b", b.Port),
		}
	}
	ec, err := xdsyaml.EnvoyConfig("kill", docs(false)...)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, ec))
	// The clients dial one address that spreads them over the replicas, as
	// the Service legate-xds does.
	var addrs []string
	for _, p := range procs {
		addrs = append(addrs, p.xds)
	}
	svc := service.Start(t, addrs...)
	clients := make([]*backend.Client, len(procs))
	for i := range procs {
		clients[i] = backend.Dial(t, svc.Addr(), "kill", fmt.Sprintf("pod-%d", i), "greeter")
	}
	for i, cl := range clients {
		require.Eventually(t, func() bool { return cl.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "client %d", i)
	}
	served := func(ps []*controllerProc) int {
		n := 0
		for _, p := range ps {
			var view statuspage.NodeView
			if getJSON("http://"+p.http+"/api/v1/nodes/kill", &view) {
				n += len(view.Proxies)
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return served(procs) == 3 }, 60*time.Second, 50*time.Millisecond, "every client has its stream")
	getEC := func() *v1alpha1.EnvoyConfig {
		var got v1alpha1.EnvoyConfig
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ec), &got))
		return &got
	}
	require.Eventually(t, func() bool {
		got := getEC()
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync && got.Status.Proxies != nil && got.Status.Proxies.Accepted == 3
	}, 60*time.Second, 50*time.Millisecond, "accepted by the proxies of every replica")
	good := *getEC().Status.PublishedVersion

	cur := getEC()
	bad, err := xdsyaml.EnvoyConfig("kill", docs(true)...)
	require.NoError(t, err)
	cur.Spec = bad.Spec
	require.NoError(t, c.Update(ctx, cur))
	lead.proc.Kill() // SIGKILL: no step-down, the Lease runs out
	killedAt := time.Now()

	var left []*controllerProc
	for _, p := range procs {
		if p != lead {
			left = append(left, p)
		}
	}
	next := leaderOf(left)
	t.Logf("%s leads %s after the kill", next.name, time.Since(killedAt).Round(10*time.Millisecond))
	require.Eventually(t, func() bool {
		got := getEC()
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheRollback && *got.Status.PublishedVersion == good
	}, 90*time.Second, 50*time.Millisecond, "the rejected revision is rolled back to the good one:\n%s", next.logs)
	for _, p := range left {
		require.Eventually(t, func() bool {
			var view struct {
				Published *struct{ Hash string } `json:"published"`
			}
			return getJSON("http://"+p.http+"/api/v1/nodes/kill", &view) && view.Published != nil && strings.HasPrefix(view.Published.Hash, good)
		}, 60*time.Second, 50*time.Millisecond, "%s serves the good revision", p.name)
	}

	out, err := exec.Command(legateBin, "status", "--server", next.http).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "replica "+next.name+": leader (the Lease holder is "+next.name+")", "legate status says the role")
	assert.Contains(t, string(out), "kill", "and the node")

	// The clients of the dead leader reconnected through the Service to a
	// replica left; every client kept the good configuration.
	require.Eventually(t, func() bool { return served(left) == 3 }, 60*time.Second, 50*time.Millisecond, "every client reconnects to a replica left")
	for i, cl := range clients {
		assert.Equal(t, "a", cl.Call(), "client %d keeps the good configuration", i)
	}

	var revs v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(ctx, &revs, client.InNamespace("legate-system")))
	tainted := 0
	for _, r := range revs.Items {
		if r.Spec.NodeID == "kill" && r.Status.Taint != nil {
			tainted++
		}
	}
	assert.Equal(t, 1, tainted, "the rejected revision is tainted, once")
	require.Eventually(t, func() bool {
		var evs eventsv1.EventList
		require.NoError(t, c.List(ctx, &evs, client.InNamespace("default")))
		n := 0
		for _, ev := range evs.Items {
			if ev.Regarding.Name == "kill" && ev.Reason == "RolledBack" {
				n++
				if ev.Series != nil {
					n += int(ev.Series.Count) - 1
				}
			}
		}
		return n == 1
	}, 30*time.Second, 50*time.Millisecond, "one RolledBack event")
}
