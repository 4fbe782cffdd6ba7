package kube

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PolicyLabel marks a ConfigMap of the controller's namespace whose *.cue
// entries are CUE policies every configuration obeys (EnvoyConfigs,
// EnvoySources, with the policies of their own trees), so that an ad-hoc
// kubectl apply cannot leave out the rules a Git repository obeys. Only
// the controller's namespace is read: whoever can write there runs legate.
const PolicyLabel = "legate.dev/policy"

// MaxPolicyBytes bounds the policies read, all together.
const MaxPolicyBytes = 1 << 20

// ReadPolicyDir reads the *.cue files of dir (a policy directory of the
// operator's), named "policy-dir/<file>" in diagnostics; "" reads none.
func ReadPolicyDir(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if dir == "" {
		return out, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("policy directory: %w", err)
	}
	total := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".cue") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("policy directory: %w", err)
		}
		if total += len(data); total > MaxPolicyBytes {
			return nil, fmt.Errorf("policy directory %s holds more than %d bytes of policies", dir, MaxPolicyBytes)
		}
		out["policy-dir/"+e.Name()] = data
	}
	return out, nil
}

// Policies is the policy set of dir (ReadPolicyDir) and of the *.cue
// entries of cms, those named "configmap/NAMESPACE/NAME/KEY". The entries
// of cms count against MaxPolicyBytes: over reports the ConfigMap at which
// they passed it, and the set holds what came before.
func Policies(dir map[string][]byte, cms []corev1.ConfigMap) (set map[string][]byte, over string) {
	set = maps.Clone(dir)
	if set == nil {
		set = map[string][]byte{}
	}
	total := 0
	for _, cm := range cms {
		for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
			if !strings.HasSuffix(key, ".cue") {
				continue
			}
			if total += len(cm.Data[key]); total > MaxPolicyBytes {
				return set, cm.Name
			}
			set["configmap/"+cm.Namespace+"/"+cm.Name+"/"+key] = []byte(cm.Data[key])
		}
	}
	return set, ""
}

// PolicySet is the policy set in force in one home: what the policy
// directory holds (ReadPolicyDir, read once at start) and the *.cue
// entries of the ConfigMaps labelled PolicyLabel, read again when one of
// them changes. Its methods are safe for concurrent use.
type PolicySet struct {
	dir map[string][]byte

	mu  sync.Mutex
	set map[string][]byte
}

// NewPolicySet starts with the policies of the directory alone in force.
func NewPolicySet(dir map[string][]byte) *PolicySet {
	return &PolicySet{dir: dir, set: dir}
}

// Current is the set every render obeys now.
func (p *PolicySet) Current() map[string][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set
}

// Read reads the set the directory and the labelled ConfigMaps of
// namespace (through reader) make now (Policies: over names the ConfigMap
// at which they passed MaxPolicyBytes), without putting it in force.
func (p *PolicySet) Read(ctx context.Context, reader client.Reader, namespace string) (set map[string][]byte, over string, err error) {
	var list corev1.ConfigMapList
	if err := reader.List(ctx, &list, client.InNamespace(namespace), client.HasLabels{PolicyLabel}); err != nil {
		return nil, "", fmt.Errorf("list the policy ConfigMaps of namespace %s: %w", namespace, err)
	}
	set, over = Policies(p.dir, list.Items)
	return set, over, nil
}

// Replace puts set in force and reports whether it says something else
// than the set it replaces (then every source is to be rendered again).
func (p *PolicySet) Replace(set map[string][]byte) (changed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	same := maps.EqualFunc(set, p.set, func(a, b []byte) bool { return string(a) == string(b) })
	p.set = set
	return !same
}
