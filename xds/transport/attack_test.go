package transport

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestAClientThatSaysNothingIsClosedAfterTheHandshakeTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name string
		sent string
	}{
		{name: "nothing"},
		{name: "half a preface", sent: http2.ClientPreface[:10]},
		{name: "a preface without SETTINGS", sent: http2.ClientPreface},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, Config{HandshakeTimeout: timeout}, echo)
			start := time.Now()
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = nc.Close() })
			_, err = io.WriteString(nc, tc.sent)
			require.NoError(t, err)
			readUntilClosed(t, nc)
			assert.GreaterOrEqual(t, time.Since(start), timeout, "closed before the handshake timeout")
		})
	}
}

func TestAClientThatIsNotHTTP2IsClosedAtOnce(t *testing.T) {
	// The handshake timeout is longer than the test waits: a close is the
	// server's answer to what was sent.
	var ping bytes.Buffer
	require.NoError(t, http2.NewFramer(&ping, nil).WritePing(false, [8]byte{}))
	for _, tc := range []struct {
		name string
		sent string
	}{
		{name: "HTTP/1.1", sent: "GET / HTTP/1.1\r\nHost: legate\r\n\r\n"},
		{name: "a preface then a PING instead of SETTINGS", sent: http2.ClientPreface + ping.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, Config{HandshakeTimeout: time.Hour}, echo)
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = nc.Close() })
			_, err = io.WriteString(nc, tc.sent)
			require.NoError(t, err)
			readUntilClosed(t, nc)
		})
	}
}

func TestStreamsPastTheBoundAreRefusedUntilTheirHandlersReturn(t *testing.T) {
	var running, most, started atomic.Int32
	release := newGate()
	handlers := make(chan struct{}, 16)
	_, addr := startServer(t, Config{MaxConcurrentStreams: 2}, func(st grpc.ServerStream) error {
		started.Add(1)
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case handlers <- struct{}{}:
		default: // past the bound: counted above, and not left stuck here
		}
		release.wait() // deaf to its context, as a slow handler is
		running.Add(-1)
		return nil
	})
	t.Cleanup(release.open)
	c := dialRaw(t, addr)
	c.open(1, false)
	c.open(3, false)
	receive(t, handlers, "the first handler")
	receive(t, handlers, "the second handler")

	c.open(5, false)
	r := c.response(5)
	require.NotNil(t, r.rst, "stream 5 refused, got frames %v", r.frames)
	assert.Equal(t, http2.ErrCodeRefusedStream, *r.rst)

	// Rapid reset: the running streams reset, then streams opened and
	// reset as fast as they can be written. A reset stream's handler
	// still counts until it returns.
	require.NoError(t, c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	require.NoError(t, c.fr.WriteRSTStream(3, http2.ErrCodeCancel))
	const rapid = 200
	var burst bytes.Buffer
	fr := http2.NewFramer(&burst, nil)
	for i := range uint32(rapid) {
		id := 7 + 2*i
		require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{
			StreamID: id, BlockFragment: c.block(requestFields(echoMethod)), EndHeaders: true,
		}))
		require.NoError(t, fr.WriteRSTStream(id, http2.ErrCodeCancel))
	}
	_, err := c.nc.Write(burst.Bytes())
	require.NoError(t, err)
	refused := 0
	for _, h := range c.ping([8]byte{'r', 'e', 's', 'e', 't'}) {
		if h.Type == http2.FrameRSTStream && h.StreamID >= 7 {
			refused++
		}
	}
	assert.Equal(t, rapid, refused, "every stream opened past the bound is refused")
	assert.Equal(t, int32(2), started.Load(), "handlers started")
	assert.Equal(t, int32(2), most.Load(), "handlers at once")

	// Once the handlers return, their slots are free again.
	release.open()
	id := uint32(7 + 2*rapid)
	deadline := time.Now().Add(waitFor)
	for ; ; id += 2 {
		c.open(id, true)
		r = c.response(id)
		if r.rst == nil || *r.rst != http2.ErrCodeRefusedStream {
			break
		}
		require.True(t, time.Now().Before(deadline), "no slot came free")
	}
	assert.Equal(t, "0", r.header("grpc-status"), "stream %d", id)
	assert.Equal(t, int32(3), started.Load())
	assert.Equal(t, int32(2), most.Load())
}

