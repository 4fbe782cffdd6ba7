package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/gitea"
)

const marker = "<!-- legate-preview: cfg -->"

func TestCutComment(t *testing.T) {
	long := strings.Repeat("line of the preview\n", 5000)
	tests := []struct {
		name  string
		body  string
		limit int
		cut   bool
	}{
		{"short stays", "hello", 100, false},
		{"exactly at the limit stays", strings.Repeat("é", 100), 100, false},
		{"long is cut", long, 1000, true},
		{"open code fence is closed", "```diff\n" + long, 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CutComment(tt.body, tt.limit)
			assert.LessOrEqual(t, utf8.RuneCountInString(got), tt.limit+4)
			if !tt.cut {
				assert.Equal(t, tt.body, got)
				return
			}
			assert.Contains(t, got, "cut here")
			assert.Equal(t, 0, strings.Count(got, "```")%2, "fences are balanced")
		})
	}
}

// commentForge is a fake GitHub or GitLab holding comments, which answers
// list, create and edit as the real APIs do.
type commentForge struct {
	mu       sync.Mutex
	comments map[int64]string // id -> body
	next     int64
	edits    int
	creates  int
	huge     bool // answer lists with more than legate reads
}

func (f *commentForge) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token && r.Header.Get("PRIVATE-TOKEN") != token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var in struct {
			Body string `json:"body"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		type out struct {
			ID   int64  `json:"id"`
			Body string `json:"body"`
		}
		switch r.Method {
		case http.MethodGet:
			if f.huge {
				_, _ = io.WriteString(w, "["+strings.Repeat(`{"id":1,"body":"x"},`, maxResponseBytes/20)+`{"id":1}]`)
				return
			}
			list := []out{}
			for id, b := range f.comments {
				list = append(list, out{id, b})
			}
			_ = json.NewEncoder(w).Encode(list)
		case http.MethodPost:
			f.next++
			f.creates++
			f.comments[f.next] = in.Body
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(out{f.next, in.Body})
		case http.MethodPatch, http.MethodPut:
			var id int64
			_, _ = fmt.Sscanf(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:], "%d", &id)
			if _, ok := f.comments[id]; !ok {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			f.edits++
			f.comments[id] = in.Body
			_ = json.NewEncoder(w).Encode(out{id, in.Body})
		}
	})
}

// TestCommentEditedInPlace: GitHub and GitLab clients find legate's
// comment by its marker and edit it; a person's comment that quotes the
// marker is left alone; the token never reaches a comment.
func TestCommentEditedInPlace(t *testing.T) {
	tok := func(context.Context) (string, error) { return token, nil }
	for _, p := range []Provider{ProviderGitHub, ProviderGitLab} {
		t.Run(string(p), func(t *testing.T) {
			f := &commentForge{comments: map[int64]string{1: "> " + marker + "\nI disagree"}, next: 1}
			srv := httptest.NewServer(f.handler())
			t.Cleanup(srv.Close)
			base := srv.URL
			if p == ProviderGitHub {
				base += "/api/v3/"
			}
			rep, err := New(p, Config{BaseURL: base, Repository: "team/envoy", Token: tok})
			require.NoError(t, err)
			cm := rep.(Commenter)
			ctx := context.Background()
			require.NoError(t, cm.UpsertComment(ctx, Comment{Number: 4, Marker: marker, Body: marker + "\nfirst"}))
			require.NoError(t, cm.UpsertComment(ctx, Comment{Number: 4, Marker: marker, Body: marker + "\nsecond, token " + token}))
			require.NoError(t, cm.UpsertComment(ctx, Comment{Number: 4, Marker: marker, Body: marker + "\nsecond, token " + token}))
			f.mu.Lock()
			defer f.mu.Unlock()
			assert.Equal(t, 1, f.creates, "one comment created")
			assert.Equal(t, 1, f.edits, "edited once; an equal body is not sent again")
			assert.Equal(t, "> "+marker+"\nI disagree", f.comments[1], "a person's comment is left alone")
			assert.True(t, strings.HasPrefix(f.comments[2], marker+"\nsecond"))
			assert.NotContains(t, f.comments[2], token)
		})
	}
}

// TestCommentAnswersBounded: a list answer over maxResponseBytes is not
// read whole; the error names the pull request and not the token.
func TestCommentAnswersBounded(t *testing.T) {
	f := &commentForge{comments: map[int64]string{}, huge: true}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	rep, err := NewGitHub(Config{BaseURL: srv.URL + "/api/v3/", Repository: "team/envoy", Token: func(context.Context) (string, error) { return token, nil }})
	require.NoError(t, err)
	err = rep.UpsertComment(context.Background(), Comment{Number: 4, Marker: marker, Body: "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "comment on pull request 4 of team/envoy")
	assert.Contains(t, err.Error(), errTooLarge.Error())
	assert.NotContains(t, err.Error(), token)
	assert.Zero(t, f.creates)
}

// TestCommentsThroughDispatcher: a comment queued twice before delivery
// is posted once, with the newer body, in order with the statuses.
func TestCommentsThroughDispatcher(t *testing.T) {
	f := &commentForge{comments: map[int64]string{}}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	rep, err := NewGitLab(Config{BaseURL: srv.URL, Repository: "team/envoy", Token: func(context.Context) (string, error) { return token, nil }})
	require.NoError(t, err)
	d := NewDispatcher(NewMemOutbox(), map[string]Reporter{"cfg": rep}, DispatcherOptions{Clock: clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))})
	ctx := context.Background()
	require.NoError(t, d.EnqueueComment(ctx, "cfg", Comment{Number: 4, Marker: marker, Body: "old"}))
	require.NoError(t, d.EnqueueComment(ctx, "cfg", Comment{Number: 4, Marker: marker, Body: "new"}))
	_, err = d.Flush(ctx)
	require.NoError(t, err)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Equal(t, 1, f.creates)
	assert.Equal(t, map[int64]string{1: marker + "\nnew"}, f.comments)
}

// TestGiteaCommentEditedInPlace edits one comment on a real Gitea pull
// request, over pushes, and cuts one over the limit.
func TestGiteaCommentEditedInPlace(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{})
	repo := srv.CreateRepo("comments")
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	run("init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o600))
	run("add", "-A")
	run("-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m", "one")
	run("push", "-q", srv.PushURL(repo), "main")
	run("checkout", "-q", "-b", "feature")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 2\n"), 0o600))
	run("-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-am", "two")
	run("push", "-q", srv.PushURL(repo), "feature")
	pr := srv.OpenPullRequest(repo, "feature", "main", "change a")
	srv.AddComment(repo, pr.Number, "> "+marker+"\nquoting legate")

	tokFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokFile, []byte(srv.Token), 0o600))
	rep, err := NewGitea(Config{BaseURL: srv.URL, Repository: repo.FullName, Token: SecretToken(sources.Secret{File: tokFile})})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, rep.UpsertComment(ctx, Comment{Number: pr.Number, Marker: marker, Body: marker + "\nfirst push"}))
	require.NoError(t, rep.UpsertComment(ctx, Comment{Number: pr.Number, Marker: marker, Body: marker + "\nsecond push " + srv.Token}))
	got, err := srv.Comments(repo, pr.Number)
	require.NoError(t, err)
	require.Len(t, got, 2, "the person's comment and legate's one")
	assert.Equal(t, "> "+marker+"\nquoting legate", got[0].Body)
	assert.True(t, strings.HasPrefix(got[1].Body, marker+"\nsecond push"), got[1].Body)
	assert.NotContains(t, got[1].Body, srv.Token)

	require.NoError(t, rep.UpsertComment(ctx, Comment{Number: pr.Number, Marker: marker, Body: marker + "\n" + strings.Repeat("resource changed\n", 10000)}))
	got, err = srv.Comments(repo, pr.Number)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.LessOrEqual(t, utf8.RuneCountInString(got[1].Body), GiteaCommentLimit)
	assert.Contains(t, got[1].Body, "cut here")
}
