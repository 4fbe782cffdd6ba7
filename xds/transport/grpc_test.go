package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestAGRPCClientExchangesMessagesLargerThanBothWindows(t *testing.T) {
	// 3 MiB each way: grpc-go's windows start at 64 KiB, and the server's
	// ReceiveWindow is smaller still, so both sides wait for WINDOW_UPDATEs.
	_, addr := startServer(t, Config{ReceiveWindow: 128 << 10}, echo)
	cc := dialGRPC(t, addr)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	cs := openEcho(t, ctx, cc)

	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	for _, payload := range [][]byte{[]byte("hello"), {}, big, []byte("after the big one"), big[:70000]} {
		require.NoError(t, cs.SendMsg(wrapperspb.Bytes(payload)))
		got := new(wrapperspb.BytesValue)
		require.NoError(t, cs.RecvMsg(got))
		assert.Len(t, got.Value, len(payload))
		assert.True(t, bytes.Equal(payload, got.Value), "the echo of %d bytes differs", len(payload))
	}
	require.NoError(t, cs.CloseSend())
	assert.ErrorIs(t, cs.RecvMsg(new(wrapperspb.BytesValue)), io.EOF, "the handler returned nil: status OK")
}

func TestAHandlersStatusReachesTheClientIntact(t *testing.T) {
	const msg = "naïve café: 100% ✓ — 50%2F off\r\n日本"
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		if err := st.SendMsg(wrapperspb.String("first")); err != nil {
			return err
		}
		return status.Error(codes.FailedPrecondition, msg)
	})
	cs := openEcho(t, t.Context(), dialGRPC(t, addr))

	got := new(wrapperspb.StringValue)
	require.NoError(t, cs.RecvMsg(got))
	assert.Equal(t, "first", got.Value)
	err := cs.RecvMsg(got)
	s, ok := status.FromError(err)
	require.True(t, ok, "a status, got %v", err)
	assert.Equal(t, codes.FailedPrecondition, s.Code())
	assert.Equal(t, msg, s.Message())
}

func TestAPanickingHandlerEndsItsStreamWithInternalAndTheServerGoesOn(t *testing.T) {
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		in := new(wrapperspb.StringValue)
		if err := st.RecvMsg(in); err != nil {
			return err
		}
		if in.Value == "panic" {
			panic("the handler fails")
		}
		return st.SendMsg(in)
	})
	cc := dialGRPC(t, addr)

	cs := openEcho(t, t.Context(), cc)
	require.NoError(t, cs.SendMsg(wrapperspb.String("panic")))
	assert.Equal(t, codes.Internal, status.Code(cs.RecvMsg(new(wrapperspb.StringValue))))

	cs = openEcho(t, t.Context(), cc)
	require.NoError(t, cs.SendMsg(wrapperspb.String("fine")))
	got := new(wrapperspb.StringValue)
	require.NoError(t, cs.RecvMsg(got))
	assert.Equal(t, "fine", got.Value)
}

func TestAClientCancellationEndsTheHandlersRecvMsg(t *testing.T) {
	recvErr := make(chan error, 1)
	started := make(chan struct{})
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		close(started)
		err := st.RecvMsg(new(wrapperspb.BytesValue))
		recvErr <- err
		return err
	})
	ctx, cancel := context.WithCancel(t.Context())
	cs := openEcho(t, ctx, dialGRPC(t, addr))
	receive(t, started, "the handler")

	cancel()
	err := receive(t, recvErr, "RecvMsg to return")
	assert.Equal(t, codes.Canceled, status.Code(err), "the handler's RecvMsg: %v", err)
	assert.Equal(t, codes.Canceled, status.Code(cs.RecvMsg(new(wrapperspb.BytesValue))))
}

