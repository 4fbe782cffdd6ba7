package pipeline

import (
	"cmp"
	"slices"
)

// claims records which source renders each node ID. The first source to
// render a node owns it while it renders it; another source that renders
// it too is refused, and the conflict is recorded (a contest) so both
// sources report it: the contest lasts until the contender renders again
// without the node, or the owner stops rendering it. A node its owner
// stops rendering is released, and its contenders render again to take it
// over. Guarded by Pipeline.mu.
//
// Owners are seeded from the engine's stored records (seed), so a restart
// or a failover keeps every node with the source that owned it, whatever
// renders first.
type claims struct {
	owners   map[string]string          // node ID -> the source that renders it
	contests map[string]map[string]bool // node ID -> other sources rendering it
	// tenant names the tenant of a source ("" for every source of a home
	// without tenants); see Options.Tenant.
	tenant func(source string) string
}

func newClaims(tenant func(string) string) claims {
	if tenant == nil {
		tenant = func(string) string { return "" }
	}
	return claims{owners: map[string]string{}, contests: map[string]map[string]bool{}, tenant: tenant}
}

// seed records owners, node ID -> source, for the nodes no source claimed
// yet.
func (c claims) seed(owners map[string]string) {
	for node, owner := range owners {
		if _, taken := c.owners[node]; !taken {
			c.owners[node] = owner
		}
	}
}

// claim records that source renders node, or returns the source that
// already does and records the contest. taken reports a node source did
// not own before.
func (c claims) claim(node, source string) (owner string, ok, taken bool) {
	if o, owned := c.owners[node]; owned && o != source {
		if c.contests[node] == nil {
			c.contests[node] = map[string]bool{}
		}
		c.contests[node][source] = true
		return o, false, false
	}
	_, owned := c.owners[node]
	c.owners[node] = source
	return source, true, !owned
}

func (c claims) owner(node string) string { return c.owners[node] }

// withdraw forgets every contest of contender, before it claims again.
func (c claims) withdraw(contender string) {
	for node, cs := range c.contests {
		delete(cs, contender)
		if len(cs) == 0 {
			delete(c.contests, node)
		}
	}
}

// disown releases the nodes source owns but no longer renders. It returns
// them, sorted, and the sources that were refused one of them, sorted, so
// they can claim it.
func (c claims) disown(source string, rendered []string) (released, contenders []string) {
	for node, o := range c.owners {
		if o != source || slices.Contains(rendered, node) {
			continue
		}
		delete(c.owners, node)
		released = append(released, node)
		for contender := range c.contests[node] {
			contenders = append(contenders, contender)
		}
	}
	slices.Sort(released)
	slices.Sort(contenders)
	return released, slices.Compact(contenders)
}

// conflicts lists the contests source takes part in, as owner or as
// contender, sorted by node and contender. A contest whose node has no
// owner any more (it was released and the contender has not claimed it
// yet) is not one. A contest between tenants is told to the contender
// only, and without the owner's name: a tenant learns nothing of
// another's objects.
func (c claims) conflicts(source string) []Conflict {
	var out []Conflict
	for node, cs := range c.contests {
		owner, owned := c.owners[node]
		if !owned {
			continue
		}
		for contender := range cs {
			foreign := c.tenant(owner) != c.tenant(contender)
			switch {
			case foreign && source == contender:
				out = append(out, Conflict{Node: node, Contender: contender, Foreign: true})
			case foreign:
			case source == owner || source == contender:
				out = append(out, Conflict{Node: node, Owner: owner, Contender: contender})
			}
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Contender, b.Contender))
	})
	return out
}
