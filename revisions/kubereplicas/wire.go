package kubereplicas

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/textbound"
)

// wireAnswers is one node's summary as stored.
type wireAnswers struct {
	Version    string `json:"version"`
	Population int    `json:"population"`
	Accepted   int    `json:"accepted,omitempty"`
	Rejected   int    `json:"rejected,omitempty"`
	// The owner's guests (revisions.Options.TenantOf); a replica of a
	// version before them sends none, and all its proxies count as the
	// owner's, as they did then.
	GuestPopulation int            `json:"guestPopulation,omitempty"`
	GuestAccepted   int            `json:"guestAccepted,omitempty"`
	GuestRejected   int            `json:"guestRejected,omitempty"`
	Rejections      []wireRejected `json:"rejections,omitempty"`
}

type wireRejected struct {
	Proxy string `json:"proxy"`
	Error string `json:"error"`
	Guest bool   `json:"guest,omitempty"`
}

func (w wireAnswers) answers() revisions.RemoteAnswers {
	a := revisions.RemoteAnswers{
		Version: w.Version, Population: w.Population, Accepted: w.Accepted, Rejected: w.Rejected,
		GuestPopulation: w.GuestPopulation, GuestAccepted: w.GuestAccepted, GuestRejected: w.GuestRejected,
	}
	for _, r := range w.Rejections {
		a.Rejections = append(a.Rejections, revisions.ProxyRejection{Proxy: r.Proxy, Error: r.Error, Guest: r.Guest})
	}
	return a
}

// encodeAnswers is the stored form of a summary, bounded: error texts cut
// to maxAnswerErrorBytes, and left out when the whole would pass
// maxAnswersBytes.
func encodeAnswers(all map[string]revisions.RemoteAnswers) (string, error) {
	wire := make(map[string]wireAnswers, len(all))
	for _, node := range slices.Sorted(maps.Keys(all)) {
		a := all[node]
		w := wireAnswers{
			Version: a.Version, Population: a.Population, Accepted: a.Accepted, Rejected: a.Rejected,
			GuestPopulation: a.GuestPopulation, GuestAccepted: a.GuestAccepted, GuestRejected: a.GuestRejected,
		}
		for _, rej := range a.Rejections {
			w.Rejections = append(w.Rejections, wireRejected{Proxy: textbound.Prefix(rej.Proxy, 253), Error: textbound.Prefix(rej.Error, maxAnswerErrorBytes), Guest: rej.Guest})
		}
		wire[node] = w
	}
	data, err := json.Marshal(wire)
	if err != nil {
		return "", err
	}
	if len(data) > maxAnswersBytes {
		for node, w := range wire {
			w.Rejections = nil
			wire[node] = w
		}
		if data, err = json.Marshal(wire); err != nil {
			return "", err
		}
	}
	if len(data) > maxAnswersBytes {
		return "", errors.New("the proxy answers of this replica's nodes do not fit in one ConfigMap")
	}
	return string(data), nil
}
