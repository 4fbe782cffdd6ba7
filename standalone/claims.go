package standalone

import (
	"fmt"
	"slices"
	"strings"
)

// Node claims: a node ID comes from one source only. The first source to
// render a node owns it while it renders it; another source that renders
// it too is refused, and the conflict is reported on both, the refused
// source through its own sync and the owner here, from the contests
// recorded below (which survive the owner's later syncs and go away when
// the other source stops rendering the node). When the owner stops
// rendering the node (its configuration moved to another repository), the
// node is released and the refused sources render again to take it over.

// contestMessage is what the owner of node shows while contender also
// renders it.
func contestMessage(node, contender string) string {
	return fmt.Sprintf("node %q is also claimed by source %q; its configuration from there is ignored", node, contender)
}

// claim records that source renders node, or returns the source that
// already does.
func (s *Server) claim(node, source string) (owner string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, taken := s.owners[node]; taken && o != source {
		return o, false
	}
	s.owners[node] = source
	return source, true
}

// contest records that contender renders node, which owner serves, and
// shows it on the owner's status at once.
func (s *Server) contest(node, owner, contender string) {
	s.mu.Lock()
	if s.contests[node] == nil {
		s.contests[node] = map[string]bool{}
	}
	s.contests[node][contender] = true
	s.mu.Unlock()
	msg := contestMessage(node, contender)
	if l := s.loop(owner); l != nil {
		l.mu.Lock()
		if !strings.Contains(l.status.LastError, msg) {
			if l.status.LastError != "" {
				l.status.LastError += "; "
			}
			l.status.LastError += msg
		}
		l.mu.Unlock()
	}
}

// release forgets the contests of contender (before it claims again) and
// removes them from the owners' status.
func (s *Server) release(contender string) {
	s.mu.Lock()
	var gone []struct{ node, owner string }
	for node, cs := range s.contests {
		if cs[contender] {
			delete(cs, contender)
			gone = append(gone, struct{ node, owner string }{node, s.owners[node]})
		}
	}
	s.mu.Unlock()
	for _, g := range gone {
		l := s.loop(g.owner)
		if l == nil {
			continue
		}
		msg := contestMessage(g.node, contender)
		l.mu.Lock()
		parts := strings.Split(l.status.LastError, "; ")
		parts = slices.DeleteFunc(parts, func(p string) bool { return p == msg })
		l.status.LastError = strings.Join(parts, "; ")
		l.mu.Unlock()
	}
}

// contestsOf lists the contest messages of the nodes owner serves.
func (s *Server) contestsOf(owner string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for node, cs := range s.contests {
		if s.owners[node] != owner {
			continue
		}
		for c := range cs {
			out = append(out, contestMessage(node, c))
		}
	}
	slices.Sort(out)
	return out
}

// disown releases the nodes source owns but no longer renders and returns
// the sources that were refused one of them, sorted, so they can claim it.
func (s *Server) disown(source string, rendered []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var contenders []string
	for node, o := range s.owners {
		if o != source || slices.Contains(rendered, node) {
			continue
		}
		delete(s.owners, node)
		for c := range s.contests[node] {
			contenders = append(contenders, c)
		}
	}
	slices.Sort(contenders)
	return slices.Compact(contenders)
}

func (s *Server) loop(name string) *sourceLoop {
	for _, l := range s.loops {
		if l.cfg.Name == name {
			return l
		}
	}
	return nil
}
