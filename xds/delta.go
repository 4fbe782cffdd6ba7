package xds

import (
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// deltaSub is an incremental subscription to one type on one stream.
type deltaSub struct {
	wildcard bool
	names    map[string]struct{}
	// known is what the client has: resource name -> resource version.
	known map[string]string
	// sentVersion is the type version last reconciled; dirty says the
	// subscription changed since.
	sentVersion string
	dirty       bool
	responded   bool
	// took is the change, in bytes, of the names the last request made
	// the stream hold (subscribed names and initial versions).
	took int
}

type deltaStream struct {
	streamBase
	subs  map[string]*deltaSub
	order []string
	// held is what the stream's subscriptions hold of its client's
	// names, in bytes (bounded by maxNameBytes). Initial versions count
	// for good: they come once per type.
	held int
}

func (s *Server) runDelta(stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	st := &deltaStream{streamBase: newStreamBase(s, stream, "delta"), subs: make(map[string]*deltaSub)}
	defer st.stop()
	return serveStream(&st.streamBase, stream.Recv, st.handle, st.pushAll, func() []string { return st.order })
}

// pushAll sends every subscribed type whose version changed, in ADS order.
func (st *deltaStream) pushAll() error {
	snap := st.snapshot()
	st.comparedWith(snap)
	for _, url := range st.order {
		if err := st.pushFrom(snap, url, st.subs[url]); err != nil {
			return err
		}
	}
	return nil
}

func (st *deltaStream) handle(req *discoveryv3.DeltaDiscoveryRequest) error {
	if !st.started() {
		if err := st.start(req.GetNode()); err != nil {
			return err
		}
	}
	if err := st.recheck(st.snapshot()); err != nil {
		return err
	}
	url := req.GetTypeUrl()
	if url == "" {
		return status.Error(codes.InvalidArgument, "an ADS request must carry type_url")
	}
	sub, ok := st.subs[url]
	if !ok {
		if err := typeBound(len(st.subs)); err != nil {
			return err
		}
		sub = &deltaSub{names: make(map[string]struct{}), known: make(map[string]string)}
		st.subs[url] = sub
		st.order = append(st.order, url)
		sortPushOrder(st.order)
	}
	if nonce := req.GetResponseNonce(); nonce != "" {
		resp, found, _ := st.answered(url, nonce, req.GetErrorDetail())
		if found && req.GetErrorDetail() != nil {
			// The client did not take these; forget that it has them.
			for _, n := range resp.names {
				delete(sub.known, n)
			}
		}
	}
	changed := sub.subscribe(url, req, !ok)
	if st.held += sub.took; st.held > maxNameBytes {
		return status.Errorf(codes.ResourceExhausted, "the stream's subscriptions hold more than %d bytes of resource names: a proxy subscribes to what it uses", maxNameBytes)
	}
	sub.took = 0
	if !changed && ok {
		return nil // a plain ACK or NACK
	}
	return st.push(url, sub)
}

// subscribe applies a request's subscribe and unsubscribe lists (and, on the
// first request, initial_resource_versions). It reports whether anything
// changed.
func (sub *deltaSub) subscribe(url string, req *discoveryv3.DeltaDiscoveryRequest, first bool) bool {
	changed := first
	if first && wildcardType(url) && len(req.GetResourceNamesSubscribe()) == 0 {
		sub.wildcard = true
	}
	for _, n := range req.GetResourceNamesSubscribe() {
		if n == "*" {
			changed = changed || !sub.wildcard
			sub.wildcard = true
			continue
		}
		if _, ok := sub.names[n]; !ok {
			sub.names[n] = struct{}{}
			sub.took += len(n)
			delete(sub.known, n) // a new subscription is always answered
			changed = true
		}
	}
	for _, n := range req.GetResourceNamesUnsubscribe() {
		if n == "*" {
			changed = changed || sub.wildcard
			sub.wildcard = false
			continue
		}
		if _, ok := sub.names[n]; ok {
			delete(sub.names, n)
			sub.took -= len(n)
			delete(sub.known, n)
			changed = true
		}
	}
	if first {
		for n, v := range req.GetInitialResourceVersions() {
			sub.known[n] = v
			sub.took += len(n) + len(v)
		}
	}
	if changed {
		sub.dirty = true
	}
	return changed
}

func (sub *deltaSub) wants(name string) bool {
	if sub.wildcard {
		return true
	}
	_, ok := sub.names[name]
	return ok
}

// push sends the resources of the current type version that the client
// lacks or has in another version, and the names it has that are gone.
func (st *deltaStream) push(url string, sub *deltaSub) error {
	snap := st.snapshot()
	st.pushedOne(snap, len(st.order))
	return st.pushFrom(snap, url, sub)
}

func (st *deltaStream) pushFrom(snap *nodeSnapshot, url string, sub *deltaSub) error {
	if err := st.recheck(snap); err != nil {
		return err
	}
	pt := snap.typ(url)
	if pt == nil || (!sub.dirty && sub.sentVersion == pt.version) {
		return nil
	}
	if st.tr.rejectedVersion(url, pt.version) {
		return nil
	}
	pt.prepareDelta()
	parts := [][]byte{pt.deltaHeader}
	var names []string
	runStart := -1
	for i, name := range pt.names {
		include := sub.wants(name) && sub.known[name] != pt.resVersions[i]
		if include {
			names = append(names, name)
			if runStart < 0 {
				runStart = i
			}
			continue
		}
		if runStart >= 0 {
			parts = append(parts, pt.deltaRun(runStart, i))
			runStart = -1
		}
	}
	if runStart >= 0 {
		parts = append(parts, pt.deltaRun(runStart, len(pt.names)))
	}
	var removed []byte
	for name := range sub.known {
		if _, ok := pt.index[name]; ok && sub.wants(name) {
			continue
		}
		delete(sub.known, name)
		if _, ok := pt.index[name]; !ok {
			removed = appendStringField(removed, deltaRemovedField, name)
		}
	}
	sub.sentVersion, sub.dirty = pt.version, false
	if len(names) == 0 && len(removed) == 0 && sub.responded {
		return nil
	}
	for _, n := range names {
		sub.known[n] = pt.resVersions[pt.index[n]]
	}
	nonce := st.tr.recordSent(url, pt.version, snap.version, names, st.srv.opts.Clock.Now())
	parts = append(parts, removed, nonceField(deltaNonceField, nonce))
	if err := st.send(url, snap.version, parts); err != nil {
		return err
	}
	sub.responded = true
	return nil
}
