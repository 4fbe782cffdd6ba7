// Package kubestore is the revisions.Store of the Kubernetes home: every
// revision is an EnvoyConfigRevision object (its content in the spec,
// written once; its state — origin, publication, taint — in the status),
// and every node's record (history, publication, versions) is a ConfigMap,
// whose resourceVersion makes a write by a stale writer fail with
// revisions.ErrConflict. All objects live in one namespace, named after a
// hash of the node ID (node IDs need not be valid object names) and
// labelled with it.
//
// The package must not import a home.
package kubestore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
)

// Labels of the objects the store writes.
const (
	LabelNode      = "legate.dev/node-hash"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	recordKey      = "record"
)

// MaxRevisionBytes keeps an EnvoyConfigRevision under the API server's
// limit of about 1.5 MiB per object, with room for its metadata and status.
const MaxRevisionBytes = 1_400_000

// compressAbove is the encoded size past which a revision's resources are
// stored gzip-compressed (spec.compressedResources): below it they stay
// readable with kubectl.
const compressAbove = 512 << 10

// maxUncompressed bounds what a compressed revision may expand to when it
// is read back (a revision object written by someone else is input too).
const maxUncompressed = 256 << 20

// Store keeps revisions in the API server. Client must read what it wrote
// (a direct client, not a lagging cache) for Commit's checks. Make it with
// New, which remembers each node's record as the store last wrote it, so
// that a commit does not read it back first; a Store literal works too,
// reading every record before writing it.
type Store struct {
	Client    client.Client
	Namespace string

	records  *recordCache
	statuses *statusCache
	unmarks  *unmarkQueue
}

// New returns the Store of namespace through c.
func New(c client.Client, namespace string) Store {
	return Store{
		Client: c, Namespace: namespace,
		records:  &recordCache{byNode: map[string]*corev1.ConfigMap{}},
		statuses: &statusCache{byName: map[string]writtenStatus{}},
		unmarks:  newUnmarkQueue(),
	}
}

var (
	_ revisions.Store     = Store{}
	_ revisions.SizeLimit = Store{}
)

// RevisionSize implements revisions.SizeLimit: the size of the object's
// content as it is stored, compressed when large.
func (Store) RevisionSize(cfg *render.NodeConfig) (size, limit int) {
	size = revisions.EncodedSize(cfg)
	if size > compressAbove {
		if packed, err := compress(resourcesOf(cfg)); err == nil {
			size = base64.StdEncoding.EncodedLen(len(packed)) + revisions.EncodedSize(&render.NodeConfig{NodeID: cfg.NodeID, Hash: cfg.Hash, ExternalSecrets: cfg.ExternalSecrets, ExternalEndpoints: cfg.ExternalEndpoints})
		}
	}
	return size, MaxRevisionBytes
}

// nodeHash names a node's objects.
func nodeHash(node string) string {
	sum := sha256.Sum256([]byte(node))
	return hex.EncodeToString(sum[:8])
}

func recordName(node string) string { return "legate-node-" + nodeHash(node) }

// RevisionName is the name of the EnvoyConfigRevision object of a node's
// revision.
func RevisionName(node, hash string) string {
	if len(hash) > 16 {
		hash = hash[:16]
	}
	return "legate-" + nodeHash(node) + "-" + hash
}

func labels(node, component string) map[string]string {
	return map[string]string{LabelNode: nodeHash(node), LabelComponent: component, LabelManagedBy: "legate"}
}

