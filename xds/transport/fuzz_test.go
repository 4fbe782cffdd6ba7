package transport

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// FuzzServerFrames sends whatever bytes to a running server, as a client
// that then ends its side: the server must answer, close the connection
// within the test's deadline, and go on serving new connections.
func FuzzServerFrames(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	s := New(Config{
		HandshakeTimeout: time.Second, WriteTimeout: time.Second,
		MaxHeaderListSize: 4 << 10, MaxRecvMsgSize: 64 << 10, MaxConcurrentStreams: 8,
	})
	s.RegisterService(&echoDesc, handlerFunc(echo))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(f, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	f.Cleanup(func() {
		s.Stop()
		assert.NoError(f, <-served)
	})
	addr := lis.Addr().String()

	f.Fuzz(func(t *testing.T, input []byte) {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		require.NoError(t, nc.SetDeadline(time.Now().Add(waitFor)))
		written := make(chan struct{})
		go func() {
			defer close(written)
			// The server may close before it read it all.
			_, _ = nc.Write(input)
			_ = nc.(*net.TCPConn).CloseWrite()
		}()
		_, err = io.Copy(io.Discard, nc)
		assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server kept a connection its client ended")
		_ = nc.Close()
		<-written

		fuzzRoundTrip(t, addr)
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.conns) == 0
		}, waitFor, time.Millisecond, "a connection outlived its client")
	})
}

// fuzzRoundTrip proves the server still serves: one echo on a new
// connection, which it then closes.
func fuzzRoundTrip(t *testing.T, addr string) {
	t.Helper()
	c := dialRaw(t, addr)
	defer c.nc.Close()
	c.open(1, false)
	c.send(1, wrapperspb.String("still serving"), true)
	r := c.response(1)
	require.Equal(t, "0", r.header("grpc-status"))
	msgs := r.messages(t)
	require.Len(t, msgs, 1)
	got := new(wrapperspb.StringValue)
	require.NoError(t, proto.Unmarshal(msgs[0], got))
	require.Equal(t, "still serving", got.Value)
}

// fuzzSeeds are byte streams a client could send: valid exchanges, and
// the shapes of the attacks the other tests make.
func fuzzSeeds(tb testing.TB) [][]byte {
	msg, err := proto.Marshal(wrapperspb.String("seed"))
	require.NoError(tb, err)
	seed := func(write func(fr *http2.Framer, block func(...hpack.HeaderField) []byte)) []byte {
		var out bytes.Buffer
		out.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&out, nil)
		fr.AllowIllegalWrites = true
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		block := func(fields ...hpack.HeaderField) []byte {
			hb.Reset()
			for _, f := range fields {
				require.NoError(tb, enc.WriteField(f))
			}
			return bytes.Clone(hb.Bytes())
		}
		require.NoError(tb, fr.WriteSettings())
		write(fr, block)
		return out.Bytes()
	}
	request := requestFields(echoMethod)
	must := func(err error) { require.NoError(tb, err) }
	return [][]byte{
		nil,
		[]byte(http2.ClientPreface),
		// One echo.
		seed(func(fr *http2.Framer, block func(...hpack.HeaderField) []byte) {
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(request...), EndHeaders: true}))
			must(fr.WriteData(1, true, grpcMessage(0, msg)))
		}),
		// Settings, pings, windows, a reset, a second stream, GOAWAY.
		seed(func(fr *http2.Framer, block func(...hpack.HeaderField) []byte) {
			must(fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100},
				http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0}))
			must(fr.WritePing(false, [8]byte{1}))
			must(fr.WriteWindowUpdate(0, 1000))
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(request...), EndHeaders: true}))
			must(fr.WriteData(1, false, grpcMessage(0, msg)))
			must(fr.WriteWindowUpdate(1, 50))
			must(fr.WriteRSTStream(1, http2.ErrCodeCancel))
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(request...), EndHeaders: true, EndStream: true}))
			must(fr.WriteGoAway(0, http2.ErrCodeNo, []byte("bye")))
		}),
		// Headers in CONTINUATION, a message over padded frames, trailers,
		// PRIORITY and a frame of an unknown type.
		seed(func(fr *http2.Framer, block func(...hpack.HeaderField) []byte) {
			b := block(request...)
			must(fr.WriteHeaders(http2.HeadersFrameParam{
				StreamID: 1, BlockFragment: b[:4], EndHeaders: false,
				Priority: http2.PriorityParam{StreamDep: 0, Weight: 15},
			}))
			must(fr.WriteContinuation(1, true, b[4:]))
			m := grpcMessage(0, msg)
			must(fr.WriteDataPadded(1, false, m[:3], []byte{0, 0}))
			must(fr.WriteDataPadded(1, false, m[3:], nil))
			must(fr.WritePriority(1, http2.PriorityParam{StreamDep: 3, Weight: 1}))
			must(fr.WriteRawFrame(0xfa, 0, 1, []byte("extension")))
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(hpackField("x-trailer", "t")), EndHeaders: true, EndStream: true}))
		}),
		// A message over the limit; a compressed one; an even stream.
		seed(func(fr *http2.Framer, block func(...hpack.HeaderField) []byte) {
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(request...), EndHeaders: true}))
			must(fr.WriteData(1, false, []byte{0, 0, 1, 0, 0}))
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(request...), EndHeaders: true}))
			must(fr.WriteData(3, true, grpcMessage(1, msg)))
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 4, BlockFragment: block(request...), EndHeaders: true}))
		}),
		// Illegal increments and a DATA frame on an idle stream.
		seed(func(fr *http2.Framer, block func(...hpack.HeaderField) []byte) {
			must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(request...), EndHeaders: true}))
			must(fr.WriteWindowUpdate(1, 0))
			must(fr.WriteWindowUpdate(0, 1<<31-1))
			must(fr.WriteData(9, true, grpcMessage(0, msg)))
		}),
	}
}
