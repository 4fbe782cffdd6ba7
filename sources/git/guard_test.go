package git

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// A guarded source does not reach a loopback server over HTTP, whether
// the URL names its address or a name resolving to it; allowed, it does.
func TestGuardedHTTPFetch(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t)
	c1 := repo.commit("one", map[string]string{"a.yaml": "1"})
	repo.git("clone", "-q", "--bare", repo.dir, filepath.Join(root, "cfg.git"))
	var hits atomic.Int32
	srv := serveGitHTTP(t, root, func(*http.Request) bool { hits.Add(1); return true })
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	for _, u := range []string{srv.URL + "/cfg.git", byName + "/cfg.git"} {
		src := mustNew(t, Config{URL: u, Guard: netguard.New(nil, "allow it with --fetch-allow-networks")})
		_, err := src.Fetch(context.Background())
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "resolves to a loopback address, which legate does not fetch from: allow it with --fetch-allow-networks")
		assert.NotContains(t, err.Error(), "connection refused")
	}
	assert.Zero(t, hits.Load(), "the server saw no request")

	src := mustNew(t, Config{URL: byName + "/cfg.git", Guard: netguard.New(loopback, "")})
	res, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, c1, res.Origin.Commit)
}

// A redirect to another host is not followed by a guarded source.
func TestGuardedFetchFollowsNoRedirectToAnotherHost(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t)
	repo.commit("one", map[string]string{"a.yaml": "1"})
	repo.git("clone", "-q", "--bare", repo.dir, filepath.Join(root, "cfg.git"))
	target := serveGitHTTP(t, root, nil)
	elsewhere := strings.Replace(target.URL, "127.0.0.1", "localhost", 1)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(redirect.Close)

	src := mustNew(t, Config{URL: redirect.URL + "/cfg.git", Guard: netguard.New(loopback, "")})
	_, err := src.Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redirect from 127.0.0.1 to localhost refused")
	assert.Zero(t, target.fetches.Load())

	unguarded := mustNew(t, Config{URL: redirect.URL + "/cfg.git"})
	_, err = unguarded.Fetch(context.Background())
	assert.NoError(t, err, "legate serve follows it as before")
}

// SSH is dialled through the guard too: refused before any byte is
// exchanged, and fetched when allowed.
func TestGuardedSSHFetch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	keyFile, pub := sshKey(t)
	src := mustNew(t, Config{
		URL:   "ssh://git@" + ln.Addr().String() + "/cfg.git",
		Auth:  Auth{SSHKey: sources.Secret{File: keyFile}, KnownHosts: writeKnownHostsFile(t, ln.Addr().String(), pub)},
		Guard: netguard.New(nil, ""),
	})
	_, err = src.Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resolves to a loopback address")
	assert.Zero(t, accepted.Load(), "no connection was made")

	root := t.TempDir()
	repo := newTestRepo(t)
	c1 := repo.commit("one", map[string]string{"a.yaml": "1"})
	repo.git("clone", "-q", "--bare", repo.dir, filepath.Join(root, "cfg.git"))
	t.Setenv("PATH", filepath.Dir(strings.TrimSpace(repo.git("--exec-path"))+"/")+string(os.PathListSeparator)+os.Getenv("PATH"))
	srv := serveGitSSH(t, root, pub)
	allowed := mustNew(t, Config{
		URL:   "ssh://git@" + srv.addr + "/cfg.git",
		Auth:  Auth{SSHKey: sources.Secret{File: keyFile}, KnownHosts: writeKnownHostsFile(t, srv.addr, srv.hostKey)},
		Guard: netguard.New(loopback, ""),
	})
	res, err := allowed.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, c1, res.Origin.Commit)
}

// Local repositories are refused outright when guarded.
func TestGuardedSourceRefusesLocalRepositories(t *testing.T) {
	for _, u := range []string{"file:///etc", "/var/lib/repo"} {
		_, err := New(Config{Name: "x", URL: u, StateDir: t.TempDir(), Guard: netguard.New(nil, "")})
		assert.ErrorContains(t, err, "fetches over https, http or ssh only here", u)
		_, err = New(Config{Name: "x", URL: u, StateDir: t.TempDir()})
		assert.NoError(t, err, u)
	}
}

func sshKey(t *testing.T) (string, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	return writeSecret(t, string(pem.EncodeToMemory(block))), sshPub
}

func writeKnownHostsFile(t *testing.T, addr string, key ssh.PublicKey) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(p, []byte(knownhosts.Line([]string{addr}, key)+"\n"), 0o600))
	return p
}

// A server whose ref advertisement goes on past the bound fails the fetch
// at the bound, saying so, instead of having all of it held.
func TestRefAdvertisementBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/info/refs") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_, _ = io.WriteString(w, "001e# service=git-upload-pack\n0000")
		sha := strings.Repeat("1", 40)
		first := sha + " HEAD\x00multi_ack ofs-delta side-band-64k\n"
		_, _ = fmt.Fprintf(w, "%04x%s", len(first)+4, first)
		var page strings.Builder
		for i := range 1000 {
			line := fmt.Sprintf("%s refs/heads/b%07d\n", sha, i)
			fmt.Fprintf(&page, "%04x%s", len(line)+4, line)
		}
		for written := 0; written <= maxAdvertisement; written += page.Len() {
			if _, err := io.WriteString(w, page.String()); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, "0000")
	}))
	t.Cleanup(srv.Close)
	_, err := mustNew(t, Config{URL: srv.URL + "/cfg.git"}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the ref advertisement of "+strings.TrimPrefix(srv.URL, "http://")+" is over 32 MiB")
}
