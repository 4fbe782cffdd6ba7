package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/bootstrap"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/standalone"
)

// TestMain lets the test run this command as its own process: grpc-go
// reads GRPC_XDS_BOOTSTRAP when the process starts, as it does for a user.
func TestMain(m *testing.M) {
	if os.Getenv("GREETER_RUN_MAIN") == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("GREETER_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestGreeterThroughLegate serves examples/grpc from a Git repository with
// legate serve, starts the example's backend, writes the client's bootstrap
// as `legate bootstrap grpc` does and runs the example's client, which must
// reach the backend through the configuration legate serves.
func TestGreeterThroughLegate(t *testing.T) {
	// The backend, as `greeter serve` runs it.
	pr, pw := io.Pipe()
	go func() { _ = run([]string{"serve", "-addr", "127.0.0.1:0"}, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	backend := strings.TrimSpace(strings.TrimPrefix(line, "greeter backend serving on "))
	_, port, ok := strings.Cut(backend, ":")
	require.True(t, ok, line)

	// examples/grpc as written, with the backend's port moved.
	repo := t.TempDir()
	for _, name := range []string{"legate.yaml", "greeter.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", name))
		require.NoError(t, err)
		text := string(data)
		if name == "greeter.yaml" {
			require.Contains(t, text, "port_value: 8081", "the example names the backend's default port")
			text = strings.ReplaceAll(text, "port_value: 8081", "port_value: "+port)
		}
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(text), 0o600))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@legate.invalid", "commit", "-qm", "greeter"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}

	srv, err := standalone.New(serveconfig.Config{
		StateDir: t.TempDir(), XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Sources: []serveconfig.SourceConfig{{Name: "grpc", Git: &serveconfig.GitSource{URL: repo}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, standalone.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	bs, err := bootstrap.GRPC(bootstrap.Options{Node: "grpc-client", XDSAddr: srv.XDSAddr(), Pod: "example"})
	require.NoError(t, err)
	bsFile := filepath.Join(t.TempDir(), "grpc-bootstrap.json")
	require.NoError(t, os.WriteFile(bsFile, bs, 0o600))

	runCtx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	client := exec.CommandContext(runCtx, os.Args[0])
	client.Env = append(os.Environ(), "GREETER_RUN_MAIN=1", "GREETER_ARGS=call -n 2", "GRPC_XDS_BOOTSTRAP="+bsFile)
	out, err := client.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "call 1: "+backend+" answered SERVING")
	assert.Contains(t, string(out), "call 2: "+backend+" answered SERVING")

	// -every keeps calling until interrupted, and stops cleanly on it.
	every := exec.CommandContext(runCtx, os.Args[0])
	every.Env = append(os.Environ(), "GREETER_RUN_MAIN=1", "GREETER_ARGS=call -every 50ms", "GRPC_XDS_BOOTSTRAP="+bsFile)
	stdout, err := every.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, every.Start())
	lines := bufio.NewScanner(stdout)
	calls := 0
	for calls < 3 && lines.Scan() {
		if strings.Contains(lines.Text(), "answered SERVING") {
			calls++
		}
	}
	require.Equal(t, 3, calls, "the client keeps calling")
	require.NoError(t, every.Process.Signal(os.Interrupt))
	for lines.Scan() { // drain until it exits
	}
	assert.NoError(t, every.Wait(), "an interrupt ends the calls without an error")

	n, ok := srv.Engine().Node("grpc-client")
	require.True(t, ok)
	assert.NotNil(t, n.Published, "legate serves node grpc-client")
}

func TestCallWithoutBootstrapSaysWhatToDo(t *testing.T) {
	t.Setenv("GRPC_XDS_BOOTSTRAP", "")
	err := run([]string{"call"}, io.Discard)
	assert.ErrorContains(t, err, "legate bootstrap grpc --node grpc-client")
}
