package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// maxStatusMessage bounds the grpc-message a trailer carries, before
// percent-encoding, so that trailers fit one frame.
const maxStatusMessage = 2048

// coalesceSize is the most a write over TLS gathers before writing.
const coalesceSize = 32 << 10

var coalesceBuffers = sync.Pool{New: func() any { b := make([]byte, 0, coalesceSize); return &b }}

// responseHeaders is the HEADERS block of every response: ":status: 200"
// and the gRPC content type, encoded without the dynamic table so that it
// is the same on every connection.
var responseHeaders = encodeFields(nil, []hpack.HeaderField{
	{Name: ":status", Value: "200"},
	{Name: "content-type", Value: "application/grpc"},
})

// encodeFields appends fields to b in HPACK, as literals never indexed
// (the encoder then keeps no state between blocks).
func encodeFields(b []byte, fields []hpack.HeaderField) []byte {
	buf := bytes.NewBuffer(b)
	enc := hpack.NewEncoder(buf)
	for _, f := range fields {
		f.Sensitive = true
		_ = enc.WriteField(f)
	}
	return buf.Bytes()
}

// mdFields are a handler's metadata as header fields: keys in lower case,
// "-bin" values in unpadded base64 (gRPC's HTTP/2 mapping), and the
// headers the transport owns left out.
func mdFields(md metadata.MD) []hpack.HeaderField {
	var out []hpack.HeaderField
	for k, vs := range md {
		k = strings.ToLower(k)
		if reservedHeader(k) {
			continue
		}
		for _, v := range vs {
			if strings.HasSuffix(k, "-bin") {
				v = base64.RawStdEncoding.EncodeToString([]byte(v))
			}
			out = append(out, hpack.HeaderField{Name: k, Value: v})
		}
	}
	return out
}

// appendFrameHeader appends an HTTP/2 frame header.
func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// frameWriter is where the framer writes control frames: the connection,
// under wmu, which the framer's caller holds.
type frameWriter struct{ c *conn }

func (w frameWriter) Write(p []byte) (int, error) {
	if err := w.c.writeBuffersLocked(net.Buffers{p}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeControl runs write, which writes frames through the framer, under
// wmu.
func (c *conn) writeControl(write func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	return write()
}

func (c *conn) writeRST(id uint32, code http2.ErrCode) {
	_ = c.writeControl(func() error { return c.fr.WriteRSTStream(id, code) })
}

// writeWindowUpdate gives stream id inc bytes of window back, unless the
// stream has ended.
func (c *conn) writeWindowUpdate(id, inc uint32) {
	_ = c.writeControl(func() error {
		c.mu.Lock()
		gone := c.streams[id] == nil
		c.mu.Unlock()
		if gone {
			return nil
		}
		return c.fr.WriteWindowUpdate(id, inc)
	})
}

// writeBuffersLocked writes bufs under wmu within WriteTimeout: with
// writev on a TCP connection, gathered into few writes over TLS. A write
// that fails closes the connection: a frame may be cut short.
func (c *conn) writeBuffersLocked(bufs net.Buffers) error {
	if c.werr != nil {
		return c.werr
	}
	var err error
	// The deadline moves only once half of it has passed: a write waits
	// between half and all of WriteTimeout, and the timer is not reset on
	// every write of a push to thousands of connections.
	if now := time.Now(); c.writeDeadline.Sub(now) < c.cfg.WriteTimeout/2 {
		c.writeDeadline = now.Add(c.cfg.WriteTimeout)
		err = c.raw.SetWriteDeadline(c.writeDeadline)
	}
	if err == nil {
		if c.wv != nil {
			_, err = bufs.WriteTo(c.wv)
		} else {
			err = c.coalesce(bufs)
		}
	}
	if err != nil {
		c.werr = err
		c.close(err)
	}
	return err
}

func (c *conn) coalesce(bufs net.Buffers) error {
	if len(bufs) == 1 {
		_, err := c.rw.Write(bufs[0])
		return err
	}
	bp := coalesceBuffers.Get().(*[]byte)
	defer coalesceBuffers.Put(bp)
	out := (*bp)[:0]
	for _, b := range bufs {
		for len(b) > 0 {
			n := min(len(b), coalesceSize-len(out))
			out = append(out, b[:n]...)
			b = b[n:]
			if len(out) == coalesceSize {
				if _, err := c.rw.Write(out); err != nil {
					return err
				}
				out = out[:0]
			}
		}
	}
	if len(out) > 0 {
		_, err := c.rw.Write(out)
		return err
	}
	return nil
}

// reserve waits until the stream and the connection have window for some
// of want bytes and takes up to want of it; it returns how much, and the
// largest frame the client reads.
func (c *conn) reserve(st *stream, want int) (int, int, error) {
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return 0, 0, status.Error(codes.Unavailable, "the connection closed")
		}
		if st.ctx.Err() != nil {
			c.mu.Unlock()
			return 0, 0, ctxStatus(st.ctx)
		}
		if avail := min(st.sendWindow, c.sendWindow); avail > 0 {
			n := int(min(avail, int64(want)))
			st.sendWindow -= int64(n)
			c.sendWindow -= int64(n)
			maxFrame := int(c.peerMaxFrame)
			c.mu.Unlock()
			return n, maxFrame, nil
		}
		wake := c.windowWake
		c.waiting++
		c.mu.Unlock()
		select {
		case <-wake:
		case <-st.ctx.Done():
		}
		c.mu.Lock()
		c.waiting--
	}
}

