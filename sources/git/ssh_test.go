package git

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/legate-dev/legate/sources"
)

// sshGitServer is an in-process SSH server that runs git's own
// git-upload-pack for the repositories under root, for one client key.
type sshGitServer struct {
	addr    string
	hostKey ssh.PublicKey
}

func serveGitSSH(t *testing.T, root string, clientKey ssh.PublicKey) *sshGitServer {
	t.Helper()
	return serveSSH(t, clientKey, func(ch ssh.Channel, command string) uint32 {
		fields := strings.Fields(command)
		if len(fields) != 2 || fields[0] != "git-upload-pack" {
			return 1
		}
		repo := filepath.Join(root, filepath.Clean("/"+strings.Trim(fields[1], "'\"")))
		cmd := exec.Command("git-upload-pack", repo)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		if cmd.Run() != nil {
			return 1
		}
		return 0
	})
}

// serveSSH is an in-process SSH server for one client key that answers
// each exec request with run, which returns the command's exit status.
func serveSSH(t *testing.T, clientKey ssh.PublicKey, run func(ch ssh.Channel, command string) uint32) *sshGitServer {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(hostPriv)
	require.NoError(t, err)
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(clientKey.Marshal()) {
			return &ssh.Permissions{}, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSHConn(conn, cfg, run)
		}
	}()
	return &sshGitServer{addr: ln.Addr().String(), hostKey: signer.PublicKey()}
}

func serveSSHConn(conn net.Conn, cfg *ssh.ServerConfig, run func(ch ssh.Channel, command string) uint32) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range chReqs {
				if req.Type != "exec" || len(req.Payload) < 4 {
					_ = req.Reply(false, nil)
					continue
				}
				_ = req.Reply(true, nil)
				status := run(ch, string(req.Payload[4:]))
				_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
				return
			}
		}()
	}
}

func TestSSHWithKnownHosts(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t)
	c1 := repo.commit("one", map[string]string{"a.yaml": "1"})
	repo.git("clone", "-q", "--bare", repo.dir, filepath.Join(root, "cfg.git"))
	t.Setenv("PATH", filepath.Dir(strings.TrimSpace(repo.git("--exec-path"))+"/")+string(os.PathListSeparator)+os.Getenv("PATH"))

	keyFile, sshPub := sshKey(t)
	srv := serveGitSSH(t, root, sshPub)

	writeKnownHosts := func(key ssh.PublicKey) string {
		p := filepath.Join(t.TempDir(), "known_hosts")
		require.NoError(t, os.WriteFile(p, []byte(knownhosts.Line([]string{srv.addr}, key)+"\n"), 0o600))
		return p
	}
	_, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	otherSigner, err := ssh.NewSignerFromKey(otherPriv)
	require.NoError(t, err)

	url := "ssh://git@" + srv.addr + "/cfg.git"
	tests := []struct {
		name       string
		knownHosts string
		wantErr    string
	}{
		{"accepted host key", writeKnownHosts(srv.hostKey), ""},
		{"no known_hosts", "", "needs a known_hosts file"},
		{"missing known_hosts", filepath.Join(t.TempDir(), "absent"), "known_hosts file"},
		{"other host key", writeKnownHosts(otherSigner.PublicKey()), "is not accepted by known_hosts file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mustNew(t, Config{URL: url, Auth: Auth{SSHKey: sources.Secret{File: keyFile}, KnownHosts: tt.knownHosts}})
			res, err := src.Fetch(context.Background())
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "PRIVATE KEY")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c1, res.Origin.Commit)
			assert.Equal(t, "1", readAll(t, res.Files)["a.yaml"])
		})
	}
}

// A server that accepts the TCP connection and never sends its SSH banner
// must not wedge the source: the fetch fails within its timeout, and a
// fetch while the stalled one still hangs fails at once.
func TestSSHServerThatNeverAnswers(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			held <- c // accepted, never answered
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		close(held)
		for c := range held {
			_ = c.Close()
		}
	})

	_, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	require.NoError(t, err)
	keyFile := writeSecret(t, string(pem.EncodeToMemory(block)))
	hostPub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sshHost, err := ssh.NewPublicKey(hostPub)
	require.NoError(t, err)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(kh, []byte(knownhosts.Line([]string{lis.Addr().String()}, sshHost)+"\n"), 0o600))

	src := mustNew(t, Config{
		URL: "ssh://git@" + lis.Addr().String() + "/cfg.git", Timeout: 300 * time.Millisecond,
		Auth: Auth{SSHKey: sources.Secret{File: keyFile}, KnownHosts: kh},
	})
	errc := make(chan error, 1)
	go func() {
		_, err := src.Fetch(context.Background())
		errc <- err
	}()
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "did not answer within the fetch timeout")
	case <-time.After(30 * time.Second):
		t.Fatal("the fetch hangs on a server that never answers")
	}
	_, err = src.Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "still waiting on the network")
}
