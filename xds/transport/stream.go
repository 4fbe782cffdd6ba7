package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// WireParts is a message already in protobuf wire format, made of parts
// written back to back without copying; SendMsg writes any other message
// as protobuf.
type WireParts interface {
	WireParts() [][]byte
}

// stream is one gRPC call. It is the handler's grpc.ServerStream and, in
// its context, the grpc.ServerTransportStream whose WriteStatus ends it
// from another goroutine.
type stream struct {
	c      *conn
	id     uint32
	method string
	ctx    context.Context
	cancel context.CancelCauseFunc
	// stopTimer releases the grpc-timeout's timer; nil without one.
	stopTimer context.CancelFunc

	// What the client sent: filled by the read loop, taken by RecvMsg.
	rmu     sync.Mutex
	partial []byte   // the start of a message not yet complete
	queue   [][]byte // complete messages, without their prefix
	held    int64    // bytes of the queued messages, prefixes included
	// received and returned count the stream's window: what the client
	// sent, and what was given back to it.
	received, returned int64
	remoteDone         bool  // the client ended its side
	recvErr            error // ends RecvMsg once the queue is empty
	wake               chan struct{}

	// Of the connection's mu: the window for what the server sends.
	sendWindow int64

	// Of the connection's wmu.
	headersSent bool
	ended       bool // trailers or RST_STREAM sent: nothing more is written
	header      metadata.MD
	trailer     metadata.MD
}

// run is the stream's goroutine: the method's handler, then its status.
func (st *stream) run(m method) {
	defer st.c.srv.wg.Done()
	err := st.handle(m)
	st.finish(err)
	st.cancel(context.Canceled)
	if st.stopTimer != nil {
		st.stopTimer()
	}
	c := st.c
	c.mu.Lock()
	delete(c.streams, st.id)
	c.handlers--
	closeIdle := c.goingAway && c.handlers == 0
	c.mu.Unlock()
	if closeIdle {
		c.close(errServerStopped)
	}
}

func (st *stream) handle(m method) (err error) {
	defer func() {
		if r := recover(); r != nil {
			st.c.cfg.Log.Error(fmt.Errorf("%v", r), "a stream handler panicked", "method", st.method)
			err = status.Error(codes.Internal, "the server failed to handle the stream")
		}
	}()
	return m.handler(m.impl, st)
}

// receive adds what a DATA frame carried (n bytes of window, padding
// included) to the stream's messages; end is the client's END_STREAM.
func (st *stream) receive(data []byte, n int64, end bool) {
	st.rmu.Lock()
	if st.remoteDone {
		st.rmu.Unlock()
		if n > 0 {
			st.reset(http2.ErrCodeStreamClosed)
		}
		return
	}
	st.received += n
	if st.received-st.returned > int64(st.c.cfg.ReceiveWindow) {
		st.rmu.Unlock()
		st.reset(http2.ErrCodeFlowControl)
		return
	}
	var failed error
	if st.recvErr == nil {
		st.partial = append(st.partial, data...)
		failed = st.splitLocked()
	}
	if end {
		st.remoteDone = true
		if len(st.partial) > 0 && failed == nil {
			failed = status.Error(codes.Internal, "the client ended the stream inside a message")
		}
	}
	if failed != nil {
		st.recvErr, st.partial = failed, nil
	}
	credit := st.creditLocked()
	st.rmu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
	if failed != nil {
		// The handler sees the error once it has taken what came before;
		// the client is told at once.
		st.writeStatus(status.Convert(failed))
		st.cancel(failed)
		return
	}
	if credit > 0 {
		st.c.writeWindowUpdate(st.id, credit)
	}
}

// splitLocked moves the complete messages at the start of partial to the
// queue.
func (st *stream) splitLocked() error {
	for len(st.partial) >= 5 {
		if st.partial[0] != 0 {
			return status.Error(codes.Unimplemented, "compressed requests are not served")
		}
		size := binary.BigEndian.Uint32(st.partial[1:5])
		if int64(size) > int64(st.c.cfg.MaxRecvMsgSize) {
			return status.Errorf(codes.ResourceExhausted, "a request of %d bytes is over the limit of %d", size, st.c.cfg.MaxRecvMsgSize)
		}
		end := 5 + int(size)
		if len(st.partial) < end {
			break
		}
		st.queue = append(st.queue, st.partial[5:end:end])
		st.held += int64(end)
		if len(st.partial) == end {
			st.partial = nil
			return nil
		}
		st.partial = st.partial[end:]
	}
	if len(st.partial) > 0 && cap(st.partial) > 2*len(st.partial)+4096 {
		// What is left starts a message: copied once, so that it does not
		// keep alive the buffer of the messages queued before it.
		st.partial = append([]byte(nil), st.partial...)
	}
	return nil
}

// creditLocked is how much of the stream's window to give back now: what
// the client sent that is not held in complete messages, once it is a
// quarter of the window (so a message larger than the window still
// arrives, and unread messages hold the client back).
func (st *stream) creditLocked() uint32 {
	due := st.received - st.held - st.returned
	if due < int64(st.c.cfg.ReceiveWindow/4) {
		return 0
	}
	st.returned += due
	return uint32(due)
}

