package controller

import (
	"google.golang.org/grpc"

	"github.com/legate-dev/legate/core"
)

// xdsTLS is the gRPC option of xDS over TLS from opts' files, if any;
// errors name the field and flag as in legate serve (core.XDSTLSFiles).
func xdsTLS(opts Options) ([]grpc.ServerOption, error) {
	opt, err := xdsFiles(opts).ServerOption()
	if err != nil || opt == nil {
		return nil, err
	}
	return []grpc.ServerOption{opt}, nil
}

// xdsFiles are opts' xDS TLS files.
func xdsFiles(opts Options) core.XDSTLSFiles {
	return core.XDSTLSFiles{Cert: opts.XDSTLSCert, Key: opts.XDSTLSKey, ClientCA: opts.XDSClientCA}
}
