package analysis

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConditionEval(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		expr   string
		result []float64
		want   bool
		err    string
	}{
		{"result[0] < 0.01", []float64{0.005}, true, ""},
		{"result[0] < 0.01", []float64{0.02}, false, ""},
		{"result < 0.01", []float64{0.005}, true, ""},
		{"result < 0.01", []float64{0.005, 1}, false, "result has 2 values"},
		{"result[1] >= 2", []float64{0, 2}, true, ""},
		{"result[1] >= 2", []float64{0}, false, "result[1]: the result has 1 values"},
		{"len(result) == 0 || result[0] < 1", nil, true, ""},
		{"len(result) == 0 || result[0] < 1", []float64{3}, false, ""},
		{"len(result) > 0 && result[0] < 1", nil, false, ""},
		{"all(result, # < 500)", []float64{1, 499}, true, ""},
		{"all(result, # < 500)", []float64{1, 500}, false, ""},
		{"all(result, {# < 500})", nil, true, ""},
		{"any(result, # > 0.5)", []float64{0.1, 0.6}, true, ""},
		{"any(result, # > 0.5)", nil, false, ""},
		{"!isNaN(result[0]) && result[0] <= 1", []float64{nan}, false, ""},
		{"isNaN(result[0])", []float64{nan}, true, ""},
		{"result[0] / result[1] <= 2", []float64{4, 2}, true, ""},
		{"result[0] - 1 * 2 == 1", []float64{3}, true, ""},
		{"(result[0] + 1) * 2 == 8", []float64{3}, true, ""},
		{"-result[0] > -1", []float64{0.5}, true, ""},
		{"true != (result[0] > 1)", []float64{2}, false, ""},
		{"result[0] < 1e-3", []float64{0.0005}, true, ""},
		{"result[0] < Inf", []float64{1e300}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c, err := ParseCondition(tt.expr)
			require.NoError(t, err)
			got, err := c.Eval(tt.result)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestConditionParseErrors(t *testing.T) {
	tests := []struct{ expr, err string }{
		{"", "the condition ends where a value is expected"},
		{"result[0]", "not true or false"},
		{"result[0] +", "ends where a value is expected"},
		{"result[0] < 1 < 2", "chained comparison"},
		{"result[0] && true", "&& joins true/false"},
		{"# < 1", "# stands for one value only inside"},
		{"foo < 1", `unknown name "foo"`},
		{"result[-1] < 1", "want an index"},
		{"result[0] < 1)", `unexpected ")"`},
		{"(result[0] < 1", `want ")"`},
		{"len(x) > 1", "len takes result"},
		{"all(result # < 1)", `want ","`},
		{"all(result, #)", "not true or false"},
		{"!result[0]", "! applies to true/false"},
		{"result[0] == true", "compares a number with true/false"},
		{"result[0] < 1 ; drop", `unexpected ";"`},
		{"1.2.3 < 1", "is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := ParseCondition(tt.expr)
			assert.ErrorContains(t, err, tt.err)
		})
	}
}

func TestConditionBounded(t *testing.T) {
	deep := ""
	for range 40 {
		deep += "("
	}
	_, err := ParseCondition(deep + "true")
	assert.ErrorContains(t, err, "nested more than")

	long := make([]byte, MaxConditionLen+1)
	for i := range long {
		long[i] = ' '
	}
	_, err = ParseCondition(string(long))
	assert.ErrorContains(t, err, "at most")
}

func FuzzParseCondition(f *testing.F) {
	for _, s := range []string{"result[0] < 0.01", "all(result, {# < 1}) || len(result) == 0", "!isNaN(result)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCondition(s)
		if err != nil {
			return
		}
		_, _ = c.Eval([]float64{1, 2, math.NaN()})
		_, _ = c.Eval(nil)
	})
}

// BenchmarkCondition measures one parse and one evaluation of a typical
// condition over a 100-sample vector: the cost a measurement adds to a
// query.
func BenchmarkCondition(b *testing.B) {
	result := make([]float64, 100)
	for i := range result {
		result[i] = float64(i) / 1000
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := ParseCondition("len(result) == 0 || all(result, # < 0.5) && !isNaN(result[0])")
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := c.Eval(result); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