// Load implements revisions.Store: every node record with its revisions.
// It may be called again at any time (a follower reads what the leader
// wrote).
func (s Store) Load(ctx context.Context) ([]revisions.NodeData, error) {
	var cms corev1.ConfigMapList
	if err := s.Client.List(ctx, &cms, client.InNamespace(s.Namespace), client.MatchingLabels{LabelComponent: "node-record", LabelManagedBy: "legate"}); err != nil {
		return nil, fmt.Errorf("list node records in %s: %w", s.Namespace, err)
	}
	out := make([]revisions.NodeData, 0, len(cms.Items))
	for i := range cms.Items {
		d, err := s.nodeData(ctx, &cms.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// LoadNode is Load of the node whose record a ConfigMap is (one the
// store wrote, as an informer delivers it): what a follower serves when
// the leader changed the node.
func (s Store) LoadNode(ctx context.Context, record *corev1.ConfigMap) (revisions.NodeData, error) {
	if record.Labels[LabelComponent] != "node-record" {
		return revisions.NodeData{}, fmt.Errorf("ConfigMap %s/%s is not a node record", record.Namespace, record.Name)
	}
	return s.nodeData(ctx, record)
}

// RecordOf decodes the record a node record ConfigMap holds.
func RecordOf(cm *corev1.ConfigMap) (revisions.NodeRecord, error) {
	var rec revisions.NodeRecord
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &rec); err != nil {
		return rec, fmt.Errorf("decode node record ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return rec, nil
}

// nodeData decodes a record ConfigMap and reads its node's revisions.
func (s Store) nodeData(ctx context.Context, cm *corev1.ConfigMap) (revisions.NodeData, error) {
	var d revisions.NodeData
	var err error
	if d.Record, err = RecordOf(cm); err != nil {
		return d, err
	}
	var revs v1alpha1.EnvoyConfigRevisionList
	if err := s.Client.List(ctx, &revs, client.InNamespace(s.Namespace), client.MatchingLabels{LabelNode: cm.Labels[LabelNode], LabelComponent: "revision"}); err != nil {
		return d, fmt.Errorf("list revisions of node %q: %w", d.Record.Node, err)
	}
	for i := range revs.Items {
		rev, err := fromObject(&revs.Items[i])
		if err != nil {
			return d, err
		}
		d.Revisions = append(d.Revisions, rev)
	}
	return d, nil
}

// Commit implements revisions.Store, in the contract's order: new content,
// then states, then the record (the point of commit, refused on a
// conflict), then deletions. A failure part way leaves content no history
// names yet, which a later prune deletes.
//
// Each API call counts (a commit that changes 1 000 nodes makes a few
// thousand), so a publication of new content makes two and reads
// nothing before it returns: the revision's Create, carrying its state
// and its published flag (revisions have no status subresource, so a
// Create keeps the status), and the record's Update with the
// resourceVersion this store last wrote. The patch that unmarks the
// revision served before is queued, written after (unmark.go). The
// published flag is written with the state, before the record that makes
// it true: it is for kubectl, the record stays the source of truth, and a
// commit that fails is made again whole by the engine (every revision of
// the node rewritten), which puts the flags right.
func (s Store) Commit(ctx context.Context, u revisions.Update) error {
	node := u.Record.Node
	if node == "" {
		return errors.New("commit needs a node ID")
	}
	defer s.unmarks.begin()()
	defer s.unmarks.lockNode(node)()
	cm, stored, err := s.recordFor(ctx, node, u.Record.Revision-1)
	if err != nil {
		return err
	}
	if u.Record.Revision != stored.Revision+1 {
		return fmt.Errorf("%w: node %q is at record revision %d, the update was made from %d", revisions.ErrConflict, node, stored.Revision, u.Record.Revision-1)
	}
	// flagged are the revisions whose status this commit wrote with their
	// published flag as the new record has it.
	flagged := map[string]bool{}
	for _, r := range u.Put {
		st := statusOf(revisions.StateOf(r))
		st.Published = r.Hash == u.Record.Published
		obj := toObject(r, s.Namespace)
		// A new object is at generation 1, and its status goes in with it.
		// The cache keeps the status as sent: the one the API server
		// returns has its times cut to the second, and would never equal
		// the next status worked out here.
		written := *st.DeepCopy()
		setConditions(&written, nil, node, 1, metav1.Now())
		obj.Status = *written.DeepCopy()
		err := s.Client.Create(ctx, obj)
		switch {
		case apierrors.IsAlreadyExists(err):
			// Content is written once: the same hash is the same content.
			err = s.replaceStatus(ctx, node, r.Hash, st, true)
		case err != nil:
			return fmt.Errorf("create revision %s of node %q: %w", r.Hash, node, err)
		default:
			s.statuses.put(obj.Name, written, obj.Generation)
		}
		if err != nil {
			return fmt.Errorf("write the state of revision %s of node %q: %w", r.Hash, node, err)
		}
		flagged[r.Hash] = true
	}
	for _, rs := range u.States {
		st := statusOf(rs)
		st.Published = rs.Hash == u.Record.Published
		if err := s.replaceStatus(ctx, node, rs.Hash, st, true); err != nil {
			return fmt.Errorf("write the state of revision %s of node %q: %w", rs.Hash, node, err)
		}
		flagged[rs.Hash] = true
	}
	if stored, err = s.writeRecord(ctx, node, cm, stored, u.Record); err != nil {
		return err
	}
	if u.Record.Published != stored.Published {
		s.markPublished(ctx, node, u.Record.Published, true, flagged, true)
		switch old := stored.Published; {
		case old == "" || flagged[old]:
		case s.unmarks == nil:
			s.markPublished(ctx, node, old, false, flagged, true)
		default:
			s.unmarks.add(node, old, s.writeUnmark)
		}
	}
	for _, h := range u.Delete {
		obj := &v1alpha1.EnvoyConfigRevision{ObjectMeta: metav1.ObjectMeta{Name: RevisionName(node, h), Namespace: s.Namespace}}
		if err := s.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete revision %s of node %q: %w", h, node, err)
		}
		s.statuses.forget(obj.Name)
	}
	return nil
}

// recordFor is a node's record ConfigMap (nil when none) and the record
// it holds, from what this store last wrote when that is the record at
// revision want, from the API server otherwise.
func (s Store) recordFor(ctx context.Context, node string, want uint64) (*corev1.ConfigMap, revisions.NodeRecord, error) {
	if cm := s.records.get(node); cm != nil {
		if rec, err := RecordOf(cm); err == nil && rec.Revision == want {
			return cm, rec, nil
		}
	}
	return s.record(ctx, node)
}

// writeRecord writes rec over cm, which holds stored (creates it when cm
// is nil), and returns the record it wrote over. A write that meets a
// newer object is refused with revisions.ErrConflict, unless the record in
// it is still the one rec was made from (someone else touched the
// ConfigMap, a label or an annotation: the write is made again over
// theirs).
func (s Store) writeRecord(ctx context.Context, node string, cm *corev1.ConfigMap, stored, rec revisions.NodeRecord) (revisions.NodeRecord, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return stored, fmt.Errorf("encode record of node %q: %w", node, err)
	}
	for attempt := 0; ; attempt++ {
		if cm == nil {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: recordName(node), Namespace: s.Namespace, Labels: labels(node, "node-record")}}
			cm.Data = map[string]string{recordKey: string(data)}
			err = s.Client.Create(ctx, cm)
		} else {
			cm.Data = map[string]string{recordKey: string(data)}
			err = s.Client.Update(ctx, cm)
		}
		if err == nil {
			s.records.put(node, cm)
			return stored, nil
		}
		s.records.put(node, nil)
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return stored, fmt.Errorf("write record of node %q: %w", node, err)
		}
		if attempt > 0 {
			return stored, fmt.Errorf("%w: node %q: %w", revisions.ErrConflict, node, err)
		}
		var fresh *corev1.ConfigMap
		if fresh, stored, err = s.record(ctx, node); err != nil {
			return stored, err
		}
		if stored.Revision != rec.Revision-1 {
			return stored, fmt.Errorf("%w: node %q is at record revision %d, the update was made from %d", revisions.ErrConflict, node, stored.Revision, rec.Revision-1)
		}
		cm = fresh
	}
}

