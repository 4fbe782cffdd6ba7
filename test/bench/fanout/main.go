// Command fanout measures xDS fan-out: the time from publishing a snapshot
// to every ADS stream of a node having ACKed it, with the server's CPU time
// and peak memory, for legate's xds.Server and a bare go-control-plane
// SnapshotCache server side by side in the same run.
//
// The driver starts, for every cell (implementation × streams × clusters),
// a fresh server process and a separate client process (both are this
// binary, run with the "server" and "client" subcommands), so the client's
// work and memory never count for the server.
//
//	go run ./test/bench/fanout -streams 100,1000 -clusters 100,1000 -out docs/bench-fanout.json
//	go run ./test/bench/fanout plot -in docs/bench-fanout.json -svg docs/bench-fanout.svg
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	var err error
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "server":
			err = runServer(os.Args[2:], os.Stdout)
		case "client":
			err = runClient(os.Args[2:], os.Stdout)
		case "plot":
			err = runPlot(os.Args[2:], os.Stdout)
		default:
			err = runDriver(os.Args[1:], os.Stdout, os.Stderr)
		}
	} else {
		err = runDriver(nil, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

// Result is one cell of the benchmark, written by the server process.
type Result struct {
	Impl      string `json:"impl"`
	Streams   int    `json:"streams"`
	Clusters  int    `json:"clusters"`
	Publishes int    `json:"publishes"`
	// PublishToACKedMs is, per publish, the time from the publish call to
	// the last stream's ACK of the new version; P50Ms and P99Ms are over
	// the publishes.
	PublishToACKedMs []float64 `json:"publishToAckedMs"`
	P50Ms            float64   `json:"p50Ms"`
	P99Ms            float64   `json:"p99Ms"`
	// PublishToFirstMs is, per publish, the time to the first stream's ACK.
	PublishToFirstMs []float64 `json:"publishToFirstMs,omitempty"`
	FirstP50Ms       float64   `json:"firstP50Ms,omitempty"`
	// StreamP50Ms and StreamP99Ms are over every stream's ACK of every
	// publish (time from the publish call).
	StreamP50Ms float64 `json:"streamP50Ms,omitempty"`
	StreamP99Ms float64 `json:"streamP99Ms,omitempty"`
	// CPUSeconds is the server's user+system CPU over the publishes.
	CPUSeconds float64 `json:"cpuSeconds"`
	// ClientCPUSeconds is the client process's over the same publishes:
	// near the publishes' wall time × cores, the client is the bottleneck.
	ClientCPUSeconds float64 `json:"clientCpuSeconds,omitempty"`
	// PeakRSSBytes is the server's peak resident set (VmHWM) over the run;
	// ConnectedRSSBytes its resident set once every stream had its first
	// snapshot.
	PeakRSSBytes      int64 `json:"peakRssBytes"`
	ConnectedRSSBytes int64 `json:"connectedRssBytes,omitempty"`
	// Goroutines, HeapBytes and StackBytes are the server's once every
	// stream is connected (runtime/metrics' heap objects and stacks).
	Goroutines int   `json:"goroutines,omitempty"`
	HeapBytes  int64 `json:"heapBytes,omitempty"`
	StackBytes int64 `json:"stackBytes,omitempty"`
	// ConnectSeconds is the time until every stream had ACKed the first
	// snapshot.
	ConnectSeconds float64 `json:"connectSeconds"`
	Error          string  `json:"error,omitempty"`
}

// Run is the output file: the cells and how they were made.
type Run struct {
	Command string    `json:"command"`
	Date    string    `json:"date"`
	CPUs    int       `json:"cpus"`
	Results []*Result `json:"results"`
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("parse %q as a list of numbers: %w", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func runDriver(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	streams := fs.String("streams", "100,1000", "comma-separated stream counts")
	clusters := fs.String("clusters", "100,1000", "comma-separated cluster counts")
	impls := fs.String("impls", "gcp,legate", "implementations: legate (as it ships: its lean transport), legate-grpc (legate through grpc-go's server), gcp, h2 (a bare measurement, h2server.go)")
	publishes := fs.Int("publishes", 7, "publishes measured per cell")
	profiles := fs.String("cpuprofile", "", "write each server's CPU profile of the publishes into this directory")
	perConn := fs.Int("streams-per-conn", 1, "ADS streams sharing one client connection (more than one uses grpc-go's client)")
	grpcClient := fs.Bool("grpc-client", false, "run grpc-go's client instead of the bare HTTP/2 one")
	timeout := fs.Duration("timeout", 5*time.Minute, "limit for one cell")
	skip := fs.String("skip", "", "cells to leave out, e.g. gcp/10000/1000")
	out := fs.String("out", "", "write the results as JSON to this file")
	pin := fs.Bool("pin", false, "run the server on CPU 0 and the client on CPU 1 (taskset), so that neither takes the other's core")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ns, err := intList(*streams)
	if err != nil {
		return err
	}
	cs, err := intList(*clusters)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start its server and client: %w", err)
	}
	run := &Run{
		Command: "go run ./test/bench/fanout " + strings.Join(args, " "),
		Date:    time.Now().UTC().Format(time.RFC3339), CPUs: numCPU(),
	}
	skipped := map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		skipped[strings.TrimSpace(s)] = true
	}
	for _, c := range cs {
		for _, n := range ns {
			for _, impl := range strings.Split(*impls, ",") {
				if skipped[fmt.Sprintf("%s/%d/%d", impl, n, c)] {
					continue
				}
				fmt.Fprintf(stderr, "cell %s streams=%d clusters=%d ... ", impl, n, c)
				res, err := runCell(self, impl, n, c, *publishes, *perConn, *grpcClient, *pin, *timeout, *profiles)
				if err != nil {
					res = &Result{Impl: impl, Streams: n, Clusters: c, Error: err.Error()}
					fmt.Fprintf(stderr, "error: %v\n", err)
				} else {
					fmt.Fprintf(stderr, "last p50 %.1f p99 %.1f ms, first p50 %.1f ms, stream p50 %.1f p99 %.1f ms, cpu %.2f s (client %.2f s), rss %d MiB connected (heap %d MiB, stacks %d MiB, %d goroutines), %d MiB peak\n",
						res.P50Ms, res.P99Ms, res.FirstP50Ms, res.StreamP50Ms, res.StreamP99Ms, res.CPUSeconds, res.ClientCPUSeconds,
						res.ConnectedRSSBytes>>20, res.HeapBytes>>20, res.StackBytes>>20, res.Goroutines, res.PeakRSSBytes>>20)
				}
				run.Results = append(run.Results, res)
			}
		}
	}
	if err := writeTable(stdout, run); err != nil {
		return err
	}
	if *out != "" {
		b, err := json.MarshalIndent(run, "", "  ")
		if err != nil {
			return fmt.Errorf("encode results: %w", err)
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
	}
	return nil
}

// onCPU is the command for name and args, run under taskset on the given
// CPU when pin is set (the Go runtime then sizes GOMAXPROCS to that one
// CPU).
func onCPU(pin bool, cpu, name string, args ...string) *exec.Cmd {
	if !pin {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpu, name}, args...)...)
}

// runCell starts a server process, then a client process pointed at it, and
// returns the server's result.
func runCell(self, impl string, streams, clusters, publishes, perConn int, grpcClient, pin bool, timeout time.Duration, profiles string) (*Result, error) {
	args := []string{
		"server", "-impl", impl, "-streams", strconv.Itoa(streams),
		"-clusters", strconv.Itoa(clusters), "-publishes", strconv.Itoa(publishes),
	}
	if profiles != "" {
		args = append(args, "-cpuprofile", filepath.Join(profiles, fmt.Sprintf("%s-%d-%d.pprof", impl, streams, clusters)),
			"-heapprofile", filepath.Join(profiles, fmt.Sprintf("%s-%d-%d.heap", impl, streams, clusters)))
	}
	srv := onCPU(pin, "0", self, args...)
	srv.Stderr = os.Stderr
	srvOut, err := srv.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	lines := bufio.NewScanner(srvOut)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	if !lines.Scan() {
		return nil, errors.New("server printed no address")
	}
	addr, ok := strings.CutPrefix(lines.Text(), "addr ")
	if !ok {
		return nil, fmt.Errorf("server printed %q, want its address", lines.Text())
	}
	cli := onCPU(pin, "1", self, "client", "-addr", addr, "-streams", strconv.Itoa(streams),
		"-streams-per-conn", strconv.Itoa(perConn), "-grpc="+strconv.FormatBool(grpcClient))
	cli.Stderr = os.Stderr
	if err := cli.Start(); err != nil {
		return nil, fmt.Errorf("start client: %w", err)
	}
	var cliErr error
	cliDone := make(chan struct{})
	go func() { cliErr = cli.Wait(); close(cliDone) }()
	defer func() { _ = cli.Process.Kill(); <-cliDone }()

	done := make(chan *Result, 1)
	go func() {
		var cpu0 float64
		for lines.Scan() {
			if lines.Text() == "measure" {
				cpu0 = procCPUSeconds(cli.Process.Pid)
				continue
			}
			var r Result
			if err := json.Unmarshal(lines.Bytes(), &r); err == nil {
				r.ClientCPUSeconds = procCPUSeconds(cli.Process.Pid) - cpu0
				done <- &r
				return
			}
		}
		done <- nil
	}()
	select {
	case r := <-done:
		if r == nil {
			return nil, errors.New("server ended without a result")
		}
		if r.Error != "" {
			return r, errors.New(r.Error)
		}
		return r, nil
	case <-cliDone:
		return nil, fmt.Errorf("the client ended before the result: %w", cliErr)
	case <-time.After(timeout):
		return nil, fmt.Errorf("no result within %s", timeout)
	}
}

// procCPUSeconds is the user+system CPU time of process pid so far, from
// /proc/pid/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func procCPUSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from its ")".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}
