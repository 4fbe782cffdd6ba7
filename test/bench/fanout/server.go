package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/legate-dev/legate/test/internal/stats"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/xds"
)

const benchNode = "bench"

// acks counts, per version, the streams that have ACKed it, and when each
// ACK arrived after the publish began.
type acks struct {
	mu      sync.Mutex
	want    string
	n       int
	target  int
	reached chan struct{}
	t0      time.Time
	lat     []float64 // ms after t0, in arrival order
}

func (a *acks) expect(version string, target int) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.want, a.n, a.target, a.reached = version, 0, target, make(chan struct{})
	a.t0, a.lat = time.Now(), make([]float64, 0, target)
	return a.reached
}

func (a *acks) ack(version string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if version != a.want || a.reached == nil || a.n >= a.target {
		return
	}
	a.n++
	a.lat = append(a.lat, float64(time.Since(a.t0).Microseconds())/1000)
	if a.n == a.target {
		close(a.reached)
	}
}

// latencies returns the ACK times of the last expected version.
func (a *acks) latencies() []float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.lat)
}

// publisher publishes generation gen of the cluster set under version.
type publisher func(version string, gen int) error

func makeClusters(n, gen int) []*clusterv3.Cluster {
	out := make([]*clusterv3.Cluster, n)
	for i := range out {
		name := fmt.Sprintf("cluster-%05d", i)
		out[i] = &clusterv3.Cluster{
			Name:                 name,
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
			ConnectTimeout:       durationpb.New(time.Duration(gen+1) * time.Millisecond),
			LoadAssignment: &endpointv3.ClusterLoadAssignment{
				ClusterName: name,
				Endpoints: []*endpointv3.LocalityLbEndpoints{{
					LbEndpoints: []*endpointv3.LbEndpoint{{
						HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
							Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
								Address: name + ".backend.svc.cluster.local", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
							}}},
						}},
					}},
				}},
			},
		}
	}
	return out
}

// grpcOptions are the transport settings both servers get (legate's
// defaults for buffers and windows), so the comparison isolates what the
// xDS layers do.
//
// The keepalive timeout is longer than legate's 20 s: connecting 10 000
// streams takes minutes on a loaded machine, the first ones are pinged
// meanwhile, and a client process starved by the load answered some pings
// late, which closed their connections and ended the cell (a dead proxy is
// not what the benchmark measures).
func grpcOptions() []grpc.ServerOption {
	return append(xds.TransportOptions(), grpc.MaxConcurrentStreams(1<<20),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Minute, Timeout: 10 * time.Minute}))
}

// startLegate starts legate's xDS server; bound is the listener wrapper
// both homes serve through (connection bound, grpc-go's pooled reads), set
// so that the cell measures what a user runs.
func startLegate(gs *grpcServer, lean bool, counter *acks, bound *func(net.Listener) net.Listener) (publisher, error) {
	srv, err := xds.New(xds.Options{Observer: xds.ObserverFunc(func(ev xds.Event) {
		if ev.Kind == xds.ACK {
			counter.ack(ev.TypeVersion)
		}
	})})
	if err != nil {
		return nil, err
	}
	if lean {
		*gs = srv.NewTransport(nil)
	} else {
		*gs = srv.NewGRPCServer(grpcOptions()...)
	}
	*bound = srv.BoundListener
	return func(version string, gen int) error {
		// The encoding of every resource counts: legate's renderer does it
		// once per revision.
		cs := makeClusters(clusterCount, gen)
		rs := make([]render.Resource, len(cs))
		for i, c := range cs {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
			if err != nil {
				return err
			}
			rs[i] = render.Resource{Name: c.GetName(), Body: b}
		}
		return srv.SetSnapshot(benchNode, xds.Snapshot{Version: version, Types: map[string]xds.TypeSnapshot{
			resourcev3.ClusterType: {Version: version, Resources: rs},
		}})
	}, nil
}

// grpcServer is grpc-go's server or legate's lean transport.
type grpcServer interface {
	Serve(net.Listener) error
	Stop()
}

