package transport

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestAPingFloodIsToldTooManyPingsAndDisconnected(t *testing.T) {
	_, addr := startServer(t, Config{MinPingInterval: 500 * time.Millisecond}, echo)
	c := dialRaw(t, addr)
	// Ten PINGs in one write, while the server has sent no data.
	var flood bytes.Buffer
	fr := http2.NewFramer(&flood, nil)
	for i := range byte(10) {
		require.NoError(t, fr.WritePing(false, [8]byte{i}))
	}
	_, err := c.nc.Write(flood.Bytes())
	require.NoError(t, err)

	acks := 0
	var ga *goAway
	for ga == nil {
		f, err := c.next()
		require.NoError(t, err, "a GOAWAY before the end of the connection")
		switch f := f.(type) {
		case *http2.PingFrame:
			acks++
		case *http2.GoAwayFrame:
			ga = &goAway{code: f.ErrCode, debug: string(f.DebugData())}
		}
	}
	assert.Equal(t, http2.ErrCodeEnhanceYourCalm, ga.code)
	assert.Equal(t, "too_many_pings", ga.debug)
	assert.LessOrEqual(t, acks, maxPingStrikes+1, "PINGs answered before the GOAWAY")
	readUntilClosed(t, c.nc)
}

func TestPingsBetweenResponsesAreNotCountedAgainstTheClient(t *testing.T) {
	_, addr := startServer(t, Config{MinPingInterval: time.Hour}, echo)
	c := dialRaw(t, addr)
	c.open(1, false)
	for i := range byte(10) {
		c.send(1, wrapperspb.Bytes([]byte{i}), false)
		c.until("the echo", func(f http2.Frame) bool {
			df, ok := f.(*http2.DataFrame)
			return ok && df.StreamID == 1 && len(df.Data()) > 0
		})
		for _, h := range c.ping([8]byte{'p', i}) {
			assert.NotEqual(t, http2.FrameGoAway, h.Type, "ping %d", i)
		}
	}
}

func TestKeepalivePingsASilentClientAndClosesItWhenItDoesNotAnswer(t *testing.T) {
	cfg := Config{PingAfter: 100 * time.Millisecond, PingTimeout: 100 * time.Millisecond}
	isPing := func(f http2.Frame) bool {
		pf, ok := f.(*http2.PingFrame)
		return ok && !pf.IsAck()
	}

	t.Run("unanswered", func(t *testing.T) {
		_, addr := startServer(t, cfg, echo)
		c := dialRaw(t, addr)
		c.until("the server's PING", isPing)
		assert.Nil(t, c.goAwayOrClose(), "closed without a GOAWAY")
		readUntilClosed(t, c.nc)
	})
	t.Run("answered", func(t *testing.T) {
		_, addr := startServer(t, cfg, echo)
		c := dialRaw(t, addr)
		for range 3 {
			p := c.until("the server's PING", isPing).(*http2.PingFrame)
			require.NoError(t, c.fr.WritePing(true, p.Data))
		}
		c.ping([8]byte{'a', 'l', 'i', 'v', 'e'})
	})
}

// floodUntilFailure is a handler that sends 1 MiB messages until SendMsg
// fails, and reports SendMsg's error: nil when a GiB went out to a client
// that reads nothing.
func floodUntilFailure(failed chan<- error) handlerFunc {
	return func(st grpc.ServerStream) error {
		payload := wrapperspb.Bytes(make([]byte, 1<<20))
		for range 1024 {
			if err := st.SendMsg(payload); err != nil {
				failed <- err
				return err
			}
		}
		failed <- nil
		return nil
	}
}

// deafClient opens a stream on addr with windows too large to hold the
// server back, and then reads nothing; first runs before the stream opens.
func deafClient(t *testing.T, addr string, first func(*rawClient)) *rawClient {
	c := dialRaw(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<31-1-65535))
	first(c)
	c.open(1, true)
	return c
}

