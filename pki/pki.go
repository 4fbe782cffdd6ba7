// Package pki is legate's small certificate authority: it makes the CA and
// issues the xDS server's certificate and the proxies' client certificates
// for mutual TLS between proxies and legate. A proxy's certificate names
// the node IDs it may fetch (legate's xDS server admits a stream only for a
// node ID its certificate names), so a stolen proxy certificate exposes one
// node's configuration, not the fleet's.
//
// Keys are ECDSA P-256. Key material leaves the package only as PEM for
// files or Kubernetes Secrets; errors never carry it.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// Default lifetimes.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 90 * 24 * time.Hour
)

// Backdate is how far before its issue a certificate's validity starts:
// it covers clocks that run a little behind the CA's. It is not part of
// the lifetime asked for (renewal at two thirds counts from the issue).
const Backdate = 5 * time.Minute

// maxCommonName is the longest subject common name X.509 allows.
const maxCommonName = 64

// CA signs certificates with its key.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

// Issued is a certificate and its private key, in PEM.
type Issued struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a self-signed CA named name, valid for validity from now.
func NewCA(name string, validity time.Duration, now time.Time) (*CA, Issued, error) {
	if name == "" {
		return nil, Issued{}, errors.New("the CA needs a name")
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name, Organization: []string{"legate"}},
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	iss, key, err := sign(tmpl, nil, nil, validity, now)
	if err != nil {
		return nil, Issued{}, err
	}
	return &CA{cert: iss.Cert, key: key, pem: iss.CertPEM}, iss, nil
}

// LoadCA reads a CA from its certificate and private key in PEM (as
// NewCA's Issued holds them, or as cert-manager writes a CA's Secret: an
// RSA, ECDSA or Ed25519 key in PKCS #8, PKCS #1 or SEC 1).
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the CA certificate is not a PEM CERTIFICATE")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse the CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certificate %q is not a CA", cert.Subject.CommonName)
	}
	kblock, _ := pem.Decode(keyPEM)
	if kblock == nil {
		return nil, errors.New("the CA key is not PEM")
	}
	parsed, err := parseKey(kblock)
	if err != nil {
		return nil, err
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, errors.New("the CA key cannot sign")
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("the CA key does not belong to certificate %q", cert.Subject.CommonName)
	}
	return &CA{cert: cert, key: key, pem: certPEM}, nil
}

// parseKey reads a private key in PKCS #8, or in PKCS #1 (RSA) or SEC 1
// (EC) when the PEM type says so, as cert-manager writes them by default.
func parseKey(block *pem.Block) (any, error) {
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("the CA key is not a PKCS #1 RSA private key")
		}
		return key, nil
	case "EC PRIVATE KEY":
		key, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("the CA key is not a SEC 1 EC private key")
		}
		return key, nil
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("the CA key is not a PKCS #8 private key")
	}
	return key, nil
}

// CertPEM is the CA's certificate, for the trust bundles of proxies and of
// legate's --xds-client-ca.
func (ca *CA) CertPEM() []byte { return ca.pem }

// IssueServer issues the xDS server's certificate for hosts: DNS names or
// IP addresses the proxies dial.
func (ca *CA) IssueServer(hosts []string, validity time.Duration, now time.Time) (Issued, error) {
	if len(hosts) == 0 {
		return Issued{}, errors.New("the server certificate needs at least one host name or IP address")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName(hosts[0])},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			continue
		}
		if err := checkName(h); err != nil {
			return Issued{}, fmt.Errorf("host %q: %w", h, err)
		}
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
	iss, _, err := sign(tmpl, ca.cert, ca.key, validity, now)
	return iss, err
}

// namespaceUnit prefixes the organizational unit that records, in a proxy
// certificate issued for a Kubernetes namespace, that namespace.
const namespaceUnit = "namespace:"

// IssueNodeIn is IssueNode for a proxy of a Kubernetes namespace: the
// certificate also records the namespace (NamespaceOf reads it), so that
// legate can refuse it for a node another namespace configures.
func (ca *CA) IssueNodeIn(namespace string, nodeIDs []string, validity time.Duration, now time.Time) (Issued, error) {
	if err := checkName(namespace); err != nil {
		return Issued{}, fmt.Errorf("namespace %q: %w", namespace, err)
	}
	return ca.issueNode(nodeIDs, []string{namespaceUnit + namespace}, validity, now)
}

