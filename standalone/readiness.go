package standalone

import (
	"fmt"
	"net/http"
	"strings"
)

// readiness reports whether every source has finished its first fetch
// attempt, and one line per source saying where it stands: a readiness
// probe that fails says which source it waits for, and one that passes
// still shows a source whose fetch failed.
func (s *Server) readiness() (ready bool, lines []string) {
	ready = true
	for _, l := range s.loops {
		l.mu.Lock()
		tried := l.tried
		l.mu.Unlock()
		st := l.snapshot()
		var line string
		switch {
		case st.Suspended:
			line = fmt.Sprintf("source %s: suspended", st.Name)
		case !tried:
			ready = false
			line = fmt.Sprintf("source %s: waiting for its first fetch", st.Name)
		case st.LastError != "":
			line = fmt.Sprintf("source %s: fetched %s; error: %s", st.Name, dashIfEmpty(st.Revision), st.LastError)
		default:
			line = fmt.Sprintf("source %s: fetched %s", st.Name, dashIfEmpty(st.Revision))
		}
		lines = append(lines, line)
	}
	return ready, lines
}

// serveReadiness is GET /readyz: 200 once every source was fetched once
// (successfully or not), 503 before; the body says where each source
// stands.
func (s *Server) serveReadiness(w http.ResponseWriter, _ *http.Request) {
	ready, lines := s.readiness()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not ready: waiting for the first fetch of every source\n%s\n", strings.Join(lines, "\n"))
		return
	}
	if len(lines) == 0 {
		_, _ = w.Write([]byte("ok: no sources configured\n"))
		return
	}
	_, _ = fmt.Fprintf(w, "ok\n%s\n", strings.Join(lines, "\n"))
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
