package kubepki

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/pki"
)

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func testSigner(t *testing.T) signer {
	t.Helper()
	ca, _, err := pki.NewCA("test CA", pki.DefaultCAValidity, t0)
	require.NoError(t, err)
	s, err := newSigner(ca)
	require.NoError(t, err)
	return s
}

func proxyData(t *testing.T, ca signer, nodeID string, validity time.Duration) (map[string][]byte, *x509.Certificate) {
	t.Helper()
	iss, err := ca.ca.IssueNode([]string{nodeID}, validity, t0)
	require.NoError(t, err)
	data, err := pki.ProxySecretData(iss, ca.pem)
	require.NoError(t, err)
	return data, iss.Cert
}

func TestRenewAfterIsTwoThirds(t *testing.T) {
	for name, tc := range map[string]struct {
		from, to time.Time
		want     time.Time
	}{
		// NotBefore is legate's backdated start: two thirds count from
		// the issue, pki.Backdate later.
		"90 days": {t0.Add(-pki.Backdate), t0.Add(90 * 24 * time.Hour), t0.Add(60 * 24 * time.Hour)},
		"3 hours": {t0.Add(-pki.Backdate), t0.Add(3 * time.Hour), t0.Add(2 * time.Hour)},
		"offset":  {t0.Add(time.Hour - pki.Backdate), t0.Add(4 * time.Hour), t0.Add(3 * time.Hour)},
		// a short-lived certificate is not due at once
		"30 seconds": {t0.Add(-pki.Backdate), t0.Add(30 * time.Second), t0.Add(20 * time.Second)},
		// a certificate shorter than the backdate (not legate's) counts
		// from its NotBefore
		"3 minutes": {t0, t0.Add(3 * time.Minute), t0.Add(2 * time.Minute)},
	} {
		assert.Equal(t, tc.want, renewAfter(&x509.Certificate{NotBefore: tc.from, NotAfter: tc.to}), name)
	}
}

func TestCheck(t *testing.T) {
	ca, other := testSigner(t), testSigner(t)
	data, leaf := proxyData(t, ca, "edge", 30*time.Hour)
	due := renewAfter(leaf)
	require.Equal(t, t0.Add(20*time.Hour), due, "NotBefore is backdated; the 2/3 rule counts from the issue")
	otherData, _ := proxyData(t, other, "edge", 30*time.Hour)
	otherNode, _ := proxyData(t, ca, "core", 30*time.Hour)
	srv, err := ca.ca.IssueServer([]string{"edge"}, 30*time.Hour, t0)
	require.NoError(t, err)
	// with is data with some keys replaced (nil: removed).
	with := func(kv map[string][]byte) map[string][]byte {
		d := map[string][]byte{}
		for k, v := range data {
			d[k] = v
		}
		for k, v := range kv {
			if v == nil {
				delete(d, k)
				continue
			}
			d[k] = v
		}
		return d
	}
	for name, tc := range map[string]struct {
		data   map[string][]byte
		ca     signer
		now    time.Time
		reason string
	}{
		"fresh":                  {data, ca, t0, ""},
		"just before two thirds": {data, ca, due.Add(-time.Second), ""},
		"at two thirds":          {data, ca, due, "two thirds of its lifetime have passed"},
		"expired":                {data, ca, leaf.NotAfter.Add(time.Hour), "two thirds of its lifetime have passed"},
		"CA changed":             {data, other, t0, "its ca.crt is not the current CA"},
		"other ca.crt":           {with(map[string][]byte{pki.ProxyCAKey: other.pem}), ca, t0, "its ca.crt is not the current CA"},
		"pair of another CA": {
			with(map[string][]byte{pki.ProxyCertKey: otherData[pki.ProxyCertKey], pki.ProxyKeyKey: otherData[pki.ProxyKeyKey]}),
			ca, t0, "not signed by the current CA",
		},
		"another node":         {otherNode, ca, t0, "its certificate names core, not edge"},
		"a server certificate": {with(map[string][]byte{pki.ProxyCertKey: srv.CertPEM, pki.ProxyKeyKey: srv.KeyPEM}), ca, t0, "not for this use"},
		"no SDS file":          {with(map[string][]byte{pki.ProxyCertificateSDSKey: nil}), ca, t0, "the Secret has no " + pki.ProxyCertificateSDSKey},
		"empty ca.crt":         {with(map[string][]byte{pki.ProxyCAKey: {}}), ca, t0, "the Secret has no ca.crt"},
		"garbled certificate":  {with(map[string][]byte{pki.ProxyCertKey: []byte("garbled")}), ca, t0, "do not load as a key pair"},
		"key of another cert":  {with(map[string][]byte{pki.ProxyKeyKey: otherNode[pki.ProxyKeyKey]}), ca, t0, "do not load as a key pair"},
	} {
		v := check(tc.data, tc.ca, proxyWant("edge"), tc.now)
		if tc.reason == "" {
			assert.Empty(t, v.Reason, name)
			assert.Equal(t, due, v.RenewAt, name)
			assert.NotNil(t, v.Pair, name)
			continue
		}
		assert.Contains(t, v.Reason, tc.reason, name)
		assert.NotContains(t, v.Reason, "PRIVATE KEY", name)
	}
}

