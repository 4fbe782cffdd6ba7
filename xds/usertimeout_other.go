//go:build !linux

package xds

import (
	"net"
	"time"
)

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist
// (grpc-go does not set it there either).
func setUserTimeout(net.Conn, time.Duration) {}