func TestAContinuationFloodIsCutOffUnread(t *testing.T) {
	_, addr := startServer(t, Config{MaxHeaderListSize: 4 << 10}, echo)
	c := dialRaw(t, addr)
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: 1, BlockFragment: c.block(requestFields(echoMethod)), EndHeaders: false,
	}))

	// The reader takes what the server says on its own goroutine; the
	// writer floods until the server stops reading.
	type ending struct {
		goAway *goAway
		err    error
	}
	ended := make(chan ending, 1)
	go func() {
		for {
			f, err := c.next()
			if err != nil {
				ended <- ending{err: err}
				return
			}
			if ga, ok := f.(*http2.GoAwayFrame); ok {
				ended <- ending{goAway: &goAway{code: ga.ErrCode, debug: string(ga.DebugData())}}
				return
			}
		}
	}()
	const limit = 64 << 20
	require.NoError(t, c.nc.SetWriteDeadline(time.Now().Add(waitFor)))
	written := 0
	var err error
	for i := 0; written < limit; i++ {
		frag := c.block([]hpack.HeaderField{{Name: fmt.Sprintf("x-flood-%d", i), Value: strings.Repeat("flood", 200)}})
		if err = c.fr.WriteContinuation(1, false, frag); err != nil {
			break
		}
		written += 9 + len(frag)
	}
	require.Error(t, err, "the server read %d bytes of one header list", written)
	assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server stopped reading but kept the connection")
	e := receive(t, ended, "the server to end the connection")
	if e.goAway != nil {
		assert.Equal(t, http2.ErrCodeProtocol, e.goAway.code)
	} else {
		assert.True(t, isClosed(e.err), "the connection should end, not %v", e.err)
	}
}

func TestAHeaderListOverTheLimitEndsItsStreamAlone(t *testing.T) {
	_, addr := startServer(t, Config{MaxHeaderListSize: 1 << 10}, echo)
	c := dialRaw(t, addr)
	// Within one frame, and each value short enough to be decoded: the
	// list is over the limit only once added up.
	c.open(1, false,
		hpack.HeaderField{Name: "x-big-1", Value: strings.Repeat("a", 600)},
		hpack.HeaderField{Name: "x-big-2", Value: strings.Repeat("b", 600)})
	r := c.response(1)
	assert.Equal(t, "8", r.header("grpc-status"), "RESOURCE_EXHAUSTED")
	assert.Equal(t, []http2.FrameType{http2.FrameHeaders}, r.frames, "a trailers-only response")

	c.open(3, false)
	c.send(3, wrapperspb.String("still here"), true)
	r = c.response(3)
	assert.Equal(t, "0", r.header("grpc-status"))
	msgs := r.messages(t)
	require.Len(t, msgs, 1)
	got := new(wrapperspb.StringValue)
	require.NoError(t, proto.Unmarshal(msgs[0], got))
	assert.Equal(t, "still here", got.Value)
}

func TestAMessageDeclaredOverTheLimitEndsTheStreamBeforeItsBody(t *testing.T) {
	_, addr := startServer(t, Config{MaxRecvMsgSize: 1 << 10}, echo)
	c := dialRaw(t, addr)
	c.open(1, false)
	// The prefix alone, declaring 2 KiB.
	require.NoError(t, c.fr.WriteData(1, false, []byte{0, 0, 0, 8, 0}))
	r := c.response(1)
	assert.Equal(t, "8", r.header("grpc-status"), "RESOURCE_EXHAUSTED")
	assert.Contains(t, r.header("grpc-message"), "2048")
}

func TestAResetOfTheServersOwnEndsTheStreamsHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(c *rawClient)
	}{
		{name: "a WINDOW_UPDATE of 0", send: func(c *rawClient) {
			c.fr.AllowIllegalWrites = true
			require.NoError(t, c.fr.WriteWindowUpdate(1, 0))
			c.fr.AllowIllegalWrites = false
		}},
		{name: "trailers with an upper-case name", send: func(c *rawClient) {
			require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{
				StreamID: 1, EndHeaders: true, EndStream: true,
				BlockFragment: c.block([]hpack.HeaderField{{Name: "X-Upper", Value: "v"}}),
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, done := make(chan struct{}, 1), make(chan struct{}, 1)
			_, addr := startServer(t, Config{}, blockUntilDone(started, done))
			c := dialRaw(t, addr)
			c.open(1, false)
			receive(t, started, "the handler")
			tc.send(c)
			r := c.response(1)
			require.NotNil(t, r.rst, "a RST_STREAM, got frames %v", r.frames)
			assert.Equal(t, http2.ErrCodeProtocol, *r.rst)
			receive(t, done, "the handler's context to end")
		})
	}
}
