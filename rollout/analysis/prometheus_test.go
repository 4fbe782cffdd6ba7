package analysis

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These answers are what a misconfigured address gives (a proxy's HTML
// page, a huge body, an unexpected envelope); the real engine's answers
// are tested in rollout/analysis/promtest.
func TestPrometheusAnswersThatAreNotResults(t *testing.T) {
	var form map[string][]string
	tests := []struct {
		name, body, msg string
		status          int
	}{
		{"html", "<html>login</html>", "answer is not Prometheus' JSON: <html>login</html>", 200},
		{"oversized", `{"status":"success","data":{"resultType":"vector","result":[` + strings.Repeat(`{"value":[0,"1"]},`, MaxQueryAnswer/16) + `]}}`, "answer larger than 1024 KiB", 200},
		{"error envelope", `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, "query refused (timeout): query timed out", 503},
		{"success with bad status", `{"status":"success","data":{"resultType":"scalar","result":[0,"1"]}}`, "status 500", 500},
		{"value not a number", `{"status":"success","data":{"resultType":"scalar","result":[0,"abc"]}}`, `sample value "abc" is not a number`, 200},
		{"vector sample without value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}`, "vector sample 0 has no [time", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.Equal(t, "/prom/api/v1/query", r.URL.Path)
				assert.NoError(t, r.ParseForm())
				form = r.PostForm
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			c, err := ParseCondition("result[0] < 1")
			require.NoError(t, err)
			p := &promMeasurer{r: NewRunner(Options{}), success: c, check: &PrometheusCheck{
				Address: srv.URL + "/prom", Query: `up{node="{{node}}",step="{{step}}"}`, Timeout: Duration{1500 * time.Millisecond},
			}}
			m := p.measure(context.Background(), subject)
			assert.Equal(t, PhaseError, m.Phase)
			assert.Contains(t, m.Message, tt.msg)
			assert.LessOrEqual(t, len(m.Message), MaxMessage)
			assert.Equal(t, []string{`up{node="edge-1",step="2"}`}, form["query"])
			assert.Equal(t, []string{"1.5"}, form["timeout"], "float seconds, which Prometheus parses")
		})
	}
}
