package core

import "github.com/legate-dev/legate/render"

// Served is what source serves now, per node: the published configuration
// of each node its last good render gave it. A pull request's preview is
// compared with it (both homes).
func (c *Core) Served(source string) map[string]*render.NodeConfig {
	out := map[string]*render.NodeConfig{}
	for _, n := range c.pipeline.Status(source).Nodes {
		st, ok := c.engine.Node(n)
		if !ok || st.Published == nil {
			continue
		}
		if rev, _, ok := c.engine.Revision(n, st.Published.Hash); ok && rev.Config != nil {
			out[n] = rev.Config
		}
	}
	return out
}

// Connected counts the proxies of node connected now (a preview's blast
// radius).
func (c *Core) Connected(node string) int {
	st, ok := c.engine.Node(node)
	if !ok {
		return 0
	}
	return st.Answers.Connected
}
