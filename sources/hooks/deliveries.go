package hooks

import (
	"sync"
	"time"
)

// Bounds of the delivery log: a replay is recognised for DeliveryWindow
// after the first delivery, and at most maxDeliveries IDs are kept (the
// oldest are forgotten first).
const (
	DeliveryWindow = 10 * time.Minute
	maxDeliveries  = 10000
)

// deliveries remembers the IDs of recent verified deliveries, so a signed
// delivery replayed by whoever captured it triggers nothing. Safe for
// concurrent use.
type deliveries struct {
	mu    sync.Mutex
	at    map[string]time.Time
	order []string // IDs in the order first seen
}

func newDeliveries() *deliveries { return &deliveries{at: map[string]time.Time{}} }

// replayed reports whether id was seen within DeliveryWindow before now,
// and records it when it was not.
func (d *deliveries) replayed(id string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.at[id]; ok && now.Sub(t) < DeliveryWindow {
		return true
	}
	for len(d.order) > 0 && (len(d.order) >= maxDeliveries || now.Sub(d.at[d.order[0]]) >= DeliveryWindow) {
		delete(d.at, d.order[0])
		d.order = d.order[1:]
	}
	if _, ok := d.at[id]; !ok {
		d.order = append(d.order, id)
	}
	d.at[id] = now
	return false
}
