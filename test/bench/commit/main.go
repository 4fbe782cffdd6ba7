// Command commit measures legate's commit-to-ACK latency: from `git commit`
// in a local repository holding a 1 000-route configuration, through an
// immediate fetch trigger (POST /api/v1/sources/default/fetch), fetch,
// render, the revision engine and the xDS server, to grpc-go's xDS client
// ACKing the new route configuration. In the same run it measures two
// baselines with the same configurations and the same client: a bare
// go-control-plane SnapshotCache server fed the rendered resources
// directly (the floor: xDS delivery alone), and legate following the
// repository by polling every second without a trigger. It also records
// legate's memory when idle after start and after 1 000 revisions have
// been published.
//
//	go run ./test/bench/commit -routes 1000 -commits 50 -revisions 1000 -out test/bench/commit/results.json
//	go run ./test/bench/commit plot -in test/bench/commit/results.json -svg docs/bench-commit.svg
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/legate-dev/legate/test/internal/stats"

	"github.com/legate-dev/legate/test/internal/gitrepo"
	"github.com/legate-dev/legate/test/internal/legateproc"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "plot" {
		err = runPlot(os.Args[2:])
	} else {
		err = run(os.Args[1:], os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "commit:", err)
		os.Exit(1)
	}
}

type options struct {
	routes, commits, revisions, pollCommits int
	legate, out                             string
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	fl := flag.NewFlagSet("commit", flag.ContinueOnError)
	fl.IntVar(&o.routes, "routes", 1000, "routes in the route configuration")
	fl.IntVar(&o.commits, "commits", 50, "timed commits per flow")
	fl.IntVar(&o.revisions, "revisions", 1000, "revisions to publish before measuring memory again (0 skips)")
	fl.IntVar(&o.pollCommits, "poll-commits", 20, "timed commits of the polling baseline (0 skips it)")
	fl.StringVar(&o.legate, "legate", "", "legate binary (default: go build ./cmd/legate into a temporary directory)")
	fl.StringVar(&o.out, "out", "", "write the results as JSON to this file")
	if err := fl.Parse(args); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "legate-bench-commit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.legate == "" {
		if o.legate, err = legateproc.Build(tmp, stderr); err != nil {
			return err
		}
	}
	port, stopBackend, err := startBackend()
	if err != nil {
		return err
	}
	defer stopBackend()

	res := &Results{
		Command: "go run ./test/bench/commit " + strings.Join(args, " "),
		Date:    time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Routes: o.routes,
	}
	b := &bench{o: o, tmp: tmp, port: port, log: stderr, res: res}
	if err := b.legateFlow(); err != nil {
		return err
	}
	if err := b.gcpFlow(); err != nil {
		return err
	}
	if o.pollCommits > 0 {
		if err := b.pollFlow(); err != nil {
			return err
		}
	}
	res.report(stdout)
	if o.out != "" {
		return res.write(o.out)
	}
	return nil
}

// bench carries one run.
type bench struct {
	o    options
	tmp  string
	port int
	log  io.Writer
	res  *Results
	gen  int
}

// commitNext writes the next configuration into repo and commits it; it
// returns the SHA and when the commit started.
func (b *bench) commitNext(repo string) (string, time.Time, error) {
	b.gen++
	if err := gitrepo.WriteFiles(repo, configFiles(b.o.routes, b.gen, b.port)); err != nil {
		return "", time.Time{}, err
	}
	t0 := time.Now()
	sha, err := gitrepo.CommitAll(repo, fmt.Sprintf("generation %d", b.gen))
	return sha, t0, err
}

