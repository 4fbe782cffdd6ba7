// Package legateproc builds the legate binary and runs `legate serve` as a
// subprocess for legate's end-to-end tests and benchmarks: free loopback
// addresses to give it, start, readiness, signals and shutdown. Functions
// that return errors serve benchmark commands; those taking testing.TB fail
// the test instead.
package legateproc

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FreeAddr returns a loopback address with a port nobody listens on at the
// time of the call (the binary binds it right after).
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free loopback port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("release loopback port %s: %w", addr, err)
	}
	return addr, nil
}

// LoopbackAddr is FreeAddr for a test.
func LoopbackAddr(t testing.TB) string {
	t.Helper()
	addr, err := FreeAddr()
	require.NoError(t, err)
	return addr
}

// Build compiles ./cmd/legate into dir/legate, writing the compiler's
// output to log, and returns the binary's path.
func Build(dir string, log io.Writer) (string, error) {
	bin := filepath.Join(dir, "legate")
	build := exec.Command("go", "build", "-o", bin, "github.com/legate-dev/legate/cmd/legate")
	build.Stdout, build.Stderr = log, log
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build legate: %w", err)
	}
	return bin, nil
}

// Proc is a running legate binary.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs bin with args, its output going to out.
func Start(bin string, args []string, out io.Writer) (*Proc, error) {
	p := &Proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start legate: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// State is how the process exited; nil while it runs.
func (p *Proc) State() *os.ProcessState {
	if !p.Exited() {
		return nil
	}
	return p.cmd.ProcessState
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM, kills the process when it has not exited after
// grace, and waits for it.
func (p *Proc) Stop(grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill kills the process unless it has exited, and waits for it.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Answers reports whether GET url answers 200 OK.
func Answers(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady waits until GET url answers 200 OK, polling every poll for at
// most wait, and fails the test when the process exits first.
func (p *Proc) WaitReady(t testing.TB, url string, wait, poll time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		return p.Exited() || Answers(http.DefaultClient, url)
	}, wait, poll, "legate answers %s", url)
	if p.Exited() {
		require.FailNow(t, "legate exited on start", "state: %v", p.State())
	}
}