func startGCP(gs *grpcServer, counter *acks) publisher {
	cache := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	cb := serverv3.CallbackFuncs{StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
		if req.GetResponseNonce() != "" && req.GetErrorDetail() == nil {
			counter.ack(req.GetVersionInfo())
		}
		return nil
	}}
	srv := serverv3.NewServer(context.Background(), cache, cb)
	g := grpc.NewServer(grpcOptions()...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, srv)
	*gs = g
	return func(version string, gen int) error {
		cs := makeClusters(clusterCount, gen)
		rs := make([]cachetypes.Resource, len(cs))
		for i, c := range cs {
			rs[i] = c
		}
		snap, err := cachev3.NewSnapshot(version, map[resourcev3.Type][]cachetypes.Resource{resourcev3.ClusterType: rs})
		if err != nil {
			return err
		}
		return cache.SetSnapshot(context.Background(), benchNode, snap)
	}
}

var clusterCount int

func runServer(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	impl := fs.String("impl", "legate", "legate (its lean transport, as it ships), legate-grpc (through grpc-go's server), gcp or h2")
	streams := fs.Int("streams", 100, "streams to wait for")
	fs.IntVar(&clusterCount, "clusters", 100, "clusters per snapshot")
	publishes := fs.Int("publishes", 7, "publishes to measure")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the publishes to this file")
	heapProfile := fs.String("heapprofile", "", "write a heap profile, once every stream is connected, to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	res := &Result{Impl: *impl, Streams: *streams, Clusters: clusterCount, Publishes: *publishes}
	counter := &acks{}
	var gs grpcServer
	var publish publisher
	var bound func(net.Listener) net.Listener
	var serve func(net.Listener)
	switch *impl {
	case "legate", "legate-grpc":
		p, err := startLegate(&gs, *impl == "legate", counter, &bound)
		if err != nil {
			return err
		}
		publish = p
	case "gcp":
		publish = startGCP(&gs, counter)
	case "h2":
		publish, serve = startH2(counter)
	default:
		return fmt.Errorf("unknown -impl %q: use legate, legate-grpc, gcp or h2", *impl)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if bound != nil {
		lis = bound(lis)
	}
	if serve != nil {
		go serve(lis)
		defer lis.Close()
	} else {
		go func() { _ = gs.Serve(lis) }()
		defer gs.Stop()
	}

	start := time.Now()
	reached := counter.expect("v0", *streams)
	if err := publish("v0", 0); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "addr %s\n", lis.Addr())
	<-reached
	res.ConnectSeconds = time.Since(start).Seconds()

	res.ConnectedRSSBytes = currentRSS()
	res.Goroutines = runtime.NumGoroutine()
	res.HeapBytes, res.StackBytes = memoryClasses()
	if *heapProfile != "" {
		if err := writeHeapProfile(*heapProfile); err != nil {
			return err
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	// The driver samples the client's CPU time between these two lines.
	fmt.Fprintln(stdout, "measure")
	cpu0 := cpuSeconds()
	var all []float64
	for i := 1; i <= *publishes; i++ {
		version := "v" + strconv.Itoa(i)
		reached := counter.expect(version, *streams)
		if err := publish(version, i); err != nil {
			return err
		}
		<-reached
		lat := counter.latencies()
		res.PublishToFirstMs = append(res.PublishToFirstMs, lat[0])
		res.PublishToACKedMs = append(res.PublishToACKedMs, lat[len(lat)-1])
		all = append(all, lat...)
	}
	res.CPUSeconds = cpuSeconds() - cpu0
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	res.PeakRSSBytes = peakRSS()
	res.P50Ms, res.P99Ms = stats.Percentile(res.PublishToACKedMs, 50), stats.Percentile(res.PublishToACKedMs, 99)
	res.FirstP50Ms = stats.Percentile(res.PublishToFirstMs, 50)
	res.StreamP50Ms, res.StreamP99Ms = stats.Percentile(all, 50), stats.Percentile(all, 99)
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// peakRSS reads VmHWM from /proc/self/status.
func peakRSS() int64 { return procStatus("VmHWM:") }

// currentRSS reads VmRSS from /proc/self/status.
func currentRSS() int64 { return procStatus("VmRSS:") }

// procStatus reads a size in kB from /proc/self/status, in bytes.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

func numCPU() int { return runtime.NumCPU() }

// memoryClasses reads the heap objects' and the goroutine stacks' bytes
// from runtime/metrics: where a stream's memory goes.
func memoryClasses() (heap, stacks int64) {
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(ms)
	return int64(ms[0].Value.Uint64()), int64(ms[1].Value.Uint64())
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
