package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// waitFor bounds every wait of these tests: long enough for a loaded CI
// machine, short enough that a hang fails instead of timing the run out.
const waitFor = 10 * time.Second

const echoMethod = "/test.Echo/Echo"

// echoServer is test.Echo's handler type; handlerFunc implements it.
type echoServer interface{}

// handlerFunc is a test's handler of test.Echo/Echo.
type handlerFunc func(grpc.ServerStream) error

var echoDesc = grpc.ServiceDesc{
	ServiceName: "test.Echo",
	HandlerType: (*echoServer)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Echo",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(srv any, st grpc.ServerStream) error {
			return srv.(handlerFunc)(st)
		},
	}},
}

// echo sends back every message it receives, until the client ends its
// side.
func echo(st grpc.ServerStream) error {
	for {
		m := new(wrapperspb.BytesValue)
		if err := st.RecvMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := st.SendMsg(m); err != nil {
			return err
		}
	}
}

// startServer serves handle as test.Echo/Echo on 127.0.0.1, until the
// test ends.
func startServer(t *testing.T, cfg Config, handle handlerFunc) (*Server, string) {
	t.Helper()
	s := New(cfg)
	s.RegisterService(&echoDesc, handle)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Stop()
		assert.NoError(t, <-served, "Serve after Stop")
	})
	return s, lis.Addr().String()
}

// dialGRPC is a grpc-go client of addr, in cleartext.
func dialGRPC(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	cc, err := grpc.NewClient(addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// openEcho opens a test.Echo/Echo stream on cc.
func openEcho(t *testing.T, ctx context.Context, cc *grpc.ClientConn) grpc.ClientStream {
	t.Helper()
	cs, err := cc.NewStream(ctx, &echoDesc.Streams[0], echoMethod)
	require.NoError(t, err)
	return cs
}

// receive waits for a value on ch, failing the test after waitFor.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		require.FailNow(t, "timed out waiting for "+what)
		panic("unreachable")
	}
}

// gate holds handlers until a test opens it; a test registers open as a
// cleanup after startServer's, so that a failing test does not leave the
// server's Stop waiting for handlers held at the gate.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) wait() { <-g.ch }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// rawClient speaks HTTP/2 to the server with a bare framer, to send what a
// well-behaved client never would. Only the test's goroutine uses it,
// unless a test says otherwise.
type rawClient struct {
	t   *testing.T
	nc  net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
}

// dialRaw connects to addr and sends the client preface and settings.
func dialRaw(t *testing.T, addr string, settings ...http2.Setting) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	c := newRawClient(t, nc)
	_, err = io.WriteString(nc, http2.ClientPreface)
	require.NoError(t, err)
	require.NoError(t, c.fr.WriteSettings(settings...))
	return c
}

func newRawClient(t *testing.T, nc net.Conn) *rawClient {
	c := &rawClient{t: t, nc: nc}
	c.fr = http2.NewFramer(nc, nc)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.SetMaxReadFrameSize(1 << 24)
	c.enc = hpack.NewEncoder(&c.buf)
	return c
}

// requestFields are a gRPC request's headers for path.
func requestFields(path string) []hpack.HeaderField {
	return []hpack.HeaderField{
		{Name: ":method", Value: "POST"},
		{Name: ":scheme", Value: "http"},
		{Name: ":path", Value: path},
		{Name: ":authority", Value: "legate.test"},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "te", Value: "trailers"},
	}
}

func hpackField(name, value string) hpack.HeaderField {
	return hpack.HeaderField{Name: name, Value: value}
}

// block encodes fields with the connection's encoder.
func (c *rawClient) block(fields []hpack.HeaderField) []byte {
	c.buf.Reset()
	for _, f := range fields {
		require.NoError(c.t, c.enc.WriteField(f))
	}
	return bytes.Clone(c.buf.Bytes())
}

// open sends the HEADERS of a request for test.Echo/Echo on stream id,
// with extra headers after the usual ones.
func (c *rawClient) open(id uint32, end bool, extra ...hpack.HeaderField) {
	c.t.Helper()
	c.openFields(id, end, append(requestFields(echoMethod), extra...))
}

func (c *rawClient) openFields(id uint32, end bool, fields []hpack.HeaderField) {
	c.t.Helper()
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: id, BlockFragment: c.block(fields), EndHeaders: true, EndStream: end,
	}))
}