// NamespaceOf is the Kubernetes namespace a proxy certificate was issued
// for (IssueNodeIn), or "" when it records none.
func NamespaceOf(c *x509.Certificate) string {
	for _, ou := range c.Subject.OrganizationalUnit {
		if ns, ok := strings.CutPrefix(ou, namespaceUnit); ok {
			return ns
		}
	}
	return ""
}

// IssueNode issues a proxy's client certificate that may fetch the given
// node IDs: each is one of its DNS names, and the first is also its common
// name when it fits.
func (ca *CA) IssueNode(nodeIDs []string, validity time.Duration, now time.Time) (Issued, error) {
	return ca.issueNode(nodeIDs, nil, validity, now)
}

func (ca *CA) issueNode(nodeIDs, units []string, validity time.Duration, now time.Time) (Issued, error) {
	if len(nodeIDs) == 0 {
		return Issued{}, errors.New("a proxy certificate needs at least one node ID")
	}
	for _, id := range nodeIDs {
		if err := checkName(id); err != nil {
			return Issued{}, fmt.Errorf("node ID %q: %w", id, err)
		}
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName(nodeIDs[0]), Organization: []string{"legate proxies"}, OrganizationalUnit: units},
		DNSNames:    nodeIDs,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	iss, _, err := sign(tmpl, ca.cert, ca.key, validity, now)
	return iss, err
}

// CheckNodeID says whether a node ID can be named by a proxy certificate
// (printable ASCII without spaces), so that a bad one is refused where it
// is written rather than when its certificate is issued.
func CheckNodeID(id string) error { return checkName(id) }

// checkName accepts the names a certificate can carry as a DNS name:
// printable ASCII without spaces.
func checkName(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	for _, r := range s {
		if r <= ' ' || r > '~' {
			return errors.New("must be printable ASCII without spaces")
		}
	}
	return nil
}

// commonName is s when it fits a common name, else empty: the DNS names
// carry it anyway.
func commonName(s string) string {
	if len(s) > maxCommonName {
		return ""
	}
	return s
}

// sign fills in the key, serial, validity and key identifiers of tmpl and
// signs it with parent's key, or self-signs it when parent is nil.
func sign(tmpl, parent *x509.Certificate, parentKey crypto.Signer, validity time.Duration, now time.Time) (Issued, crypto.Signer, error) {
	if validity <= 0 {
		return Issued{}, nil, fmt.Errorf("validity must be positive, got %s", validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, nil, fmt.Errorf("generate a key: %w", err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126)); err != nil {
		return Issued{}, nil, fmt.Errorf("generate a serial number: %w", err)
	}
	tmpl.NotBefore = now.Add(-Backdate).UTC()
	tmpl.NotAfter = now.Add(validity).UTC()
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return Issued{}, nil, err
	}
	id := sha256.Sum256(spki)
	tmpl.SubjectKeyId = id[:20]
	if parent == nil {
		parent, parentKey = tmpl, key
	} else if tmpl.NotAfter.After(parent.NotAfter) {
		return Issued{}, nil, fmt.Errorf("the certificate would outlive its CA (until %s): shorten its validity", parent.NotAfter.Format(time.RFC3339))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return Issued{}, nil, fmt.Errorf("sign %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Issued{}, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Issued{}, nil, err
	}
	return Issued{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}, key, nil
}

// Describe is one line about a certificate for people: subject, names and
// validity. It never includes key material.
func Describe(c *x509.Certificate) string {
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	valid := fmt.Sprintf("valid %s to %s", c.NotBefore.Format(time.RFC3339), c.NotAfter.Format(time.RFC3339))
	if len(names) == 0 {
		return fmt.Sprintf("%q, %s", c.Subject.CommonName, valid)
	}
	return fmt.Sprintf("%q for %s, %s", c.Subject.CommonName, strings.Join(names, ", "), valid)
}