// unreserve gives back window taken for data that was not sent.
func (c *conn) unreserve(st *stream, n int) {
	c.mu.Lock()
	st.sendWindow += int64(n)
	c.sendWindow += int64(n)
	c.wakeWritersLocked()
	c.mu.Unlock()
}

// writeMessage writes one gRPC message of parts: the response headers
// first if they are due, then DATA frames as the windows allow, each
// window's worth in one write.
func (c *conn) writeMessage(st *stream, parts [][]byte) error {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if size > 1<<31-1 {
		return status.Errorf(codes.ResourceExhausted, "a response of %d bytes is too large", size)
	}
	var prefix [5]byte
	binary.BigEndian.PutUint32(prefix[1:], uint32(size))
	var segsArr [8][]byte
	segs := append(append(segsArr[:0], prefix[:]), parts...)
	total, sent := 5+size, 0
	for sent < total {
		n, maxFrame, err := c.reserve(st, total-sent)
		if err != nil {
			return err
		}
		c.wmu.Lock()
		if st.ended || c.werr != nil {
			c.wmu.Unlock()
			c.unreserve(st, n)
			if c.werr != nil {
				return status.Error(codes.Unavailable, "the connection closed")
			}
			return ctxStatus(st.ctx)
		}
		frames := (n + maxFrame - 1) / maxFrame
		ws := writeScratches.Get().(*writeScratch)
		// A capacity hint: a stream's own headers may grow hdrs, and the
		// slices of it already in bufs keep pointing at what they hold.
		hdrs := slices.Grow(ws.hdrs[:0], 9*(frames+1)+len(responseHeaders)+1)
		bufs := slices.Grow(ws.bufs[:0], 2*frames+len(segs)+1)
		if !st.headersSent {
			hdrs = st.appendHeadersFrame(hdrs)
			bufs = append(bufs, hdrs)
		}
		for left := n; left > 0; {
			chunk := min(left, maxFrame)
			start := len(hdrs)
			hdrs = appendFrameHeader(hdrs, chunk, http2.FrameData, 0, st.id)
			bufs = append(bufs, hdrs[start:])
			left -= chunk
			for chunk > 0 {
				take := min(chunk, len(segs[0]))
				bufs = append(bufs, segs[0][:take])
				segs[0] = segs[0][take:]
				if len(segs[0]) == 0 {
					segs = segs[1:]
				}
				chunk -= take
			}
		}
		err = c.writeBuffersLocked(bufs)
		c.dataSent.Store(true)
		c.wmu.Unlock()
		ws.put(hdrs, bufs)
		if err != nil {
			return status.Error(codes.Unavailable, "the connection closed")
		}
		sent += n
	}
	return nil
}

// writeScratch is what one write of a message builds: its frame headers
// and the buffers writev takes. Pooled: a push to 10 000 proxies would
// otherwise leave 10 000 of each (about 0.7 KiB at 1 000 clusters) to the
// collector, and the heap of a push grows with them.
type writeScratch struct {
	hdrs []byte
	bufs net.Buffers
}

var writeScratches = sync.Pool{New: func() any { return new(writeScratch) }}

// put gives the scratch back once its write is done, its buffers cleared
// (they point into responses the pool must not keep alive); a large one
// (a message of megabytes) is left to the collector.
func (ws *writeScratch) put(hdrs []byte, bufs net.Buffers) {
	clear(bufs)
	if cap(hdrs) > 64<<10 || cap(bufs) > 4096 {
		return
	}
	ws.hdrs, ws.bufs = hdrs[:0], bufs[:0]
	writeScratches.Put(ws)
}

