package transport

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// blockUntilDone is a handler of one stream that reads nothing and
// reports when its context ends.
func blockUntilDone(started, done chan<- struct{}) handlerFunc {
	return func(st grpc.ServerStream) error {
		started <- struct{}{}
		<-st.Context().Done()
		done <- struct{}{}
		return nil
	}
}

func TestDataBeyondTheStreamsWindowResetsTheStream(t *testing.T) {
	started, done := make(chan struct{}, 1), make(chan struct{}, 1)
	_, addr := startServer(t, Config{ReceiveWindow: 64 << 10}, blockUntilDone(started, done))
	c := dialRaw(t, addr)
	c.open(1, false)
	receive(t, started, "the handler")

	// Whole messages the handler never takes: the server gives no window
	// back for them, and the fifth frame is past the 64 KiB it advertised.
	frame := grpcMessage(0, make([]byte, 16<<10-5))
	for range 5 {
		require.NoError(t, c.fr.WriteData(1, false, frame))
	}
	r := c.response(1)
	require.NotNil(t, r.rst, "a RST_STREAM, got frames %v", r.frames)
	assert.Equal(t, http2.ErrCodeFlowControl, *r.rst)
	receive(t, done, "the handler's context to end")
	c.ping([8]byte{'a', 'l', 'i', 'v', 'e'}) // the connection goes on
}

func TestAWindowUpdateThatOverflowsAWindowIsAFlowControlError(t *testing.T) {
	t.Run("the connection's", func(t *testing.T) {
		_, addr := startServer(t, Config{}, echo)
		c := dialRaw(t, addr)
		require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<31-1))
		ga := c.goAwayOrClose()
		require.NotNil(t, ga, "a GOAWAY")
		assert.Equal(t, http2.ErrCodeFlowControl, ga.code)
		readUntilClosed(t, c.nc)
	})
	t.Run("a stream's", func(t *testing.T) {
		started, done := make(chan struct{}, 1), make(chan struct{}, 1)
		_, addr := startServer(t, Config{}, blockUntilDone(started, done))
		c := dialRaw(t, addr)
		c.open(1, false)
		receive(t, started, "the handler")
		require.NoError(t, c.fr.WriteWindowUpdate(1, 1<<31-1))
		r := c.response(1)
		require.NotNil(t, r.rst, "a RST_STREAM, got frames %v", r.frames)
		assert.Equal(t, http2.ErrCodeFlowControl, *r.rst)
		receive(t, done, "the handler's context to end")
		c.ping([8]byte{'a', 'l', 'i', 'v', 'e'})
	})
}

func TestTheServerSendsNoMoreThanTheClientsWindows(t *testing.T) {
	for _, tc := range []struct {
		name         string
		streamWindow uint32 // the client's SETTINGS_INITIAL_WINDOW_SIZE
		size         int    // of the response's payload
		firstBurst   int    // the DATA the server may send before a WINDOW_UPDATE
	}{
		{name: "a stream window of 100 bytes", streamWindow: 100, size: 1000, firstBurst: 100},
		{name: "the connection's initial window", streamWindow: 1 << 20, size: 100 << 10, firstBurst: 65535},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := bytes.Repeat([]byte("legate"), tc.size/6+1)[:tc.size]
			_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
				return st.SendMsg(wrapperspb.Bytes(payload))
			})
			c := dialRaw(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: tc.streamWindow})
			c.open(1, true)

			var burst []byte
			c.until("the first burst of DATA", func(f http2.Frame) bool {
				if df, ok := f.(*http2.DataFrame); ok && df.StreamID == 1 {
					assert.LessOrEqual(t, len(df.Data()), 16<<10, "the client's SETTINGS_MAX_FRAME_SIZE")
					burst = append(burst, df.Data()...)
				}
				return len(burst) >= tc.firstBurst
			})
			got := len(burst)
			// Whatever the server wrote before it read the PING is in:
			// none of it may be DATA past the window.
			for _, h := range c.ping([8]byte{'w', 'i', 'n', 'd', 'o', 'w'}) {
				if h.Type == http2.FrameData {
					got += int(h.Length)
				}
			}
			assert.Equal(t, tc.firstBurst, got, "DATA before any WINDOW_UPDATE")

			require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<30))
			require.NoError(t, c.fr.WriteWindowUpdate(1, 1<<30))
			r := c.response(1)
			assert.Equal(t, "0", r.header("grpc-status"))
			r.data = append(burst, r.data...)
			msgs := r.messages(t)
			require.Len(t, msgs, 1)
			m := new(wrapperspb.BytesValue)
			require.NoError(t, proto.Unmarshal(msgs[0], m))
			assert.True(t, bytes.Equal(payload, m.Value), "the response arrived whole")
		})
	}
}

func TestAFrameOfManySmallMessagesCostsTheServerMemoryInProportion(t *testing.T) {
	started, done := make(chan struct{}, 1), make(chan struct{}, 1)
	_, addr := startServer(t, Config{}, blockUntilDone(started, done))
	c := dialRaw(t, addr)
	c.open(1, false)
	receive(t, started, "the handler")

	// 16 KiB of empty messages, five bytes each: 3,276 messages a frame.
	frame := make([]byte, 16<<10-4)
	const frames = 4
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range frames {
		require.NoError(t, c.fr.WriteData(1, false, frame))
	}
	c.ping([8]byte{'s', 'p', 'l', 'i', 't'}) // the server has read them
	runtime.ReadMemStats(&after)

	sent := uint64(frames * len(frame))
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, 64*sent, "the server allocated %d bytes for %d bytes of messages", allocated, sent)
}

func TestDataFramesStayAt16KiBWhateverTheClientAllows(t *testing.T) {
	payload := bytes.Repeat([]byte("legate"), 100<<10/6)
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		return st.SendMsg(wrapperspb.Bytes(payload))
	})
	// A client that reads frames of up to 1 MiB, as the fan-out
	// benchmark's does: the server still writes 16 KiB ones, so that a
	// client keeping its read buffer keeps no more per connection.
	c := dialRaw(t, addr,
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 20},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
	require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<30))
	c.open(1, true)
	frames := 0
	c.until("the response's DATA", func(f http2.Frame) bool {
		if df, ok := f.(*http2.DataFrame); ok && df.StreamID == 1 {
			frames++
			assert.LessOrEqual(t, len(df.Data()), 16<<10, "DATA frame %d", frames)
		}
		_, end := f.(*http2.MetaHeadersFrame)
		return end && f.Header().Flags.Has(http2.FlagHeadersEndStream)
	})
	assert.GreaterOrEqual(t, frames, len(payload)/(16<<10), "the response in frames of 16 KiB")
}
