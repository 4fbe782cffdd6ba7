package kubepki_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/xds"
)

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// What the controller wires: the xDS server's certificates, and two
// runnables of a controller-runtime manager (the leader's and every
// replica's).
var (
	_ xds.Certificates               = (*kubepki.ServerCertificate)(nil)
	_ manager.Runnable               = (*kubepki.Authority)(nil)
	_ manager.LeaderElectionRunnable = (*kubepki.Authority)(nil)
	_ manager.Runnable               = (*kubepki.ServerCertificate)(nil)
	_ manager.LeaderElectionRunnable = (*kubepki.ServerCertificate)(nil)
)

// logs collects log lines, to check that no key material reaches them.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprintln(&l.buf, prefix, args)
	}, funcr.Options{Verbosity: 1})
}

func (l *logs) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// noSecrets fails when s holds key material or certificates.
func noSecrets(t *testing.T, s, what string) {
	t.Helper()
	assert.NotContains(t, s, "PRIVATE KEY", "%s: no key material", what)
	assert.NotContains(t, s, "BEGIN", "%s: no PEM", what)
}

func namespace(t *testing.T, c client.Client, name string) string {
	t.Helper()
	require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func get(t *testing.T, c client.Client, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s))
	return s
}

func leafOf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	return pair.Leaf
}

func verifies(ca *pki.CA, leaf *x509.Certificate, at time.Time, usage x509.ExtKeyUsage) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// TestCA: the CA is made once, kept in its Secret and read back by every
// later or racing caller; a Secret that holds no usable CA is an error
// naming it without its content.
func TestCA(t *testing.T) {
	c := envtest.Start(t).Client
	ctx := context.Background()
	ns := namespace(t, c, "legate-system")
	key := types.NamespacedName{Namespace: ns, Name: "legate-ca"}

	ca, err := kubepki.LoadOrCreateCA(ctx, c, key, t0)
	require.NoError(t, err)
	s := get(t, c, ns, "legate-ca")
	assert.Equal(t, corev1.SecretTypeTLS, s.Type)
	assert.Equal(t, kubepki.KindCA, s.Labels[kubepki.LabelCertificate])
	assert.Equal(t, ca.CertPEM(), s.Data[corev1.TLSCertKey])
	assert.Equal(t, ca.CertPEM(), s.Data[pki.ProxyCAKey])
	noSecrets(t, fmt.Sprint(s.Annotations), "annotations")

	again, err := kubepki.LoadOrCreateCA(ctx, c, key, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, ca.CertPEM(), again.CertPEM(), "the second call reads the same CA")

	// Replicas starting together end with one CA.
	raced := types.NamespacedName{Namespace: ns, Name: "raced-ca"}
	const n = 6
	pems := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got, err := kubepki.LoadOrCreateCA(ctx, c, raced, t0)
			errs[i] = err
			if err == nil {
				pems[i] = got.CertPEM()
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "caller %d", i)
		assert.Equal(t, pems[0], pems[i], "caller %d has the same CA", i)
	}
	assert.Equal(t, pems[0], get(t, c, ns, "raced-ca").Data[corev1.TLSCertKey])

	// Secrets that hold no usable CA.
	_, leaf, err := pki.NewCA("x", time.Hour, t0)
	require.NoError(t, err)
	node, err := ca.IssueNode([]string{"edge"}, time.Hour, t0)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		data map[string][]byte
		want string
	}{
		"garbled":         {map[string][]byte{"tls.crt": []byte("garbled-cert-42"), "tls.key": []byte("garbled-key-42")}, "the CA Secret legate-system/garbled does not hold a usable CA"},
		"not a ca":        {map[string][]byte{"tls.crt": node.CertPEM, "tls.key": node.KeyPEM}, `is not a CA`},
		"no key":          {map[string][]byte{"tls.crt": leaf.CertPEM}, "the CA Secret legate-system/no-key has no tls.key"},
		"key of another":  {map[string][]byte{"tls.crt": ca.CertPEM(), "tls.key": leaf.KeyPEM}, "does not belong to certificate"},
		"opaque, no data": {map[string][]byte{"token": []byte("hunter2")}, "has no tls.crt"},
	} {
		secret := strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), ",", "")
		require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret}, Data: tc.data}), name)
		_, err := kubepki.LoadOrCreateCA(ctx, c, types.NamespacedName{Namespace: ns, Name: secret}, t0)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
		assert.Contains(t, err.Error(), ns+"/"+secret, "%s: the error names the Secret", name)
		for _, v := range tc.data {
			assert.NotContains(t, err.Error(), string(v), "%s: no content in the error", name)
		}
		noSecrets(t, err.Error(), name)
		assert.Equal(t, tc.data, get(t, c, ns, secret).Data, "%s: the Secret is left alone", name)
	}
}

