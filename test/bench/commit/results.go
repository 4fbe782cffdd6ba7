package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/legate-dev/legate/test/internal/stats"
)

// Results is the output of one run.
type Results struct {
	Command string `json:"command"`
	Date    string `json:"date"`
	CPUs    int    `json:"cpus"`
	Routes  int    `json:"routes"`
	Flows   []Flow `json:"flows"`
	// RenderMeanMs and FetchMeanMs are legate's own mean render and fetch
	// durations over the timed commits with the trigger.
	RenderMeanMs float64 `json:"renderMeanMs"`
	FetchMeanMs  float64 `json:"fetchMeanMs"`
	// Idle is legate's memory after start, with the first revision
	// published and one client connected.
	Idle Memory `json:"idle"`
	// AfterRevisions is legate's memory once Revisions revisions have been
	// published.
	AfterRevisions Memory `json:"afterRevisions"`
	Revisions      int    `json:"revisions"`
}

// Flow is one way of getting a commit to the client.
type Flow struct {
	Name string    `json:"name"`
	Ms   []float64 `json:"ms"`
	P50  float64   `json:"p50Ms"`
	P99  float64   `json:"p99Ms"`
	Mean float64   `json:"meanMs"`
	Max  float64   `json:"maxMs"`
}

// Memory is a snapshot of a process's memory.
type Memory struct {
	RSSBytes       int64 `json:"rssBytes"`
	HeapInuseBytes int64 `json:"heapInuseBytes"`
	HeapAllocBytes int64 `json:"heapAllocBytes"`
}

func (r *Results) add(name string, ms []float64) {
	f := Flow{Name: name, Ms: ms, P50: stats.Percentile(ms, 50), P99: stats.Percentile(ms, 99)}
	for _, v := range ms {
		f.Mean += v / float64(len(ms))
		f.Max = math.Max(f.Max, v)
	}
	r.Flows = append(r.Flows, f)
}

func (r *Results) report(w io.Writer) {
	fmt.Fprintf(w, "%d routes, %d CPUs, %s\n\n", r.Routes, r.CPUs, r.Date)
	fmt.Fprintln(w, "| flow | commits | p50 | p99 | mean | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, f := range r.Flows {
		fmt.Fprintf(w, "| %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms |\n", f.Name, len(f.Ms), f.P50, f.P99, f.Mean, f.Max)
	}
	fmt.Fprintf(w, "\nlegate mean fetch %.1f ms, mean render %.1f ms\n\n", r.FetchMeanMs, r.RenderMeanMs)
	fmt.Fprintln(w, "| legate memory | RSS | Go heap in use | Go heap allocated |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	row := func(name string, m Memory) {
		fmt.Fprintf(w, "| %s | %.1f MiB | %.1f MiB | %.1f MiB |\n", name, mib(m.RSSBytes), mib(m.HeapInuseBytes), mib(m.HeapAllocBytes))
	}
	row("idle after start", r.Idle)
	if r.Revisions > 0 {
		row(fmt.Sprintf("after %d revisions published", r.Revisions), r.AfterRevisions)
	}
}

func (r *Results) write(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func contextBackground() context.Context { return context.Background() }

// waitVersion waits until the client ACKed the route configuration of
// version v.
func (s *gcpServer) waitVersion(v string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		select {
		case a := <-s.acks:
			if a.version == v {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("route configuration %s not ACKed within %v", v, timeout)
		}
	}
}
