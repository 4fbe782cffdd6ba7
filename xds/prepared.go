package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/legate-dev/legate/render"
)

// Field numbers of the discovery messages legate writes by hand. The wire
// format lets a message be concatenated from independently encoded fields,
// which is what makes "encode once, copy to every stream" possible.
const (
	anyTypeURLField = 1
	anyValueField   = 2

	respVersionField   = 1 // DiscoveryResponse.version_info
	respResourcesField = 2 // DiscoveryResponse.resources
	respTypeURLField   = 4 // DiscoveryResponse.type_url
	respNonceField     = 5 // DiscoveryResponse.nonce

	deltaSystemVersionField = 1 // DeltaDiscoveryResponse.system_version_info
	deltaResourcesField     = 2 // DeltaDiscoveryResponse.resources
	deltaTypeURLField       = 4 // DeltaDiscoveryResponse.type_url
	deltaNonceField         = 5 // DeltaDiscoveryResponse.nonce
	deltaRemovedField       = 6 // DeltaDiscoveryResponse.removed_resources

	resVersionField = 1 // Resource.version
	resAnyField     = 2 // Resource.resource
	resNameField    = 3 // Resource.name

	// maxNamedSets bounds the cached responses per type version for
	// distinct sets of requested names.
	maxNamedSets = 64
)

// preparedType is one published (type, version) with every resource encoded
// once. It is immutable after construction except for its caches, and is
// shared by all streams of a node (and kept across snapshots while the
// type's version does not change).
type preparedType struct {
	url     string
	version string
	names   []string // sorted
	index   map[string]int
	bodies  [][]byte

	// sotwAll holds every resource as an encoded DiscoveryResponse.resources
	// field, back to back; sotwOff[i] is where resource i starts.
	sotwAll []byte
	sotwOff []int
	// sotwHeader is version_info and type_url of a DiscoveryResponse.
	sotwHeader []byte

	mu    sync.Mutex
	named map[string][]byte // names key -> resources fields of that subset

	deltaOnce   sync.Once
	deltaAll    []byte // every resource as a DeltaDiscoveryResponse.resources field
	deltaOff    []int
	resVersions []string
	deltaHeader []byte // system_version_info and type_url
}

func prepareType(url, version string, resources []render.Resource) *preparedType {
	pt := &preparedType{
		url:     url,
		version: version,
		names:   make([]string, len(resources)),
		index:   make(map[string]int, len(resources)),
		bodies:  make([][]byte, len(resources)),
		sotwOff: make([]int, len(resources)+1),
	}
	sorted := slices.Clone(resources)
	slices.SortFunc(sorted, func(a, b render.Resource) int { return strings.Compare(a.Name, b.Name) })
	size := 0
	for _, r := range sorted {
		size += len(r.Body) + len(url) + 16
	}
	pt.sotwAll = make([]byte, 0, size)
	for i, r := range sorted {
		pt.names[i] = r.Name
		pt.index[r.Name] = i
		pt.bodies[i] = r.Body
		pt.sotwOff[i] = len(pt.sotwAll)
		pt.sotwAll = protowire.AppendTag(pt.sotwAll, respResourcesField, protowire.BytesType)
		pt.sotwAll = protowire.AppendVarint(pt.sotwAll, uint64(anyLen(url, r.Body)))
		pt.sotwAll = appendAny(pt.sotwAll, url, r.Body)
	}
	pt.sotwOff[len(sorted)] = len(pt.sotwAll)
	pt.sotwHeader = appendStringField(nil, respVersionField, version)
	pt.sotwHeader = appendStringField(pt.sotwHeader, respTypeURLField, url)
	return pt
}

func anyLen(url string, body []byte) int {
	return protowire.SizeTag(anyTypeURLField) + protowire.SizeBytes(len(url)) +
		protowire.SizeTag(anyValueField) + protowire.SizeBytes(len(body))
}

func appendAny(b []byte, url string, body []byte) []byte {
	b = appendStringField(b, anyTypeURLField, url)
	b = protowire.AppendTag(b, anyValueField, protowire.BytesType)
	return protowire.AppendBytes(b, body)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// namesKey identifies a set of requested names; "" with wildcard means all.
func namesKey(names []string) string { return strings.Join(names, "\x00") }

// sotwResources returns the encoded resources fields for a subscription:
// every resource for a wildcard one, else the requested ones that exist.
// Subsets are built once per (version, set of names) and shared.
func (pt *preparedType) sotwResources(wildcard bool, names []string, key string) []byte {
	if wildcard {
		return pt.sotwAll
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if b, ok := pt.named[key]; ok {
		return b
	}
	var b []byte
	for _, n := range names {
		if i, ok := pt.index[n]; ok {
			b = append(b, pt.sotwAll[pt.sotwOff[i]:pt.sotwOff[i+1]]...)
		}
	}
	if pt.named == nil || len(pt.named) >= maxNamedSets {
		pt.named = make(map[string][]byte)
	}
	pt.named[key] = b
	return b
}

// prepareDelta encodes every resource as a delta Resource once, on first use.
func (pt *preparedType) prepareDelta() {
	pt.deltaOnce.Do(func() {
		pt.resVersions = make([]string, len(pt.names))
		pt.deltaOff = make([]int, len(pt.names)+1)
		for i, name := range pt.names {
			sum := sha256.Sum256(pt.bodies[i])
			v := hex.EncodeToString(sum[:8])
			pt.resVersions[i] = v
			pt.deltaOff[i] = len(pt.deltaAll)
			n := protowire.SizeTag(resNameField) + protowire.SizeBytes(len(name)) +
				protowire.SizeTag(resVersionField) + protowire.SizeBytes(len(v)) +
				protowire.SizeTag(resAnyField) + protowire.SizeBytes(anyLen(pt.url, pt.bodies[i]))
			pt.deltaAll = protowire.AppendTag(pt.deltaAll, deltaResourcesField, protowire.BytesType)
			pt.deltaAll = protowire.AppendVarint(pt.deltaAll, uint64(n))
			pt.deltaAll = appendStringField(pt.deltaAll, resNameField, name)
			pt.deltaAll = appendStringField(pt.deltaAll, resVersionField, v)
			pt.deltaAll = protowire.AppendTag(pt.deltaAll, resAnyField, protowire.BytesType)
			pt.deltaAll = protowire.AppendVarint(pt.deltaAll, uint64(anyLen(pt.url, pt.bodies[i])))
			pt.deltaAll = appendAny(pt.deltaAll, pt.url, pt.bodies[i])
		}
		pt.deltaOff[len(pt.names)] = len(pt.deltaAll)
		pt.deltaHeader = appendStringField(nil, deltaSystemVersionField, pt.version)
		pt.deltaHeader = appendStringField(pt.deltaHeader, deltaTypeURLField, pt.url)
	})
}

// deltaRun returns the encoded delta resources i..j-1 as one shared slice.
func (pt *preparedType) deltaRun(i, j int) []byte { return pt.deltaAll[pt.deltaOff[i]:pt.deltaOff[j]] }

// emptyType is served for a type a snapshot leaves out.
func emptyType(url string) *preparedType { return prepareType(url, emptyVersion, nil) }
