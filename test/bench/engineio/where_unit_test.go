package engineio

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command name may hold spaces and parentheses: the fields after it
// are found from the last closing parenthesis.
func TestCommOf(t *testing.T) {
	line := []byte("4242 (kube (api) server) S 4000 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 12 0 100 0 0")
	name, rest, ok := commOf(line)
	require.True(t, ok)
	assert.Equal(t, "kube (api) server", name)
	require.Len(t, rest, 22)
	assert.Equal(t, "S", rest[0])
	assert.Equal(t, "4000", rest[1], "the parent")
	assert.Equal(t, "250", rest[11], "utime")
	assert.Equal(t, "31", rest[12], "stime")

	_, _, ok = commOf([]byte("4242 no parentheses"))
	assert.False(t, ok)
}

// cpuUse finds the processes the test started (as envtest starts
// kube-apiserver and etcd) by their parent, and the test's own.
func TestCPUUseFindsChildren(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	child := exec.Command("sleep", "30")
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", os.Getppid()))
	require.NoError(t, err)
	parent, _, ok := commOf(raw)
	require.True(t, ok)
	require.NotEqual(t, "sleep", parent)
	use := cpuUse()
	assert.Contains(t, use, "self")
	assert.Contains(t, use, "sleep")
	assert.NotContains(t, use, parent, "the test's own parent is not its child")
}
