package boltstore_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
)

// The crash test runs a writer in a child process (this test binary,
// re-executed as the writer by TestMain), kills it with SIGKILL after a random
// number of acknowledged writes, and checks the store the child left behind.
// Kills land at random points inside writes because the child keeps writing
// while the parent reads its acknowledgements.
//
// What this proves is atomicity, not durability: a killed process leaves
// its writes in the page cache, which survives, so even a store opened
// with NoSync passes. Durability across power loss cannot be shown here;
// TestCommitsAreSynced checks the part that can: the store syncs every
// commit to disk.

const (
	envCrashDir  = "LEGATE_CRASH_DIR"
	envCrashSeed = "LEGATE_CRASH_SEED"
	crashHistory = 5
	cdsURL       = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
)

var crashNodes = []string{"edge", "mesh", "gw"}

func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	const kills = 30
	acked := map[string]uint64{} // node -> generation the child reported as committed
	for round := range kills {
		ops := 1 + rng.IntN(40)
		lines := runAndKill(t, rng, dir, round, ops)
		for _, l := range lines {
			f := strings.Fields(l)
			require.Len(t, f, 3, "child line %q", l)
			gen, err := strconv.ParseUint(f[2], 10, 64)
			require.NoError(t, err)
			acked[f[1]] = max(acked[f[1]], gen)
		}
		checkInvariants(t, dir, acked)
	}
	require.NotEmpty(t, acked)
}

// runAndKill starts a child writer and kills it during the writes after
// ops acknowledged ones; it returns the acknowledgement lines read.
func runAndKill(t *testing.T, rng *rand.Rand, dir string, round, ops int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashSeed+"="+strconv.Itoa(round))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())

	got := make(chan string)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			got <- sc.Text()
		}
	}()
	var lines []string
	deadline := time.After(60 * time.Second)
	start := time.Now()
	for len(lines) < ops {
		select {
		case l, ok := <-got:
			require.True(t, ok, "child exited early after %d writes", len(lines))
			if strings.HasPrefix(l, "ack ") {
				lines = append(lines, l)
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("child wrote only %d of %d acknowledgements", len(lines), ops)
		}
	}
	// Kill at a random point of the following writes: after a delay drawn
	// from zero to twice the mean time of one write so far.
	mean := time.Since(start) / time.Duration(ops)
	kill := time.NewTimer(time.Duration(rng.Int64N(int64(2*mean) + 1)))
	for waiting := true; waiting; {
		select {
		case l, ok := <-got:
			if ok && strings.HasPrefix(l, "ack ") {
				lines = append(lines, l)
			}
			if !ok {
				waiting = false
			}
		case <-kill.C:
			waiting = false
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	// Acknowledgements written before the kill landed still count.
	for l := range got {
		if strings.HasPrefix(l, "ack ") {
			lines = append(lines, l)
		}
	}
	_ = cmd.Wait()
	return lines
}

func checkInvariants(t *testing.T, dir string, acked map[string]uint64) {
	t.Helper()
	s, err := boltstore.Open(dir)
	require.NoError(t, err, "the store opens after a kill")
	defer func() { require.NoError(t, s.Close()) }()
	data, err := s.Load(context.Background())
	require.NoError(t, err, "every record and revision decodes")
	for _, d := range data {
		rec := d.Record
		byHash := map[string]*revisions.Revision{}
		for _, r := range d.Revisions {
			byHash[r.Hash] = r
			assert.Equal(t, contentHash(r.Config), r.Hash, "revision content matches its hash")
			assert.Equal(t, r.Hash, r.Config.Hash)
			if r.Taint != nil {
				require.Len(t, r.Taint.Proxies, 1)
				assert.Equal(t, "proxy rejected "+r.Hash[:8], r.Taint.Proxies[0].Error, "taint text intact")
				assert.Equal(t, "taint of "+r.Hash[:8], r.Taint.Message)
			}
		}
		assert.Len(t, byHash, len(rec.History), "node %s: revisions and history agree", rec.Node)
		assert.LessOrEqual(t, len(rec.History), crashHistory)
		for _, h := range rec.History {
			assert.Contains(t, byHash, h, "node %s: history entry readable", rec.Node)
		}
		if rec.Published != "" {
			assert.Contains(t, rec.History, rec.Published, "node %s: published pointer valid", rec.Node)
			assert.Equal(t, fmt.Sprintf("%s-%d", rec.Published[:12], rec.Generation), rec.Version)
		}
		assert.GreaterOrEqual(t, rec.Generation, acked[rec.Node], "node %s: an acknowledged write was lost", rec.Node)
	}
	for n, g := range acked {
		if g > 0 {
			assert.True(t, slices.ContainsFunc(data, func(d revisions.NodeData) bool { return d.Record.Node == n }), "node %s lost", n)
		}
	}
	entries, err := s.OutboxList(context.Background(), 0)
	require.NoError(t, err)
	keys := map[string]bool{}
	for i, e := range entries {
		if i > 0 {
			assert.Greater(t, e.Seq, entries[i-1].Seq, "outbox ordered")
		}
		assert.False(t, keys[e.Key], "outbox key %s queued twice", e.Key)
		keys[e.Key] = true
		assert.True(t, strings.HasPrefix(string(e.Value), e.Key+"="), "outbox value intact")
	}
}

// TestMain turns the test binary into the crash test's writer when
// TestCrashSafety starts it with envCrashDir set.
func TestMain(m *testing.M) {
	if dir := os.Getenv(envCrashDir); dir != "" {
		crashChild(dir) // writes until it is killed
	}
	os.Exit(m.Run())
}

// crashChild is the writer the crash test kills: it commits revisions and
// outbox entries in a loop and prints an "ack" line after each durable write.
func crashChild(dir string) {
	fatal := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 99))
	ctx := context.Background()
	s, err := boltstore.Open(dir)
	if err != nil {
		fatal(err)
	}
	data, err := s.Load(ctx)
	if err != nil {
		fatal(err)
	}
	state := map[string]*revisions.NodeData{}
	for i := range data {
		state[data[i].Record.Node] = &data[i]
	}
	for i := 0; ; i++ {
		node := crashNodes[rng.IntN(len(crashNodes))]
		d := state[node]
		if d == nil {
			d = &revisions.NodeData{Record: revisions.NodeRecord{Node: node}}
			state[node] = d
		}
		u := step(rng, d, i)
		if err := s.Commit(ctx, u); err != nil {
			fatal(err)
		}
		key := fmt.Sprintf("%s/%d", node, rng.IntN(4))
		if _, err := s.OutboxPut(ctx, key, []byte(key+"="+strconv.Itoa(i))); err != nil {
			fatal(err)
		}
		if rng.IntN(3) == 0 {
			if es, err := s.OutboxList(ctx, 1); err == nil && len(es) == 1 {
				if err := s.OutboxDelete(ctx, es[0].Seq); err != nil {
					fatal(err)
				}
			}
		}
		fmt.Fprintf(os.Stdout, "ack %s %d\n", node, d.Record.Generation)
	}
}

