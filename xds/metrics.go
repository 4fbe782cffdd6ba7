package xds

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the legate_xds_* series. Labels are bounded: node IDs and
// type names, never proxy identities.
type metrics struct {
	connected *prometheus.GaugeVec
	responses *prometheus.CounterVec
	acks      *prometheus.CounterVec
	nacks     *prometheus.CounterVec
	revoked   prometheus.Counter
	// conns and connsRefused are the connections of the listeners
	// BoundListener wraps.
	conns        prometheus.Gauge
	connsRefused prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "legate_xds_connected_proxies",
			Help: "xDS streams currently open, per node ID.",
		}, []string{"node"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "legate_xds_responses_total",
			Help: "xDS responses sent, per resource type.",
		}, []string{"type"}),
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "legate_xds_acks_total",
			Help: "xDS responses proxies accepted, per resource type.",
		}, []string{"type"}),
		nacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "legate_xds_nacks_total",
			Help: "xDS responses proxies rejected, per resource type.",
		}, []string{"type"}),
		revoked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "legate_xds_streams_revoked_total",
			Help: "xDS streams closed because they lost the right to receive their node.",
		}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "legate_xds_connections",
			Help: "Client connections currently open on the xDS listeners.",
		}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "legate_xds_connections_refused_total",
			Help: "Client connections the xDS listeners reset at accept because they held their maximum of open connections.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.connected, m.responses, m.acks, m.nacks, m.revoked, m.conns, m.connsRefused} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register xds metrics (is a second xds.Server using the same registry?): %w", err)
	}
	return m, nil
}
