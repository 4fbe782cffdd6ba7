package gitea

// The web server's process: started, moved off a port someone took,
// stopped and watched.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/legate-dev/legate/test/internal/legateproc"
)

// errPortTaken is a web server that could not bind its port.
var errPortTaken = errors.New("its port was taken by another process")

// maxPortAttempts bounds the ports the first start tries.
const maxPortAttempts = 5

// Start starts (or restarts after Stop) the web server and waits until its
// API answers.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("start gitea on %s: %v", s.addr, err)
	}
}

// start starts the web server and waits until its API answers; a server
// that cannot bind its port is stopped and errPortTaken returned.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	cmd := exec.Command(s.binary, "web", "--config", s.config)
	cmd.Dir = s.workDir
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s.logs = &legateproc.Output{}
	cmd.Stdout = s.logs
	cmd.Stderr = s.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start gitea web: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done

	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("gitea exited while starting:\n%s", s.logs.String())
		default:
		}
		if strings.Contains(s.logs.String(), "address already in use") {
			s.stopLocked()
			return fmt.Errorf("gitea on %s: %w", s.addr, errPortTaken)
		}
		resp, err := startClient.Get(s.URL + "api/v1/version")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			return fmt.Errorf("gitea did not answer on %s within %s:\n%s", s.URL, startTimeout, s.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// usePort moves the instance, stopped, to another port.
func (s *Server) usePort(port int) error {
	data, err := os.ReadFile(s.config)
	if err != nil {
		return err
	}
	ini := httpPort.ReplaceAllString(string(data), "${1}"+strconv.Itoa(port))
	ini = rootURL.ReplaceAllString(ini, "${1}"+strconv.Itoa(port)+"/")
	if err := os.WriteFile(s.config, []byte(ini), 0o600); err != nil {
		return err
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.URL = "http://" + s.addr + "/"
	return nil
}

// startClient asks whether Gitea answers; a process that took its port
// may never answer at all.
var startClient = &http.Client{Timeout: 2 * time.Second}

var (
	httpPort = regexp.MustCompile(`(?m)^(HTTP_PORT = )\d+`)
	rootURL  = regexp.MustCompile(`(?m)^(ROOT_URL = http://127\.0\.0\.1:)\d+/`)
)

// Stop terminates the web server (SIGTERM, then SIGKILL of its process
// group) and waits for it to exit. The data stays; Start serves it again.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

// stopLocked is Stop with s.mu held.
func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.done
	}
	// Children (git processes) of the group must not outlive it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	s.cmd = nil
}

// Running reports whether the web server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Pid is the web server's process id, or 0 when stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Logs returns what Gitea printed so far.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		return ""
	}
	return s.logs.String()
}

// freePort is a loopback port nobody listened on a moment ago (a variable:
// a test hands out a taken one).
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