// send sends m as one gRPC message on stream id.
func (c *rawClient) send(id uint32, m proto.Message, end bool) {
	c.t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(c.t, err)
	require.NoError(c.t, c.fr.WriteData(id, end, grpcMessage(0, b)))
}

// grpcMessage is b with the gRPC prefix: flags, then its length.
func grpcMessage(flags byte, b []byte) []byte {
	out := make([]byte, 5, 5+len(b))
	out[0] = flags
	binary.BigEndian.PutUint32(out[1:], uint32(len(b)))
	return append(out, b...)
}

// next reads the next frame within waitFor.
func (c *rawClient) next() (http2.Frame, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(waitFor)); err != nil {
		return nil, err
	}
	return c.fr.ReadFrame()
}

// until reads frames, answering the server's SETTINGS, until match says
// a frame is the one awaited, and returns it.
func (c *rawClient) until(what string, match func(http2.Frame) bool) http2.Frame {
	c.t.Helper()
	for {
		f, err := c.next()
		require.NoError(c.t, err, "waiting for %s", what)
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			require.NoError(c.t, c.fr.WriteSettingsAck())
		}
		if match(f) {
			return f
		}
	}
}

// response is what the server sent on one stream.
type response struct {
	headers  []hpack.HeaderField // the first HEADERS
	trailers []hpack.HeaderField // the HEADERS that ended the stream
	data     []byte
	frames   []http2.FrameType // in order
	rst      *http2.ErrCode    // a RST_STREAM before or instead of trailers
}

func (r response) header(name string) string {
	for _, list := range [][]hpack.HeaderField{r.trailers, r.headers} {
		for _, f := range list {
			if f.Name == name {
				return f.Value
			}
		}
	}
	return ""
}

// messages splits the response's data into gRPC messages.
func (r response) messages(t *testing.T) [][]byte {
	var out [][]byte
	for b := r.data; len(b) > 0; {
		require.GreaterOrEqual(t, len(b), 5, "a message prefix")
		n := int(binary.BigEndian.Uint32(b[1:5]))
		require.GreaterOrEqual(t, len(b), 5+n, "a whole message")
		out = append(out, b[5:5+n])
		b = b[5+n:]
	}
	return out
}

// response reads frames until stream id ends with trailers or a reset.
func (c *rawClient) response(id uint32) response {
	c.t.Helper()
	var r response
	c.until("the end of stream", func(f http2.Frame) bool {
		if f.Header().StreamID != id {
			return false
		}
		r.frames = append(r.frames, f.Header().Type)
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if r.headers == nil {
				r.headers = f.Fields
			}
			if f.StreamEnded() {
				r.trailers = f.Fields
				return true
			}
		case *http2.DataFrame:
			r.data = append(r.data, f.Data()...)
		case *http2.RSTStreamFrame:
			r.rst = &f.ErrCode
			return true
		}
		return false
	})
	return r
}

// ping sends a PING and reads until its ACK, returning the headers of
// the frames that came before it: what the server wrote before it read
// the PING.
func (c *rawClient) ping(data [8]byte) []http2.FrameHeader {
	c.t.Helper()
	require.NoError(c.t, c.fr.WritePing(false, data))
	var before []http2.FrameHeader
	c.until("the PING's ACK", func(f http2.Frame) bool {
		if pf, ok := f.(*http2.PingFrame); ok && pf.IsAck() && pf.Data == data {
			return true
		}
		before = append(before, f.Header())
		return false
	})
	return before
}

// goAway is what a GOAWAY frame said.
type goAway struct {
	code  http2.ErrCode
	debug string
}

// goAwayOrClose reads frames until a GOAWAY or the end of the connection:
// it returns the GOAWAY, or nil when the connection ended without one.
func (c *rawClient) goAwayOrClose() *goAway {
	c.t.Helper()
	for {
		f, err := c.next()
		if err != nil {
			require.True(c.t, isClosed(err), "the connection should end, not %v", err)
			return nil
		}
		if ga, ok := f.(*http2.GoAwayFrame); ok {
			return &goAway{code: ga.ErrCode, debug: string(ga.DebugData())}
		}
	}
}

// isClosed tells whether err is the end of a connection the server
// closed, rather than a timeout of the test's own.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// readUntilClosed reads and drops what nc receives until the server
// closes it; it fails the test when within waitFor it does not.
func readUntilClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(waitFor)))
	_, err := io.Copy(io.Discard, nc)
	if err == nil {
		return // EOF
	}
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server did not close the connection")
	require.True(t, isClosed(err), "the connection should end, not %v", err)
}
