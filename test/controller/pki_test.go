package controller_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
	"github.com/legate-dev/legate/test/xdsclient"
	"github.com/legate-dev/legate/webhook"
)

// injectedPod is a Pod of namespace asking for a sidecar of node.
func injectedPod(namespace, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: node + "-", Namespace: namespace,
			Labels:      map[string]string{webhook.InjectLabel: webhook.Enabled},
			Annotations: map[string]string{"legate.dev/node-id": node},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}

// writeSecret writes a proxy Secret's files into dir as the kubelet
// updates a mounted Secret: the new files replace the old at once.
func writeSecret(t *testing.T, s *corev1.Secret, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, key := range []string{pki.ProxyCAKey, pki.ProxyCertKey, pki.ProxyKeyKey} {
		tmp := filepath.Join(dir, "."+key+".tmp")
		require.NoError(t, os.WriteFile(tmp, s.Data[key], 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, key)))
	}
}

// serialOf is the serial number of the certificate in a Secret's tls.crt.
func serialOf(t *testing.T, s *corev1.Secret) *big.Int {
	t.Helper()
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	require.NotNil(t, block, "Secret %s/%s holds a PEM certificate", s.Namespace, s.Name)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert.SerialNumber
}

// An injected proxy gets a client certificate for its node ID from
// legate's own CA once its Pod is stored: grpc-go with it is served its
// node over mutual TLS, the certificate is refused for another node, a
// Pod of another namespace cannot take the node's identity, and when the
// proxy's and the xDS server's certificates are renewed (two thirds into
// their lifetime) the client keeps its stream and its updates, and new
// connections get the new certificates, without a restart.
func TestInjectedProxyGetsItsCertificate(t *testing.T) {
	t.Parallel()
	const validity = 30 * time.Second // renewed 20 s after issue
	c, _, ctl := admitted(t, func(o *controller.Options) {
		o.PKI = &kubepki.Options{
			CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"},
			ProxyValidity: validity, ServerValidity: validity,
		}
	})
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	ec := envoyConfig(t, "shop",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
	)
	require.NoError(t, c.Create(ctx, ec))

	pod := injectedPod("default", "shop")
	require.NoError(t, c.Create(ctx, pod))
	key := client.ObjectKey{Namespace: "default", Name: pki.ProxySecretName("shop")}
	var secret corev1.Secret
	require.Eventually(t, func() bool { return c.Get(ctx, key, &secret) == nil }, 30*time.Second, 50*time.Millisecond,
		"the controller issues the proxy's certificate once the Pod is stored")
	first := serialOf(t, &secret)
	var server corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "legate-system", Name: "legate-xds-tls"}, &server))
	firstServer := serialOf(t, &server)

	dir := t.TempDir()
	writeSecret(t, &secret, dir)
	files := &xdsclient.TLSFiles{CAFile: filepath.Join(dir, pki.ProxyCAKey), CertFile: filepath.Join(dir, pki.ProxyCertKey), KeyFile: filepath.Join(dir, pki.ProxyKeyKey)}
	proxy := backend.DialBootstrap(t, xdsclient.Bootstrap{ServerAddr: ctl.XDSAddr(), NodeID: "shop", Metadata: map[string]any{"pod_name": "shop-1"}, TLS: files}, "greeter")
	require.Eventually(t, func() bool { return proxy.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "served its node with the issued certificate")

	pair, err := tls.X509KeyPair(secret.Data[pki.ProxyCertKey], secret.Data[pki.ProxyKeyKey])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(secret.Data[pki.ProxyCAKey]))
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}})
	assert.Equal(t, codes.PermissionDenied, status.Code(adsError(t, ctl.XDSAddr(), creds, "edge", resourcev3.ListenerType)), "the certificate fetches its own node only")

	// Another namespace cannot take the node's identity.
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}))
	msg := refusal(t, c.Create(ctx, injectedPod("elsewhere", "shop")))
	assert.Contains(t, msg, `node ID "shop" belongs to another namespace`)
	assert.NotContains(t, msg, "default/shop", "nothing of the other namespace is told")
	err = c.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: pki.ProxySecretName("shop")}, &corev1.Secret{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "no certificate is issued there")

	// A node nobody configures is issued to the first namespace that
	// asks; once another namespace configures it, that certificate is
	// refused for it.
	require.NoError(t, c.Create(ctx, injectedPod("elsewhere", "future")))
	var early corev1.Secret
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: pki.ProxySecretName("future")}, &early) == nil
	}, 30*time.Second, 50*time.Millisecond, "a node nobody configures is free")
	require.NoError(t, c.Create(ctx, envoyConfig(t, "future",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
	)))
	earlyPair, err := tls.X509KeyPair(early.Data[pki.ProxyCertKey], early.Data[pki.ProxyKeyKey])
	require.NoError(t, err)
	earlyCreds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{earlyPair}})
	require.Eventually(t, func() bool {
		return status.Code(adsError(t, ctl.XDSAddr(), earlyCreds, "future", resourcev3.ListenerType)) == codes.PermissionDenied
	}, 30*time.Second, 100*time.Millisecond, "another namespace's certificate is refused for the node default configures")
	assert.NoError(t, adsError(t, ctl.XDSAddr(), creds, "shop", resourcev3.ListenerType), "the node's own namespace's certificate is served")

	// Both certificates are renewed without a restart.
	require.Eventually(t, func() bool {
		require.NoError(t, c.Get(ctx, key, &secret))
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&server), &server))
		return serialOf(t, &secret).Cmp(first) != 0 && serialOf(t, &server).Cmp(firstServer) != 0
	}, 90*time.Second, 200*time.Millisecond, "the proxy's and the server's certificates are renewed")
	writeSecret(t, &secret, dir) // what the kubelet does with the mounted Secret

	// The client kept its stream: an update reaches it.
	edit := get(t, c, ec)
	edited := envoyConfig(t, "shop",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "b"}),
		xdsyaml.EDSCluster("b"), xdsyaml.Endpoints("b", b.Port),
	)
	edit.Spec = edited.Spec
	require.NoError(t, c.Update(ctx, edit))
	require.Eventually(t, func() bool { return proxy.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the client follows updates across the renewals")

	// A new connection is served the renewed server certificate, and a
	// new proxy with the renewed files is served.
	pair, err = tls.X509KeyPair(secret.Data[pki.ProxyCertKey], secret.Data[pki.ProxyKeyKey])
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		conn, err := tls.Dial("tcp", ctl.XDSAddr(), &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}})
		if err != nil {
			return false
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Cmp(firstServer) != 0
	}, 30*time.Second, 100*time.Millisecond, "a new connection gets the renewed server certificate")
	fresh := backend.DialBootstrap(t, xdsclient.Bootstrap{ServerAddr: ctl.XDSAddr(), NodeID: "shop", Metadata: map[string]any{"pod_name": "shop-2"}, TLS: files}, "greeter")
	require.Eventually(t, func() bool { return fresh.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "a proxy with the renewed certificate is served")

	// A proxy Secret deleted under a running Pod is issued again.
	require.NoError(t, c.Delete(ctx, &secret))
	require.Eventually(t, func() bool {
		var again corev1.Secret
		return c.Get(ctx, key, &again) == nil && again.UID != secret.UID
	}, 30*time.Second, 50*time.Millisecond, "the deleted proxy Secret is issued again for the Pod that mounts it")
}
