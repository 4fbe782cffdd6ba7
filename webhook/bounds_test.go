package webhook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The drain time is whole seconds from 0 to 3 600 (docs/injection.md):
// both ends are taken, one second past either is refused by name.
func TestDrainTimeBounds(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   string
	}{
		{value: "0", want: 0},
		{value: "1", want: time.Second},
		{value: "3600", want: time.Hour},
		{value: "3601", err: `annotation legate.dev/shutdown-manager.drain-time: "3601": want whole seconds from 0 to 3600`},
		{value: "86400", err: `"86400": want whole seconds from 0 to 3600`},
		{value: "-1", err: `"-1": want whole seconds from 0 to 3600`},
		{value: "1.5", err: `"1.5": want whole seconds from 0 to 3600`},
		{value: "30s", err: `"30s": want whole seconds from 0 to 3600`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			s, err := Parse(map[string]string{"legate.dev/node-id": "edge", "legate.dev/shutdown-manager.drain-time": tc.value})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.DrainTime)
		})
	}
}

// A key under MARIN3R's prefix that neither legate nor MARIN3R knows is
// refused by name, as under legate's own: a typo must not be ignored.
func TestUnknownMARIN3RAnnotationIsRefused(t *testing.T) {
	for _, name := range []string{"marin3r.3scale.net/no-such-thing", "marin3r.3scale.net/colour", "legate.dev/no-such-thing"} {
		_, err := Parse(map[string]string{"legate.dev/node-id": "edge", name: "x"})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "unknown annotation "+name+": want one of", name)
	}
	// Keys of other prefixes are not ours: ignored.
	s, err := Parse(map[string]string{"marin3r.3scale.net/node-id": "edge", "marin3r.example/no-such-thing": "x", "3scale.net/no-such-thing": "x"})
	require.NoError(t, err)
	assert.Equal(t, "edge", s.NodeID)
}