func TestAClientDeadlineBoundsTheHandlersContext(t *testing.T) {
	type seen struct {
		deadline time.Time
		ok       bool
		err      error
	}
	got := make(chan seen, 1)
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		d, ok := st.Context().Deadline()
		<-st.Context().Done()
		got <- seen{deadline: d, ok: ok, err: st.Context().Err()}
		return st.Context().Err()
	})
	deadline := time.Now().Add(300 * time.Millisecond)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	cs := openEcho(t, ctx, dialGRPC(t, addr))

	s := receive(t, got, "the handler's context to end")
	require.True(t, s.ok, "the handler's context has a deadline")
	assert.WithinDuration(t, deadline, s.deadline, 250*time.Millisecond)
	// The client resets the stream when its deadline passes, which races
	// the server's own timer: either ends the handler's context.
	assert.Contains(t, []error{context.Canceled, context.DeadlineExceeded}, s.err)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(cs.RecvMsg(new(wrapperspb.BytesValue))))
}

func TestMetadataCrossesBothWays(t *testing.T) {
	incoming := make(chan metadata.MD, 1)
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(st.Context())
		incoming <- md
		if err := st.SetHeader(metadata.Pairs("x-served-by", "legate")); err != nil {
			return err
		}
		st.SetTrailer(metadata.Pairs("x-cost", "7"))
		return st.SendMsg(wrapperspb.String("done"))
	})
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-tenant", "acme", "x-multi", "a", "x-multi", "b")
	cs := openEcho(t, ctx, dialGRPC(t, addr))
	require.NoError(t, cs.CloseSend())

	md := receive(t, incoming, "the handler's metadata")
	assert.Equal(t, []string{"acme"}, md.Get("x-tenant"))
	assert.Equal(t, []string{"a", "b"}, md.Get("x-multi"))
	assert.NotEmpty(t, md.Get("user-agent"))
	assert.Empty(t, md.Get("grpc-timeout"), "grpc- headers are the transport's")

	header, err := cs.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"legate"}, header.Get("x-served-by"))
	require.NoError(t, cs.RecvMsg(new(wrapperspb.StringValue)))
	assert.ErrorIs(t, cs.RecvMsg(new(wrapperspb.StringValue)), io.EOF)
	assert.Equal(t, []string{"7"}, cs.Trailer().Get("x-cost"))
}

func TestBinaryMetadataIsDecodedFromAndEncodedToBase64(t *testing.T) {
	// gRPC's HTTP/2 mapping: the values of keys ending in -bin travel in
	// base64, and the runtime encodes and decodes them.
	value := string([]byte{0, 1, 0xfe, 0xff, '\n'})
	incoming := make(chan metadata.MD, 1)
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(st.Context())
		incoming <- md
		st.SetTrailer(metadata.Pairs("x-reply-bin", value))
		return nil
	})
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-trace-bin", value)
	cs := openEcho(t, ctx, dialGRPC(t, addr))
	require.NoError(t, cs.CloseSend())

	md := receive(t, incoming, "the handler's metadata")
	assert.Equal(t, []string{value}, md.Get("x-trace-bin"))
	assert.ErrorIs(t, cs.RecvMsg(new(wrapperspb.StringValue)), io.EOF)
	assert.Equal(t, []string{value}, cs.Trailer().Get("x-reply-bin"))
}

func TestAnUnknownMethodIsUnimplemented(t *testing.T) {
	_, addr := startServer(t, Config{}, echo)
	cs, err := dialGRPC(t, addr).NewStream(t.Context(), &echoDesc.Streams[0], "/test.Echo/Nope")
	require.NoError(t, err)
	err = cs.RecvMsg(new(wrapperspb.StringValue))
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "/test.Echo/Nope")
}

