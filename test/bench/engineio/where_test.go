package engineio

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/legate-dev/legate/test/internal/stats"
)

// Where the Kubernetes home's time goes during a ThousandNodes round: the
// CPU that kube-apiserver, etcd and the benchmark's own process used (from
// /proc, Linux only: elsewhere the figures are left out), and the API
// calls' latencies as the store's client saw them, by verb. Together they
// say whether the round is bound by CPU (the cores busy for the whole
// round) or by waiting (the cores partly idle while calls take long).

// clockTick is the unit of /proc/PID/stat's utime and stime: USER_HZ, 100
// on every Linux the project runs on.
const clockTick = 10 * time.Millisecond

// cpuUse is the CPU each process has used so far, by command name: the
// benchmark's own ("self") and its children's (envtest starts
// kube-apiserver and etcd as children of the test process).
func cpuUse() map[string]time.Duration {
	out := map[string]time.Duration{}
	self := os.Getpid()
	if d, ok := procCPU(self); ok {
		out["self"] = d
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		name, rest, ok := commOf(raw)
		if !ok || len(rest) < 2 {
			continue
		}
		// rest starts at field 3 (state); field 4 is the parent.
		if ppid, err := strconv.Atoi(rest[1]); err != nil || ppid != self {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if d, ok := procCPU(pid); ok {
			out[name] += d
		}
	}
	return out
}

// commOf splits a /proc/PID/stat line after its command name, which is in
// parentheses and may itself hold spaces or parentheses.
func commOf(raw []byte) (string, []string, bool) {
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	return string(raw[open+1 : end]), strings.Fields(string(raw[end+1:])), true
}

// procCPU is the user and system time pid has used.
func procCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	_, rest, ok := commOf(raw)
	// utime and stime are fields 14 and 15, rest[11] and rest[12].
	if !ok || len(rest) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseInt(rest[11], 10, 64)
	sys, err2 := strconv.ParseInt(rest[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(user+sys) * clockTick, true
}

// reportCPU reports the CPU each process used between before and after,
// per round, in ms, beside the round's wall time.
func reportCPU(b *testing.B, before, after map[string]time.Duration, rounds int) {
	b.Helper()
	for name, d := range after {
		metric := strings.NewReplacer("kube-apiserver", "apiserver").Replace(name)
		b.ReportMetric(ms(d-before[name])/float64(rounds), metric+"-cpu-ms")
	}
}

// callTimes records how long each API call took, by verb, as the client
// saw it (queueing in the client included).
type callTimes struct {
	cfg    *rest.Config // the API server's, as the store reaches it, untimed
	mu     sync.Mutex
	byVerb map[string][]time.Duration
	starts map[string][]time.Time
	on     bool
}

func (c *callTimes) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byVerb, c.starts, c.on = map[string][]time.Duration{}, map[string][]time.Time{}, true
}

func (c *callTimes) stop() map[string][]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.byVerb
}

func (c *callTimes) add(verb string, start time.Time, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on {
		c.byVerb[verb] = append(c.byVerb[verb], d)
		c.starts[verb] = append(c.starts[verb], start)
	}
}

// started counts the calls of verb that started between from and to:
// the unmarkings that ran while publications were still being made.
func (c *callTimes) started(verb string, from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.starts[verb] {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// wrap is a rest.Config transformation for kubeStore: the store's client
// times its calls into c.
func (c *callTimes) wrap(cfg *rest.Config) *rest.Config {
	c.cfg = rest.CopyConfig(cfg)
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			start := time.Now()
			resp, err := rt.RoundTrip(r)
			kind := "configmap"
			if strings.Contains(r.URL.Path, "envoyconfigrevisions") {
				kind = "revision"
			}
			c.add(r.Method+" "+kind, start, time.Since(start))
			return resp, err
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// reportCalls reports, per verb, the calls per node and their p50 and p99.
func reportCalls(b *testing.B, byVerb map[string][]time.Duration, rounds int) {
	b.Helper()
	for _, verb := range slices.Sorted(func(yield func(string) bool) {
		for v := range byVerb {
			if !yield(v) {
				return
			}
		}
	}) {
		lat := byVerb[verb]
		name := strings.ReplaceAll(strings.ToLower(verb), " ", "-")
		b.ReportMetric(float64(len(lat))/float64(rounds*nodes), name+"-per-node")
		b.ReportMetric(ms(stats.Percentile(lat, 50)), name+"-p50-ms")
		b.ReportMetric(ms(stats.Percentile(lat, 99)), name+"-p99-ms")
	}
}
