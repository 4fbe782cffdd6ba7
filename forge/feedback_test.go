package forge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/sources"
)

const (
	shaA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	shaB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func origin(src, commit string) sources.Origin {
	return sources.Origin{Kind: sources.KindGit, Source: src, Ref: "main", Commit: commit}
}

func TestFeedbackStatuses(t *testing.T) {
	type step struct {
		in   revisions.Outcome
		want []queued
	}
	url := "https://legate.example/api/v1/nodes/edge"
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "pending then success",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Hash: "0123456789abcdef", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "revision 0123456789ab published, waiting for the 1 connected proxy to answer", TargetURL: url}}},
				},
				{
					in:   revisions.Outcome{Node: "edge", Origin: origin("cfg", shaA), Status: revisions.OutcomeSuccess, Description: "accepted by 1 of 1 proxies"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StateSuccess, Context: "legate/edge", Description: "accepted by 1 of 1 proxies", TargetURL: url}}},
				},
			},
		},
		{
			name: "rollback names the proxies' text",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Origin: origin("cfg", shaA), Status: revisions.OutcomeFailure, State: revisions.StateRollback, Description: "rejected by 1 of 1 proxies; p: unsupported cluster type"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StateFailure, Context: "legate/edge", Description: "rolled back: rejected by 1 of 1 proxies; p: unsupported cluster type", TargetURL: url}}},
				},
			},
		},
		{
			name: "validation failure goes to every node the source rendered",
			steps: []step{
				{
					in:   revisions.Outcome{Origin: origin("cfg", shaA), Status: revisions.OutcomeFailure, Description: "validation failed with 1 problem; a.yaml:3:1: bad"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StateFailure, Context: ValidationContext, Description: "validation failed with 1 problem; a.yaml:3:1: bad"}}},
				},
				{
					in:   revisions.Outcome{Node: "edge", Origin: origin("cfg", shaA), Status: revisions.OutcomeSuccess, Description: "ok"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StateSuccess, Context: "legate/edge", Description: "ok", TargetURL: url}}},
				},
				{in: revisions.Outcome{Node: "other", Origin: origin("elsewhere", shaA), Status: revisions.OutcomeSuccess}},
				{
					in:   revisions.Outcome{Origin: origin("cfg", shaB), Status: revisions.OutcomeFailure, Description: "validation failed"},
					want: []queued{{"cfg", Status{Commit: shaB, State: StateFailure, Context: "legate/edge", Description: "validation failed", TargetURL: url}}},
				},
			},
		},
		{
			name: "a superseded pending commit is closed",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "revision h1 published, waiting for the 1 connected proxy to answer", TargetURL: url}}},
				},
				{
					in:   revisions.Outcome{Origin: origin("cfg", shaB), Status: revisions.OutcomeFailure, Description: "validation failed"},
					want: []queued{{"cfg", Status{Commit: shaB, State: StateFailure, Context: "legate/edge", Description: "validation failed", TargetURL: url}}},
				},
				{
					in: revisions.Outcome{Node: "edge", Hash: "h2", Origin: origin("cfg", shaB), Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"},
					want: []queued{
						{"cfg", Status{Commit: shaA, State: StateSuccess, Context: "legate/edge", Description: "superseded by bbbbbbbbbbbb before every proxy answered; not rejected", TargetURL: url}},
						{"cfg", Status{Commit: shaB, State: StatePending, Context: "legate/edge", Description: "revision h2 published, waiting for the 1 connected proxy to answer", TargetURL: url}},
					},
				},
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h2", Origin: origin("cfg", shaB), Status: revisions.OutcomeSuccess, Description: "ok"},
					want: []queued{{"cfg", Status{Commit: shaB, State: StateSuccess, Context: "legate/edge", Description: "ok", TargetURL: url}}},
				},
			},
		},
		{
			name: "a commit waiting for its secrets stays pending and leaves the served one open",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "revision h1 published, waiting for the 1 connected proxy to answer", TargetURL: url}}},
				},
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h2", Origin: origin("cfg", shaB), Status: revisions.OutcomePending, Waiting: true, Description: `waiting to be served: secret "tls" (ref "tls", a.yaml:3:5): read /s/tls/tls.crt: no such file or directory`},
					want: []queued{{"cfg", Status{Commit: shaB, State: StatePending, Context: "legate/edge", Description: `revision h2 waiting to be served: secret "tls" (ref "tls", a.yaml:3:5): read /s/tls/tls.crt: no such file or directory`, TargetURL: url}}},
				},
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomeSuccess, Description: "accepted by 1 of 1 proxies"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StateSuccess, Context: "legate/edge", Description: "accepted by 1 of 1 proxies", TargetURL: url}}},
				},
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h2", Origin: origin("cfg", shaB), Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"},
					want: []queued{{"cfg", Status{Commit: shaB, State: StatePending, Context: "legate/edge", Description: "revision h2 published, waiting for the 1 connected proxy to answer", TargetURL: url}}},
				},
			},
		},
		{
			name: "an OCI artifact with a revision annotation reports on its commit",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: sources.Origin{Kind: sources.KindOCI, Source: "cfg", Commit: shaA, Digest: "sha256:00"}, Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "revision h1 published, waiting for the 1 connected proxy to answer", TargetURL: url}}},
				},
			},
		},
		{
			name: "a rollout says its step, then ends in success",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Rollout: true, Description: "rolling out, step 1/5 (10% of proxies)"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "rolling out, step 1/5 (10% of proxies)", TargetURL: url}}},
				},
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Rollout: true, Description: "rolling out, step 2/5 (10% of proxies)"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "rolling out, step 2/5 (10% of proxies)", TargetURL: url}}},
				},
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomeSuccess, Description: "accepted by 20 of 20 proxies"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StateSuccess, Context: "legate/edge", Description: "accepted by 20 of 20 proxies", TargetURL: url}}},
				},
			},
		},
		{
			name: "a rollout's failure names the step, the proxy and its text",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Rollout: true, Description: "rolling out, step 1/5 (10% of proxies)"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "rolling out, step 1/5 (10% of proxies)", TargetURL: url}}},
				},
				{
					in: revisions.Outcome{
						Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomeFailure, State: revisions.StateRollback, Rollout: true,
						Description: `rollout failed at step 1/5 (10% of proxies): proxy edge-7f9c rejected the candidate: route "api": unknown cluster "api-v2"; rolled back`,
					},
					want: []queued{{"cfg", Status{
						Commit: shaA, State: StateFailure, Context: "legate/edge", TargetURL: url,
						Description: `rollout failed at step 1/5 (10% of proxies): proxy edge-7f9c rejected the candidate: route "api": unknown cluster "api-v2"; rolled back`,
					}}},
				},
			},
		},
		{
			name: "a rollout's candidate superseded by a newer commit fails",
			steps: []step{
				{
					in:   revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Rollout: true, Description: "rolling out, step 2/5 (50% of proxies)"},
					want: []queued{{"cfg", Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "rolling out, step 2/5 (50% of proxies)", TargetURL: url}}},
				},
				{
					in: revisions.Outcome{Node: "edge", Hash: "h2", Origin: origin("cfg", shaB), Status: revisions.OutcomePending, Rollout: true, Description: "rolling out, step 1/5 (10% of proxies); superseded h1"},
					want: []queued{
						{"cfg", Status{Commit: shaA, State: StateFailure, Context: "legate/edge", Description: "superseded by bbbbbbbbbbbb during its rollout; never promoted", TargetURL: url}},
						{"cfg", Status{Commit: shaB, State: StatePending, Context: "legate/edge", Description: "rolling out, step 1/5 (10% of proxies); superseded h1", TargetURL: url}},
					},
				},
			},
		},
		{
			name: "no commit, no status",
			steps: []step{
				{in: revisions.Outcome{Node: "edge", Origin: sources.Origin{Kind: sources.KindOCI, Source: "cfg"}, Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFeedback(nil, map[string]bool{"cfg": true}, "https://legate.example", logr.Discard())
			for i, s := range tt.steps {
				assert.Equal(t, s.want, f.statuses(s.in), "step %d", i)
			}
		})
	}
}

