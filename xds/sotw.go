package xds

import (
	"slices"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sotwSub is a state-of-the-world subscription to one type on one stream.
type sotwSub struct {
	wildcard bool
	names    []string // sorted, unique, without "*"
	key      string   // namesKey(names), or "*" for a wildcard
	// sentVersion and sentKey describe the last response for the type.
	sentVersion string
	sentKey     string
	sentAny     bool
}

type sotwStream struct {
	streamBase
	subs  map[string]*sotwSub
	order []string // subscribed types in ADS push order
}

func (s *Server) runSotW(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	st := &sotwStream{streamBase: newStreamBase(s, stream, "sotw"), subs: make(map[string]*sotwSub)}
	defer st.stop()
	return serveStream(&st.streamBase, stream.Recv, st.handle, st.pushAll, func() []string { return st.order })
}

func (st *sotwStream) handle(req *discoveryv3.DiscoveryRequest) error {
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
	if nonce := req.GetResponseNonce(); nonce != "" {
		if _, _, latest := st.answered(url, nonce, req.GetErrorDetail()); !latest {
			return nil // a stale nonce: the client has not seen our latest response yet
		}
	}
	sub, ok := st.subs[url]
	if !ok {
		if err := typeBound(len(st.subs)); err != nil {
			return err
		}
		sub = &sotwSub{}
		st.subs[url] = sub
		st.order = append(st.order, url)
		sortPushOrder(st.order)
	}
	sub.subscribe(url, req.GetResourceNames(), !ok)
	return st.push(url, sub)
}

// subscribe applies a request's resource_names. For LDS, CDS and SRDS an
// empty first request or "*" is a wildcard subscription; a later empty
// request leaves a wildcard subscription as it is.
func (sub *sotwSub) subscribe(url string, requested []string, first bool) {
	names := make([]string, 0, len(requested))
	star := false
	for _, n := range requested {
		if n == "*" {
			star = true
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	switch {
	case !wildcardType(url):
		sub.wildcard = false
	case star || (first && len(names) == 0):
		sub.wildcard = true
	case len(names) > 0:
		sub.wildcard = false
	}
	sub.names = names
	if sub.wildcard {
		sub.key = "*"
	} else {
		sub.key = namesKey(names)
	}
}

func (st *sotwStream) pushAll() error {
	snap := st.snapshot()
	st.comparedWith(snap)
	for _, url := range st.order {
		if err := st.pushFrom(snap, url, st.subs[url]); err != nil {
			return err
		}
	}
	return nil
}

// push sends the current version of a type unless the stream already got it
// for the same names, or the proxy rejected that version.
func (st *sotwStream) push(url string, sub *sotwSub) error {
	snap := st.snapshot()
	st.pushedOne(snap, len(st.order))
	return st.pushFrom(snap, url, sub)
}

func (st *sotwStream) pushFrom(snap *nodeSnapshot, url string, sub *sotwSub) error {
	if err := st.recheck(snap); err != nil {
		return err
	}
	pt := snap.typ(url)
	if pt == nil || (!sub.wildcard && len(sub.names) == 0) {
		return nil
	}
	if sub.sentAny && sub.sentVersion == pt.version && sub.sentKey == sub.key {
		return nil
	}
	if st.tr.rejectedVersion(url, pt.version) {
		return nil
	}
	body := pt.sotwResources(sub.wildcard, sub.names, sub.key)
	nonce := st.tr.recordSent(url, pt.version, snap.version, nil, st.srv.opts.Clock.Now())
	if err := st.send(url, snap.version, [][]byte{pt.sotwHeader, body, nonceField(respNonceField, nonce)}); err != nil {
		return err
	}
	sub.sentAny, sub.sentVersion, sub.sentKey = true, pt.version, sub.key
	return nil
}
