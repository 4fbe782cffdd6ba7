package xds

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/legate-dev/legate/textbound"
)

// MaxNACKText bounds the error text of a NACK that the server keeps and
// reports: a proxy's message reaches the proxy status, the revision's taint
// record, the log and commit statuses, and a client may send megabytes.
const MaxNACKText = 4096

// maxPodName bounds the pod name a proxy reports in its node metadata.
const maxPodName = 253

// nackTrimMarker ends a NACK text that was cut to MaxNACKText.
const nackTrimMarker = " … [trimmed]"

// boundText returns s cut to at most limit bytes on a rune boundary, with
// marker appended when it was cut (the marker is not counted in limit).
func boundText(s string, limit int, marker string) string {
	if len(s) <= limit {
		return s
	}
	return textbound.Prefix(s, limit) + marker
}

// Limits of one client connection. A proxy opens one ADS stream, or a few
// (one per management server in grpc-go); a discovery request is small.
const (
	maxStreamsPerConn = 16
	maxRequestBytes   = 4 << 20
	// keepalive pings more often than this close the connection.
	minPingInterval = 10 * time.Second
	// the server pings an idle connection after pingAfter and closes it
	// when no answer arrives within pingTimeout.
	pingAfter   = 2 * time.Minute
	pingTimeout = 20 * time.Second
)

// Limits of what one stream keeps of its client's requests: each request
// is bounded (maxRequestBytes), but a stream adds up what many requests
// ask for. A proxy subscribes to the dozen xDS types legate serves; a delta
// stream's names are each client's own choice and stay until unsubscribed.
const (
	maxTypesPerStream = 32
	maxNameBytes      = 16 << 20
)

// receiveWindow is the HTTP/2 stream and connection window for what
// proxies send (discovery requests of a few KiB at most). A fixed window
// turns off grpc-go's bandwidth estimation, which answers data (every ACK
// of every proxy) with a ping and grows the window to 16 MiB.
//
// The write buffer stays at grpc-go's 32 KiB: it is taken from a pool
// shared by every connection and returned after each flush, so it costs
// nothing per idle proxy (TestOpenStreamHeapCost), but during a push every
// connection still writing holds one, so a larger one would raise the
// peak of a push to 10 000 proxies.
const receiveWindow = 1 << 20

// readBuffer is the size of what grpc-go reads from a proxy at once.
// Over plain TCP it reads into a buffer from a pool for that read alone,
// but over TLS it keeps one of this size for each connection's life:
// grpc-go's 32 KiB made 10 000 mutual-TLS proxies hold 320 MiB of read
// buffers for requests of a few KiB (TestOpenTLSStreamHeapCost: 121 KiB a
// stream with 32 KiB, 97 KiB with 8 KiB, server and client together). A
// larger request is read in more calls, not refused.
const readBuffer = 8 << 10

// TransportOptions are the HTTP/2 settings NewGRPCServer uses, exported so
// that a benchmark can give another xDS server the same transport.
func TransportOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(receiveWindow),
		grpc.InitialConnWindowSize(receiveWindow),
		grpc.ReadBufferSize(readBuffer),
	}
}

// handshakeTimeout bounds a new connection's TLS and HTTP/2 handshake
// (grpc-go's ConnectionTimeout, 120 s by default): until it is done the
// connection holds one of the listener's places (MaxConnections) and a
// goroutine, and a client that opens connections and says nothing would
// hold them two minutes each. A proxy's handshake takes milliseconds. A
// var for tests.
var handshakeTimeout = 10 * time.Second

// serverLimits bounds what one client connection may hold: streams per
// connection, request size and keepalive ping rate, and drops connections
// whose peer stopped answering pings. The transport settings come with it.
func serverLimits() []grpc.ServerOption {
	return append(TransportOptions(),
		grpc.MaxConcurrentStreams(maxStreamsPerConn),
		grpc.MaxRecvMsgSize(maxRequestBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: pingAfter, Timeout: pingTimeout}),
		grpc.ConnectionTimeout(handshakeTimeout),
	)
}
