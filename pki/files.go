package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
)

// KeyPairFiles is a certificate and key kept in files, with optionally the
// CA certificates that sign the peers' certificates. Current reads them
// again whenever a file's modification time or size changes, so that a
// renewed certificate is used without a restart (an xDS server's, or a
// client's). It is safe for concurrent use.
type KeyPairFiles struct {
	// CertFile and KeyFile are the certificate chain and its key (PEM);
	// CAFile, when set, holds the CA certificates (PEM) peers are checked
	// against.
	CertFile, KeyFile, CAFile string

	mu     sync.Mutex
	stamps [3]fileStamp
	cert   *tls.Certificate
	pool   *x509.CertPool
}

// FileError says which of the files could not be used.
type FileError struct {
	// Field is "certFile", "keyFile" or "caFile".
	Field string
	Err   error
}

func (e *FileError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

type fileStamp struct {
	size  int64
	mtime int64
}

func stampOf(path string) (fileStamp, error) {
	if path == "" {
		return fileStamp{}, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, nil
}

// LoadKeyPairFiles reads the files once, so that a wrong path or a broken
// PEM file stops a start with a clear error.
func LoadKeyPairFiles(certFile, keyFile, caFile string) (*KeyPairFiles, error) {
	f := &KeyPairFiles{CertFile: certFile, KeyFile: keyFile, CAFile: caFile}
	if _, _, err := f.Current(); err != nil {
		return nil, err
	}
	return f, nil
}

// Current returns the key pair and the CA pool (nil without CAFile),
// read again if a file changed. A read that fails keeps the last good
// ones, and returns an error only when there are none. Errors name the
// files, never their content.
func (f *KeyPairFiles) Current() (*tls.Certificate, *x509.CertPool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var now [3]fileStamp
	for i, file := range []struct{ field, path string }{{"certFile", f.CertFile}, {"keyFile", f.KeyFile}, {"caFile", f.CAFile}} {
		s, err := stampOf(file.path)
		if err != nil {
			if f.cert != nil {
				return f.cert, f.pool, nil
			}
			return nil, nil, &FileError{Field: file.field, Err: err}
		}
		now[i] = s
	}
	if f.cert != nil && now == f.stamps {
		return f.cert, f.pool, nil
	}
	cert, pool, err := f.load()
	if err != nil {
		if f.cert != nil {
			return f.cert, f.pool, nil
		}
		return nil, nil, err
	}
	f.cert, f.pool, f.stamps = cert, pool, now
	return cert, pool, nil
}

func (f *KeyPairFiles) load() (*tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("load the key pair %s and %s: %w", f.CertFile, f.KeyFile, err)
	}
	if f.CAFile == "" {
		return &cert, nil, nil
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, nil, &FileError{Field: "caFile", Err: err}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, &FileError{Field: "caFile", Err: fmt.Errorf("%s holds no PEM certificate", f.CAFile)}
	}
	return &cert, pool, nil
}
