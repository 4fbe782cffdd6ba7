package cue

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrefilterAgreesWithCUE checks that the Go prefilter never passes a
// value CUE rejects, and that it recognizes the common shapes.
func TestPrefilterAgreesWithCUE(t *testing.T) {
	tests := []struct {
		expr       string
		imports    map[string]bool
		recognized bool
		values     []any
	}{
		{"string & strings.MinRunes(1)", map[string]bool{"strings": true}, true, []any{"", "a", "é", json.Number("1"), true}},
		{"string & strings.MaxRunes(2)", map[string]bool{"strings": true}, true, []any{"ab", "abc", "éé"}},
		{`string & =~"^[a-z]+$"`, nil, true, []any{"abc", "ABC", ""}},
		{`string & !~"\\."`, nil, true, []any{"a.b", "ab"}},
		{"(uint32 & <=65535) | " + intString, nil, true, []any{json.Number("80"), json.Number("70000"), json.Number("-1"), json.Number("1.5"), "80"}},
		{"(number & >0.0) | " + floatString + " | " + floatSpecial, nil, true, []any{json.Number("0.5"), json.Number("0"), json.Number("-2"), "NaN"}},
		{"int64 | " + intString, nil, true, []any{json.Number("9223372036854775807"), json.Number("9223372036854775808"), "12"}},
		{`"STATIC" | "EDS" | int32`, nil, false, []any{"STATIC", "NOPE"}},
		{`"" | (string & strings.MinRunes(3))`, map[string]bool{"strings": true}, false, []any{"", "ab"}},
	}
	withFastSchema(func(c *schemaCache) {
		for _, tt := range tests {
			pass := prefilter(tt.expr)
			assert.Equal(t, tt.recognized, pass != nil, tt.expr)
			if pass == nil {
				continue
			}
			l := c.leaf(tt.expr, tt.imports)
			c.compile(l)
			require.NoError(t, l.err)
			for _, v := range tt.values {
				cueOK := l.value.Unify(c.ctx.BuildExpr(toExpr(v))).Validate() == nil
				if pass(v) {
					assert.True(t, cueOK, "%s passes %#v but CUE rejects it", tt.expr, v)
				}
				numeric := strings.HasSuffix(tt.expr, intString) || strings.HasSuffix(tt.expr, floatSpecial)
				if _, isNum := v.(json.Number); cueOK && isNum == numeric {
					assert.True(t, pass(v), "%s: CUE accepts %#v, the prefilter should too", tt.expr, v)
				}
			}
		}
	})
}
