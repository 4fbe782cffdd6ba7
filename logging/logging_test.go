package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLevelsFilter(t *testing.T) {
	tests := []struct {
		level string
		want  []string // messages written
	}{
		{"debug", []string{"verbose", "routine", "odd", "broken"}},
		{"info", []string{"routine", "odd", "broken"}},
		{"warn", []string{"odd", "broken"}},
		{"error", []string{"broken"}},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			var b bytes.Buffer
			log, err := New(&b, tt.level, "json")
			require.NoError(t, err)
			log = log.WithName("engine").WithValues("node", "edge")
			log.V(1).Info("verbose")
			log.Info("routine")
			Warn(log, "odd", "revision", "abc")
			log.Error(errors.New("boom"), "broken")

			var got []string
			for line := range strings.Lines(b.String()) {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				got = append(got, rec["msg"].(string))
				assert.Equal(t, "edge", rec["node"], "values are kept")
				assert.Equal(t, "engine", rec["logger"], "the name is kept")
				if rec["msg"] == "verbose" {
					assert.Equal(t, "DEBUG", rec["level"])
				}
				if rec["msg"] == "odd" {
					assert.Equal(t, "WARN", rec["level"])
					assert.Equal(t, "abc", rec["revision"])
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTextFormatAndRefusals(t *testing.T) {
	var b bytes.Buffer
	log, err := New(&b, "info", "text")
	require.NoError(t, err)
	Warn(log, "commit rejected", "commit", "1234")
	assert.Contains(t, b.String(), `level=WARN msg="commit rejected" commit=1234`)

	_, err = New(&b, "loud", "text")
	assert.ErrorContains(t, err, `log level "loud": want one of debug, info, warn, error`)
	_, err = New(&b, "info", "xml")
	assert.ErrorContains(t, err, `log format "xml": want one of text, json`)
}

func TestWarnOnAnotherBackendStaysAtInfo(t *testing.T) {
	var got []string
	log := funcr.New(func(prefix, args string) { got = append(got, args) }, funcr.Options{})
	Warn(log, "odd")
	require.Len(t, got, 1)
	assert.Contains(t, got[0], `"level"=0 "msg"="odd"`)
}
