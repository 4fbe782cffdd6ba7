// Command greeter is the runnable side of examples/grpc: a backend and a
// proxyless grpc-go client that finds it through legate.
//
//	go run ./examples/grpc/greeter serve                 # the backend, on 127.0.0.1:8081
//	legate bootstrap grpc --node grpc-client -o grpc-bootstrap.json
//	GRPC_XDS_BOOTSTRAP=grpc-bootstrap.json go run ./examples/grpc/greeter call
//
// The backend serves gRPC's standard health service, so no code is
// generated. The client dials xds:///greeter: grpc-go asks legate (as node
// grpc-client, per the bootstrap file) for the listener "greeter", follows
// its route to the cluster and its endpoints, and calls the backend it was
// given, printing which address answered.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	_ "google.golang.org/grpc/xds" // registers the xds:/// resolver
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "greeter:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: greeter serve [-addr 127.0.0.1:8081] | greeter call [-target xds:///greeter] [-n 3 | -every 2s]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "serve":
		addr := fs.String("addr", "127.0.0.1:8081", "address to serve on (examples/grpc/greeter.yaml names 127.0.0.1:8081)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return serve(*addr, out)
	case "call":
		target := fs.String("target", "xds:///greeter", "gRPC target; xds:/// asks legate")
		n := fs.Int("n", 3, "number of calls")
		timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for legate and the backend")
		every := fs.Duration("every", 0, "keep calling at this interval until interrupted (-n is then ignored), printing failures instead of stopping: commit to the repository and watch the calls follow")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *every > 0 {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return callEvery(ctx, *target, *every, *timeout, out)
		}
		return call(*target, *n, *timeout, out)
	}
	return fmt.Errorf("unknown command %q: serve or call", args[0])
}

func serve(addr string, out io.Writer) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer()) // answers SERVING
	fmt.Fprintf(out, "greeter backend serving on %s\n", lis.Addr())
	return s.Serve(lis)
}

func call(target string, n int, timeout time.Duration, out io.Writer) error {
	if os.Getenv("GRPC_XDS_BOOTSTRAP") == "" && os.Getenv("GRPC_XDS_BOOTSTRAP_CONFIG") == "" {
		return errors.New("GRPC_XDS_BOOTSTRAP is not set: write one with `legate bootstrap grpc --node grpc-client -o grpc-bootstrap.json` and export GRPC_XDS_BOOTSTRAP=grpc-bootstrap.json")
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i := range n {
		var p peer.Peer
		// WaitForReady: the first call waits for legate's configuration
		// instead of failing while it arrives.
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true), grpc.Peer(&p))
		if err != nil {
			return fmt.Errorf("call %d through %s: %w", i+1, target, err)
		}
		fmt.Fprintf(out, "call %d: %s answered %s\n", i+1, p.Addr, resp.GetStatus())
	}
	return nil
}

// callEvery calls at every interval until ctx ends. A failed call is
// printed and the next one tried: the point is to watch the calls follow
// legate's revisions (a rejected commit changes nothing, a rollback
// restores the last good route).
func callEvery(ctx context.Context, target string, every, timeout time.Duration, out io.Writer) error {
	if os.Getenv("GRPC_XDS_BOOTSTRAP") == "" && os.Getenv("GRPC_XDS_BOOTSTRAP_CONFIG") == "" {
		return errors.New("GRPC_XDS_BOOTSTRAP is not set: write one with `legate bootstrap grpc --node grpc-client -o grpc-bootstrap.json` and export GRPC_XDS_BOOTSTRAP=grpc-bootstrap.json")
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 1; ; i++ {
		callCtx, cancel := context.WithTimeout(ctx, timeout)
		var p peer.Peer
		resp, err := client.Check(callCtx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true), grpc.Peer(&p))
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			fmt.Fprintf(out, "%s call %d through %s failed: %v\n", time.Now().Format(time.TimeOnly), i, target, err)
		default:
			fmt.Fprintf(out, "%s call %d: %s answered %s\n", time.Now().Format(time.TimeOnly), i, p.Addr, resp.GetStatus())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
