package oci

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileRegistry answers the registry API's ping, and everything else
// with answer.
func hostileRegistry(t *testing.T, answer http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			w.WriteHeader(http.StatusOK)
			return
		}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A registry a tenant names may answer with anything: a tag list or a
// manifest of many megabytes, or tag pages that never end. Each fetch
// fails at its bound, saying which, instead of holding it all.
func TestRegistryAnswersBounded(t *testing.T) {
	huge := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"cfg","tags":["`))
		chunk := []byte(strings.Repeat("x", 1<<16))
		for range (maxAnswerBytes / len(chunk)) + 2 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"]}`))
	}
	pages := 0
	endless := func(w http.ResponseWriter, r *http.Request) {
		pages++
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Link", fmt.Sprintf(`</v2/cfg/tags/list?n=1&last=t%d>; rel="next"`, pages))
		_, _ = fmt.Fprintf(w, `{"name":"cfg","tags":["t%d"]}`, pages)
	}
	many := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		tags := make([]string, maxTags+1)
		for i := range tags {
			tags[i] = fmt.Sprintf("%d", i)
		}
		_, _ = fmt.Fprintf(w, `{"name":"cfg","tags":["%s"]}`, strings.Join(tags, `","`))
	}
	for name, tc := range map[string]struct {
		answer http.HandlerFunc
		ref    Ref
		want   string
	}{
		"huge tag list": {huge, Ref{SemVer: "^1"}, "is over 4194304 bytes, the bound of anything but a layer"},
		"huge manifest": {huge, Ref{Tag: "v1"}, "is over 4194304 bytes, the bound of anything but a layer"},
		"endless pages": {endless, Ref{SemVer: "^1"}, "lists tags in more than 100 pages"},
		"too many tags": {many, Ref{SemVer: "^1"}, "lists more than 100000 tags"},
	} {
		t.Run(name, func(t *testing.T) {
			host := hostileRegistry(t, tc.answer)
			_, err := newSource(t, Config{URL: "oci://" + host + "/cfg", Ref: tc.ref}).Fetch(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.Equal(t, maxTagPages, pages, "the pages stop at the bound")
}
