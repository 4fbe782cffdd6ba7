package git

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Shape of the benchmark repository: 10 000 commits over a tree of 500
// config files of about 2 KiB each (hex, so they compress like real YAML
// with hashes and certificates rather than like repeated padding).
const (
	benchCommits = 10000
	benchFiles   = 500
)

func benchFile(f, version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: cluster-%d\nversion: %d\n", f, version)
	sum := sha256.Sum256([]byte(fmt.Sprint(f, version)))
	for b.Len() < 2048 {
		sum = sha256.Sum256(sum[:])
		fmt.Fprintf(&b, "# %x\n", sum)
	}
	return b.String()
}

// fastImport appends n commits to refs/heads/main of the bare repository
// at dir, each rewriting one config file, starting at commit number start.
func fastImport(tb testing.TB, dir string, start, n int) {
	tb.Helper()
	var in bytes.Buffer
	for i := start; i < start+n; i++ {
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\n", 1_700_000_000+i)
		msg := fmt.Sprintf("change %d", i)
		fmt.Fprintf(&in, "data %d\n%s\n", len(msg), msg)
		if i == start && start > 0 {
			in.WriteString("from refs/heads/main^0\n")
		}
		if i == 0 {
			for f := 0; f < benchFiles; f++ {
				body := benchFile(f, 0)
				fmt.Fprintf(&in, "M 100644 inline envoy/clusters/c%03d.yaml\ndata %d\n%s\n", f, len(body), body)
			}
		}
		body := benchFile(i%benchFiles, i)
		fmt.Fprintf(&in, "M 100644 inline envoy/clusters/c%03d.yaml\ndata %d\n%s\n", i%benchFiles, len(body), body)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = &in
	out, err := cmd.CombinedOutput()
	require.NoError(tb, err, "%s", out)
}

// BenchmarkFetch compares, on a repository of 10 000 commits served over
// smart HTTP by git's http-backend, bringing a persistent clone up to date
// after one new commit with a fresh shallow (depth 1) clone of the tip, and
// a poll when nothing moved.
//
//	go test ./sources/git -run '^$' -bench BenchmarkFetch -benchtime 20x
func BenchmarkFetch(b *testing.B) {
	root := b.TempDir()
	bare := filepath.Join(root, "cfg.git")
	out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", bare).CombinedOutput()
	require.NoError(b, err, "%s", out)
	fastImport(b, bare, 0, benchCommits)
	out, err = exec.Command("git", "-C", bare, "gc", "-q").CombinedOutput()
	require.NoError(b, err, "%s", out)
	srv := serveGitHTTP(b, root, nil)
	url := srv.URL + "/cfg.git"
	ctx := context.Background()
	next := benchCommits
	// pushOne adds a commit, its time and CPU left out of the figures.
	pushOne := func(b *testing.B, m *meter) {
		b.StopTimer()
		m.pause()
		fastImport(b, bare, next, 1)
		m.resume()
		next++
		b.StartTimer()
	}

	b.Run("incremental-one-commit", func(b *testing.B) {
		src := mustNew(b, Config{URL: url, Path: "envoy", Timeout: 5 * time.Minute})
		_, err := src.Fetch(ctx)
		require.NoError(b, err)
		m := startMeter(srv)
		b.ResetTimer()
		defer func() { m.report(b) }()
		for i := 0; i < b.N; i++ {
			pushOne(b, m)
			res, err := src.Fetch(ctx)
			if err != nil || !res.Changed {
				b.Fatalf("fetch: %v (changed %v)", err, res != nil && res.Changed)
			}
		}
	})
	b.Run("fresh-shallow-clone", func(b *testing.B) {
		m := startMeter(srv)
		defer func() { m.report(b) }()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			src := mustNew(b, Config{URL: url, Path: "envoy", Depth: 1, Timeout: 5 * time.Minute})
			b.StartTimer()
			if _, err := src.Fetch(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A push to a monorepo that eight sources follow, which a webhook
	// triggers together: clones of their own against one shared clone.
	// The eight follow the same directory here (the benchmark repository
	// has one); each still makes its own snapshot of it.
	for _, shared := range []bool{false, true} {
		name := "monorepo-8-sources-own-clones"
		var clones *Clones
		if shared {
			name, clones = "monorepo-8-sources-shared-clone", NewClones("")
		}
		b.Run(name, func(b *testing.B) {
			state := b.TempDir()
			srcs := make([]*Source, 8)
			for i := range srcs {
				srcs[i] = mustNew(b, Config{Name: fmt.Sprintf("s%d", i), URL: url, Path: "envoy", StateDir: state, Clones: clones, Timeout: 5 * time.Minute})
				_, err := srcs[i].Fetch(ctx)
				require.NoError(b, err)
			}
			m := startMeter(srv)
			b.ResetTimer()
			defer func() { m.report(b) }()
			for i := 0; i < b.N; i++ {
				pushOne(b, m)
				errs := make(chan error, len(srcs))
				for _, src := range srcs {
					go func() {
						res, err := src.Fetch(ctx)
						if err == nil && !res.Changed {
							err = fmt.Errorf("source %s did not move", src.Name())
						}
						errs <- err
					}()
				}
				for range srcs {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("poll-unchanged", func(b *testing.B) {
		src := mustNew(b, Config{URL: url, Path: "envoy", Timeout: 5 * time.Minute})
		_, err := src.Fetch(ctx)
		require.NoError(b, err)
		m := startMeter(srv)
		b.ResetTimer()
		defer func() { m.report(b) }()
		for i := 0; i < b.N; i++ {
			if _, err := src.Fetch(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// meter counts, from its start, the bytes the server sent, its requests,
// and the CPU time of this process (the client, plus the Go half of the
// test server) and of its finished children (the server's git processes),
// leaving out what the benchmark's own set-up spends between pause and
// resume. CPU time, unlike wall time, says the same on a busy machine.
type meter struct {
	srv                *gitHTTPServer
	wire, reqs         int64
	self, children     time.Duration
	pausedC, setupTime time.Duration
}

func startMeter(srv *gitHTTPServer) *meter {
	self, children := cpuTimes()
	return &meter{srv: srv, wire: srv.sent.Load(), reqs: srv.requests.Load(), self: self, children: children}
}

func (m *meter) pause() { _, m.pausedC = cpuTimes() }

func (m *meter) resume() {
	_, c := cpuTimes()
	m.setupTime += c - m.pausedC
}

func (m *meter) report(b *testing.B) {
	self, children := cpuTimes()
	n := float64(b.N)
	b.ReportMetric(float64(m.srv.sent.Load()-m.wire)/n, "wire-B/op")
	b.ReportMetric(float64(m.srv.requests.Load()-m.reqs)/n, "requests/op")
	b.ReportMetric(float64(self-m.self)/float64(time.Millisecond)/n, "client-cpu-ms/op")
	b.ReportMetric(float64(children-m.children-m.setupTime)/float64(time.Millisecond)/n, "server-cpu-ms/op")
}

// cpuTimes is the user+system time of this process and of its children
// that have been waited for.
func cpuTimes() (self, children time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return self, children
}
