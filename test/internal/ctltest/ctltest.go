// Package ctltest runs legate's Kubernetes home (controller.Controller) in
// the end-to-end tests that drive it against an API server, so that each
// suite starts and stops it the same way.
package ctltest

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/legate-dev/legate/controller"
)

// Namespace is the controller's own namespace in the tests.
const Namespace = "legate-system"

// Client is a client of the API server at cfg that knows legate's kinds,
// with the controller's namespace (Namespace) created.
func Client(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}))
	return c
}

// Options are the options of a controller of cfg in a test: namespace
// Namespace, xDS on a free loopback port, no HTTP API, a state directory
// of the test's own and no logs. A suite changes what it needs.
func Options(t *testing.T, cfg *rest.Config) controller.Options {
	return controller.Options{
		Config: cfg, Namespace: Namespace, XDSAddr: "127.0.0.1:0", HTTPAddr: "0", StateDir: t.TempDir(), Log: logr.Discard(),
	}
}

// Start runs a controller with opts until the test ends; then it checks
// that the controller stops, without an error, within 30 s.
func Start(t *testing.T, opts controller.Options) *controller.Controller {
	t.Helper()
	crlog.SetLogger(logr.Discard()) // the controller logs through its own logger
	ctl, err := controller.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop")
		}
	})
	return ctl
}