func TestAClientThatStopsReadingLosesItsConnection(t *testing.T) {
	failed := make(chan error, 1)
	cfg := Config{WriteTimeout: 200 * time.Millisecond, PingAfter: 300 * time.Millisecond, PingTimeout: time.Hour}
	_, addr := startServer(t, cfg, floodUntilFailure(failed))
	// The server writes its keepalive PING past WriteTimeout/2 after the
	// handshake (see the test below for why that matters here).
	c := deafClient(t, addr, func(c *rawClient) {
		p := c.until("the server's PING", func(f http2.Frame) bool {
			pf, ok := f.(*http2.PingFrame)
			return ok && !pf.IsAck()
		}).(*http2.PingFrame)
		require.NoError(t, c.fr.WritePing(true, p.Data))
	})

	err := receive(t, failed, "SendMsg to fail")
	assert.Equal(t, codes.Unavailable, status.Code(err), "SendMsg: %v", err)
	readUntilClosed(t, c.nc)
}

func TestAClientThatStopsReadingRightAfterTheHandshakeLosesItsConnection(t *testing.T) {
	failed := make(chan error, 1)
	_, addr := startServer(t, Config{WriteTimeout: time.Second}, floodUntilFailure(failed))
	c := deafClient(t, addr, func(*rawClient) {})

	err := receive(t, failed, "SendMsg to fail")
	assert.Equal(t, codes.Unavailable, status.Code(err), "SendMsg: %v", err)
	readUntilClosed(t, c.nc)
}

func TestRequestsTheServerDoesNotServeAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name       string
		path       string
		replace    map[string]string // request headers
		data       []byte            // sent after the headers
		httpStatus string
		grpcStatus string
	}{
		{name: "an unknown method", path: "/test.Echo/Nope", httpStatus: "200", grpcStatus: "12"},
		{name: "an unknown service", path: "/other.Service/Echo", httpStatus: "200", grpcStatus: "12"},
		{name: "a content type not gRPC's", replace: map[string]string{"content-type": "application/json"}, httpStatus: "415"},
		{name: "GET", replace: map[string]string{":method": "GET"}, httpStatus: "405"},
		{name: "a compressed stream", replace: map[string]string{"grpc-encoding": "gzip"}, httpStatus: "200", grpcStatus: "12"},
		{name: "a compressed message", data: grpcMessage(1, []byte{0x1f, 0x8b}), httpStatus: "200", grpcStatus: "12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, Config{}, echo)
			c := dialRaw(t, addr)
			fields := requestFields(echoMethod)
			if tc.path != "" {
				fields = requestFields(tc.path)
			}
			for name, value := range tc.replace {
				found := false
				for i := range fields {
					if fields[i].Name == name {
						fields[i].Value, found = value, true
					}
				}
				if !found {
					fields = append(fields, hpackField(name, value))
				}
			}
			c.openFields(1, tc.data == nil, fields)
			if tc.data != nil {
				require.NoError(t, c.fr.WriteData(1, true, tc.data))
			}
			r := c.response(1)
			assert.Equal(t, tc.httpStatus, r.header(":status"))
			if tc.grpcStatus != "" {
				assert.Equal(t, tc.grpcStatus, r.header("grpc-status"))
			}
			if tc.data == nil {
				assert.Equal(t, []http2.FrameType{http2.FrameHeaders}, r.frames, "a trailers-only response")
			}
		})
	}
}

func TestAGRPCTimeoutEndsTheStreamWithDeadlineExceeded(t *testing.T) {
	ctxErr := make(chan error, 1)
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		<-st.Context().Done()
		ctxErr <- st.Context().Err()
		return st.Context().Err()
	})
	c := dialRaw(t, addr)
	// A client that sets a timeout and never resets the stream.
	c.open(1, true, hpackField("grpc-timeout", "100m"))
	r := c.response(1)
	assert.Equal(t, "4", r.header("grpc-status"), "DEADLINE_EXCEEDED")
	assert.Equal(t, "context deadline exceeded", receive(t, ctxErr, "the handler's context").Error())
}