func TestOwned(t *testing.T) {
	secret := func(label string, typ corev1.SecretType, node string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "edge-cert"}, Type: typ}
		if label != "" {
			s.Labels = map[string]string{LabelCertificate: label}
		}
		if node != "" {
			s.Annotations = map[string]string{AnnotationNodeID: node}
		}
		return s
	}
	for name, tc := range map[string]struct {
		s      *corev1.Secret
		kind   string
		node   string
		reason string
	}{
		"ours":             {secret(KindProxy, corev1.SecretTypeTLS, "edge"), KindProxy, "edge", ""},
		"ours, any node":   {secret(KindProxy, corev1.SecretTypeTLS, "edge"), KindProxy, "", ""},
		"server":           {secret(KindServer, corev1.SecretTypeTLS, ""), KindServer, "", ""},
		"no label":         {secret("", corev1.SecretTypeTLS, "edge"), KindProxy, "edge", "the Secret shop/edge-cert exists and was not issued by legate (no label legate.dev/certificate=proxy)"},
		"a server's":       {secret(KindServer, corev1.SecretTypeTLS, ""), KindProxy, "edge", "was not issued by legate"},
		"opaque":           {secret(KindProxy, corev1.SecretTypeOpaque, "edge"), KindProxy, "edge", `its type is "Opaque"`},
		"another node":     {secret(KindProxy, corev1.SecretTypeTLS, "core"), KindProxy, "edge", `the Secret shop/edge-cert holds the certificate of node ID "core", not of node ID "edge"`},
		"no node ID noted": {secret(KindProxy, corev1.SecretTypeTLS, ""), KindProxy, "", "names no node ID (annotation legate.dev/node-id)"},
	} {
		err := owned(tc.s, tc.kind, tc.node)
		if tc.reason == "" {
			assert.NoError(t, err, name)
			continue
		}
		assert.ErrorContains(t, err, tc.reason, name)
	}
}

func TestLeafValidity(t *testing.T) {
	ca := &x509.Certificate{NotAfter: t0.Add(10 * 24 * time.Hour)}
	for name, tc := range map[string]struct {
		want, got time.Duration
		err       string
	}{
		"default":         {0, 10 * 24 * time.Hour, ""},
		"shorter":         {time.Hour, time.Hour, ""},
		"cut to the CA's": {30 * 24 * time.Hour, 10 * 24 * time.Hour, ""},
	} {
		got, err := leafValidity(tc.want, ca, t0)
		require.NoError(t, err, name)
		assert.Equal(t, tc.got, got, name)
	}
	long := &x509.Certificate{NotAfter: t0.Add(pki.DefaultCAValidity)}
	got, err := leafValidity(0, long, t0)
	require.NoError(t, err)
	assert.Equal(t, pki.DefaultLeafValidity, got)
	_, err = leafValidity(0, ca, ca.NotAfter)
	assert.ErrorContains(t, err, "expired at")
}

func TestWaitUntil(t *testing.T) {
	for name, tc := range map[string]struct {
		next time.Time
		want time.Duration
	}{
		"nothing due": {time.Time{}, maxWait},
		"past":        {t0.Add(-time.Hour), minWait},
		"now":         {t0, minWait},
		"in a minute": {t0.Add(time.Minute), time.Minute},
		"in a month":  {t0.Add(30 * 24 * time.Hour), maxWait},
	} {
		assert.Equal(t, tc.want, waitUntil(tc.next, t0, maxWait), name)
	}
	assert.Equal(t, time.Minute, waitUntil(t0.Add(time.Hour), t0, time.Minute), "the ceiling bounds the wait")
	assert.Equal(t, t0, earliest(time.Time{}, t0))
	assert.Equal(t, t0, earliest(t0, time.Time{}))
	assert.Equal(t, t0, earliest(t0.Add(time.Second), t0))
}

// stampedCurrent reads back stamp: a current certificate of the node, by
// the Secret's label and annotations alone.
func TestStampedCurrent(t *testing.T) {
	_, leaf := proxyData(t, testSigner(t), "edge", 30*time.Hour)
	stamped := func(change func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationNodeID: "edge"}}}
		stamp(s, KindProxy, leaf)
		if change != nil {
			change(s)
		}
		return s
	}
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		node   string
		at     time.Time
		want   bool
	}{
		{"stamped, not due", stamped(nil), "edge", now, true},
		{"another node's", stamped(nil), "other", now, false},
		{"due", stamped(nil), "edge", renewAfter(leaf), false},
		{"a server's", stamped(func(s *corev1.Secret) { s.Labels[LabelCertificate] = KindServer }), "edge", now, false},
		{"renewal time unreadable", stamped(func(s *corev1.Secret) { s.Annotations[AnnotationRenewAfter] = "soon" }), "edge", now, false},
		{"not stamped", &corev1.Secret{}, "edge", now, false},
	} {
		assert.Equal(t, tc.want, stampedCurrent(tc.secret, tc.node, tc.at), tc.name)
	}
}
