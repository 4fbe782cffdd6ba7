package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

var (
	errServerStopped = errors.New("the server stopped")
	errConnClosed    = errors.New("the connection closed")
)

// connError ends a connection with a GOAWAY carrying code.
type connError struct {
	code   http2.ErrCode
	reason string
}

func (e connError) Error() string { return fmt.Sprintf("%v: %s", e.code, e.reason) }

// conn is one client connection. Its goroutine reads and handles frames;
// handlers and pushers write to it directly, one whole frame sequence at
// a time under wmu.
type conn struct {
	srv  *Server
	cfg  *Config
	raw  net.Conn // the accepted connection: deadlines and Close
	rw   net.Conn // what frames travel on: raw, or TLS over it
	wv   net.Conn // the TCP connection written with writev; nil over TLS
	peer *peer.Peer
	fr   *http2.Framer
	rd   *connReader

	ctx    context.Context
	cancel context.CancelCauseFunc

	// wmu is held while writing to rw; werr is the first write error,
	// after which nothing more is written.
	wmu           sync.Mutex
	werr          error
	writeDeadline time.Time
	// tableSizeUpdate: the next header block starts with an HPACK
	// dynamic table size update to 0.
	tableSizeUpdate bool

	// mu guards the streams and the windows of what the server sends.
	mu           sync.Mutex
	streams      map[uint32]*stream
	lastStreamID uint32
	handlers     uint32 // streams whose handlers have not returned
	sendWindow   int64  // the connection's window for the server's DATA
	streamWindow int64  // the client's SETTINGS_INITIAL_WINDOW_SIZE
	// peerMaxFrame is the largest DATA frame written: the client's
	// SETTINGS_MAX_FRAME_SIZE, but at most maxWriteFrame.
	peerMaxFrame uint32
	windowWake   chan struct{} // closed when a window grows
	waiting      int           // senders waiting on windowWake
	goingAway    bool
	closed       bool

	// Of the read loop alone.
	recvUsed    int64 // connection window the client has used, not yet returned
	pingStrikes int
	lastPing    time.Time

	// dataSent is set by writers of HEADERS or DATA and cleared by the
	// read loop: pings answered by data are not counted against the client.
	dataSent atomic.Bool
	// framesRead counts what arrived, for keepalive.
	framesRead atomic.Uint64

	keepalive *time.Timer
	// Of the keepalive timer's callbacks, which run one after the other.
	kaSeen   uint64
	kaPinged bool

	closeOnce sync.Once
}

func newConn(s *Server, raw, rw net.Conn, auth credentials.AuthInfo) *conn {
	c := &conn{
		srv: s, cfg: &s.cfg, raw: raw, rw: rw,
		streams:      make(map[uint32]*stream),
		sendWindow:   initialWindow,
		streamWindow: initialWindow,
		peerMaxFrame: maxFrameSize,
		windowWake:   make(chan struct{}),
	}
	if rw == raw {
		c.wv = tcpUnder(raw)
	}
	c.peer = &peer.Peer{Addr: raw.RemoteAddr(), LocalAddr: raw.LocalAddr(), AuthInfo: auth}
	c.ctx, c.cancel = context.WithCancelCause(peer.NewContext(context.Background(), c.peer))
	c.rd = newConnReader(rw)
	c.fr = http2.NewFramer(frameWriter{c}, c.rd)
	c.fr.SetMaxReadFrameSize(maxFrameSize)
	c.fr.MaxHeaderListSize = s.cfg.MaxHeaderListSize
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	return c
}

// readPreface reads the client's connection preface and first SETTINGS
// and sends the server's.
func (c *conn) readPreface() error {
	var preface [len(http2.ClientPreface)]byte
	if _, err := io.ReadFull(c.rd, preface[:]); err != nil {
		return err
	}
	if string(preface[:]) != http2.ClientPreface {
		return errors.New("not an HTTP/2 connection preface")
	}
	err := c.writeControl(func() error {
		if err := c.fr.WriteSettings(
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.cfg.MaxConcurrentStreams},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.cfg.ReceiveWindow},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.cfg.MaxHeaderListSize},
		); err != nil {
			return err
		}
		if c.cfg.ReceiveWindow == initialWindow {
			return nil
		}
		return c.fr.WriteWindowUpdate(0, c.cfg.ReceiveWindow-initialWindow)
	})
	if err != nil {
		return err
	}
	f, err := c.fr.ReadFrame()
	if err != nil {
		return err
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return errors.New("the client's first frame is not SETTINGS")
	}
	return c.handleSettings(sf)
}

