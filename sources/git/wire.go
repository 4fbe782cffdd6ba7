package git

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage"

	"github.com/legate-dev/legate/netguard"
)

// A poll and a fetch share one upload-pack session: its ref advertisement
// (one GET of info/refs over HTTP, the greeting of one SSH or local
// upload-pack process) decides whether anything is missing, and a fetch
// then sends one request for the pack (one POST over HTTP, the same
// process otherwise). go-git's Remote.List followed by Remote.Fetch asked
// for the advertisement twice, and Fetch sent as "haves" up to a hundred
// commits read back from every local ref.

// maxHaves bounds the local commits offered to the server as "haves": the
// followed ref's commit first, then its ancestors. The tip alone is what a
// fast-forward needs, and a server still knows it after a force-push until
// it collects garbage; the ancestors cover a rewrite of the last few
// commits that the server already dropped. Past them the server sends the
// whole history again, which the repository size limit still bounds.
const maxHaves = 16

// session opens an upload-pack session on the remote, dialling through the
// source's guard. Over SSH it returns the meter that bounds the ref
// advertisement (over HTTP the client bounds it, see advbound.go): the
// caller lifts it once the advertisement is read.
func (s *Source) session(ctx context.Context, creds credentials) (context.Context, transport.UploadPackSession, *advMeter, error) {
	ep, err := transport.NewEndpoint(s.endpoint)
	if err != nil {
		return nil, nil, nil, err
	}
	var meter *advMeter
	if s.ssh {
		var done func()
		host := ep.Host
		if ep.Port != 0 {
			host = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
		}
		ep.Proxy, meter, done = sshSessionProxy(s.cfg.Guard, host, s.sshAdvLimit)
		// go-git dials while it opens the session, and only then.
		defer done()
	}
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, nil, err
	}
	sess, err := c.NewUploadPackSession(ep, creds.method)
	if err != nil {
		return nil, nil, nil, err
	}
	return netguard.NewContext(ctx, s.cfg.Guard), sess, meter, nil
}

// advertisedRefs is what the remote advertised, in the form resolve reads.
func advertisedRefs(ar *packp.AdvRefs) (advertised, error) {
	all, err := ar.AllReferences()
	if err != nil {
		return nil, err
	}
	refs := make([]*plumbing.Reference, 0, len(all)+len(ar.Peeled))
	for _, r := range all {
		refs = append(refs, r)
	}
	for name, h := range ar.Peeled {
		refs = append(refs, plumbing.NewHashReference(plumbing.ReferenceName(name+peeledMark), h))
	}
	return toAdvertised(refs), nil
}

// wanted is what a fetch of tgt asks for: the followed ref, or every
// branch when a pinned commit names none, each with the object the remote
// advertised for it.
func wanted(tgt target, adv advertised) map[plumbing.ReferenceName]plumbing.Hash {
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	if tgt.refName != "" {
		refs[plumbing.ReferenceName(tgt.refName)] = plumbing.NewHash(adv[tgt.refName])
		return refs
	}
	for name, h := range adv {
		if strings.HasPrefix(name, headsPrefix) {
			refs[plumbing.ReferenceName(name)] = plumbing.NewHash(h)
		}
	}
	return refs
}

// download asks the session for the objects of refs that the clone lacks,
// writes the pack into the clone and points the local refs of the same
// names at them, so that they are the "haves" of the next fetch.
func (s *Source) download(ctx context.Context, repo *gogit.Repository, sess transport.UploadPackSession, ar *packp.AdvRefs, refs map[plumbing.ReferenceName]plumbing.Hash) error {
	sto := repo.Storer
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return err
		}
	}
	if s.cfg.Depth > 0 {
		req.Depth = packp.DepthCommits(s.cfg.Depth)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return err
		}
		shallows, err := sto.Shallow()
		if err != nil {
			return fmt.Errorf("read the shallow commits of clone %s: %w", s.c.dir, err)
		}
		req.Shallows = shallows
	}
	for _, h := range refs {
		if !hasObject(sto, h) {
			req.Wants = append(req.Wants, h)
		}
	}
	if len(req.Wants) == 0 {
		return s.setRefs(sto, refs)
	}
	haves, err := localHaves(sto)
	if err != nil {
		return err
	}
	req.Haves = haves

	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Close() //nolint:errcheck // the pack was read to its end or the error below says why
	if len(resp.Shallows) > 0 {
		if err := addShallows(sto, resp.Shallows); err != nil {
			return fmt.Errorf("record the shallow commits of clone %s: %w", s.c.dir, err)
		}
	}
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := packfile.UpdateObjectStorage(sto, pack); err != nil {
		return err
	}
	return s.setRefs(sto, refs)
}

func (s *Source) setRefs(sto storer.Storer, refs map[plumbing.ReferenceName]plumbing.Hash) error {
	for name, h := range refs {
		if err := sto.SetReference(plumbing.NewHashReference(name, h)); err != nil {
			return fmt.Errorf("update ref %s of clone %s: %w", name, s.c.dir, err)
		}
	}
	return nil
}

// localHaves is the commits the clone's refs point at, followed by their
// ancestors, newest first, at most maxHaves in all.
func localHaves(sto storer.Storer) ([]plumbing.Hash, error) {
	iter, err := sto.IterReferences()
	if err != nil {
		return nil, err
	}
	var tips []*object.Commit
	seen := map[plumbing.Hash]bool{}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference || seen[r.Hash()] {
			return nil
		}
		seen[r.Hash()] = true
		if c, err := object.GetCommit(sto, r.Hash()); err == nil {
			tips = append(tips, c)
		} else if t, err := object.GetTag(sto, r.Hash()); err == nil {
			if c, err := t.Commit(); err == nil {
				tips = append(tips, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	haves := make([]plumbing.Hash, 0, maxHaves)
	offered := map[plumbing.Hash]bool{}
	// Tips first: on a fast-forward they are all the server needs.
	for _, c := range tips {
		if len(haves) < maxHaves && !offered[c.Hash] {
			offered[c.Hash] = true
			haves = append(haves, c.Hash)
		}
	}
	// Then ancestors, breadth-first, skipping what a shallow clone lacks.
	queue := tips
	for len(queue) > 0 && len(haves) < maxHaves {
		c := queue[0]
		queue = queue[1:]
		_ = c.Parents().ForEach(func(p *object.Commit) error {
			if offered[p.Hash] || len(haves) >= maxHaves {
				return nil
			}
			offered[p.Hash] = true
			haves = append(haves, p.Hash)
			queue = append(queue, p)
			return nil
		})
	}
	return haves, nil
}

func hasObject(sto storer.EncodedObjectStorer, h plumbing.Hash) bool {
	return sto.HasEncodedObject(h) == nil
}

func addShallows(sto storage.Storer, add []plumbing.Hash) error {
	have, err := sto.Shallow()
	if err != nil {
		return err
	}
	known := map[plumbing.Hash]bool{}
	for _, h := range have {
		known[h] = true
	}
	for _, h := range add {
		if !known[h] {
			known[h] = true
			have = append(have, h)
		}
	}
	return sto.SetShallow(have)
}
