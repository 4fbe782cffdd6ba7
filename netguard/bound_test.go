package netguard

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lines collects what a logger wrote.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, args)
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// An HTTP listener holds at most its bound: the next connection is reset
// before anything is read from it, one line says so, and a closed
// connection gives its place back once, however often it is closed.
func TestBoundRefusesConnectionsBeyondItsMaximum(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	logged := &lines{}
	lis := Limit{What: "the status API", Max: 2, Log: funcr.New(logged.add, funcr.Options{})}.Listener(raw)
	t.Cleanup(func() { _ = lis.Close() })

	// The server side: every accepted connection, in order.
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", lis.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// refusedDial dials and reports whether the server reset the
	// connection without accepting it: the reset may come before the
	// dial returns, or on the first read.
	refusedDial := func() bool {
		c, err := net.Dial("tcp", lis.Addr().String())
		if err != nil {
			require.ErrorIs(t, err, syscall.ECONNRESET, "the only dial error a refusal makes")
			return true
		}
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = c.Read(make([]byte, 1))
		require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "neither accepted nor refused within 10 s")
		return err != nil
	}
	acceptedOne := func() net.Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no connection accepted within 10 s")
			return nil
		}
	}

	dial()
	dial()
	s1 := acceptedOne()
	acceptedOne()

	assert.True(t, refusedDial(), "a connection beyond the bound is reset")
	require.Len(t, logged.get(), 1)
	assert.Contains(t, logged.get()[0], `"listener"="the status API"`)
	assert.Contains(t, logged.get()[0], `"max"=2`)
	assert.Contains(t, logged.get()[0], `"refused"=1`)
	assert.Contains(t, logged.get()[0], `"lastPeer"="127.0.0.1"`)
	// The next refusal within the minute is counted, not logged.
	assert.True(t, refusedDial())
	assert.Len(t, logged.get(), 1)

	// Closing one twice frees one place: one more is accepted, the next
	// is refused again.
	require.NoError(t, s1.Close())
	_ = s1.Close()
	fourth := dial()
	s4 := acceptedOne()
	_, err = fourth.Write([]byte("x"))
	require.NoError(t, err)
	_, err = io.ReadFull(s4, make([]byte, 1))
	require.NoError(t, err, "the freed place serves a new connection")
	assert.True(t, refusedDial(), "one close gave back one place only")
}