// TestProxy: EnsureProxy issues a client certificate naming the node ID
// into a Secret an injected Envoy mounts, is idempotent, refuses Secrets
// of another node or not legate's, writes nothing on a dry run, and
// survives racing admissions; RenewDue renews at two thirds of the
// lifetime and when the CA changes.
func TestProxy(t *testing.T) {
	c := envtest.Start(t).Client
	ctx := context.Background()
	ns := namespace(t, c, "shop")
	ca, err := kubepki.LoadOrCreateCA(ctx, c, types.NamespacedName{Namespace: namespace(t, c, "legate-system"), Name: "legate-ca"}, t0)
	require.NoError(t, err)
	clk := clocktesting.NewFakePassiveClock(t0)
	var log logs
	a := &kubepki.Authority{CA: ca, Client: c, Clock: clk, Log: log.logger()}

	// Dry run of an absent Secret: nothing written.
	require.NoError(t, a.EnsureProxy(ctx, ns, "edge-cert", "edge", true))
	err = c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "edge-cert"}, &corev1.Secret{})
	assert.True(t, apierrors.IsNotFound(err), "a dry run creates no Secret: %v", err)

	require.NoError(t, a.EnsureProxy(ctx, ns, "edge-cert", "edge", false))
	s := get(t, c, ns, "edge-cert")
	leaf := leafOf(t, s)
	assert.Equal(t, corev1.SecretTypeTLS, s.Type)
	assert.Equal(t, kubepki.KindProxy, s.Labels[kubepki.LabelCertificate])
	assert.Equal(t, "edge", s.Annotations[kubepki.AnnotationNodeID])
	assert.Equal(t, leaf.NotAfter.Format(time.RFC3339), s.Annotations[kubepki.AnnotationNotAfter])
	renewAt := dueOf(leaf)
	assert.Equal(t, renewAt.Format(time.RFC3339), s.Annotations[kubepki.AnnotationRenewAfter])
	assert.Equal(t, t0.Add(pki.DefaultLeafValidity), leaf.NotAfter, "default validity")
	assert.Equal(t, []string{"edge"}, leaf.DNSNames, "the certificate names the node ID")
	require.NoError(t, verifies(ca, leaf, t0, x509.ExtKeyUsageClientAuth), "the CA verifies it as a client certificate")
	want, err := pki.ProxySecretData(pki.Issued{CertPEM: s.Data[pki.ProxyCertKey], KeyPEM: s.Data[pki.ProxyKeyKey]}, ca.CertPEM())
	require.NoError(t, err)
	assert.Equal(t, want, s.Data, "the data is what an injected proxy mounts")
	noSecrets(t, fmt.Sprint(s.Annotations, s.Labels), "metadata")

	// Idempotent: a second call (later, not due) writes nothing.
	clk.SetTime(t0.Add(24 * time.Hour))
	require.NoError(t, a.EnsureProxy(ctx, ns, "edge-cert", "edge", false))
	assert.Equal(t, s.ResourceVersion, get(t, c, ns, "edge-cert").ResourceVersion, "not due: not written")

	// Another node's Secret and a Secret legate did not issue are refused.
	err = a.EnsureProxy(ctx, ns, "edge-cert", "core", false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the Secret shop/edge-cert holds the certificate of node ID "edge", not of node ID "core"`)
	err = a.EnsureProxy(ctx, ns, "edge-cert", "core", true)
	assert.ErrorContains(t, err, `node ID "edge"`, "a dry run reports the conflict too")
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("their-cert"), "tls.key": []byte("their-key")},
	}))
	for _, dry := range []bool{false, true} {
		err = a.EnsureProxy(ctx, ns, "theirs", "edge", dry)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the Secret shop/theirs exists and was not issued by legate")
		assert.NotContains(t, err.Error(), "their-")
	}
	assert.Equal(t, []byte("their-cert"), get(t, c, ns, "theirs").Data["tls.crt"], "their Secret is left alone")

	// Two pods of one node admitted at once: both succeed, one certificate.
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = a.EnsureProxy(ctx, ns, "raced", "raced-node", false) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "caller %d", i)
	}
	assert.Equal(t, []string{"raced-node"}, leafOf(t, get(t, c, ns, "raced")).DNSNames)

	// Renewal at two thirds of the lifetime, by RenewDue.
	clk.SetTime(renewAt.Add(-time.Minute))
	require.NoError(t, a.EnsureProxy(ctx, ns, "core-cert", "core", false)) // not due for a long time
	next, renewed, err := a.RenewDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, renewed, "nothing is due a minute before two thirds")
	assert.Equal(t, renewAt, next, "the next due time is edge's")
	assert.Equal(t, leaf.SerialNumber, leafOf(t, get(t, c, ns, "edge-cert")).SerialNumber)

	clk.SetTime(renewAt.Add(time.Second))
	dryBefore := get(t, c, ns, "edge-cert").ResourceVersion
	require.NoError(t, a.EnsureProxy(ctx, ns, "edge-cert", "edge", true))
	assert.Equal(t, dryBefore, get(t, c, ns, "edge-cert").ResourceVersion, "a dry run does not renew")
	next, renewed, err = a.RenewDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, renewed, "edge is past two thirds; raced (issued a day later) and core are not")
	renewedLeaf := leafOf(t, get(t, c, ns, "edge-cert"))
	assert.NotEqual(t, leaf.SerialNumber, renewedLeaf.SerialNumber, "a new certificate")
	assert.Equal(t, []string{"edge"}, renewedLeaf.DNSNames, "for the same node")
	assert.True(t, renewedLeaf.NotAfter.After(leaf.NotAfter))
	require.NoError(t, verifies(ca, renewedLeaf, clk.Now(), x509.ExtKeyUsageClientAuth))
	racedLeaf := leafOf(t, get(t, c, ns, "raced"))
	assert.Equal(t, dueOf(racedLeaf), next, "the next due time is raced's")
	_, renewed, err = a.RenewDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, renewed, "a second pass renews nothing")

	// A new CA: every certificate is renewed at once, whatever its age.
	newCA, _, err := pki.NewCA("next CA", pki.DefaultCAValidity, clk.Now())
	require.NoError(t, err)
	b := &kubepki.Authority{CA: newCA, Client: c, Namespace: ns, Clock: clk, Log: log.logger()}
	require.NoError(t, b.EnsureProxy(ctx, ns, "edge-cert", "edge", false))
	s = get(t, c, ns, "edge-cert")
	assert.Equal(t, newCA.CertPEM(), s.Data[pki.ProxyCAKey])
	require.NoError(t, verifies(newCA, leafOf(t, s), clk.Now(), x509.ExtKeyUsageClientAuth), "EnsureProxy renewed it with the new CA")
	_, renewed, err = b.RenewDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, renewed, "raced and core are renewed with the new CA")
	require.NoError(t, verifies(newCA, leafOf(t, get(t, c, ns, "core-cert")), clk.Now(), x509.ExtKeyUsageClientAuth))

	// A labelled Secret without a node ID is reported, the others renewed.
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray", Labels: map[string]string{kubepki.LabelCertificate: kubepki.KindProxy}},
		Type:       corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y")},
	}))
	_, renewed, err = a.RenewDue(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the Secret shop/stray is labelled legate.dev/certificate=proxy but names no node ID")
	assert.Equal(t, 3, renewed, "back to the first CA: the three proxies are renewed despite the stray Secret")

	noSecrets(t, log.String(), "logs")
	assert.Contains(t, log.String(), "renewed proxy certificate")
}

// TestProxyRun: Run renews what is due without being asked and ends with
// its context.
func TestProxyRun(t *testing.T) {
	c := envtest.Start(t).Client
	ctx := context.Background()
	ns := namespace(t, c, "shop")
	ca, _, err := pki.NewCA("test CA", pki.DefaultCAValidity, t0)
	require.NoError(t, err)
	clk := clocktesting.NewFakePassiveClock(t0)
	a := &kubepki.Authority{CA: ca, Client: c, Validity: time.Hour, Clock: clk}
	require.NoError(t, a.EnsureProxy(ctx, ns, "edge-cert", "edge", false))
	first := leafOf(t, get(t, c, ns, "edge-cert")).SerialNumber
	clk.SetTime(t0.Add(time.Hour))

	stop := running(t, a.Run)
	require.Eventually(t, func() bool {
		return leafOf(t, get(t, c, ns, "edge-cert")).SerialNumber.Cmp(first) != 0
	}, 30*time.Second, 50*time.Millisecond, "Run renews the certificate past two thirds")
	stop()
	assert.True(t, a.NeedLeaderElection())
}

// TestServerCertificate: the xDS server's certificate is issued into its
// Secret, renewed at two thirds, picked up by other replicas, and serves
// mutual TLS to proxies holding a certificate of the same CA only.
func TestServerCertificate(t *testing.T) {
	c := envtest.Start(t).Client
	ctx := context.Background()
	ns := namespace(t, c, "legate-system")
	ca, err := kubepki.LoadOrCreateCA(ctx, c, types.NamespacedName{Namespace: ns, Name: "legate-ca"}, t0)
	require.NoError(t, err)
	key := types.NamespacedName{Namespace: ns, Name: "legate-xds"}
	hosts := []string{"legate-xds.legate-system.svc", "127.0.0.1"}
	leaderClock, followerClock := clocktesting.NewFakePassiveClock(t0), clocktesting.NewFakePassiveClock(t0)
	var log logs
	leader := &kubepki.ServerCertificate{Client: c, CA: ca, Secret: key, Hosts: hosts, Clock: leaderClock, Log: log.logger()}
	follower := &kubepki.ServerCertificate{Client: c, CA: ca, Secret: key, Hosts: hosts, Clock: followerClock, Log: log.logger()}

	_, _, err = follower.Current()
	require.ErrorContains(t, err, "not loaded yet")
	// Both replicas start together: one issues, both serve it.
	var wg sync.WaitGroup
	var errL, errF error
	wg.Go(func() { _, errL = leader.Ensure(ctx) })
	wg.Go(func() { _, errF = follower.Ensure(ctx) })
	wg.Wait()
	require.NoError(t, errL)
	require.NoError(t, errF)
	lc, _, err := leader.Current()
	require.NoError(t, err)
	fc, pool, err := follower.Current()
	require.NoError(t, err)
	assert.Equal(t, lc.Leaf.SerialNumber, fc.Leaf.SerialNumber, "one certificate for both replicas")
	assert.ElementsMatch(t, []string{"legate-xds.legate-system.svc"}, fc.Leaf.DNSNames)
	assert.Equal(t, "127.0.0.1", fc.Leaf.IPAddresses[0].String())
	require.NoError(t, verifies(ca, fc.Leaf, t0, x509.ExtKeyUsageServerAuth))
	s := get(t, c, ns, "legate-xds")
	assert.Equal(t, kubepki.KindServer, s.Labels[kubepki.LabelCertificate])
	assert.Equal(t, ca.CertPEM(), s.Data[pki.ProxyCAKey])

	// Mutual TLS: a proxy certificate of this CA is admitted, one of
	// another CA is not.
	a := &kubepki.Authority{CA: ca, Client: c, Clock: leaderClock}
	require.NoError(t, a.EnsureProxy(ctx, ns, "edge-cert", "edge", false))
	ps := get(t, c, ns, "edge-cert")
	proxyCert, err := tls.X509KeyPair(ps.Data[pki.ProxyCertKey], ps.Data[pki.ProxyKeyKey])
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ps.Data[pki.ProxyCAKey]))
	require.NoError(t, handshake(t, follower, roots, proxyCert), "a proxy certificate of the CA is admitted")
	otherCA, _, err := pki.NewCA("other CA", pki.DefaultCAValidity, t0)
	require.NoError(t, err)
	stranger, err := otherCA.IssueNode([]string{"edge"}, time.Hour, time.Now())
	require.NoError(t, err)
	strangerCert, err := tls.X509KeyPair(stranger.CertPEM, stranger.KeyPEM)
	require.NoError(t, err)
	require.Error(t, handshake(t, follower, roots, strangerCert), "a certificate of another CA is refused")
	assert.NotNil(t, pool)

	// Not due: Ensure writes nothing.
	leaderClock.SetTime(t0.Add(30 * 24 * time.Hour))
	_, err = leader.Ensure(ctx)
	require.NoError(t, err)
	assert.Equal(t, s.ResourceVersion, get(t, c, ns, "legate-xds").ResourceVersion)

	// Past two thirds the leader renews; the follower serves the old one
	// until its next Ensure reads the new one.
	leaderClock.SetTime(t0.Add(61 * 24 * time.Hour))
	next, err := leader.Ensure(ctx)
	require.NoError(t, err)
	renewed, _, err := leader.Current()
	require.NoError(t, err)
	assert.NotEqual(t, lc.Leaf.SerialNumber, renewed.Leaf.SerialNumber, "renewed")
	assert.True(t, next.After(leaderClock.Now()), "the renewed certificate is due later")
	still, _, err := follower.Current()
	require.NoError(t, err)
	assert.Equal(t, fc.Leaf.SerialNumber, still.Leaf.SerialNumber, "Current does not call the API server")
	_, err = follower.Ensure(ctx)
	require.NoError(t, err)
	now, _, err := follower.Current()
	require.NoError(t, err)
	assert.Equal(t, renewed.Leaf.SerialNumber, now.Leaf.SerialNumber, "the follower picks up the leader's renewal")

	// Other hosts: renewed at once.
	moved := &kubepki.ServerCertificate{Client: c, CA: ca, Secret: key, Hosts: []string{"xds.example"}, Clock: leaderClock}
	_, err = moved.Ensure(ctx)
	require.NoError(t, err)
	mc, _, err := moved.Current()
	require.NoError(t, err)
	assert.Equal(t, []string{"xds.example"}, mc.Leaf.DNSNames)

	// Run keeps a follower up to date.
	runner := &kubepki.ServerCertificate{Client: c, CA: ca, Secret: key, Hosts: []string{"xds.example"}, Clock: followerClock, Interval: 100 * time.Millisecond}
	stop := running(t, runner.Run)
	require.Eventually(t, func() bool {
		cur, _, err := runner.Current()
		return err == nil && cur.Leaf.SerialNumber.Cmp(mc.Leaf.SerialNumber) == 0
	}, 30*time.Second, 20*time.Millisecond)
	leaderClock.SetTime(t0.Add(121 * 24 * time.Hour))
	_, err = moved.Ensure(ctx)
	require.NoError(t, err)
	mc2, _, err := moved.Current()
	require.NoError(t, err)
	require.NotEqual(t, mc.Leaf.SerialNumber, mc2.Leaf.SerialNumber)
	require.Eventually(t, func() bool {
		cur, _, err := runner.Current()
		return err == nil && cur.Leaf.SerialNumber.Cmp(mc2.Leaf.SerialNumber) == 0
	}, 30*time.Second, 20*time.Millisecond, "Run picks up a renewal made elsewhere")
	stop()
	assert.False(t, runner.NeedLeaderElection())

	// A Secret legate did not issue is refused.
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("their-cert"), "tls.key": []byte("their-key")},
	}))
	theirs := &kubepki.ServerCertificate{Client: c, CA: ca, Secret: types.NamespacedName{Namespace: ns, Name: "theirs"}, Hosts: hosts}
	_, err = theirs.Ensure(ctx)
	require.ErrorContains(t, err, "the Secret legate-system/theirs exists and was not issued by legate")
	noSecrets(t, log.String(), "logs")
}

// handshake runs a TLS handshake between an xDS server configured by
// xds.ServerTLS(certs) and a client presenting cert, over loopback, and
// returns the server's verdict.
func handshake(t *testing.T, certs xds.Certificates, roots *x509.CertPool, cert tls.Certificate) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	serverErr := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		serverErr <- tls.Server(conn, xds.ServerTLS(certs)).Handshake()
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
		RootCAs: roots, ServerName: "legate-xds.legate-system.svc", Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"},
		MinVersion: tls.VersionTLS12,
	})
	if err == nil {
		// TLS 1.3 clients finish before the server checked their
		// certificate: a read surfaces the server's verdict.
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = conn.Read(make([]byte, 1))
		_ = conn.Close()
	}
	select {
	case err := <-serverErr:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the TLS server did not finish its handshake")
		return nil
	}
}

// dueOf is when a certificate legate issued is due: two thirds of its
// lifetime after its issue, pki.Backdate after its NotBefore.
func dueOf(c *x509.Certificate) time.Time {
	issued := c.NotBefore.Add(pki.Backdate)
	return issued.Add(c.NotAfter.Sub(issued) / 3 * 2)
}

// running starts run and returns what stops it: its context canceled, it
// must end, without an error, within 10 seconds.
func running(t *testing.T, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not end with its context")
		}
	}
}
