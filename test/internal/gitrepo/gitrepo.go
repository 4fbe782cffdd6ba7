// Package gitrepo drives local Git repositories with the git CLI for
// legate's end-to-end tests and benchmarks: create a repository on branch
// main, write files, commit them and read back the commit SHA. The plain
// functions return errors, for benchmark commands; Repo fails a test
// instead.
package gitrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Git runs git with args in dir, isolated from the machine's system
// configuration and never prompting, and returns its trimmed output.
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// Init creates a repository on branch main in dir (which must exist) whose
// commits are authored by name <email> and never signed.
func Init(dir, name, email string) error {
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", name},
		{"config", "user.email", email},
		{"config", "commit.gpgsign", "false"},
	} {
		if _, err := Git(dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes files (path relative to dir -> content) into dir,
// creating the directories they need.
func WriteFiles(dir string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("create the directory of %s: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// CommitAll stages everything in the work tree of dir, commits it with msg
// (also when nothing changed) and returns the commit SHA.
func CommitAll(dir, msg string) (string, error) {
	if _, err := Git(dir, "add", "-A"); err != nil {
		return "", err
	}
	if _, err := Git(dir, "commit", "-q", "--allow-empty", "-m", msg); err != nil {
		return "", err
	}
	return Git(dir, "rev-parse", "HEAD")
}

// Repo is a repository in a test's temporary directory; its methods fail
// the test when git fails.
type Repo struct {
	t testing.TB
	// Dir is the work tree.
	Dir string
}

// New creates a repository on branch main in a fresh temporary directory
// whose commits are authored by name <email>.
func New(t testing.TB, name, email string) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	require.NoError(t, Init(r.Dir, name, email))
	return r
}

// Git runs git with args in the repository and returns its trimmed output.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	out, err := Git(r.Dir, args...)
	require.NoError(r.t, err)
	return out
}

// Commit writes files (path relative to the repository -> content) and
// commits the work tree with msg; it returns the commit SHA.
func (r *Repo) Commit(msg string, files map[string]string) string {
	r.t.Helper()
	require.NoError(r.t, WriteFiles(r.Dir, files))
	sha, err := CommitAll(r.Dir, msg)
	require.NoError(r.t, err)
	return sha
}
