package kubepki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/pki"
)

// DefaultServerInterval is how often ServerCertificate.Run reads the
// Secret again when Interval is zero.
const DefaultServerInterval = time.Minute

// ServerCertificate keeps the xDS server's certificate in a Secret
// (labelled LabelCertificate=KindServer, with tls.crt, tls.key and ca.crt)
// and in memory. It is an xds.Certificates: Current never calls the API
// server. Every replica runs it: Ensure issues the certificate when the
// Secret does not exist, renews it when due (two thirds of its lifetime,
// other hosts, another CA) and otherwise loads what the Secret holds, so a
// replica picks up another's renewal at its next Ensure. Writes carry the
// resourceVersion read, so replicas racing end with one certificate. The
// exported fields must not change once it is in use.
type ServerCertificate struct {
	// Client reads and writes the Secret.
	Client client.Client
	// CA signs the server certificate; Current returns it as the pool
	// that verifies the proxies' client certificates.
	CA *pki.CA
	// Secret is where the certificate is kept.
	Secret types.NamespacedName
	// Hosts are the DNS names and IP addresses proxies dial, e.g.
	// legate-xds.legate-system.svc.
	Hosts []string
	// Validity of the certificate; zero means pki.DefaultLeafValidity.
	Validity time.Duration
	// Interval is how often Run reads the Secret again; zero means
	// DefaultServerInterval.
	Interval time.Duration
	// Clock tells the time; nil means the wall clock.
	Clock clock.PassiveClock
	// Log receives issues, renewals and failures (no key material).
	Log logr.Logger

	mu      sync.RWMutex
	version string // resourceVersion of the Secret loaded
	cert    *tls.Certificate
	pool    *x509.CertPool
}

func (s *ServerCertificate) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// Current is the certificate last loaded by Ensure and the CA pool for
// client certificates. It is safe for concurrent use.
func (s *ServerCertificate) Current() (*tls.Certificate, *x509.CertPool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.cert == nil {
		return nil, nil, fmt.Errorf("the xDS server certificate (Secret %s) is not loaded yet", s.Secret)
	}
	return s.cert, s.pool, nil
}

// Ensure reads the Secret, issues or renews the certificate when absent
// or due, and keeps what the Secret then holds for Current. It returns
// when the certificate is due.
func (s *ServerCertificate) Ensure(ctx context.Context) (time.Time, error) {
	ca, err := newSigner(s.CA)
	if err != nil {
		return time.Time{}, err
	}
	w := want{names: s.Hosts, usage: x509.ExtKeyUsageServerAuth, keys: []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, pki.ProxyCAKey}}
	if len(s.Hosts) == 0 {
		return time.Time{}, errors.New("the xDS server certificate needs at least one host name or IP address")
	}
	for range attempts {
		sec := &corev1.Secret{}
		err := s.Client.Get(ctx, s.Secret, sec)
		switch {
		case apierrors.IsNotFound(err):
			sec = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.Secret.Namespace, Name: s.Secret.Name},
				Type:       corev1.SecretTypeTLS,
			}
			err := s.write(ctx, ca, sec, "absent", func(ctx context.Context, o client.Object) error { return s.Client.Create(ctx, o) })
			if apierrors.IsAlreadyExists(err) {
				continue // another replica made it: load theirs
			}
			if err != nil {
				return time.Time{}, err
			}
		case err != nil:
			return time.Time{}, fmt.Errorf("read the xDS server Secret %s: %w", s.Secret, err)
		default:
			if err := owned(sec, KindServer, ""); err != nil {
				return time.Time{}, err
			}
			if v := check(sec.Data, ca, w, s.now()); v.Reason != "" {
				err := s.write(ctx, ca, sec, v.Reason, func(ctx context.Context, o client.Object) error { return s.Client.Update(ctx, o) })
				if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
					continue // another replica renewed it: load theirs
				}
				if err != nil {
					return time.Time{}, err
				}
			}
		}
		// sec now holds a certificate that is not due (the one read or
		// the one just written).
		v := check(sec.Data, ca, w, s.now())
		if v.Reason != "" {
			return time.Time{}, fmt.Errorf("the xDS server Secret %s: %s right after it was written", s.Secret, v.Reason)
		}
		s.load(sec.ResourceVersion, v, ca)
		return v.RenewAt, nil
	}
	return time.Time{}, fmt.Errorf("the xDS server Secret %s kept changing while its certificate was issued", s.Secret)
}

// write issues a certificate into sec and writes it with do (Create, or
// Update at sec's resourceVersion); sec then holds what was written.
func (s *ServerCertificate) write(ctx context.Context, ca signer, sec *corev1.Secret, reason string, do func(context.Context, client.Object) error) error {
	now := s.now()
	validity, err := leafValidity(s.Validity, ca.cert, now)
	if err != nil {
		return err
	}
	iss, err := ca.ca.IssueServer(s.Hosts, validity, now)
	if err != nil {
		return err
	}
	next := sec.DeepCopy()
	next.Data = map[string][]byte{corev1.TLSCertKey: iss.CertPEM, corev1.TLSPrivateKeyKey: iss.KeyPEM, pki.ProxyCAKey: ca.pem}
	stamp(next, KindServer, iss.Cert)
	if err := do(ctx, next); err != nil {
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return err
		}
		return fmt.Errorf("write the xDS server Secret %s: %w", s.Secret, err)
	}
	*sec = *next
	s.Log.Info("issued xDS server certificate", "secret", s.Secret.String(), "reason", reason, "notAfter", iss.Cert.NotAfter)
	return nil
}

func (s *ServerCertificate) load(version string, v verdict, ca signer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version == s.version && s.cert != nil {
		return
	}
	s.version, s.cert, s.pool = version, v.Pair, ca.pool
}

// Run calls Ensure until ctx ends: every Interval, and when the
// certificate is due (at least a second apart). It returns nil when ctx
// ends.
func (s *ServerCertificate) Run(ctx context.Context) error {
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultServerInterval
	}
	for {
		next, err := s.Ensure(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			s.Log.Error(err, "keeping the xDS server certificate")
			next = s.now().Add(min(interval, retryAfter))
		}
		t := time.NewTimer(waitUntil(next, s.now(), interval))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Start is Run, for a controller-runtime manager.
func (s *ServerCertificate) Start(ctx context.Context) error { return s.Run(ctx) }

// NeedLeaderElection is false: every replica serves xDS and needs the
// certificate.
func (s *ServerCertificate) NeedLeaderElection() bool { return false }
