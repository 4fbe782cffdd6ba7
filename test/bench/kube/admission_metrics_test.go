package kube

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// apiMetrics is one scrape of the API server's /metrics, the series the
// admission benchmarks split a Pod's creation with: what the API server
// itself measured of the webhook calls (apiserver_admission_webhook_*),
// of its whole admission (apiserver_admission_step_*) and of the create
// requests, so that a figure says where the time over a plain Pod went.
type apiMetrics map[string]float64

// scrapeAPIServer reads the series of the API server's /metrics whose
// name starts with one of prefixes, keyed by the whole series line (name
// and labels).
func scrapeAPIServer(b *testing.B, cfg *rest.Config, prefixes ...string) apiMetrics {
	b.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(b, err)
	return scrape(b, hc, strings.TrimSuffix(cfg.Host, "/")+"/metrics", prefixes)
}

// scrapeController reads the series of the controller's /metrics (its
// status API on addr) whose name starts with one of prefixes.
func scrapeController(b *testing.B, addr string, prefixes ...string) apiMetrics {
	b.Helper()
	return scrape(b, http.DefaultClient, "http://"+addr+"/metrics", prefixes)
}

func scrape(b *testing.B, hc *http.Client, url string, prefixes []string) apiMetrics {
	b.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	require.NoError(b, err)
	resp, err := hc.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	require.Equal(b, http.StatusOK, resp.StatusCode, "GET %s", url)
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	require.NoError(b, err)
	out := apiMetrics{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		keep := false
		for _, p := range prefixes {
			keep = keep || strings.HasPrefix(line, p)
		}
		if !keep {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	require.NoError(b, sc.Err())
	return out
}

// sum adds the series whose key holds every one of parts, in m minus in
// before.
func (m apiMetrics) sum(before apiMetrics, parts ...string) float64 {
	var total float64
	for k, v := range m {
		match := true
		for _, p := range parts {
			match = match && strings.Contains(k, p)
		}
		if match {
			total += v - before[k]
		}
	}
	return total
}

// admissionSeries are the API server's series admissionSplit reads.
var admissionSeries = []string{
	"apiserver_admission_webhook_admission_duration_seconds_",
	"apiserver_admission_step_admission_duration_seconds_",
	"apiserver_request_duration_seconds_",
	"etcd_request_duration_seconds_",
}

// admissionSplit is what the API server measured of a burst of Pod
// creations: how many webhook calls each Pod cost, the time of those
// calls (the round trip to legate, TLS included), of its whole admission
// chain and of the create request it served.
type admissionSplit struct {
	pods                                    int
	calls, webhook, admission, served, etcd float64
	// Of legate's side: the handler's time (decode to answer written)
	// and the connections the API server opened.
	handler, connections float64
	// The API server's requests on Secrets while the burst ran (the
	// proxy certificates' reads and writes), and its lists of them (the
	// renewal passes, each reading every proxy Secret).
	secretRequests, secretLists float64
}

// legateSeries are the controller's series admissionSplit reads.
var legateSeries = []string{"legate_admission_"}

func (s *admissionSplit) add(after, before, legateAfter, legateBefore apiMetrics, pods int) {
	s.pods += pods
	s.handler += legateAfter.sum(legateBefore, "legate_admission_duration_seconds_sum{", `webhook="pods"`)
	s.connections += legateAfter.sum(legateBefore, "legate_admission_connections_total")
	s.calls += after.sum(before, "apiserver_admission_webhook_admission_duration_seconds_count{")
	s.webhook += after.sum(before, "apiserver_admission_webhook_admission_duration_seconds_sum{")
	s.admission += after.sum(before, "apiserver_admission_step_admission_duration_seconds_sum{", `operation="CREATE"`)
	s.etcd += after.sum(before, "etcd_request_duration_seconds_sum{", `operation="create"`, "pods")
	s.served += after.sum(before, "apiserver_request_duration_seconds_sum{", `resource="pods"`, `verb="POST"`)
	s.secretRequests += after.sum(before, "apiserver_request_duration_seconds_count{", `resource="secrets"`)
	s.secretLists += after.sum(before, "apiserver_request_duration_seconds_count{", `resource="secrets"`, `verb="LIST"`)
}

func (s *admissionSplit) report(b *testing.B, name string) {
	n := float64(s.pods)
	b.ReportMetric(s.calls/n, name+"-webhook-calls/pod")
	b.ReportMetric(1000*s.webhook/n, name+"-apiserver-webhook-mean-ms")
	b.ReportMetric(1000*s.admission/n, name+"-apiserver-admission-mean-ms")
	b.ReportMetric(1000*s.served/n, name+"-apiserver-request-mean-ms")
	b.ReportMetric(1000*s.etcd/n, name+"-etcd-create-mean-ms")
	b.ReportMetric(1000*s.handler/n, name+"-legate-handler-mean-ms")
	b.ReportMetric(s.connections/n, name+"-legate-connections/pod")
	b.ReportMetric(s.secretRequests/n, name+"-secret-requests/pod")
	b.ReportMetric(s.secretLists/float64(b.N), name+"-secret-lists/burst")
}
