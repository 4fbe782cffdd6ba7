package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/internal/legateproc"
)

// legateProc is `legate serve` running as a subprocess.
type legateProc struct {
	*legateproc.Proc
	xdsAddr  string
	httpAddr string
	http     *http.Client
}

// startLegate runs bin serve on repo with the poll interval given and
// waits until it is ready.
func startLegate(bin, repo, stateDir string, interval time.Duration, log io.Writer) (*legateProc, error) {
	xdsAddr, err := legateproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := legateproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	p := &legateProc{xdsAddr: xdsAddr, httpAddr: httpAddr, http: &http.Client{Timeout: 10 * time.Second}}
	p.Proc, err = legateproc.Start(bin, []string{
		"serve", "--git-url", repo, "--git-ref", "main", "--state-dir", stateDir,
		"--xds-addr", xdsAddr, "--http-addr", httpAddr, "--interval", interval.String(),
	}, log)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if p.Exited() {
			return nil, fmt.Errorf("legate exited on start: %v", p.State())
		}
		if legateproc.Answers(p.http, p.url("/readyz")) {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("legate did not become ready within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *legateProc) url(path string) string { return "http://" + p.httpAddr + path }

func (p *legateProc) stop() { p.Stop(15 * time.Second) }

// trigger asks legate to fetch the repository now.
func (p *legateProc) trigger() error {
	resp, err := p.http.Post(p.url("/api/v1/sources/default/fetch"), "application/json", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("fetch trigger answered %s", resp.Status)
	}
	return nil
}

func (p *legateProc) node() (statuspage.NodeView, error) {
	var n statuspage.NodeView
	resp, err := p.http.Get(p.url("/api/v1/nodes/" + benchNode))
	if err != nil {
		return n, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("node status answered %s", resp.Status)
	}
	return n, json.NewDecoder(resp.Body).Decode(&n)
}

// waitACK polls the status API until commit sha is published and a client
// has ACKed its route configuration, and returns when the server received
// that ACK (the status API's ackedAt).
func (p *legateProc) waitACK(sha string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := p.node()
		if err == nil && n.Published != nil && n.Published.Commit == sha {
			for _, px := range n.Proxies {
				for _, ts := range px.Types {
					if ts.TypeURL == resourcev3.RouteType && ts.AckedSnapshot == n.Published.Version {
						return ts.AckedAt, nil
					}
				}
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return time.Time{}, fmt.Errorf("commit %s not ACKed within %v: %w", sha, timeout, err)
			}
			return time.Time{}, fmt.Errorf("commit %s not ACKed within %v", sha, timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rss is the process's resident set size in bytes (VmRSS).
func (p *legateProc) rss() (int64, error) {
	return procStatus(p.Pid(), "VmRSS:")
}

func procStatus(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// metrics reads the values of the named series (name with labels, as
// /metrics prints them).
func (p *legateProc) metrics(series ...string) (map[string]float64, error) {
	resp, err := p.http.Get(p.url("/metrics"))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	want := map[string]bool{}
	for _, s := range series {
		want[s] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", name, err)
		}
		out[name] = v
	}
	return out, sc.Err()
}
