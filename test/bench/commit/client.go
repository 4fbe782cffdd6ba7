package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/legate-dev/legate/test/xdsclient"
)

// startBackend serves the gRPC health service on loopback: the endpoint
// the configuration routes to. It returns the port and a stop function.
func startBackend() (int, func(), error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(lis) }()
	return lis.Addr().(*net.TCPAddr).Port, gs.Stop, nil
}

// dialXDS connects grpc-go's xDS client (xds:///bench-greeter, node
// benchNode) to the ADS server at addr and waits until an RPC routed by
// the served configuration succeeds.
func dialXDS(addr string) (*grpc.ClientConn, error) {
	res, err := xdsclient.Bootstrap{ServerAddr: addr, NodeID: benchNode}.Resolver()
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient("xds:///"+benchListener, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(res))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		_ = cc.Close()
		return nil, fmt.Errorf("first RPC through xds:///%s: %w", benchListener, err)
	}
	return cc, nil
}
