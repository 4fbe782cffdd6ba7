package standalone

import (
	"errors"
	"net/http"
	"time"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/textbound"
)

// FetchResponse is the answer to POST /api/v1/sources/{name}/fetch.
// RequestedAt is the server's time of the request: the fetch it asked for
// has finished once the source's lastAttempt is later.
type FetchResponse struct {
	Source      string    `json:"source"`
	Status      string    `json:"status"`
	RequestedAt time.Time `json:"requestedAt"`
}

func (s *Server) serveFetch(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	l := s.loop(name)
	if l == nil {
		readapi.WriteError(w, http.StatusNotFound, "no source "+quote(name))
		return
	}
	if l.isSuspended() {
		readapi.WriteError(w, http.StatusConflict, "source "+quote(name)+" is suspended; legate resume "+name+" first")
		return
	}
	now := time.Now()
	l.trigger()
	statuspage.WriteJSON(w, http.StatusAccepted, FetchResponse{Source: name, Status: "fetch requested", RequestedAt: now})
}

// serveSuspend suspends or resumes a source: a suspended source is not
// fetched (neither on its interval, nor by webhooks or fetch requests) and
// its nodes keep what they serve, until it is resumed. It survives
// restarts.
func (s *Server) serveSuspend(suspend bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		l := s.loop(name)
		if l == nil {
			readapi.WriteError(w, http.StatusNotFound, "no source "+quote(name))
			return
		}
		was := l.isSuspended()
		if err := s.setSuspended(name, suspend); err != nil {
			readapi.WriteError(w, http.StatusInternalServerError, err.Error())
			return
		}
		status := map[[2]bool]string{
			{false, true}: "suspended", {true, true}: "already suspended",
			{true, false}: "resumed", {false, false}: "not suspended",
		}[[2]bool{was, suspend}]
		if was && !suspend {
			l.trigger()
		}
		statuspage.WriteJSON(w, http.StatusOK, map[string]string{"source": name, "status": status})
	}
}

func (s *Server) serveUntaint(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("node")
	hash := readapi.ResolveRevision(s.engine, node, r.PathValue("hash"))
	rev, _, ok := s.engine.Revision(node, hash)
	if !ok {
		readapi.WriteError(w, http.StatusNotFound, "no revision "+quote(r.PathValue("hash"))+" of node "+quote(node))
		return
	}
	if rev.Taint == nil {
		statuspage.WriteJSON(w, http.StatusOK, map[string]string{"node": node, "revision": hash, "status": "not tainted"})
		return
	}
	if err := s.engine.ClearTaint(r.Context(), node, hash); err != nil {
		readapi.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	statuspage.WriteJSON(w, http.StatusOK, map[string]string{"node": node, "revision": hash, "status": "taint cleared"})
}

// servePrune stops serving an orphaned node (one no configured source
// renders any more) and deletes its history. A node a source still renders
// is refused: removing it from the source is how to stop serving it.
func (s *Server) servePrune(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("node")
	st, ok := s.engine.Node(node)
	if !ok {
		readapi.WriteError(w, http.StatusNotFound, "no node "+quote(node))
		return
	}
	if !s.orphaned(st) {
		readapi.WriteError(w, http.StatusConflict, "node "+quote(node)+" is still rendered by a source (or its source has not rendered since the start); remove it from the source's configuration first")
		return
	}
	if err := s.engine.Forget(r.Context(), node); err != nil {
		readapi.WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	logging.Warn(s.log, "orphaned node pruned: no longer served", "node", node)
	statuspage.WriteJSON(w, http.StatusOK, map[string]string{"node": node, "status": "pruned"})
}

// serveRolloutCommand carries out promote, pause, resume or abort on the
// rollout of a node and answers with the rollout after it.
func (s *Server) serveRolloutCommand(w http.ResponseWriter, r *http.Request) {
	node, cmd := r.PathValue("node"), rollout.Command(r.PathValue("command"))
	switch cmd {
	case rollout.CommandPromote, rollout.CommandPause, rollout.CommandResume, rollout.CommandAbort:
	default:
		readapi.WriteError(w, http.StatusNotFound, "no rollout command "+quote(textbound.Prefix(string(cmd), 64))+": use promote, pause, resume or abort")
		return
	}
	if _, err := s.engine.RolloutCommand(r.Context(), node, cmd); err != nil {
		code := http.StatusConflict
		if errors.Is(err, revisions.ErrNotFound) {
			code = http.StatusNotFound
		}
		readapi.WriteError(w, code, err.Error())
		return
	}
	v, _ := s.engine.Rollout(node)
	statuspage.WriteJSON(w, http.StatusOK, v)
}
