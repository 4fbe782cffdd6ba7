package standalone

import (
	"net/http"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/hooks"
)

// hookRoutes mounts the push webhooks (/hooks/gitea, /hooks/github,
// /hooks/gitlab, /hooks/generic): a valid push for a watched repository
// triggers that source's loop at once.
func (s *Server) hookRoutes(mux *http.ServeMux, secrets hooks.Secrets) {
	var w hooks.Watcher
	for _, l := range s.loops {
		w.Watch(l.status.URL, l.trigger)
	}
	hooks.RegisterReceivers(mux, secrets, hooks.Receivers{PullRequest: s.onPullRequest, Push: func(repoURLs []string, ref string) {
		shown := make([]string, 0, len(repoURLs))
		for _, u := range repoURLs {
			shown = append(shown, sources.Redact(u))
		}
		if n := w.TriggerAny(repoURLs, ref); n == 0 {
			// Usually a source URL naming another host than any the forge
			// gives (an internal address, say): say so once per push.
			logging.Warn(s.log, "push webhook names no configured source; nothing fetched", "repository", shown, "ref", ref)
		} else {
			s.log.V(1).Info("push webhook", "repository", shown, "ref", ref, "sourcesTriggered", n)
		}
	}})
}
