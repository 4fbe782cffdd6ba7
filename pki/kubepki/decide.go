package kubepki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/pki"
)

// The label and annotations of the Secrets legate issues. Annotations
// carry times in RFC 3339, never key material.
const (
	// LabelCertificate marks a Secret as legate's; its value is KindCA,
	// KindProxy or KindServer.
	LabelCertificate = "legate.dev/certificate"
	KindCA           = "ca"
	KindProxy        = "proxy"
	KindServer       = "server"

	// AnnotationNodeID is the node ID a proxy's certificate names.
	AnnotationNodeID = "legate.dev/node-id"
	// AnnotationNotAfter is when the certificate expires.
	AnnotationNotAfter = "legate.dev/not-after"
	// AnnotationRenewAfter is when legate renews it (two thirds of its
	// lifetime).
	AnnotationRenewAfter = "legate.dev/renew-after"
)

// signer is the current CA as the decisions need it.
type signer struct {
	ca   *pki.CA
	cert *x509.Certificate
	pem  []byte
	pool *x509.CertPool
}

func newSigner(ca *pki.CA) (signer, error) {
	if ca == nil {
		return signer{}, errors.New("no CA given")
	}
	block, _ := pem.Decode(ca.CertPEM())
	if block == nil {
		return signer{}, errors.New("the CA certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return signer{}, fmt.Errorf("parse the CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return signer{ca: ca, cert: cert, pem: ca.CertPEM(), pool: pool}, nil
}

// leafValidity is want (pki.DefaultLeafValidity when zero), shortened so
// that the certificate does not outlive the CA.
func leafValidity(want time.Duration, ca *x509.Certificate, now time.Time) (time.Duration, error) {
	if want <= 0 {
		want = pki.DefaultLeafValidity
	}
	left := ca.NotAfter.Sub(now)
	if left <= 0 {
		return 0, fmt.Errorf("the CA %q expired at %s", ca.Subject.CommonName, ca.NotAfter.Format(time.RFC3339))
	}
	return min(want, left), nil
}

// renewAfter is when a certificate is due for renewal: two thirds into its
// lifetime, counted from its issue (legate backdates NotBefore by
// pki.Backdate; counting from there would make a short-lived certificate
// due at once).
func renewAfter(c *x509.Certificate) time.Time {
	issued := c.NotBefore
	if c.NotAfter.Sub(c.NotBefore) > pki.Backdate {
		issued = c.NotBefore.Add(pki.Backdate)
	}
	return issued.Add(c.NotAfter.Sub(issued) / 3 * 2)
}

// verdict is what a Secret's certificate needs.
type verdict struct {
	// Reason says why the certificate must be renewed now; empty when it
	// need not.
	Reason string
	// RenewAt is when the certificate held is due (meaningful when Reason
	// is empty).
	RenewAt time.Time
	// Pair is the certificate and key held (when Reason is empty).
	Pair *tls.Certificate
}

// want is what a certificate must be to stay: its names (DNS names and IP
// addresses), its usage and the data keys the Secret must hold.
type want struct {
	names []string
	usage x509.ExtKeyUsage
	keys  []string
}

// check decides whether the certificate in a Secret's data must be
// renewed at now. Reasons never quote the data.
func check(data map[string][]byte, ca signer, w want, now time.Time) verdict {
	for _, k := range w.keys {
		if len(data[k]) == 0 {
			return verdict{Reason: "the Secret has no " + k}
		}
	}
	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil || pair.Leaf == nil {
		return verdict{Reason: "its certificate and key do not load as a key pair"}
	}
	leaf := pair.Leaf
	switch {
	case !bytes.Equal(data[pki.ProxyCAKey], ca.pem):
		return verdict{Reason: "its ca.crt is not the current CA"}
	case leaf.CheckSignatureFrom(ca.cert) != nil:
		return verdict{Reason: "its certificate is not signed by the current CA"}
	case !slices.Contains(leaf.ExtKeyUsage, w.usage):
		return verdict{Reason: "its certificate is not for this use"}
	}
	if got := namesOf(leaf); !slices.Equal(got, sorted(w.names)) {
		return verdict{Reason: fmt.Sprintf("its certificate names %s, not %s", strings.Join(got, ", "), strings.Join(sorted(w.names), ", "))}
	}
	at := renewAfter(leaf)
	if !now.Before(at) {
		return verdict{Reason: "two thirds of its lifetime have passed"}
	}
	return verdict{RenewAt: at, Pair: &pair}
}

func namesOf(c *x509.Certificate) []string {
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	return sorted(names)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// owned refuses a Secret legate did not issue as kind, and a proxy's
// Secret that belongs to another node ID (nodeID empty: any).
func owned(s *corev1.Secret, kind, nodeID string) error {
	ref := s.Namespace + "/" + s.Name
	if s.Labels[LabelCertificate] != kind {
		return fmt.Errorf("the Secret %s exists and was not issued by legate (no label %s=%s): delete it or choose another name", ref, LabelCertificate, kind)
	}
	if s.Type != corev1.SecretTypeTLS {
		return fmt.Errorf("the Secret %s is labelled %s=%s but its type is %q, not %q", ref, LabelCertificate, kind, s.Type, corev1.SecretTypeTLS)
	}
	if kind != KindProxy {
		return nil
	}
	switch got := s.Annotations[AnnotationNodeID]; {
	case got == "":
		return fmt.Errorf("the Secret %s is labelled %s=%s but names no node ID (annotation %s)", ref, LabelCertificate, kind, AnnotationNodeID)
	case nodeID != "" && got != nodeID:
		return fmt.Errorf("the Secret %s holds the certificate of node ID %q, not of node ID %q", ref, got, nodeID)
	}
	return nil
}

// stampedCurrent reads back what stamp wrote on a proxy's Secret: whether
// its label and annotations (metadata alone, no data) name a certificate
// of nodeID that is not due at now. The data itself is check's to judge.
func stampedCurrent(s metav1.Object, nodeID string, now time.Time) bool {
	renewAt, err := time.Parse(time.RFC3339, s.GetAnnotations()[AnnotationRenewAfter])
	return err == nil && s.GetLabels()[LabelCertificate] == KindProxy &&
		s.GetAnnotations()[AnnotationNodeID] == nodeID && now.Before(renewAt)
}

// stamp writes the label and the annotations of a Secret holding leaf.
func stamp(s *corev1.Secret, kind string, leaf *x509.Certificate) {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[LabelCertificate] = kind
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[AnnotationNotAfter] = leaf.NotAfter.UTC().Format(time.RFC3339)
	s.Annotations[AnnotationRenewAfter] = renewAfter(leaf).UTC().Format(time.RFC3339)
}

// Bounds of the waits of the Run loops.
const (
	minWait = time.Second
	maxWait = time.Hour
	// retryAfter is when a renewal that failed is tried again.
	retryAfter = 30 * time.Second
)

// waitUntil is how long to sleep at now before next (zero: nothing due),
// within [minWait, ceiling].
func waitUntil(next, now time.Time, ceiling time.Duration) time.Duration {
	if next.IsZero() {
		return ceiling
	}
	return min(max(next.Sub(now), minWait), ceiling)
}

// earliest is the earlier of two due times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