// step changes one node like the engine would: a new or re-applied
// revision on top, sometimes a taint, a new publication, pruning.
func step(rng *rand.Rand, d *revisions.NodeData, i int) revisions.Update {
	rec := &d.Record
	var put []*revisions.Revision
	var states []revisions.RevisionState
	var r *revisions.Revision
	reapplied := len(d.Revisions) > 0 && rng.IntN(4) == 0
	if reapplied {
		r = d.Revisions[rng.IntN(len(d.Revisions))] // re-apply old content
	} else {
		body := make([]byte, 64+rng.IntN(4096))
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		cfg := &render.NodeConfig{NodeID: rec.Node, Types: map[string]render.TypeSet{
			cdsURL: {Resources: []render.Resource{{Name: "c" + strconv.Itoa(i), Body: body}}},
		}}
		ts := cfg.Types[cdsURL]
		ts.Hash = contentHash(cfg)
		cfg.Types[cdsURL] = ts
		cfg.Hash = contentHash(cfg)
		r = &revisions.Revision{Node: rec.Node, Hash: cfg.Hash, Config: cfg, CreatedAt: time.Unix(int64(i), 0).UTC()}
		d.Revisions = append(d.Revisions, r)
	}
	hist := []string{r.Hash}
	for _, h := range rec.History {
		if h != r.Hash {
			hist = append(hist, h)
		}
	}
	if rng.IntN(3) == 0 && r.Taint == nil {
		r.Taint = &revisions.Taint{
			At:      time.Unix(int64(i), 0).UTC(),
			Proxies: []revisions.ProxyRejection{{Proxy: "pod", Error: "proxy rejected " + r.Hash[:8]}},
			Message: "taint of " + r.Hash[:8],
		}
	}
	if reapplied {
		states = append(states, revisions.StateOf(r)) // only its state changes
	} else {
		put = append(put, r)
	}
	rec.Generation++
	rec.Revision++
	rec.Published = r.Hash
	rec.Version = fmt.Sprintf("%s-%d", r.Hash[:12], rec.Generation)
	var drop []string
	if len(hist) > crashHistory {
		drop = hist[crashHistory:]
		hist = hist[:crashHistory]
	}
	rec.History = hist
	d.Revisions = slices.DeleteFunc(d.Revisions, func(x *revisions.Revision) bool { return slices.Contains(drop, x.Hash) })
	return revisions.Update{Record: *rec, Put: put, States: states, Delete: drop}
}

// contentHash is the test's own content hash: SHA-256 over names and bodies.
func contentHash(cfg *render.NodeConfig) string {
	h := sha256.New()
	for _, r := range cfg.Types[cdsURL].Resources {
		h.Write([]byte(r.Name))
		h.Write([]byte{0})
		h.Write(r.Body)
	}
	return hex.EncodeToString(h.Sum(nil))
}
