package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing/fstest"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	// Registered so that go-control-plane can follow the listener's
	// HttpConnectionManager to its route configuration.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/legate-dev/legate/render"
)

// gcpServer is the baseline: a bare go-control-plane SnapshotCache ADS
// server fed legate's rendered resources directly, with per-type versions
// (an unchanged type keeps its version, as in legate).
type gcpServer struct {
	cache cachev3.SnapshotCache
	gs    *grpc.Server
	addr  string
	acks  chan gcpACK
}

type gcpACK struct {
	version string
	at      time.Time
}

func startGCP() (*gcpServer, error) {
	s := &gcpServer{cache: cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil), acks: make(chan gcpACK, 64)}
	cb := serverv3.CallbackFuncs{StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
		if req.GetTypeUrl() == resourcev3.RouteType && req.GetResponseNonce() != "" && req.GetErrorDetail() == nil {
			select {
			case s.acks <- gcpACK{version: req.GetVersionInfo(), at: time.Now()}:
			default:
			}
		}
		return nil
	}}
	srv := serverv3.NewServer(context.Background(), s.cache, cb)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = lis.Addr().String()
	s.gs = grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s.gs, srv)
	go func() { _ = s.gs.Serve(lis) }()
	return s, nil
}

func (s *gcpServer) stop() { s.gs.Stop() }

// gcpSnapshot renders files with legate's renderer (not timed) and turns
// the bench node's resources into a go-control-plane snapshot whose
// per-type versions are the content hashes.
func gcpSnapshot(files map[string]string) (*cachev3.Snapshot, string, error) {
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	res := render.Render(fsys, render.Options{})
	if !res.OK() {
		return nil, "", fmt.Errorf("render: %v", res.Diagnostics)
	}
	cfg := res.Nodes[benchNode]
	if cfg == nil {
		return nil, "", errors.New("render: no resources for node " + benchNode)
	}
	snap := &cachev3.Snapshot{}
	var routesVersion string
	for url, set := range cfg.Types {
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
		if err != nil {
			return nil, "", fmt.Errorf("type %s: %w", url, err)
		}
		items := make([]cachetypes.Resource, 0, len(set.Resources))
		for _, r := range set.Resources {
			m := mt.New().Interface()
			if err := proto.Unmarshal(r.Body, m); err != nil {
				return nil, "", fmt.Errorf("decode %s %s: %w", url, r.Name, err)
			}
			items = append(items, m)
		}
		version := set.Hash[:12]
		snap.Resources[cachev3.GetResponseType(url)] = cachev3.NewResources(version, items)
		if url == resourcev3.RouteType {
			routesVersion = version
		}
	}
	// Not snap.Consistent(): go-control-plane does not follow an
	// api_listener to its route configuration and would call it missing.
	return snap, routesVersion, nil
}

// publishToACK sets snap and returns the time until the client ACKed the
// route configuration of version routesVersion.
func (s *gcpServer) publishToACK(snap *cachev3.Snapshot, routesVersion string, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	if err := s.cache.SetSnapshot(context.Background(), benchNode, snap); err != nil {
		return 0, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case a := <-s.acks:
			if a.version == routesVersion {
				return a.at.Sub(t0), nil
			}
		case <-deadline:
			return 0, fmt.Errorf("route configuration %s not ACKed within %v", routesVersion, timeout)
		}
	}
}
