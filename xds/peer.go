package xds

import (
	"context"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/peer"
)

// maxUserAgent bounds the user agent kept per stream.
const maxUserAgent = 128

// peerInfo is what the status shows of who is at the other end of a
// stream.
type peerInfo struct {
	identity, address, userAgent string
}

func describePeer(ctx context.Context, identity string, node *corev3.Node) peerInfo {
	pi := peerInfo{identity: identity}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		pi.address = p.Addr.String()
	}
	version := node.GetUserAgentVersion()
	if bv := node.GetUserAgentBuildVersion().GetVersion(); version == "" && bv != nil {
		version = fmt.Sprintf("%d.%d.%d", bv.GetMajorNumber(), bv.GetMinorNumber(), bv.GetPatch())
	}
	pi.userAgent = boundText(strings.TrimSpace(node.GetUserAgentName()+" "+version), maxUserAgent, "…")
	return pi
}
