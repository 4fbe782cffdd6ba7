package sources

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRefStringIsThePipelineSourceName(t *testing.T) {
	// The string form is stored in revisions and ownership records: it
	// must stay byte-for-byte what earlier releases wrote.
	assert.Equal(t, "envoyconfig/team-a/edge", EnvoyConfigRef("team-a", "edge").String())
	assert.Equal(t, "envoysource/team-a/repo", EnvoySourceRef("team-a", "repo").String())
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
		ok   bool
	}{
		{in: "envoyconfig/ns/name", want: EnvoyConfigRef("ns", "name"), ok: true},
		{in: "envoysource/ns/name", want: EnvoySourceRef("ns", "name"), ok: true},
		{in: "gitrepository/ns/name"},
		{in: "envoyconfig/ns"},
		{in: "envoyconfig//name"},
		{in: "envoyconfig/ns/"},
		{in: "envoyconfig/ns/a/b"},
		{in: "EnvoyConfig/ns/name"},
		{in: "edge"},
		{in: ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseRef(tc.in)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
			if ok {
				assert.Equal(t, tc.in, got.String(), "a parsed name prints as it was read")
			}
		})
	}
}