func TestWriteStatusFromAnotherGoroutineEndsTheStreamOnce(t *testing.T) {
	type writer interface{ WriteStatus(*status.Status) error }
	streams := make(chan writer, 1)
	recvErr := make(chan error, 1)
	_, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		w, ok := grpc.ServerTransportStreamFromContext(st.Context()).(writer)
		if !ok {
			return status.Error(codes.Internal, "no WriteStatus")
		}
		streams <- w
		err := st.RecvMsg(new(wrapperspb.StringValue))
		recvErr <- err
		// Sent nowhere: the stream ended.
		return status.Error(codes.DataLoss, "the handler's own status")
	})
	cs := openEcho(t, t.Context(), dialGRPC(t, addr))
	w := receive(t, streams, "the handler")

	require.NoError(t, w.WriteStatus(status.New(codes.Aborted, "a push ended it")))
	err := receive(t, recvErr, "the handler's RecvMsg")
	assert.Equal(t, codes.Aborted, status.Code(err), "the handler's RecvMsg: %v", err)
	err = cs.RecvMsg(new(wrapperspb.StringValue))
	assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
	assert.Equal(t, "a push ended it", status.Convert(err).Message())
}

func TestStopEndsEveryConnectionAndWaitsForEveryHandler(t *testing.T) {
	const streams = 3
	started, cancelled := make(chan struct{}, streams), make(chan struct{}, streams)
	release := newGate()
	s, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		started <- struct{}{}
		<-st.Context().Done()
		cancelled <- struct{}{}
		release.wait()
		return nil
	})
	t.Cleanup(release.open)
	// Two streams on one connection, one on another.
	first, second := dialGRPC(t, addr), dialGRPC(t, addr)
	clients := []grpc.ClientStream{
		openEcho(t, t.Context(), first), openEcho(t, t.Context(), first), openEcho(t, t.Context(), second),
	}
	for range streams {
		receive(t, started, "a handler") // grpc-go's NewStream does not wait for the server
	}
	// A connection with no stream, past its handshake (Stop waits for a
	// handshake, as grpc-go's does, up to HandshakeTimeout).
	idle := dialRaw(t, addr)
	idle.until("the server's SETTINGS", func(f http2.Frame) bool {
		_, ok := f.(*http2.SettingsFrame)
		return ok
	})

	stopped := make(chan struct{})
	go func() {
		s.Stop()
		close(stopped)
	}()
	for range streams {
		receive(t, cancelled, "a handler's context to end")
	}
	select {
	case <-stopped:
		require.FailNow(t, "Stop returned before its handlers did")
	default:
	}
	release.open()
	receive(t, stopped, "Stop to return")

	for _, cs := range clients {
		err := cs.RecvMsg(new(wrapperspb.StringValue))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	}
	readUntilClosed(t, idle.nc)
}

func TestGracefulStopLetsOpenStreamsEndAndRefusesNewOnes(t *testing.T) {
	release := newGate()
	started := make(chan struct{}, 1)
	s, addr := startServer(t, Config{}, func(st grpc.ServerStream) error {
		started <- struct{}{}
		release.wait()
		return st.SendMsg(wrapperspb.String("last words"))
	})
	t.Cleanup(release.open)
	c := dialRaw(t, addr)
	c.open(1, true)
	receive(t, started, "the handler")

	stopped := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(stopped)
	}()
	ga := c.until("GOAWAY", func(f http2.Frame) bool {
		_, ok := f.(*http2.GoAwayFrame)
		return ok
	}).(*http2.GoAwayFrame)
	assert.Equal(t, http2.ErrCodeNo, ga.ErrCode)
	assert.Equal(t, uint32(1), ga.LastStreamID)
	c.open(3, true)
	refused := c.response(3)
	require.NotNil(t, refused.rst, "stream 3 refused, got frames %v", refused.frames)
	assert.Equal(t, http2.ErrCodeRefusedStream, *refused.rst)

	release.open()
	r := c.response(1)
	assert.Equal(t, "0", r.header("grpc-status"))
	assert.Len(t, r.messages(t), 1)
	receive(t, stopped, "GracefulStop to return")
	readUntilClosed(t, c.nc)
}