// Context is the stream's context: the peer, incoming metadata, and a
// cancellation when the client resets the stream, the connection ends or
// the handler returns.
func (st *stream) Context() context.Context { return st.ctx }

// Method is the stream's full method name (grpc.ServerTransportStream).
func (st *stream) Method() string { return st.method }

// RecvMsg waits for the client's next message and decodes it into m.
func (st *stream) RecvMsg(m any) error {
	for {
		st.rmu.Lock()
		if len(st.queue) > 0 {
			msg := st.queue[0]
			st.queue[0] = nil
			st.queue = st.queue[1:]
			if len(st.queue) == 0 {
				st.queue = nil
			}
			st.held -= int64(5 + len(msg))
			credit := st.creditLocked()
			st.rmu.Unlock()
			if credit > 0 {
				st.c.writeWindowUpdate(st.id, credit)
			}
			pm, ok := m.(proto.Message)
			if !ok {
				return status.Errorf(codes.Internal, "cannot decode into %T", m)
			}
			if err := proto.Unmarshal(msg, pm); err != nil {
				return status.Errorf(codes.Internal, "the request does not decode: %v", err)
			}
			return nil
		}
		recvErr, done := st.recvErr, st.remoteDone
		st.rmu.Unlock()
		switch {
		case recvErr != nil:
			return recvErr
		case done:
			return io.EOF
		}
		select {
		case <-st.wake:
		case <-st.ctx.Done():
			return ctxStatus(st.ctx)
		}
	}
}

// SendMsg writes m as one message.
func (st *stream) SendMsg(m any) error {
	var parts [][]byte
	switch m := m.(type) {
	case WireParts:
		parts = m.WireParts()
	case proto.Message:
		b, err := proto.Marshal(m)
		if err != nil {
			return status.Errorf(codes.Internal, "the response does not encode: %v", err)
		}
		parts = [][]byte{b}
	default:
		return status.Errorf(codes.Internal, "cannot encode %T", m)
	}
	return st.c.writeMessage(st, parts)
}

// SetHeader adds md to the response headers, until they are sent.
func (st *stream) SetHeader(md metadata.MD) error {
	st.c.wmu.Lock()
	defer st.c.wmu.Unlock()
	if st.headersSent || st.ended {
		return status.Error(codes.Internal, "the response headers were sent already")
	}
	st.header = metadata.Join(st.header, md)
	return nil
}

// SendHeader sends the response headers, with md added.
func (st *stream) SendHeader(md metadata.MD) error {
	if err := st.SetHeader(md); err != nil {
		return err
	}
	return st.c.writeHeaders(st)
}

// SetTrailer adds md to the trailers sent when the stream ends.
func (st *stream) SetTrailer(md metadata.MD) {
	st.c.wmu.Lock()
	st.trailer = metadata.Join(st.trailer, md)
	st.c.wmu.Unlock()
}

// WriteStatus ends the stream with s from any goroutine: the trailers are
// sent, the stream's context cancelled, so that a RecvMsg or a SendMsg
// waiting for window returns, and what the handler returns later is not
// sent again. (grpc-go's transport stream has the same method, which
// legate's ADS server calls to end a stream from a push worker.)
func (st *stream) WriteStatus(s *status.Status) error {
	// Written before the context ends: a handler that returns as soon as
	// it sees the end would otherwise send its own status first.
	st.writeStatus(s)
	st.cancel(s.Err())
	return nil
}

// finish sends the handler's status unless the stream ended before.
func (st *stream) finish(err error) {
	s, ok := status.FromError(err)
	if !ok {
		s = status.FromContextError(err)
	}
	st.writeStatus(s)
}

// clientReset handles the client's RST_STREAM: nothing more is written.
func (st *stream) clientReset() {
	st.c.wmu.Lock()
	st.ended = true
	st.c.wmu.Unlock()
	st.cancel(status.Error(codes.Canceled, "the client cancelled the stream"))
}

// reset ends the stream with RST_STREAM code, then its context, so that
// a handler woken by the end writes nothing after the reset.
func (st *stream) reset(code http2.ErrCode) {
	c := st.c
	c.wmu.Lock()
	if !st.ended && c.werr == nil {
		_ = c.fr.WriteRSTStream(st.id, code)
	}
	st.ended = true
	c.wmu.Unlock()
	st.cancel(status.Errorf(codes.Internal, "stream reset: %v", code))
}

// ctxStatus is the status of a stream whose context ended: the status
// that ended it, or the context's own.
func ctxStatus(ctx context.Context) error {
	cause := context.Cause(ctx)
	if s, ok := status.FromError(cause); ok {
		return s.Err()
	}
	if errors.Is(cause, context.DeadlineExceeded) || errors.Is(cause, context.Canceled) {
		return status.FromContextError(cause).Err()
	}
	return status.Error(codes.Unavailable, cause.Error())
}

// transportStream is the stream as its context's
// grpc.ServerTransportStream, whose SetTrailer returns an error.
type transportStream struct{ *stream }

func (t transportStream) SetTrailer(md metadata.MD) error {
	t.stream.SetTrailer(md)
	return nil
}

var (
	_ grpc.ServerStream          = (*stream)(nil)
	_ grpc.ServerTransportStream = transportStream{}
)
