package standalone

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/serveconfig"
)

func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestReadyOnlyOnceEverySourceWasFetched runs a server with a good source
// and one whose Git server holds the first fetch: /readyz fails naming the
// waiting source until that fetch ends (here with an error, which it then
// shows), while /livez answers throughout.
func TestReadyOnlyOnceEverySourceWasFetched(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case held <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "repository unavailable", http.StatusInternalServerError)
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "n",
		Sources: []serveconfig.SourceConfig{
			{Name: "good", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}},
			{Name: "held", Git: &serveconfig.GitSource{URL: slow.URL + "/org/cfg.git"}, Interval: serveconfig.Duration{Duration: time.Hour}},
		},
	}, Options{})
	runServer(t, s)
	base := "http://" + s.HTTPAddr()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the held source never asked its Git server")
	}
	var code int
	var body string
	require.Eventually(t, func() bool {
		code, body = getText(t, base+"/readyz")
		return strings.Contains(body, "source good: fetched")
	}, 30*time.Second, 10*time.Millisecond, "the good source's first pass ends")

	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "source held: waiting for its first fetch")
	assert.Contains(t, body, "source good: fetched main@sha1:", "the fetched revision is shown")
	code, _ = getText(t, base+"/livez")
	assert.Equal(t, http.StatusOK, code, "alive while not ready")

	close(release)
	require.Eventually(t, func() bool {
		code, _ := getText(t, base+"/readyz")
		return code == http.StatusOK
	}, 30*time.Second, 10*time.Millisecond)
	_, body = getText(t, base+"/readyz")
	assert.True(t, strings.HasPrefix(body, "ok\n"), body)
	assert.Contains(t, body, "source held: fetched nothing; error:")
}
