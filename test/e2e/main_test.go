package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/legate-dev/legate/test/internal/legateproc"
)

// legateBin is the legate binary built once for the whole package.
var legateBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "legate-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create a directory for the legate binary:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	legateBin, err = legateproc.Build(dir, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(os.Stderr, "the end-to-end tests need the git CLI:", err)
		return 1
	}
	return m.Run()
}