// serve reads and handles frames until the connection fails or closes.
func (c *conn) serve() {
	var err error
	for err == nil {
		var f http2.Frame
		f, err = c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				err = c.streamFrameError(se)
				continue
			}
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				err = connError{code: http2.ErrCode(ce), reason: "malformed frame"}
			}
			break
		}
		c.framesRead.Add(1)
		err = c.handleFrame(f)
	}
	var ce connError
	if errors.As(err, &ce) {
		c.cfg.Log.V(1).Info("xDS connection ended for a protocol error", "peer", c.peer.Addr.String(), "code", ce.code.String(), "reason", ce.reason)
		c.writeGoAway(ce.code, ce.reason)
	}
	c.close(err)
}

// streamFrameError handles a frame the framer refused for one stream
// alone (a request whose headers are invalid, a WINDOW_UPDATE of 0): an
// open stream is reset, its handler cancelled and its place kept until
// the handler returns; a request refused as it opens counts as opened.
// The connection goes on.
func (c *conn) streamFrameError(se http2.StreamError) error {
	c.mu.Lock()
	st := c.streams[se.StreamID]
	if st == nil && se.StreamID > c.lastStreamID {
		if se.StreamID%2 == 0 {
			c.mu.Unlock()
			return connError{code: http2.ErrCodeProtocol, reason: "a client stream ID must be odd"}
		}
		c.lastStreamID = se.StreamID
	}
	c.mu.Unlock()
	if st != nil {
		st.reset(se.Code)
		return nil
	}
	c.writeRST(se.StreamID, se.Code)
	return nil
}

func (c *conn) handleFrame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.handleHeaders(f)
	case *http2.DataFrame:
		return c.handleData(f)
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		return c.handleSettings(f)
	case *http2.PingFrame:
		return c.handlePing(f)
	case *http2.WindowUpdateFrame:
		return c.handleWindowUpdate(f)
	case *http2.RSTStreamFrame:
		return c.handleRST(f)
	case *http2.GoAwayFrame:
		c.mu.Lock()
		c.goingAway = true
		c.mu.Unlock()
		return nil
	case *http2.PushPromiseFrame:
		return connError{code: http2.ErrCodeProtocol, reason: "a client may not push"}
	default:
		// PRIORITY, unknown extension frames: nothing to do.
		return nil
	}
}

func (c *conn) handleSettings(f *http2.SettingsFrame) error {
	smallerTable := false
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			code := http2.ErrCodeProtocol
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				code = http2.ErrCode(ce)
			}
			return connError{code: code, reason: fmt.Sprintf("invalid %v", s)}
		}
		switch s.ID {
		case http2.SettingInitialWindowSize:
			c.mu.Lock()
			delta := int64(s.Val) - c.streamWindow
			c.streamWindow = int64(s.Val)
			for _, st := range c.streams {
				st.sendWindow += delta
			}
			c.wakeWritersLocked()
			c.mu.Unlock()
		case http2.SettingMaxFrameSize:
			c.mu.Lock()
			c.peerMaxFrame = min(s.Val, maxWriteFrame)
			c.mu.Unlock()
		case http2.SettingHeaderTableSize:
			smallerTable = smallerTable || s.Val < initialHeaderTable
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.writeControl(func() error {
		if smallerTable {
			// A decoder whose table shrank expects the next header block
			// to say so (RFC 7541, 4.2); the server's blocks never index,
			// so saying 0 once is right for ever after.
			c.tableSizeUpdate = true
		}
		return c.fr.WriteSettingsAck()
	})
}

func (c *conn) handlePing(f *http2.PingFrame) error {
	if f.IsAck() {
		return nil
	}
	now := time.Now()
	if c.dataSent.Swap(false) {
		c.pingStrikes = 0
	} else if !c.lastPing.IsZero() && now.Sub(c.lastPing) < c.cfg.MinPingInterval {
		c.pingStrikes++
		if c.pingStrikes > maxPingStrikes {
			return connError{code: http2.ErrCodeEnhanceYourCalm, reason: "too_many_pings"}
		}
	}
	c.lastPing = now
	return c.writeControl(func() error { return c.fr.WritePing(true, f.Data) })
}

