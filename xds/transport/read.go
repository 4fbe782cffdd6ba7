package transport

import (
	"bufio"
	"io"
	"net"
	"sync"

	"google.golang.org/grpc/mem"
)

// readSize is the most read from a connection at once.
const readSize = 16 << 10

// readyReader reads only once data is there, into a buffer from pool (the
// bound listener's connections, xds.boundConn): an idle connection then
// holds no read buffer.
type readyReader interface {
	ReadOnReady(bufSize int, pool mem.BufferPool) (*[]byte, int, error)
}

// connReader is what the framer reads from. Over a connection that reads
// on ready, what one read brought stays in a pooled buffer until the
// frames in it are taken, and goes back to the pool then; over TLS, whose
// connection keeps its own record buffer, reads go straight through;
// anything else is read through a small buffer of its own.
type connReader struct {
	r     io.Reader
	ready readyReader
	pool  mem.BufferPool
	buf   *[]byte
	data  []byte // what buf holds that was not read yet
}

func newConnReader(c net.Conn) *connReader {
	cr := &connReader{r: c}
	if rr, ok := c.(readyReader); ok {
		cr.ready, cr.pool = rr, readBuffers
	} else if _, isTCP := c.(*net.TCPConn); isTCP {
		cr.r = bufio.NewReaderSize(c, 4<<10)
	}
	return cr
}

// readBuffers pools the buffers of reads. grpc-go's default pool clears a
// buffer each time it hands it out: 16 KiB cleared for every discovery
// request of a few hundred bytes. The framer copies what it keeps out of
// a read, so nothing of one connection's read reaches another's.
var readBuffers mem.BufferPool = &plainPool{}

type plainPool struct{ pool sync.Pool }

func (p *plainPool) Get(size int) *[]byte {
	if bp, ok := p.pool.Get().(*[]byte); ok && cap(*bp) >= size {
		*bp = (*bp)[:size]
		return bp
	}
	b := make([]byte, size)
	return &b
}

func (p *plainPool) Put(bp *[]byte) { p.pool.Put(bp) }

func (cr *connReader) Read(p []byte) (int, error) {
	if len(cr.data) == 0 {
		if cr.ready == nil {
			return cr.r.Read(p)
		}
		buf, n, err := cr.ready.ReadOnReady(readSize, cr.pool)
		if err != nil {
			return 0, err
		}
		cr.buf, cr.data = buf, (*buf)[:n]
	}
	n := copy(p, cr.data)
	cr.data = cr.data[n:]
	if len(cr.data) == 0 {
		cr.pool.Put(cr.buf)
		cr.buf, cr.data = nil, nil
	}
	return n, nil
}
