package kubepki

import (
	"context"
	"crypto/x509"
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

// proxyKeys are the data keys of a proxy's Secret (pki.ProxySecretData).
var proxyKeys = []string{pki.ProxyCertKey, pki.ProxyKeyKey, pki.ProxyCAKey, pki.ProxyCertificateSDSKey, pki.ProxyValidationSDSKey}

// attempts bounds the read-decide-write rounds of one Secret that keeps
// losing races.
const attempts = 5

// Authority issues and renews the proxies' client certificates, each in a
// Secret of the proxy's namespace (labelled LabelCertificate=KindProxy,
// annotated with AnnotationNodeID). EnsureProxy may be called
// concurrently, from any replica (the admission webhook); RenewDue and
// Run belong to the leader. The fields must not change once it is in
// use: a new CA means a new Authority.
type Authority struct {
	// CA signs the certificates; a certificate it did not sign is renewed.
	CA *pki.CA
	// Client reads and writes Secrets; it should read from the API
	// server (see the package comment).
	Client client.Client
	// Validity of the certificates issued; zero means
	// pki.DefaultLeafValidity. It is shortened to the CA's own end.
	Validity time.Duration
	// Namespace limits RenewDue to one namespace; empty means all.
	Namespace string
	// Clock tells the time; nil means the wall clock.
	Clock clock.PassiveClock
	// Log receives renewals and failures (no key material).
	Log logr.Logger

	wakeOnce sync.Once
	wake     chan struct{} // Run's wake-up: a certificate was issued

	issuedMu sync.Mutex
	issued   time.Time // when the certificates issued since Run last looked are first due
}

func (a *Authority) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

// EnsureProxy makes sure the Secret namespace/secretName holds a valid
// client certificate of nodeID: it issues one when the Secret does not
// exist and renews it when due (see check); a Secret of another node ID or
// one legate did not issue is refused by an error naming it. With dryRun
// it writes nothing but still refuses what it would refuse. When two
// callers race for the same Secret (two pods admitted at once), both
// succeed with the certificate the winner wrote.
func (a *Authority) EnsureProxy(ctx context.Context, namespace, secretName, nodeID string, dryRun bool) error {
	ca, err := newSigner(a.CA)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: namespace, Name: secretName}
	for range attempts {
		s := &corev1.Secret{}
		err := a.Client.Get(ctx, key, s)
		switch {
		case apierrors.IsNotFound(err):
			if dryRun {
				return nil
			}
			err = a.createProxy(ctx, ca, key, nodeID)
			if apierrors.IsAlreadyExists(err) {
				continue // another admission made it: check theirs
			}
			return err
		case err != nil:
			return fmt.Errorf("read the proxy Secret %s: %w", key, err)
		}
		if err := owned(s, KindProxy, nodeID); err != nil {
			return err
		}
		v := check(s.Data, ca, proxyWant(nodeID), a.now())
		if v.Reason == "" || dryRun {
			return nil
		}
		_, err = a.renewProxy(ctx, ca, s, nodeID, v.Reason)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // changed or deleted meanwhile: decide again
		}
		return err
	}
	return fmt.Errorf("the proxy Secret %s kept changing while its certificate was issued; try again", key)
}

// CreateProxy issues nodeID's certificate into a new Secret
// namespace/secretName, for a caller that knows of no such Secret (the
// Pod reconciler's cache): a new node costs one write, not a read that
// finds nothing and then the write. When the Secret exists after all (the
// cache was behind, or another replica wrote it first), it decides as
// EnsureProxy does: the Secret is read, and one of another node or that
// legate did not issue is refused.
func (a *Authority) CreateProxy(ctx context.Context, namespace, secretName, nodeID string) error {
	ca, err := newSigner(a.CA)
	if err != nil {
		return err
	}
	err = a.createProxy(ctx, ca, types.NamespacedName{Namespace: namespace, Name: secretName}, nodeID)
	if apierrors.IsAlreadyExists(err) {
		return a.EnsureProxy(ctx, namespace, secretName, nodeID, false)
	}
	return err
}

func proxyWant(nodeID string) want {
	return want{names: []string{nodeID}, usage: x509.ExtKeyUsageClientAuth, keys: proxyKeys}
}

// issueProxy issues a certificate for nodeID in namespace (which it
// records) and the Secret data that holds it.
func (a *Authority) issueProxy(ca signer, namespace, nodeID string) (map[string][]byte, *x509.Certificate, error) {
	now := a.now()
	validity, err := leafValidity(a.Validity, ca.cert, now)
	if err != nil {
		return nil, nil, err
	}
	iss, err := ca.ca.IssueNodeIn(namespace, []string{nodeID}, validity, now)
	if err != nil {
		return nil, nil, err
	}
	data, err := pki.ProxySecretData(iss, ca.pem)
	if err != nil {
		return nil, nil, err
	}
	return data, iss.Cert, nil
}

func (a *Authority) createProxy(ctx context.Context, ca signer, key types.NamespacedName, nodeID string) error {
	data, leaf, err := a.issueProxy(ca, key.Namespace, nodeID)
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Annotations: map[string]string{AnnotationNodeID: nodeID}},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
	stamp(s, KindProxy, leaf)
	if err := a.Client.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return err
		}
		return fmt.Errorf("create the proxy Secret %s: %w", key, err)
	}
	a.Log.Info("issued proxy certificate", "node", nodeID, "secret", key.String(), "notAfter", leaf.NotAfter)
	a.noteIssued(renewAfter(leaf))
	return nil
}

// noteIssued tells Run that a certificate it has not seen is due at due:
// perhaps before the pass it waits for (see rearm).
func (a *Authority) noteIssued(due time.Time) {
	a.issuedMu.Lock()
	a.issued = earliest(a.issued, due)
	a.issuedMu.Unlock()
	select {
	case a.wakeup() <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// wakeup is the channel that wakes Run.
func (a *Authority) wakeup() chan struct{} {
	a.wakeOnce.Do(func() { a.wake = make(chan struct{}, 1) })
	return a.wake
}

// renewProxy replaces the certificate of s, read at its resourceVersion,
// by a new one; a conflict (someone wrote first) is returned as it is.
// It returns when the new certificate is due.
func (a *Authority) renewProxy(ctx context.Context, ca signer, s *corev1.Secret, nodeID, reason string) (time.Time, error) {
	data, leaf, err := a.issueProxy(ca, s.Namespace, nodeID)
	if err != nil {
		return time.Time{}, err
	}
	s = s.DeepCopy()
	s.Data = data
	stamp(s, KindProxy, leaf)
	if err := a.Client.Update(ctx, s); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return time.Time{}, err
		}
		return time.Time{}, fmt.Errorf("renew the proxy Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	a.Log.Info("renewed proxy certificate", "node", nodeID, "secret", s.Namespace+"/"+s.Name, "reason", reason, "notAfter", leaf.NotAfter)
	return renewAfter(leaf), nil
}