// appendHeadersFrame appends the response HEADERS frame (and marks the
// headers sent); under wmu.
func (st *stream) appendHeadersFrame(b []byte) []byte {
	block := st.c.headerBlock(responseHeaders)
	if len(st.header) > 0 {
		block = encodeFields(append([]byte(nil), block...), mdFields(st.header))
	}
	b = appendFrameHeader(b, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders, st.id)
	st.headersSent = true
	return append(b, block...)
}

// writeHeaders sends the response headers now, if they were not.
func (c *conn) writeHeaders(st *stream) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if st.headersSent || st.ended {
		return nil
	}
	err := c.writeBuffersLocked(net.Buffers{st.appendHeadersFrame(nil)})
	c.dataSent.Store(true)
	return err
}

// writeStatus ends the stream with s in trailers (with the response
// headers when none were sent: a trailers-only response), then resets it
// when the client has not ended its side. Nothing is written once the
// stream ended.
func (st *stream) writeStatus(s *status.Status) {
	c := st.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if st.ended || c.werr != nil {
		st.ended = true
		return
	}
	st.ended = true
	var fields []hpack.HeaderField
	if !st.headersSent {
		fields = append(fields, hpack.HeaderField{Name: ":status", Value: "200"}, hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
		fields = append(fields, mdFields(st.header)...)
	}
	fields = append(fields, hpack.HeaderField{Name: "grpc-status", Value: strconv.Itoa(int(s.Code()))})
	if msg := s.Message(); msg != "" {
		if len(msg) > maxStatusMessage {
			msg = msg[:maxStatusMessage]
		}
		fields = append(fields, hpack.HeaderField{Name: "grpc-message", Value: encodeGRPCMessage(msg)})
	}
	block := encodeFields(nil, append(fields, mdFields(st.trailer)...))
	if len(block) > maxFrameSize-1 {
		// Metadata set by a handler too large for one frame: the status
		// alone.
		block = encodeFields(nil, fields)
	}
	st.rmu.Lock()
	open := !st.remoteDone
	st.rmu.Unlock()
	st.headersSent = true
	_ = c.writeBuffersLocked(net.Buffers{c.appendStreamEnd(nil, st.id, block, open)})
	c.dataSent.Store(true)
}

// refuse answers a request it will not serve with a trailers-only
// response: httpStatus (200 when 0), the gRPC status and message; then
// RST_STREAM when the client may still be sending.
func (c *conn) refuse(id uint32, open bool, httpStatus int, code codes.Code, msg string) {
	if httpStatus == 0 {
		httpStatus = 200
	}
	block := encodeFields(nil, []hpack.HeaderField{
		{Name: ":status", Value: strconv.Itoa(httpStatus)},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "grpc-status", Value: strconv.Itoa(int(code))},
		{Name: "grpc-message", Value: encodeGRPCMessage(msg)},
	})
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.writeBuffersLocked(net.Buffers{c.appendStreamEnd(nil, id, block, open)})
}

// appendStreamEnd appends the last frames the server writes on stream id:
// a HEADERS frame of block that ends it and, when the client may still be
// sending (open), RST_STREAM with NO_ERROR, which tells it to stop (gRPC's
// HTTP/2 mapping); under wmu.
func (c *conn) appendStreamEnd(b []byte, id uint32, block []byte, open bool) []byte {
	block = c.headerBlock(block)
	b = appendFrameHeader(b, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, id)
	b = append(b, block...)
	if open {
		b = appendFrameHeader(b, 4, http2.FrameRSTStream, 0, id)
		b = binary.BigEndian.AppendUint32(b, uint32(http2.ErrCodeNo))
	}
	return b
}

// headerBlock is block as the next header block of the connection: with
// the dynamic table size update a shrunk client table asks for first;
// under wmu.
func (c *conn) headerBlock(block []byte) []byte {
	if !c.tableSizeUpdate {
		return block
	}
	c.tableSizeUpdate = false
	return append([]byte{0x20}, block...) // dynamic table size update: 0
}

// encodeGRPCMessage percent-encodes a status message as gRPC's HTTP/2
// mapping asks: bytes outside printable ASCII, and '%'.
func encodeGRPCMessage(msg string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(msg); i++ {
		ch := msg[i]
		if ch >= 0x20 && ch <= 0x7e && ch != '%' {
			if b != nil {
				b = append(b, ch)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(msg)+16), msg[:i]...)
		}
		b = append(b, '%', hex[ch>>4], hex[ch&15])
	}
	if b == nil {
		return msg
	}
	return string(b)
}

// tcpUnder is the TCP connection under c, written with writev; nil when
// there is none.
func tcpUnder(c net.Conn) net.Conn {
	for range 4 {
		switch v := c.(type) {
		case *net.TCPConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}
