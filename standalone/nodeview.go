package standalone

import (
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/xds"
)

// nodeView completes the engine's status of a node for people.
func (s *Server) nodeView(st revisions.NodeStatus, proxies []xds.ProxyStatus, srcs []statuspage.Source) statuspage.NodeView {
	return statuspage.NewNodeView(st, proxies, srcs, s.orphaned(st))
}

// orphaned reports whether no configured source renders the node any more:
// the source of its newest revision is gone from the configuration, or its
// last good render no longer has the node and no other source took it.
func (s *Server) orphaned(st revisions.NodeStatus) bool {
	if len(st.History) == 0 {
		return false
	}
	src := st.History[0].Source
	if s.pipeline.Owner(st.NodeID) != "" {
		return false
	}
	if s.loop(src) == nil {
		return src != "" || len(s.loops) > 0
	}
	return s.pipeline.Dropped(src, st.NodeID)
}
