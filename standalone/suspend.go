package standalone

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// suspendedFile lists the suspended sources under the state directory.
const suspendedFile = "suspended.json"

// loadSuspended marks the sources suspended before the last stop.
func (s *Server) loadSuspended() error {
	data, err := os.ReadFile(filepath.Join(s.cfg.StateDir, suspendedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read suspended sources: %w", err)
	}
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return fmt.Errorf("read suspended sources from %s: %w", suspendedFile, err)
	}
	for _, l := range s.loops {
		if slices.Contains(names, l.cfg.Name) {
			l.mu.Lock()
			l.status.Suspended = true
			l.mu.Unlock()
		}
	}
	return nil
}

// setSuspended suspends or resumes a source and persists the list.
func (s *Server) setSuspended(name string, suspend bool) error {
	s.suspendMu.Lock()
	defer s.suspendMu.Unlock()
	var names []string
	for _, l := range s.loops {
		l.mu.Lock()
		if l.cfg.Name == name {
			l.status.Suspended = suspend
		}
		if l.status.Suspended {
			names = append(names, l.cfg.Name)
		}
		l.mu.Unlock()
	}
	data, err := json.Marshal(nonNil(names))
	if err != nil {
		return err
	}
	path := filepath.Join(s.cfg.StateDir, suspendedFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("save suspended sources: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save suspended sources: %w", err)
	}
	return nil
}

func (l *sourceLoop) isSuspended() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status.Suspended
}
