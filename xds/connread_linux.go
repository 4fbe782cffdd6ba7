package xds

import (
	"errors"
	"io"
	"net"
	"syscall"

	"google.golang.org/grpc/mem"
)

// readyRead gives a bounded connection (boundConn) grpc-go's
// non-memory-pinning read. grpc-go reads a plain TCP connection only when
// data is there, into a buffer taken from a pool for that read alone, so an
// idle proxy pins no read buffer; any other net.Conn it reads through a
// 32 KiB buffer of its own, kept for the connection's life: 320 MiB more at
// 10 000 proxies. It recognises a connection that reads this way by the
// method set of its internal readyreader.Reader (ReadOnReady), which
// boundConn has here (TestOpenStreamHeapCost runs through the bound
// listener: a grpc-go that stopped seeing it would fail it).
type readyRead struct {
	raw syscall.RawConn
	// The read's request and result, fields rather than a closure's
	// captures so that a read allocates nothing.
	bufSize int
	pool    mem.BufferPool
	buf     *[]byte
	n       int
	err     error
	doRead  func(fd uintptr) bool
}

func newReadyRead(c net.Conn) *readyRead {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &readyRead{raw: raw}
	r.doRead = func(fd uintptr) bool {
		r.buf = r.pool.Get(r.bufSize)
		r.n, r.err = syscall.Read(int(fd), *r.buf)
		if r.err != nil {
			r.pool.Put(r.buf)
			r.buf = nil
		}
		// Not ready: the poller waits for data and calls again.
		return !errors.Is(r.err, syscall.EAGAIN) && !errors.Is(r.err, syscall.EWOULDBLOCK)
	}
	return r
}

// ReadOnReady waits until the connection is readable, then reads up to
// bufSize bytes into a buffer from pool, which the caller gives back.
func (c *boundConn) ReadOnReady(bufSize int, pool mem.BufferPool) (*[]byte, int, error) {
	r := c.ready
	if r == nil {
		// Not a TCP connection: read as any io.Reader would.
		buf := pool.Get(bufSize)
		n, err := c.Read(*buf)
		if err != nil {
			pool.Put(buf)
			return nil, 0, err
		}
		return buf, n, nil
	}
	r.bufSize, r.pool = bufSize, pool
	err := r.raw.Read(r.doRead)
	buf, n, readErr := r.buf, r.n, r.err
	r.buf, r.pool, r.err = nil, nil, nil
	switch {
	case err != nil:
		if buf != nil {
			pool.Put(buf)
		}
		return nil, 0, err
	case readErr != nil:
		return nil, 0, readErr
	case n == 0:
		// read(2) reports the peer's close as 0 bytes; an io.Reader says EOF.
		pool.Put(buf)
		return nil, 0, io.EOF
	}
	return buf, n, nil
}
