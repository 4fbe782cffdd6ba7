package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// heldStatusWrites holds the controller's writes of EnvoyConfig statuses
// until the test lets them go, and tells which objects' writes it holds.
type heldStatusWrites struct {
	mu      sync.Mutex
	holding map[string]bool
	changed chan struct{} // receives after each write it starts holding
	open    chan struct{} // closed to let every write through
}

func (h *heldStatusWrites) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		path := req.URL.Path
		if req.Method != http.MethodPut || !strings.Contains(path, "/envoyconfigs/") || !strings.HasSuffix(path, "/status") {
			return rt.RoundTrip(req)
		}
		h.mu.Lock()
		h.holding[path] = true
		h.mu.Unlock()
		select {
		case h.changed <- struct{}{}:
		default:
		}
		<-h.open
		h.mu.Lock()
		delete(h.holding, path)
		h.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (h *heldStatusWrites) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.holding)
}

// EnvoyConfigs are reconciled side by side: while the API server holds
// one object's status write, the others' reconciles go on to theirs. A
// kubectl apply of many objects, or a rollback across a fleet (whose
// statuses these reconciles write), used to take one object's API round
// trips after the other.
func TestEnvoyConfigsAreReconciledSideBySide(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	hold := &heldStatusWrites{holding: map[string]bool{}, changed: make(chan struct{}, 1), open: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(hold.open) }) }
	t.Cleanup(release)
	held := rest.CopyConfig(cluster.Config)
	held.WrapTransport = hold.wrap
	start(t, held)
	ctx := context.Background()

	const objects = 4
	ecs := make([]*v1alpha1.EnvoyConfig, objects)
	for i := range ecs {
		ec, err := xdsyaml.EnvoyConfig(fmt.Sprintf("side-%d", i), xdsyaml.StaticCluster("c", 1000+i))
		require.NoError(t, err)
		ec.Name = ec.Spec.NodeID
		require.NoError(t, c.Create(ctx, ec))
		ecs[i] = ec
	}

	deadline := time.After(60 * time.Second)
	for hold.held() < 2 {
		select {
		case <-hold.changed:
		case <-deadline:
			t.Fatalf("%d status write(s) held after 60 s: the other EnvoyConfigs' reconciles wait for it", hold.held())
		}
	}
	release()
	for _, ec := range ecs {
		require.Eventually(t, func() bool {
			var got v1alpha1.EnvoyConfig
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ec), &got))
			return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
		}, 60*time.Second, 50*time.Millisecond, "%s is reported InSync once its status write goes through", ec.Name)
	}
}