func TestWriteStatusSendsTheOnlyStatusOfItsStream(t *testing.T) {
	type writer interface{ WriteStatus(*status.Status) error }
	streams := make(chan writer, 1)
	returned := make(chan struct{})
	var served atomic.Int32
	_, addr := startServer(t, Config{MaxConcurrentStreams: 1}, func(st grpc.ServerStream) error {
		if served.Add(1) > 1 {
			return nil
		}
		streams <- grpc.ServerTransportStreamFromContext(st.Context()).(writer)
		err := st.RecvMsg(new(wrapperspb.StringValue))
		close(returned)
		return fmt.Errorf("the handler's own error after %w", err)
	})
	c := dialRaw(t, addr)
	c.open(1, false)
	w := receive(t, streams, "the handler")
	require.NoError(t, w.WriteStatus(status.New(codes.Aborted, "a push ended it")))
	receive(t, returned, "the handler's RecvMsg to return")

	// Stream 3 and on are refused until the first handler's status is
	// done with; every frame of stream 1 comes before the one served.
	var ofFirst []http2.FrameHeader
	var trailers [][]hpack.HeaderField
	var firstRST *http2.ErrCode
	deadline := time.Now().Add(waitFor)
	for id := uint32(3); ; id += 2 {
		c.open(id, true)
		var ended response
		c.until("stream's end", func(f http2.Frame) bool {
			switch h := f.Header(); h.StreamID {
			case 1:
				ofFirst = append(ofFirst, h)
				if mh, ok := f.(*http2.MetaHeadersFrame); ok {
					trailers = append(trailers, mh.Fields)
				}
				if rf, ok := f.(*http2.RSTStreamFrame); ok {
					firstRST = &rf.ErrCode
				}
			case id:
				switch f := f.(type) {
				case *http2.RSTStreamFrame:
					ended.rst = &f.ErrCode
					return true
				case *http2.MetaHeadersFrame:
					ended.trailers = f.Fields
					return f.StreamEnded()
				}
			}
			return false
		})
		if ended.rst == nil {
			assert.Equal(t, "0", ended.header("grpc-status"), "stream %d", id)
			break
		}
		require.True(t, time.Now().Before(deadline), "no stream was served after the first")
	}
	require.Len(t, trailers, 1, "stream 1's HEADERS: %v", ofFirst)
	assert.Equal(t, "10", response{trailers: trailers[0]}.header("grpc-status"), "ABORTED")
	assert.Equal(t, "a push ended it", response{trailers: trailers[0]}.header("grpc-message"))
	for _, h := range ofFirst {
		assert.Contains(t, []http2.FrameType{http2.FrameHeaders, http2.FrameRSTStream}, h.Type, "stream 1")
	}
	// The client had not ended its side of stream 1: after the trailers it
	// is told to stop sending (gRPC's HTTP/2 mapping).
	require.NotNil(t, firstRST, "stream 1's RST_STREAM after its trailers: %v", ofFirst)
	assert.Equal(t, http2.ErrCodeNo, *firstRST)
}

func TestAClientsShrunkHeaderTableIsToldSoInTheNextHeaderBlock(t *testing.T) {
	_, addr := startServer(t, Config{}, echo)
	c := dialRaw(t, addr, http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
	// The raw header blocks are read: a decoder whose table shrank
	// expects the next block to begin with a size update (RFC 7541, 4.2).
	c.fr.ReadMetaHeaders = nil
	c.open(1, false)
	c.send(1, wrapperspb.String("table"), true)
	hf := c.until("the response HEADERS", func(f http2.Frame) bool {
		_, ok := f.(*http2.HeadersFrame)
		return ok && f.Header().StreamID == 1
	}).(*http2.HeadersFrame)
	block := hf.HeaderBlockFragment()
	require.NotEmpty(t, block)
	assert.Equal(t, byte(0x20), block[0], "a dynamic table size update to 0 first")
	dec := hpack.NewDecoder(0, nil)
	fields, err := dec.DecodeFull(block)
	require.NoError(t, err)
	assert.Equal(t, "200", response{headers: fields}.header(":status"))
}

func TestAReceiveWindowOfHTTP2sInitialWindowIsServed(t *testing.T) {
	_, addr := startServer(t, Config{ReceiveWindow: initialWindow}, echo)
	fuzzRoundTrip(t, addr)
}
