// Package service is a Kubernetes Service in miniature for tests: a
// loopback TCP address that spreads connections over backends in turn,
// skipping those that refuse, so that clients of a replica that dies
// reconnect to another, as they would through a ClusterIP Service.
package service

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Service forwards connections to its backends.
type Service struct {
	lis      net.Listener
	backends []string

	mu   sync.Mutex
	next int
}

// Start listens on a loopback port and forwards each connection to the
// next backend that accepts it, until the test ends.
func Start(t testing.TB, backends ...string) *Service {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &Service{lis: lis, backends: backends}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = lis.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.forward(conn) })
		}
	})
	return s
}

// Addr is the Service's address.
func (s *Service) Addr() string { return s.lis.Addr().String() }

func (s *Service) forward(conn net.Conn) {
	defer conn.Close()
	var up net.Conn
	for range s.backends {
		s.mu.Lock()
		addr := s.backends[s.next%len(s.backends)]
		s.next++
		s.mu.Unlock()
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			up = c
			break
		}
	}
	if up == nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
	<-done // either side closing ends the connection
}
