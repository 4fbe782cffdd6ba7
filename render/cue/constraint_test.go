package cue

import (
	"encoding/json"
	"testing"

	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChecksAgreeWithCUE checks that the Go check made from a generated
// expression never passes a value its CUE text rejects, that it passes the
// common values CUE accepts, and that the text is the CUE the schema has
// always had.
func TestChecksAgreeWithCUE(t *testing.T) {
	strs := map[string]bool{"strings": true}
	tests := []struct {
		e          expr
		text       string
		imports    map[string]bool
		recognized bool
		numeric    bool
		values     []any
	}{
		{withRules("string", []constraint{{kind: consMinRunes, n: 1}}, false, ""), "string & strings.MinRunes(1)", strs, true, false, []any{"", "a", "é", json.Number("1"), true}},
		{withRules("string", []constraint{{kind: consMaxRunes, n: 2}}, false, ""), "string & strings.MaxRunes(2)", strs, true, false, []any{"ab", "abc", "éé"}},
		{withRules("string", []constraint{{kind: consMatch, re: "^[a-z]+$"}}, false, ""), `string & =~"^[a-z]+$"`, nil, true, false, []any{"abc", "ABC", ""}},
		{withRules("string", []constraint{{kind: consNoMatch, re: `\.`}}, false, ""), `string & !~"\\."`, nil, true, false, []any{"a.b", "ab"}},
		{withRules("string", []constraint{{kind: consMatch, re: durationPattern}}, false, ""), `string & =~"^-?[0-9]+(\\.[0-9]{1,9})?s$"`, nil, true, false, []any{"1s", "1.5s", "1", "-2s"}},
		{numberWith("uint32", intString, []constraint{{kind: consLessEq, lit: "65535"}}, false), "(uint32 & <=65535) | " + intString, nil, true, true, []any{json.Number("80"), json.Number("70000"), json.Number("-1"), json.Number("1.5"), "80"}},
		{numberWith("number", floatString+" | "+floatSpecial, []constraint{{kind: consMore, lit: "0.0"}}, false), "(number & >0.0) | " + floatString + " | " + floatSpecial, nil, true, true, []any{json.Number("0.5"), json.Number("0"), json.Number("-2"), "NaN"}},
		{numberWith("int64", intString, nil, false), "int64 | " + intString, nil, true, true, []any{json.Number("9223372036854775807"), json.Number("9223372036854775808"), "12"}},
		{numberWith("int32", intString, []constraint{{kind: consAnyOf, alts: []constraint{{kind: consLess, lit: "1"}, {kind: consMore, lit: "5"}}}}, false), "(int32 & (<1 | >5)) | " + intString, nil, false, true, []any{json.Number("0")}},
		{raw(`"STATIC" | "EDS" | int32`), `"STATIC" | "EDS" | int32`, nil, false, false, []any{"STATIC", "NOPE"}},
		{withRules("string", []constraint{{kind: consMinRunes, n: 3}}, true, `""`), `"" | (string & strings.MinRunes(3))`, strs, false, false, []any{"", "ab"}},
		{withRules("string", []constraint{{kind: consNotEqual, lit: `"x"`}}, false, ""), `string & !="x"`, nil, false, false, []any{"x"}},
	}
	c := newSchemaCache(cuecontext.New(), NewGenerator(nil))
	for _, tt := range tests {
		assert.Equal(t, tt.text, tt.e.text)
		pass := tt.e.pass()
		assert.Equal(t, tt.recognized, pass != nil, tt.text)
		if pass == nil {
			continue
		}
		l := c.leaf(tt.e, tt.imports)
		c.compile(l)
		require.NoError(t, l.err)
		for _, v := range tt.values {
			cueOK := l.value.Unify(c.ctx.BuildExpr(toExpr(v))).Validate() == nil
			if pass(v) {
				assert.True(t, cueOK, "%s passes %#v but CUE rejects it", tt.text, v)
			}
			if _, isNum := v.(json.Number); cueOK && isNum == tt.numeric {
				assert.True(t, pass(v), "%s: CUE accepts %#v, the check should too", tt.text, v)
			}
		}
	}
}

func TestHoldsAtZero(t *testing.T) {
	for _, tt := range []struct {
		c    constraint
		want bool
	}{
		{constraint{kind: consEqual, lit: "0"}, true},
		{constraint{kind: consEqual, lit: "3"}, false},
		{constraint{kind: consNotEqual, lit: "0"}, false},
		{constraint{kind: consNotEqual, lit: "2"}, true},
		{constraint{kind: consLess, lit: "0"}, false},
		{constraint{kind: consLess, lit: "1"}, true},
		{constraint{kind: consLessEq, lit: "0"}, true},
		{constraint{kind: consLessEq, lit: "-1"}, false},
		{constraint{kind: consMore, lit: "0"}, false},
		{constraint{kind: consMore, lit: "-1"}, true},
		{constraint{kind: consMoreEq, lit: "0"}, true},
		{constraint{kind: consMoreEq, lit: "0.5"}, false},
		{constraint{kind: consAnyOf, alts: []constraint{{kind: consEqual, lit: "1"}, {kind: consEqual, lit: "2"}}}, false},
		{constraint{kind: consAnyOf, alts: []constraint{{kind: consEqual, lit: "1"}, {kind: consEqual, lit: "0"}}}, true},
	} {
		assert.Equal(t, tt.want, tt.c.holdsAtZero(), tt.c.cue())
	}
}
