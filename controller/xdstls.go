package controller

import (
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/xds"
)

// xdsTLS is the gRPC option of xDS over TLS from opts' files, if any.
func xdsTLS(opts Options) ([]grpc.ServerOption, error) {
	if opts.XDSTLSCert == "" && opts.XDSTLSKey == "" && opts.XDSClientCA == "" {
		return nil, nil
	}
	if opts.XDSTLSCert == "" || opts.XDSTLSKey == "" {
		return nil, errors.New("xDS over TLS needs both --xds-tls-cert and --xds-tls-key")
	}
	certs, err := pki.LoadKeyPairFiles(opts.XDSTLSCert, opts.XDSTLSKey, opts.XDSClientCA)
	var fe *pki.FileError
	if errors.As(err, &fe) {
		flag := map[string]string{"certFile": "--xds-tls-cert", "keyFile": "--xds-tls-key", "caFile": "--xds-client-ca"}[fe.Field]
		return nil, fmt.Errorf("%s: %w", flag, fe.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("xDS TLS: %w", err)
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(xds.ServerTLS(certs)))}, nil
}
