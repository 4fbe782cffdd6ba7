package kubepki

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/pki"
)

// caName is the common name of the CAs legate makes.
const caName = "legate CA"

// LoadOrCreateCA returns the CA held by the Secret key (tls.crt and
// tls.key, as a kubernetes.io/tls Secret holds them), creating the Secret
// with a new CA valid from now when it does not exist. A CA of the user's
// or cert-manager's is used by creating that Secret first. Replicas
// starting together end with the same CA: the one whose Create loses reads
// the winner's. A Secret that exists but holds no usable CA is an error
// naming it, never quoting its content.
func LoadOrCreateCA(ctx context.Context, c client.Client, key types.NamespacedName, now time.Time) (*pki.CA, error) {
	for range 3 {
		s := &corev1.Secret{}
		err := c.Get(ctx, key, s)
		if err == nil {
			return caFrom(s)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read the CA Secret %s: %w", key, err)
		}
		ca, iss, err := pki.NewCA(caName, pki.DefaultCAValidity, now)
		if err != nil {
			return nil, err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Type:       corev1.SecretTypeTLS,
			Data: map[string][]byte{
				corev1.TLSCertKey:       iss.CertPEM,
				corev1.TLSPrivateKeyKey: iss.KeyPEM,
				pki.ProxyCAKey:          iss.CertPEM,
			},
		}
		stamp(s, KindCA, iss.Cert)
		delete(s.Annotations, AnnotationRenewAfter) // legate does not renew its CA
		err = c.Create(ctx, s)
		switch {
		case err == nil:
			return ca, nil
		case apierrors.IsAlreadyExists(err):
			continue // another replica made it first: use theirs
		default:
			return nil, fmt.Errorf("create the CA Secret %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("the CA Secret %s kept appearing and disappearing while it was read", key)
}

// caFrom reads the CA a Secret holds.
func caFrom(s *corev1.Secret) (*pki.CA, error) {
	ref := s.Namespace + "/" + s.Name
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(s.Data[k]) == 0 {
			return nil, fmt.Errorf("the CA Secret %s has no %s: a CA Secret holds tls.crt and tls.key (type kubernetes.io/tls)", ref, k)
		}
	}
	ca, err := pki.LoadCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("the CA Secret %s does not hold a usable CA: %w", ref, err)
	}
	return ca, nil
}
