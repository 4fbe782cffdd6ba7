package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An unknown flag of any subcommand names the closest one, its own or
// inherited; one close to nothing still says where the list is.
func TestUnknownFlagSuggestsTheClosest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--nod", "e"}, "unknown flag: --nod, did you mean --node? (legate validate --help lists the flags)"},
		{[]string{"status", "--sever", "x"}, "did you mean --server?"},
		{[]string{"serve", "--xds-adr", "x"}, "did you mean --xds-addr?"},
		{[]string{"controller", "--leader-elec"}, "did you mean --leader-elect?"},
		{[]string{"validate", "--zzzzzz"}, "unknown flag: --zzzzzz (legate validate --help lists the flags)"},
	} {
		cmd := newRootCommand()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
	}
}
