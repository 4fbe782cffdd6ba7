package transport

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/legate-dev/legate/textbound"
)

// handleHeaders opens a stream: a request's headers are checked, the
// concurrency bound applied, and the method's handler started.
func (c *conn) handleHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	c.mu.Lock()
	if st := c.streams[id]; st != nil {
		c.mu.Unlock()
		// Trailers: the client ends its side.
		if !f.StreamEnded() {
			return connError{code: http2.ErrCodeProtocol, reason: "trailers without END_STREAM"}
		}
		st.receive(nil, 0, true)
		return nil
	}
	if id%2 == 0 {
		c.mu.Unlock()
		return connError{code: http2.ErrCodeProtocol, reason: fmt.Sprintf("HEADERS on stream %d: a client's stream IDs are odd", id)}
	}
	if id <= c.lastStreamID {
		c.mu.Unlock()
		if f.StreamEnded() {
			// Trailers of a stream that ended here first: the block was
			// decoded (the HPACK state is kept); nothing else to do.
			return nil
		}
		return connError{code: http2.ErrCodeProtocol, reason: fmt.Sprintf("HEADERS on stream %d, which the client may not open again", id)}
	}
	c.lastStreamID = id
	refuse := c.goingAway || c.closed || c.handlers >= c.cfg.MaxConcurrentStreams
	c.mu.Unlock()
	if refuse {
		// The handlers of reset streams count until they return, so a
		// client that opens and resets streams fast (rapid reset) is held
		// to the bound.
		c.writeRST(id, http2.ErrCodeRefusedStream)
		return nil
	}
	open := !f.StreamEnded() // the client may still send on the stream
	if f.Truncated {
		c.refuse(id, open, 0, codes.ResourceExhausted, fmt.Sprintf("the request's header list is over %d bytes", c.cfg.MaxHeaderListSize))
		return nil
	}
	var path, contentType, encoding, timeout string
	md := metadata.MD{}
	for _, hf := range f.Fields {
		switch hf.Name {
		case ":path":
			path = hf.Value
		case ":method":
			if hf.Value != "POST" {
				c.refuse(id, open, 405, codes.Internal, "gRPC takes POST")
				return nil
			}
		case "content-type":
			contentType = hf.Value
		case "grpc-encoding":
			encoding = hf.Value
		case "grpc-timeout":
			timeout = hf.Value
		default:
			if reservedHeader(hf.Name) {
				continue
			}
			v := hf.Value
			if strings.HasSuffix(hf.Name, "-bin") {
				b, err := decodeBinary(v)
				if err != nil {
					c.refuse(id, open, 0, codes.Internal, "malformed binary metadata "+boundedPath(hf.Name))
					return nil
				}
				v = string(b)
			}
			md[hf.Name] = append(md[hf.Name], v)
		}
	}
	if contentType != "application/grpc" && !strings.HasPrefix(contentType, "application/grpc+") && !strings.HasPrefix(contentType, "application/grpc;") {
		c.refuse(id, open, 415, codes.Unknown, "content-type is not application/grpc")
		return nil
	}
	m, ok := c.srv.methods[path]
	if !ok {
		c.refuse(id, open, 0, codes.Unimplemented, "unknown method "+boundedPath(path))
		return nil
	}
	if encoding != "" && encoding != "identity" {
		c.refuse(id, open, 0, codes.Unimplemented, "compressed requests are not served")
		return nil
	}
	st := &stream{c: c, id: id, method: path, wake: make(chan struct{}, 1)}
	ctx := metadata.NewIncomingContext(c.ctx, md)
	if d, ok := parseTimeout(timeout); ok {
		ctx, st.stopTimer = context.WithTimeout(ctx, d)
	}
	st.ctx, st.cancel = context.WithCancelCause(grpc.NewContextWithServerTransportStream(ctx, transportStream{st}))
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		st.cancel(errConnClosed)
		return nil
	}
	st.sendWindow = c.streamWindow
	c.streams[id] = st
	c.handlers++
	c.mu.Unlock()
	if !open {
		st.receive(nil, 0, true)
	}
	c.srv.wg.Add(1)
	go st.run(m)
	return nil
}

// reservedHeader reports the headers gRPC's transport owns, which are not
// metadata of a call.
func reservedHeader(name string) bool {
	switch name {
	case "content-type", "te", "connection":
		return true
	}
	return strings.HasPrefix(name, ":") || strings.HasPrefix(name, "grpc-")
}

// decodeBinary decodes a "-bin" header's value: base64, padded or not, as
// gRPC's HTTP/2 mapping allows.
func decodeBinary(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// parseTimeout reads a grpc-timeout header: up to eight digits and a unit.
func parseTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// boundedPath is a client's path quoted for a status message, cut (on a
// rune boundary) past 200 bytes.
func boundedPath(p string) string {
	const limit = 200
	if len(p) > limit {
		return strconv.Quote(textbound.Prefix(p, limit)) + "…"
	}
	return strconv.Quote(p)
}
