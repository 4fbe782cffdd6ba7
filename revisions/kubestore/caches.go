package kubestore

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// statusCache holds, per revision object, the status this store last
// wrote to it and the generation that write gave the object. A status is
// replaced whole without a read, but its conditions keep their
// lastTransitionTime across writes and say "Untainted" after a taint was
// cleared: both need the status before; and every status write bumps the
// object's generation (revisions have no status subresource), which the
// conditions' observedGeneration follows. Entries go with the revision
// objects (Update.Delete), so the cache is as large as the history the
// engine keeps in memory anyway.
type statusCache struct {
	mu     sync.Mutex
	byName map[string]writtenStatus
}

// writtenStatus is a status as written and the generation of the object
// after the write.
type writtenStatus struct {
	status     v1alpha1.EnvoyConfigRevisionStatus
	generation int64
}

func (c *statusCache) get(name string) (v1alpha1.EnvoyConfigRevisionStatus, int64, bool) {
	if c == nil {
		return v1alpha1.EnvoyConfigRevisionStatus{}, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.byName[name]
	return *w.status.DeepCopy(), w.generation, ok
}

func (c *statusCache) put(name string, st v1alpha1.EnvoyConfigRevisionStatus, generation int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byName[name] = writtenStatus{status: *st.DeepCopy(), generation: generation}
}

func (c *statusCache) forget(name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byName, name)
}

// recordCache holds, per node, the record ConfigMap as the API server
// returned it from this store's last write: its resourceVersion makes the
// next write fail with a conflict if anyone wrote it since, so it is as
// good a check as a read, one API call cheaper. The engine commits one
// node at a time, but different nodes concurrently: mu guards the map.
type recordCache struct {
	mu     sync.Mutex
	byNode map[string]*corev1.ConfigMap
}

func (c *recordCache) get(node string) *corev1.ConfigMap {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm := c.byNode[node]; cm != nil {
		return cm.DeepCopy()
	}
	return nil
}

// put remembers cm as node's record; nil forgets it (the next commit
// reads it).
func (c *recordCache) put(node string, cm *corev1.ConfigMap) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm == nil {
		delete(c.byNode, node)
		return
	}
	c.byNode[node] = cm.DeepCopy()
}
