package webhook

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAdmin answers like Envoy's admin interface: POST
// /drain_listeners?graceful, and server.total_connections from stats,
// counting down by one at each read.
type fakeAdmin struct {
	mu          sync.Mutex
	requests    []string
	connections int
}

func (a *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, r.Method+" "+r.URL.RequestURI())
	switch {
	case r.URL.Path == "/drain_listeners" && r.Method == http.MethodPost:
		_, _ = fmt.Fprintln(w, "OK")
	case r.URL.Path == "/stats" && r.Method == http.MethodGet:
		_, _ = fmt.Fprintf(w, "server.stats_recent_lookups: 7\nserver.total_connections: %d\nserver.uptime: 9\n", a.connections)
		if a.connections > 0 {
			a.connections--
		}
	default:
		http.Error(w, "unexpected", http.StatusMethodNotAllowed)
	}
}

// runDrainHook runs the sidecar's preStop command with the admin at addr.
func runDrainHook(t *testing.T, addr string, drainSeconds int) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the drain hook runs in bash, which is not installed here")
	}
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	out, err := exec.Command("bash", "-c", drainScript, "drain", host, port, strconv.Itoa(drainSeconds)).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// The preStop hook POSTs the graceful drain to the admin interface, then
// waits until Envoy holds no connection (here: at the second look).
func TestDrainHookDrainsThenWaitsForConnections(t *testing.T) {
	admin := &fakeAdmin{connections: 1}
	srv := httptest.NewServer(admin)
	t.Cleanup(srv.Close)
	runDrainHook(t, srv.Listener.Addr().String(), 30)
	assert.Equal(t, []string{
		"POST /drain_listeners?graceful",
		"GET /stats?filter=server.total_connections",
		"GET /stats?filter=server.total_connections",
	}, admin.requests)
}

// The hook gives up after the drain time, and does not fail the pod's
// termination when the admin is gone.
func TestDrainHookEndsAtTheDrainTime(t *testing.T) {
	admin := &fakeAdmin{connections: 1000}
	srv := httptest.NewServer(admin)
	t.Cleanup(srv.Close)
	runDrainHook(t, srv.Listener.Addr().String(), 2)
	assert.Len(t, admin.requests, 3, "the drain and one look per second of drain time")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	runDrainHook(t, addr, 30)
}