// newRepo creates a repository with the first configuration committed.
func (b *bench) newRepo(name string) (string, string, error) {
	dir := filepath.Join(b.tmp, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	if err := gitrepo.Init(dir, "bench", "bench@legate.invalid"); err != nil {
		return "", "", err
	}
	sha, _, err := b.commitNext(dir)
	return dir, sha, err
}

// serve creates repository repo-<name> with the first configuration,
// starts legate on it with the poll interval given and waits until a
// grpc-go client has ACKed the first commit. stop ends legate and the
// client.
func (b *bench) serve(name string, interval time.Duration) (repo string, p *legateProc, stop func(), err error) {
	repo, sha, err := b.newRepo("repo-" + name)
	if err != nil {
		return "", nil, nil, err
	}
	logf, err := os.Create(filepath.Join(b.tmp, "legate-"+name+".log"))
	if err != nil {
		return "", nil, nil, err
	}
	p, err = startLegate(b.o.legate, repo, filepath.Join(b.tmp, "state-"+name), interval, logf)
	if err != nil {
		_ = logf.Close()
		return "", nil, nil, err
	}
	stop = func() {
		p.stop()
		_ = logf.Close()
	}
	cc, err := dialXDS(p.xdsAddr)
	if err != nil {
		stop()
		return "", nil, nil, err
	}
	stopLegate := stop
	stop = func() {
		_ = cc.Close()
		stopLegate()
	}
	if _, err := p.waitACK(sha, time.Minute); err != nil {
		stop()
		return "", nil, nil, err
	}
	return repo, p, stop, nil
}

// legateFlow: legate with the fetch trigger, then memory after many
// revisions.
func (b *bench) legateFlow() error {
	repo, p, stop, err := b.serve("trigger", time.Hour)
	if err != nil {
		return err
	}
	defer stop()
	if b.res.Idle, err = b.memory(p); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "legate idle: RSS %.1f MiB, heap in use %.1f MiB\n", mib(b.res.Idle.RSSBytes), mib(b.res.Idle.HeapInuseBytes))

	timed := func(n int) ([]float64, error) {
		var ms []float64
		for range n {
			sha, t0, err := b.commitNext(repo)
			if err != nil {
				return nil, err
			}
			if err := p.trigger(); err != nil {
				return nil, err
			}
			at, err := p.waitACK(sha, time.Minute)
			if err != nil {
				return nil, err
			}
			ms = append(ms, float64(at.Sub(t0).Microseconds())/1000)
		}
		return ms, nil
	}
	if _, err := timed(3); err != nil { // warm-up
		return err
	}
	ms, err := timed(b.o.commits)
	if err != nil {
		return err
	}
	b.res.add("legate, fetch trigger", ms)
	fmt.Fprintf(b.log, "legate with trigger: p50 %.1f ms, p99 %.1f ms\n", stats.Percentile(ms, 50), stats.Percentile(ms, 99))

	m, err := p.metrics(renderSum, renderCount, fetchSum, fetchCount)
	if err != nil {
		return err
	}
	b.res.RenderMeanMs = 1000 * m[renderSum] / m[renderCount]
	b.res.FetchMeanMs = 1000 * m[fetchSum] / m[fetchCount]

	for b.o.revisions > 0 {
		m, err := p.metrics(revisionsTotal)
		if err != nil {
			return err
		}
		if int(m[revisionsTotal]) >= b.o.revisions {
			b.res.Revisions = int(m[revisionsTotal])
			break
		}
		if int(m[revisionsTotal])%100 == 0 {
			fmt.Fprintf(b.log, "revisions published: %d\n", int(m[revisionsTotal]))
		}
		if _, err := timed(1); err != nil {
			return err
		}
	}
	if b.o.revisions > 0 {
		if b.res.AfterRevisions, err = b.memory(p); err != nil {
			return err
		}
		fmt.Fprintf(b.log, "legate after %d revisions: RSS %.1f MiB, heap in use %.1f MiB\n",
			b.res.Revisions, mib(b.res.AfterRevisions.RSSBytes), mib(b.res.AfterRevisions.HeapInuseBytes))
	}
	return nil
}

const (
	revisionsTotal = `legate_revisions_revisions_total{node="bench"}`
	renderSum      = `legate_render_duration_seconds_sum{source="default"}`
	renderCount    = `legate_render_duration_seconds_count{source="default"}`
	fetchSum       = `legate_source_fetch_duration_seconds_sum{source="default"}`
	fetchCount     = `legate_source_fetch_duration_seconds_count{source="default"}`
	heapInuse      = "go_memstats_heap_inuse_bytes"
	heapAlloc      = "go_memstats_heap_alloc_bytes"
)

func (b *bench) memory(p *legateProc) (Memory, error) {
	rss, err := p.rss()
	if err != nil {
		return Memory{}, err
	}
	m, err := p.metrics(heapInuse, heapAlloc)
	if err != nil {
		return Memory{}, err
	}
	return Memory{RSSBytes: rss, HeapInuseBytes: int64(m[heapInuse]), HeapAllocBytes: int64(m[heapAlloc])}, nil
}

// gcpFlow: the same configurations set directly on a bare go-control-plane
// server.
func (b *bench) gcpFlow() error {
	s, err := startGCP()
	if err != nil {
		return err
	}
	defer s.stop()
	publish := func() (float64, error) {
		b.gen++
		snap, routes, err := gcpSnapshot(configFiles(b.o.routes, b.gen, b.port))
		if err != nil {
			return 0, err
		}
		d, err := s.publishToACK(snap, routes, time.Minute)
		return float64(d.Microseconds()) / 1000, err
	}
	// The first snapshot is set before the client connects.
	b.gen++
	snap, routes, err := gcpSnapshot(configFiles(b.o.routes, b.gen, b.port))
	if err != nil {
		return err
	}
	if err := s.cache.SetSnapshot(contextBackground(), benchNode, snap); err != nil {
		return err
	}
	cc, err := dialXDS(s.addr)
	if err != nil {
		return err
	}
	defer cc.Close()
	if err := s.waitVersion(routes, time.Minute); err != nil {
		return err
	}
	for range 3 { // warm-up
		if _, err := publish(); err != nil {
			return err
		}
	}
	var ms []float64
	for range b.o.commits {
		d, err := publish()
		if err != nil {
			return err
		}
		ms = append(ms, d)
	}
	b.res.add("go-control-plane, snapshot set directly", ms)
	fmt.Fprintf(b.log, "go-control-plane: p50 %.1f ms, p99 %.1f ms\n", stats.Percentile(ms, 50), stats.Percentile(ms, 99))
	return nil
}

// pollFlow: legate finding the commits by polling every second.
func (b *bench) pollFlow() error {
	repo, p, stop, err := b.serve("poll", time.Second)
	if err != nil {
		return err
	}
	defer stop()
	var ms []float64
	for range b.o.pollCommits {
		// Commit at a random phase of the poll interval: right after an
		// ACK the next poll is always a full interval away.
		time.Sleep(rand.N(time.Second))
		sha, t0, err := b.commitNext(repo)
		if err != nil {
			return err
		}
		at, err := p.waitACK(sha, time.Minute)
		if err != nil {
			return err
		}
		ms = append(ms, float64(at.Sub(t0).Microseconds())/1000)
	}
	b.res.add("legate, polling every 1s", ms)
	fmt.Fprintf(b.log, "legate polling: p50 %.1f ms, p99 %.1f ms\n", stats.Percentile(ms, 50), stats.Percentile(ms, 99))
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