func (c *conn) handleWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	if f.StreamID == 0 {
		defer c.mu.Unlock()
		c.sendWindow += int64(f.Increment)
		if c.sendWindow > 1<<31-1 {
			return connError{code: http2.ErrCodeFlowControl, reason: "the connection window overflowed"}
		}
		c.wakeWritersLocked()
		return nil
	}
	if f.StreamID > c.lastStreamID {
		c.mu.Unlock()
		return connError{code: http2.ErrCodeProtocol, reason: "WINDOW_UPDATE on an idle stream"}
	}
	st := c.streams[f.StreamID]
	if st == nil {
		c.mu.Unlock()
		return nil
	}
	st.sendWindow += int64(f.Increment)
	overflow := st.sendWindow > 1<<31-1
	c.wakeWritersLocked()
	c.mu.Unlock()
	if overflow {
		st.reset(http2.ErrCodeFlowControl)
	}
	return nil
}

// wakeWritersLocked wakes every sender waiting for a window (a window
// update with none waiting costs nothing more).
func (c *conn) wakeWritersLocked() {
	if c.waiting == 0 {
		return
	}
	close(c.windowWake)
	c.windowWake = make(chan struct{})
}

func (c *conn) handleRST(f *http2.RSTStreamFrame) error {
	c.mu.Lock()
	if f.StreamID > c.lastStreamID {
		c.mu.Unlock()
		return connError{code: http2.ErrCodeProtocol, reason: "RST_STREAM on an idle stream"}
	}
	st := c.streams[f.StreamID]
	c.mu.Unlock()
	if st != nil {
		st.clientReset()
	}
	return nil
}

// handleData takes a DATA frame: flow control first (the connection's
// window is returned as soon as data arrives, a stream's as its handler
// takes its messages), then the stream's messages.
func (c *conn) handleData(f *http2.DataFrame) error {
	n := int64(f.Length)
	c.recvUsed += n
	if c.recvUsed > int64(c.cfg.ReceiveWindow) {
		return connError{code: http2.ErrCodeFlowControl, reason: "the client sent more than the connection window"}
	}
	if c.recvUsed >= int64(c.cfg.ReceiveWindow/4) {
		inc := uint32(c.recvUsed)
		c.recvUsed = 0
		if err := c.writeControl(func() error { return c.fr.WriteWindowUpdate(0, inc) }); err != nil {
			return err
		}
	}
	c.mu.Lock()
	if f.StreamID > c.lastStreamID {
		c.mu.Unlock()
		return connError{code: http2.ErrCodeProtocol, reason: "DATA on an idle stream"}
	}
	st := c.streams[f.StreamID]
	c.mu.Unlock()
	if st == nil {
		// A stream that ended: its data counted against the connection
		// alone.
		return nil
	}
	st.receive(f.Data(), n, f.StreamEnded())
	return nil
}

// keepaliveTick pings a connection that has been silent for PingAfter, and
// closes it when the ping is not answered within PingTimeout.
func (c *conn) keepaliveTick() {
	seen := c.framesRead.Load()
	switch {
	case seen != c.kaSeen:
		c.kaSeen, c.kaPinged = seen, false
		c.keepalive.Reset(c.cfg.PingAfter)
	case !c.kaPinged:
		c.kaPinged = true
		if c.writeControl(func() error { return c.fr.WritePing(false, [8]byte{'k', 'e', 'e', 'p'}) }) != nil {
			return
		}
		c.keepalive.Reset(c.cfg.PingTimeout)
	default:
		c.close(errors.New("keepalive: the client answered no ping"))
	}
}

// goAway tells the client to open no more streams, and closes the
// connection once its streams have ended.
func (c *conn) goAway() {
	c.mu.Lock()
	c.goingAway = true
	last, idle := c.lastStreamID, c.handlers == 0
	c.mu.Unlock()
	_ = c.writeControl(func() error { return c.fr.WriteGoAway(last, http2.ErrCodeNo, nil) })
	if idle {
		c.close(errServerStopped)
	}
}

func (c *conn) writeGoAway(code http2.ErrCode, reason string) {
	c.mu.Lock()
	last := c.lastStreamID
	c.mu.Unlock()
	_ = c.writeControl(func() error { return c.fr.WriteGoAway(last, code, []byte(reason)) })
}

// close ends the connection and, through its context, every stream.
func (c *conn) close(cause error) {
	c.closeOnce.Do(func() {
		if cause == nil {
			cause = errConnClosed
		}
		c.mu.Lock()
		c.closed = true
		c.wakeWritersLocked()
		c.mu.Unlock()
		c.cancel(cause)
		if c.keepalive != nil {
			c.keepalive.Stop()
		}
		_ = c.raw.Close()
	})
}
