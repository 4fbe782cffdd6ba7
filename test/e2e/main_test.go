package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
	legateBin = filepath.Join(dir, "legate")
	build := exec.Command("go", "build", "-o", legateBin, "github.com/legate-dev/legate/cmd/legate")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build legate:", err)
		return 1
	}
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(os.Stderr, "the end-to-end tests need the git CLI:", err)
		return 1
	}
	return m.Run()
}
