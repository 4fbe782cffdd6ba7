package revisions

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/legate-dev/legate/render"
)

// metrics are the engine's Prometheus collectors. Labels are bounded: node
// IDs and source names, never proxies.
type metrics struct {
	revisions          *prometheus.CounterVec
	publishes          *prometheus.CounterVec
	rollbacks          *prometheus.CounterVec
	taints             *prometheus.CounterVec
	validationFailures *prometheus.CounterVec
	state              *prometheus.GaugeVec
	rollouts           *prometheus.CounterVec
	steps              *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "legate", Subsystem: "revisions", Name: name, Help: help,
		}, labels)
	}
	m := &metrics{
		revisions:          counter("revisions_total", "Revisions created (new content applied), per node.", "node"),
		publishes:          counter("publishes_total", "Publications handed to the xDS server, per node.", "node"),
		rollbacks:          counter("rollbacks_total", "Publications of an older revision because newer ones are tainted, per node.", "node"),
		taints:             counter("taints_total", "Revisions tainted because proxies or the xDS server rejected them, per node.", "node"),
		validationFailures: counter("validation_failures_total", "Snapshots that failed validation, per source.", "source"),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "legate", Subsystem: "revisions", Name: "node_state",
			Help: "1 for the state each node is in, 0 for the others.",
		}, []string{"node", "state"}),
		rollouts: counter("rollouts_total", "Progressive rollouts ended, per node and result (Succeeded, Failed, Aborted, superseded).", "node", "result"),
		steps:    counter("rollout_steps_total", "Rollout steps ended, per node, step (from 1) and result (passed, failed).", "node", "step", "result"),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.revisions, m.publishes, m.rollbacks, m.taints, m.validationFailures, m.state, m.rollouts, m.steps} {
		if err := reg.Register(c); err != nil {
			if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
				return nil, fmt.Errorf("revisions metrics are already registered; create one Engine per registry: %w", err)
			}
			return nil, fmt.Errorf("register revisions metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) setState(node string, s State) {
	for _, st := range allStates {
		v := 0.0
		if st == s {
			v = 1
		}
		m.state.WithLabelValues(render.NodeLabel(node), string(st)).Set(v)
	}
}