// record reads a node's record ConfigMap; nil and a zero record when none.
func (s Store) record(ctx context.Context, node string) (*corev1.ConfigMap, revisions.NodeRecord, error) {
	var cm corev1.ConfigMap
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: recordName(node)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, revisions.NodeRecord{Node: node}, nil
	}
	if err != nil {
		return nil, revisions.NodeRecord{}, fmt.Errorf("read record of node %q: %w", node, err)
	}
	var rec revisions.NodeRecord
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &rec); err != nil {
		return nil, revisions.NodeRecord{}, fmt.Errorf("decode record ConfigMap %s/%s of node %q: %w", cm.Namespace, cm.Name, node, err)
	}
	return &cm, rec, nil
}

// replaceStatus sets the whole status of a revision object, with its
// conditions worked out from the status before, without reading it: a
// JSON patch that adds /status replaces what is there, so that fields
// this status leaves out (a taint cleared) are cleared too. The status
// before, and the object's generation, are the ones this store last
// wrote; a store that has not written the object since it started reads
// it once. A status equal to the one the object holds is not written
// again.
//
// Revisions have no status subresource, so a status write bumps the
// object's generation by one: the conditions say the generation the
// write makes, and the patch first tests that the object is still at the
// generation this store knows (someone else's status edit fails the test;
// the store then reads the object and writes once more, unless reread is
// false: a queued unmarking that finds the object changed since gives up,
// as the change may be a newer leader serving the revision again).
func (s Store) replaceStatus(ctx context.Context, node, hash string, st v1alpha1.EnvoyConfigRevisionStatus, reread bool) error {
	obj := &v1alpha1.EnvoyConfigRevision{ObjectMeta: metav1.ObjectMeta{Name: RevisionName(node, hash), Namespace: s.Namespace}}
	before, generation, cached := s.statuses.get(obj.Name)
	now := metav1.Now()
	for attempt := 0; ; attempt++ {
		if !cached {
			if err := s.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			before, generation = obj.Status, obj.Generation
		}
		same := *st.DeepCopy()
		setConditions(&same, before.Conditions, node, generation, now)
		if equality.Semantic.DeepEqual(before, same) {
			// The object holds this status already (content applied
			// again from the same origin): a write would change nothing
			// kubectl shows.
			return nil
		}
		next := *st.DeepCopy()
		setConditions(&next, before.Conditions, node, generation+1, now)
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/generation", "value": generation},
			{"op": "add", "path": "/status", "value": next},
		})
		if err != nil {
			return err
		}
		err = s.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
		if err == nil {
			s.statuses.put(obj.Name, next, obj.Generation)
			return nil
		}
		s.statuses.forget(obj.Name)
		if !cached || !reread || attempt > 0 || ctx.Err() != nil {
			return err
		}
		cached = false
	}
}

// markPublished sets the status.published flag of a revision and its
// conditions, for kubectl, unless this commit wrote it with the
// revision's status (flagged); the record stays the source of truth, so
// a failure is ignored.
func (s Store) markPublished(ctx context.Context, node, hash string, published bool, flagged map[string]bool, reread bool) {
	if hash == "" || flagged[hash] {
		return
	}
	st, _, ok := s.statuses.get(RevisionName(node, hash))
	if !ok {
		var obj v1alpha1.EnvoyConfigRevision
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: RevisionName(node, hash)}, &obj); err != nil {
			return
		}
		st = obj.Status
	}
	st.Published = published
	_ = s.replaceStatus(ctx, node, hash, st, reread)
}