func TestStatusOutboxOnBoltStore(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	ob := statusQueue{store}

	_, err = store.OutboxPut(ctx, "someone-else", []byte("x"))
	require.NoError(t, err)
	pending := Entry{Target: "cfg", Status: Status{Commit: shaA, State: StatePending, Context: "legate/edge"}}
	other := Entry{Target: "cfg", Status: Status{Commit: shaB, State: StatePending, Context: "legate/edge"}}
	success := Entry{Target: "cfg", Status: Status{Commit: shaA, State: StateSuccess, Context: "legate/edge"}}
	for _, e := range []Entry{pending, other, success} {
		_, err := ob.put(ctx, e)
		require.NoError(t, err)
	}
	got, err := ob.list(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2, "the newer state of a check replaces the queued one; other entries are not listed")
	assert.Equal(t, other.Status, got[0].Status)
	assert.Equal(t, success.Status, got[1].Status)
	assert.Less(t, got[0].Seq, got[1].Seq)

	require.NoError(t, ob.delete(ctx, got[0].Seq))
	got, err = ob.list(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, success.Status, got[0].Status)
	all, err := store.OutboxList(ctx, 0)
	require.NoError(t, err)
	assert.Len(t, all, 2, "the other reporter's entry is untouched")
}

// TestQueuedStatusesSurviveARestart queues statuses while the forge is down,
// closes the store as a stopping server does, and delivers them in order
// from a new dispatcher on the reopened store once the forge is back.
func TestQueuedStatusesSurviveARestart(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	up := false
	var got []string
	forgeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		got = append(got, path.Base(r.URL.Path)[:4]+" "+body["context"].(string)+" "+body["state"].(string))
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1}`))
	}))
	t.Cleanup(forgeSrv.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("forge-token-0123456789"), 0o600))
	rep, err := NewGitHub(Config{BaseURL: forgeSrv.URL + "/", Repository: "org/cfg", Token: SecretToken(sources.Secret{File: tokenFile})})
	require.NoError(t, err)
	reporters := map[string]Reporter{"cfg": rep}

	dir := filepath.Join(t.TempDir(), "store")
	store, err := boltstore.Open(dir)
	require.NoError(t, err)
	d := NewDispatcher(store, reporters, DispatcherOptions{})
	f := NewFeedback(d, map[string]bool{"cfg": true}, "", logr.Discard())
	f.Observe(revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"})
	f.Observe(revisions.Outcome{Node: "edge", Hash: "h1", Origin: origin("cfg", shaA), Status: revisions.OutcomeSuccess, Description: "ok"})
	f.Observe(revisions.Outcome{Node: "edge", Hash: "h2", Origin: origin("cfg", shaB), Status: revisions.OutcomePending, Description: "published, waiting for the 1 connected proxy to answer"})
	next, err := d.Flush(ctx)
	require.NoError(t, err)
	assert.False(t, next.IsZero(), "a retry is scheduled while the forge is down")
	require.NoError(t, store.Close())

	store, err = boltstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	mu.Lock()
	up = true
	mu.Unlock()
	d = NewDispatcher(store, reporters, DispatcherOptions{})
	_, err = d.Flush(ctx)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"aaaa legate/edge success", "bbbb legate/edge pending"}, got,
		"the newest state of each check, in order, after the restart")
}

func TestNoSecretReachesTheOutbox(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	rep, err := NewGitHub(Config{Repository: "org/cfg", Token: SecretToken(sources.Secret{Env: "UNUSED"})})
	require.NoError(t, err)
	d := NewDispatcher(store, map[string]Reporter{"cfg": rep}, DispatcherOptions{})
	f := NewFeedback(d, map[string]bool{"cfg": true}, "https://legate.example", logr.Discard())

	const ghToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	f.Observe(revisions.Outcome{
		Node: "edge", Origin: origin("cfg", shaA), Status: revisions.OutcomeFailure, State: revisions.StateRollback,
		Description: "rejected by 1 of 1 proxies; p: upstream https://bot:hunter2secret@git.example failed with Authorization: Bearer " + ghToken +
			" -----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----",
	})
	f.Observe(revisions.Outcome{
		Origin: origin("cfg", shaB), Status: revisions.OutcomeFailure,
		Diagnostics: []render.Diagnostic{{Pos: render.Position{File: "a.yaml", Line: 2}, Message: "password: s3cr3tvalue is not allowed"}},
	})
	entries, err := store.OutboxList(ctx, 0)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, e := range entries {
		for _, secret := range []string{ghToken, "hunter2secret", "MIIEvQ", "s3cr3tvalue"} {
			assert.NotContains(t, string(e.Value), secret)
		}
	}
	assert.Contains(t, string(entries[0].Value), "rolled back: rejected by 1 of 1 proxies")
}

// A state directory written before the forge package moved keeps its
// queued statuses: the key and the JSON shape are the same.
func TestStatusQueueReadsEntriesQueuedByEarlierVersions(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	key := "forge-status\x00cfg\x00" + shaA + "\x00legate/edge"
	raw := `{"seq":0,"target":"cfg","status":{"commit":"` + shaA + `","state":"pending","context":"legate/edge","description":"revision abc waits"}}`
	_, err = store.OutboxPut(ctx, key, []byte(raw))
	require.NoError(t, err)

	got, err := statusQueue{store}.list(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Entry{Seq: got[0].Seq, Target: "cfg", Status: Status{Commit: shaA, State: StatePending, Context: "legate/edge", Description: "revision abc waits"}}, got[0])

	// A newer state of the same check replaces it.
	_, err = statusQueue{store}.put(ctx, Entry{Target: "cfg", Status: Status{Commit: shaA, State: StateSuccess, Context: "legate/edge"}})
	require.NoError(t, err)
	all, err := store.OutboxList(ctx, 0)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, key, all[0].Key)
}

// TestRolloutFailureFitsTheForgesLimits: cut to GitHub's 140 characters,
// the smallest limit, a rollout's failure still names the step, the proxy
// and the start of its text.
func TestRolloutFailureFitsTheForgesLimits(t *testing.T) {
	desc := `rollout failed at step 1/5 (10% of proxies): proxy edge-7f9c rejected the candidate: route "api": unknown cluster "api-v2" ` + strings.Repeat("and more ", 40) + "; rolled back"
	st, err := prepare(Status{Commit: shaA, State: StateFailure, Context: "legate/edge", Description: desc}, GitHubDescriptionLimit)
	require.NoError(t, err)
	assert.LessOrEqual(t, utf8.RuneCountInString(st.Description), GitHubDescriptionLimit)
	assert.True(t, strings.HasPrefix(st.Description, `rollout failed at step 1/5 (10% of proxies): proxy edge-7f9c rejected the candidate: route "api": unknown cluster "api-v2"`), st.Description)
}
