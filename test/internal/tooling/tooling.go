// Package tooling finds the real components that legate's tests run against
// (kube-apiserver and etcd for envtest, Gitea) and decides whether a test
// whose tool is missing may skip: outside `make test` it skips with a clear
// message; under `make test` (LEGATE_REQUIRE_TOOLS=1) a missing tool fails.
package tooling

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Required reports whether the tests run under `make test`, where every tool
// must be present.
func Required() bool { return os.Getenv("LEGATE_REQUIRE_TOOLS") == "1" }

// Missing skips the test, or fails it under `make test`, because a tool is
// not available.
func Missing(t testing.TB, tool, why string) {
	t.Helper()
	msg := tool + " is not available (" + why + "); run `make tools` or use `make test`"
	if Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RepoRoot returns the root of the legate checkout (the directory holding
// the main go.mod).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/legate-dev/legate\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no legate go.mod above the working directory")
		}
		dir = parent
	}
}

// BinDir is the repository's bin/ directory, where `make tools` builds.
func BinDir() string {
	root, err := RepoRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(root, "bin")
}

// Find looks for an executable: first the path in the environment variable
// env, then bin/<name> in the checkout, then <name> on PATH.
func Find(env, name string) (string, bool) {
	if p := os.Getenv(env); p != "" {
		if isExecutable(p) {
			return p, true
		}
		return "", false
	}
	if dir := BinDir(); dir != "" {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, true
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	return "", false
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
