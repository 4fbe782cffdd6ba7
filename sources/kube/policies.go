package kube

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
