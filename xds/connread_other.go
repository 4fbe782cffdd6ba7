//go:build !linux

package xds

import "net"

// readyRead exists on Linux only (connread_linux.go), as grpc-go's own
// non-memory-pinning read does: elsewhere a bounded connection is read
// through grpc-go's buffer.
type readyRead struct{}

func newReadyRead(net.Conn) *readyRead { return nil }
