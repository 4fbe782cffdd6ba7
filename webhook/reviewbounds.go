package webhook

import (
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
)

// MaxObjectValues bounds the JSON values (and keys) of an object under
// admission. What legate does with an object costs per value, not per
// byte: the renderer holds a few hundred bytes for each (render's
// nodeCost), so an 8 MiB review of tiny values would cost gigabytes. An
// EnvoyConfig of 1 000 clusters holds about 40 000; an object the API
// server can store (etcd's 1.5 MiB) holds fewer than 150 000 at the
// density people write.
const MaxObjectValues = 100000

// objectBounds refuses a request whose object holds more than
// MaxObjectValues values, naming the object; nesting is bounded by the
// review's own decoding (encoding/json stops at 10 000 levels).
func objectBounds(req *admissionv1.AdmissionRequest) error {
	n := jsonValues(req.Object.Raw, MaxObjectValues)
	if n <= MaxObjectValues {
		return nil
	}
	name := req.Name
	if req.Namespace != "" {
		name = req.Namespace + "/" + name
	}
	return fmt.Errorf("%s %s holds more than %d JSON values (keys, values and list items), over what legate admits in one object: split it into several",
		req.Kind.Kind, name, MaxObjectValues)
}

// jsonValues counts the keys and values of a JSON text from its
// structure, without decoding it, stopping past limit: every one after
// the first follows a '{', '[', ':' or ',' outside strings, so their
// count plus one bounds it from above.
func jsonValues(data []byte, limit int) int {
	if len(data) == 0 {
		return 0
	}
	n := 1
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[' || c == ':' || c == ',':
			n++
			if n > limit {
				return n
			}
		}
	}
	return n
}
