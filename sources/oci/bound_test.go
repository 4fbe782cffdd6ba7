package oci

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// hostileTimeout is the fetch timeout of the tests against a hostile
// registry, and twice it their own deadline: a broken bound must fail the
// test in seconds, whether the fetch then waits on the registry (the
// source's timeout ends it) or loops without looking at its context (the
// deadline does), not hang until the package's timeout.
const hostileTimeout = 10 * time.Second

// fetchWithin fetches src and returns its error, failing the test when
// the fetch has not returned within twice hostileTimeout.
func fetchWithin(t *testing.T, src *Source) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := src.Fetch(t.Context())
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * hostileTimeout):
		t.Fatalf("the fetch from a hostile registry did not return within %s: is a bound broken?", 2*hostileTimeout)
		return nil
	}
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
	var pages atomic.Int64 // counted on the server's goroutines
	endless := func(w http.ResponseWriter, _ *http.Request) {
		page := pages.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Link", fmt.Sprintf(`</v2/cfg/tags/list?n=1&last=t%d>; rel="next"`, page))
		_, _ = fmt.Fprintf(w, `{"name":"cfg","tags":["t%d"]}`, page)
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
			err := fetchWithin(t, newSource(t, Config{URL: "oci://" + host + "/cfg", Ref: tc.ref, Timeout: hostileTimeout}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.EqualValues(t, maxTagPages, pages.Load(), "the pages stop at the bound")
}
