package hooks

import (
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Watcher maps source URLs to fetch functions. Its Trigger method is a
// Trigger that calls the fetch function of every watched source whose URL
// names the pushed repository, whatever the ref: the source's own fetch
// decides whether its ref moved (a tag push may move a semver source).
// Safe for concurrent use.
type Watcher struct {
	mu      sync.RWMutex
	watches []watch
}

type watch struct {
	key   string
	fetch func()
}

// Watch registers fetch for the repository at sourceURL. fetch must not
// block (e.g. a non-blocking send on the source's trigger channel).
func (w *Watcher) Watch(sourceURL string, fetch func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watches = append(w.watches, watch{key: repoKey(sourceURL), fetch: fetch})
}

// Trigger calls the fetch of every source watching repoURL and reports how
// many it called.
func (w *Watcher) Trigger(repoURL, ref string) int {
	return w.TriggerAny([]string{repoURL}, ref)
}

// TriggerAny calls, once, the fetch of every source watching the
// repository named by any of repoURLs (the forms of one repository a push
// payload gives) and reports how many it called.
func (w *Watcher) TriggerAny(repoURLs []string, _ string) int {
	keys := make([]string, 0, len(repoURLs))
	for _, u := range repoURLs {
		keys = append(keys, repoKey(u))
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	n := 0
	for _, wt := range w.watches {
		if slices.Contains(keys, wt.key) {
			wt.fetch()
			n++
		}
	}
	return n
}

// AsTrigger adapts the Watcher to the handlers' Trigger type.
func (w *Watcher) AsTrigger() Trigger {
	return func(repoURLs []string, ref string) { w.TriggerAny(repoURLs, ref) }
}

// SameRepository reports whether two repository URLs name the same
// repository: https, http, ssh, scp-like and oci forms of one host and path
// match, ignoring user info, ports, letter case of the host, a trailing
// slash and a ".git" suffix.
func SameRepository(a, b string) bool { return repoKey(a) == repoKey(b) }

func repoKey(raw string) string {
	s := strings.TrimSpace(raw)
	var host, path string
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		host, path = u.Hostname(), u.Path
	} else if at, rest, ok := strings.Cut(s, "@"); ok && !strings.Contains(at, "/") && strings.Contains(rest, ":") {
		// scp-like user@host:path
		host, path, _ = strings.Cut(rest, ":")
	} else {
		return strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	return strings.ToLower(host) + "/" + path
}
