package envoydeployment

import (
	"encoding/json"
	"fmt"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// maxPatchBytes bounds one patch; the API server bounds the object as a
// whole, this bounds the work of merging it.
const maxPatchBytes = 256 << 10

// patched applies p to obj (a strategic merge by default, as kubectl
// patch does) and returns the result in obj's type. The patch may change
// anything but the object's identity: its kind, name, namespace and owner
// are put back as legate made them. field names p in errors.
func patched[T client.Object](obj T, p *v1alpha1.EnvoyDeploymentPatch, field string) (T, error) {
	if p == nil || len(p.Value.Raw) == 0 {
		return obj, nil
	}
	var zero T
	if len(p.Value.Raw) > maxPatchBytes {
		return zero, fmt.Errorf("%s.value: %d bytes, more than %d", field, len(p.Value.Raw), maxPatchBytes)
	}
	orig, err := json.Marshal(obj)
	if err != nil {
		return zero, err
	}
	var out []byte
	if p.Type != nil && *p.Type == v1alpha1.PatchJSONMerge {
		out, err = jsonpatch.MergePatch(orig, p.Value.Raw)
	} else {
		out, err = strategicpatch.StrategicMergePatch(orig, p.Value.Raw, obj)
	}
	if err != nil {
		return zero, fmt.Errorf("%s.value: %w", field, err)
	}
	// A fresh value of T: the merge result is the whole object, and a
	// field the patch deletes must not survive from obj.
	result := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(T)
	if err := json.Unmarshal(out, result); err != nil {
		return zero, fmt.Errorf("%s.value: the patched object does not decode: %w", field, err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	result.GetObjectKind().SetGroupVersionKind(gvk)
	result.SetName(obj.GetName())
	result.SetNamespace(obj.GetNamespace())
	result.SetOwnerReferences(obj.GetOwnerReferences())
	return result, nil
}
