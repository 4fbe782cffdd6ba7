package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/test/envtest"
)

// proxies is the fleet size of BenchmarkProxyCertificates.
const proxies = 1000

// BenchmarkProxyCertificates issues the client certificates of 1 000 node
// IDs through kubepki.Authority.EnsureProxy against a real API server (a
// Get and a Create each, as the admission webhook does for a new node),
// then renews all of them with one RenewDue pass once the clock is past
// two thirds of their lifetime (a paged List and an Update each), and
// times a second pass that finds nothing due (the List and the checks);
// beside
// it, in the same iteration, the baseline: pki.(*CA).IssueNode for the
// same node IDs in memory, no API server. Each iteration uses a fresh
// namespace.
func BenchmarkProxyCertificates(b *testing.B) {
	cluster := envtest.Start(b)
	c, err := client.New(cluster.Config, client.Options{})
	require.NoError(b, err)
	ctx := context.Background()
	require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	ca, err := kubepki.LoadOrCreateCA(ctx, c, types.NamespacedName{Namespace: "legate-system", Name: "legate-ca"}, time.Now())
	require.NoError(b, err)
	nodes := make([]string, proxies)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("shop-%04d", i)
	}

	var inMemory, ensure, renew, idle time.Duration
	perCall := make([]time.Duration, 0, proxies*b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ns := fmt.Sprintf("fleet-%d", i)
		require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		clk := clocktesting.NewFakePassiveClock(time.Now())
		a := &kubepki.Authority{CA: ca, Client: c, Namespace: ns, Clock: clk}
		b.StartTimer()

		start := time.Now()
		for _, id := range nodes {
			_, err := ca.IssueNode([]string{id}, pki.DefaultLeafValidity, clk.Now())
			require.NoError(b, err)
		}
		inMemory += time.Since(start)

		start = time.Now()
		for _, id := range nodes {
			t := time.Now()
			require.NoError(b, a.EnsureProxy(ctx, ns, pki.ProxySecretName(id), id, false))
			perCall = append(perCall, time.Since(t))
		}
		ensure += time.Since(start)

		clk.SetTime(clk.Now().Add(pki.DefaultLeafValidity * 2 / 3).Add(time.Hour))
		start = time.Now()
		_, renewed, err := a.RenewDue(ctx)
		renew += time.Since(start)
		require.NoError(b, err)
		require.Equal(b, proxies, renewed, "every certificate is past two thirds")

		start = time.Now()
		_, renewed, err = a.RenewDue(ctx)
		idle += time.Since(start)
		require.NoError(b, err)
		require.Zero(b, renewed, "nothing is due right after a renewal")
	}
	b.StopTimer()
	n := float64(b.N)
	perCert := func(d time.Duration) float64 { return ms(d) / n / proxies }
	b.ReportMetric(perCert(inMemory), "issue-in-memory-ms/cert")
	b.ReportMetric(perCert(ensure), "ensure-ms/cert")
	b.ReportMetric(perCert(renew), "renew-ms/cert")
	b.ReportMetric(ms(inMemory)/n/1000, "issue-in-memory-1000-s")
	b.ReportMetric(ms(ensure)/n/1000, "ensure-1000-s")
	b.ReportMetric(ms(renew)/n/1000, "renew-1000-s")
	b.ReportMetric(ms(idle)/n/1000, "pass-nothing-due-1000-s")
	report(b, "ensure-call", perCall)
}
