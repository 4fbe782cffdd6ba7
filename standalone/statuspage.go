package standalone

import (
	"net/http"
	"time"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/statuspage"
)

// serveStatusPage is GET /: the status page both homes share.
func (s *Server) serveStatusPage(w http.ResponseWriter, _ *http.Request) {
	forges := map[string]forge.Provider{}
	for _, sc := range s.cfg.Sources {
		if sc.Forge != nil {
			forges[sc.Name] = sc.Forge.Provider
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	page := statuspage.Page{Nodes: s.Nodes(), Sources: s.Sources(), Forges: forges, Now: time.Now()}
	if err := page.Write(w); err != nil {
		s.log.Error(err, "render status page")
	}
}
